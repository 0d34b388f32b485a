"""Finding skills: folders holding a ``SKILL.md`` with YAML front matter, rescanned
cheaply (a listing per root, an ``lstat`` per skill) so skills added while a session runs
are found on the next look."""

from __future__ import annotations

import functools
import os
import re
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolweave.errors import describe_exception
from toolweave.resources import FileRefused
from toolweave.resources import read_regular as read_open_file

__all__ = [
    "DEFAULT_FOLDERS",
    "Skill",
    "SkillIndex",
    "SkillScan",
    "parse_skill",
    "read_regular",
    "resolve_folders",
]

DEFAULT_FOLDERS = (".skills", "~/.config/toolweave/skills")
"""Where skills are looked for: the workspace's ``.skills``, then the user's."""

SKILL_FILE = "SKILL.md"
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
"""A skill's name, matched whole (``fullmatch``: no trailing newline slips through)."""
_MAX_NAME = 64
_MAX_DESCRIPTION = 1_024
_MAX_SKILL_BYTES = 1_000_000
_MAX_YAML_DEPTH = 64
"""How deeply the front matter's collections may nest, aliases followed (the YAML
composer recurses per level; deeper front matter is refused before it is built)."""
_MAX_YAML_REPEATED = 10_000
"""How many nodes aliases (``*anchor``, ``<<: *anchor``) may repeat in all: an alias
bomb is refused rather than handed on as a structure that expands exponentially."""


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill.

    Attributes:
        name: Its name (lower case, digits and hyphens).
        description: What it is for and when to use it (what the model chooses by).
        folder: The folder holding ``SKILL.md`` and its resources.
        instructions: ``SKILL.md`` after the front matter.
        metadata: The other front-matter fields (``license``, ``allowed-tools``, ...).
    """

    name: str
    description: str
    folder: Path
    instructions: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SkillScan:
    """What one look at the folders found.

    Attributes:
        skills: The skills by name; a name found in two folders is the first folder's.
        problems: ``SKILL.md`` files that could not be used, and why.
    """

    skills: dict[str, Skill]
    problems: list[str]


class _Refused(ValueError):
    """Front matter refused for its shape (too deep, recursive, an alias bomb), not for
    its syntax."""


@functools.cache
def _loader() -> Any:
    """PyYAML's ``SafeLoader`` (plain data only: no Python objects are made) with its
    nesting bounded: a collection deeper than ``_MAX_YAML_DEPTH`` or an alias to a node
    that contains it (a recursive structure) stops the composer with an error, before
    its recursion can exhaust the stack."""
    import yaml  # type: ignore[import-untyped,unused-ignore]

    class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc,unused-ignore]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.open_anchors: list[str | None] = []
            """The anchors of the collections being composed, outermost first."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                if event.anchor in self.open_anchors:
                    raise _Refused(
                        f"its front matter has the alias *{event.anchor} inside its own "
                        f"anchor, a structure without end ({_where(event)})"
                    )
                return super().compose_node(parent, index)
            if len(self.open_anchors) >= _MAX_YAML_DEPTH:
                raise _Refused(
                    f"its front matter nests deeper than {_MAX_YAML_DEPTH} levels ({_where(event)})"
                )
            self.open_anchors.append(getattr(event, "anchor", None))
            try:
                return super().compose_node(parent, index)
            finally:
                self.open_anchors.pop()

    return BoundedLoader


def _where(event: Any) -> str:
    """Where a YAML event starts, as a person counts (the front matter's first line is
    the file's second)."""
    mark = event.start_mark
    return f"line {mark.line + 2}, column {mark.column + 1} of the file"


def _check_expansion(root: Any) -> None:
    """Refuse a composed document that aliases make too deep or too large.

    The composer shares an aliased node rather than copying it, so the document is a
    graph whose size once expanded (as anything walking the loaded data sees it) can
    be exponential in the text's. Each node is measured once, in document order (an
    anchor comes before its aliases), so this costs one step per node written.

    Raises:
        _Refused: Followed through aliases, it nests deeper than ``_MAX_YAML_DEPTH``
            levels or repeats more than ``_MAX_YAML_REPEATED`` nodes.
    """
    measured: dict[int, tuple[int, int]] = {}

    def measure(node: Any) -> tuple[int, int]:
        """The node's size and depth once expanded."""
        known = measured.get(id(node))
        if known is not None:
            return known
        size, depth = 1, 0
        children = node.value if isinstance(node.value, list) else []
        for child in children:
            for part in child if isinstance(child, tuple) else (child,):
                part_size, part_depth = measure(part)
                size += part_size
                depth = max(depth, part_depth)
        found = measured[id(node)] = (size, depth + 1)
        return found

    size, depth = measure(root)
    if depth > _MAX_YAML_DEPTH:
        raise _Refused(
            f"its front matter nests deeper than {_MAX_YAML_DEPTH} levels once its aliases "
            "are followed"
        )
    if size - len(measured) > _MAX_YAML_REPEATED:
        raise _Refused(
            f"its front matter's aliases repeat more than {_MAX_YAML_REPEATED} values "
            "(an alias bomb?)"
        )


def _load_yaml(text: str) -> Any:
    """The data of one YAML document, read safely (plain data only) and bounded.

    Raises:
        ValueError: It is not valid YAML, nests too deeply, or its aliases expand too
            far; or reading it failed in any other way (a value Python cannot hold,
            exhausted memory), so no document can take its caller down.
    """
    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except _Refused:
        raise
    except (RecursionError, MemoryError):
        raise ValueError("its front matter is too deeply nested or too large to read") from None
    except Exception as exc:  # any error of the YAML library, or of a value it builds
        raise ValueError(f"its front matter is not valid YAML ({exc})") from None
    finally:
        loader.dispose()


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The YAML front matter of ``text`` and the rest.

    Raises:
        ValueError: No front matter, it is not valid YAML (or too deep or large to read),
            or it is not a YAML mapping.
    """
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise ValueError("it does not start with YAML front matter (a line '---')")
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise ValueError("its front matter is not closed by a line '---'")
    data = _load_yaml("".join(lines[1:end]))
    if not isinstance(data, dict):
        raise ValueError("its front matter is not a mapping of fields")
    return data, "".join(lines[end + 1 :]).strip()


def read_regular(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """At most ``limit`` bytes from the start of the regular file at ``path``.

    The file is opened without blocking (a FIFO with no writer does not hang the
    caller) and must be a regular file once open: FIFOs, devices, sockets and folders
    are refused, so nothing endless such as ``/dev/zero`` is read.

    Args:
        path: The file.
        limit: The most bytes read.
        follow: Whether a symbolic link at ``path`` is followed; when not, a link is
            refused.

    Raises:
        ValueError: It is a symbolic link (``follow`` off) or not a regular file.
        OSError: It cannot be opened or read.
    """
    info = os.stat(path, follow_symlinks=follow)
    if stat.S_ISLNK(info.st_mode):
        raise ValueError("it is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("it is not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError:
        if not follow and os.path.islink(path):  # replaced by a link since the stat
            raise ValueError("it is a symbolic link") from None
        raise
    try:
        return read_open_file(fd, limit, truncate=True)
    except FileRefused:
        raise ValueError("it is not a regular file") from None
    finally:
        os.close(fd)


def parse_skill(path: Path) -> Skill:
    """The skill whose ``SKILL.md`` is at ``path``.

    ``SKILL.md`` must be a regular file, not a symbolic link (the skill's folder may be
    one): a FIFO, a device or a link is refused without being read.

    Raises:
        ValueError: Why the file is not a usable skill.
        OSError: It cannot be read.
    """
    data_bytes = read_regular(path, _MAX_SKILL_BYTES + 1, follow=False)
    if len(data_bytes) > _MAX_SKILL_BYTES:
        raise ValueError(f"it is larger than {_MAX_SKILL_BYTES} bytes")
    data, body = _front_matter(data_bytes.decode("utf-8", errors="replace"))
    name, description = data.pop("name", None), data.pop("description", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > _MAX_NAME:
        raise ValueError(
            f"its name {name!r} is not 1 to {_MAX_NAME} lower-case letters, digits and hyphens"
        )
    if not isinstance(description, str) or not description.strip():
        raise ValueError("it has no description")
    description = " ".join(description.split())[:_MAX_DESCRIPTION]
    metadata = {str(k): v for k, v in data.items()}
    return Skill(name, description, path.parent, body, metadata)


def resolve_folders(folders: Iterable[str], workspace: Path) -> tuple[Path, ...]:
    """The configured folders as absolute paths: ``~`` expanded, relative ones below the
    workspace root."""
    found: list[Path] = []
    for folder in folders:
        path = Path(folder).expanduser()
        path = path if path.is_absolute() else workspace / path
        if path not in found:
            found.append(path)
    return tuple(found)


class SkillIndex:
    """The skills below some root folders, parsed once per version of each ``SKILL.md``.

    Safe to use from several threads (a call's worker thread and the event loop).

    Args:
        roots: The folders, in priority order.
    """

    def __init__(self, roots: tuple[Path, ...]) -> None:
        self.roots = roots
        self._lock = threading.Lock()
        self._parsed: dict[Path, tuple[tuple[int, int], Skill | str]] = {}

    def __repr__(self) -> str:
        return f"SkillIndex({', '.join(map(str, self.roots))})"

    def _candidates(self) -> list[Path]:
        """Each ``<root>/<folder>/SKILL.md`` that exists, roots in order, folders sorted."""
        files: list[Path] = []
        for root in self.roots:
            try:
                with os.scandir(root) as entries:
                    names = sorted(e.name for e in entries if not e.name.startswith("."))
            except OSError:
                continue
            files += [root / name / SKILL_FILE for name in names]
        return files

    def scan(self) -> SkillScan:
        """Look at the folders now; unchanged files are not read again."""
        skills: dict[str, Skill] = {}
        problems: list[str] = []
        with self._lock:
            seen: set[Path] = set()
            for path in self._candidates():
                try:
                    info = path.lstat()  # a link is looked at, not followed
                except OSError:
                    continue
                seen.add(path)
                stamp = (info.st_mtime_ns, info.st_size)
                cached = self._parsed.get(path)
                if cached is None or cached[0] != stamp:
                    try:
                        parsed: Skill | str = parse_skill(path)
                    except (OSError, ValueError) as exc:
                        parsed = f"{path}: {exc}"
                    except Exception as exc:  # one broken file never hides the others
                        parsed = f"{path}: it cannot be read ({describe_exception(exc)})"
                    cached = self._parsed[path] = (stamp, parsed)
                parsed = cached[1]
                if isinstance(parsed, str):
                    problems.append(parsed)
                elif parsed.name in skills:
                    first = skills[parsed.name].folder
                    problems.append(f"{path}: the name {parsed.name!r} is taken by {first}")
                else:
                    skills[parsed.name] = parsed
            for gone in set(self._parsed) - seen:
                del self._parsed[gone]
        return SkillScan(skills, problems)
