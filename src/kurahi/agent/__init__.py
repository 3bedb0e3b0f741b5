"""The `agent` room: turns, model providers, tools, tool-call pairing, the ledger, queues, jobs, compaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.agent.config import AgentSettings, Config, ModelProfile, load_config
    from kurahi.agent.conversation import Conversation
    from kurahi.agent.jobs import Job, JobStore
    from kurahi.agent.layout import AgentPaths
    from kurahi.agent.ledger import Action, Ledger, action_id
    from kurahi.agent.pairing import Settlement, settle, unpaired_calls
    from kurahi.agent.providers.base import Provider
    from kurahi.agent.providers.deterministic import DeterministicProvider
    from kurahi.agent.runtime import Runtime, make_provider
    from kurahi.agent.tools import Tool, ToolContext
    from kurahi.agent.turn import TurnControl, TurnResult, run_turn, user_message
    from kurahi.agent.types import ModelRequest, ToolOutput, ToolSpec

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "Action": "kurahi.agent.ledger",
    "AgentPaths": "kurahi.agent.layout",
    "AgentSettings": "kurahi.agent.config",
    "Config": "kurahi.agent.config",
    "Conversation": "kurahi.agent.conversation",
    "DeterministicProvider": "kurahi.agent.providers.deterministic",
    "Job": "kurahi.agent.jobs",
    "JobStore": "kurahi.agent.jobs",
    "Ledger": "kurahi.agent.ledger",
    "ModelProfile": "kurahi.agent.config",
    "ModelRequest": "kurahi.agent.types",
    "Provider": "kurahi.agent.providers.base",
    "Runtime": "kurahi.agent.runtime",
    "Settlement": "kurahi.agent.pairing",
    "Tool": "kurahi.agent.tools",
    "ToolContext": "kurahi.agent.tools",
    "ToolOutput": "kurahi.agent.types",
    "ToolSpec": "kurahi.agent.types",
    "TurnControl": "kurahi.agent.turn",
    "TurnResult": "kurahi.agent.turn",
    "action_id": "kurahi.agent.ledger",
    "load_config": "kurahi.agent.config",
    "make_provider": "kurahi.agent.runtime",
    "run_turn": "kurahi.agent.turn",
    "settle": "kurahi.agent.pairing",
    "unpaired_calls": "kurahi.agent.pairing",
    "user_message": "kurahi.agent.turn",
}

__all__ = [
    "Action",
    "AgentPaths",
    "AgentSettings",
    "Config",
    "Conversation",
    "DeterministicProvider",
    "Job",
    "JobStore",
    "Ledger",
    "ModelProfile",
    "ModelRequest",
    "Provider",
    "Runtime",
    "Settlement",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolSpec",
    "TurnControl",
    "TurnResult",
    "action_id",
    "load_config",
    "make_provider",
    "run_turn",
    "settle",
    "unpaired_calls",
    "user_message",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
