"""The client's transport behaviour on real sockets: retries on connection errors for idempotent calls
only, and downloads that follow redirects (a replica may send the client to object storage)."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from vlcurate import Client, ConnectionFailed
from vlcurate.models import ExportOut


@pytest.fixture
def hanging_up():
    """A server that accepts each connection and closes it at once; counts the connections."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", accepted
    server.close()


def test_reads_are_retried_and_writes_are_not(hanging_up, monkeypatch):
    import vlcurate._transport

    monkeypatch.setattr(vlcurate._transport, "BACKOFF", 0.01)
    url, accepted = hanging_up
    with Client(url, "token", retries=2) as client:
        with pytest.raises(ConnectionFailed):
            client.projects()
        assert len(accepted) == 3
        with pytest.raises(ConnectionFailed):
            client.create_project("p", [{"workflow": "wikido.verify"}])
        assert len(accepted) == 4  # a POST that may have been applied is not sent twice


class Redirecting(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/api/v1/exports/7/files/"):
            self.send_response(307)
            self.send_header("Location", "/bucket/" + self.path.rsplit("/", 1)[-1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = f"bytes of {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_downloads_follow_redirects(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        job = ExportOut(id=7, project_id=1, format="jsonl", status="done", done=1, total=1, error=None, target=None,
                        manifest={"files": {"all.jsonl": {"sha256": "x", "bytes": 1}, "meta/log.jsonl": {"sha256": "y", "bytes": 1}}})
        with Client(f"http://127.0.0.1:{server.server_address[1]}", "token") as client:
            out = client._run(client._download_export(job, tmp_path / "out"))
        assert (out / "all.jsonl").read_text() == "bytes of /bucket/all.jsonl"
        assert (out / "meta" / "log.jsonl").read_text() == "bytes of /bucket/log.jsonl"
        assert (out / "manifest.json").is_file()
    finally:
        server.shutdown()


@pytest.mark.parametrize("url", ["localhost:8000", "127.0.0.1:8000", "example.org/vlcurate", "ftp://example.org"])
def test_a_url_without_scheme_fails_at_once(url):
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match="needs its scheme and host"):
        Client(url, "token")
    assert time.perf_counter() - start < 0.5  # no request, no retry


class HtmlPages(BaseHTTPRequestHandler):
    """A web site that is not a vlcurate server: HTML for every path, 200 at the root's API, 404 elsewhere."""

    def do_GET(self):
        status = 200 if self.path == "/api/v1/projects" else 404
        body = b"<!doctype html>\n<html><head><title>Welcome</title></head><body>" + b"<p>Hello</p>" * 100 + b"</body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_an_html_answer_is_a_clear_error():
    from vlcurate import NotFound, UnexpectedAnswer

    server = ThreadingHTTPServer(("127.0.0.1", 0), HtmlPages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Client(f"http://127.0.0.1:{server.server_address[1]}", "token") as client:
            with pytest.raises(UnexpectedAnswer) as ok_html:
                client.projects()
            with pytest.raises(UnexpectedAnswer) as missing:
                client.project(3)
    finally:
        server.shutdown()
    for error, status in ((ok_html.value, 200), (missing.value, 404)):
        assert error.status == status
        assert f"HTTP {status} with text/html; charset=utf-8, not JSON" in error.message
        assert "The answer began: '<!doctype html> <html><head><title>Welcome" in error.message
        assert len(error.message) < 400  # an excerpt, not the page
    assert not isinstance(missing.value, NotFound)
