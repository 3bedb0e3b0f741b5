"""Session freshness: whether an inbound message continues its session or starts a new one.

:mod:`.policy` decides (pure), :mod:`.facts` reads what it decides on, :mod:`.matrix` is the
decision table, :mod:`.carry` takes the live context across a rollover.
"""
