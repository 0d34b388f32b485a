"""A real HTTP server on 127.0.0.1 that serves every page the web tests fetch."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

PAGE = b"""<!doctype html>
<html><head><title>Parser guide</title>
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body>
<header><a href="/">Home</a> | <a href="/about">About</a></header>
<nav class="site-nav"><ul><li><a href="/docs">Docs menu</a></li></ul></nav>
<main>
<article id="docs">
<h1>Parsing JSON</h1>
<p>Use <code>json.loads</code> to parse text; see <a href="/ref/json.html">the reference</a>.</p>
<h2>Options</h2>
<ul><li>strict mode</li><li>object hooks</li></ul>
<table><tr><th>name</th><th>default</th></tr><tr><td>indent</td><td>None</td></tr></table>
<img src="data:image/png;base64,AAAA" alt="inline"><img src="/logo.png" alt="logo">
</article>
</main>
<aside class="sidebar">Related links sidebar</aside>
<div class="cookie-banner">We use cookies</div>
<footer>Copyright footer text</footer>
</body></html>
"""

SEARXNG = {
    "query": "",
    "results": [
        {
            "url": f"https://example.org/{n}",
            "title": f"Result   number {n}",
            "content": f"Excerpt\n of result {n}",
            "engine": "duckduckgo",
            "publishedDate": f"2026-01-0{n}T10:00:00" if n < 3 else None,
        }
        for n in range(1, 6)
    ],
    "answers": [{"answer": "42", "url": "https://example.org/answer"}],
    "suggestions": ["parse json python"],
}


@dataclass
class Server:
    """The running server: its base URL and what it saw."""

    host: str
    port: int
    stop: threading.Event
    hosts_seen: list[str] = field(default_factory=list)
    queries: list[dict[str, list[str]]] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def send(self, status: int, body: bytes, content_type: str | None, **headers: str) -> None:
            self.send_response(status)
            if content_type is not None:
                self.send_header("Content-Type", content_type)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            server.hosts_seen.append(self.headers.get("Host", ""))
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            path = parts.path
            if path == "/page.html":
                self.send(200, PAGE, "text/html; charset=utf-8")
            elif path == "/plain.txt":
                self.send(200, "plain text: café\n".encode(), "text/plain; charset=utf-8")
            elif path == "/latin1.html":
                body = "<html><body><p>Caf\xe9 cr\xe8me</p></body></html>".encode("latin-1")
                self.send(200, body, "text/html; charset=iso-8859-1")
            elif path == "/data.json":
                self.send(200, b'{"name": "toolweave", "ok": true}', "application/json")
            elif path == "/image.png":
                self.send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "image/png")
            elif path == "/untyped":
                self.send(200, b"\x00\x01\x02binary", None)
            elif path == "/cut.html":  # START, then about 20 kB, then END
                filler = b"<p>filler text</p>" * 1_000
                body = b"<html><body><p>START</p>" + filler + b"<p>END</p></body></html>"
                self.send(200, body, "text/html; charset=utf-8")
            elif path == "/deep.html":  # ?depth=N nested <div>s around a link and text
                depth = int(query["depth"][0])
                inner = b'deep text <a href="/ref">a link</a>'
                body = b"<html><body>" + b"<div>" * depth + inner + b"</div>" * depth
                self.send(200, body + b"</body></html>", "text/html")
            elif path == "/big.txt":
                self.send(200, b"0123456789" * 20_000, "text/plain")
            elif path == "/slow":
                server.stop.wait(5)
                self.send(200, b"late", "text/plain")
            elif path == "/host":
                self.send(200, self.headers.get("Host", "").encode(), "text/plain")
            elif path == "/redirect":
                self.send(302, b"", "text/plain", Location=query["to"][0])
            elif path == "/login":  # sets a session cookie, then redirects
                self.send(
                    302,
                    b"",
                    "text/plain",
                    Location=query["to"][0],
                    Set_Cookie="sid=SECRET123; Path=/",
                )
            elif path == "/cookie":
                self.send(200, (self.headers.get("Cookie") or "no cookie").encode(), "text/plain")
            elif path.startswith("/loop/"):
                n = int(path.rsplit("/", 1)[1])
                self.send(302, b"", "text/plain", Location=f"/loop/{n + 1}")
            elif path.startswith("/status/"):
                status = int(path.rsplit("/", 1)[1])
                self.send(status, f"status page {status}".encode(), "text/plain")
            elif path == "/search":
                server.queries.append(query)
                if query.get("format") != ["json"]:
                    self.send(403, b"Forbidden", "text/html")
                else:
                    data = dict(SEARXNG, query=query["q"][0])
                    self.send(200, json.dumps(data).encode(), "application/json")
            elif path == "/not-json/search":
                self.send(200, b"<html>searx html page</html>", "text/html")
            else:
                self.send(404, b"no such page", "text/plain")

    return Handler


@pytest.fixture
def server() -> Iterator[Server]:
    """A threading HTTP server on 127.0.0.1, stopped after the test."""
    state = Server("127.0.0.1", 0, threading.Event())
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """The same server over TLS, with a certificate for the name ``secure.test`` only
    (self-signed, made by the openssl command); yields it and the certificate's file."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=secure.test",
            "-addext", "subjectAltName=DNS:secure.test",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    state = Server("127.0.0.1", 0, threading.Event())
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state, cert
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    path = tmp_path / "ws"
    path.mkdir()
    return path
