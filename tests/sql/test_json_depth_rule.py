"""The JSON nesting limit has one home in the database, taskforge._tf_json_too_deep; the Python
client's own check (taskforge.client.MAX_PAYLOAD_DEPTH, applied before a payload is sent) must
be the same limit, counted the same way."""

from __future__ import annotations

import pytest
from psycopg.types.json import Jsonb

from taskforge.client import MAX_PAYLOAD_DEPTH, InvalidArgument, check_payload


def nested(levels: int) -> dict:
    """{"a": [[...1...]]} with ``levels`` containers in all."""
    value: object = 1
    for _ in range(levels - 1):
        value = [value]
    return {"a": value}


@pytest.mark.parametrize("levels", [MAX_PAYLOAD_DEPTH, MAX_PAYLOAD_DEPTH + 1])
def test_python_and_postgres_draw_the_line_at_the_same_depth(conn, levels):
    too_deep = conn.execute("SELECT taskforge._tf_json_too_deep(%s)", (Jsonb(nested(levels)),)).fetchone()[0]
    assert too_deep is (levels > MAX_PAYLOAD_DEPTH)
    if too_deep:
        with pytest.raises(InvalidArgument, match="payload"):
            check_payload(nested(levels))
    else:
        check_payload(nested(levels))
