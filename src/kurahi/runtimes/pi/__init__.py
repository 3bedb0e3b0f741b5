"""Pi's own session files: where Pi keeps them and how they are listed."""
