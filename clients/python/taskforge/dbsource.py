"""The SQL source tree (``db/``) and the frozen migrations built from it.

``db/functions/`` holds one file per SQL function (the source of truth DBAs read) and
``db/schema/`` the tables, views, roles and seed rows. The full build order is:

1. ``db/schema/NN_*.sql`` with NN < 50 (roles, schema, tables), by name;
2. ``db/functions/*.sql`` by name (private ``_tf_*`` helpers sort first);
3. ``db/schema/NN_*.sql`` with NN >= 50 (views, grants, seed rows, role reset), by name.

Migrations embed a frozen copy of that text (``db/migrations/frozen/``), written by
``python -m taskforge.dbsource freeze NAME`` so that applying old history always installs
what was shipped then. The drift test compares a database built from the migrations with one
built from :func:`build_sql`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

__all__ = ["build_sql", "db_dir", "freeze", "source_files"]


def db_dir() -> Path:
    """Return the ``db/`` folder: inside the installed package, else the source checkout."""
    packaged = Path(__file__).resolve().parent / "db"
    if (packaged / "functions").is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[3] / "db"
    if (checkout / "functions").is_dir():
        return checkout
    raise FileNotFoundError("taskforge: cannot find the db/ folder (neither packaged nor in a checkout)")


def _schema_files(db: Path, before_functions: bool) -> list[Path]:
    files = sorted((db / "schema").glob("[0-9][0-9]_*.sql"))
    return [f for f in files if (int(f.name[:2]) < 50) == before_functions]


def source_files(db: Path | None = None) -> list[Path]:
    """All source files in build order (list of paths)."""
    db = db or db_dir()
    return [
        *_schema_files(db, True),
        *sorted((db / "functions").glob("*.sql")),
        *_schema_files(db, False),
    ]


def build_sql(db: Path | None = None, files: list[Path] | None = None) -> str:
    """Concatenate source files (default: the full build) into one SQL script (str)."""
    db = db or db_dir()
    parts = []
    for path in files if files is not None else source_files(db):
        rel = path.relative_to(db)
        parts.append(f"-- >>> db/{rel}\n{path.read_text(encoding='utf-8').rstrip()}\n")
    return "\n".join(parts)


_MIGRATION_TEMPLATE = '''"""{description}

Applies db/migrations/frozen/{name}.sql, a frozen copy of the SQL source made by
`python -m taskforge.dbsource freeze`. Do not edit the frozen file: write a new migration.
"""

from pathlib import Path

from yoyo import step

__depends__ = {depends}

_FROZEN = Path(__file__).resolve().parent / "frozen" / "{name}.sql"


def apply(conn):
    # One simple-protocol execute: the file holds many statements and dollar-quoted bodies.
    conn.cursor().execute(_FROZEN.read_text(encoding="utf-8"))


def rollback(conn):
    conn.cursor().execute({rollback_sql})


steps = [step(apply, rollback)]
'''


def freeze(
    name: str, files: list[Path] | None, description: str, db: Path | None = None, rollback_sql: str = "SELECT 1"
) -> tuple[Path, Path]:
    """Write ``db/migrations/frozen/NAME.sql`` and ``db/migrations/NAME.py``.

    ``files`` None freezes the full build (an initial migration); otherwise only those source
    files (for example the functions a release changed). Returns the two paths written.
    """
    db = db or db_dir()
    migrations = db / "migrations"
    existing = sorted(p.stem for p in migrations.glob("[0-9][0-9][0-9][0-9]_*.py") if p.stem != name)
    body = build_sql(db, files)
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    frozen = migrations / "frozen" / f"{name}.sql"
    frozen.parent.mkdir(parents=True, exist_ok=True)
    frozen.write_text(f"-- Frozen by taskforge.dbsource (sha256 {digest}). Do not edit.\n{body}", encoding="utf-8")
    module = migrations / f"{name}.py"
    module.write_text(
        _MIGRATION_TEMPLATE.format(
            description=description,
            name=name,
            # Python literals as ruff format writes them (double quotes), so a fresh freeze passes `make lint`.
            depends="{" + json.dumps(existing[-1]) + "}" if existing else "set()",
            rollback_sql=json.dumps(rollback_sql),
        ),
        encoding="utf-8",
    )
    return frozen, module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m taskforge.dbsource")
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="print the full build SQL (schema + functions + views)")
    p_build.set_defaults(command="build")
    p_freeze = sub.add_parser("freeze", help="write a migration with a frozen copy of source files")
    p_freeze.add_argument("name", help="migration name, e.g. 0002_faster_claim")
    p_freeze.add_argument(
        "files", nargs="*", type=Path, help="source files to freeze (default: the full build, for an initial migration)"
    )
    p_freeze.add_argument("--description", default="TaskForge migration.")
    p_freeze.add_argument("--rollback-sql", default="SELECT 1")
    args = parser.parse_args(argv)
    if args.command == "build":
        sys.stdout.write(build_sql())
        return 0
    files = [f.resolve() for f in args.files] or None
    frozen, module = freeze(args.name, files, args.description, rollback_sql=args.rollback_sql)
    print(f"wrote {frozen} and {module}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
