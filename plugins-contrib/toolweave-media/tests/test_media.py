"""The media tools end to end: the shipped OpenAI client against the scripted service,
files saved into the workspace, video jobs polled with progress, deadlines and
cancellation."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from toolweave import ErrorKind, Progress, Resources
from toolweave_media import Media, OpenAIMediaClient

from .conftest import MP4, PNG, Service, SessionFactory

pytestmark = pytest.mark.anyio

FAST = {"poll_interval_s": 0.01}


def tools(**params: Any) -> dict[str, Any]:
    return {
        "tools": [
            {"id": name, "params": params} for name in ("image_gen", "video_gen", "image_to_video")
        ]
    }


async def test_images_are_saved_with_their_metadata(
    make_session: SessionFactory, service: Service, workspace: Path
) -> None:
    """Two images land in the media folder under a name made from the prompt, with
    the service's revised prompt; a second call never replaces them; a path of the
    model's is used as given."""
    session = make_session()
    first = await session.call("image_gen", {"prompt": "A cat, painted in oils", "count": 2})
    assert first.error is None, first.text
    assert (workspace / "media" / "a-cat-painted-in-oils.png").read_bytes() == PNG
    assert (workspace / "media" / "a-cat-painted-in-oils-2.png").read_bytes() == PNG
    assert "Saved `media/a-cat-painted-in-oils.png` (72 bytes)" in first.text
    assert "revised_prompt: a cat, painted" in first.text
    again = await session.call("image_gen", {"prompt": "A cat, painted in oils"})
    assert "media/a-cat-painted-in-oils-3.png" in again.text
    named = await session.call(
        "image_gen", {"prompt": "logo", "path": "assets/logo.png", "size": "1024x1024"}
    )
    assert named.error is None, named.text
    assert (workspace / "assets" / "logo.png").read_bytes() == PNG
    (_, path, _, body) = service.requests[-1]
    assert path == "/v1/images/generations"
    assert b'"size": "1024x1024"' in body or b'"size":"1024x1024"' in body


async def test_image_problems_are_typed(
    make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """A refused prompt is invalid_params with the service's words; a path outside the
    workspace is refused before anything is written; too many images are refused."""
    session = make_session(tools(max_images=2))
    refused = await session.call("image_gen", {"prompt": "something forbidden"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS
    assert "the prompt was refused" in refused.text
    outside = await session.call("image_gen", {"prompt": "x", "path": "../escape.png"})
    assert outside.error is not None
    assert outside.error.kind is ErrorKind.PERMISSION_DENIED
    assert not (tmp_path / "escape.png").exists()
    many = await session.call("image_gen", {"prompt": "x", "count": 3})
    assert many.error is not None
    assert many.error.kind is ErrorKind.INVALID_PARAMS
    assert "at most 2 images" in many.text


async def test_video_streams_progress_and_is_saved(
    make_session: SessionFactory, service: Service, workspace: Path
) -> None:
    """The job is polled until done, each change reported as progress, then the
    video is downloaded and saved with the job's metadata."""
    session = make_session(tools(**FAST))
    items: list[Any] = []
    async with session.stream("video_gen", {"prompt": "waves at dusk", "seconds": 4}) as stream:
        async for item in stream:
            items.append(item)
    progress = [i for i in items if isinstance(i, Progress)]
    assert [p.message for p in progress] == [
        "video job video_1: queued",
        "video job video_1: in_progress",
        "video job video_1: completed",
    ]
    assert [p.progress for p in progress] == [0, 30, 100]
    result = items[-1]
    assert result.error is None, result.text
    assert (workspace / "media" / "waves-at-dusk.mp4").read_bytes() == MP4
    assert "video_id: video_1" in result.text
    assert "model: veo-3" in result.text
    assert service.deleted == []


async def test_image_to_video_sends_the_workspace_image(
    make_session: SessionFactory, service: Service, workspace: Path
) -> None:
    """The image is read from the workspace and sent as the job's input reference;
    a file that is not an image, and a missing one, are refused before any job."""
    (workspace / "still.png").write_bytes(PNG)
    (workspace / "notes.txt").write_text("words")
    session = make_session(tools(**FAST))
    made = await session.call(
        "image_to_video",
        {"prompt": "it starts to rain", "image_path": "still.png", "path": "rain.mp4"},
    )
    assert made.error is None, made.text
    assert (workspace / "rain.mp4").read_bytes() == MP4
    (request,) = service.videos
    assert (request.image, request.image_name, request.prompt) == (
        PNG,
        "still.png",
        "it starts to rain",
    )
    for args, kind in (
        ({"image_path": "notes.txt"}, ErrorKind.INVALID_PARAMS),
        ({"image_path": "nothing.png"}, ErrorKind.NOT_FOUND),
    ):
        refused = await session.call("image_to_video", {"prompt": "x", **args})
        assert refused.error is not None
        assert refused.error.kind is kind, refused.text
    assert len(service.videos) == 1


async def test_failed_job_and_deadline(
    make_session: SessionFactory, service: Service, workspace: Path
) -> None:
    """A failed job is an execution_error with the service's reason (not cancelled);
    a job still running at the deadline is a timeout and is cancelled at the service."""
    service.fail_jobs = True
    failed = await make_session(tools(**FAST)).call("video_gen", {"prompt": "x"})
    assert failed.error is not None
    assert failed.error.kind is ErrorKind.EXECUTION_ERROR
    assert "the content was refused" in failed.text
    assert service.deleted == []
    service.polls_to_finish = None
    late = await make_session(tools(poll_interval_s=0.05, timeout_s=0.3)).call(
        "video_gen", {"prompt": "y"}
    )
    assert late.error is not None
    assert late.error.kind is ErrorKind.TIMEOUT
    assert "was not ready within 0.3 s" in late.text
    assert service.deleted == ["video_2"]
    assert not (workspace / "media").exists()


async def test_cancelling_the_call_cancels_the_job(
    make_session: SessionFactory, service: Service
) -> None:
    """A call cancelled while the job runs asks the service to delete the job."""
    service.polls_to_finish = None
    session = make_session(tools(**FAST))
    with anyio.move_on_after(0.5):
        await session.call("video_gen", {"prompt": "never ends"})
    assert service.deleted == ["video_1"]


async def test_no_key_is_unavailable(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    """Without a client of the host's and without OPENAI_API_KEY the tools say how to
    set them up."""
    import toolweave_media
    from toolweave import PackManager

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    packs = PackManager(strict=True)
    packs.add("media", toolweave_media.pack)
    session = packs.builder().build().session(workspace=workspace, resources=Resources())
    result = await session.call("image_gen", {"prompt": "x"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "OPENAI_API_KEY" in result.text
    assert isinstance(session.resources.get(OpenAIMediaClient), OpenAIMediaClient)
    await session.aclose()


async def test_the_shipped_client_makes_no_videos(workspace: Path) -> None:
    """OpenAI's Videos API is gone: the shipped client says so and what to do."""
    import toolweave_media
    from toolweave import PackManager

    packs = PackManager(strict=True)
    packs.add("media", toolweave_media.pack)
    host = Resources()
    host.insert(OpenAIMediaClient(openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9")))
    session = packs.builder().build().session(workspace=workspace, resources=host)
    result = await session.call("video_gen", {"prompt": "x"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "shut down on 24 September 2026" in result.text
    assert "MediaClient" in result.text
    await session.aclose()


async def test_image_to_video_refuses_a_fifo_without_waiting(
    make_session: SessionFactory, service: Service, workspace: Path
) -> None:
    """An image path naming a FIFO is refused as not a regular file at once (nothing
    waits for a writer, neither the call nor the event loop); no job starts."""
    fifo = workspace / "pic.png"
    os.mkfifo(fifo)
    # Frees a reader stuck on the FIFO, so a regression fails instead of hanging.
    releaser = threading.Timer(25, lambda: os.close(os.open(fifo, os.O_WRONLY)))
    releaser.daemon = True
    releaser.start()
    try:
        session = make_session(tools(**FAST))
        with anyio.fail_after(20):
            refused = await session.call("image_to_video", {"prompt": "x", "image_path": "pic.png"})
    finally:
        releaser.cancel()
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS, refused.text
    assert "not a regular file" in refused.text
    assert service.videos == []


async def test_image_to_video_reads_no_more_than_the_limit(
    make_session: SessionFactory, service: Service, workspace: Path
) -> None:
    """An image over ``max_bytes`` is refused having read at most the limit plus one
    byte, even when its size looked small when it was opened."""
    (workspace / "big.png").write_bytes(PNG + b"\0" * 10_000)
    reads: list[int] = []
    real_read, real_fstat = os.read, os.fstat

    def counting_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        reads.append(len(data))
        return data

    def small_fstat(fd: int) -> os.stat_result:  # as if the file grew after the look
        info = list(real_fstat(fd))
        info[6] = 0  # st_size
        return os.stat_result(info)

    session = make_session(tools(max_bytes=1_000))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "read", counting_read)
        patch.setattr(os, "fstat", small_fstat)
        refused = await session.call("image_to_video", {"prompt": "x", "image_path": "big.png"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS, refused.text
    assert "over the limit" in refused.text
    assert sum(reads) <= 1_001
    assert service.videos == []


@pytest.mark.parametrize("path", ["x.png/../../evil", "new/../../evil.png"])
async def test_a_refused_path_leaves_no_folder_behind(
    make_session: SessionFactory, service: Service, workspace: Path, path: str
) -> None:
    """A path leading out of the workspace through a folder that does not exist yet is
    refused, and that folder is not created; the service is not asked."""
    session = make_session()
    refused = await session.call("image_gen", {"prompt": "x", "path": path})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED, refused.text
    assert os.listdir(workspace) == []
    assert service.requests == []


@pytest.mark.parametrize("path", ["dir/", "dir/.png", ".", "dir/.."])
async def test_a_path_naming_no_file_is_refused(
    make_session: SessionFactory, service: Service, workspace: Path, path: str
) -> None:
    """A path that names a folder rather than a file is invalid_params (no hidden
    `dir/.png` is saved), before the service is asked."""
    (workspace / "dir").mkdir()
    session = make_session()
    refused = await session.call("image_gen", {"prompt": "x", "path": path})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS, refused.text
    assert "names no file" in refused.text
    assert os.listdir(workspace / "dir") == []
    assert service.requests == []


async def test_saving_a_file_does_not_hold_up_the_event_loop(
    make_session: SessionFactory, workspace: Path
) -> None:
    """While a saved file's write is stuck (a slow file system, here a write that waits
    for the test's word), other coroutines of the host run; the file is complete once
    the write goes on."""
    entered, release, wrote = threading.Event(), threading.Event(), threading.Event()
    real_fdopen = os.fdopen

    class SlowWriter:
        def __init__(self, file: Any) -> None:
            self.file = file

        def __enter__(self) -> SlowWriter:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> int:
            entered.set()
            release.wait(10)  # hang guard: a write on the event loop blocks it this long
            written: int = self.file.write(data)
            wrote.set()
            return written

    def slow_fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        file = real_fdopen(fd, mode, *args, **kwargs)
        return SlowWriter(file) if "w" in mode else file

    session = make_session()
    ran_while_writing: list[bool] = []
    results: list[Any] = []

    async def save() -> None:
        results.append(await session.call("image_gen", {"prompt": "slow disk"}))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fdopen", slow_fdopen)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(save)
                await anyio.to_thread.run_sync(entered.wait, 20)
                # Here this coroutine runs: was the write still waiting meanwhile?
                ran_while_writing.append(not wrote.is_set())
                release.set()
    assert ran_while_writing == [True]
    (result,) = results
    assert result.error is None, result.text
    assert (workspace / "media" / "slow-disk.png").read_bytes() == PNG


class Answers:
    """A host's media client answering ``generate_image`` with what a test gives it
    (well-formed or not)."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    async def generate_image(self, request: Any) -> Any:
        return self.answer

    async def start_video(self, request: Any) -> Any:
        raise AssertionError("no video here")

    async def video_status(self, job_id: str) -> Any:
        raise AssertionError("no video here")

    async def download_video(self, job_id: str) -> Any:
        raise AssertionError("no video here")

    async def cancel_video(self, job_id: str) -> None:
        pass


async def call_with(
    answer: object, workspace: Path, arguments: dict[str, Any], **params: Any
) -> Any:
    """One ``image_gen`` call of a session over ``workspace`` whose client answers
    ``answer``."""
    import toolweave_media
    from toolweave import PackManager
    from toolweave_media import MediaClient

    packs = PackManager(strict=True)
    packs.add("media", toolweave_media.pack)
    host = Resources()
    host.insert(Answers(answer), MediaClient)  # type: ignore[type-abstract]
    session = packs.builder().build(tools(**params)).session(workspace=workspace, resources=host)
    try:
        return await session.call("image_gen", arguments)
    finally:
        await session.aclose()


def files_in(root: Path) -> list[str]:
    """Every file under ``root`` (hidden ones included), relative to it."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([Media("not bytes", "png")], "sent the file as str, not bytes"),  # type: ignore[arg-type]
        ([Media(PNG, "png"), Media(None, "png")], "sent file 2 of 2 as NoneType"),  # type: ignore[arg-type]
        (None, "returned NoneType, not a list of Media"),
        ([PNG], "returned bytes as the file, not Media"),
        ([Media(PNG, "png/../../inside")], "is not a file extension"),
        ([Media(PNG, "")], "is not a file extension"),
        ([], "returned no file"),
    ],
    ids=["str-data", "none-data", "none", "no-media", "path-extension", "no-extension", "empty"],
)
async def test_a_malformed_answer_of_the_client_saves_nothing(
    workspace: Path, answer: object, message: str
) -> None:
    """What the client sent is checked before any file is made: data that is not bytes,
    an answer that is not a list of Media, an extension that is not one, are an
    execution error, and no file (not even an empty one) is left."""
    result = await call_with(answer, workspace, {"prompt": "odd answer", "count": 2})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR, result.text
    assert message in result.text
    assert files_in(workspace) == []


async def test_an_image_over_the_limit_saves_none_of_the_call(workspace: Path) -> None:
    """With two images, the second over ``max_bytes``, neither is saved and the error
    says so (sizes are checked before anything is written)."""
    answer = [Media(PNG, "png"), Media(PNG + b"\0" * 5000, "png")]
    result = await call_with(answer, workspace, {"prompt": "two cats", "count": 2}, max_bytes=1000)
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR, result.text
    assert "file 2 of 2, over the limit of 1,000; nothing was saved" in result.text
    assert files_in(workspace) == []


def failing_writes(fail_from: int) -> Any:
    """An ``os.fdopen`` whose writers, from the ``fail_from``-th on, write half their
    data and then fail as a full disk does (ENOSPC)."""
    real_fdopen = os.fdopen
    opened = 0

    class HalfWriter:
        def __init__(self, file: Any) -> None:
            self.file = file

        def __enter__(self) -> HalfWriter:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> int:
            self.file.write(data[: len(data) // 2])
            self.file.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        nonlocal opened
        file = real_fdopen(fd, mode, *args, **kwargs)
        if "w" not in mode:
            return file
        opened += 1
        return HalfWriter(file) if opened >= fail_from else file

    return fdopen


async def test_a_failed_write_leaves_no_file_under_its_name(workspace: Path) -> None:
    """A write that fails halfway (the disk is full) leaves nothing: no truncated file
    under the final name, no temporary file; the next call takes the same name."""
    big = PNG + b"\1" * 200_000
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fdopen", failing_writes(1))
        failed = await call_with(
            [Media(big, "png")], workspace, {"prompt": "p", "path": "art/pic.png"}
        )
    assert failed.error is not None
    assert failed.error.kind is ErrorKind.EXECUTION_ERROR, failed.text
    assert "`art/pic.png` could not be written: No space left on device" in failed.text
    assert files_in(workspace) == []
    again = await call_with([Media(big, "png")], workspace, {"prompt": "p", "path": "art/pic.png"})
    assert again.error is None, again.text
    assert files_in(workspace) == ["art/pic.png"]
    assert (workspace / "art" / "pic.png").read_bytes() == big


async def test_a_write_failing_partway_removes_the_files_of_the_call(workspace: Path) -> None:
    """Two images, the second's write failing: the first, already written, is removed
    again, and the error says that none was saved."""
    (workspace / "media").mkdir()
    (workspace / "media" / "two.png").write_bytes(b"kept")  # someone else's: untouched
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fdopen", failing_writes(2))
        failed = await call_with(
            [Media(PNG, "png"), Media(PNG, "png")], workspace, {"prompt": "two", "count": 2}
        )
    assert failed.error is not None
    assert failed.error.kind is ErrorKind.EXECUTION_ERROR, failed.text
    assert "No space left on device; none of the 2 files was saved" in failed.text
    assert files_in(workspace) == ["media/two.png"]
    assert (workspace / "media" / "two.png").read_bytes() == b"kept"


async def test_without_hard_links_files_are_still_saved_without_replacing(
    workspace: Path,
) -> None:
    """On a file system without hard links (``link`` refused), a file is moved into
    place over an empty file holding its name: an existing file is still never
    replaced, and no temporary file is left."""
    (workspace / "media").mkdir()
    (workspace / "media" / "pic.png").write_bytes(b"old")

    def no_link(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "link", no_link)
        made = await call_with([Media(PNG, "png")], workspace, {"prompt": "pic"})
    assert made.error is None, made.text
    assert "Saved `media/pic-2.png`" in made.text
    assert files_in(workspace) == ["media/pic-2.png", "media/pic.png"]
    assert (workspace / "media" / "pic.png").read_bytes() == b"old"
    assert (workspace / "media" / "pic-2.png").read_bytes() == PNG


async def test_a_link_at_the_name_is_not_written_through(workspace: Path) -> None:
    """A symbolic link already at the file's name (here one leading to a file that does
    not exist yet) is neither replaced nor written through: the file takes the next
    name."""
    (workspace / "media").mkdir()
    (workspace / "media" / "pic.png").symlink_to("target.png")
    made = await call_with([Media(PNG, "png")], workspace, {"prompt": "pic"})
    assert made.error is None, made.text
    assert "Saved `media/pic-2.png`" in made.text
    assert not (workspace / "media" / "target.png").exists()
    assert (workspace / "media" / "pic.png").is_symlink()


async def test_a_full_disk_leaves_no_truncated_file(tmp_path: Path) -> None:
    """On a real 64 KiB file system, an image of 200 KB fails with ENOSPC and leaves
    nothing behind (needs a tmpfs mount: root with CAP_SYS_ADMIN)."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CAP_SYS_ADMIN); not root here")
    try:
        done = await anyio.run_process(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=False
        )
    except OSError as exc:
        pytest.skip(f"cannot mount a small tmpfs: no `mount` command ({exc})")
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()
        pytest.skip(f"cannot mount a small tmpfs (needs CAP_SYS_ADMIN): {why}")
    try:
        workspace = mount / "ws"
        workspace.mkdir()
        big = PNG + b"\1" * 200_000
        failed = await call_with([Media(big, "png")], workspace, {"prompt": "p", "path": "pic.png"})
        assert failed.error is not None
        assert failed.error.kind is ErrorKind.EXECUTION_ERROR, failed.text
        assert "No space left on device" in failed.text
        assert files_in(workspace) == []
    finally:
        await anyio.run_process(["umount", str(mount)], check=False)
