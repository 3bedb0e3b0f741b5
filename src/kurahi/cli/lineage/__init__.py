"""``kurahi lineage``: find, stitch, check and draw a session's history across resets."""
