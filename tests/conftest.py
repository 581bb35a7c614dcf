"""Test fixtures on a real PostgreSQL: the server at DATABASE_URL if set, else an embedded one.

Each test session creates its own database, migrated once. `session` tests run inside a
transaction that is rolled back, and so does the `app` (its requests' sessions join one connection
whose transaction ends rolled back). Tests that need real commits (a server process, a worker, several
connections, concurrency) use `committed`, which empties every table afterwards; marking a test
`committed` gives it an `app` on real commits too.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from app.db import (
    ensure_database,
    normalize_url,
    session_factory,
    start_embedded,
    transaction,
)
from app.migrate import upgrade
from app.models import Base
from app.settings import Settings

PASSWORD = "correct horse battery"


@pytest.fixture(scope="session")
def server_url() -> Iterator[URL]:
    """A URL on the PostgreSQL server the tests use (its maintenance database)."""
    if os.environ.get("DATABASE_URL"):
        yield normalize_url(os.environ["DATABASE_URL"])
        return
    # Not under pytest's basetemp: pytest prunes old basetemps, which would pull the data
    # directory from under a server that another test session is still using.
    folder = Path(tempfile.mkdtemp(prefix="vlcurate-pg-"))
    # Registered before the server starts, so it runs after the server's own stop at exit.
    atexit.register(shutil.rmtree, folder, True)
    yield start_embedded(folder / "pg").set(database="postgres")


def create_scratch_database(server_url: URL, prefix: str = "vlcurate_test") -> URL:
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    ensure_database(server_url, name)
    return server_url.set(database=name)


def drop_database(server_url: URL, url: URL) -> None:
    from app.db import _engine_for

    _engine_for.cache_clear()
    engine = sa.create_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
    engine.dispose()


@pytest.fixture(scope="session")
def db_url(server_url) -> Iterator[URL]:
    url = create_scratch_database(server_url)
    upgrade(url)
    yield url
    drop_database(server_url, url)


@pytest.fixture(scope="session")
def engine(db_url) -> Iterator[sa.Engine]:
    engine = sa.create_engine(db_url, pool_size=40, max_overflow=10)
    yield engine
    engine.dispose()


@pytest.fixture
def session(engine) -> Iterator[Session]:
    """A session whose work is rolled back at the end of the test."""
    with engine.connect() as conn:
        tx = conn.begin()
        s = Session(bind=conn, join_transaction_mode="create_savepoint", expire_on_commit=False)
        try:
            yield s
        finally:
            s.close()
            tx.rollback()


# The job queue's tables come from procrastinate's SQL, not from our models.
QUEUE_TABLES = ("procrastinate_jobs", "procrastinate_events", "procrastinate_periodic_defers", "procrastinate_workers")


def truncate_all(engine: sa.Engine) -> None:
    """Empty every table, ids starting again, but for the default workspace; and forget what this process keeps of the data it held
    (each stage's claim floor), as ids now name new rows."""
    from app import queue

    tables = ", ".join([f'"{t.name}"' for t in Base.metadata.sorted_tables] + list(QUEUE_TABLES))
    with engine.begin() as conn:
        conn.execute(sa.text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        conn.execute(sa.text("INSERT INTO workspaces (name, is_default) VALUES ('Default', true)"))  # as the migration
    queue.forget_floors()


@pytest.fixture
def rolled_back(engine) -> Iterator[sa.orm.sessionmaker]:
    """A session factory on one connection whose outer transaction is rolled back at the end of the
    test: its sessions (the test's and each request's) commit only savepoints, and see each other's work."""
    with engine.connect() as conn:
        tx = conn.begin()
        try:
            yield sa.orm.sessionmaker(bind=conn, join_transaction_mode="create_savepoint", expire_on_commit=False)
        finally:
            tx.rollback()


def pytest_configure(config):
    config.addinivalue_line("markers", "committed: the test's `app` commits for real (a worker or another connection reads its data)")


@pytest.fixture
def committed(engine) -> Iterator[sa.orm.sessionmaker]:
    """A session factory whose transactions really commit; every table is emptied afterwards."""
    truncate_all(engine)
    yield session_factory(engine)
    truncate_all(engine)


@pytest.fixture
def settings(db_url, tmp_path) -> Settings:
    return Settings(
        database_url=db_url.render_as_string(hide_password=False),
        data_dir=tmp_path / "data",
        secret_key="test-" + secrets.token_hex(8),
        login_max_failures=3,
    )


@pytest.fixture
def storage(settings):
    from app.storage import make_storage

    return make_storage(settings)


def _needs_commits(request) -> bool:
    return request.node.get_closest_marker("committed") is not None or "committed" in request.fixturenames


@pytest.fixture
def app(request, settings):
    """The app, rolled back at the end of the test (see `rolled_back`) unless the test needs `committed` data."""
    from app.main import create_app
    from app.web.deps import db

    if _needs_commits(request):
        request.getfixturevalue("committed")
        return create_app(settings)
    sessions = request.getfixturevalue("rolled_back")
    app = create_app(settings)
    # Fixtures and helpers that take `app.state.sessions` write on the same connection as the requests.
    app.state.sessions = sessions

    def one_connection():
        with transaction(sessions) as s:
            yield s

    app.dependency_overrides[db] = one_connection
    return app


@pytest.fixture
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


# -- helpers ---------------------------------------------------------------------------


def make_user(sessions, username: str, role: str = "annotator", password: str = PASSWORD) -> int:
    from app.services.users.users import create_user

    with transaction(sessions) as s:
        return create_user(s, username, role, password).id


def make_token(sessions, user_id: int) -> str:
    from app.services.users.users import create_token, get_user

    with transaction(sessions) as s:
        return create_token(s, get_user(s, user_id))[1]


def damage_stored(storage, key: str) -> None:
    """Damage a stored image past its first 40 bytes: cut short when it is a whole object, zeroed
    when it is a slice of a pack (as a failing disk leaves it)."""
    from app.packs import sliced

    part = sliced(key)
    if part is None:
        storage.put(key, storage.get(key)[:40], "image/png")
        return
    pack, offset, length = part
    with open(storage.root / pack, "r+b") as fh:
        fh.seek(offset + 40)
        fh.write(bytes(length - 40))


def png_bytes(colour=(200, 30, 30), size=(32, 24)) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


def make_choice_project(
    sessions, settings, storage, n: int, *, overlap: int = 1, lease: int = 900, name: str | None = None,
    tmp: Path | None = None, sample: int | None = None, seed: int = 0,
) -> tuple[int, int]:
    """A generic.choice project with n items sharing one image; returns (project_id, stage_id)."""
    import json
    import tempfile

    from app.services.imports import imports
    from app.services.projects import projects

    spec = projects.StageSpec(
        workflow="generic.choice", overlap=overlap, lease_seconds=lease, config={"choices": ["a", "b", "c"]},
        sample_size=sample, sample_seed=seed,
    )
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "img.png").write_bytes(png_bytes())
        records = "\n".join(json.dumps({"id": f"it-{i}", "image": "img.png", "question": f"Q{i}"}) for i in range(n))
        with transaction(sessions) as s:
            project = projects.create_project(s, name or f"p-{uuid.uuid4().hex[:6]}", [spec])
            source = imports.ImageSource(settings, storage, base=Path(folder))
            imports.import_items(s, project.id, records.encode(), "items.jsonl", settings=settings, storage=storage, images=source)
            stage_id = projects.stages_of(s, project.id)[0].id
            return project.id, stage_id


def zip_bytes(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


COLOURS = [(220, 30, 30), (30, 30, 220), (30, 160, 30), (230, 200, 30), (120, 120, 120), (240, 120, 20)]


def colorswap_records(n: int = 3, candidates: int | list[int] = 4) -> tuple[list[dict], dict[str, bytes]]:
    """ColorSwap pairs pair-0.. (rule-based, handmade, rule-based, ...) and their candidate images."""
    sources = ["rule-based", "handmade", "rule-based"]
    counts = candidates if isinstance(candidates, list) else [candidates] * n
    records, files = [], {}
    for i in range(n):
        entries = []
        for k in range(counts[i]):
            name = f"img/{i}_{k}.png"
            files[name] = png_bytes(COLOURS[k % len(COLOURS)], size=(40 + i, 30 + k))
            entries.append({"image": name, "from_caption": 1 + (2 * k) // counts[i], "generator": "sd"})
        records.append(
            {
                "id": f"pair-{i}",
                "caption_1": f"a red cat {i} in a grey jacket",
                "caption_2": f"a grey cat {i} in a red jacket",
                "caption_source": sources[i % 3],
                "image_source": ["stable-diffusion", "dall-e-3"][i % 2],
                "candidates": entries,
            }
        )
    return records, files


def login(client, username: str, password: str = PASSWORD):
    page = client.get("/login")
    token = csrf_from(page.text)
    return client.post("/login", data={"username": username, "password": password, "csrf_token": token, "next": "/"}, follow_redirects=False)


def run_concurrently(worker, args: list[tuple], timeout: float = 300) -> None:
    """Run `worker(*a)` in one thread per entry of `args`, all at once; any exception in any thread
    (a failed claim, a wrong answer, a broken assertion) fails the caller."""
    import threading

    failures: list[BaseException] = []

    def guarded(*a) -> None:
        try:
            worker(*a)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=a) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not failures, failures[:3]
    assert not any(t.is_alive() for t in threads), "threads still running"


def led_to(response) -> str:
    """Where a page's submit or skip led: the next item's screen it answers with (the page names its
    own address in `data-url`), or the redirect's target (nothing left, or an htmx request)."""
    import re

    if response.status_code == 303:
        return response.headers["location"]
    assert response.status_code == 200, (response.status_code, response.text[:300])
    found = re.search(r'<body[^>]* data-url="([^"]+)"', response.text)
    assert found, "the answer names no page"
    return found[1]


def start_annotating(client, stage_id: int, **kwargs):
    """Start annotating the stage as a browser does: the stage's page (a GET, which never leases),
    then its button, which posts; the answer leads to the screen of the item claimed."""
    page = client.get(f"/stages/{stage_id}/annotate")
    return client.post(f"/stages/{stage_id}/annotate", data={"csrf_token": csrf_from(page.text)}, **kwargs)


def csrf_from(html: str) -> str:
    import re

    m = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert m, "page has no CSRF token"
    return m.group(1)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc, timeout: float = 30.0) -> None:
    import time
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


@contextmanager
def running(cmd: list[str], health_url: str, env: dict | None = None, timeout: float = 30.0) -> Iterator[subprocess.Popen]:
    """Run a server process until the block ends, once `health_url` answers. Its output goes to a file:
    a pipe that nobody reads fills up after a few logged tracebacks, and the server then hangs."""
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            try:
                wait_for(health_url, proc, timeout)
            except (RuntimeError, TimeoutError) as exc:
                log.seek(0)
                raise RuntimeError(f"{exc}: {log.read()[-4000:]}") from None
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextmanager
def serving(app, timeout: float = 30.0) -> Iterator[str]:
    """Serve `app` with a real uvicorn server on a free port, in a thread of this process, until the
    block ends; yields its base URL. Real sockets and HTTP, without a new interpreter importing the
    app for each test (seconds each); tests that need a separate process (kills, workers) start one."""
    import threading
    import time

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the test server on port {port} did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)


@pytest.fixture
def live_server(settings, committed) -> Iterator[str]:
    """A real uvicorn server on the test database, configured as `vlcurate serve` would be from its
    environment (the test's database, data folder and secret key); yields its base URL."""
    from app.main import create_app

    served = Settings(database_url=settings.database_url, data_dir=settings.data_dir, secret_key=settings.secret_key)
    with serving(create_app(served)) as base:
        yield base


def server_process(settings: Settings, port: int) -> tuple[list[str], dict[str, str], str]:
    """A uvicorn process serving the app on the test database as `vlcurate serve` makes it
    (`serve_app`): its command, environment and base URL."""
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "VLCURATE_DATA_DIR": str(settings.data_dir),
        "VLCURATE_SECRET_KEY": settings.secret_key.get_secret_value(),
    }
    cmd = [sys.executable, "-m", "uvicorn", "app.main:serve_app", "--factory", "--host", "127.0.0.1",
           "--port", str(port), "--log-level", "warning"]
    return cmd, env, f"http://127.0.0.1:{port}"


@pytest.fixture
def live_process(settings, committed) -> Iterator[str]:
    """Like `live_server`, in a uvicorn process of its own: for load from many client threads, which
    would otherwise share this interpreter with the server."""
    cmd, env, base = server_process(settings, free_port())
    with running(cmd, base + "/healthz", env):
        yield base


@pytest.fixture(scope="session")
def moto_endpoint():
    """A real S3 API (a moto server process) for the whole session."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], url + "/moto-api/"):
        yield url


@pytest.fixture
def s3_client(moto_endpoint, monkeypatch):
    """A boto3 client on the moto server with the bucket `vlc-exports`."""
    import boto3

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"), ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="vlc-exports")
    client.endpoint = moto_endpoint
    return client
