"""The client's address: the connecting peer, or what trusted reverse proxies say in X-Forwarded-For."""

from __future__ import annotations

import ipaddress

from app.netaddr import Network, parse_networks

__all__ = ["client_address", "parse_networks"]


def _ip(text: str):
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address, networks: tuple[Network, ...]) -> bool:
    return address is not None and any(address in n for n in networks)


def client_address(peer: str | None, forwarded_for: list[str], trusted: tuple[Network, ...]) -> str | None:
    """Whom to count a request against. X-Forwarded-For is written by every proxy on the way, each
    appending whom it heard from, so only the hops that trusted proxies appended are believed: read
    from the right (the nearest), the first hop that is not itself a trusted proxy is the client.
    Anything further left was written by the client and could be any address it likes. A peer that
    is not a trusted proxy is the client, whatever the header says."""
    current = _ip(peer) if peer else None
    if not _trusted(current, trusted):
        return peer
    hops = [h.strip() for value in forwarded_for for h in value.split(",") if h.strip()]
    for hop in reversed(hops):
        address = _ip(hop)
        if address is None:
            break  # garbage from beyond the trusted hops: stop at the last address we can vouch for
        current = address
        if not _trusted(address, trusted):
            break
    return str(current)
