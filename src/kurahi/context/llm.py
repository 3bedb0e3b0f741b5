"""What Pi actually sends to the model: ``convertToLlm`` over projected messages.

Pi 1.6.0 turns the session's agent messages (``build_context(...).messages``) into LLM
messages with ``convertToLlm`` (``dist/core/messages.js``). System, user, assistant and tool
result messages pass through as the same objects; bash executions, custom messages and the
two summary kinds become user messages; every other role is dropped. :func:`convert_to_llm`
does the same, value for value. Pi 0.73.1 differs only in dropping system messages (it had
no such role); Kurahi follows 1.6.0.

Keys whose JavaScript value would be ``undefined`` are left out of the dicts built here, as
``JSON.stringify`` leaves them out: a message without a ``timestamp`` gives a user message
without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kurahi.errors import UsageError
from kurahi.js.ops import is_js_zero, js_string, prop, truthy
from kurahi.js.values import MISSING

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "bash_execution_to_text",
    "convert_to_llm",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
"""Text before a compaction summary (Pi's ``COMPACTION_SUMMARY_PREFIX``)."""

COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
"""Text after a compaction summary: note the newline, which the branch suffix lacks."""

BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
"""Text before a branch summary (Pi's ``BRANCH_SUMMARY_PREFIX``)."""

BRANCH_SUMMARY_SUFFIX = "</summary>"
"""Text after a branch summary: no newline before the closing tag, unlike compaction's."""

_PASS_THROUGH = frozenset({"system", "user", "assistant", "toolResult"})


def bash_execution_to_text(msg: Any) -> str:
    """Render a ``bashExecution`` message as the user text Pi sends (``bashExecutionToText``).

    ``Ran `command```, then the output in a fenced block (or ``(no output)`` when the output
    is falsy), then a cancellation note or a non-zero exit code, then a truncation note when
    both ``truncated`` and ``fullOutputPath`` are truthy. Values are interpolated with
    JavaScript's ``String()``, so a missing command reads ``undefined``.

    Raises:
        UsageError: ``msg`` is ``null`` (Pi throws ``TypeError``).
    """
    text = f"Ran `{js_string(prop(msg, 'command'))}`\n"
    output = prop(msg, "output")
    if truthy(output):
        text += f"```\n{js_string(output)}\n```"
    else:
        text += "(no output)"
    if truthy(prop(msg, "cancelled")):
        text += "\n\n(command cancelled)"
    else:
        code = prop(msg, "exitCode")
        if code is not None and code is not MISSING and not is_js_zero(code):
            text += f"\n\nCommand exited with code {js_string(code)}"
    if truthy(prop(msg, "truncated")):
        path = prop(msg, "fullOutputPath")
        if truthy(path):
            text += f"\n\n[Output truncated. Full output: {js_string(path)}]"
    return text


def _user(content: Any, timestamp: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "user"}
    if content is not MISSING:
        out["content"] = content
    if timestamp is not MISSING:
        out["timestamp"] = timestamp
    return out


def _text_user(text: str, msg: Any) -> dict[str, Any]:
    return _user([{"type": "text", "text": text}], prop(msg, "timestamp"))


def _convert_one(m: Any) -> Any:
    role = prop(m, "role")
    if not isinstance(role, str):
        return MISSING
    if role in _PASS_THROUGH:
        return m
    if role == "bashExecution":
        if truthy(prop(m, "excludeFromContext")):
            return MISSING
        return _text_user(bash_execution_to_text(m), m)
    if role == "custom":
        content = prop(m, "content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return _user(content, prop(m, "timestamp"))
    if role == "branchSummary":
        summary = js_string(prop(m, "summary"))
        return _text_user(BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX, m)
    if role == "compactionSummary":
        summary = js_string(prop(m, "summary"))
        return _text_user(COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX, m)
    return MISSING


def convert_to_llm(messages: Sequence[Any]) -> list[Any]:
    """Pi's ``convertToLlm``: the LLM messages for a list of agent messages.

    * ``system``, ``user``, ``assistant``, ``toolResult``: the same object, unchanged.
    * ``bashExecution``: dropped when ``excludeFromContext`` is truthy; otherwise a user message
      whose single text block is :func:`bash_execution_to_text`.
    * ``custom``: a user message; string content becomes one text block, any other content is
      passed on as is. ``customType``, ``display`` and ``details`` are dropped (a
      ``display: false`` message is still sent).
    * ``branchSummary`` / ``compactionSummary``: a user message with the summary between
      :data:`BRANCH_SUMMARY_PREFIX`/:data:`BRANCH_SUMMARY_SUFFIX` or
      :data:`COMPACTION_SUMMARY_PREFIX`/:data:`COMPACTION_SUMMARY_SUFFIX`.
    * any other role (``hookMessage`` in a v3 file, a missing role): dropped.

    Built messages carry the source's ``timestamp`` (left out when the source has none).

    Args:
        messages: agent messages, as :func:`kurahi.context.project.build_context` returns them.

    Returns:
        The LLM messages, in order.

    Raises:
        UsageError: a message is ``null`` (Pi throws ``TypeError`` reading its role).
    """
    out: list[Any] = []
    passes = _PASS_THROUGH
    for index, m in enumerate(messages):
        if type(m) is dict and type(role := m.get("role")) is str and role in passes:
            out.append(m)  # nearly every message: passed on as the same object
            continue
        try:
            converted = _convert_one(m)
        except UsageError as exc:
            raise UsageError(f"messages[{index}]: {exc}") from exc
        if converted is not MISSING:
            out.append(converted)
    return out
