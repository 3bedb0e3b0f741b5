"""The continuity suite on an OpenClaw resident: driven through OpenClaw's own CLI and gateway.

:mod:`.target` is the target the runner drives; :mod:`.runtime` starts and talks to a real
OpenClaw; :mod:`.rounds` scores a key's live session round by round; :mod:`.manifest` seals what
an OpenClaw state dir holds, read through a private snapshot.
"""
