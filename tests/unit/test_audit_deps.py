"""scripts/audit-deps.py (make audit) tells a clean audit from a vulnerable one and from one that
could not be done: pip-audit alone says "No known vulnerabilities found" when it skipped every
dependency, which must never pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "audit-deps.py"


@pytest.fixture()
def audit_deps():
    spec = importlib.util.spec_from_file_location("audit_deps", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dep(name, vulns=(), skip=None):
    d = {"name": name, "version": "1.0"}
    if skip:
        return {"name": name, "skip_reason": skip}
    d["vulns"] = list(vulns)
    return d


def run(audit_deps, monkeypatch, reports):
    monkeypatch.delenv("TASKFORGE_AUDIT", raising=False)
    monkeypatch.setattr(audit_deps, "audit", lambda service: reports[service])
    return audit_deps.main()


EDITABLE = dep("taskforge", skip="distribution marked as editable")


def test_clean_when_every_dependency_was_audited(audit_deps, monkeypatch, capsys):
    reports = {"pypi": ({"dependencies": [dep("a"), dep("b"), EDITABLE]}, ""), "osv": (None, "unused")}
    assert run(audit_deps, monkeypatch, reports) == 0
    assert "2 dependencies audited, no known vulnerabilities" in capsys.readouterr().out


def test_a_vulnerability_fails_and_is_listed(audit_deps, monkeypatch, capsys):
    vuln = {"id": "PYSEC-1", "fix_versions": ["1.1"]}
    reports = {"pypi": ({"dependencies": [dep("a", [vuln]), dep("b")]}, ""), "osv": (None, "unused")}
    assert run(audit_deps, monkeypatch, reports) == 1
    assert "a 1.0: PYSEC-1 (fixed in: 1.1)" in capsys.readouterr().out


def test_skipped_dependencies_are_not_a_pass(audit_deps, monkeypatch, capsys):
    skipped = dep("a", skip="Dependency not found on PyPI and could not be audited: a (1.0)")
    reports = {"pypi": ({"dependencies": [skipped, EDITABLE]}, ""), "osv": (None, "ConnectionError: no route")}
    assert run(audit_deps, monkeypatch, reports) == 2
    err = capsys.readouterr().err
    assert "could NOT be done" in err and "1 of 2 dependencies could not be audited" in err
    assert "osv: pip-audit failed: ConnectionError: no route" in err


def test_the_second_service_is_tried(audit_deps, monkeypatch):
    reports = {"pypi": (None, "ConnectionError"), "osv": ({"dependencies": [dep("a")]}, "")}
    assert run(audit_deps, monkeypatch, reports) == 0


def test_skipping_on_purpose_says_so(audit_deps, monkeypatch, capsys):
    monkeypatch.setenv("TASKFORGE_AUDIT", "skip")
    assert audit_deps.main() == 0
    assert "SKIPPED on purpose" in capsys.readouterr().out
