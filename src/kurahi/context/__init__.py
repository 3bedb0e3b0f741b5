"""The `context` room: projection of a leaf's path into model messages, identical to Pi."""

from __future__ import annotations

from kurahi._lazy import lazy_getattr

TYPE_CHECKING = False  # not from typing: importing it costs ~8 ms a process that needs one name pays

if TYPE_CHECKING:
    from kurahi.context.budget import BudgetRoute, find_cut_point, route, should_compact
    from kurahi.context.files import FileContext, project_file
    from kurahi.context.llm import convert_to_llm
    from kurahi.context.project import ProjectionWarning, SessionContext, build_context, project_from_leaf
    from kurahi.context.tokens import ContextTokens, estimate_context_tokens, estimate_tokens

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "BudgetRoute": "kurahi.context.budget",
    "ContextTokens": "kurahi.context.tokens",
    "FileContext": "kurahi.context.files",
    "ProjectionWarning": "kurahi.context.project",
    "SessionContext": "kurahi.context.project",
    "build_context": "kurahi.context.project",
    "convert_to_llm": "kurahi.context.llm",
    "estimate_context_tokens": "kurahi.context.tokens",
    "estimate_tokens": "kurahi.context.tokens",
    "find_cut_point": "kurahi.context.budget",
    "project_file": "kurahi.context.files",
    "project_from_leaf": "kurahi.context.project",
    "route": "kurahi.context.budget",
    "should_compact": "kurahi.context.budget",
}

__all__ = [
    "BudgetRoute",
    "ContextTokens",
    "FileContext",
    "ProjectionWarning",
    "SessionContext",
    "build_context",
    "convert_to_llm",
    "estimate_context_tokens",
    "estimate_tokens",
    "find_cut_point",
    "project_file",
    "project_from_leaf",
    "route",
    "should_compact",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
