"""Where a gateway may listen: loopback, unless the operator says otherwise.

Bearer tokens travel in every request, and the gateway speaks plain HTTP. On loopback only
this machine's users see them; anywhere else whoever is on the path does. So an address
beyond loopback (``0.0.0.0``, ``::``, a LAN address, a name that resolves to one) is
refused unless the operator passes ``allow_remote`` (``--allow-remote``), and then the
gateway says once, at start, that the tokens need TLS in front of it.
"""

from __future__ import annotations

import ipaddress
import socket

from kurahi.errors import UsageError

__all__ = ["REMOTE_WARNING", "check_bind", "is_loopback"]

REMOTE_WARNING = (
    "warning: the gateway listens on {host}, beyond loopback, over plain HTTP: bearer tokens cross the "
    "network in clear. Put TLS in front of it (a reverse proxy that terminates HTTPS) before any client "
    "connects from another machine."
)
"""What is said once when a gateway listens beyond loopback."""


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (a name is resolved)."""
    name = host.strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(str(a).split("%", 1)[0]).is_loopback for a in addresses)


def check_bind(host: str, *, allow_remote: bool) -> str | None:
    """Refuse ``host`` beyond loopback without ``allow_remote``; the warning to print, if any.

    Raises:
        UsageError: ``host`` is not loopback and ``allow_remote`` is false.
    """
    if is_loopback(host):
        return None
    if not allow_remote:
        raise UsageError(
            f"refusing to listen on {host}: it is beyond loopback, and bearer tokens would cross the network "
            "over plain HTTP. Listen on 127.0.0.1 behind a TLS proxy, or pass --allow-remote once TLS is in front"
        )
    return REMOTE_WARNING.format(host=host)
