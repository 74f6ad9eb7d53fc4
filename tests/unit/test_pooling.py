"""The rules of transaction-mode pooling (taskforge.pooling), without a server: which mode is in
force, what goes into the startup packet, what is set per transaction, and who may LISTEN."""

from __future__ import annotations

import pytest

from taskforge import pooling
from taskforge.worker import WorkerConfig


def test_the_mode_comes_from_the_argument_then_the_environment_then_none(monkeypatch):
    monkeypatch.delenv(pooling.POOLER_ENV, raising=False)
    assert pooling.resolve_pooler() == "none"
    monkeypatch.setenv(pooling.POOLER_ENV, " Transaction ")
    assert pooling.resolve_pooler() == "transaction"
    assert pooling.resolve_pooler("none") == "none"
    monkeypatch.setenv(pooling.POOLER_ENV, "statement")
    with pytest.raises(ValueError, match=r"\$TASKFORGE_POOLER: must be one of none, transaction, got 'statement'"):
        pooling.resolve_pooler()
    with pytest.raises(ValueError, match="pooler: must be one of"):
        WorkerConfig(pooler="session")
    monkeypatch.setenv(pooling.POOLER_ENV, "transaction")
    assert WorkerConfig().pooler == "transaction"  # a library user's config follows the environment too
    assert WorkerConfig(pooler="none").pooler == "none"


def test_transaction_mode_sends_no_timeouts_at_startup_but_keeps_the_callers_own_options(monkeypatch):
    monkeypatch.setenv("PGOPTIONS", "-c work_mem=7MB")
    dsn = "host=h dbname=d options='-c search_path=app'"
    direct = pooling.startup_options(dsn, "none", 0.5, 2.0)
    assert direct == {"options": "-c work_mem=7MB -c search_path=app -c lock_timeout=500 -c statement_timeout=2000"}
    assert pooling.startup_options(dsn, "transaction", 0.5, 2.0) == {"options": "-c work_mem=7MB -c search_path=app"}
    monkeypatch.delenv("PGOPTIONS")
    assert pooling.startup_options("host=h", "transaction", 0.5, 2.0) == {}


def test_the_timeouts_are_set_per_transaction_only_in_transaction_mode():
    assert pooling.transaction_settings("none", 0.5, 2.0) is None
    assert pooling.transaction_settings("transaction", None, None) is None
    assert pooling.transaction_settings("transaction", 0.0004, None) == {"lock_timeout": "1", "statement_timeout": None}
    assert pooling.transaction_settings("transaction", 1, 30) == {"lock_timeout": "1000", "statement_timeout": "30000"}
    assert pooling.connect_kwargs("transaction") == {"prepare_threshold": None}
    assert pooling.connect_kwargs("none") == {}


def test_only_a_direct_connection_listens():
    assert pooling.listens("none")
    assert not pooling.listens("transaction")
    assert pooling.listens("transaction", "host=db-direct")
    assert WorkerConfig(pooler="transaction").listens is False
    assert WorkerConfig(pooler="transaction", listen_dsn="host=db-direct").listens is True
