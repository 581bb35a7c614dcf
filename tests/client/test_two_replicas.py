"""The client against two replicas of the server (two `uvicorn` processes on one database and data
directory), its requests alternating between them: pushes, annotations and the finals pull hold up."""

from __future__ import annotations

import itertools
import os
import sys

import httpx
import pytest

from app.db import transaction
from tests import factories
from tests.client.test_client_live import answer, wikido_dataset
from tests.conftest import free_port, running
from vlcurate import Client


class Alternating(httpx.HTTPTransport):
    """Sends each request to the next replica in turn (what a round-robin proxy does)."""

    def __init__(self, ports: list[int]):
        super().__init__()
        self.ports = itertools.cycle(ports)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(port=next(self.ports))
        return super().handle_request(request)


@pytest.mark.committed
def test_client_over_two_replicas(committed, settings, tmp_path):
    with transaction(committed) as s:
        pid, (stage_id,) = factories.project(s, "wikido.verify", name="replicas")
        admin = factories.token(s, factories.user(s, "rep-admin", "admin"))
        annotator = factories.token(s, factories.user(s, "rep-ann"))
    env = {**os.environ, "DATABASE_URL": settings.database_url, "VLCURATE_DATA_DIR": str(settings.data_dir),
           "VLCURATE_SECRET_KEY": settings.secret_key.get_secret_value()}
    ports = [free_port(), free_port()]
    commands = [[sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory", "--host", "127.0.0.1", "--port", str(p),
                 "--log-level", "warning"] for p in ports]
    with running(commands[0], f"http://127.0.0.1:{ports[0]}/healthz", env), running(commands[1], f"http://127.0.0.1:{ports[1]}/healthz", env):
        url = f"http://127.0.0.1:{ports[0]}"
        with Client(url, admin, transport=Alternating(ports)) as client, Client(url, annotator, transport=Alternating(ports)) as ann:
            ds = wikido_dataset(30)
            assert client.push_records(pid, ds, batch_size=7, progress=False).created == 30
            assert client.push_records(pid, ds, batch_size=7, progress=False).skipped == 30
            for _ in range(10):
                claimed = ann.claim(stage_id)
                ann.submit(claimed.assignment_id, answer(int(claimed.data["image_id"][3:])))
            pulled = client.finals(pid, cache_dir=str(tmp_path / "hf"))
            kept = [r for r in client.final_records(pid)]
    assert pulled.num_rows == len(kept) > 0
    assert pulled["image_id"] == [r.external_id for r in kept]
