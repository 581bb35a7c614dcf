"""Many machines: with the S3 backend nothing one process writes is read from another's disk.

First in one process: images are streamed from the bucket (or redirected to presigned https URLs)
with their ETags, and an export written by a worker with another data directory downloads, file by
file and as a zip, byte-identical to one written to local disk. Then the test that stands for many
machines: two `vlcurate serve` and two `vlcurate worker` processes, each with its own data
directory, one PostgreSQL, a moto S3 server; one app process and one worker are killed with
SIGKILL mid-flow.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
import zipfile
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from app.db import transaction
from app.models import Asset, Export
from app.services.exports import export
from tests import factories
from tests.conftest import colorswap_records, csrf_from, free_port, login, zip_bytes

VLCURATE = str(Path(sys.executable).parent / "vlcurate")


def s3_settings(settings, endpoint: str, **more):
    """The S3 backend on the moto server, under a prefix of its own."""
    return settings.model_copy(update={
        "storage_backend": "s3", "s3_bucket": "vlc-exports", "s3_prefix": f"t-{uuid.uuid4().hex[:8]}",
        "s3_endpoint_url": endpoint, "s3_region": "us-east-1", **more,
    })


@pytest.fixture
def settings(settings, s3_client):
    """Every app in this module stores in S3 (the `app` and `client` fixtures take these settings)."""
    return s3_settings(settings, s3_client.endpoint)


def bucket_keys(s3_client, settings) -> list[str]:
    pages = s3_client.get_paginator("list_objects_v2").paginate(Bucket=settings.s3_bucket, Prefix=settings.s3_prefix + "/")
    return sorted(o["Key"].removeprefix(settings.s3_prefix + "/") for page in pages for o in page.get("Contents", []))


def local_files(*folders: Path) -> list[Path]:
    """Files the processes wrote in their data directories (the embedded database aside)."""
    return sorted(p for folder in folders if folder.exists() for p in folder.rglob("*")
                  if p.is_file() and "postgres" not in p.relative_to(folder).parts[:1] and p.name != "secret_key")


def import_colorswap(client, headers, n: int = 2, overlap: int = 1) -> tuple[int, int, int]:
    records, files = colorswap_records(n)
    stages = [{"workflow": "colorswap.filter", "overlap": overlap}, {"workflow": "colorswap.recaption"}]
    project = client.post("/api/v1/projects", headers=headers, json={"name": f"cs-{uuid.uuid4().hex[:6]}", "stages": stages})
    assert project.status_code == 201, project.text
    body = "\n".join(json.dumps(r) for r in records).encode()
    r = client.post(f"/api/v1/projects/{project.json()['id']}/items", headers=headers,
                    files={"file": ("pairs.jsonl", body), "images": ("images.zip", zip_bytes(files))})
    assert r.status_code == 201, r.text
    return project.json()["id"], project.json()["stages"][0]["id"], project.json()["stages"][1]["id"]


def test_images_stream_from_the_bucket_with_etags_and_redirect_only_to_https(app, client, settings, s3_client):
    with transaction(app.state.sessions) as s:
        admin = factories.bearer(s, "boss", "admin")
    import_colorswap(client, admin, n=1)
    keys = bucket_keys(s3_client, settings)
    assert len(keys) == 4 and all(k.startswith("images/") for k in keys)
    assert local_files(settings.data_dir) == []  # nothing on this process's disk
    with transaction(app.state.sessions) as s:
        sha, mime, key = s.execute(sa.select(Asset.sha256, Asset.mime, Asset.storage_key).order_by(Asset.sha256)).first()
    assert client.get(f"/assets/{sha}", follow_redirects=False).status_code == 303  # the access check comes first
    with transaction(app.state.sessions) as s:
        factories.user(s, "viewer")
    login(client, "viewer")
    image = client.get(f"/assets/{sha}")
    assert image.status_code == 200 and image.content == s3_client.get_object(Bucket="vlc-exports", Key=f"{settings.s3_prefix}/{key}")["Body"].read()
    assert image.headers["etag"] == f'"{sha}"' and "immutable" in image.headers["cache-control"]
    assert image.headers["content-type"] == mime and image.headers["content-length"] == str(len(image.content))
    assert client.get(f"/assets/{sha}", headers={"If-None-Match": f'"{sha}"'}).status_code == 304
    thumb = client.get(f"/assets/{sha}/thumb")
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/webp" and thumb.headers["etag"].startswith(f'"{sha}-')
    assert any(k.startswith("thumbs/") for k in bucket_keys(s3_client, settings))  # made once, kept in the bucket
    assert local_files(settings.data_dir) == []

    # Presigning on: an http endpoint's URL would be refused for <img> by the Content-Security-Policy,
    # so images still stream; an https one gets a redirect (no ETag of ours: it would outlive the URL).
    app.state.storage = _storage(settings, s3_presign_seconds=600)
    assert client.get(f"/assets/{sha}").status_code == 200
    app.state.storage = _storage(settings, s3_presign_seconds=600, s3_public_endpoint_url="https://files.example.org")
    for path in (f"/assets/{sha}", f"/assets/{sha}/thumb"):
        moved = client.get(path, follow_redirects=False)
        assert moved.status_code == 307 and moved.headers["location"].startswith(f"https://files.example.org/vlc-exports/{settings.s3_prefix}/")
        assert "etag" not in moved.headers and moved.headers["cache-control"] == "private, max-age=300"
        assert "X-Amz-Signature=" in moved.headers["location"] and "response-cache-control=" in moved.headers["location"]
    assert client.get(f"/assets/{sha}", headers={"If-None-Match": f'"{sha}"'}).status_code == 304
    client.cookies.clear()
    assert client.get(f"/assets/{sha}", follow_redirects=False).status_code == 303


def _storage(settings, **changes):
    from app.storage import make_storage

    return make_storage(settings.model_copy(update=changes))


def colorswap_done(client, admin, ann, n: int = 3) -> int:
    """A ColorSwap project whose pairs are all chosen and re-captioned; returns its id."""
    project_id, filter_id, recaption_id = import_colorswap(client, admin, n=n)
    for stage_id, payload in ((filter_id, {"choice_1": 1, "choice_2": 3}),
                              (recaption_id, {"caption_1": "A red kitten in a grey coat.", "caption_2": "A grey kitten in a red coat."})):
        while (c := client.post(f"/api/v1/stages/{stage_id}/claim", headers=ann)).status_code == 200:
            r = client.post(f"/api/v1/assignments/{c.json()['assignment_id']}/submit", headers=ann,
                            json={"payload": payload, "idempotency_key": uuid.uuid4().hex})
            assert r.status_code == 200, r.text
    return project_id


def single_machine_export(sessions, settings, storage, project_id: int, folder: Path) -> dict[str, bytes]:
    """The same export written by one process to its local disk: {path: bytes}, manifest included."""
    with transaction(sessions) as s:
        export_id = export.create_export(s, project_id, "published", settings=settings, target=str(folder)).id
    export.run_export(sessions, storage, settings, export_id)
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def zip_of(files: dict[str, bytes], folder: Path) -> bytes:
    """The zip the download route makes of these files (manifest last), built from local disk."""
    names = sorted(n for n in files if n != "manifest.json") + ["manifest.json"]
    located = [export.ExportFile(n, path=folder / n) for n in names]
    return b"".join(export.zip_stream(located, None))


@pytest.mark.committed
def test_an_export_written_by_a_worker_downloads_from_a_replica_that_never_saw_it(app, client, settings, s3_client, tmp_path):
    from app.worker import jobs, runtime

    with transaction(app.state.sessions) as s:
        admin, ann = factories.bearer(s, "boss", "admin"), factories.bearer(s, "ann")
    project_id = colorswap_done(client, admin, ann)
    queued = client.post(f"/api/v1/projects/{project_id}/exports", headers=admin, json={"format": "published", "splits": False})
    assert queued.status_code == 202, queued.text
    export_id = queued.json()["id"]
    with transaction(app.state.sessions) as s:
        assert s.get(Export, export_id).target == f"storage:exports/{export_id}"
    # The worker: another machine, another data directory; what the `export` job runs.
    worker = settings.model_copy(update={"data_dir": tmp_path / "worker"})
    runtime.configure(worker)
    manifest = export.run_export(runtime.env().sessions, runtime.env().storage, worker, export_id)
    assert local_files(settings.data_dir, worker.data_dir) == []
    stored = [k for k in bucket_keys(s3_client, settings) if k.startswith("exports/")]
    assert stored == sorted(f"exports/{export_id}/{n}" for n in [*manifest["files"], "manifest.json"])

    # The single-machine export of the same data, to compare byte for byte.
    local = single_machine_export(app.state.sessions, settings, app.state.storage, project_id, tmp_path / "local")
    assert set(local) == {*manifest["files"], "manifest.json"}
    for name, data in local.items():
        got = client.get(f"/api/v1/exports/{export_id}/files/{name}", headers=admin)
        assert got.status_code == 200 and got.content == data, name
        assert got.headers["content-length"] == str(len(data)) and "attachment" in got.headers["content-disposition"]
    assert client.get(f"/api/v1/exports/{export_id}/files/secret.txt", headers=admin).status_code == 404
    assert client.get(f"/api/v1/exports/{export_id}/files/manifest.json", headers=ann).status_code == 403
    with transaction(app.state.sessions) as s:
        factories.user(s, "root", "admin")
    login(client, "root")
    page = client.get(f"/projects/{project_id}/export").text
    assert f'href="/exports/{export_id}.zip"' in page  # downloadable, not "written to s3://..."
    whole = client.get(f"/exports/{export_id}.zip")
    assert whole.status_code == 200 and whole.content == zip_of(local, tmp_path / "local")
    with zipfile.ZipFile(io.BytesIO(whole.content)) as archive:
        assert {n: archive.read(n) for n in archive.namelist()} == local
    one = client.get(f"/exports/{export_id}/files/manifest.json")
    assert one.status_code == 200 and one.content == local["manifest.json"] and one.headers["content-type"] == "application/json"

    # Presigned downloads: files redirect (http is fine for a download), the zip is still streamed.
    app.state.storage = _storage(settings, s3_presign_seconds=60)
    moved = client.get(f"/exports/{export_id}/files/manifest.json", follow_redirects=False)
    assert moved.status_code == 307 and "X-Amz-Signature=" in moved.headers["location"]
    fetched = httpx.get(moved.headers["location"])
    assert fetched.content == local["manifest.json"] and "attachment" in fetched.headers["content-disposition"]
    api_moved = client.get(f"/api/v1/exports/{export_id}/files/manifest.json", headers=admin, follow_redirects=False)
    assert api_moved.status_code == 307
    assert client.get(f"/exports/{export_id}.zip").content == whole.content
    assert local_files(settings.data_dir, worker.data_dir) == []


def test_the_local_backend_keeps_exports_on_this_servers_disk(settings, tmp_path):
    local = settings.model_copy(update={"storage_backend": "local"})
    assert export.default_target(local, 7) == str(local.data_dir / "exports" / "7")
    assert export.default_target(settings, 7) == "storage:exports/7"


# -- many machines: processes ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    from tests.worker.tiny_clip import save_tiny_clip

    return save_tiny_clip(tmp_path_factory.mktemp("models") / "tiny-clip")


class Fleet:
    """The test's machines: one process each, with a data directory of its own; all stopped at the end."""

    def __init__(self, root: Path, env: dict[str, str]):
        self.root, self.env = root, env
        (root / "logs").mkdir(parents=True)
        self.procs: dict[str, tuple[subprocess.Popen, Path]] = {}
        self.ports: dict[str, int] = {}

    def start(self, name: str, *args: str) -> subprocess.Popen:
        data = self.root / name
        log = self.root / "logs" / f"{name}.log"
        with log.open("w") as out:  # to a file: a pipe nobody reads fills up and hangs the process
            proc = subprocess.Popen([VLCURATE, *args], env={**self.env, "VLCURATE_DATA_DIR": str(data)},
                                    stdout=out, stderr=subprocess.STDOUT, text=True)
        self.procs[name] = (proc, log)
        return proc

    def serve(self, name: str) -> str:
        """Start an app process; its base URL (it answers once `healthy`)."""
        self.ports[name] = port = free_port()
        self.start(name, "serve", "--port", str(port), "--workers", "1")  # one process per replica: the replicas are the many
        return f"http://127.0.0.1:{port}"

    def healthy(self, name: str) -> str:
        base, proc = f"http://127.0.0.1:{self.ports[name]}", self.procs[name][0]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert proc.poll() is None, self.log(name)[-4000:]
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    return base
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError(f"{name} did not start: {self.log(name)[-4000:]}")

    def kill(self, name: str) -> None:
        proc = self.procs[name][0]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def log(self, name: str) -> str:
        return self.procs[name][1].read_text()

    def state(self, sessions) -> str:
        """The queue's jobs and the tail of every process's log, for a failure's message."""
        with transaction(sessions) as s:
            rows = s.execute(sa.text("SELECT id, task_name, status, lock, worker_id, attempts FROM procrastinate_jobs ORDER BY id")).all()
        logs = "\n".join(f"--- {name}\n{self.log(name)[-3000:]}" for name in self.procs)
        return "jobs: " + "\n".join(map(str, rows)) + "\n" + logs

    def data_dirs(self) -> list[Path]:
        return [self.root / name for name in self.procs]

    def stop(self) -> None:
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in self.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


class RoundRobin:
    """The load balancer: each request goes to the next replica; one that refuses the connection is
    skipped, as a health check would drop it, and the request goes to the next. Cookies are shared:
    a session signed by one replica is good on every other."""

    def __init__(self, bases: list[str]):
        self.bases = list(bases)
        self.turn = 0
        self.http = httpx.Client(timeout=60)
        self.served: list[str] = []

    def request(self, method: str, path: str, **kw) -> httpx.Response:
        for _ in range(2 * len(self.bases)):
            base = self.bases[self.turn % len(self.bases)]
            self.turn += 1
            try:
                answer = self.http.request(method, base + path, **kw)
            except httpx.TransportError:
                continue
            self.served.append(base)
            return answer
        raise AssertionError(f"no replica answered {method} {path}")

    def get(self, path: str, **kw) -> httpx.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw) -> httpx.Response:
        return self.request("POST", path, **kw)


def wait_until(predicate, what: str, timeout: float = 90, detail=None):
    """Poll until `predicate` is truthy; on timeout, fail with what `detail()` says about the state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}" + (f"\n{detail()}" if detail else ""))


def scalar(sessions, sql: str, **params):
    with transaction(sessions) as s:
        return s.scalar(sa.text(sql), params)


@pytest.mark.committed
def test_two_replicas_and_two_workers_with_no_shared_disk_survive_kills(committed, settings, s3_client, tmp_path, tiny_clip):
    from app.worker import jobs, runtime

    with transaction(committed) as s:
        admin = factories.bearer(s, "boss", "admin")
        anns = [factories.bearer(s, "ann1"), factories.bearer(s, "ann2")]
        reviewer = factories.bearer(s, "rev", "reviewer")
    env = {
        **os.environ, "DATABASE_URL": settings.database_url, "VLCURATE_SECRET_KEY": settings.secret_key.get_secret_value(),
        "VLCURATE_STORAGE_BACKEND": "s3", "VLCURATE_S3_BUCKET": settings.s3_bucket, "VLCURATE_S3_PREFIX": settings.s3_prefix,
        "VLCURATE_S3_ENDPOINT_URL": settings.s3_endpoint_url, "VLCURATE_S3_REGION": "us-east-1",
        "VLCURATE_CLIP_MODEL_DIR": str(tiny_clip), "VLCURATE_WORKER_BATCH_SIZE": "1",
        # Workers beat every 10 s: a worker silent for 15 s is dead.
        "VLCURATE_WORKER_STALLED_SECONDS": "15", "VLCURATE_DB_POOL_SIZE": "2", "VLCURATE_DB_MAX_OVERFLOW": "3",
    }
    fleet = Fleet(tmp_path / "machines", env)
    try:
        lb = RoundRobin([fleet.serve("app-a"), fleet.serve("app-b")])
        fleet.start("worker-1", "worker")
        w1 = wait_until(lambda: scalar(committed, "SELECT min(id) FROM procrastinate_workers"), "worker-1 to register")
        fleet.start("worker-2", "worker")
        for name in ("app-a", "app-b"):
            fleet.healthy(name)

        # Import with images through the balancer: the images land in the bucket, on no machine's disk.
        n = 6
        project_id, filter_id, recaption_id = import_colorswap(lb, admin, n=n, overlap=2)
        assert sum(k.startswith("images/") for k in bucket_keys(s3_client, settings)) == 4 * n

        # Suggestions on the workers, one item per job; worker-1 is killed while it runs one.
        cfg = settings.model_copy(update={"clip_model_dir": tiny_clip, "worker_batch_size": 1})
        with transaction(committed) as s:
            batches = jobs.missing_batches(s, cfg, project_id=project_id)
        queue = jobs.make_app(cfg)
        with queue.open():
            suggest_jobs = jobs.defer_batches(queue, batches)
        assert len(suggest_jobs) == n
        wait_until(lambda: scalar(committed, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing' AND worker_id = :w", w=w1),
                   "worker-1 to run a job")
        fleet.kill("worker-1")

        # Two annotators through both replicas (an item leaves the stage at its second annotation, so
        # ann2 starts once the suggestions are in). app-a is killed after ann1's third submit, whose
        # answer the client then "lost": sent again with the same key, another replica gives the same annotation.
        acknowledged: dict[str, int] = {}

        def annotate(who: int, stage_id: int, payload: dict, *, kill_after: int | None = None) -> None:
            for done_ in range(n + 1):
                claim = lb.post(f"/api/v1/stages/{stage_id}/claim", headers=anns[who])
                if claim.status_code == 204:
                    return
                assert claim.status_code == 200, claim.text
                body = {"payload": payload, "idempotency_key": f"k-{who}-{stage_id}-{claim.json()['item_id']}"}
                path = f"/api/v1/assignments/{claim.json()['assignment_id']}/submit"
                answer = lb.post(path, headers=anns[who], json=body)
                assert answer.status_code == 200, answer.text
                acknowledged[body["idempotency_key"]] = answer.json()["annotation_id"]
                if done_ + 1 == kill_after:
                    fleet.kill("app-a")
                    fleet.serve("app-a2")  # its replacement: a new machine, an empty data directory
                    again = lb.post(path, headers=anns[who], json=body)
                    assert again.json()["annotation_id"] == answer.json()["annotation_id"] and again.json()["replayed"] is True

        annotate(0, filter_id, {"choice_1": 1, "choice_2": 3}, kill_after=3)
        lb.bases[0] = fleet.healthy("app-a2")

        # worker-1's machine comes back once its heartbeat is stale; its job runs again, somewhere.
        wait_until(lambda: scalar(committed, "SELECT last_heartbeat < now() - interval '16 seconds' FROM procrastinate_workers WHERE id = :w", w=w1),
                   "worker-1's heartbeat to go stale", timeout=60)
        fleet.start("worker-1b", "worker")
        wait_until(lambda: scalar(committed, "SELECT count(*) FROM procrastinate_jobs WHERE id = ANY(:ids) AND status = 'succeeded'", ids=suggest_jobs) == n,
                   "every suggestion job to succeed", timeout=240,  # a busy machine loads torch slowly
                   detail=lambda: fleet.state(committed))
        annotate(1, filter_id, {"choice_1": 1, "choice_2": 3})
        annotate(0, recaption_id, {"caption_1": "A red kitten in a grey coat.", "caption_2": "A grey kitten in a red coat."})
        assert len(set(lb.served)) == 3  # app-a, app-b and app-a2 all answered

        # The agreement report, queued by a reviewer's page on one replica (with a session signed by another).
        page = lb.get("/login")
        lb.post("/login", data={"username": "rev", "password": factories.PASSWORD, "csrf_token": csrf_from(page.text), "next": "/"})
        dashboard = lb.get(f"/stages/{filter_id}/agreement")
        assert dashboard.status_code == 200, dashboard.text[-2000:]
        assert lb.post(f"/stages/{filter_id}/agreement", data={"csrf_token": csrf_from(dashboard.text)}).status_code == 303  # redirected to the page, which a reload does not post again
        report = wait_until(lambda: (r := lb.get(f"/api/v1/stages/{filter_id}/agreement?stored=true", headers=reviewer)).status_code == 200 and r.json(),
                            "the agreement report")
        assert report["items"] == n

        # The export: queued through one replica, written by a worker, downloaded through every replica.
        queued = lb.post(f"/api/v1/projects/{project_id}/exports", headers=admin, json={"format": "published", "splits": False})
        assert queued.status_code == 202, queued.text
        export_id = queued.json()["id"]
        done = wait_until(lambda: (r := lb.get(f"/api/v1/exports/{export_id}", headers=admin).json())["status"] in ("done", "failed") and r,
                          "the export")
        assert done["status"] == "done", done
        local = single_machine_export(committed, settings, _storage(settings), project_id, tmp_path / "single")
        assert set(local) == {*done["manifest"]["files"], "manifest.json"} and len(local) > 2
        whole = {}
        for base in lb.bases:  # app-a2 never saw anything but the database and the bucket
            with httpx.Client(base_url=base, timeout=60) as direct:
                login(direct, "boss")
                whole[base] = direct.get(f"/exports/{export_id}.zip").content
                for name, data in local.items():
                    assert direct.get(f"/api/v1/exports/{export_id}/files/{name}", headers=admin).content == data, name
        assert whole[lb.bases[0]] == whole[lb.bases[1]] == zip_of(local, tmp_path / "single")

        # Nothing lost, nothing twice, nothing on any machine's disk.
        with transaction(committed) as s:
            stored = dict(s.execute(sa.text("SELECT idempotency_key, id FROM annotations")).all())
            per_assignment = s.execute(sa.text("SELECT max(c) FROM (SELECT count(*) c FROM annotations GROUP BY assignment_id) t")).scalar()
            suggestions = s.execute(sa.text("SELECT count(*), count(DISTINCT item_id) FROM suggestions WHERE stage_id = :s"), {"s": filter_id}).one()
        assert stored == acknowledged and per_assignment == 1
        assert tuple(suggestions) == (n, n)
        assert local_files(*fleet.data_dirs()) == []
        budget = "Database connections: at most 9 per process (pool 2 + overflow 3 + job queue 4); keep the sum"
        assert budget in fleet.log("app-b") and budget in fleet.log("worker-2")
    finally:
        fleet.stop()


def test_the_pool_settings_bound_each_process_and_the_budget_says_so(settings):
    from app.db import connection_budget, get_engine

    engine = get_engine(settings.model_copy(update={"db_pool_size": 3, "db_max_overflow": 2}))
    assert (engine.pool.size(), engine.pool._max_overflow) == (3, 2)
    assert get_engine(settings).pool.size() == 10  # the defaults: 10 + 10
    line = connection_budget(settings.model_copy(update={"db_pool_size": 3, "db_max_overflow": 2}), 4)
    assert line.startswith("Database connections: at most 9 per process (pool 3 + overflow 2 + job queue 4) x 4 processes = 36;")
    with pytest.raises(ValueError):
        type(settings)(db_pool_size=0)
