"""scripts/audit-deps.py (make audit) tells a clean audit from a vulnerable one and from one that
could not be done: pip-audit alone says "No known vulnerabilities found" when it skipped every
dependency, and PyPI's project JSON knows only the vulnerabilities of a project's latest release;
neither may turn a partial audit into a pass. No network: pip-audit's runs and the HTTP requests
are replaced by canned answers."""

from __future__ import annotations

import importlib.util
import json
from importlib import metadata
from pathlib import Path

import pytest
import requests

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "audit-deps.py"
GHSA = {"id": "GHSA-aaaa", "aliases": ["CVE-2026-1", "PYSEC-2026-9"], "fixed_in": ["2.1"], "withdrawn": None}


@pytest.fixture(scope="module")
def ad():
    spec = importlib.util.spec_from_file_location("audit_deps", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def project(latest, *vulns, requires_python=None):
    return {"info": {"version": latest, "requires_python": requires_python}, "vulnerabilities": list(vulns)}


# PyPI's project JSON: the decision for one distribution


def test_the_latest_release_without_vulnerabilities_is_audited_clean(ad):
    verdict = ad.judge_latest("flask", "3.1.3", project("3.1.3"))
    assert verdict.source == ad.FALLBACK and verdict.vulns == ()


def test_versions_compare_as_versions_not_strings(ad):
    assert ad.judge_latest("a", "2.0", project("2.0.0")).source == ad.FALLBACK


def test_a_vulnerability_of_the_latest_release_is_reported(ad):
    verdict = ad.judge_latest("ecdsa", "2.0", project("2.0", GHSA))
    assert verdict.vulns == (ad.Vuln("GHSA-aaaa", ("CVE-2026-1", "PYSEC-2026-9"), ("2.1",)),)


def test_one_advisory_listed_under_two_ids_is_reported_once(ad):
    pysec = {"id": "PYSEC-2026-9", "aliases": ["CVE-2026-1", "GHSA-aaaa"], "fixed_in": [], "withdrawn": None}
    assert [v.id for v in ad.judge_latest("ecdsa", "2.0", project("2.0", GHSA, pysec)).vulns] == ["GHSA-aaaa"]


def test_a_withdrawn_advisory_is_ignored(ad):
    withdrawn = {**GHSA, "withdrawn": "2026-01-02T00:00:00Z"}
    verdict = ad.judge_latest("ecdsa", "2.0", project("2.0", withdrawn))
    assert verdict.source == ad.FALLBACK and verdict.vulns == ()


def test_an_older_release_cannot_be_audited_even_if_the_latest_is_vulnerable(ad):
    verdict = ad.judge_latest("jsonschema-rs", "0.60.3", project("0.61.2", GHSA))
    assert verdict.source is None and verdict.vulns == ()
    assert "not the latest release (0.61.2)" in verdict.reason


def test_a_latest_release_for_a_newer_python_is_named(ad):
    verdict = ad.judge_latest("numpy", "2.4.6", project("2.5.5", requires_python=">=99"))
    assert verdict.source is None and "(2.5.5, for Python >=99)" in verdict.reason


def test_no_project_json_means_not_audited(ad):
    verdict = ad.judge_latest("a", "1.0", None, "https://pypi.org/pypi/a/json answered 404")
    assert verdict.source is None and verdict.reason.endswith("answered 404")


# Fetching it (the session is the only stand-in for the network)


class Answer:
    def __init__(self, status, body=None):
        self.status_code, self.body = status, body

    def json(self):
        if self.body is None:
            raise json.JSONDecodeError("Expecting value", "", 0)
        return self.body


class Session:
    def __init__(self, outcome):
        self.outcome, self.calls = outcome, []

    def get(self, url, timeout):
        self.calls.append((url, timeout))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def test_fetch_asks_the_project_url_with_a_timeout(ad):
    session = Session(Answer(200, project("1.0")))
    assert ad.fetch_project(session, "flask") == (project("1.0"), "")
    assert session.calls == [("https://pypi.org/pypi/flask/json", ad.TIMEOUT)]


@pytest.mark.parametrize(
    ("outcome", "says"),
    [
        (Answer(404), "answered 404"),
        (requests.Timeout("read timed out"), "Timeout: read timed out"),
        (requests.ConnectionError("no route"), "ConnectionError: no route"),
        (Answer(200, None), "JSONDecodeError"),
    ],
)
def test_what_cannot_be_fetched_is_not_audited_and_says_why(ad, outcome, says):
    verdict = ad.judge_latest("a", "1.0", *ad.fetch_project(Session(outcome), "a"))
    assert verdict.source is None and says in verdict.reason


# Which distributions, and which of them the runtime needs


def dist(tmp_path, name, version, requires=(), editable=False):
    info = tmp_path / f"{name}-{version}.{len(list(tmp_path.iterdir()))}.dist-info"
    info.mkdir()
    lines = [f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    info.joinpath("METADATA").write_text("\n".join(lines) + "\n")
    if editable:
        info.joinpath("direct_url.json").write_text(json.dumps({"url": "file:///src", "dir_info": {"editable": True}}))
    return metadata.PathDistribution(info)


def test_taskforge_and_editable_installs_are_left_out_and_the_first_of_a_name_wins(ad, tmp_path):
    dists = [
        dist(tmp_path, "Flask", "3.1.3"),
        dist(tmp_path, "flask", "2.0"),  # shadowed, as later on sys.path
        dist(tmp_path, "taskforge", "0.1.0", editable=True),
        dist(tmp_path, "Other_Thing", "1.0", editable=True),
    ]
    deps, left_out = ad.inventory(dists)
    assert deps == {"flask": "3.1.3"}
    assert set(left_out) == {"taskforge", "other-thing"}


def test_taskforge_is_left_out_even_when_not_editable(ad, tmp_path):
    deps, left_out = ad.inventory([dist(tmp_path, "taskforge", "0.1.0")])
    assert deps == {} and "another one" in left_out["taskforge"]


def test_the_runtime_closure_follows_the_console_extra_and_markers(ad, tmp_path):
    dists = [
        dist(tmp_path, "taskforge", "0.1.0", ['alpha>=1', 'Beta[fast]; extra == "console"', 'gamma; extra == "dev"',
                                              'nowhere; sys_platform == "no-such-platform"']),
        dist(tmp_path, "alpha", "1"),
        dist(tmp_path, "beta", "1", ['delta; extra == "fast"', 'epsilon; extra == "other"']),
        *(dist(tmp_path, name, "1") for name in ("gamma", "delta", "epsilon", "nowhere")),
    ]  # fmt: skip
    assert ad.runtime_closure(dists) == {"alpha", "beta", "delta"}


def test_without_taskforge_installed_everything_counts_as_runtime(ad, tmp_path):
    assert ad.runtime_closure([dist(tmp_path, "alpha", "1")]) == {"alpha"}


# The report and its exit code


def verdict(ad, name, audited=True, vulns=()):
    return ad.Verdict(name, "1.0", ad.FALLBACK if audited else None, tuple(vulns), "" if audited else "why not")


def test_all_audited_and_clean_passes(ad, capsys):
    assert ad.summarize([verdict(ad, "flask"), verdict(ad, "pytest")], {"flask"}, {}) == 0
    out = capsys.readouterr().out
    assert f"runtime (taskforge[console]): 1 of 1 audited (1 by {ad.FALLBACK})" in out
    assert "passed: all 2 distributions audited" in out


def test_an_unaudited_dev_tool_is_a_named_warning_not_a_full_pass(ad, capsys):
    assert ad.summarize([verdict(ad, "flask"), verdict(ad, "jsonschema-rs", audited=False)], {"flask"}, {}) == 0
    out = capsys.readouterr().out
    assert "dev, test and packaging tools: 0 of 1 audited" in out and "NOT audited: jsonschema-rs 1.0: why not" in out
    assert "passed for the runtime closure" in out and "1 dev, test and packaging tools could NOT be audited" in out
    assert "passed: all" not in out


def test_an_unaudited_runtime_dependency_is_not_a_pass(ad, capsys):
    assert ad.summarize([verdict(ad, "flask", audited=False), verdict(ad, "pytest")], {"flask"}, {}) == 2
    out = capsys.readouterr().out
    assert "NOT audited: flask 1.0: why not" in out and "NOT DONE (this is not a pass)" in out
    assert "passed" not in out


def test_a_vulnerability_fails_whatever_else_was_not_audited(ad, capsys):
    vuln = ad.Vuln("GHSA-aaaa", ("CVE-2026-1",), ("2.1",))
    verdicts = [verdict(ad, "flask", audited=False), verdict(ad, "pytest", vulns=[vuln])]
    assert ad.summarize(verdicts, {"flask"}, {"taskforge": "this project"}) == 1
    out = capsys.readouterr().out
    assert f"pytest 1.0: GHSA-aaaa (aliases: CVE-2026-1; fixed in: 2.1) [{ad.FALLBACK}]" in out
    assert "NOT audited: flask" in out and "left out: taskforge: this project" in out


# The whole run: pip-audit first, the project JSON for what it left


@pytest.fixture()
def installed(ad):
    return ad.inventory(metadata.distributions())[0]


def run(ad, monkeypatch, reports, fetch):
    monkeypatch.delenv("TASKFORGE_AUDIT", raising=False)
    monkeypatch.setattr(ad, "audit", lambda service: reports[service])
    monkeypatch.setattr(ad, "fetch_project", fetch)
    return ad.main()


def no_fetch(session, name):
    raise AssertionError(f"the project JSON was asked for {name}")


def test_pip_audit_auditing_everything_decides_alone(ad, monkeypatch, capsys, installed):
    report = {"dependencies": [{"name": n, "version": v, "vulns": []} for n, v in installed.items()]}
    assert run(ad, monkeypatch, {"pypi": (report, "")}, no_fetch) == 0
    out = capsys.readouterr().out
    assert f"passed: all {len(installed)} distributions audited" in out and "pip-audit (pypi)" in out


def test_when_pip_audit_skips_everything_the_latest_releases_are_audited(ad, monkeypatch, capsys, installed):
    skipped = {"dependencies": [{"name": n, "skip_reason": "Dependency not found on PyPI"} for n in installed]}
    reports = {"pypi": (skipped, ""), "osv": (None, "ConnectionError: api.osv.dev")}
    answers = {n: project(v) for n, v in installed.items()}
    answers["flask"] = project(installed["flask"], GHSA)
    assert run(ad, monkeypatch, reports, lambda session, name: (answers[name], "")) == 1
    out = capsys.readouterr().out
    assert "pip-audit (osv) failed: ConnectionError: api.osv.dev" in out
    assert f"flask {installed['flask']}: GHSA-aaaa" in out and "left out: taskforge: this project" in out


def test_what_pip_audit_audited_keeps_its_findings(ad, monkeypatch, capsys, installed):
    deps = [{"name": n, "skip_reason": "not found"} for n in installed if n != "flask"]
    deps.append({"name": "flask", "version": installed["flask"],
                 "vulns": [{"id": "PYSEC-1", "fix_versions": ["9.9"], "aliases": ["CVE-1"]}]})  # fmt: skip
    reports = {"pypi": ({"dependencies": deps}, ""), "osv": (None, "unreachable")}
    answers = {n: project(v) for n, v in installed.items() if n != "flask"}
    assert run(ad, monkeypatch, reports, lambda session, name: (answers[name], "")) == 1
    assert "PYSEC-1 (aliases: CVE-1; fixed in: 9.9) [pip-audit (pypi)]" in capsys.readouterr().out


def test_nothing_reachable_is_not_a_pass(ad, monkeypatch, capsys):
    reports = {"pypi": (None, "ConnectionError"), "osv": (None, "ConnectionError")}
    assert run(ad, monkeypatch, reports, lambda session, name: (None, "ConnectionError")) == 2
    assert "NOT DONE (this is not a pass)" in capsys.readouterr().out


def test_skipping_on_purpose_says_so(ad, monkeypatch, capsys):
    monkeypatch.setenv("TASKFORGE_AUDIT", "skip")
    assert ad.main() == 0
    assert "SKIPPED on purpose" in capsys.readouterr().out
