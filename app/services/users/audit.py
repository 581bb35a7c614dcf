"""Writing audit events: one append-only row per change (who, when, what, before -> after, from where)."""

from typing import Any

from sqlalchemy.orm import Session

from app.models import AuditEvent

# Keys whose values never enter the log, at any depth of `detail` (a password hash, a token's value,
# an API key): the event says that it changed, with "[withheld]" in place of the value.
SECRET_MARKS = ("password", "hash", "token_value", "secret", "api_key", "apikey", "credential")
WITHHELD = "[withheld]"


def _secret(key: str) -> bool:
    low = key.lower()
    return low in ("token", "key") or any(mark in low for mark in SECRET_MARKS)


def scrub(value: Any) -> Any:
    """`value` with every secret-named key's value withheld (dicts and lists, recursively)."""
    if isinstance(value, dict):
        return {k: WITHHELD if _secret(str(k)) else scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`before` and `after` cut to the keys whose values differ (for an event's detail)."""
    keys = [k for k in after if before.get(k) != after[k]]
    return {"before": {k: before.get(k) for k in keys}, "after": {k: after[k] for k in keys}}


def record(
    session: Session,
    action: str,
    *,
    actor_id: int | None = None,
    target: str = "",
    ip: str | None = None,
    **detail: Any,
) -> None:
    """Add one event. Without `ip`, the request's address that the web layer put on the session."""
    ip = ip or session.info.get("client_ip")
    session.add(AuditEvent(action=action, actor_id=actor_id, target=target, ip=ip, detail=scrub(detail)))
