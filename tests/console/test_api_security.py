"""Who may call what: token, sign-in session, read-only mode, CSRF, the open mode's host check,
security headers, size limit, prefix mounting."""

from __future__ import annotations

import re
from typing import Any

import pytest

from taskforge_console.security import CSP

from console_support import BEARER, PASSWORD, TOKEN, FakeClock

ACTIONS = [
    ("post", "/api/tasks", {"task_type": "noop"}),
    ("post", "/api/tasks/1/cancel", None),
    ("post", "/api/tasks/1/retry", None),
    ("post", "/api/tasks/cancel", {"task_ids": [1]}),
    ("post", "/api/tasks/retry", {"task_ids": [1]}),
    ("post", "/api/queues/default/pause", None),
    ("post", "/api/queues/default/resume", None),
]
READS = ["/api/tasks", "/api/tasks/1", "/api/queues", "/api/workers", "/api/stats", "/metrics"]


def _csrf_token(client: Any, path: str = "/signin") -> str:
    html = client.get(path).get_data(as_text=True)
    match = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert match, html[:500]
    return match.group(1)


def _sign_in(client: Any, password: str = PASSWORD) -> Any:
    token = _csrf_token(client)
    return client.post("/signin", data={"password": password, "csrf_token": token})


# --- token ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", READS)
def test_api_needs_the_token(token_app: Any, clock: FakeClock, path: str) -> None:
    client = token_app.test_client()
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Authorization": f"Basic {TOKEN}"}):
        response = client.get(path, headers=headers)
        assert response.status_code == 401, (path, headers)
        assert response.get_json()["code"] == "unauthorized"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    clock.advance(1)  # the wrong token's delay (test_signin_throttle.py)
    assert client.get(path, headers=BEARER).status_code in (200, 404)


@pytest.mark.parametrize(("method", "path", "body"), ACTIONS)
def test_actions_need_the_token(token_app: Any, method: str, path: str, body: Any) -> None:
    client = token_app.test_client()
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}):
        response = getattr(client, method)(path, json=body, headers=headers)
        assert response.status_code == 401
        assert response.get_json()["code"] == "unauthorized"


def test_health_and_api_document_need_no_token(token_app: Any) -> None:
    client = token_app.test_client()
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.get_json()["status"] == "ok" and health.get_json()["schema_version"] >= 1
    assert client.get("/api/openapi.json").status_code == 200


# --- sign-in session --------------------------------------------------------------------------
def test_sign_in_session_reads_the_api_and_needs_csrf_to_act(token_app: Any, clock: FakeClock, queue: str) -> None:
    client = token_app.test_client()
    assert client.get("/").status_code == 302  # pages redirect to the sign-in page
    assert client.get("/").headers["Location"].startswith("/signin?next=")
    wrong = _sign_in(client, "not the password")
    assert wrong.status_code == 401 and "wrong password" in wrong.get_data(as_text=True)
    clock.advance(1)  # the failure's delay (test_signin_throttle.py)
    signed = _sign_in(client)
    assert signed.status_code == 302 and signed.headers["Location"] == "/"
    assert client.get("/api/tasks").status_code == 200

    refused = client.post("/api/tasks", json={"task_type": "noop", "queue": queue})
    assert refused.status_code == 400 and refused.get_json()["code"] == "csrf"
    token = _csrf_token(client, "/")
    allowed = client.post("/api/tasks", json={"task_type": "noop", "queue": queue}, headers={"X-CSRFToken": token})
    assert allowed.status_code == 201

    out = client.post("/signout", data={"csrf_token": token})
    assert out.status_code == 302
    assert client.get("/api/tasks").status_code == 401


def test_token_signs_in_when_no_password_is_set(make_app: Any) -> None:
    client = make_app(token=TOKEN).test_client()
    assert "Console token" in client.get("/signin").get_data(as_text=True)
    assert _sign_in(client, TOKEN).status_code == 302
    assert client.get("/api/stats").status_code == 200


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:x"])
def test_sign_in_never_redirects_off_site(token_app: Any, target: str) -> None:
    client = token_app.test_client()
    token = _csrf_token(client)
    response = client.post("/signin", query_string={"next": target}, data={"password": PASSWORD, "csrf_token": token})
    assert response.status_code == 302
    assert response.headers["Location"] == "/"


def test_a_form_post_without_the_csrf_token_is_refused(token_app: Any) -> None:
    client = token_app.test_client()
    response = client.post("/signin", data={"password": PASSWORD})
    assert response.status_code == 400
    assert "CSRF" in response.get_data(as_text=True)
    assert client.get("/api/tasks").status_code == 401  # not signed in
    _sign_in(client)
    assert client.post("/signout").status_code == 400  # no token: still signed in
    assert client.get("/api/tasks").status_code == 200


# --- read-only --------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path", "body"), ACTIONS)
def test_read_only_refuses_every_action(make_app: Any, admin: Any, method: str, path: str, body: Any) -> None:
    app = make_app(token=TOKEN, read_only=True)
    before = admin.execute("SELECT count(*), max(updated_at) FROM taskforge.tasks").fetchone()
    response = getattr(app.test_client(), method)(path, json=body, headers=BEARER)
    assert response.status_code == 403
    assert response.get_json()["code"] == "read_only"
    assert admin.execute("SELECT count(*), max(updated_at) FROM taskforge.tasks").fetchone() == before


def test_read_only_still_reads(make_app: Any) -> None:
    client = make_app(token=TOKEN, read_only=True).test_client()
    assert client.get("/api/tasks", headers=BEARER).status_code == 200
    assert client.get("/healthz").get_json()["read_only"] is True


# --- open mode (no token, no password) ----------------------------------------------------------
def test_open_console_takes_json_without_csrf_but_not_forms(make_app: Any, queue: str) -> None:
    client = make_app().test_client()
    assert client.post("/api/tasks", json={"task_type": "noop", "queue": queue}).status_code == 201
    # What a cross-site page can send without a CORS preflight is refused.
    form = client.post("/api/tasks/cancel", data={"task_ids": "1"})
    assert form.status_code == 400 and form.get_json()["code"] == "csrf"
    plain = client.post("/api/tasks/1/cancel", data="{}", content_type="text/plain")
    assert plain.status_code == 400 and plain.get_json()["code"] == "csrf"


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:8080", "[::1]:8080", "localhost:1"])
def test_open_console_answers_loopback_host_names(make_app: Any, host: str) -> None:
    assert make_app().test_client().get("/api/stats", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "10.0.0.1", "localhost.evil.example"])
def test_open_console_refuses_other_host_names(make_app: Any, host: str) -> None:
    response = make_app().test_client().get("/api/stats", headers={"Host": host})
    assert response.status_code == 421
    # With authentication configured any Host is fine (a proxy may use a public name).
    assert make_app(token=TOKEN).test_client().get("/api/stats", headers={"Host": host, **BEARER}).status_code == 200


# --- headers, limits, prefix ------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/signin", "/api/tasks", "/healthz", "/static/console.css", "/api/swagger", "/nope"])
def test_security_headers_everywhere(token_app: Any, path: str) -> None:
    response = token_app.test_client().get(path, headers=BEARER)
    assert response.headers["Content-Security-Policy"] == CSP
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "http" not in CSP
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"


def test_html_has_no_inline_script_or_style(token_app: Any) -> None:
    client = token_app.test_client()
    for path in ("/signin", "/api/", "/api/swagger"):
        html = client.get(path).get_data(as_text=True)
        for tag in re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S):
            assert tag.strip() == "", (path, tag[:80])
        assert "<style" not in html and " style=" not in html, path
        assert re.search(r"\son[a-z]+\s*=", html) is None, path  # no inline event handlers
        assert "http://" not in html and "https://" not in html, path  # no CDN


def test_swagger_ui_is_served_from_local_files(token_app: Any) -> None:
    client = token_app.test_client()
    html = client.get("/api/swagger").get_data(as_text=True)
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("/") for s in sources)
    for source in sources:
        assert client.get(source).status_code == 200, source


def test_bodies_over_the_limit_are_413_everywhere(make_app: Any) -> None:
    client = make_app(token=TOKEN, max_content_length=2048).test_client()
    blob = "x" * 4096
    for path in ("/api/tasks", "/api/tasks/cancel", "/api/tasks/1/cancel"):
        response = client.post(path, data=blob, content_type="application/json", headers=BEARER)
        assert response.status_code == 413, path
    assert client.post("/signin", data={"password": blob}).status_code == 413


def test_mounted_under_a_prefix(make_app: Any, queue: str) -> None:
    client = make_app(prefix="tasks/", token=TOKEN).test_client()
    assert client.get("/tasks/healthz").status_code == 200
    assert client.get("/healthz").status_code == 404
    assert client.get("/api/tasks", headers=BEARER).status_code == 404
    root = client.get("/")
    assert root.status_code == 302 and root.headers["Location"] == "/tasks/"
    created = client.post("/tasks/api/tasks", json={"task_type": "noop", "queue": queue}, headers=BEARER)
    assert created.status_code == 201
    assert created.headers["Location"] == f"/tasks/api/tasks/{created.get_json()['task_id']}"
    assert client.get("/tasks/").headers["Location"].startswith("/tasks/signin")
    signin = client.get("/tasks/signin").get_data(as_text=True)
    assert 'href="/tasks/static/console.css"' in signin
    assert client.get("/tasks/api/openapi.json").get_json()["servers"] == [{"url": "/tasks"}]
    token = _csrf_token(client, "/tasks/signin")
    signed = client.post("/tasks/signin", data={"password": TOKEN, "csrf_token": token})
    assert signed.headers["Location"] == "/tasks/"
    assert "Path=/tasks" in signed.headers["Set-Cookie"]
    assert "HttpOnly" in signed.headers["Set-Cookie"] and "SameSite=Lax" in signed.headers["Set-Cookie"]
