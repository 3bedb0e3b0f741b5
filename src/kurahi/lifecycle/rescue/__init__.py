"""``kurahi rescue``: every loss of a state dir, and bringing one back.

:mod:`.losses` finds them (read-only), :mod:`.reading` cuts a piece into what each reset left,
:mod:`.markers` chooses the phrases that prove a repair, :mod:`.apply` plans and applies one
through the activation driver, :mod:`.html` draws the page, :mod:`.watch` notices new ones.
None of them names a runtime: what a runtime keeps and sends comes from :mod:`kurahi.runtimes`.
"""
