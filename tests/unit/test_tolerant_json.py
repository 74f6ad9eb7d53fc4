"""The JSON loader of the CLI's and the console's connections (taskforge.database.TolerantJsonLoads):
a placeholder for a document Python cannot decode (or, with max_depth, one nested deeper than a
reader shows), json.loads for everything else."""

from __future__ import annotations

import json

import pytest

from taskforge.database import JSON_LOADS, UNDECODED_JSON_KEY, TolerantJsonLoads


def nested(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


def test_documents_python_decodes_come_back_as_json_loads_gives_them():
    for text in (b'{"a": [1, {"b": null}]}', b"5", b'"[[[[["', nested(100)):
        assert JSON_LOADS(text) == json.loads(text)


def test_a_document_too_deep_for_python_is_a_labelled_placeholder():
    (value,) = JSON_LOADS(nested(5000)).values()
    assert set(JSON_LOADS(nested(5000))) == {UNDECODED_JSON_KEY}
    assert "too deep for Python's json module" in value and "::text FROM taskforge.tf_tasks" in value


def test_max_depth_replaces_deeper_documents_only():
    loads = TolerantJsonLoads(3, ", more than shown here")
    assert loads(nested(3)) == [[[]]]
    assert loads(b'{"a": [[]], "b": "[[[[[[[["}') == {"a": [[]], "b": "[[[[[[[["}  # brackets in strings
    (value,) = loads(b'[[], [[[{"x": 1}]]]]').values()
    assert "nested more than 3 levels deep, more than shown here" in value


def test_other_errors_are_raised_as_json_loads_raises_them():
    with pytest.raises(json.JSONDecodeError):
        JSON_LOADS(b"{not json")
