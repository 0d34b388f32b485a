"""Fixtures of the media pack's tests: a scripted HTTP server on 127.0.0.1 that speaks
the shapes of OpenAI's Images API, and sessions whose media client is the shipped
:class:`OpenAIMediaClient` pointed at it, with video jobs as a host's client gives them
(OpenAI's Videos API is shut down)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openai
import pytest
import toolweave_media
from toolweave import PackManager, Resources, Session
from toolweave_media import Media, MediaClient, OpenAIMediaClient, VideoJob, VideoRequest

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
"""The bytes the server sends as an image."""
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x01" * 256
"""The bytes the server sends as a video."""


@dataclass
class Service:
    """What the scripted service saw and how it behaves.

    Attributes:
        requests: (method, path, content type, body) of every HTTP request.
        videos: Every video request the host's client got.
        polls_to_finish: How many status reads a job takes to complete; ``None``: never.
        fail_jobs: Jobs end as ``failed`` instead.
        deleted: Ids of the jobs cancelled.
    """

    requests: list[tuple[str, str, str, bytes]] = field(default_factory=list)
    videos: list[VideoRequest] = field(default_factory=list)
    polls_to_finish: int | None = 2
    fail_jobs: bool = False
    deleted: list[str] = field(default_factory=list)
    polls: dict[str, int] = field(default_factory=dict)
    url: str = ""


class HostClient(OpenAIMediaClient):
    """What a host with a video service gives its sessions: the shipped client for
    images (over HTTP, to the scripted service), and video jobs of its own (here the
    service's job table, which moves on with every status read)."""

    def __init__(self, sdk: openai.AsyncOpenAI, service: Service) -> None:
        super().__init__(sdk)
        self.service = service

    async def start_video(self, request: VideoRequest) -> VideoJob:
        self.service.videos.append(request)
        job = f"video_{len(self.service.polls) + 1}"
        self.service.polls[job] = 0
        return VideoJob(job, "queued", 0, metadata={"model": request.model or "veo-3"})

    async def video_status(self, job_id: str) -> VideoJob:
        service = self.service
        service.polls[job_id] += 1
        done = (
            service.polls_to_finish is not None and service.polls[job_id] >= service.polls_to_finish
        )
        if done and service.fail_jobs:
            return VideoJob(job_id, "failed", 40, error="the content was refused")
        if done:
            return VideoJob(job_id, "completed", 100, metadata={"seconds": 4})
        return VideoJob(job_id, "in_progress", min(90, 30 * service.polls[job_id]))

    async def download_video(self, job_id: str) -> Media:
        return Media(MP4, "mp4", {})

    async def cancel_video(self, job_id: str) -> None:
        self.service.deleted.append(job_id)


def _handler(service: Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: Any, kind: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            kind = self.headers.get("Content-Type", "")
            service.requests.append((self.command, self.path, kind, body))
            return body

        def do_POST(self) -> None:
            body = self._record()
            if self.path == "/v1/images/generations":
                args = json.loads(body)
                if "forbidden" in args["prompt"]:
                    error = {"message": "the prompt was refused", "type": "invalid_request_error"}
                    self._reply(400, {"error": error})
                    return
                image = {
                    "b64_json": base64.b64encode(PNG).decode(),
                    "revised_prompt": "a cat, painted",
                }
                self._reply(
                    200,
                    {"created": 1, "data": [image] * args.get("n", 1), "output_format": "png",
                     "size": args.get("size", "1024x1024")},
                )  # fmt: skip
            else:
                self._reply(404, {"error": {"message": "no such route", "type": "not_found"}})

    return Handler


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def service() -> Iterator[Service]:
    """The scripted media service, running on a free port of 127.0.0.1."""
    state = Service()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


SessionFactory = Callable[..., Session]


@pytest.fixture
async def make_session(service: Service, workspace: Path) -> AsyncIterator[SessionFactory]:
    """Sessions of the media pack whose client is the shipped one, on the service."""
    made: list[Session] = []

    def make(config: dict[str, Any] | None = None) -> Session:
        packs = PackManager(strict=True)
        packs.add("media", toolweave_media.pack)
        host = Resources()
        sdk = openai.AsyncOpenAI(api_key="test-key", base_url=service.url, max_retries=0)
        host.insert(HostClient(sdk, service), MediaClient)  # type: ignore[type-abstract]
        session = packs.builder().build(config).session(workspace=workspace, resources=host)
        made.append(session)
        return session

    yield make
    for session in made:
        await session.aclose()
