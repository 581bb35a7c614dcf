"""The bare stack http_bench.py compares vlcurate with: FastAPI + a psycopg pool, one SKIP LOCKED
claim statement, one insert per submit and one update per release, no ORM, no middleware, no auth.

    BARE_DSN=postgresql://... BARE_STAGE=1 uvicorn bare_app:app --app-dir bench --no-access-log
"""

from __future__ import annotations

import json
import os

from fastapi import FastAPI, Request, Response
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

CLAIM = """
UPDATE items SET slots_left = slots_left - 1
WHERE id = (SELECT id FROM items WHERE stage_id = %s AND status = 'active' AND slots_left > 0
            ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, data
"""

pool = AsyncConnectionPool(os.environ["BARE_DSN"], min_size=8, max_size=16, open=False)
app = FastAPI(on_startup=[pool.open], on_shutdown=[pool.close])
STAGE = int(os.environ["BARE_STAGE"])


@app.post("/api/v1/stages/{stage_id}/claim")
async def claim(stage_id: int):
    async with pool.connection() as conn:
        row = await (await conn.execute(CLAIM, (STAGE,))).fetchone()
    if row is None:
        return Response(status_code=204)
    return {"assignment_id": row[0], "item_id": row[0], "data": row[1]}


@app.post("/api/v1/assignments/{assignment_id}/submit")
async def submit(assignment_id: int, request: Request):
    body = await request.body()
    async with pool.connection() as conn:
        await conn.execute("INSERT INTO bare_submits (item_id, payload) VALUES (%s, %s)", (assignment_id, Jsonb(json.loads(body)["payload"])))
    return {"annotation_id": assignment_id}


@app.post("/api/v1/assignments/{assignment_id}/release", status_code=204)
async def release(assignment_id: int):
    async with pool.connection() as conn:
        await conn.execute("UPDATE items SET slots_left = slots_left + 1 WHERE id = %s", (assignment_id,))
    return Response(status_code=204)
