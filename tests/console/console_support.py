"""Constants shared by the console tests (imported by bare name, like itest_support)."""

from __future__ import annotations

TOKEN = "test-token-" + "x" * 16
PASSWORD = "correct horse battery staple"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
