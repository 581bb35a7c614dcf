"""Full annotate cycle per workflow over HTTP: claim, the real annotation screen, submit (issue 24).

For each workflow, a stage of --items items shaped like that dataset's records, with their images
stored by the app's import and the earlier stages' finals and model scores its screen reads. Then,
on one scratch database, the bare stack's `cycle` (bench/bare_app.py, as bench/http_bench.py runs
it) and `vlcurate serve --workers N` are driven by wrk (bench/cycle_bench.lua), one annotator a
connection, each with an API token and a page session logged in through POST /login:

- screen: POST /api/v1/stages/{id}/claim -> GET /assignments/{id} (the annotation screen's HTML,
  with its stage's bar and the next item's prefetch links) -> POST /api/v1/assignments/{id}/submit
  with a valid answer, and again;
- no screen: claim -> submit, so that the screen's cost shows;
- pages: the loop of an annotator's browser (bench/pages_cycle.lua): POST /assignments/{id}/submit,
  the screen's plain form, answered with the next item's screen claimed and rendered in the same
  request, whole (its bar and prefetch links in it), and again.

Prints items/s (submits answered 200), p50/p99 of a request, errors (any answer that is not 200,
and a claim that found nothing), the ratio to the bare stack's cycle measured in the same run, and
the CPU ms an item took in the server's processes and in the database's backends (read from /proc:
steadier than the rates on a shared machine; meaningful only with the database on this machine).
Goal (issue 24): 32 clients, >= 300 items/s for generic.choice, >= 200 for the others.

    python bench/cycle_bench.py [--workflows generic.choice,wikido.verify,colorswap.filter,visargs.grounding]
                                [--modes screen,no-screen,pages] [--workers 1,2] [--seconds 10] [--clients 32]
                                [--items 20000] [--profile DIR]

With --profile, py-spy samples the server during each run and writes its collapsed stacks to DIR.

Uses DATABASE_URL's server when set, else an embedded PostgreSQL; needs `wrk` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode

import httpx
import psycopg
import sqlalchemy as sa
from client_bench import spying
from http_bench import ANNOTATORS, HERE, annotators, bare_server, dsn, make_stage, vlcurate_server, wrk
from scratch import BENCH_PASSWORD, log_in, scratch_database
from server_cpu import measured

from app import security  # noqa: E402
from app.datasets import get_workflow  # noqa: E402
from app.datasets.workflow import ItemContext  # noqa: E402
from app.datasets.colorswap import demo as colorswap_demo  # noqa: E402
from app.datasets.drawing import COLOURS, SHAPES  # noqa: E402
from app.datasets.generic import demo as generic_demo  # noqa: E402
from app.datasets.visargs import demo as visargs_demo  # noqa: E402
from app.datasets.wikido import demo as wikido_demo  # noqa: E402
from app.db import session_factory, transaction  # noqa: E402
from app.models import Item  # noqa: E402
from app.services.annotation import annotation, suggestions  # noqa: E402
from app.services.imports import imports  # noqa: E402
from app.services.projects import projects  # noqa: E402
from app.services.users import users  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.storage import make_storage  # noqa: E402

DISTINCT = 48  # records imported with their own images per workflow; copied in SQL up to --items
GOALS = {"generic.choice": 300}  # items/s at 32 clients; 200 for the others


@dataclass
class Workflow:
    """A stage to measure: the demo project it takes its stages from, records in the dataset's
    shape (written into a folder with their images), what must be done before the measured stage,
    and the answers the clients send, in turn."""

    demo: Any  # a DemoProject
    measured: int  # the measured stage's position
    records: Callable[[Path], bytes]
    filename: str
    payloads: list[dict]
    marker: tuple[str, int]  # what the screen shows once per choice, candidate or premise, and how often
    prepare: Callable[[Any, list[int], int], None] = lambda session, stages, user: None
    note: str = ""
    stage_ids: list[int] = field(default_factory=list)


def jsonl(records: list[dict]) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


# -- ColorSwap: 16 candidates (8 drawn from each caption) and the image-text model's scores ----------


def colorswap_records(folder: Path) -> bytes:
    rnd = random.Random(3)
    records = []
    for i in range(DISTINCT):
        scene = i % len(colorswap_demo.SCENES)
        a, b = rnd.sample(list(COLOURS), 2)
        candidates = []
        for k in range(16):
            x, y = (a, b) if k % 2 == 0 else (b, a)  # a painter gets some of them the wrong way round
            name = f"cs_{i:03d}_{k:02d}.png"
            (folder / name).write_bytes(colorswap_demo.draw_scene(scene, COLOURS[x], COLOURS[y], i * 100 + k))
            candidates.append({"image": name, "from_caption": 1 + k // 8, "generator": f"painter-{'ab'[k % 2]}"})
        records.append({
            "id": f"pair-{i}",
            "caption_1": colorswap_demo.SCENES[scene].format(a=a, b=b),
            "caption_2": colorswap_demo.SCENES[scene].format(a=b, b=a),
            "caption_source": ["rule-based", "handmade", "generated"][i % 3],
            "image_source": "painter",
            "candidates": candidates,
        })
    return jsonl(records)


def colorswap_scores(session, stages: list[int], user: int) -> None:
    """The worker's image-text scores for every candidate, which the filter screen shows and preselects from."""
    rnd = random.Random(0)
    for item_id in session.scalars(sa.select(Item.id).where(Item.stage_id == stages[0])):
        scores = [[round(rnd.random(), 3), round(rnd.random(), 3)] for _ in range(16)]
        suggestions.store(session, item_id, stages[0], "colorswap.itm", "clip-bench", {"scores": scores})


# -- VisArgs: records of the published annotation.json, through premises and structure first ------

BOXES = [{"startX": 24, "startY": 24, "w": 320, "h": 50}, {"startX": 170, "startY": 190, "w": 140, "h": 140}]


def visargs_records(folder: Path) -> bytes:
    (folder / "images").mkdir()
    records = {}
    for i in range(DISTINCT):
        slogan, shape, colour, thing, common, conclusion = visargs_demo.VISARGS_POSTERS[i % 3]
        name = f"images/ad_{i}.png"
        (folder / name).write_bytes(visargs_demo.draw_poster(slogan, shape, COLOURS.get(colour, (40, 80, 220)), i))
        records[f"ad_{i}"] = {
            "url": name,
            "visual_premises": [f"The words {slogan} at the top", f"{thing.capitalize()} below them"],
            "commonsense_premises": [common],
            "conclusion": conclusion,
            "reasoning_steps": [f"(VP1, VP2, CP1 -> IC1): {common}", f"(IC1 -> C): {conclusion}"],
            "b_box": BOXES,
        }
    return json.dumps(records).encode()


# The published fields each earlier stage finalises, and the drafts the import made of them.
DRAFTS = {"visual_premises": "candidate_premises", "commonsense_premises": "candidate_commonsense",
          "conclusion": "candidate_conclusion", "reasoning_steps": "candidate_steps"}


def visargs_earlier_stages(session, stages: list[int], user: int) -> None:
    """Premises and structure submitted as the release has them, so that the items wait in grounding."""
    for stage, fields in ((stages[0], ("visual_premises",)), (stages[1], ("commonsense_premises", "conclusion", "reasoning_steps"))):
        while (claimed := annotation.claim(session, stage, user)) is not None:
            data = session.get(Item, claimed.item_id).data
            payload = {f: data[DRAFTS[f]] for f in fields}
            annotation.submit(session, claimed.assignment_id, user, payload, f"prepare-{claimed.assignment_id}")


WORKFLOWS = {
    "generic.choice": Workflow(
        generic_demo.DEMOS[0], 0, lambda folder: jsonl(generic_demo.shape_records(folder, DISTINCT, seed=1)), "shapes.jsonl",
        [{"choice": shape} for shape in SHAPES], ('<label class="choice">', len(SHAPES)),
        note="the shapes demo's records and stage (3 choices)",
    ),
    "wikido.verify": Workflow(
        wikido_demo.DEMOS[0], 0, lambda folder: jsonl(wikido_demo.wikido_records(folder, DISTINCT, seed=4)), "val.jsonl",
        [{"verdict": "correct"}, {"verdict": "hallucinated", "caption": "A shape on a pale background."}, {"verdict": "wrong"}],
        ("data-wikido", 1),
        note="the WikiDO demo's records (published JSONL fields, stored images)",
    ),
    "colorswap.filter": Workflow(
        colorswap_demo.DEMOS[0], 0, colorswap_records, "pairs.jsonl",
        [{"choice_1": 0, "choice_2": 9}, {"choice_1": 3, "choice_2": 12}, {"choice_1": None, "choice_2": None}],
        ('<figure class="candidate"', 16),
        prepare=colorswap_scores, note="16 candidates a pair, model scores for each",
    ),
    "visargs.grounding": Workflow(
        visargs_demo.DEMOS[0], 2, visargs_records, "annotation.json", [{"b_box": BOXES}], ('class="has-box', len(BOXES)),
        prepare=visargs_earlier_stages, note="published annotation.json records, premises and structure done",
    ),
}


# -- setting up a stage: the distinct records through the app's import, copied in SQL ---------------

# Copies of the imported items (external id "<id>~<n>"), in rounds so that claims meet every record
# in turn, then the copies' earlier finals and model suggestions.
COPY_ITEMS = """
INSERT INTO items (project_id, external_id, data, source, assets, group_id, stage_id, status, slots_left)
SELECT i.project_id, i.external_id || '~' || g, jsonb_set(i.data, '{id}', to_jsonb(i.external_id || '~' || g)),
       i.source, i.assets, i.group_id, i.stage_id, i.status, i.slots_left
FROM generate_series(1, %(copies)s) g CROSS JOIN items i
WHERE i.project_id = %(project)s AND i.external_id NOT LIKE '%%~%%' ORDER BY g, i.id
"""
COPY_ROWS = """
INSERT INTO {table} (item_id, {columns})
SELECT c.id, {r_columns} FROM items c
JOIN items o ON o.project_id = c.project_id AND o.external_id = split_part(c.external_id, '~', 1)
JOIN {table} r ON r.item_id = o.id
WHERE c.project_id = %s AND c.external_id LIKE '%%~%%'
"""
COPIED = {"item_results": "stage_id, payload, discard, source, created_by",
          "suggestions": "stage_id, kind, model, model_version, payload, score"}


def set_up(name: str, flow: Workflow, url, settings: Settings, storage, tmp: Path, conn, items: int) -> int:
    """Make the workflow's project; returns the measured stage's id."""
    folder = tmp / name
    folder.mkdir()
    data = flow.records(folder)
    engine = sa.create_engine(url)
    sessions = session_factory(engine)
    with transaction(sessions) as s:
        specs = [projects.StageSpec(workflow=st.workflow, name=st.name, guidelines=st.guidelines, config=dict(st.config), overlap=st.overlap)
                 for st in flow.demo.stages]
        project = projects.create_project(s, f"cycle {name}", specs).id
        flow.stage_ids = [st.id for st in projects.stages_of(s, project)]
        drafter = users.create_user(s, f"drafter-{name.replace('.', '-')}", "annotator", BENCH_PASSWORD).id
        imports.import_items(s, project, data, flow.filename, settings=settings, storage=storage,
                             images=imports.ImageSource(settings, storage, base=folder))
    with transaction(sessions) as s:
        flow.prepare(s, flow.stage_ids, drafter)
    engine.dispose()
    shutil.rmtree(folder)
    conn.execute(COPY_ITEMS, {"copies": max(0, -(-items // DISTINCT) - 1), "project": project})
    for table, columns in COPIED.items():
        r_columns = ", ".join(f"r.{c.strip()}" for c in columns.split(","))
        conn.execute(COPY_ROWS.format(table=table, columns=columns, r_columns=r_columns), (project,))
    stage = flow.stage_ids[flow.measured]
    n = conn.execute("SELECT count(*) FROM items WHERE stage_id = %s AND status = 'active' AND slots_left > 0", (stage,)).fetchone()[0]
    print(f"{name}: {n:,} items waiting in the stage ({flow.note})", flush=True)
    return stage


# -- running ------------------------------------------------------------------------------------------


def page_sessions(port: int, tokens: list[str]) -> str:
    """Each annotator logged in through POST /login once: lines "token<TAB>Cookie header"."""
    lines = []
    for i, token in enumerate(tokens):
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            log_in(client, f"bench{i}")
            if client.get("/").status_code != 200:
                raise SystemExit(f"bench{i} could not log in")
            lines.append(f"{token}\tvlcurate_session={client.cookies['vlcurate_session']}")
    return "\n".join(lines) + "\n"


def check_screen(name: str, port: int, person: str, stage: int) -> None:
    """One claim and screen by the first annotator (whose client takes the lease back): is it the screen expected?"""
    token, cookie = person.split("\t")
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        claimed = client.post(f"/api/v1/stages/{stage}/claim", headers={"Authorization": f"Bearer {token}"}).json()
        html = client.get(f"/assignments/{claimed['assignment_id']}", headers={"Cookie": cookie}).text
    text, n = WORKFLOWS[name].marker
    if html.count(text) != n or "/assets/" not in html:
        raise SystemExit(f"{name}: not the screen expected ({text!r} {html.count(text)} times, not {n}):\n{html[:3000]}")
    print(f"{name}: the screen is {len(html) / 1000:.0f} KB of HTML", flush=True)


MODES = ("screen", "no-screen", "pages")


def answer_forms(name: str) -> str:
    """The workflow's answers as its screen's form posts them (URL-encoded), one a line."""
    workflow, config = get_workflow(name), dict(WORKFLOWS[name].demo.stages[WORKFLOWS[name].measured].config)
    lines = []
    for payload in WORKFLOWS[name].payloads:
        values = workflow.payload_values(ItemContext({}, config), payload)
        if workflow.form_to_payload(values) != payload:
            raise SystemExit(f"{name}: the form {values} does not post {payload}")
        lines.append(urlencode(values, doseq=True))
    return "\n".join(lines) + "\n"


def cycle(port: int, mode: str, stage: int, people: Path, payloads: Path, clients: int, seconds: int) -> dict:
    script = "pages_cycle.lua" if mode == "pages" else "cycle_bench.lua"
    out = subprocess.run(
        ["wrk", "-t", str(clients), "-c", str(clients), "-d", f"{seconds}s", "--latency", "-s", str(HERE / script),
         f"http://127.0.0.1:{port}", "--", mode, str(stage), str(people), str(payloads)],
        capture_output=True, text=True,
    )
    if out.returncode or "RESULT " not in out.stdout:
        raise SystemExit(f"wrk failed: {out.stdout[-2000:]} {out.stderr[-2000:]}")
    result = json.loads(out.stdout.split("RESULT ", 1)[1].splitlines()[0])
    result["rate"] = result["items"] / result["seconds"]
    result["first_errors"] = [line[6:] for line in out.stdout.splitlines() if line.startswith("ERROR ")]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", default=",".join(WORKFLOWS), help=f"any of {', '.join(WORKFLOWS)}")
    parser.add_argument("--workers", default="1,2", help="vlcurate serve --workers values to measure")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--clients", type=int, default=ANNOTATORS)
    parser.add_argument("--items", type=int, default=20_000, help="items per stage (the stages must not run dry)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"any of {', '.join(MODES)}")
    parser.add_argument("--profile", type=Path, help="write py-spy's collapsed stacks of the server per run here")
    args = parser.parse_args()
    names = [w for w in args.workflows.split(",") if w]
    unknown = set(names) - set(WORKFLOWS)
    if unknown:
        raise SystemExit(f"unknown workflows: {', '.join(sorted(unknown))}; known: {', '.join(WORKFLOWS)}")
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - set(MODES):
        raise SystemExit(f"unknown modes: {', '.join(sorted(set(modes) - set(MODES)))}; known: {', '.join(MODES)}")
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    workers = [int(w) for w in args.workers.split(",") if w]
    print(f"machine: {os.cpu_count()} cores; load generator and servers on the same machine; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with scratch_database() as (url, tmp), psycopg.connect(dsn(url), autocommit=True) as conn:
        settings = Settings(database_url=url.render_as_string(hide_password=False), data_dir=tmp / "data")
        storage = make_storage(settings)
        _, tokens = annotators(conn)
        conn.execute("UPDATE users SET password_hash = %s WHERE username LIKE 'bench%%'", (security.hash_password(BENCH_PASSWORD),))
        tokens_file = tmp / "tokens.txt"
        tokens_file.write_text("\n".join(tokens) + "\n")
        started = time.perf_counter()
        # The bare stack's stage first: its claim walks the primary key (ORDER BY id LIMIT 1, the planner
        # expecting its stage's rows anywhere), so items of other stages before its own would be walked over.
        conn.execute("CREATE TABLE bare_submits (id bigserial PRIMARY KEY, item_id bigint, payload jsonb)")
        _, bare_stage = make_stage(conn, "bare", args.items)
        stages = {name: set_up(name, WORKFLOWS[name], url, settings, storage, tmp, conn, args.items) for name in names}
        conn.execute("VACUUM ANALYZE")
        print(f"set up in {time.perf_counter() - started:.0f} s", flush=True)
        for name in names:
            (tmp / f"{name}.payloads").write_text("".join(json.dumps(p) + "\n" for p in WORKFLOWS[name].payloads))
            (tmp / f"{name}.forms").write_text(answer_forms(name))

        bare = bare_server(url, bare_stage)
        try:
            base = measured(lambda: wrk(bare.port, "cycle", bare_stage, tokens_file, args.clients, args.seconds), bare.proc.pid, conn)
        finally:
            bare.stop()
        rows = []
        people = tmp / "annotators.txt"
        for w in workers:
            server = vlcurate_server(url, w, tmp / "data")
            try:
                if not people.exists():  # the session cookies hold for every server: one secret key in the data folder
                    people.write_text(page_sessions(server.port, tokens))
                    for name in names:
                        check_screen(name, server.port, people.read_text().splitlines()[0], stages[name])
                for name in names:
                    for mode in modes:
                        time.sleep(1)  # the last run's requests still queued are answered before its clients claim again
                        answers = tmp / f"{name}.{'forms' if mode == 'pages' else 'payloads'}"
                        spied = args.profile / f"{name}-{mode}-w{w}.txt" if args.profile else None
                        with spying(server.proc.pid, spied):
                            r = measured(lambda: cycle(server.port, mode, stages[name], people, answers, args.clients, args.seconds),
                                         server.proc.pid, conn)
                        rows.append((name, mode, f"workers {w}", r))
                        if r["errors"]:
                            print(f"{name} {mode}, workers {w}: {r['errors']} errors, the first of some connections:",
                                  *r["first_errors"][:5], f"the server's log ends:\n{server.tail()}", sep="\n")
            finally:
                server.stop()

    print(f"\n{args.clients} clients, {args.seconds} s each; {os.cpu_count()} cores; stages of {args.items:,} items; "
          f"load average now {os.getloadavg()[0]:.1f}; p50/p99 of one request; CPU ms an item in the server's processes and the database's")
    print(f"{'workflow':<18} {'cycle':<10} {'server':<10} {'items/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'ratio':>7} {'goal':>5} {'app ms':>7} {'db ms':>6}")
    print(f"{'(bare stack)':<18} {'no-screen':<10} {'bare':<10} {base['rate']:>8,.0f} {base['p50_ms']:>8.1f} {base['p99_ms']:>8.1f} "
          f"{base['errors']:>7} {100.0:>6.1f}% {'':>5} {base['app_ms']:>7.2f} {base['db_ms']:>6.2f}")
    for name, mode, who, r in rows:
        goal = GOALS.get(name, 200)
        print(f"{name:<18} {mode:<10} {who:<10} {r['rate']:>8,.0f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['errors']:>7} "
              f"{100 * r['rate'] / base['rate']:>6.1f}% {'met' if r['rate'] >= goal else goal:>5} "
              f"{r['app_ms']:>7.2f} {r['db_ms']:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
