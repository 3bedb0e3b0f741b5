"""The vocabulary of the `agent` room: model requests, stream events, tool specs and outputs.

Messages inside a :class:`ModelRequest` are Pi's LLM messages (``user``, ``assistant``,
``toolResult`` dicts, as :func:`kurahi.context.convert_to_llm` returns them), so a
provider sees exactly what was projected from the transcript and converts it to its own
wire format at the edge.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Finished",
    "ModelRequest",
    "StreamEvent",
    "TextDelta",
    "ToolCallReady",
    "ToolOutput",
    "ToolSpec",
    "Usage",
]

Purpose = Literal["turn", "compaction"]


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool as a model is told about it."""

    name: str
    """The name the model calls it by."""
    description: str
    """What it does, for the model."""
    parameters: dict[str, Any]
    """JSON Schema of its arguments (an ``object`` schema)."""


class ModelRequest(msgspec.Struct):
    """One model call."""

    system: str
    """The system prompt (the resident's workspace files)."""
    messages: list[Any]
    """Pi LLM messages, oldest first. Providers must not modify them."""
    model: str
    """The provider's model id."""
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    """Tools the model may call (only those the agent's policy allows)."""
    max_tokens: int = 4096
    """Upper bound on the reply's tokens."""
    purpose: Purpose = "turn"
    """``turn`` for a conversation step, ``compaction`` for a summary of older context."""
    estimated_input_tokens: int = 0
    """The runtime's heuristic size of ``messages`` (the sum of Pi's per-message estimates)."""


class Usage(msgspec.Struct):
    """Token counts of one model call, in Pi's field names when stored."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def to_pi(self) -> dict[str, Any]:
        """Pi's ``usage`` object (costs are not tracked and stored as zero)."""
        total = self.input + self.output + self.cache_read + self.cache_write
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": total,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        }


class TextDelta(msgspec.Struct, tag="text"):
    """A piece of the reply's text, as it streams (provisional until the entry is durable)."""

    text: str


class ToolCallReady(msgspec.Struct, tag="toolCall"):
    """A complete tool call. ``arguments`` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str


class Finished(msgspec.Struct, tag="done"):
    """The call ended. ``stop_reason`` is Pi's: ``stop``, ``length`` or ``toolUse``."""

    stop_reason: str
    usage: Usage = msgspec.field(default_factory=Usage)


StreamEvent = TextDelta | ToolCallReady | Finished
"""What a provider's stream yields, ending with one :class:`Finished`."""


class ToolOutput(msgspec.Struct):
    """What a tool call produced: the text the model sees and whether it is an error."""

    text: str
    is_error: bool = False
    details: dict[str, Any] | None = None
    """Extra data stored with the result (not sent to the model)."""
