"""Audit events are append-only: the database refuses to change or delete one

Revision ID: 0024audit
Revises: 0023bias
Create Date: 2026-11-29 00:00:00

A row-level trigger refuses every UPDATE and DELETE on `audit_events`, whoever sends it. One change is
let through: deleting a user sets `actor_id` to NULL on that user's events (the foreign key's ON
DELETE SET NULL), so a user can still be deleted and their events stay, without their id. The trigger
tells that case apart by two things together: it fires from inside another trigger (the foreign
key's action; `pg_trigger_depth() > 1`), and the update nulls `actor_id` and changes nothing else. A
hand-written `UPDATE audit_events SET actor_id = NULL` is refused. TRUNCATE (the table owner's
wholesale reset, used by the test suite) is not a row change and is left to the owner.
"""

from alembic import op

revision = '0024audit'
down_revision = '0023bias'
branch_labels = None
depends_on = None

FUNCTION = """
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND pg_trigger_depth() > 1
       AND OLD.actor_id IS NOT NULL AND NEW.actor_id IS NULL
       AND (NEW.id, NEW.at, NEW.action, NEW.target, NEW.ip, NEW.detail)
           IS NOT DISTINCT FROM (OLD.id, OLD.at, OLD.action, OLD.target, OLD.ip, OLD.detail) THEN
        RETURN NEW;  -- the user's deletion (ON DELETE SET NULL): the event stays
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$
"""


def upgrade() -> None:
    op.execute(FUNCTION)
    op.execute(
        "CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events "
        "FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER audit_events_append_only ON audit_events")
    op.execute("DROP FUNCTION audit_events_append_only()")
