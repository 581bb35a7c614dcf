"""The commands of `vlcurate-remote` (see `vlcurate.cli`): each takes the client and the parsed
arguments, makes its calls and prints what `vlcurate` prints for the same command; returns the exit
status (None: 0)."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from vlcurate import _bias_table
from vlcurate.client import Client
from vlcurate.models import SplitVersionOut, StageSettings


def _ref(project: str) -> int | str:
    return int(project) if project.isdigit() else project


def _stage(client: Client, project: str, stage: str | None) -> StageSettings:
    """The stage named (by id, name or workflow), or the project's first when none is."""
    stages = client.settings(_ref(project)).stages
    chosen = [s for s in stages if stage is None or stage in (s.name, s.workflow, str(s.id))]
    if not chosen:
        raise ValueError(f"Project {project!r} has no stage {stage!r} (it has: {', '.join(s.name for s in stages)}).")
    return chosen[0]


def _json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def project_list(client: Client, args: argparse.Namespace) -> None:
    rows = client.projects()
    if args.as_json:
        _json([p.model_dump() for p in rows])
        return
    if not rows:
        print("No projects yet.")
    for p in rows:
        stages = ", ".join(s.workflow for s in p.stages)
        print(f"{p.id}\t{p.name}\t{stages}\t{p.done:,} of {p.items:,} done")


def project_update(client: Client, args: argparse.Namespace) -> None:
    done = client.update_project(_ref(args.project), name=args.name, description=args.description)
    print(f"Project {done.id} is {done.name!r}.")


def project_delete(client: Client, args: argparse.Namespace) -> None:
    client.delete_project(_ref(args.project), confirm=args.confirm)
    print(f"Deleted project {args.project!r}.")


def _lines(file: Path) -> Iterator[str]:
    """A JSONL file's records as their text (every character kept)."""
    with file.open(encoding="utf-8-sig") as fh:
        yield from (line.rstrip("\n") for line in fh if line.strip())


def push_records(client: Client, args: argparse.Namespace) -> None:
    file = Path(args.file)
    pushed = client.push_records(_ref(args.project), _lines(file), images=args.images or file.parent,
                                 on_conflict="update" if args.update else "skip", progress=sys.stderr.isatty())
    print(f"Imported {pushed.created:,} items ({pushed.images:,} images, {pushed.new_images:,} new; "
          f"{pushed.skipped:,} already there, {pushed.updated:,} updated).")


def delete_records(client: Client, args: argparse.Namespace) -> None:
    ids = [line.strip() for i in args.ids for line in (Path(i[1:]).read_text(encoding="utf-8").splitlines() if i.startswith("@") else [i])
           if line.strip()]
    done = client.delete_records(_ref(args.project), ids, reason=args.reason)
    print(f"Hid {done.hidden:,} items ({done.already:,} hidden before).")


def suggest(client: Client, args: argparse.Namespace) -> None:
    stage = _stage(client, args.project, args.stage)
    rows = (json.loads(line) for line in _lines(Path(args.file)))
    done = client.push_suggestions(stage.id, args.model, args.model_version, rows)
    print(f"Stored {done.stored:,} suggestions ({done.unchanged:,} unchanged).")


def agreement(client: Client, args: argparse.Namespace) -> None:
    stages = client.settings(_ref(args.project)).stages
    chosen = [s for s in stages if args.stage is None or args.stage in (s.name, str(s.id))]
    reports = [client.agreement(s.id, samples=args.samples, seed=args.seed).model_dump(exclude_unset=True) for s in chosen]
    if args.as_json:
        _json(reports)
        return
    for report in reports:
        print(f"{report['stage']['name']} ({report['stage']['workflow']}): {report['items']} items with 2+ annotators")
        for facet, figures in report["facets"].items():
            for metric, ci in figures["metrics"].items():
                low, high = ci.get("low"), ci.get("high")
                interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
                estimate = ci["estimate"]
                print(f"  {facet}\t{metric}\t{'n/a' if estimate is None or estimate != estimate else f'{estimate:.3f}'}{interval}")


def bias(client: Client, args: argparse.Namespace) -> None:
    stages = client.settings(_ref(args.project)).stages
    chosen = [s for s in stages if args.stage is None or args.stage in (s.name, str(s.id))]
    if not chosen:
        raise ValueError(f"Project {args.project!r} has no stage {args.stage!r} (it has: {', '.join(s.name for s in stages)}).")
    reports = [(s, client.draft_bias(s.id, samples=args.samples, seed=args.seed)) for s in chosen]
    if args.as_json:
        _json(reports[0][1] if args.stage else [r for _, r in reports])
        return
    print("\n\n".join(_bias_table.text(f"{s.name} ({s.workflow})", r) for s, r in reports))


def gold_import(client: Client, args: argparse.Namespace) -> None:
    stage = _stage(client, args.project, args.stage)
    done = client.import_gold(stage.id, Path(args.file))
    print(f"{done.imported:,} gold items in stage '{stage.name}'.")


def gold_accuracy(client: Client, args: argparse.Namespace) -> None:
    report = client.gold_accuracy(_stage(client, args.project, args.stage).id)
    if args.as_json:
        _json(report.model_dump())
        return
    print(f"{report.gold_items} gold items; flagged below {report.threshold:.2f} over >= {report.min_items}")
    for name, a in report.annotators.items():
        ci = a.accuracy
        interval = f" [{ci.low:.3f}, {ci.high:.3f}]" if ci.low is not None and ci.high is not None else ""
        print(f"  {name}\t{a.items}\t{ci.estimate:.3f}{interval}{'  flagged' if a.flagged else ''}")


def leaks(client: Client, args: argparse.Namespace) -> int:
    report = client.leaks(_ref(args.project), keep_together=args.keep_together, progress=sys.stderr.isatty())
    if args.as_json:
        _json(report.model_dump())
    else:
        print(f"Split version {report.version}: {report.items:,} items, {report.images:,} images, {report.texts:,} texts.")
        for pair, n in report.leaks.items():
            print(f"  {pair}: {n:,} leaked groups")
        print(f"  {report.leaked_groups:,} leaked groups, {report.within_split_groups:,} duplicate groups within one split.")
    return 2 if report.leaked_groups else 0


def annotation_rows(client: Client, args: argparse.Namespace) -> None:
    count = 0
    with Path(args.out).open("w", encoding="utf-8") as out:
        for row in client.annotation_rows(_ref(args.project), args.stage):
            out.write(row.model_dump_json() + "\n")
            count += 1
    print(f"Wrote {count:,} annotations to {args.out}.")


def work_log(client: Client, args: argparse.Namespace) -> None:
    log = client.work_log(args.workspace, args.start, args.end, annotator=args.annotator, project=args.project, download=args.out)
    if args.as_json:
        _json(log.model_dump(mode="json"))
        return
    print(f"Days in {log.timezone}, {log.start or 'the first'} to {log.end or 'the last'}: {len(log.rows):,} rows"
          + (f", written to {args.out}." if args.out else "."))
    for r in log.rows:
        gold = f"{r.gold_correct}/{r.gold_answers} gold right" if r.gold_answers else "no gold"
        print(f"{r.day}\t{r.annotator}\t{r.project}\t{r.items} items\t{r.active_hours} h active\t{r.wall_hours} h wall\t{gold}")


def _shares(text: str, kind: type[int] | type[float]) -> dict[str, Any]:
    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    if any(len(p) != 2 for p in pairs):
        raise ValueError(f"{text!r}: give NAME=VALUE pairs separated by commas, as train=0.8,test=0.2")
    return {name.strip(): kind(value) for name, value in pairs}


def splits(client: Client, args: argparse.Namespace) -> None:
    rows: Sequence[SplitVersionOut]
    if args.show:
        rows = client.splits(_ref(args.project))
    else:
        config: dict[str, Any] = {"seed": args.seed}
        if args.ratios:
            config["ratios"] = _shares(args.ratios, float)
        if args.counts:
            config["counts"] = _shares(args.counts, int)
        if args.rest:
            config["rest"] = args.rest
        rows = [client.save_splits(_ref(args.project), config)]
    for d in rows:
        print(f"version {d.version}: " + ", ".join(f"{name} {n:,}" for name, n in d.counts.items()))


def export(client: Client, args: argparse.Namespace) -> None:
    folder = client.export(_ref(args.project), args.fmt, args.out, splits=not args.no_splits, version=args.version, gold=args.gold)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    counts = ", ".join(f"{k} {v:,}" for k, v in manifest.get("splits", {}).items())
    print(f"Exported {counts} to {folder} ({len(manifest['files'])} files, manifest.json).")


def user_list(client: Client, args: argparse.Namespace) -> None:
    for u in client.users():
        state = "" if u.is_active else "\tinactive"
        print(f"{u.id}\t{u.username}\t{u.role}{state}")


def user_create(client: Client, args: argparse.Namespace) -> None:
    password = os.environ.get("VLCURATE_PASSWORD") or getpass.getpass(f"Password for {args.username}: ")
    made = client.create_user(args.username, password, role=args.role)
    print(f"Created {made.role} {made.username!r} (id {made.id}).")


def token_create(client: Client, args: argparse.Namespace) -> None:
    print(client.create_token(args.username, args.name).token)


def token_revoke(client: Client, args: argparse.Namespace) -> None:
    client.revoke_token(args.token_id)
    print(f"Revoked token {args.token_id}.")
