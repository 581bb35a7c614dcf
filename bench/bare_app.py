"""The bare stack every ratio of http_bench.py and cycle_bench.py is read against: the fastest
claim / submit / release service we know how to write on vlcurate's own libraries (FastAPI, uvicorn,
psycopg), with none of vlcurate's work.

- one process, uvicorn on uvloop and httptools, no access log, no middleware, no auth, no ORM;
- psycopg's `AsyncConnectionPool`, opened full at start (BARE_POOL connections, 8 by default: more
  only queue in PostgreSQL on a small machine), autocommit connections, every statement prepared
  on its first run (`prepare_threshold=0`), so a request is one round trip of a prepared statement;
- claim: one `UPDATE items ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING` statement
  that takes a slot of the lowest claimable item of BARE_STAGE (no lease row, no per-annotator
  check); submit: one INSERT into `bare_submits`; release: one UPDATE giving the slot back;
- JSON read and written by orjson (jsonb columns decoded by it too), answers as raw `Response`s, so
  FastAPI validates and serializes nothing.

    BARE_DSN=postgresql://... BARE_STAGE=1 [BARE_POOL=8] uvicorn bare_app:app --app-dir bench \
        --loop uvloop --http httptools --no-access-log
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager

import orjson
from fastapi import FastAPI, Request, Response
from psycopg.types.json import Jsonb, set_json_loads
from psycopg_pool import AsyncConnectionPool

CLAIM = """
UPDATE items SET slots_left = slots_left - 1
WHERE id = (SELECT id FROM items WHERE stage_id = %s AND status = 'active' AND slots_left > 0
            ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, data
"""
SUBMIT = "INSERT INTO bare_submits (item_id, payload) VALUES (%s, %s) RETURNING id"
RELEASE = "UPDATE items SET slots_left = slots_left + 1 WHERE id = %s"

STAGE = int(os.environ["BARE_STAGE"])
POOL = int(os.environ.get("BARE_POOL", "8"))
set_json_loads(orjson.loads)
pool = AsyncConnectionPool(
    os.environ["BARE_DSN"], min_size=POOL, max_size=POOL, open=False,
    kwargs={"autocommit": True, "prepare_threshold": 0},
)


@asynccontextmanager
async def lifespan(_: FastAPI):
    await pool.open(wait=True)
    yield
    await pool.close()


app = FastAPI(lifespan=lifespan)

def _json(value) -> Response:
    return Response(orjson.dumps(value), media_type="application/json")


@app.post("/api/v1/stages/{stage_id}/claim")
async def claim(stage_id: int) -> Response:
    async with pool.connection() as conn:
        row = await (await conn.execute(CLAIM, (STAGE,))).fetchone()
    if row is None:
        return Response(status_code=204)
    return _json({"assignment_id": row[0], "item_id": row[0], "data": row[1]})


@app.post("/api/v1/assignments/{assignment_id}/submit")
async def submit(assignment_id: int, request: Request) -> Response:
    payload = orjson.loads(await request.body())["payload"]
    async with pool.connection() as conn:
        row = await (await conn.execute(SUBMIT, (assignment_id, Jsonb(payload, dumps=orjson.dumps)))).fetchone()
    return _json({"annotation_id": row[0]})


@app.post("/api/v1/assignments/{assignment_id}/release")
async def release(assignment_id: int) -> Response:
    async with pool.connection() as conn:
        await conn.execute(RELEASE, (assignment_id,))
    return Response(status_code=204)
