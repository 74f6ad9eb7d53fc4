"""Audit the installed environment (.venv) for dependencies with known vulnerabilities.

Run by `make audit` and `.ci/run`. Each installed distribution is audited by the first source
that can:

1. pip-audit with its PyPI service (https://pypi.org/pypi/<name>/<version>/json), then with OSV;
2. else PyPI's project JSON (https://pypi.org/pypi/<name>/json). It lists the known
   vulnerabilities of a project's LATEST release only, so it audits a dependency only when the
   installed version is that release; an older one cannot be audited this way and is named.

The report has two parts. The runtime closure (what `pip install taskforge[console]` installs)
must be audited in full. The other distributions (dev, test and packaging tools such as pip) are
audited as far as the sources allow; those that could not be are listed as a warning. taskforge
itself and other editable installs are left out: they are local source (a different project named
taskforge is on PyPI).

Exit codes: 0 the runtime closure was audited in full and no audited distribution has a known
vulnerability (the other distributions not audited are listed as a warning); 1 a vulnerability
was found (listed, whatever else could not be audited); 2 some runtime dependency could not be
audited (listed): that is not a pass. TASKFORGE_AUDIT=skip skips the audit on purpose, with a line
saying so.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import requests
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT, RUNTIME_EXTRAS = "taskforge", ("console",)
SERVICES = ("pypi", "osv")
PROJECT_JSON = "https://pypi.org/pypi/{}/json"
FALLBACK = "PyPI project JSON (latest releases)"
TIMEOUT = (5, 20)  # seconds: connect, read


class Vuln(NamedTuple):
    id: str
    aliases: tuple[str, ...] = ()
    fixed_in: tuple[str, ...] = ()


class Verdict(NamedTuple):
    """One distribution's audit: `source` says what audited it; None with `reason`: not audited."""

    name: str
    version: str
    source: str | None = None
    vulns: tuple[Vuln, ...] = ()
    reason: str = ""


def inventory(dists: Iterable[metadata.Distribution]) -> tuple[dict[str, str], dict[str, str]]:
    """({canonical name: version} to audit, {name: why it is left out})."""
    deps: dict[str, str] = {}
    left_out: dict[str, str] = {}
    for dist in dists:
        name = canonicalize_name(dist.metadata["Name"])
        if name in deps or name in left_out:  # shadowed by an earlier entry of sys.path
            continue
        direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
        if name == ROOT:
            left_out[name] = "this project (the PyPI project of that name is another one)"
        elif direct_url.get("dir_info", {}).get("editable"):
            left_out[name] = f"editable install of {direct_url.get('url')}"
        else:
            deps[name] = dist.version
    return deps, left_out


def runtime_closure(dists: Iterable[metadata.Distribution]) -> set[str]:
    """Canonical names of what ROOT with RUNTIME_EXTRAS requires, transitively, as installed here
    (every installed distribution when ROOT is not installed: then nothing can be called dev-only)."""
    by_name = {canonicalize_name(d.metadata["Name"]): d for d in dists}
    if ROOT not in by_name:
        return set(by_name)
    todo = [(ROOT, extra) for extra in ("", *RUNTIME_EXTRAS)]
    seen: set[tuple[str, str]] = set()
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen or name not in by_name:
            continue
        seen.add((name, extra))
        for line in by_name[name].requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += [(canonicalize_name(req.name), e) for e in ("", *req.extras)]
    return {name for name, _ in seen} - {ROOT}


def audit(service: str) -> tuple[dict[str, Any] | None, str]:
    """Run pip-audit against this interpreter's environment; (JSON report or None, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit.json"
        proc = subprocess.run(
            [sys.executable, "-m", "pip_audit", "--skip-editable", "--progress-spinner", "off", "--desc", "on",
             "--aliases", "on", "--vulnerability-service", service, "--format", "json", "--output", str(out)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        report = json.loads(out.read_text()) if out.exists() and out.stat().st_size else None
    return report, proc.stderr.strip()


def pip_audit_verdicts(report: dict[str, Any], service: str) -> dict[str, Verdict]:
    """The distributions pip-audit audited (those it skipped are left out)."""
    verdicts = {}
    for dep in report["dependencies"]:
        if "skip_reason" not in dep:
            name = canonicalize_name(dep["name"])
            vulns = (Vuln(v["id"], tuple(v.get("aliases", ())), tuple(v["fix_versions"])) for v in dep["vulns"])
            verdicts[name] = Verdict(name, dep["version"], f"pip-audit ({service})", tuple(vulns))
    return verdicts


def fetch_project(session: requests.Session, name: str) -> tuple[dict[str, Any] | None, str]:
    """PyPI's project JSON for `name`, or (None, why not)."""
    url = PROJECT_JSON.format(name)
    try:
        response = session.get(url, timeout=TIMEOUT)
        if response.status_code != 200:
            return None, f"{url} answered {response.status_code}"
        return response.json(), ""
    except (requests.RequestException, ValueError) as exc:  # ValueError: not JSON
        return None, f"{url}: {type(exc).__name__}: {exc}"


def judge_latest(name: str, version: str, project: dict[str, Any] | None, error: str = "") -> Verdict:
    """Audit one distribution from PyPI's project JSON (None: it could not be fetched, `error` says why)."""
    info = (project or {}).get("info") or {}
    latest = info.get("version")
    if project is None or not latest:
        return Verdict(name, version, reason=error or "the project JSON names no latest release")
    try:
        is_latest = Version(version) == Version(latest)
    except InvalidVersion:
        is_latest = False
    if not is_latest:
        needs = info.get("requires_python") or ""
        with contextlib.suppress(InvalidSpecifier):
            needs = "" if SpecifierSet(needs).contains(platform.python_version()) else f", for Python {needs}"
        return Verdict(name, version, reason=f"not the latest release ({latest}{needs}), the only one it lists")
    vulns: list[Vuln] = []
    for v in project.get("vulnerabilities") or ():
        # Withdrawn advisories do not count; PyPI lists one advisory under each of its ids (PYSEC, GHSA).
        if not v.get("withdrawn") and not any(v["id"] in kept.aliases for kept in vulns):
            vulns.append(Vuln(v["id"], tuple(v.get("aliases") or ()), tuple(v.get("fixed_in") or ())))
    return Verdict(name, version, FALLBACK, tuple(vulns))


def summarize(verdicts: Iterable[Verdict], runtime: set[str], left_out: Mapping[str, str]) -> int:
    """Print the report; the exit code (see the module's docstring)."""
    verdicts = sorted(verdicts, key=lambda v: v.name)
    vulnerable = [v for v in verdicts if v.vulns]
    parts = ((f"runtime ({ROOT}[{','.join(RUNTIME_EXTRAS)}])", True), ("dev, test and packaging tools", False))
    for title, part in parts:
        mine = [v for v in verdicts if (v.name in runtime) == part]
        audited = [v for v in mine if v.source]
        by_source = ", ".join(f"{n} by {s}" for s, n in Counter(v.source for v in audited).items()) or "none"
        print(f"audit: {title}: {len(audited)} of {len(mine)} audited ({by_source})")
        for v in mine:
            if not v.source:
                print(f"  NOT audited: {v.name} {v.version}: {v.reason}")
    for name, why in sorted(left_out.items()):
        print(f"audit: left out: {name}: {why}")
    runtime_unaudited = [v for v in verdicts if v.name in runtime and not v.source]
    dev_unaudited = [v for v in verdicts if v.name not in runtime and not v.source]
    if vulnerable:
        print(f"audit: FAILED: known vulnerabilities in {len(vulnerable)} distributions:")
        for v in vulnerable:
            for vuln in v.vulns:
                aliases = ", ".join(vuln.aliases) or "none"
                fixes = ", ".join(vuln.fixed_in) or "no fix released"
                print(f"  {v.name} {v.version}: {vuln.id} (aliases: {aliases}; fixed in: {fixes}) [{v.source}]")
        return 1
    if runtime_unaudited:
        print(
            f"audit: NOT DONE (this is not a pass): {len(runtime_unaudited)} runtime dependencies could not be "
            "audited (listed above); none of the audited ones has a known vulnerability"
        )
        return 2
    if dev_unaudited:
        print(
            "audit: passed for the runtime closure (audited in full, no known vulnerabilities); WARNING: "
            f"{len(dev_unaudited)} dev, test and packaging tools could NOT be audited (listed above); "
            "the audited ones are clean"
        )
    else:
        print(f"audit: passed: all {len(verdicts)} distributions audited, no known vulnerabilities")
    return 0


def main() -> int:
    if os.environ.get("TASKFORGE_AUDIT") == "skip":
        print("audit: SKIPPED on purpose (TASKFORGE_AUDIT=skip): dependencies NOT audited")
        return 0
    dists = list(metadata.distributions())
    deps, left_out = inventory(dists)
    verdicts: dict[str, Verdict] = {}
    for service in SERVICES:
        report, stderr = audit(service)
        if report is None:
            print(f"audit: pip-audit ({service}) failed: {stderr.splitlines()[-1] if stderr else 'no report'}")
            continue
        found = pip_audit_verdicts(report, service)
        verdicts.update({name: found[name] for name in deps.keys() - verdicts.keys() if name in found})
        skipped = [d for d in report["dependencies"] if "skip_reason" in d and canonicalize_name(d["name"]) in deps]
        if skipped:
            print(f"audit: pip-audit ({service}) skipped {len(skipped)} of {len(deps)}: {skipped[0]['skip_reason']}")
        if deps.keys() <= verdicts.keys():
            break
    missing = sorted(deps.keys() - verdicts.keys())
    if missing:
        print(
            f"audit: falling back to {PROJECT_JSON.format('<name>')} for {len(missing)} distributions: it lists "
            "the vulnerabilities of a project's latest release only, so an older installed version cannot be audited"
        )
        with requests.Session() as session, ThreadPoolExecutor(8) as pool:
            fetched = zip(missing, pool.map(lambda name: fetch_project(session, name), missing), strict=True)
            verdicts.update({name: judge_latest(name, deps[name], *got) for name, got in fetched})
    return summarize(verdicts.values(), runtime_closure(dists), left_out)


if __name__ == "__main__":
    sys.exit(main())
