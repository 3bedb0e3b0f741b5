"""Reading a transcript's lines, as fast as each use allows.

The scanner (in C when built, else Python), the entry table, the quick way that decodes only
what a projection needs, and the backward reader.
"""
