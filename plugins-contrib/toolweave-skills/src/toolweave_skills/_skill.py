"""The ``skill`` tool: list the available skills, load one's instructions, read its files."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field
from toolweave import (
    Capabilities,
    Context,
    ErrorKind,
    Kind,
    Session,
    Tool,
    ToolError,
    ToolOutput,
    preview,
)

from toolweave_skills._index import (
    DEFAULT_FOLDERS,
    SKILL_FILE,
    Skill,
    SkillIndex,
    read_regular,
    resolve_folders,
)

__all__ = [
    "SkillArgs",
    "SkillFile",
    "SkillInfo",
    "SkillList",
    "SkillLoaded",
    "SkillResult",
    "SkillTool",
    "SkillsParams",
    "index_for",
]


class SkillsParams(BaseModel):
    """Configuration of ``skill`` (and of the new-skill reminder)."""

    folders: list[str] = Field(default_factory=lambda: list(DEFAULT_FOLDERS))
    """Folders holding one folder per skill, in priority order; relative ones are below
    the workspace root, ``~`` is the user's home."""

    announce_existing: bool = True
    """Tell the model which skills exist after its first call, not only new ones."""

    max_files: int = Field(default=100, ge=0)
    """The most resource files listed with a loaded skill (the walk of its folder stops
    at the next one)."""

    max_file_chars: int = Field(default=100_000, ge=1_000)
    """The most characters returned when reading one resource file."""


class _Indexes:
    """A session's skill indexes, one per folder list (a session resource)."""

    def __init__(self) -> None:
        self.by_roots: dict[tuple[Path, ...], SkillIndex] = {}


def index_for(session: Session, params: SkillsParams) -> SkillIndex:
    """The session's index of the folders ``params`` name (made on first use)."""
    roots = resolve_folders(params.folders, session.workspace)
    indexes = session.resources.get_or_default(_Indexes, _Indexes)
    found = indexes.by_roots.get(roots)
    if found is None:
        found = indexes.by_roots.setdefault(roots, SkillIndex(roots))
    return found


class SkillArgs(BaseModel):
    """Arguments of ``skill``."""

    name: str | None = Field(
        default=None,
        max_length=64,
        description="The skill to load, e.g. `pdf-forms`. Omit to list the available skills.",
    )
    """Which skill."""

    file: str | None = Field(
        default=None,
        max_length=500,
        description=(
            "With `name`: a file of the skill's folder to read, as listed when the skill "
            "was loaded (`reference.md`, `scripts/fill.py`)."
        ),
    )
    """A resource file of the skill."""


class SkillInfo(BaseModel):
    """A skill as listed."""

    name: str
    """Its name."""

    description: str
    """What it is for."""

    folder: str
    """Where it is."""


class SkillList(BaseModel):
    """``skill`` without a name: what is available."""

    skills: list[SkillInfo]
    """The skills, by name."""

    problems: list[str] = Field(default_factory=list)
    """SKILL.md files that could not be used, and why."""

    def render(self) -> str:
        """One line per skill: name and description."""
        if not self.skills:
            text = "No skills are available."
        else:
            lines = ["Available skills (load one with its name):"]
            lines += [f"- {s.name}: {s.description}" for s in self.skills]
            text = "\n".join(lines)
        if self.problems:
            text += "\n\nSkipped (broken SKILL.md):\n" + "\n".join(f"- {p}" for p in self.problems)
        return text


class SkillLoaded(BaseModel):
    """``skill`` with a name: the skill's instructions and files."""

    name: str
    """The skill."""

    description: str
    """What it is for."""

    folder: str
    """Its folder (resource paths are relative to it)."""

    instructions: str
    """SKILL.md without its front matter."""

    files: list[str]
    """Resource files of the folder, relative to it."""

    files_cut: bool = False
    """Whether the listing was cut: the folder holds more than ``max_files`` files, or
    more entries or deeper folders than are walked."""

    def render(self) -> str:
        """The instructions, then the files and how to read them."""
        text = f'Skill "{self.name}" (folder: {self.folder})\n\n{self.instructions}'
        if self.files or self.files_cut:
            listed = "".join(f"\n- {f}" for f in self.files)
            more = "\n- ... [cut: the folder holds more]" if self.files_cut else ""
            text += (
                f"\n\nFiles of this skill (read one with this tool's `file` argument):"
                f"{listed}{more}"
            )
        return text


class SkillFile(BaseModel):
    """``skill`` with a name and a file: that file's text."""

    name: str
    """The skill."""

    file: str
    """The file, relative to the skill's folder."""

    content: str
    """Its text (cut at ``max_file_chars``)."""

    truncated: bool = False
    """Whether the file was longer."""

    def render(self) -> str:
        """The file's text, with a note when cut."""
        note = "\n[cut: the file is longer]" if self.truncated else ""
        return f"{self.file} (skill {self.name}):\n{self.content}{note}"


class SkillResult(ToolOutput):
    """What ``skill`` returns: exactly one of a listing, a loaded skill, a file.

    (One output class holding the three, rather than a union of three outputs: toolweave
    takes the model text from ``to_model`` of the declared output class only.)
    """

    listing: SkillList | None = None
    """Without ``name``: the available skills."""

    loaded: SkillLoaded | None = None
    """With ``name``: the skill."""

    file: SkillFile | None = None
    """With ``name`` and ``file``: that file."""

    def to_model(self) -> str:
        """The text of whichever part is set."""
        part = self.listing or self.loaded or self.file
        return part.render() if part is not None else ""


_WALK_DEPTH = 16
"""How deep a skill's files are listed: paths of at most this many parts (``a/b.md``
has 2); deeper folders are not walked."""

_WALK_ENTRIES = 10_000
"""The most directory entries read while listing a skill's files, beyond ``max_files``."""


def _files(skill: Skill, limit: int) -> tuple[list[str], bool]:
    """The skill folder's files (hidden ones, caches, linked folders and links leading out
    of the folder left out), in path order, at most ``limit``; and whether the listing was
    cut.

    The walk is bounded: it stops at the first file past ``limit`` or once
    ``_WALK_ENTRIES + limit`` directory entries were read, and goes no deeper than
    ``_WALK_DEPTH`` levels; each of these cuts the listing.
    """
    folder = skill.folder.resolve()
    found: list[str] = []
    left = _WALK_ENTRIES + limit
    cut = False

    def walk(path: str, prefix: str, depth: int) -> bool:
        """List the files below ``path``; ``False`` once the walk must stop."""
        nonlocal left, cut
        entries: list[os.DirEntry[str]] = []
        try:
            with os.scandir(path) as listing:
                for entry in listing:
                    if left <= 0:
                        cut = True
                        return False
                    left -= 1
                    if not entry.name.startswith(".") and entry.name != "__pycache__":
                        entries.append(entry)
        except OSError:
            return True
        for entry in sorted(entries, key=lambda e: e.name):
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth >= _WALK_DEPTH:
                        cut = True
                    elif not walk(entry.path, rel + "/", depth + 1):
                        return False
                    continue
                if rel == SKILL_FILE or not entry.is_file():
                    continue
                if not Path(entry.path).resolve().is_relative_to(folder):
                    continue
            except OSError:
                continue
            if len(found) >= limit:
                cut = True
                return False
            found.append(rel)
        return True

    walk(str(skill.folder), "", 1)
    return found, cut


def _read(skill: Skill, file: str, limit: int) -> SkillFile:
    """A resource file of ``skill``, which must stay inside its folder; at most
    ``limit`` characters of it are read (4 bytes each at most in UTF-8)."""
    if "\0" in file:
        raise ToolError(ErrorKind.INVALID_PARAMS, "`file` must not contain a NUL character")
    folder = skill.folder.resolve()
    path = (folder / file).resolve()
    if not path.is_relative_to(folder):
        raise ToolError(
            ErrorKind.PERMISSION_DENIED,
            f"{preview(file)!r} is outside the folder of the skill {skill.name!r}",
        )
    if not path.is_file():
        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"the skill {skill.name!r} has no file {preview(file)!r}; load the skill to "
            "see its files",
        )
    try:
        data = read_regular(path, limit * 4 + 1)
    except ValueError:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"{preview(file)!r} is not a regular file; only text files of a skill can be read",
        ) from None
    if b"\0" in data[:8_192]:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"{preview(file)!r} is a binary file; only text files of a skill can be read",
        )
    text = data.decode("utf-8", errors="replace")
    rel = path.relative_to(folder).as_posix()
    return SkillFile(name=skill.name, file=rel, content=text[:limit], truncated=len(text) > limit)


class SkillTool(Tool[SkillArgs, SkillResult]):
    """Load an Agent Skill: instructions and resources for one kind of task."""

    id = "skill"
    namespace = "skills"
    kind = Kind.SKILL
    description = """\
Load a skill: instructions (and scripts, templates, references) written for one kind \
of task, such as filling a PDF form or following the project's release process. When \
a task matches a skill's description, load the skill first and follow its \
instructions; read its files with `{param:file}` when the instructions point to them.

Call it without `{param:name}` to list the available skills. Do not load skills unrelated to \
the task, and do not use it to read workspace files (use the file tools)."""
    capabilities = Capabilities(read_only=True, scope="system", timeout=30.0)
    params = SkillsParams

    def run(self, ctx: Context, args: SkillArgs) -> SkillResult:
        """List, load, or read a file of a skill (the folders are looked at anew)."""
        params = ctx.params(SkillsParams)
        scan = index_for(ctx.session, params).scan()
        name = args.name.strip() if args.name and args.name.strip() else None
        if name is None:
            if args.file:
                raise ToolError(ErrorKind.INVALID_PARAMS, "`file` needs the skill's `name`")
            listing = SkillList(
                skills=[
                    SkillInfo(name=s.name, description=s.description, folder=str(s.folder))
                    for _, s in sorted(scan.skills.items())
                ],
                problems=scan.problems,
            )
            return SkillResult(listing=listing)
        skill = scan.skills.get(name)
        if skill is None:
            known = ", ".join(sorted(scan.skills)) or "none"
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no skill named {preview(name)!r}; available: {known}",
            )
        if args.file:
            return SkillResult(file=_read(skill, args.file, params.max_file_chars))
        files, cut = _files(skill, params.max_files)
        loaded = SkillLoaded(
            name=skill.name,
            description=skill.description,
            folder=str(skill.folder),
            instructions=skill.instructions,
            files=files,
            files_cut=cut,
        )
        return SkillResult(loaded=loaded)
