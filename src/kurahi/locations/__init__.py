"""Where state lives on this machine, and what sessions each place holds.

Kurahi homes, Pi's sessions directory, OpenClaw's state dirs.
"""
