"""The hash-chained audit log.

Its records as bytes, the chain over a file or over any ordered store of lines, and verifying
a chain file.
"""
