"""The crash-state explorer: recorded file-system operations, every crash state, the protocols."""
