"""`vlcurate-remote`: the `vlcurate` commands that act through a server's API, from the client
distribution alone (httpx and pydantic; no server install). The server and token come from --server
and --token, or VLCURATE_SERVER and VLCURATE_TOKEN. Each command is one client call (`_commands`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from vlcurate import _commands as run
from vlcurate.client import Client
from vlcurate.errors import VlcurateError


def _project_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    project = sub.add_parser("project", help="list, update or delete projects").add_subparsers(dest="action", required=True)
    listing = project.add_parser("list", help="id, name, stages and progress of every project")
    listing.add_argument("--json", action="store_true", dest="as_json", help="print them as GET /api/v1/projects gives them")
    listing.set_defaults(fn=run.project_list)
    update = project.add_parser("update", help="rename a project or change its description (admin)")
    update.add_argument("project")
    update.add_argument("--name")
    update.add_argument("--description")
    update.set_defaults(fn=run.project_update)
    delete = project.add_parser("delete", help="delete a project with everything in it (admin)")
    delete.add_argument("project")
    delete.add_argument("--confirm", required=True, help="the project's name, typed again")
    delete.set_defaults(fn=run.project_delete)

    records = sub.add_parser("import", help="push records (JSONL) with their images (admin)")
    records.add_argument("project")
    records.add_argument("file", help="JSONL, one record a line")
    records.add_argument("--images", help="directory or zip of the images the records name (default: the file's folder)")
    records.add_argument("--update", action="store_true", help="records whose id is there replace it (a new revision) instead of being skipped")
    records.set_defaults(fn=run.push_records)
    hide = sub.add_parser("delete-records", help="hide records by external id, their annotations kept (admin)")
    hide.add_argument("project")
    hide.add_argument("ids", nargs="+", help="external ids, or @FILE with one a line")
    hide.add_argument("--reason", default="")
    hide.set_defaults(fn=run.delete_records)
    suggest = sub.add_parser("suggest", help="push an outside model's suggestions from a JSONL file (admin)")
    suggest.add_argument("project")
    suggest.add_argument("--from", dest="file", required=True, help='JSONL: {"external_id", "kind", "payload", "score"?} a line')
    suggest.add_argument("--model", required=True)
    suggest.add_argument("--model-version", default="")
    suggest.add_argument("--stage", help="stage id or name (default: the only one)")
    suggest.set_defaults(fn=run.suggest)


def _quality_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Two reports per stage with bootstrap intervals: each takes the same options.
    for name, fn, text in (("agreement", run.agreement, "inter-annotator agreement per stage (reviewer)"),
                           ("bias", run.bias, "what drafts do to annotators per stage, model version and annotator (reviewer)")):
        report = sub.add_parser(name, help=text)
        report.add_argument("project")
        report.add_argument("--stage")
        report.add_argument("--samples", type=int, default=1000)
        report.add_argument("--seed", type=int, default=0)
        report.add_argument("--json", action="store_true", dest="as_json")
        report.set_defaults(fn=fn)
    gold = sub.add_parser("gold", help="gold items and accuracy").add_subparsers(dest="action", required=True)
    gold_import = gold.add_parser("import", help="mark items gold with their answers (admin)")
    gold_import.add_argument("project")
    gold_import.add_argument("file", help='JSONL: {"id": "<external id>", "answer": {...}} a line')
    gold_import.add_argument("--stage")
    gold_import.set_defaults(fn=run.gold_import)
    accuracy = gold.add_parser("accuracy", help="each annotator's accuracy on gold items (reviewer)")
    accuracy.add_argument("project")
    accuracy.add_argument("--stage")
    accuracy.add_argument("--json", action="store_true", dest="as_json")
    accuracy.set_defaults(fn=run.gold_accuracy)
    leaks = sub.add_parser("leaks", help="leaks and duplicates across the newest split version (admin); exit 2 while leaks remain")
    leaks.add_argument("project")
    leaks.add_argument("--keep-together", action="store_true", help="put each leaked group into one split (a new split version)")
    leaks.add_argument("--json", action="store_true", dest="as_json")
    leaks.set_defaults(fn=run.leaks)
    annotations = sub.add_parser("annotations", help="every submitted annotation as JSON lines (reviewer)")
    annotations.add_argument("project")
    annotations.add_argument("--stage")
    annotations.add_argument("--out", required=True, help="the JSONL file to write")
    annotations.set_defaults(fn=run.annotation_rows)
    worklog = sub.add_parser("worklog", help="a workspace's work log: annotator x day x project (its managers and admins)")
    worklog.add_argument("workspace", type=int)
    worklog.add_argument("--start", help="first day, YYYY-MM-DD (with neither date: the last 30 days)")
    worklog.add_argument("--end", help="last day, included")
    worklog.add_argument("--annotator")
    worklog.add_argument("--project", type=int)
    worklog.add_argument("--out", help="also write the rows to this .csv or .parquet file")
    worklog.add_argument("--json", action="store_true", dest="as_json")
    worklog.set_defaults(fn=run.work_log)


def _data_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    splits = sub.add_parser("splits", help="save a split version and show its counts, or --list them (admin)")
    splits.add_argument("project")
    splits.add_argument("--ratios", help="e.g. train=0.8,test=0.2")
    splits.add_argument("--counts", help="e.g. train=700,test=300")
    splits.add_argument("--rest", help="with --counts: the split of the items past the counts")
    splits.add_argument("--seed", type=int, default=0)
    splits.add_argument("--list", action="store_true", dest="show")
    splits.set_defaults(fn=run.splits)
    export = sub.add_parser("export", help="export, and download the files into --out (admin)")
    export.add_argument("project")
    export.add_argument("--format", required=True, dest="fmt")
    export.add_argument("--out", required=True)
    export.add_argument("--version", type=int)
    export.add_argument("--no-splits", action="store_true")
    export.add_argument("--gold", action="store_true", help="the gold items too, in gold.jsonl")
    export.set_defaults(fn=run.export)
    users = sub.add_parser("user", help="users (admin)").add_subparsers(dest="action", required=True)
    users.add_parser("list", help="every user and role").set_defaults(fn=run.user_list)
    create = users.add_parser("create", help="a new user; the password comes from VLCURATE_PASSWORD or a prompt")
    create.add_argument("username")
    create.add_argument("--role", default="annotator", choices=["annotator", "reviewer", "admin"])
    create.set_defaults(fn=run.user_create)
    token = sub.add_parser("token", help="API tokens (admin)").add_subparsers(dest="action", required=True)
    token_create = token.add_parser("create", help="a new token of a user, printed once")
    token_create.add_argument("username")
    token_create.add_argument("--name", default="")
    token_create.set_defaults(fn=run.token_create)
    revoke = token.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("token_id", type=int)
    revoke.set_defaults(fn=run.token_revoke)


def parser() -> argparse.ArgumentParser:
    """The command line's parser: global --server and --token, a subcommand each."""
    top = argparse.ArgumentParser(prog="vlcurate-remote", description=__doc__.split("\n\n")[0] if __doc__ else None)
    top.add_argument("--server", default=os.environ.get("VLCURATE_SERVER"), help="the server's URL (VLCURATE_SERVER)")
    top.add_argument("--token", default=os.environ.get("VLCURATE_TOKEN"), help="an API token (VLCURATE_TOKEN)")
    sub = top.add_subparsers(dest="command", required=True)
    _project_commands(sub)
    _quality_commands(sub)
    _data_commands(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; 0 when done, 1 on an error (its message on stderr), 2 where leaks remain."""
    args = parser().parse_args(argv)
    try:
        with Client(args.server, args.token) as client:
            return int(args.fn(client, args) or 0)
    except VlcurateError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        for error in exc.errors:
            print(f"  - {error}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
