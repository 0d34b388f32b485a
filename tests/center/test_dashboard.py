"""The operator's dashboard in a real browser: Debian's chromium, driven by Playwright,
against the admin app served by uvicorn on a free loopback port.

The screenshots in ``docs/images/dashboard-*.png`` come from these tests: they are
written there when ``TOOLWEAVE_SCREENSHOTS=1`` is set (else into the test's temporary
folder, so a test run leaves the work tree as it was).
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from toolweave import ToolSet
from toolweave.center import BreakerSettings, Center
from toolweave.center._admin import admin_app

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CONFTEST = Path(__file__).with_name("conftest.py")
SECRET = "dashboard-secret-0123456789"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Chromium's flags on a machine without a network (Playwright adds --headless)."""
WAIT = 5_000
"""Milliseconds the browser assertions wait."""


def _chromium() -> str | None:
    found = shutil.which("chromium")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    return found


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless chromium for the module (a fresh profile folder)."""
    chromium = _chromium()
    missing = None if chromium else "Debian's chromium is not installed (apt-get install chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = missing or "playwright is not installed (the dev dependency group has it)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the dashboard tests need a browser under CI: {missing}")
        pytest.skip(missing)
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium,
            headless=True,
            args=FLAGS,
            viewport={"width": 1366, "height": 860},
        )
        context.set_default_timeout(WAIT)
        yield context
        context.close()


@pytest.fixture
def shots(tmp_path: Path) -> Callable[[str], Path]:
    """Where a screenshot named ``dashboard-<name>.png`` goes."""
    folder = ROOT / "docs" / "images" if os.environ.get("TOOLWEAVE_SCREENSHOTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return lambda name: folder / f"dashboard-{name}.png"


class Served:
    """The admin app on 127.0.0.1 in a uvicorn thread."""

    def __init__(self, center: Center, tokens: dict[str, str] | None) -> None:
        import uvicorn

        config = uvicorn.Config(
            admin_app(center, tokens=tokens, heartbeat=1.0),
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert self.thread.is_alive(), "uvicorn stopped"
            assert time.monotonic() < deadline, "uvicorn did not start within 10 s"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "center.db"


@pytest.fixture
def center(db: Path, toolset: ToolSet) -> Iterator[Center]:
    """An SQLite center that knows the conftest's tools (a session attached)."""
    c = Center.open(db)
    c.attach(toolset.session(), role="agent", groups={"write": ["ops"], "boom": ["ops"]})
    yield c
    c.close()


@pytest.fixture
def serve(center: Center) -> Iterator[Callable[..., str]]:
    """Serves the center's admin app; returns its base URL."""
    started: list[Served] = []

    def start(tokens: dict[str, str] | None = None) -> str:
        started.append(Served(center, tokens))
        return started[-1].url

    yield start
    for served in started:
        served.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh tab (its own sessionStorage), closed before the server stops."""
    tab = browser.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    tab.close()
    assert not errors, f"the page's JavaScript failed: {errors}"


def _expect() -> Any:
    from playwright.sync_api import expect

    return expect


def _call(session: Any, name: str, arguments: str) -> Any:
    """A session call, on a thread of its own (Playwright's loop holds this one)."""
    done: list[Any] = []
    worker = threading.Thread(
        target=lambda: done.append(anyio.run(session.call, name, arguments, "c"))
    )
    worker.start()
    worker.join(timeout=30)
    return done[0]


def _row(page: Any, tool: str) -> Any:
    return page.locator(f'#tools tr[data-tool="{tool}"]')


CHILD = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("center_conftest", sys.argv[2])
tools = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tools)
from toolweave.center import Center

center = Center.open(sys.argv[1])
session = tools.make_toolset().session()
center.attach(session, role="agent")
names = lambda: sorted(d["name"] for d in session.definitions("neutral"))
print("READY", *names(), flush=True)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    if "echo" not in names():
        print("GONE", *names(), flush=True)
        break
    time.sleep(0.05)
center.close()
"""


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line.strip())

    threading.Thread(target=pump, daemon=True).start()
    return out


def test_disable_in_the_browser_reaches_a_session_in_another_process(
    center: Center, db: Path, serve: Callable[..., str], page: Any
) -> None:
    """Clicking Disable takes the tool out of a session attached in another process
    within a few seconds, and the dashboard shows it disabled."""
    expect = _expect()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(CONFTEST)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines = _lines(proc)
        url = serve()
        page.goto(url)
        expect(_row(page, "echo")).to_have_attribute("data-status", "enabled")
        expect(page.locator("#feed-state")).to_have_text("live")
        ready = lines.get(timeout=20)
        assert ready.split()[0] == "READY", ready
        assert "echo" in ready.split(), ready
        page.fill("#reason", "incident 42")

        _row(page, "echo").locator('button[data-action="disable"]').click()
        clicked = time.monotonic()
        gone = lines.get(timeout=10)
        elapsed = time.monotonic() - clicked
        assert gone.split()[0] == "GONE", gone
        assert "echo" not in gone.split(), gone
        assert elapsed < 5, f"the other process saw the disable after {elapsed:.1f} s"

        expect(_row(page, "echo")).to_have_attribute("data-status", "disabled")
        expect(_row(page, "echo")).to_contain_text("incident 42")
        expect(_row(page, "echo").locator('button[data-action="enable"]')).to_be_visible()
        (change,) = center.audit(type="change", tool="echo", outcome="disable")
        assert (change.actor, change.reason) == ("admin-api", "incident 42")
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_token_is_asked_for_and_then_used(
    center: Center, serve: Callable[..., str], page: Any, shots: Callable[[str], Path]
) -> None:
    """With tokens set, the page shows the API's 401 until the operator enters the
    token; then the tools, the feed and the actions work, audited with its name."""
    expect = _expect()
    url = serve({"alice": SECRET})
    page.goto(url)
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error-text")).to_contain_text("401 Unauthorized")
    expect(page.locator("#feed-state")).to_contain_text("disconnected")
    assert page.locator("#tools tr").count() == 0
    page.screenshot(path=shots("token"))

    page.fill("#token", "not-the-secret-at-all")
    page.click("#token-save")
    expect(page.locator("#error-text")).to_contain_text("401")

    page.fill("#token", SECRET)
    page.click("#token-save")
    expect(_row(page, "write")).to_be_visible()
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#feed-state")).to_have_text("live")
    assert page.evaluate("sessionStorage.getItem('toolweave.center.token')") == SECRET

    _row(page, "write").locator('button[data-action="disable"]').click()
    expect(_row(page, "write")).to_have_attribute("data-status", "disabled")
    expect(page.locator('#feed li[data-target="write"]')).to_be_visible()
    (change,) = center.audit(type="change", tool="write", outcome="disable")
    assert change.actor == "alice"

    page.reload()  # the token stays for the tab's life
    expect(_row(page, "write")).to_have_attribute("data-status", "disabled")
    page.click("#token-forget")
    expect(page.locator("#error-text")).to_contain_text("401")


def test_rollout_controls(
    center: Center, serve: Callable[..., str], page: Any, shots: Callable[[str], Path]
) -> None:
    """Roll out a version to a percentage, see the API's refusal of a bad one, widen,
    pin and roll back, abort."""
    expect = _expect()
    page.goto(serve())
    row = _row(page, "echo")
    row.locator('select[name="version"]').select_option("2")
    row.locator('input[name="percent"]').fill("25")
    row.locator('button[data-action="rollout"]').click()
    expect(row.locator(".rollout")).to_have_text("rolling out 2 to 25 %")
    assert center.tool("echo").rollout == ("2", 25.0)
    page.locator("#tools").screenshot(path=shots("rollout"))

    row.locator('input[name="percent"]').fill("150")
    row.locator('button[data-action="rollout"]').click()
    expect(page.locator("#error-text")).to_contain_text("400 Bad request")
    expect(page.locator("#error-text")).to_contain_text("within 0-100")
    assert center.tool("echo").rollout == ("2", 25.0)

    row.locator('input[name="percent"]').fill("50")
    row.locator('button[data-action="rollout"]').click()
    expect(page.locator("#error")).to_be_hidden()
    expect(row.locator(".rollout")).to_have_text("rolling out 2 to 50 %")

    row.locator('button[data-action="abort"]').click()
    expect(row.locator(".rollout")).to_have_count(0)
    assert center.tool("echo").rollout is None

    row.locator('select[name="version"]').select_option("2")
    row.locator('button[data-action="pin"]').click()
    expect(row.locator(".pin")).to_have_text("pinned 2 for everyone")
    row.locator('button[data-action="rollback"]').click()
    expect(row.locator(".pin")).to_have_count(0)
    assert center.tool("echo").pins == {}
    changes = [e.outcome for e in center.audit(type="change", tool="echo")]
    assert changes == ["rollback", "pin", "abort", "rollout", "rollout", "register"]


def test_audit_tail_filters_and_breakers(
    center: Center,
    toolset: ToolSet,
    serve: Callable[..., str],
    page: Any,
    shots: Callable[[str], Path],
) -> None:
    """The audit tail narrows by tool, outcome, type and session; an open breaker
    shows in the breakers and in its tool's status."""
    expect = _expect()
    session = toolset.session()
    center.attach(session, role="agent")
    center.configure_breaker("boom", BreakerSettings(failures=2, window=60, cooldown=60))
    for name, args in [("echo", '{"text": "hi"}'), ("echo", '{"text": "yo"}'),
                       ("boom", "{}"), ("boom", "{}"), ("look", '{"path": "a"}')]:  # fmt: skip
        _call(session, name, args)
    center.flush()  # the center's thread records the breaker's opening: before bob's change
    center.disable("look", reason="maintenance", actor="bob")
    assert center.breakers()["boom"]["state"] == "open"

    page.goto(serve())
    audit = page.locator("#audit tbody tr")
    everything = len(center.audit(limit=1000))  # calls, changes, registrations
    assert everything == 12
    expect(audit).to_have_count(everything)
    page.fill('#audit-filter input[name="tool"]', "boom")
    expect(audit).to_have_count(len(center.audit(tool="boom")))
    page.fill('#audit-filter input[name="outcome"]', "error")
    expect(audit).to_have_count(2)
    for i in range(2):
        expect(audit.nth(i)).to_have_attribute("data-tool", "boom")
    page.fill('#audit-filter input[name="tool"]', "")
    page.fill('#audit-filter input[name="outcome"]', "")
    page.select_option('#audit-filter select[name="type"]', "change")
    changes = len(center.audit(type="change"))
    assert 0 < changes < everything
    # The newest entry (bob's change) heads the unfiltered table too: wait for the
    # filtered count before reading the rows.
    expect(audit).to_have_count(changes)
    expect(audit.first).to_contain_text("bob")
    for i in range(changes):
        expect(audit.nth(i)).to_have_attribute("data-type", "change")
    page.select_option('#audit-filter select[name="type"]', "call")
    page.fill('#audit-filter input[name="session"]', session.session_id)
    expect(audit).to_have_count(5)

    breaker = page.locator('#breakers tr[data-breaker="boom"]')
    expect(breaker).to_contain_text("open")
    expect(_row(page, "boom")).to_have_attribute("data-status", "circuit_open")
    page.select_option('#audit-filter select[name="type"]', "")
    page.fill('#audit-filter input[name="session"]', "")
    expect(audit).to_have_count(everything)
    page.screenshot(path=shots("audit"), full_page=True)


def test_reset_closes_an_open_breaker(
    center: Center, toolset: ToolSet, serve: Callable[..., str], page: Any
) -> None:
    """An open breaker shows with its Reset button, which closes it."""
    expect = _expect()
    session = toolset.session()
    center.attach(session, role="agent")
    center.configure_breaker("boom", BreakerSettings(failures=1, window=60, cooldown=60))
    _call(session, "boom", "{}")
    page.goto(serve())
    breaker = page.locator('#breakers tr[data-breaker="boom"]')
    expect(breaker.locator(".badge")).to_have_text("open")
    breaker.locator('button[data-action="reset"]').click()
    expect(page.locator("#error")).to_be_hidden()
    expect(breaker.locator(".badge")).to_have_text("closed")
    expect(_row(page, "boom")).to_have_attribute("data-status", "enabled")
    assert center.breakers()["boom"]["state"] == "closed"


def test_the_feed_shows_changes_made_by_other_clients(
    center: Center, db: Path, serve: Callable[..., str], page: Any, shots: Callable[[str], Path]
) -> None:
    """A change made through another center on the same store, and one made by another
    HTTP client, appear on the live feed and in the tools table without a reload."""
    expect = _expect()
    url = serve()
    page.goto(url)
    expect(page.locator("#feed-state")).to_have_text("live")
    expect(_row(page, "look")).to_have_attribute("data-status", "enabled")

    with Center.open(db) as other:  # as another process would
        other.disable("look", reason="from elsewhere", actor="bob")
    expect(page.locator('#feed li[data-target="look"]')).to_contain_text("disable")
    expect(_row(page, "look")).to_have_attribute("data-status", "disabled")
    expect(_row(page, "look")).to_contain_text("from elsewhere")

    answer = httpx.post(f"{url}/api/tools/echo/rollout", json={"version": "2", "percent": 10})
    assert answer.status_code == 200, answer.text
    expect(page.locator('#feed li[data-target="echo"]')).to_contain_text("rollout")
    expect(_row(page, "echo").locator(".rollout")).to_have_text("rolling out 2 to 10 %")
    expect(page.locator("#health .version")).to_have_text(str(center.version))
    page.screenshot(path=shots("overview"), full_page=True)


def test_everything_shown_is_escaped(center: Center, serve: Callable[..., str], page: Any) -> None:
    """Operator-given text (a reason) is shown as text, never run as markup."""
    expect = _expect()
    center.disable("look", reason='<img src=x onerror="window.pwned=1"><b>bold</b>')
    page.goto(serve())
    expect(_row(page, "look")).to_contain_text("<b>bold</b>")
    assert _row(page, "look").locator("img").count() == 0
    assert _row(page, "look").locator("b", has_text="bold").count() == 0
    assert page.evaluate("window.pwned") is None
