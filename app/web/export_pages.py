"""The export page (admins): split definitions with their counts, the leak report with its job's
progress, exports with progress and downloads."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Depends, Form, Request
from fastapi.responses import FileResponse, RedirectResponse, StreamingResponse
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.errors import DomainError, NotFound, ascii_digits
from app.models import Role
from app.services.exports import export, splits, targets
from app.services.leaks import leaks
from app.services.projects import jobs_view, projects
from app.web.assets import attachment, presigned, streamed
from app.web.deps import Db, Id, LiveProject, Posted, Principal, csrf_protect, page_role, savepoint
from app.web.flash import flash, take_flash
from app.web.templating import is_htmx, render, render_error

router = APIRouter(dependencies=[Depends(csrf_protect), LiveProject])
admin_only = page_role(Role.admin)


def _context(session: Session, project_id: int, **extra) -> dict:
    project = projects.get_project(session, project_id)
    versions = splits.definitions(session, project_id)
    by_id = {d.id: d.version for d in versions}
    rows = [
        {
            "id": r.id, "format": r.format, "status": r.status, "done": r.done, "total": r.total, "error": r.error,
            "version": by_id.get(r.definition_id), "target": r.target, "s3": r.target.startswith("s3://"),
            "files": sorted((r.manifest or {}).get("files", {})), "created_at": r.created_at,
        }
        for r in export.exports_of(session, project_id)
    ]
    return {
        "project": project, "versions": versions, "unassigned": splits.unassigned(session, versions[0]) if versions else None,
        "finished": export.count_items(session, project_id, None), "exports": rows, "formats": export.formats_of(session, project_id),
        "leak": leaks.page_view(session, project_id), "leak_job": jobs_view.leak_job(session, project_id),
        "form": extra.pop("form", {}), "export_form": extra.pop("export_form", {}), "running": any(r["status"] in ("queued", "running") for r in rows), **extra,
    }


@router.get("/projects/{project_id}/export")
def export_page(request: Request, project_id: Id, session: Db, user: Principal = Depends(admin_only)):
    notice = None if is_htmx(request) else take_flash(request)  # the progress poll must not eat the notice
    return render(request, "export/page.html", _context(session, project_id, notice=notice))


class SplitForm(BaseModel):
    """The split form, as typed (it is shown again with an error)."""

    method: str = "ratios"
    sizes: str = ""
    rest: str = ""
    seed: str = "0"
    held_field: str = ""
    held_values: str = ""
    held_split: str = "test_ood"
    stratify: str = ""


@router.post("/projects/{project_id}/splits")
def save_splits(request: Request, project_id: Id, session: Db, form: Annotated[SplitForm, Form()],
                user: Principal = Depends(admin_only)):
    """Save a new version of the split definition; its counts show at once."""
    try:
        config = splits.config_from_text(
            seed=form.seed, **{"ratios" if form.method == "ratios" else "counts": form.sizes}, rest=form.rest,
            stratify=form.stratify, held_out=f"{form.held_field}={form.held_values}", held_out_split=form.held_split,
        )
        with savepoint(session):
            saved = splits.save_definition(session, project_id, config, actor_id=user.id)
    except DomainError as exc:
        return render_error(request, "export/page.html", _context(session, project_id, form=form.model_dump()), exc)
    flash(request, f"Saved split version {saved.version}: " + ", ".join(f"{k} {v:,}" for k, v in saved.counts.items()) + ".")
    return RedirectResponse(f"/projects/{project_id}/export", status_code=303)


@router.post("/projects/{project_id}/exports")
def start_export(request: Request, project_id: Id, session: Db, posted: Posted, jobs_after: BackgroundTasks,
                 user: Principal = Depends(admin_only)):
    """Queue an export job for the worker."""
    from app.worker import jobs

    settings, version = request.app.state.settings, str(posted.get("version", "newest"))
    typed = {k: str(posted.get(k, "")) for k in ("format", "version", "target", "gold")}
    try:
        with savepoint(session):
            row = export.create_export(
                session, project_id, str(posted.get("format", "")), settings=settings,
                version=int(version) if ascii_digits(version) else None, use_splits=version != "none",
                target=targets.check_target(str(posted.get("target", ""))), actor_id=user.id,
                gold=str(posted.get("gold", "")) in ("1", "on", "true"),
            )
    except DomainError as exc:
        return render_error(request, "export/page.html", _context(session, project_id, export_form=typed), exc)
    # The job is queued on the job queue's own connection once the export row is committed (background
    # tasks run after the request's transaction); should that fail, the reconcile job queues it.
    jobs_after.add_task(jobs.defer_export, settings, row.id)
    flash(request, f"Export {row.id} ({row.format}) is queued; it runs on the worker.")
    return RedirectResponse(f"/projects/{project_id}/export", status_code=303)


@router.get("/exports/{export_id}.zip")
def download_zip(request: Request, export_id: Id, session: Db, user: Principal = Depends(admin_only)):
    """Every file of a finished export, manifest included, as one zip streamed as it is made
    (from this server's disk, or from the object storage: any replica serves it)."""
    files = export.located_files(session, export_id)  # done, downloadable, or 404
    return StreamingResponse(export.zip_stream(files, request.app.state.storage), media_type="application/zip",
                             headers={"Content-Disposition": attachment(f"export-{export_id}.zip")})


@router.get("/exports/{export_id}/files/{path:path}")
def download(request: Request, export_id: Id, path: str, session: Db, user: Principal = Depends(admin_only)):
    """One file of a finished export (only files its manifest lists)."""
    return file_response(request, export.locate(session, export_id, path))


def file_response(request: Request, found: export.ExportFile):
    """An export's file: from this server's disk; from the object storage, streamed, or by a redirect
    to a presigned URL when VLCURATE_S3_PRESIGN_SECONDS is set (the access check has run)."""
    filename = found.name.rsplit("/", 1)[-1]
    if found.path is not None:
        return FileResponse(found.path, media_type=found.media_type, filename=filename)
    storage = request.app.state.storage
    redirect = presigned(storage, found.key, found.media_type, image=False, disposition=attachment(filename))
    if redirect is not None:
        return redirect
    try:
        opened = found.open(storage)
    except KeyError:
        raise NotFound("This export's file is missing from the object storage.") from None
    return streamed(opened, found.media_type, {"Content-Disposition": attachment(filename)})
