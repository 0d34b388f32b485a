"""Rate limits per session, per tool and per role on both center stores."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError
from toolweave import ErrorKind, Session
from toolweave.center import Center
from toolweave.observe import RateLimiter, RateLimitHook, RateLimits, parse_rates

pytest.importorskip("pyrate_limiter")


def test_rates_are_read_in_every_documented_form() -> None:
    """calls/window in words, abbreviations, multiples and lists."""
    assert [(r.limit, r.window_ms) for r in parse_rates("60/minute")] == [(60, 60_000)]
    assert [(r.limit, r.window_ms) for r in parse_rates("10 per 5 seconds")] == [(10, 5_000)]
    assert [(r.limit, r.window_ms) for r in parse_rates("5/2s")] == [(5, 2_000)]
    assert [(r.limit, r.window_ms) for r in parse_rates("5/second, 100/hour")] == [
        (5, 1_000),
        (100, 3_600_000),
    ]
    for bad in ("ten/minute", "5/fortnight", "0/second", "5"):
        with pytest.raises(ValueError, match="rate"):
            parse_rates(bad)


@pytest.mark.parametrize(
    ("text", "window_ms"),
    [
        ("5/2ms", 2),
        ("100/500ms", 500),
        ("1/ms", 1),
        ("1/1.5ms", 2),
        ("5/2s", 2_000),
        ("5/2 sec", 2_000),
        ("5/2secs", 2_000),
        ("5/second", 1_000),
        ("5 per 3 seconds", 3_000),
        ("5/2m", 120_000),
        ("5/2 min", 120_000),
        ("5/2mins", 120_000),
        ("5/minute", 60_000),
        ("5/2 minutes", 120_000),
        ("5/h", 3_600_000),
        ("5/2 hours", 7_200_000),
        ("5/d", 86_400_000),
        ("5/2 days", 172_800_000),
        ("5/2MS", 2),
    ],
)
def test_every_unit_is_read_as_written(text: str, window_ms: int) -> None:
    """``ms`` is milliseconds (it was read as minutes: ``m`` and a plural ``s``)."""
    limit = int(text.split("/")[0].split(" ")[0])
    assert [(r.limit, r.window_ms) for r in parse_rates(text)] == [(limit, window_ms)]


@pytest.mark.parametrize(
    "text", ["5/2mss", "5/2hs", "5/2ds", "5/msec", "5/2y", "5/2 fortnights", "5/2 m s"]
)
def test_a_word_that_is_no_unit_is_an_error_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="is not a rate") as raised:
        parse_rates(text)
    assert "units: ms, s," in str(raised.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("99999999999999999999/minute", "at most 9223372036854775807 calls"),
        ("9223372036854775808/s", "at most 9223372036854775807 calls"),
        ("1" + "0" * 5000 + "/s", "at most 9223372036854775807 calls"),
        ("1/99999999999999999999 d", "at most 10 years"),
        ("1/3661 days", "at most 10 years"),
        ("1/" + "9" * 400 + "s", "at most 10 years"),
        ("1/0.0001ms", "at least 1 ms"),
    ],
)
def test_limits_and_windows_the_store_cannot_hold_are_refused_up_front(
    text: str, message: str
) -> None:
    """A limit above what SQLite's INTEGER holds, or a window over ten years, fails
    validation with the spec named (it used to validate, then make every limited call
    on SQLite ``unavailable``); the largest allowed ones still count."""
    with pytest.raises(ValueError, match=message):
        parse_rates(text)
    with pytest.raises(ValidationError, match="bash") as raised:
        RateLimits.model_validate({"per_tool": {"bash": text}})
    assert len(str(raised.value)) < 2000
    assert [(r.limit, r.window_ms) for r in parse_rates(f"{2**63 - 1}/3660 days")] == [
        (2**63 - 1, 3660 * 86_400_000)
    ]


def test_the_largest_rates_count_on_both_stores(center_url: str, clock: Any) -> None:
    """A limit of 2**63-1 calls and a ten-year window count on SQLite and Redis alike:
    calls are admitted, not refused as unavailable."""
    limiter = RateLimiter(
        center_url,
        {"per_tool": {"add": f"{2**63 - 1}/minute", "echo": "1/3660 days"}},
        clock=clock,
    )
    assert limiter.check("add", "s1") is None
    assert limiter.check("add", "s1") is None
    assert limiter.check("echo", "s1") is None
    refused = limiter.check("echo", "s1")
    assert refused is not None
    assert refused.kind is ErrorKind.RATE_LIMITED
    limiter.close()


def test_a_millisecond_window_is_milliseconds(tmp_path: Path, clock: Any) -> None:
    """``1/10ms``: a second call 50 ms later is admitted (it was refused for ten
    minutes)."""
    limiter = RateLimiter(tmp_path / "center.db", {"per_tool": {"add": "1/10ms"}}, clock=clock)
    assert limiter.check("add", "s1") is None
    assert limiter.check("add", "s1") is not None
    clock.now += 50
    assert limiter.check("add", "s1") is None
    limiter.close()


def test_a_bad_spec_is_refused_with_its_key() -> None:
    """A spec names the entry whose rate cannot be read, and unknown keys are errors."""
    with pytest.raises(ValidationError, match="bash"):
        RateLimits.model_validate({"per_tool": {"bash": "often"}})
    with pytest.raises(ValidationError, match="per_day"):
        RateLimits.model_validate({"per_day": "5/day"})


def test_counters_a_call_counts_against() -> None:
    """A call counts against its role's, its tool's (or '*') and its session's counters."""
    limits = RateLimits.model_validate(
        {
            "per_session": "60/minute",
            "per_tool": {"add": "10/minute", "*": "100/hour"},
            "per_role": {"common_user": "100/hour"},
        }
    )
    scopes = [(s, k) for s, k, _ in limits.for_call("add", "s1", "common_user")]
    assert scopes == [
        ("per_role", "role:common_user"),
        ("per_tool", "tool:add"),
        ("per_session", "session:s1"),
    ]
    assert [k for _, k, _ in limits.for_call("echo", "s1", "admin")] == ["tool:echo", "session:s1"]


def _limited(
    center: Center, session: Session, spec: dict[str, Any], clock: Any, role: str | None = None
) -> RateLimitHook:
    center.attach(session, role=role)
    return RateLimiter(center, spec, clock=clock).attach(session)


@pytest.mark.anyio
async def test_accuracy_within_ten_percent_on_a_simulated_clock(
    center: Center, session_factory: Callable[..., Session], clock: Any
) -> None:
    """20 calls per 2 s, asked every 25 ms for 10 s: 100 admitted (±10 %), never more
    than 20 in any 2 s window."""
    session = session_factory()
    _limited(center, session, {"per_session": "20 per 2 seconds"}, clock)
    admitted: list[int] = []
    for i in range(400):
        result = await session.call("add", {"a": 1, "b": i})
        if result.ok:
            admitted.append(clock.now)
        else:
            assert result.error is not None
            assert result.error.kind is ErrorKind.RATE_LIMITED
        clock.now += 25
    assert 90 <= len(admitted) <= 110
    for i, at in enumerate(admitted):
        assert sum(1 for other in admitted[i:] if other < at + 2000) <= 20


@pytest.mark.anyio
async def test_accuracy_within_ten_percent_on_the_real_clock(
    center: Center, session_factory: Callable[..., Session]
) -> None:
    """10 calls per second, asked as fast as a 5 ms pause allows for 3 s: 30 (±10 %)."""
    session = session_factory()
    center.attach(session)
    RateLimiter(center, {"per_tool": {"add": "10/second"}}).attach(session)
    admitted = 0
    started = time.monotonic()
    while time.monotonic() - started < 3.0:
        if (await session.call("add", {"a": 1, "b": 2})).ok:
            admitted += 1
        await anyio.sleep(0.005)
    assert 27 <= admitted <= 33


@pytest.mark.anyio
async def test_time_to_retry_is_the_wait_until_a_call_leaves_the_window(
    center: Center, session_factory: Callable[..., Session], clock: Any
) -> None:
    """3 per second: the 4th call, 300 ms after the first, waits 0.701 s; then it runs."""
    session = session_factory()
    _limited(center, session, {"per_tool": {"add": "3/second"}}, clock)
    for _ in range(3):
        assert (await session.call("add", {"a": 1, "b": 1})).ok
        clock.now += 100
    refused = await session.call("add", {"a": 1, "b": 1}, "call-4")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.RATE_LIMITED
    assert refused.error.data == {"retry_after": 0.701, "scope": "per_tool", "limit": "3/second"}
    assert "3/second" in refused.text
    assert "0.7 s" in refused.text
    assert refused.model_text.startswith("rate_limited")
    assert (await session.call("echo", {"text": "other tools run"})).ok
    clock.now += 701
    assert (await session.call("add", {"a": 1, "b": 1})).ok


@pytest.mark.anyio
async def test_a_role_limit_is_shared_by_its_sessions_and_other_roles_are_unaffected(
    center: Center, session_factory: Callable[..., Session], clock: Any
) -> None:
    """Two common_user sessions share 5 calls a minute; an admin session is not limited."""
    spec = {"per_role": {"common_user": "5/minute"}}
    limiter = RateLimiter(center, spec, clock=clock)
    users = [session_factory(), session_factory()]
    admin = session_factory()
    for s, role in ((users[0], "common_user"), (users[1], "common_user"), (admin, "admin")):
        center.attach(s, role=role)
        limiter.attach(s)
    outcomes = [(await users[i % 2].call("echo", {"text": "x"})).ok for i in range(8)]
    assert outcomes == [True] * 5 + [False] * 3
    refused = await users[1].call("echo", {"text": "x"})
    assert refused.error is not None
    assert refused.error.data["scope"] == "per_role"
    assert "common_user" in refused.text
    assert all([(await admin.call("echo", {"text": "x"})).ok for _ in range(20)])


@pytest.mark.anyio
async def test_a_tool_limit_is_shared_through_the_store(
    center_url: str, session_factory: Callable[..., Session], clock: Any
) -> None:
    """Two limiters (as two processes would) on one store count one tool together; the
    session limit stays each session's own."""
    spec = {"per_tool": {"add": "4/minute"}, "per_session": "3/minute"}
    first, second = session_factory(), session_factory()
    RateLimiter(center_url, spec, clock=clock).attach(first, role=None)
    RateLimiter(center_url, spec, clock=clock).attach(second, role=None)
    ok = [(await s.call("add", {"a": 1, "b": 1})).ok for s in (first, second, first, second)]
    assert ok == [True] * 4
    refused = await first.call("add", {"a": 1, "b": 1})
    assert refused.error is not None
    assert refused.error.data["scope"] == "per_tool"
    assert (await first.call("echo", {"text": "x"})).ok
    session_refused = await first.call("echo", {"text": "x"})
    assert session_refused.error is not None
    assert session_refused.error.data["scope"] == "per_session"


@pytest.mark.anyio
async def test_a_call_the_center_refuses_is_not_counted(
    center: Center, session_factory: Callable[..., Session], clock: Any
) -> None:
    """Calls to a disabled tool are refused by the center before the rate limit counts them."""
    session = session_factory()
    _limited(center, session, {"per_session": "2/minute"}, clock)
    center.disable("add", reason="maintenance")
    for _ in range(5):
        refused = await session.call("add", {"a": 1, "b": 1})
        assert refused.error is not None
        assert refused.error.kind is ErrorKind.UNAVAILABLE
    center.enable("add")
    assert [(await session.call("add", {"a": 1, "b": 1})).ok for _ in range(3)] == [
        True,
        True,
        False,
    ]


def test_tools_without_a_limit_get_no_hook(
    center: Center, session_factory: Callable[..., Session]
) -> None:
    """A hook applies only to entries some limit counts."""
    session = session_factory()
    hook = RateLimiter(center, {"per_tool": {"add": "1/second"}}).attach(session)
    assert hook.applies_to(session.toolset.get("add"))
    assert not hook.applies_to(session.toolset.get("echo"))


@pytest.mark.anyio
async def test_an_unreachable_store_refuses_or_lets_through_as_configured(
    tmp_path: Path, session_factory: Callable[..., Session]
) -> None:
    """Closed counters: fail_closed refuses (unavailable), otherwise the call runs."""
    closed = RateLimiter(tmp_path / "c.db", {"per_session": "5/second"})
    opened = RateLimiter(tmp_path / "c.db", {"per_session": "5/second"}, fail_closed=False)
    strict, lax = session_factory(), session_factory()
    closed.attach(strict)
    opened.attach(lax)
    closed.close()
    opened.close()
    refused = await strict.call("add", {"a": 1, "b": 1})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.UNAVAILABLE
    assert (await lax.call("add", {"a": 1, "b": 1})).ok


def test_check_counts_like_the_hook(center_url: str, clock: Any) -> None:
    """RateLimiter.check is the hook's step for code that is not a session."""
    limiter = RateLimiter(center_url, {"per_role": {"bot": "2/second"}}, clock=clock)
    assert limiter.check("add", "s1", "bot") is None
    assert limiter.check("add", "s2", "bot") is None
    refused = limiter.check("echo", "s3", "bot")
    assert refused is not None
    assert refused.kind is ErrorKind.RATE_LIMITED
    assert limiter.check("add", "s1", "human") is None
    limiter.reset()
    assert limiter.check("add", "s1", "bot") is None
    limiter.close()


def test_a_short_window_keeps_the_entries_of_a_longer_one(tmp_path: Path, clock: Any) -> None:
    """Entries leave the SQLite table by their own counter's window: 256 calls of a tool
    limited per second, counted by another limiter or after a restart, do not delete a
    tool's entries of the last hour."""
    db = tmp_path / "center.db"
    hourly = RateLimiter(db, {"per_tool": {"deploy": "3/hour"}}, clock=clock)
    fast = RateLimiter(db, {"per_tool": {"lookup": "1000/second"}}, clock=clock)
    assert [hourly.check("deploy", "s1") for _ in range(3)] == [None] * 3
    clock.now += 2_000
    assert all(fast.check("lookup", "s2") is None for _ in range(256))
    refused = hourly.check("deploy", "s1")
    assert refused is not None
    assert refused.kind is ErrorKind.RATE_LIMITED
    hourly.close()
    restarted = RateLimiter(
        db, {"per_tool": {"deploy": "3/hour", "lookup": "1000/second"}}, clock=clock
    )
    clock.now += 2_000
    assert all(restarted.check("lookup", "s2") is None for _ in range(256))
    assert restarted.check("deploy", "s1") is not None
    clock.now += 3_600_001
    assert restarted.check("deploy", "s1") is None
    restarted.close()
    fast.close()


def test_a_table_from_before_windows_were_recorded_still_counts(tmp_path: Path, clock: Any) -> None:
    """A file whose table has no window_ms column opens: the column is added, and the
    entries already there still count."""
    import sqlite3

    db = tmp_path / "center.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE toolweave_rate_log (key TEXT NOT NULL, at INTEGER NOT NULL)")
        conn.executemany(
            "INSERT INTO toolweave_rate_log VALUES (?, ?)", [("tool:deploy", clock.now)] * 3
        )
    conn.close()
    limiter = RateLimiter(db, {"per_tool": {"deploy": "3/hour"}}, clock=clock)
    assert limiter.check("deploy", "s1") is not None
    clock.now += 3_600_001
    assert limiter.check("deploy", "s1") is None
    limiter.close()
    with sqlite3.connect(db) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(toolweave_rate_log)")]
        rows = conn.execute("SELECT window_ms FROM toolweave_rate_log").fetchall()
    conn.close()
    assert columns == ["key", "at", "window_ms"]
    assert sorted(rows, key=lambda row: row[0] is not None) == [(None,)] * 3 + [(3_600_000,)]


def test_a_damaged_file_or_a_missing_folder_is_a_center_error(tmp_path: Path) -> None:
    """Opening counters on a file that is not SQLite, or in a folder that does not exist,
    raises CenterError naming the file."""
    from toolweave.errors import CenterError

    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CenterError, match=re.escape(f"{bad} is damaged")):
        RateLimiter(bad, {"per_session": "5/minute"})
    missing = tmp_path / "nowhere" / "center.db"
    with pytest.raises(CenterError, match=re.escape(f"{missing} cannot be opened")):
        RateLimiter(missing, {"per_session": "5/minute"})


@pytest.mark.anyio
async def test_a_store_failing_during_a_call_refuses_it_and_names_the_file(
    tmp_path: Path, session_factory: Callable[..., Session], caplog: pytest.LogCaptureFixture
) -> None:
    """A counter table that went missing under a running limiter: the call is refused as
    unavailable and the log names the file."""
    import sqlite3

    db = tmp_path / "center.db"
    session = session_factory()
    RateLimiter(db, {"per_session": "5/second"}).attach(session)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE toolweave_rate_log")
    conn.close()
    refused = await session.call("add", {"a": 1, "b": 1})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.UNAVAILABLE
    assert any(str(db) in record.getMessage() for record in caplog.records)


def test_a_redis_counter_keeps_an_entry_for_its_whole_window(redis_url: str) -> None:
    """On Redis (real time: the key's expiry is Redis's), an entry made well after the
    counter's first one still counts for its whole window: the key's expiry moves on
    with the entries (it was set once, from the first entry, and dropped the later
    ones early)."""
    limiter = RateLimiter(redis_url, {"per_tool": {"deploy": "2/4s"}})
    limiter.reset()
    start = time.monotonic()

    def at(second: float) -> None:
        time.sleep(max(0.0, start + second - time.monotonic()))

    assert limiter.check("deploy", "s", None) is None  # at 0 s
    at(3.0)
    assert limiter.check("deploy", "s", None) is None  # at 3 s: counts until 7 s
    at(5.5)  # the entry of 0 s has left the window; the one of 3 s has not
    assert limiter.check("deploy", "s", None) is None
    refused = limiter.check("deploy", "s", None)
    assert refused is not None
    assert refused.kind is ErrorKind.RATE_LIMITED
    limiter.close()


def test_an_unreachable_redis_is_a_center_error_naming_it_without_its_password() -> None:
    from toolweave.errors import CenterError

    with pytest.raises(CenterError, match=r"Redis at redis://\*\*\*@127\.0\.0\.1:1/0") as caught:
        RateLimiter("redis://user:hunter2@127.0.0.1:1/0", {"per_session": "5/second"})
    assert "hunter2" not in str(caught.value)
