"""The per-application state every module reaches through :func:`console`."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app

from .db import Database
from .settings import Settings
from .throttle import SignInThrottle

__all__ = ["ConsoleState", "console"]

EXTENSION_KEY = "taskforge_console"


@dataclass(frozen=True)
class ConsoleState:
    """Settings, the database (pool) and the sign-in throttle of one console application."""

    settings: Settings
    db: Database
    throttle: SignInThrottle


def console(app: Flask | None = None) -> ConsoleState:
    """The :class:`ConsoleState` of ``app`` (default: the current application)."""
    target = app if app is not None else current_app
    state: ConsoleState = target.extensions[EXTENSION_KEY]
    return state
