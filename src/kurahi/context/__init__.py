"""The `context` room: projection of a leaf's path into model messages, identical to Pi."""

from __future__ import annotations

from kurahi.context.budget import BudgetRoute, find_cut_point, route, should_compact
from kurahi.context.files import FileContext, project_file
from kurahi.context.llm import convert_to_llm
from kurahi.context.project import ProjectionWarning, SessionContext, build_context, project_from_leaf
from kurahi.context.tokens import ContextTokens, estimate_context_tokens, estimate_tokens

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
