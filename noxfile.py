"""Development sessions: ``nox -s tests``, ``lint``, ``types``, ``wheels``, ``bench``, ``soak``,
``demo``.

Every session gets its own venv (made by uv) holding the whole workspace, every member
installed editable, plus the ``dev`` dependency group, exactly as ``uv.lock`` pins them.
Under ``CI`` the lock must be current (``uv sync --locked``); elsewhere uv refreshes it
when a member's dependencies changed, as ``uv run`` does.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent

nox.needs_version = ">=2024.10"
nox.options.default_venv_backend = "uv"
nox.options.sessions = ["lint", "types", "tests"]
nox.options.error_on_external_run = True


def _sync(session: nox.Session) -> None:
    """Install the workspace and the dev group into the session's venv."""
    command = ["uv", "sync", "--all-packages", "--group", "dev"]
    if os.environ.get("CI"):
        command.append("--locked")
    session.run_install(
        *command,
        env={"UV_PROJECT_ENVIRONMENT": str(session.virtualenv.location)},
        external=True,
    )


def _typed_sources() -> list[str]:
    """core/src, every pack's src, the pack template's src and the benchmarks."""
    sources = [ROOT / "core" / "src"]
    for folder in ("plugins-builtin", "plugins-contrib"):
        sources += sorted(ROOT.glob(f"{folder}/*/src"))
    sources += [ROOT / "benchmarks" / "run.py", ROOT / "benchmarks" / "twbench"]
    return [str(path.relative_to(ROOT)) for path in sources]


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite (arguments go to pytest: ``nox -s tests -- -k loader``)."""
    _sync(session)
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff's lint rules and its formatter in check mode; the core's layer contract."""
    _sync(session)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")


@nox.session
def types(session: nox.Session) -> None:
    """mypy in strict mode over core, every pack and the benchmarks."""
    _sync(session)
    session.run("mypy", *_typed_sources(), *session.posargs)


@nox.session
def wheels(session: nox.Session) -> None:
    """Only the wheel tests: build wheels, pip-install them into a fresh venv, load packs."""
    _sync(session)
    session.run("python", "-m", "pytest", "tests/test_wheels.py", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmarks against peer frameworks (arguments go to ``benchmarks/run.py``)."""
    _sync(session)
    session.install("-r", "benchmarks/requirements.txt")
    session.install("--no-deps", "-r", "benchmarks/requirements-data.txt")
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session
def soak(session: nox.Session) -> None:
    """The load figures and the long soaks of ``tests/robustness`` and the packs' tests
    (tests marked ``soak``);
    they print their figures and write them to ``benchmarks/SOAK.md``. The mixed soak
    runs 30 minutes unless told otherwise: ``nox -s soak -- --soak-minutes 2``."""
    _sync(session)
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--soak-minutes", type=float, default=30.0)
    known, rest = parser.parse_known_args(session.posargs)
    minutes = known.soak_minutes
    args = ["--soak-minutes", f"{minutes:g}", *rest]
    # pytest-timeout's 300 s per test would stop the mixed soak: give it its length.
    timeout = f"--timeout={int(minutes * 60) + 900}"
    packs = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("plugins-*/*/tests"))
    session.run("python", "-m", "pytest", "tests/robustness", *packs, "-m", "soak", timeout, *args)


@nox.session
def demo(session: nox.Session) -> None:
    """The demo: ``toolweave demo`` (arguments go to the command)."""
    _sync(session)
    session.run("toolweave", "demo", *session.posargs)
