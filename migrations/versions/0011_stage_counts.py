"""maintained counts for progress figures, kept by statement-level triggers

Revision ID: 0011counts
Revises: 0010
Create Date: 2026-11-23 02:40:00

Each trigger runs once per statement over its transition tables, so a claim costs a look at one row
and a bulk INSERT ... SELECT or COPY of a million items one grouped upsert. The statements are
EXECUTEd, planned for the transition tables at hand: a plan PL/pgSQL cached on a connection after
a bulk statement (a hash join over a million rows) made every later one-row update on that
connection take a second. Counter rows are
upserted in key order (no deadlock between two writers) into the writing backend's shard. Counts of
a deleted project or stage are dropped with it (the row's cascade runs first: its RI triggers sort
before ours by name), and the deltas that cascade produces are skipped by the joins on
projects/stages.
"""

from alembic import op
import sqlalchemy as sa

revision = '0011counts'
down_revision = '0010'
branch_labels = None
depends_on = None

SHARD = "(pg_backend_pid() % 16)::smallint"

FUNCTIONS = f"""
CREATE FUNCTION vlc_count_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        EXECUTE $q$INSERT INTO item_counts (project_id, stage_id, status, shard, n)
        SELECT d.project_id, d.stage_id, d.status, {SHARD}, d.n FROM (
            SELECT project_id, coalesce(stage_id, 0) AS stage_id, status, count(*) AS n
            FROM new_rows GROUP BY 1, 2, 3) d
        JOIN projects p ON p.id = d.project_id
        ORDER BY 1, 2, 3
        ON CONFLICT (project_id, stage_id, status, shard) DO UPDATE SET n = item_counts.n + excluded.n$q$;
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE $q$INSERT INTO item_counts (project_id, stage_id, status, shard, n)
        SELECT d.project_id, d.stage_id, d.status, {SHARD}, -d.n FROM (
            SELECT project_id, coalesce(stage_id, 0) AS stage_id, status, count(*) AS n
            FROM old_rows GROUP BY 1, 2, 3) d
        JOIN projects p ON p.id = d.project_id
        ORDER BY 1, 2, 3
        ON CONFLICT (project_id, stage_id, status, shard) DO UPDATE SET n = item_counts.n + excluded.n$q$;
    ELSE
        EXECUTE $q$INSERT INTO item_counts (project_id, stage_id, status, shard, n)
        SELECT d.project_id, d.stage_id, d.status, {SHARD}, d.n FROM (
            SELECT project_id, stage_id, status, sum(delta) AS n FROM (
                SELECT o.project_id, coalesce(o.stage_id, 0) AS stage_id, o.status, -1 AS delta
                FROM old_rows o JOIN new_rows n ON n.id = o.id
                WHERE (o.project_id, o.stage_id, o.status) IS DISTINCT FROM (n.project_id, n.stage_id, n.status)
                UNION ALL
                SELECT n.project_id, coalesce(n.stage_id, 0), n.status, 1
                FROM old_rows o JOIN new_rows n ON n.id = o.id
                WHERE (o.project_id, o.stage_id, o.status) IS DISTINCT FROM (n.project_id, n.stage_id, n.status)
            ) moves GROUP BY 1, 2, 3 HAVING sum(delta) <> 0) d
        JOIN projects p ON p.id = d.project_id
        ORDER BY 1, 2, 3
        ON CONFLICT (project_id, stage_id, status, shard) DO UPDATE SET n = item_counts.n + excluded.n$q$;
    END IF;
    RETURN NULL;
END $$;

-- finished: (item, stage) pairs that got their first final record; a delete takes back pairs left with none.
CREATE FUNCTION vlc_count_results() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        EXECUTE $q$INSERT INTO stage_counts (stage_id, shard, finished)
        SELECT d.stage_id, {SHARD}, d.n FROM (
            SELECT f.stage_id, count(*) AS n FROM (
                SELECT item_id, stage_id, min(id) AS first FROM new_rows GROUP BY 1, 2) f
            WHERE NOT EXISTS (
                SELECT 1 FROM item_results r WHERE r.item_id = f.item_id AND r.stage_id = f.stage_id AND r.id < f.first)
            GROUP BY 1) d
        JOIN stages s ON s.id = d.stage_id
        ORDER BY 1
        ON CONFLICT (stage_id, shard) DO UPDATE SET finished = stage_counts.finished + excluded.finished$q$;
    ELSE
        EXECUTE $q$INSERT INTO stage_counts (stage_id, shard, finished)
        SELECT d.stage_id, {SHARD}, -d.n FROM (
            SELECT g.stage_id, count(*) AS n FROM (SELECT DISTINCT item_id, stage_id FROM old_rows) g
            WHERE NOT EXISTS (SELECT 1 FROM item_results r WHERE r.item_id = g.item_id AND r.stage_id = g.stage_id)
            GROUP BY 1) d
        JOIN stages s ON s.id = d.stage_id
        ORDER BY 1
        ON CONFLICT (stage_id, shard) DO UPDATE SET finished = stage_counts.finished + excluded.finished$q$;
    END IF;
    RETURN NULL;
END $$;

-- annotations: first revisions (what the progress figures call annotations).
CREATE FUNCTION vlc_count_annotations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $q$INSERT INTO stage_counts (stage_id, shard, annotations)
    SELECT d.stage_id, {SHARD}, d.n FROM (
        SELECT stage_id, count(*) AS n FROM new_rows WHERE revision = 1 GROUP BY 1) d
    JOIN stages s ON s.id = d.stage_id
    ORDER BY 1
    ON CONFLICT (stage_id, shard) DO UPDATE SET annotations = stage_counts.annotations + excluded.annotations$q$;
    RETURN NULL;
END $$;

CREATE FUNCTION vlc_uncount_annotations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $q$INSERT INTO stage_counts (stage_id, shard, annotations)
    SELECT d.stage_id, {SHARD}, -d.n FROM (
        SELECT stage_id, count(*) AS n FROM old_rows WHERE revision = 1 GROUP BY 1) d
    JOIN stages s ON s.id = d.stage_id
    ORDER BY 1
    ON CONFLICT (stage_id, shard) DO UPDATE SET annotations = stage_counts.annotations + excluded.annotations$q$;
    RETURN NULL;
END $$;

-- submitted assignments per (stage, annotator): "you did N".
CREATE FUNCTION vlc_count_submits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        EXECUTE $q$INSERT INTO annotator_counts (stage_id, annotator_id, submitted)
        SELECT d.stage_id, d.annotator_id, d.n FROM (
            SELECT stage_id, annotator_id, count(*) AS n FROM new_rows WHERE status = 'submitted' GROUP BY 1, 2) d
        JOIN stages s ON s.id = d.stage_id
        ORDER BY 1, 2
        ON CONFLICT (stage_id, annotator_id) DO UPDATE SET submitted = annotator_counts.submitted + excluded.submitted$q$;
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE $q$INSERT INTO annotator_counts (stage_id, annotator_id, submitted)
        SELECT d.stage_id, d.annotator_id, -d.n FROM (
            SELECT stage_id, annotator_id, count(*) AS n FROM old_rows WHERE status = 'submitted' GROUP BY 1, 2) d
        JOIN stages s ON s.id = d.stage_id
        ORDER BY 1, 2
        ON CONFLICT (stage_id, annotator_id) DO UPDATE SET submitted = annotator_counts.submitted + excluded.submitted$q$;
    ELSE
        EXECUTE $q$INSERT INTO annotator_counts (stage_id, annotator_id, submitted)
        SELECT d.stage_id, d.annotator_id, d.n FROM (
            SELECT stage_id, annotator_id, sum(delta) AS n FROM (
                SELECT o.stage_id, o.annotator_id, -1 AS delta FROM old_rows o JOIN new_rows n ON n.id = o.id
                WHERE o.status = 'submitted' AND (n.status, n.stage_id, n.annotator_id) IS DISTINCT FROM (o.status, o.stage_id, o.annotator_id)
                UNION ALL
                SELECT n.stage_id, n.annotator_id, 1 FROM old_rows o JOIN new_rows n ON n.id = o.id
                WHERE n.status = 'submitted' AND (n.status, n.stage_id, n.annotator_id) IS DISTINCT FROM (o.status, o.stage_id, o.annotator_id)
            ) moves GROUP BY 1, 2 HAVING sum(delta) <> 0) d
        JOIN stages s ON s.id = d.stage_id
        ORDER BY 1, 2
        ON CONFLICT (stage_id, annotator_id) DO UPDATE SET submitted = annotator_counts.submitted + excluded.submitted$q$;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION vlc_drop_project_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $q$DELETE FROM item_counts WHERE project_id IN (SELECT id FROM old_rows)$q$;
    RETURN NULL;
END $$;

CREATE FUNCTION vlc_drop_stage_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $q$DELETE FROM stage_counts WHERE stage_id IN (SELECT id FROM old_rows)$q$;
    EXECUTE $q$DELETE FROM annotator_counts WHERE stage_id IN (SELECT id FROM old_rows)$q$;
    RETURN NULL;
END $$;
"""

# (table, function, operation): one statement-level trigger each.
TRIGGERS = [
    ("items", "vlc_count_items", "INSERT"),
    ("items", "vlc_count_items", "UPDATE"),
    ("items", "vlc_count_items", "DELETE"),
    ("item_results", "vlc_count_results", "INSERT"),
    ("item_results", "vlc_count_results", "DELETE"),
    ("annotations", "vlc_count_annotations", "INSERT"),
    ("annotations", "vlc_uncount_annotations", "DELETE"),
    ("assignments", "vlc_count_submits", "INSERT"),
    ("assignments", "vlc_count_submits", "UPDATE"),
    ("assignments", "vlc_count_submits", "DELETE"),
    ("projects", "vlc_drop_project_counts", "DELETE"),
    ("stages", "vlc_drop_stage_counts", "DELETE"),
]

BACKFILL = [
    "INSERT INTO item_counts (project_id, stage_id, status, shard, n)"
    " SELECT project_id, coalesce(stage_id, 0), status, 0, count(*) FROM items GROUP BY 1, 2, 3",
    "INSERT INTO stage_counts (stage_id, shard, finished, annotations)"
    " SELECT s.id, 0,"
    " (SELECT count(DISTINCT item_id) FROM item_results r WHERE r.stage_id = s.id),"
    " (SELECT count(*) FROM annotations a WHERE a.stage_id = s.id AND a.revision = 1) FROM stages s",
    "INSERT INTO annotator_counts (stage_id, annotator_id, submitted)"
    " SELECT stage_id, annotator_id, count(*) FROM assignments WHERE status = 'submitted' GROUP BY 1, 2",
]


def _transition(op_name: str) -> str:
    return {
        "INSERT": "REFERENCING NEW TABLE AS new_rows",
        "DELETE": "REFERENCING OLD TABLE AS old_rows",
        "UPDATE": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
    }[op_name]


def upgrade() -> None:
    op.create_table(
        'item_counts',
        sa.Column('project_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('stage_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('shard', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('n', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('project_id', 'stage_id', 'status', 'shard', name=op.f('pk_item_counts')),
    )
    op.create_table(
        'stage_counts',
        sa.Column('stage_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('shard', sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column('finished', sa.BigInteger(), server_default='0', nullable=False),
        sa.Column('annotations', sa.BigInteger(), server_default='0', nullable=False),
        sa.PrimaryKeyConstraint('stage_id', 'shard', name=op.f('pk_stage_counts')),
    )
    op.create_table(
        'annotator_counts',
        sa.Column('stage_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('annotator_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('submitted', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('stage_id', 'annotator_id', name=op.f('pk_annotator_counts')),
    )
    # Take the counted tables' write locks first, so that the backfill and the triggers see the same rows.
    op.execute("LOCK TABLE items, item_results, annotations, assignments IN SHARE ROW EXCLUSIVE MODE")
    op.execute(FUNCTIONS)
    for table, function, op_name in TRIGGERS:
        op.execute(
            f"CREATE TRIGGER vlc_{table}_{op_name.lower()}_count AFTER {op_name} ON {table} {_transition(op_name)}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        )
    for statement in BACKFILL:
        op.execute(statement)


def downgrade() -> None:
    for table, _, op_name in TRIGGERS:
        op.execute(f"DROP TRIGGER vlc_{table}_{op_name.lower()}_count ON {table}")
    for function in dict.fromkeys(f for _, f, _ in TRIGGERS):
        op.execute(f"DROP FUNCTION {function}()")
    op.drop_table('annotator_counts')
    op.drop_table('stage_counts')
    op.drop_table('item_counts')
