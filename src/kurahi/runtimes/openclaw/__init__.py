"""OpenClaw: its state dir in both eras (JSON files, then a per-agent SQLite store)."""
