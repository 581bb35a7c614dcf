"""The client against two replicas of the server (two `uvicorn` processes on one database and data
directory) behind a round-robin reverse proxy: pushes, annotations and the finals pull hold up.

The proxy is a few lines of ASGI over httpx run by uvicorn in a thread (the deployment's Caddy is
not installed where the tests run): each request, its body and its answer's body are passed on as
they are, to the next replica in turn.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
import uvicorn

from app.db import transaction
from tests import factories
from tests.client.test_client_live import answer, wikido_dataset
from tests.conftest import free_port, running, server_process
from vlcurate import Client

HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"proxy-connection"}


class RoundRobinProxy:
    """An ASGI app that sends each request to the next replica in turn and streams its answer back."""

    def __init__(self, upstreams: list[str]):
        self.upstreams = itertools.cycle(upstreams)
        self.served: Counter[str] = Counter()
        self.http: httpx.AsyncClient | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await receive()  # startup
            self.http = httpx.AsyncClient(timeout=None)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # shutdown
            await self.http.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        upstream = next(self.upstreams)
        self.served[upstream] += 1
        query = scope["query_string"].decode()
        url = upstream + scope["raw_path"].decode() + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k not in HOP_BY_HOP]
        request = self.http.build_request(scope["method"], url, headers=headers, content=body)
        response = await self.http.send(request, stream=True)
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


@contextmanager
def proxy(upstreams: list[str]) -> Iterator[tuple[str, RoundRobinProxy]]:
    app = RoundRobinProxy(upstreams)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.committed
def test_client_over_two_replicas_behind_a_proxy(committed, settings, tmp_path):
    with transaction(committed) as s:
        pid, (stage_id,) = factories.project(s, "wikido.verify", name="replicas")
        admin = factories.token(s, factories.user(s, "rep-admin", "admin"))
        annotator = factories.token(s, factories.user(s, "rep-ann"))
    (cmd_a, env, base_a), (cmd_b, _, base_b) = (server_process(settings, free_port()) for _ in range(2))
    replicas = [base_a, base_b]
    with running(cmd_a, f"{base_a}/healthz", env), running(cmd_b, f"{base_b}/healthz", env), \
            proxy(replicas) as (url, balancer):
        with Client(url, admin) as client, Client(url, annotator) as ann:
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
    # Both replicas answered, each about half of the requests.
    assert set(balancer.served) == set(replicas) and abs(balancer.served[replicas[0]] - balancer.served[replicas[1]]) <= 1
