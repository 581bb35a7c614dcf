"""Networks named in settings (`10.0.0.1, 192.168.0.0/16, ::1`), parsed where settings and the web layer both reach."""

from __future__ import annotations

import ipaddress
from functools import lru_cache

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def parse_networks(spec: str) -> tuple[Network, ...]:
    """`10.0.0.1, 192.168.0.0/16, ::1` as networks; ValueError names an entry that is neither."""
    networks = []
    for entry in filter(None, (e.strip() for e in spec.split(","))):
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"'{entry}' is not an address or network (e.g. 10.0.0.1 or 10.0.0.0/8)") from None
    return tuple(networks)
