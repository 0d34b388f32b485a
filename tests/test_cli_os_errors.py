"""The command line's error line for an operating-system error: the hint about paths
only for an error about a path, and never an empty message."""

from __future__ import annotations

import errno

import pytest

pytest.importorskip("typer", reason="the cli extra is not installed")

from toolweave.cli._common import _translate

PATH_HINT = "check the path and its permissions"


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "a.toml"),
         "No such file or directory (a.toml)"),
        (PermissionError(errno.EACCES, "Permission denied", "/etc/shadow"),
         "Permission denied (/etc/shadow)"),
        (IsADirectoryError(errno.EISDIR, "Is a directory"), "Is a directory"),
        (OSError(errno.EXDEV, "Invalid cross-device link", "a", None, "b"),
         "Invalid cross-device link (a -> b)"),
    ],
)  # fmt: skip
def test_errors_about_a_path_get_the_path_hint(exc: OSError, message: str) -> None:
    translated = _translate(exc)
    assert (translated.message, translated.hint) == (message, PATH_HINT)


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (BrokenPipeError(errno.EPIPE, "Broken pipe"), "Broken pipe"),
        (ConnectionResetError("Connection lost"), "Connection lost"),
        (BrokenPipeError(), "BrokenPipeError"),
    ],
)
def test_a_connection_that_went_away_is_not_about_a_path(exc: OSError, message: str) -> None:
    """Before, ``toolweave serve`` whose client went away said ``error: Connection
    lost`` (or an empty ``error:``) with ``hint: check the path and its permissions``."""
    translated = _translate(exc)
    assert translated.message == message
    assert translated.hint == "the other end of a pipe or connection went away"


def test_other_os_errors_get_no_hint() -> None:
    translated = _translate(OSError(errno.ENOSPC, "No space left on device"))
    assert (translated.message, translated.hint) == ("No space left on device", "")
