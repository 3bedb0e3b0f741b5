"""The `resident` room: the state directory, identity and memory files, recall, devices."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.locations.memory_files import memory_files
    from kurahi.resident.devices import SCOPES, Device, DeviceRegistry
    from kurahi.resident.home import Home
    from kurahi.resident.init import InitReport, init_home
    from kurahi.resident.memory import RecallHit, recall

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "SCOPES": "kurahi.resident.devices",
    "Device": "kurahi.resident.devices",
    "DeviceRegistry": "kurahi.resident.devices",
    "Home": "kurahi.resident.home",
    "InitReport": "kurahi.resident.init",
    "RecallHit": "kurahi.resident.memory",
    "init_home": "kurahi.resident.init",
    "memory_files": "kurahi.locations.memory_files",
    "recall": "kurahi.resident.memory",
}

__all__ = [
    "SCOPES",
    "Device",
    "DeviceRegistry",
    "Home",
    "InitReport",
    "RecallHit",
    "init_home",
    "memory_files",
    "recall",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
