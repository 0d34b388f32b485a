"""Shell commands as permission rules see them: parsed with ``bashlex`` into the simple
commands they run, and matched word by word.

A command is read fail-closed. Every simple command it runs is found, those in
``;``/``&&``/``||`` lists, pipelines, subshells, ``{ ...; }`` groups, command
substitutions (``$(...)``, backticks) and process substitutions included. What the
analysis cannot vouch for makes the whole command *opaque*: no rule with a pattern
allows it (it is asked about, or denied), although its readable parts still meet the
``deny`` and ``ask`` rules. Opaque are: text the parser cannot read; redirections
(but ``2>&1``-style descriptor copies and writes to ``/dev/null``); here-documents;
variable assignments (alone or before a command); ``eval``, ``exec``, ``source``,
``.`` and shells started with ``-c``; loops, conditionals and function definitions;
a command name that is not a plain word; a command that runs outside the workspace
(see ``cd`` below); and more than ``limit`` simple commands.

A word that the shell expands (``$VAR``, ``~``, ``$(...)``, globs, braces) is
*dynamic*: only a pattern's trailing ``*`` covers it. ``cd`` moves the directory
that later relative paths are resolved from; after a ``cd`` the analysis cannot
follow, or one that leaves the workspace (and under a working directory outside it),
no pattern allows a command (``npm test`` elsewhere runs another project's code).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, final

from toolweave.errors import UsageError
from toolweave.policy._paths import PathPattern, glob_chars, locate

__all__ = ["Command", "CommandPattern", "ShellAnalysis", "analyse", "require_parser"]

INSTALL_HINT = "pip install 'toolweave[policy]'"

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
_EVALUATORS = frozenset({"eval", "exec", "source", "."})
_NESTED_DEPTH = 3
"""How deep strings run by ``eval`` / ``sh -c`` are parsed for deny rules."""
_WRAPPED_DEPTH = 8
"""How many wrappers (``sudo nice env ...``) are looked through."""

_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "builtin": (frozenset(), 0),
    "busybox": (frozenset(), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "chrt": (frozenset(), 1),
    "command": (frozenset(), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "exec": (frozenset({"-a"}), 0),
    "flock": (frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-t"}), 0),
    "ltrace": (frozenset({"-e", "-o", "-p", "-s", "-u", "-n", "-a"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "strace": (frozenset({"-e", "-o", "-p", "-s", "-u", "-E", "-P", "-O", "-S", "-a", "-b"}), 0),
    "sudo": (
        frozenset(
            {
                "-u",
                "--user",
                "-g",
                "--group",
                "-h",
                "--host",
                "-p",
                "--prompt",
                "-C",
                "--close-from",
                "-D",
                "--chdir",
                "-r",
                "--role",
                "-t",
                "--type",
                "-U",
                "--other-user",
                "-T",
                "--command-timeout",
            }
        ),
        0,
    ),
    "taskset": (frozenset(), 1),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "unbuffer": (frozenset(), 0),
    "watch": (frozenset({"-n", "--interval"}), 0),
    "xargs": (
        frozenset(
            {
                "-a",
                "--arg-file",
                "-d",
                "--delimiter",
                "-E",
                "-I",
                "-L",
                "-n",
                "--max-args",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
            }
        ),
        0,
    ),
}
"""Commands that run the command named by their later words: ``{name: (options that
take a value, words before that command)}``. What they run is a command of the line
too: deny and ask rules meet it, and allow rules must cover it as well."""
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def require_parser() -> Any:
    """The ``bashlex`` module.

    Raises:
        UsageError: It is not installed (with the install hint).
    """
    try:
        import bashlex  # type: ignore[import-untyped]
    except ImportError as exc:
        raise UsageError(
            f"rules with a shell-command pattern need the bash parser: {INSTALL_HINT}"
        ) from exc
    return bashlex


@final
@dataclass(frozen=True, slots=True)
class Word:
    """One word of a simple command: its text after quote removal, and whether the
    shell expands it into something the analysis cannot know."""

    text: str
    dynamic: bool


_UNKNOWN = Word("{}", dynamic=True)
"""What ``xargs`` and ``find -exec`` add to the command they run: unknown words."""


@final
@dataclass(slots=True)
class Command:
    """One simple command of a command line.

    Attributes:
        words: Its words (the command name first).
        cwd: The directory it runs in, as far as the analysis follows ``cd``
            (``None``: unknown).
    """

    words: tuple[Word, ...]
    cwd: str | None

    @property
    def text(self) -> str:
        """The command as one line (quoted as needed)."""
        return shlex.join(w.text for w in self.words)


@final
@dataclass(slots=True)
class ShellAnalysis:
    """What a command line runs.

    Attributes:
        commands: Every simple command found, in order.
        opaque: Why no pattern may allow the line (empty: it is readable).
    """

    commands: list[Command] = field(default_factory=list)
    opaque: str = ""


def analyse(command: str, root: str, cwd: str | None, limit: int = 50) -> ShellAnalysis:
    """Read ``command`` as bash would run it from ``cwd`` inside the workspace ``root``.

    Args:
        command: The command line.
        root: The workspace root (resolved).
        cwd: The directory it starts in (``None``: unknown).
        limit: More simple commands than this make the line opaque.
    """
    out = ShellAnalysis()
    _Reader(out, root, cwd).read(command, 0)
    if any(c.cwd is None for c in out.commands):
        out.opaque = out.opaque or "it runs outside the workspace (or where cd cannot be followed)"
    if len(out.commands) > limit:
        out.opaque = out.opaque or f"it runs more than {limit} commands"
    return out


class _Reader:
    """Walks bashlex's tree, collecting commands and the reasons a line is opaque."""

    def __init__(self, out: ShellAnalysis, root: str, cwd: str | None) -> None:
        self.out = out
        self.root = root
        self.cwd = cwd

    def opaque(self, why: str) -> None:
        if not self.out.opaque:
            self.out.opaque = why

    def read(self, command: str, depth: int) -> None:
        bashlex = require_parser()
        try:
            trees = bashlex.parse(command)
        except Exception as exc:  # bashlex raises many kinds for what it cannot read
            self.opaque(f"the shell parser cannot read it ({type(exc).__name__})")
            return
        for tree in trees:
            self.node(tree, depth)

    def node(self, node: Any, depth: int) -> None:
        kind = getattr(node, "kind", None)
        if kind == "command":
            self.command(node, depth)
        elif kind in ("list", "pipeline"):
            for part in node.parts:
                self.node(part, depth)
        elif kind == "compound":
            for part in node.list:
                self.node(part, depth)
            for redirect in getattr(node, "redirects", None) or ():
                self.redirect(redirect)
        elif kind in ("operator", "pipe", "reservedword"):
            return
        elif kind in ("if", "for", "while", "until", "function", "case"):
            self.opaque(f"it holds a {kind} construct")
            for part in getattr(node, "parts", None) or ():
                self.node(part, depth)
        elif kind == "word":
            self.word(node, depth)
        else:
            self.opaque(f"it holds a {kind or 'strange'} node")
            for part in getattr(node, "parts", None) or ():
                self.node(part, depth)

    def word(self, node: Any, depth: int) -> Word:
        """The word ``node``; commands it substitutes are collected."""
        dynamic = False
        for part in getattr(node, "parts", None) or ():
            dynamic = True
            inner = getattr(part, "command", None)
            if inner is not None:  # $(...), backticks, <(...), >(...)
                saved = self.cwd
                self.node(inner, depth)
                self.cwd = saved
        text: str = node.word
        if glob_chars(text) or ("{" in text and ("," in text or ".." in text)):
            dynamic = True
        return Word(text, dynamic)

    def redirect(self, node: Any) -> None:
        target = getattr(node, "output", None)
        kind = getattr(node, "type", "")
        if getattr(node, "heredoc", None) is not None:
            self.opaque("it has a here-document")
        elif isinstance(target, int) and kind in (">&", "<&"):
            return  # 2>&1: a copy of a descriptor
        elif kind in (">", ">>", "&>", ">|") and getattr(target, "word", None) == "/dev/null":
            return
        else:
            self.opaque("it redirects input or output")
        if target is not None and not isinstance(target, int):
            self.word(target, 0)

    def command(self, node: Any, depth: int) -> None:
        words: list[Word] = []
        for part in node.parts:
            kind = getattr(part, "kind", None)
            if kind == "word":
                words.append(self.word(part, depth))
            elif kind == "assignment":
                self.opaque("it sets a variable")
                self.word(part, depth)
            elif kind == "redirect":
                self.redirect(part)
            else:
                self.node(part, depth)
        self.simple(words, depth, 0)

    def simple(self, words: list[Word], depth: int, wrapped: int) -> None:
        """Collect the simple command ``words`` and what it runs in turn."""
        if not words:
            return
        found = Command(tuple(words), self.cwd)
        self.out.commands.append(found)
        name = words[0]
        if name.dynamic or "=" in name.text:
            self.opaque("its command name is not a plain word")
            return
        base = os.path.basename(name.text)
        if base in _EVALUATORS:
            self.opaque(f"it runs text as commands ({base})")
            if depth < _NESTED_DEPTH and base == "eval":
                self.nested(" ".join(w.text for w in words[1:]), depth)
        elif base in _SHELLS and any(_is_c_flag(w.text) for w in words[1:]):
            self.opaque(f"it starts a shell on a string ({base} -c)")
            if depth < _NESTED_DEPTH:
                for index, w in enumerate(words[1:-1], 1):
                    if _is_c_flag(w.text):
                        self.nested(words[index + 1].text, depth)
                        break
        elif base in ("cd", "pushd", "popd"):
            self.change_directory(words)
        if base in _WRAPPERS or (base == "find" and any(w.text in _FIND_EXEC for w in words)):
            if wrapped >= _WRAPPED_DEPTH:
                self.opaque(f"it wraps commands more than {_WRAPPED_DEPTH} deep")
                return
            for inner in self.wrapped(base, words):
                self.simple(inner, depth, wrapped + 1)

    def wrapped(self, base: str, words: list[Word]) -> list[list[Word]]:
        """The commands a wrapper runs (``sudo rm x`` runs ``rm x``); ``xargs`` and
        ``find -exec`` add unknown words to theirs."""
        if base == "find":
            found: list[list[Word]] = []
            inner: list[Word] | None = None
            for w in words[1:]:
                if inner is None:
                    inner = [] if w.text in _FIND_EXEC else None
                elif w.text in (";", "+"):
                    found.append(inner)
                    inner = None
                else:
                    inner.append(_UNKNOWN if "{}" in w.text else w)
            return [*found, inner] if inner else found
        with_value, positional = _WRAPPERS[base]
        i = 1
        while i < len(words):
            w = words[i]
            if w.dynamic:  # an option or a command: each later word may start it
                self.opaque(f"what {base} runs cannot be told")
                return [words[j:] for j in range(i + 1, len(words))]
            if w.text == "--":
                i += 1
                break
            if base == "env" and "=" in w.text and not w.text.startswith("-"):
                i += 1  # NAME=VALUE
            elif w.text.startswith("-") and w.text != "-":
                if base == "env" and w.text.split("=", 1)[0] in ("-S", "--split-string"):
                    self.opaque("it runs a command env splits from a string")
                    return []
                i += 2 if w.text in with_value else 1
            else:
                break
        inner = words[i + positional :]
        if base == "watch":  # runs its words joined, as a shell string
            self.opaque("it runs a string as commands (watch)")
            if inner:
                self.nested(" ".join(w.text for w in inner), 0)
            return []
        if base == "xargs":
            return [[*(inner or [Word("echo", dynamic=False)]), _UNKNOWN]]
        return [inner] if inner else []

    def nested(self, text: str, depth: int) -> None:
        """Read a string the command runs, for deny rules (it stays opaque)."""
        saved = self.cwd
        self.read(text, depth + 1)
        self.cwd = saved

    def change_directory(self, words: list[Word]) -> None:
        args = [w for w in words[1:] if not (w.text.startswith("-") and w.text != "-")]
        if words[0].text == "popd" or len(args) != 1 or args[0].dynamic or self.cwd is None:
            self.cwd = None
            return
        where = locate(args[0].text, self.cwd)
        if args[0].text == "-" or where is None or not _within(where.real, self.root):
            self.cwd = None
        else:
            self.cwd = where.real


def _is_c_flag(text: str) -> bool:
    return text.startswith("-") and not text.startswith("--") and "c" in text[1:]


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@final
class CommandPattern:
    """The pattern of a shell rule: ``git status``, ``npm run test *`` (a trailing
    ``*`` word, or ``:*`` as some tools write it, covers any further words).

    A pattern word with a ``/`` is a path pattern (see
    :class:`~toolweave.policy._paths.PathPattern`): the command's word is resolved
    from the directory the command runs in before it is compared. A word with ``*``,
    ``?`` or ``[`` is a glob over the word (over its resolved path when the word has a
    ``/``); any other word must be equal.

    Raises:
        ValueError: The pattern is empty or its quotes do not close.
    """

    __slots__ = ("paths", "tail", "text", "words")

    def __init__(self, text: str) -> None:
        self.text = text
        body = text.strip()
        if body.endswith(":*"):
            body = body[:-2] + " *"
        words = shlex.split(body)
        if not words:
            raise ValueError("a command pattern needs at least one word")
        self.tail = words[-1] == "*"
        self.words = tuple(words[:-1] if self.tail else words)
        self.paths = tuple(
            PathPattern(w) if "/" in w or glob_chars(w) else None for w in self.words
        )

    def __repr__(self) -> str:
        return f"CommandPattern({self.text!r})"

    def match(self, command: Command, root: str, *, allow: bool) -> bool | None:
        """``True`` when ``command`` matches for sure, ``None`` when it might (a word
        the shell expands, or a path from an unknown directory), ``False`` when not.

        For an ``allow`` rule a path word matches where it leads; for the others
        where it leads or as it is spelled."""
        if allow and command.cwd is None:
            return None  # it runs somewhere outside the workspace, or unknown
        words = command.words
        count = len(self.words)
        if len(words) < count or (not self.tail and len(words) != count):
            return False
        unsure = False
        for index, (word, expected, path) in enumerate(
            zip(words, self.words, self.paths, strict=False)
        ):
            if word.dynamic:
                unsure = True
                continue
            if path is None:
                # A deny or ask rule's command name meets the command however its path
                # is spelled (/bin/rm is rm); an allow rule's only as written.
                if word.text != expected and (
                    allow or index or os.path.basename(word.text) != expected
                ):
                    return False
                continue
            if "/" not in word.text and "/" not in expected:
                if not fnmatchcase(word.text, expected):
                    return False
                continue
            if command.cwd is None:
                unsure = True
                continue
            where = locate(word.text, command.cwd)
            if where is None:
                unsure = True
            elif not (path.allows(where, root) if allow else path.hits(where, root)):
                return False
        return None if unsure else True
