"""Paired devices: ``/api/devices`` (list, pair) and ``/api/devices/{device_id}`` (revoke); scope ``admin``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from kurahi.gateway import models as m
from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import ERRORS, Admin, GatewayDep

__all__ = ["router"]

router = APIRouter(tags=["devices"], responses=ERRORS)

DeviceId = Annotated[str, Path(max_length=64, pattern=r"^dev_[0-9a-f]+$")]


@router.get("/api/devices", response_model=list[m.DeviceOut])
async def devices(gateway: GatewayDep, p: Admin) -> list[dict[str, Any]]:
    """Paired devices (never their tokens or token hashes)."""
    return [d.to_dict() for d in gateway.devices.devices()]


@router.post("/api/devices", response_model=m.PairOut, status_code=201)
async def pair(body: m.PairIn, gateway: GatewayDep, p: Admin) -> dict[str, Any]:
    """Pair a device. Its token is in this response and nowhere else, ever."""
    device, token = gateway.devices.pair(body.name, list(body.scopes))
    gateway.record(p.actor, "device.pair", {"device": device.id, "name": device.name, "scopes": device.scopes})
    return {"device": device.to_dict(), "token": token}


@router.delete("/api/devices/{device_id}", response_model=m.DeviceOut)
async def revoke(device_id: DeviceId, gateway: GatewayDep, p: Admin) -> dict[str, Any]:
    """Revoke a device; its token stops working at once."""
    device = gateway.devices.revoke(device_id)
    if device is None:
        raise HTTPError(404, "unknown_device", f"no device {device_id!r}")
    gateway.record(p.actor, "device.revoke", {"device": device.id})
    return device.to_dict()
