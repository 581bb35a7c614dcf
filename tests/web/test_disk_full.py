"""A full disk, for real (a tmpfs of 64 KiB as the storage or the export target): an import answers
507 with what to do, on the API and the page, and leaves no row and no file; an export run is marked
failed with the same advice and leaves no partial file. PostgreSQL's disk_full (SQLSTATE 53100,
raised by the server itself from a trigger) answers 507 too."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest
import sqlalchemy as sa
from PIL import Image

from app.db import transaction
from app.errors import FULL_DISK_MESSAGES
from app.models import Export, Item
from app.services.exports import export
from app.storage import LocalStorage
from tests import factories
from tests.conftest import csrf_from, login, png_bytes, zip_bytes


@pytest.fixture
def small_disk(tmp_path):
    """A filesystem of its own, 64 KiB: a write beyond it fails with ENOSPC, as on a full disk. It
    takes a tmpfs mount (root); without one the test is skipped, since no other path fails that way
    for a whole directory (/dev/full does for one file only)."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"a real full disk needs a tmpfs mount: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where) -> None:
    """Fill the filesystem at `where` to its last byte."""
    with open(where / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    assert os.statvfs(where).f_bavail == 0


def files_under(where) -> list[str]:
    return sorted(str(p.relative_to(where)) for p in where.rglob("*") if p.is_file() and p.name != "filler")


def items_of(app, project_id: int) -> int:
    with transaction(app.state.sessions) as s:
        return s.scalar(sa.select(sa.func.count()).select_from(Item).where(Item.project_id == project_id))


def noise_png() -> bytes:
    """An image too big for the small disk (noise does not compress): about 120 KB."""
    import io

    out = io.BytesIO()
    Image.frombytes("RGB", (200, 200), os.urandom(200 * 200 * 3)).save(out, "PNG")
    return out.getvalue()


def upload(name: str, image: bytes) -> dict:
    return {"file": ("a.jsonl", b'{"id": "1", "image": "a.png", "question": "A bird?"}\n'), "images": ("i.zip", zip_bytes({"a.png": image}))}


def test_an_import_onto_a_full_disk_answers_507_and_leaves_nothing(client, app, small_disk):
    with transaction(app.state.sessions) as s:
        admin = factories.bearer(s, "boss", "admin")
        project_id, _ = factories.project(s, name="full")
    kept = app.state.storage
    app.state.storage = LocalStorage(small_disk)
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=admin, files=upload("a", noise_png()))
    assert r.status_code == 507 and r.json() == {"detail": FULL_DISK_MESSAGES["server"]}
    assert items_of(app, project_id) == 0 and files_under(small_disk) == []
    # The page says the same, escaped, in its error page.
    login(client, "boss")
    token = csrf_from(client.get(f"/projects/{project_id}").text)
    page = client.post(f"/projects/{project_id}/import", data={"csrf_token": token}, files=upload("a", noise_png()))
    assert page.status_code == 507 and "disk is full: free space on the disk that holds its data directory" in page.text
    assert items_of(app, project_id) == 0 and files_under(small_disk) == []
    # With room again, the same import goes in whole.
    app.state.storage = kept
    again = client.post(f"/api/v1/projects/{project_id}/items", headers=admin, files=upload("a", png_bytes()))
    assert again.status_code in (200, 201), again.text
    assert items_of(app, project_id) == 1


def test_a_full_database_disk_answers_507_and_stores_nothing(client, app):
    with transaction(app.state.sessions) as s:
        admin = factories.bearer(s, "boss", "admin")
        project_id, _ = factories.project(s, name="full db")
        # PostgreSQL itself raises disk_full on the items' insert, as it does when its disk runs out.
        s.execute(sa.text("CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS "
                          "$$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$"))
        s.execute(sa.text("CREATE TRIGGER disk_full BEFORE INSERT ON items FOR EACH STATEMENT EXECUTE FUNCTION disk_full()"))
    r = client.post(f"/api/v1/projects/{project_id}/items", headers=admin, files=upload("a", png_bytes()))
    assert r.status_code == 507 and r.json() == {"detail": FULL_DISK_MESSAGES["database"]}
    assert items_of(app, project_id) == 0


@pytest.mark.committed
def test_an_export_onto_a_full_disk_fails_with_what_to_do_and_no_partial_files(app, settings, tmp_path, small_disk):
    with transaction(app.state.sessions) as s:
        project_id, _ = factories.project(s, name="export")
        factories.choice_items(s, settings, app.state.storage, project_id, 3, tmp_path)
    fill(small_disk)
    target = small_disk / "out"
    with transaction(app.state.sessions) as s:
        export_id = export.create_export(s, project_id, "jsonl", settings=settings, use_splits=False, target=str(target)).id
    with pytest.raises(OSError) as raised:
        export.run_export(app.state.sessions, app.state.storage, settings, export_id)
    assert raised.value.errno == errno.ENOSPC
    with transaction(app.state.sessions) as s:
        row = s.get(Export, export_id)
        assert row.status == "failed"
        assert row.error.startswith(f"The disk is full: free space on the disk that holds {target}") and "partial files were removed" in row.error
    assert not target.exists() and files_under(small_disk) == []
