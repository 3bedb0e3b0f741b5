"""An agent's background turns: ``/api/agents/{agent}/jobs`` (start: scope ``chat``; list, one: ``read``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from kurahi.gateway import models as m
from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import ERRORS, AgentId, Chat, GatewayDep, Read, session_key

__all__ = ["router"]

router = APIRouter(tags=["jobs"], responses=ERRORS)

JobId = Annotated[str, Path(max_length=64, pattern=r"^job_[0-9a-f]+$")]


@router.post("/api/agents/{agent}/jobs", response_model=m.JobOut, status_code=202)
async def create_job(agent: AgentId, body: m.JobIn, gateway: GatewayDep, p: Chat) -> dict[str, Any]:
    """Start a background turn; returns the job at once."""
    rt = await gateway.runtime(agent)
    jid = rt.start_job(session_key(agent, body.key), body.message)
    job = rt.jobs.get(jid)
    assert job is not None
    return job.to_dict()


@router.get("/api/agents/{agent}/jobs", response_model=list[m.JobOut])
async def list_jobs(agent: AgentId, gateway: GatewayDep, p: Read) -> list[dict[str, Any]]:
    """Every job of the agent, oldest first."""
    rt = await gateway.runtime(agent)
    return [j.to_dict() for j in rt.jobs.jobs().values()]


@router.get("/api/agents/{agent}/jobs/{job_id}", response_model=m.JobOut)
async def get_job(agent: AgentId, job_id: JobId, gateway: GatewayDep, p: Read) -> dict[str, Any]:
    """One job."""
    rt = await gateway.runtime(agent)
    job = rt.jobs.get(job_id)
    if job is None:
        raise HTTPError(404, "unknown_job", f"no job {job_id!r} for agent {agent!r}")
    return job.to_dict()
