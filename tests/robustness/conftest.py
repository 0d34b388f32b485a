"""Fixtures and options of the reliability battery: the event loop, the soak switch.

The soak tests (``soak*.py``, marked ``soak``) are left out of the normal run by the
root pytest configuration (``-m "not soak"``); ``nox -s soak`` selects them with
``-m soak``. ``--soak-minutes`` sets how long the mixed soak runs.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--soak-minutes``: the duration of the mixed soak (default 30)."""
    parser.addoption(
        "--soak-minutes",
        type=float,
        default=30.0,
        help="how long the mixed soak of tests/robustness runs, in minutes (default 30)",
    )


@pytest.fixture
def anyio_backend() -> str:
    """Run on asyncio, the loop hosts use."""
    return "asyncio"


@pytest.fixture
def soak_minutes(request: pytest.FixtureRequest) -> float:
    """The duration of the mixed soak, in minutes (``--soak-minutes``)."""
    return float(request.config.getoption("--soak-minutes"))
