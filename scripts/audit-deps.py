"""Audit the installed environment (.venv) for dependencies with known vulnerabilities (pip-audit).

Run by `make audit` and `.ci/run`. Exit codes: 0 every dependency was audited and none has a
known vulnerability; 1 a vulnerability was found (listed); 2 the audit could not be done (a
vulnerability service was unreachable, or did not know some dependency): that is a failure,
never a silent pass, since pip-audit itself reports "No known vulnerabilities found" when it
skipped everything. TASKFORGE_AUDIT=skip skips the audit on purpose, with a line saying so.

The services are tried in order (PyPI's JSON API, then OSV); the first that audits every
dependency decides. The editable install of taskforge itself is not on PyPI and is left out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SERVICES = ("pypi", "osv")


def audit(service: str) -> tuple[dict | None, str]:
    """Run pip-audit against this interpreter's environment; (JSON report or None, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit.json"
        proc = subprocess.run(
            [sys.executable, "-m", "pip_audit", "--skip-editable", "--progress-spinner", "off", "--desc", "on",
             "--vulnerability-service", service, "--format", "json", "--output", str(out)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        report = json.loads(out.read_text()) if out.exists() and out.stat().st_size else None
    return report, proc.stderr.strip()


def main() -> int:
    if os.environ.get("TASKFORGE_AUDIT") == "skip":
        print("pip-audit: SKIPPED on purpose (TASKFORGE_AUDIT=skip): dependencies NOT audited")
        return 0
    reasons = []
    for service in SERVICES:
        report, stderr = audit(service)
        if report is None:
            last = stderr.splitlines()[-1] if stderr else "no report"
            reasons.append(f"{service}: pip-audit failed: {last}")
            continue
        deps = report["dependencies"]
        unaudited = [d for d in deps if "skip_reason" in d and "editable" not in d["skip_reason"]]
        if unaudited:
            sample = ", ".join(f"{d['name']} {d.get('version', '')}".strip() for d in unaudited[:5])
            reasons.append(
                f"{service}: {len(unaudited)} of {len(deps)} dependencies could not be audited "
                f"({unaudited[0]['skip_reason']}; e.g. {sample})"
            )
            continue
        vulnerable = [d for d in deps if d.get("vulns")]
        audited = len(deps) - sum(1 for d in deps if "skip_reason" in d)
        if vulnerable:
            print(f"pip-audit ({service}): known vulnerabilities in {len(vulnerable)} of {audited} dependencies:")
            for dep in vulnerable:
                for vuln in dep["vulns"]:
                    fixes = ", ".join(vuln.get("fix_versions") or []) or "no fix released"
                    print(f"  {dep['name']} {dep['version']}: {vuln['id']} (fixed in: {fixes})")
            return 1
        print(f"pip-audit ({service}): {audited} dependencies audited, no known vulnerabilities")
        return 0
    print("pip-audit: the audit could NOT be done (this is not a pass):", file=sys.stderr)
    for reason in reasons:
        print(f"  {reason}", file=sys.stderr)
    print(
        "  pip-audit needs https://pypi.org/pypi/<name>/<version>/json or https://api.osv.dev; run it where "
        "they are reachable, or set TASKFORGE_AUDIT=skip to skip it on purpose.",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
