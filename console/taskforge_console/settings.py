"""Console settings: one frozen dataclass, from arguments or the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from taskforge import pooling

__all__ = [
    "ENV_PASSWORD",
    "ENV_READ_DSN",
    "ENV_SECRET_KEY",
    "ENV_TOKEN",
    "Settings",
    "SettingsError",
    "normalize_prefix",
]

#: Bearer token for the JSON API (and accepted on the sign-in page when no password is set).
ENV_TOKEN = "TASKFORGE_CONSOLE_TOKEN"
#: Password of the sign-in page.
ENV_PASSWORD = "TASKFORGE_CONSOLE_PASSWORD"
#: Key that signs session cookies; a random key per process when unset (sessions end on restart).
ENV_SECRET_KEY = "TASKFORGE_CONSOLE_SECRET_KEY"
#: Connection string of a hot standby the console reads from (``--read-dsn`` of ``taskforge console``).
ENV_READ_DSN = "TASKFORGE_CONSOLE_READ_DSN"


class SettingsError(ValueError):
    """A setting that cannot work; ``str()`` names the setting."""


def normalize_prefix(prefix: str | None) -> str:
    """``"tasks/"`` -> ``"/tasks"``; ``""``, ``"/"`` and ``None`` -> ``""`` (mounted at the root).

    Raises :class:`SettingsError` for characters a URL path segment should not hold."""
    if not prefix or prefix.strip("/") == "":
        return ""
    cleaned = "/" + prefix.strip("/")
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")
    bad = sorted(set(cleaned) - allowed)
    if bad or "//" in cleaned:
        raise SettingsError(f"prefix: {prefix!r} must be a URL path such as /tasks (letters, digits, - . _ ~ /)")
    return cleaned


@dataclass(frozen=True)
class Settings:
    """What the console needs to run.

    - ``dsn``: libpq connection string of a login role holding ``taskforge_console``.
    - ``prefix``: URL path the console is mounted under (``""`` = the root, ``"/tasks"``).
    - ``token``: bearer token for ``/api/*`` (``Authorization: Bearer <token>``); ``None`` = none.
    - ``password``: password of the sign-in page; ``None`` = none. With neither a token nor a
      password the console is open (``taskforge console`` then binds to loopback only).
    - ``read_only``: hide and refuse every action (403), for pages and API alike.
    - ``statement_timeout_ms``: limit of every read the console sends (database-side
      ``statement_timeout``, milliseconds, default 2000).
    - ``action_timeout_ms``: limit of one action (submit, cancel, retry, pause; milliseconds).
    - ``max_content_length``: largest request body accepted (bytes, default 2 MiB, so a payload of
      the database's 1 MiB limit fits; larger is 413).
    - ``secret_key``: signs session cookies (random per process when ``None``).
    - ``secure_cookies``: mark cookies ``Secure`` (set it when served over HTTPS).
    - ``proxy_hops``: how many reverse proxies in front set ``X-Forwarded-*`` headers (0 = trust
      none); see docs/console.md, "Behind a reverse proxy".
    - ``pool_min_size`` / ``pool_max_size``: the psycopg connection pool's size.
    - ``pooler``: what ``dsn`` reaches: ``none`` (the server, or a pooler in session mode) or
      ``transaction`` (PgBouncer in transaction mode: nothing prepared, the read settings set per
      transaction instead of per session; :mod:`taskforge.pooling`). Empty (the default): ``$TASKFORGE_POOLER``,
      else ``none``. It applies to ``read_dsn`` too.
    - ``read_dsn``: libpq connection string of a hot standby (streaming replica) of the same
      database; ``None`` = read from ``dsn``. Pages, ``/metrics`` and the API's reads go there,
      every action still goes to ``dsn``; when the standby cannot be reached the reads go to
      ``dsn`` and say so (:class:`taskforge_console.db.Database`, docs/console.md "Reading from a
      hot standby").
    """

    dsn: str
    prefix: str = ""
    token: str | None = None
    password: str | None = None
    read_only: bool = False
    statement_timeout_ms: int = 2000
    action_timeout_ms: int = 30000
    max_content_length: int = 2 * 1024 * 1024
    secret_key: str | None = None
    secure_cookies: bool = False
    proxy_hops: int = 0
    pool_min_size: int = 1
    pool_max_size: int = 8
    pooler: str = ""
    read_dsn: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix", normalize_prefix(self.prefix))
        try:
            object.__setattr__(self, "pooler", pooling.resolve_pooler(self.pooler))
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        for name in ("token", "password", "secret_key", "read_dsn"):
            value = getattr(self, name)
            if value is not None and value.strip() == "":
                object.__setattr__(self, name, None)  # an empty variable means "not set"
        if self.token is not None and len(self.token) < 16:
            raise SettingsError(f"token ({ENV_TOKEN}): must be at least 16 characters")
        for name, low in (("statement_timeout_ms", 1), ("action_timeout_ms", 1), ("max_content_length", 1024)):
            if getattr(self, name) < low:
                raise SettingsError(f"{name}: must be at least {low}, got {getattr(self, name)}")
        if not 1 <= self.pool_min_size <= self.pool_max_size:
            raise SettingsError("pool_min_size/pool_max_size: need 1 <= min <= max")
        if self.proxy_hops < 0:
            raise SettingsError(f"proxy_hops: must be 0 or more, got {self.proxy_hops}")

    @property
    def auth_required(self) -> bool:
        """True when a token or a password is configured (else the console is open)."""
        return self.token is not None or self.password is not None

    @classmethod
    def from_env(cls, dsn: str, **overrides: object) -> Settings:
        """Settings with token, password, secret key and read DSN from the environment
        (:data:`ENV_TOKEN`, :data:`ENV_PASSWORD`, :data:`ENV_SECRET_KEY`, :data:`ENV_READ_DSN`),
        then ``overrides`` (``None`` values are ignored)."""
        values: dict[str, object] = {
            "token": os.environ.get(ENV_TOKEN),
            "password": os.environ.get(ENV_PASSWORD),
            "secret_key": os.environ.get(ENV_SECRET_KEY),
            "read_dsn": os.environ.get(ENV_READ_DSN),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(dsn=dsn, **values)  # type: ignore[arg-type]
