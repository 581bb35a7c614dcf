"""A small real OpenAI-compatible chat-completions server that misbehaves on request, for the drafting
tests and bench (run as its own process: `python tests/drafting/stub_server.py --port N`).

POST /control sets how it answers from then on (and forgets what it recorded):
  reply        the assistant text of every answer (default "{}")
  replies      [[text, reply], ...]: a request whose user text contains `text` gets `reply`
  by_schema    {name: reply}: a request whose response_format names this json_schema gets `reply`
  latency      seconds to wait before answering (a long one is a timeout for a client)
  fail_first   answer this many requests with `fail_status` first (-1: every request)
  fail_when    answer every request whose user text contains this with `fail_status`
  fail_status  the failing status (429, 500, 400, ...), with `retry_after` as Retry-After if given
  echo_auth    a failing answer's message quotes the request's Authorization header (a careless server)
  record       keep each request (headers and body) for GET /requests (default true)
`--control JSON` sets the same from the start, and `--workers N` serves from N processes (the
bench's server, which must not be the bottleneck; /control then reaches one of them).
GET /requests lists the recorded requests; GET /health answers once it serves, with how many
requests it answered and the most it held at once (`peak`).
The usage it reports counts characters of text and 100 tokens per image, so a test can tell that
images arrived.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

DEFAULTS = {
    "reply": "{}", "replies": [], "by_schema": {}, "latency": 0.0, "fail_first": 0, "fail_when": None, "fail_status": 500, "retry_after": None,
    "echo_auth": False, "record": True,
}


class Stub:
    def __init__(self) -> None:
        self.control = dict(DEFAULTS)
        self.failed = 0
        self.recorded: list[dict] = []
        self.served = 0
        self.in_flight = 0
        self.peak = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = (await receive())["type"]
                await send({"type": event + ".complete"})  # lifespan.startup / lifespan.shutdown
                if event == "lifespan.shutdown":
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path, method = scope["path"], scope["method"]
        if path == "/health":
            return await _send(send, 200, {"status": "ok", "served": self.served, "peak": self.peak})
        if path == "/control" and method == "POST":
            self.control = {**DEFAULTS, **json.loads(body or b"{}")}
            self.failed, self.recorded, self.served, self.peak = 0, [], 0, 0
            return await _send(send, 200, self.control)
        if path == "/requests":
            return await _send(send, 200, self.recorded)
        if path.endswith("/chat/completions") and method == "POST":
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                return await self.complete(scope, json.loads(body), send)
            finally:
                self.in_flight -= 1
        return await _send(send, 404, {"error": {"message": f"no route {path}"}})

    async def complete(self, scope, request: dict, send) -> None:
        c = self.control
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if c["record"]:
            self.recorded.append({"headers": headers, "body": request, "at": time.time()})
        user = request["messages"][-1]["content"]
        parts = user if isinstance(user, list) else [{"type": "text", "text": user}]
        text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
        images = sum(p.get("type") == "image_url" for p in parts)
        if c["fail_first"] < 0 or self.failed < c["fail_first"] or (c["fail_when"] and c["fail_when"] in text):
            self.failed += 1
            extra = [(b"retry-after", str(c["retry_after"]).encode())] if c["retry_after"] is not None else []
            message = f"stub says {c['fail_status']}" + (f" to {headers.get('authorization')}" if c["echo_auth"] else "")
            return await _send(send, c["fail_status"], {"error": {"message": message}}, extra)
        if c["latency"]:
            await asyncio.sleep(c["latency"])
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
        reply = c["by_schema"].get(schema) or next((r for key, r in c["replies"] if key in text), c["reply"])
        self.served += 1
        await _send(send, 200, {
            "id": f"stub-{self.served}", "object": "chat.completion", "created": int(time.time()), "model": "stub-vlm",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(text) + 100 * images, "completion_tokens": len(reply), "total_tokens": len(text) + len(reply)},
        })


async def _send(send, status: int, payload, extra_headers=()) -> None:
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *extra_headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def from_env() -> Stub:
    """A stub answering as STUB_CONTROL (JSON) says: each worker process of a multi-process server builds one."""
    stub = Stub()
    stub.control = {**DEFAULTS, **json.loads(os.environ.get("STUB_CONTROL", "{}"))}
    return stub


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1, help="processes (the bench's server; /control then reaches one of them)")
    parser.add_argument("--control", default="{}", help="how to answer from the start (JSON, as POST /control takes)")
    args = parser.parse_args()
    os.environ["STUB_CONTROL"] = args.control
    options = {"host": "127.0.0.1", "port": args.port, "log_level": "warning", "access_log": False, "backlog": 2048}
    if args.workers > 1:
        uvicorn.run("tests.drafting.stub_server:from_env", factory=True, workers=args.workers, **options)
    else:
        uvicorn.run(from_env(), **options)


if __name__ == "__main__":
    main()
