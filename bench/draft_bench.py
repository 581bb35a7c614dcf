"""Drafting benchmark: drafts per second through the OpenAI-compatible HTTP backend, as a share of
the model server's own rate, at 1, 8 and 32 requests in flight.

The server is the tests' stub (tests/drafting/stub_server.py, in --server-workers processes of its
own) answering every request after a fixed time (--latency, 50 ms), so its rate at a concurrency is
what a model server with that latency gives. Measured side by side in the same run:
- bare: one httpx.AsyncClient posting the same request bodies, prebuilt, at the same concurrency
  (the server's own rate as a client that does nothing else sees it);
- vlcurate: `OpenAIBackend.complete` on the draft requests (an image each, as data URL, the kind's
  schema as response_format), then each reply checked as the draft job does (strict JSON, the
  schema, the kind's payload).
Each is run --rounds times, alternating; the table gives each one's best round (a shared machine's
noise only ever slows a round), their ratio ("share") and the median of the rounds' own ratios
(each round's vlcurate rate over the bare rate just before it: robust to the server's drift).
Target: vlcurate >= 90 % of bare at 32 in flight.

With --local DIR (a model directory) or --local-shape llava-1.5-7b (that shape with random weights,
built on the GPU: the same compute without the weights), it measures the local backend instead:
drafts per second at batch sizes 1, 8 and 32, a WikiDO-length prompt with one 512x384 image, every
draft generating exactly --max-tokens tokens.

    python bench/draft_bench.py [--latency 0.05] [--requests-per-slot 20] [--rounds 3]
    python bench/draft_bench.py --local-shape llava-1.5-7b [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from app.datasets.suggest import ItemInput  # noqa: E402
from app.drafting.backends import DraftImage, DraftRequest, OpenAIBackend  # noqa: E402
from app.drafting.config import OpenAIDrafter  # noqa: E402
from app.drafting.run import check  # noqa: E402
from app.settings import Settings  # noqa: E402
from tests.drafting.kinds import CHOICE_KIND  # noqa: E402

ANSWER = '{"choice": "a", "reason": "the image is mostly red"}'


def png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(base: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the stub server exited with {proc.returncode}")
        try:
            urllib.request.urlopen(f"{base}/health", timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the stub server did not start")


async def bare(url: str, bodies: list[bytes], in_flight: int) -> float:
    """Requests per second of a client that only posts the prebuilt bodies, `in_flight` at a time."""
    limit = asyncio.Semaphore(in_flight)
    pool = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    async with httpx.AsyncClient(limits=pool, timeout=60) as client:

        async def one(body: bytes) -> None:
            async with limit:
                response = await client.post(url, content=body, headers={"Content-Type": "application/json"})
                response.raise_for_status()
                response.json()

        start = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return len(bodies) / (time.perf_counter() - start)


def ours(backend: OpenAIBackend, requests: list[DraftRequest], item: ItemInput, settings: Settings) -> tuple[float, float]:
    """Drafts per second through the backend, each reply checked as the draft job does; and the
    share of the time the checks took."""
    start = time.perf_counter()
    replies = backend.complete(requests)
    sent = time.perf_counter()
    valid = sum(check(CHOICE_KIND, r, item, settings).payload is not None for r in replies)
    elapsed = time.perf_counter() - start
    assert valid == len(requests), f"{len(requests) - valid} answers were not valid drafts"
    return len(requests) / elapsed, (elapsed - (sent - start)) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the server takes per answer")
    parser.add_argument("--requests-per-slot", type=int, default=20, help="requests per request in flight, per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--in-flight", default="1,8,32")
    parser.add_argument("--server-workers", type=int, default=4, help="the stub server's processes: enough that it is not the bottleneck")
    parser.add_argument("--local", type=Path, default=None, help="measure the local backend on this model directory")
    parser.add_argument("--local-shape", default=None, help="measure the local backend on this shape with random weights")
    parser.add_argument("--batches", default="1,8,32", help="local backend: batch sizes")
    parser.add_argument("--max-tokens", type=int, default=64, help="local backend: tokens generated per draft")
    args = parser.parse_args()
    if args.local or args.local_shape:
        local_bench(args)
    else:
        http_bench(args)


def local_bench(args) -> None:
    import tempfile

    import torch

    from app.drafting.backends import LocalBackend
    from app.drafting.config import LocalDrafter
    from tests.drafting.tinyvlm import save_vlm

    from PIL import Image

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.local
        if folder is None:
            start = time.perf_counter()
            folder = save_vlm(Path(tmp) / args.local_shape, args.local_shape, device="cuda" if torch.cuda.is_available() else "cpu")
            print(f"built {args.local_shape} with random weights in {time.perf_counter() - start:.0f} s")
        out = io.BytesIO()
        Image.new("RGB", (512, 384), (40, 120, 200)).save(out, "PNG")
        image = DraftImage("image/png", out.getvalue())
        caption = "The Eiffel Tower seen from the Champ de Mars at dusk, with the lights of the tower switched on and a crowd on the lawn"
        user = (f"wikipedia caption: {caption}\n Given the image and the wikipedia caption above, give an exact and concise "
                "caption. Do not miss any information from the wikipedia caption.")
        for batch in [int(b) for b in args.batches.split(",")]:
            backend = LocalBackend("bench", LocalDrafter(backend="local", model_dir=folder, batch_size=batch))
            backend.local.model.generation_config.eos_token_id = None  # every draft generates max_tokens
            n = max(batch, 4 if batch == 1 else 2 * batch)
            # Prompts of one length: a batch's padding, and so its kernels' shapes, are those of the warm-up.
            requests = [DraftRequest(user=f"{i:04d}. {user}", images=(image,), max_tokens=args.max_tokens, temperature=0) for i in range(n)]
            backend.complete(requests[:batch])  # warm-up: kernels, allocator
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            start = time.perf_counter()
            replies = backend.complete(requests)
            elapsed = time.perf_counter() - start
            print(
                f"batch {batch:>3}: {n / elapsed:7.2f} drafts/s, {n * args.max_tokens / elapsed:8.1f} generated tokens/s "
                f"({n} drafts of {args.max_tokens} tokens, prompt {replies[0].prompt_tokens} tokens) on {backend.local.device} "
                f"{torch.cuda.get_device_name() if torch.cuda.is_available() else ''} {backend.local.model.dtype}"
            )


def http_bench(args) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    answer = json.dumps({"latency": args.latency, "reply": ANSWER, "record": False})
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.drafting.stub_server", "--port", str(port), "--workers", str(args.server_workers), "--control", answer],
        cwd=ROOT,
    )
    settings = Settings(database_url="postgresql://unused/unused", secret_key="bench")
    item = ItemInput(1, {"question": "What colour is it?"}, {}, {})
    image = DraftImage("image/png", png())
    try:
        wait_ready(base, server)
        print(f"server ({args.server_workers} processes) answers in {args.latency * 1000:.0f} ms; {args.rounds} rounds")
        print(f"{'in flight':>9} | {'requests':>8} | {'bare req/s':>10} | {'vlcurate drafts/s':>17} | {'share':>6} | {'median':>6}")
        for in_flight in [int(x) for x in args.in_flight.split(",")]:
            n = in_flight * args.requests_per_slot
            config = OpenAIDrafter(backend="openai", base_url=f"{base}/v1", model="stub-vlm", max_in_flight=in_flight)
            backend = OpenAIBackend("bench", config)
            requests = [
                DraftRequest(
                    user=f"Question {i}: {item.data['question']}", system="You answer questions about images.", images=(image,),
                    schema=CHOICE_KIND.schema, schema_name=CHOICE_KIND.name, max_tokens=64, temperature=0,
                )
                for i in range(n)
            ]
            bodies = [json.dumps(backend.body(r)).encode() for r in requests]
            best_bare = best_ours = 0.0
            checking, paired = 0.0, []
            for _ in range(args.rounds):
                rate_bare = asyncio.run(bare(backend.url, bodies, in_flight))
                rate, share = ours(backend, requests, item, settings)
                paired.append(rate / rate_bare)
                best_bare = max(best_bare, rate_bare)
                if rate > best_ours:
                    best_ours, checking = rate, share
            ideal = in_flight / args.latency
            print(
                f"{in_flight:>9} | {n:>8} | {best_bare:>10.1f} | {best_ours:>17.1f} | {best_ours / best_bare:>6.1%}"
                f" | {statistics.median(paired):>6.1%}   (ideal {ideal:.0f}/s; checking answers {checking:.1%} of our time)"
            )
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
