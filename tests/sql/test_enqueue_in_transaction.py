"""A task submitted on the application's own connection commits or rolls back with the
application's writes, and wakes workers only at commit: psycopg, SQLAlchemy (Connection, Session,
savepoints, asyncio). The Django connection is tested in tests/contrib (a Django project)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import Session

from taskforge import aio, client
from taskforge.adapters import async_psycopg_connection, psycopg_connection

from sqlcore_helpers import claim, register_worker, unique_name

#: Seconds to wait for a wake-up notification that must not come (or must).
QUIET = 0.5


def _url(dsn: str, driver: str) -> str:
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    host, port, user, dbname = (
        params.get("host", "127.0.0.1"),
        params.get("port", 5432),
        params["user"],
        params["dbname"],
    )
    return f"postgresql+{driver}://{user}@{host}:{port}/{dbname}"


@pytest.fixture()
def orders(conn) -> Iterator[str]:
    """A table of the application's own, written in the same transaction as the task."""
    table = unique_name("orders")
    conn.execute(f"CREATE TABLE public.{table} (order_id serial PRIMARY KEY, item text NOT NULL)")
    conn.execute(f"GRANT ALL ON public.{table} TO PUBLIC")
    yield table
    conn.execute(f"DROP TABLE public.{table}")


@pytest.fixture()
def listener(db_dsn) -> Iterator[psycopg.Connection]:
    """A session LISTENing on the workers' wake-up channel, as an idle worker does."""
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("LISTEN taskforge")
        yield c


def _wakeups(listener: psycopg.Connection, queue: str) -> int:
    return sum(1 for n in listener.notifies(timeout=QUIET) if n.payload == queue)


def _tasks(conn: psycopg.Connection, queue: str) -> int:
    return len(client.list_tasks(conn, queue=queue))


def _orders(conn: psycopg.Connection, table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM public.{table}").fetchone()[0]


def test_psycopg_transaction_rollback_leaves_no_task_and_wakes_no_worker(conn, db_dsn, orders, listener):
    queue = unique_name()
    with psycopg.connect(db_dsn) as app, pytest.raises(RuntimeError), app.transaction():
        app.execute(f"INSERT INTO public.{orders} (item) VALUES ('book')")
        client.submit(app, "echo", {"order": "book"}, queue=queue)
        raise RuntimeError("the request failed after the submit")
    assert (_tasks(conn, queue), _orders(conn, orders), _wakeups(listener, queue)) == (0, 0, 0)


def test_psycopg_commit_makes_the_task_claimable_and_wakes_workers_then(conn, db_dsn, orders, listener):
    queue = unique_name()
    with psycopg.connect(db_dsn) as app:
        with app.transaction():
            app.execute(f"INSERT INTO public.{orders} (item) VALUES ('book')")
            task = client.submit(app, "echo", {"order": "book"}, queue=queue)
            assert _wakeups(listener, queue) == 0  # not before the commit
            assert _tasks(conn, queue) == 0  # invisible to others until then
        assert _wakeups(listener, queue) == 1
    worker = register_worker(conn, queues=[queue])
    assert [r[0] for r in claim(conn, worker, queues=[queue])] == [task.task_id]


def test_sqlalchemy_connection_commit_rollback_and_savepoint(conn, db_dsn, orders, listener):
    queue = unique_name()
    engine = create_engine(_url(db_dsn, "psycopg"))
    try:
        with engine.connect() as app:  # "commit as you go": the submit is in the transaction begun for it
            client.submit(app, "echo", {"n": 1}, queue=queue)
            app.execute(text(f"INSERT INTO public.{orders} (item) VALUES ('one')"))
            app.rollback()
            assert (_tasks(conn, queue), _orders(conn, orders), _wakeups(listener, queue)) == (0, 0, 0)

            kept = client.submit(app, "echo", {"n": 2}, queue=queue)
            with pytest.raises(RuntimeError), app.begin_nested():  # a savepoint, rolled back
                client.submit(app, "echo", {"n": 3}, queue=queue)
                raise RuntimeError("inner step failed")
            app.execute(text(f"INSERT INTO public.{orders} (item) VALUES ('two')"))
            app.commit()
        assert [t.task_id for t in client.list_tasks(conn, queue=queue)] == [kept.task_id]
        assert _orders(conn, orders) == 1
        assert _wakeups(listener, queue) >= 1

        with engine.begin() as app:  # an explicit transaction block
            client.submit(app, "echo", {"n": 4}, queue=queue)
        assert _tasks(conn, queue) == 2
    finally:
        engine.dispose()


def test_sqlalchemy_session_commits_the_task_with_the_unit_of_work(conn, db_dsn, orders):
    queue = unique_name()
    engine = create_engine(_url(db_dsn, "psycopg"))
    try:
        with Session(engine) as session:
            session.execute(text(f"INSERT INTO public.{orders} (item) VALUES ('s')"))
            client.submit(session, "echo", {}, queue=queue)
            session.rollback()
            client.submit(session, "echo", {}, queue=queue)
            session.commit()
        assert (_tasks(conn, queue), _orders(conn, orders)) == (1, 0)
    finally:
        engine.dispose()


@pytest.mark.anyio
async def test_sqlalchemy_async_connection_commit_and_rollback(conn, db_dsn, orders, listener):
    queue = unique_name()
    engine = create_async_engine(_url(db_dsn, "psycopg_async"))
    try:
        async with engine.connect() as app:
            await aio.submit(app, "echo", {"n": 1}, queue=queue)
            await app.execute(text(f"INSERT INTO public.{orders} (item) VALUES ('a')"))
            await app.rollback()
            assert (_tasks(conn, queue), _orders(conn, orders), _wakeups(listener, queue)) == (0, 0, 0)
        async with engine.begin() as app:
            task = await aio.submit(app, "echo", {"n": 2}, queue=queue)
            await app.execute(text(f"INSERT INTO public.{orders} (item) VALUES ('b')"))
        assert [t.task_id for t in client.list_tasks(conn, queue=queue)] == [task.task_id]
        assert (_orders(conn, orders), _wakeups(listener, queue)) == (1, 1)
    finally:
        await engine.dispose()


def test_adapters_refuse_what_is_not_psycopg_3(db_dsn):
    with pytest.raises(TypeError, match="conn: expected a psycopg Connection"):
        psycopg_connection(object())
    engine = create_engine(_url(db_dsn, "psycopg"))
    try:
        with engine.connect() as app:
            assert psycopg_connection(app) is app.connection.driver_connection
    finally:
        engine.dispose()


@pytest.mark.anyio
async def test_the_async_adapter_refuses_a_synchronous_connection(db_dsn):
    with psycopg.connect(db_dsn) as sync_conn, pytest.raises(TypeError, match="expected a psycopg AsyncConnection"):
        await async_psycopg_connection(sync_conn)


def test_reads_decode_json_on_a_connection_that_loads_jsonb_as_text(db_dsn):
    """As Django's connections do; a JSON loader the application chose is kept."""
    from psycopg.types.json import set_json_loads
    from psycopg.types.string import TextLoader

    queue = unique_name()
    with psycopg.connect(db_dsn, autocommit=True) as app:
        app.adapters.register_loader("jsonb", TextLoader)
        task = client.submit(app, "echo", {"n": [1, 2]}, queue=queue)
        assert client.get_task(app, task.task_id).payload == {"n": [1, 2]}
        assert app.execute("SELECT '{\"a\": 1}'::jsonb").fetchone()[0] == '{"a": 1}'  # the connection's own rule stays
        set_json_loads(lambda text: {"loaded by": "the application"}, app)
        assert client.get_task(app, task.task_id).payload == {"loaded by": "the application"}
