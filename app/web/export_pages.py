"""The export page (admins): split definitions with their counts, exports with progress and downloads."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import FileResponse, RedirectResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from app.db import transaction
from app.errors import DomainError, Invalid
from app.models import Export, Role
from app.services import export, projects, splits
from app.web.deps import Principal, csrf_protect, page_role
from app.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_protect)])
admin_only = page_role(Role.admin)


def _context(request: Request, project_id: int, **extra) -> dict:
    with transaction(request.app.state.sessions) as session:
        project = projects.get_project(session, project_id)
        versions = splits.definitions(session, project_id)
        newest_unassigned = splits.unassigned(session, versions[0]) if versions else None
        finished = export.count_items(session, project_id, None)
        runs = export.exports_of(session, project_id)
        formats = export.formats_of(session, project_id)
        by_id = {d.id: d.version for d in versions}
    rows = [
        {
            "id": r.id, "format": r.format, "status": r.status, "done": r.done, "total": r.total, "error": r.error,
            "version": by_id.get(r.definition_id), "target": r.target, "s3": r.target.startswith("s3://"),
            "files": sorted((r.manifest or {}).get("files", {})), "created_at": r.created_at,
        }
        for r in runs
    ]
    return {
        "project": project, "versions": versions, "unassigned": newest_unassigned, "finished": finished, "exports": rows,
        "formats": formats, "form": extra.pop("form", {}), "running": any(r["status"] in ("queued", "running") for r in rows), **extra,
    }


@router.get("/projects/{project_id}/export")
def export_page(request: Request, project_id: int, user: Principal = Depends(admin_only)):
    block = "exports" if request.headers.get("hx-target") == "exports" else None
    return render(request, "export/page.html", _context(request, project_id), block=block)


@router.post("/projects/{project_id}/splits")
def save_splits(
    request: Request,
    project_id: int,
    method: str = Form("ratios"),
    sizes: str = Form(""),
    rest: str = Form(""),
    seed: str = Form("0"),
    held_field: str = Form(""),
    held_values: str = Form(""),
    held_split: str = Form("test_ood"),
    stratify: str = Form(""),
    user: Principal = Depends(admin_only),
):
    """Save a new version of the split definition; its counts show at once."""
    form = {"method": method, "sizes": sizes, "rest": rest, "seed": seed, "held_field": held_field,
            "held_values": held_values, "held_split": held_split, "stratify": stratify}
    try:
        if not seed.strip().isdigit():
            raise Invalid("The seed is a whole number, 0 or more.")
        config: dict = {"seed": int(seed)}
        parsed = splits.parse_sizes(sizes, float if method == "ratios" else int)
        if parsed:
            config["ratios" if method == "ratios" else "counts"] = parsed
        if rest.strip():
            config["rest"] = rest.strip()
        if stratify.strip():
            config["stratify"] = stratify.strip()
        if held_field.strip():
            config["held_out"] = {"field": held_field.strip(), "values": [v.strip() for v in held_values.split(",") if v.strip()],
                                  "split": held_split.strip() or "test_ood"}
        with transaction(request.app.state.sessions) as session:
            saved = splits.save_definition(session, project_id, config, actor_id=user.id)
            notice = f"Saved split version {saved.version}: " + ", ".join(f"{k} {v:,}" for k, v in saved.counts.items()) + "."
    except DomainError as exc:
        ctx = _context(request, project_id, form=form, error=exc.message, errors=exc.errors)
        return render(request, "export/page.html", ctx, status_code=exc.status_code)
    return render(request, "export/page.html", _context(request, project_id, notice=notice))


@router.post("/projects/{project_id}/exports")
async def start_export(request: Request, project_id: int, user: Principal = Depends(admin_only)):
    """Queue an export job for the worker."""
    form = await request.form()
    fmt, version, target = str(form.get("format", "")), str(form.get("version", "newest")), str(form.get("target", "")).strip()

    def create() -> int:
        if target and not target.startswith("s3://"):
            raise Invalid("The target is empty (the server's data directory, downloadable here) or s3://bucket/prefix.")
        with transaction(request.app.state.sessions) as session:
            row = export.create_export(
                session, project_id, fmt, settings=request.app.state.settings,
                version=int(version) if version.isdigit() else None, use_splits=version != "none",
                target=target or None, actor_id=user.id,
            )
            return row.id

    try:
        export_id = await run_in_threadpool(create)
    except DomainError as exc:
        ctx = await run_in_threadpool(_context, request, project_id, error=exc.message, errors=exc.errors)
        return render(request, "export/page.html", ctx, status_code=exc.status_code)
    from app.worker import jobs

    await run_in_threadpool(jobs.defer_export, request.app.state.settings, export_id)
    return RedirectResponse(f"/projects/{project_id}/export", status_code=303)


@router.get("/exports/{export_id}.zip")
def download_zip(request: Request, export_id: int, user: Principal = Depends(admin_only)):
    """Every file of a finished export, manifest included, as one zip streamed as it is made."""
    with transaction(request.app.state.sessions) as session:
        root = export.find_file(session, export_id, "manifest.json").parent  # done, local, or 404
        paths = sorted(session.get(Export, export_id).manifest["files"]) + ["manifest.json"]
    name = f"export-{export_id}.zip"
    return StreamingResponse(export.zip_stream(root, paths), media_type="application/zip",
                             headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/exports/{export_id}/files/{path:path}")
def download(request: Request, export_id: int, path: str, user: Principal = Depends(admin_only)):
    """One file of a finished export (only files its manifest lists)."""
    with transaction(request.app.state.sessions) as session:
        target = export.find_file(session, export_id, path)
    media = "application/json" if path.endswith(".json") else None
    return FileResponse(target, media_type=media, filename=path.rsplit("/", 1)[-1])
