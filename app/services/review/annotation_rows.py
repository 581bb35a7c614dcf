"""The annotations of a project as the table people analyse (`GET /api/v1/projects/{id}/annotations`,
the client's `annotations()`): one JSON line per submitted annotation revision with its annotator
(a stable pseudonym for anyone but an admin), answer, when it was claimed and submitted, active
seconds, the suggestions shown and what the annotator did with each (suggestion_outcomes), and the
reviewer's decision on it. Read from a server-side cursor, so memory stays flat in the project's size."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator

from sqlalchemy.orm import Session

FETCH = 2000  # rows a round trip to the cursor, and lines a chunk of the stream

# The first review event on the item in the stage at or after the annotation decides it.
_ROWS = """
SELECT a.id, a.item_id, i.external_id, a.stage_id, st.name, a.annotator_id, u.username, a.revision, a.payload::text,
       asg.created_at, a.created_at, a.seconds_spent,
       (SELECT json_agg(json_build_object('kind', o.kind, 'model', o.model, 'model_version', o.model_version,
                                          'outcome', o.outcome) ORDER BY o.id)
          FROM suggestion_outcomes o WHERE o.annotation_id = a.id)::text,
       r.action, r.how
FROM annotations a
JOIN items i ON i.id = a.item_id
JOIN stages st ON st.id = a.stage_id
JOIN assignments asg ON asg.id = a.assignment_id
JOIN users u ON u.id = a.annotator_id
LEFT JOIN LATERAL (
    SELECT e.action, e.detail->>'how' AS how FROM audit_events e
    WHERE e.action IN ('item.review', 'item.sent_back') AND e.target = 'item:' || a.item_id
      AND e.detail->>'stage' = a.stage_id::text AND e.at >= a.created_at
    ORDER BY e.at, e.id LIMIT 1
) r ON true
WHERE st.project_id = %(project)s AND (%(stage)s::int IS NULL OR a.stage_id = %(stage)s::int)
ORDER BY a.id
"""


def pseudonym(secret: str, user_id: int) -> str:
    """A stable name for a user that does not reveal who they are (keyed by the server's secret)."""
    return "annotator-" + hmac.new(secret.encode(), f"user:{user_id}".encode(), hashlib.sha256).hexdigest()[:8]


def decision(annotation_id: int, action: str | None, how: str | None) -> str | None:
    """The review decision on one annotation: accepted (this one became final), overridden (another
    one, or the reviewer's own version), sent_back; None where no reviewer decided after it."""
    if action == "item.sent_back":
        return "sent_back"
    if action == "item.review":
        return "accepted" if how == f"accepted annotation {annotation_id}" else "overridden"
    return None


def annotation_lines(session: Session, project_id: int, stage_id: int | None, *, names: bool, secret: str) -> Iterator[str]:
    """JSON lines (`AnnotationRow`), a chunk of up to FETCH at a time, in annotation order; the
    annotator's username where `names`, else their pseudonym."""
    raw = session.connection().connection.driver_connection
    dumps = json.dumps
    with raw.cursor(name="annotation_rows") as cursor:
        cursor.execute(_ROWS, {"project": project_id, "stage": stage_id})
        while rows := cursor.fetchmany(FETCH):
            lines = []
            for (aid, item_id, external_id, sid, stage, uid, username, revision, payload, claimed, submitted, seconds,
                 shown, action, how) in rows:
                who = username if names else pseudonym(secret, uid)
                lines.append(
                    f'{{"annotation_id": {aid}, "item_id": {item_id}, "external_id": {dumps(external_id, ensure_ascii=False)}, '
                    f'"stage_id": {sid}, "stage": {dumps(stage, ensure_ascii=False)}, "annotator": {dumps(who)}, "revision": {revision}, '
                    f'"payload": {payload}, "claimed_at": "{claimed.isoformat()}", "submitted_at": "{submitted.isoformat()}", '
                    f'"seconds_spent": {dumps(seconds)}, "suggestions": {shown or "[]"}, "review": {dumps(decision(aid, action, how))}}}\n')
            yield "".join(lines)
