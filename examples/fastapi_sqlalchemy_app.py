"""Example: a FastAPI application on SQLAlchemy (asyncio, psycopg 3) that enqueues a TaskForge
task in the same transaction as its own write, and waits for a task's result.

``POST /orders`` inserts an order and submits a ``ship_order`` task inside one
``engine.begin()`` block: both commit together, or neither does (a refused submit or a failed
insert rolls back the other; workers are woken only at commit). ``GET /tasks/{task_id}`` waits up
to ``wait`` seconds for the task to end (``taskforge.aio.wait``: LISTEN, then read, so a task
that ends meanwhile is never missed) and returns its state and result.

docs/integration.md walks through it; tests/docs/test_fastapi_example.py runs it. To try it::

    pip install fastapi uvicorn 'sqlalchemy[asyncio]>=2'
    export TASKFORGE_DSN=postgresql://localhost/mydb          # migrated: taskforge db migrate
    psql "$TASKFORGE_DSN" -c "CREATE TABLE shop_orders (order_id bigserial PRIMARY KEY,
                                  item text NOT NULL, quantity int NOT NULL CHECK (quantity > 0))"
    psql "$TASKFORGE_DSN" -c "SELECT taskforge.tf_register_task_type('ship_order')"
    uvicorn examples.fastapi_sqlalchemy_app:app
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from taskforge import aio
from taskforge.errors import Refused, TaskNotFound


def async_engine(dsn: str) -> AsyncEngine:
    """An SQLAlchemy engine on psycopg 3's asyncio driver for a ``postgresql://`` DSN."""
    return create_async_engine(dsn.replace("postgresql://", "postgresql+psycopg_async://", 1))


DSN = os.environ.get("TASKFORGE_DSN", "postgresql://localhost/postgres")
engine = async_engine(DSN)
app = FastAPI(title="shop")


class Order(BaseModel):
    item: str
    quantity: int
    queue: str = "shop"


@app.post("/orders")
async def create_order(order: Order) -> dict[str, Any]:
    """Insert the order and submit its ``ship_order`` task in one transaction."""
    try:
        async with engine.begin() as conn:
            submitted = await aio.submit(
                conn,
                "ship_order",
                {"item": order.item, "quantity": order.quantity},
                queue=order.queue,
                notify_finished=True,  # GET /tasks/{id} is woken by a notification
            )
            inserted = await conn.execute(
                text("INSERT INTO shop_orders (item, quantity) VALUES (:item, :quantity) RETURNING order_id"),
                {"item": order.item, "quantity": order.quantity},
            )
            order_id = inserted.scalar_one()
    except Refused as exc:  # TaskForge refused the request: nothing was written
        raise HTTPException(status_code=400, detail={"field": exc.argument, "message": exc.message}) from None
    except IntegrityError as exc:  # the order was refused (CHECK): the task rolled back with it
        raise HTTPException(status_code=400, detail={"message": str(exc.orig)}) from None
    return {"order_id": order_id, "task_id": submitted.task_id}


@app.get("/tasks/{task_id}")
async def task_outcome(task_id: int, wait: float = 10.0) -> dict[str, Any]:
    """The task's state and result once it has ended, waiting at most ``wait`` seconds."""
    # Waiting needs an autocommit connection of its own (notifications arrive between transactions).
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as aconn:
        try:
            task = await aio.wait(aconn, task_id, timeout=wait)
        except TimeoutError:
            raise HTTPException(status_code=504, detail={"message": f"task {task_id} has not ended yet"}) from None
        except TaskNotFound as exc:
            raise HTTPException(status_code=404, detail={"message": exc.message}) from None
        except Refused as exc:  # a bad argument, e.g. wait=0
            raise HTTPException(status_code=400, detail={"field": exc.argument, "message": exc.message}) from None
    return {"task_id": task.task_id, "state": task.state, "result": task.result, "error": task.last_error}
