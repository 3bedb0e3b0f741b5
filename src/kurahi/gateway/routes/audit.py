"""``GET /api/audit/chain``: the audit chain verified (scope ``read``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kurahi.errors import AuditNotFoundError
from kurahi.gateway import models as m
from kurahi.gateway.routes.deps import ERRORS, GatewayDep, Read

__all__ = ["router"]

router = APIRouter(tags=["audit"], responses=ERRORS)


@router.get("/api/audit/chain", response_model=m.AuditChainOut)
async def audit_chain(
    gateway: GatewayDep, p: Read, seq: Annotated[int | None, Query(ge=1, le=2**53)] = None
) -> dict[str, Any]:
    """Verify the audit chain; with ``seq``, whether that record is an ancestor of the head."""
    try:
        v = gateway.audit.verify()
    except AuditNotFoundError:
        return {"verified": False, "entries": 0, "headSeq": None, "headHash": None, "reason": "no audit chain"}
    out: dict[str, Any] = {
        "verified": v.ok,
        "entries": v.entries,
        "headSeq": v.head_seq,
        "headHash": v.head_hash,
        "firstBadSeq": v.first_bad_seq,
        "reason": v.reason,
    }
    if seq is not None:
        out["seq"] = seq
        out["isAncestor"] = gateway.audit.is_ancestor(seq)
    return out
