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
``.``, ``trap``, shells started on a string (``-c``) or on their input, and other
commands that run a string (``flock -c``, ``su -c``, ``watch``, ``env -S``, ``ssh``,
``sg``); programs that run a command named in their arguments with options the
analysis does not read (``runuser -u``, ``pkexec``, ``nsenter``, ``gdb`` ...: each
later word may start it); a command
substitution inside a parameter expansion (``${x:-$(...)}``, which bashlex leaves
unread: every text in it that may be the substituted command is read for ``deny`` and
``ask`` rules); loops, conditionals and function definitions; a command name that is
not a plain word; a wrapper (``sudo``, ``env``, ``nice`` ...) whose options cannot be
read for sure (then every later word may start the command it runs); a command that
runs outside the workspace (see ``cd`` below); and more than ``limit`` simple commands.
Text the parser cannot read (``time rm x``, ``coproc``) is opaque, its words split
loosely and each read for deny and ask rules as a possible command start.

A word that the shell expands (``$VAR``, ``~``, ``$(...)``, globs, braces) is
*dynamic*: only a pattern's trailing ``*`` covers it. ``cd`` moves the directory
that later relative paths are resolved from; after a ``cd`` the analysis cannot
follow, or one that leaves the workspace (and under a working directory outside it),
no pattern allows a command (``npm test`` elsewhere runs another project's code).
"""

from __future__ import annotations

import os
import re
import shlex
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, final

from toolweave.errors import UsageError
from toolweave.policy._paths import PathPattern, glob_chars, locate

__all__ = ["Command", "CommandPattern", "ShellAnalysis", "analyse", "require_parser"]

INSTALL_HINT = "pip install 'toolweave[policy]'"

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
_EVALUATORS = frozenset({"eval", "exec", "source", ".", "trap"})
_STRING_RUNNERS = frozenset({"su", "runuser", "script"})
"""Commands whose ``-c`` / ``--command`` value is a shell string they run."""
_RUNNERS = frozenset(
    {
        # run a command as another user, group or with other rights
        "runuser", "pkexec", "setpriv", "gosu", "su-exec", "setuidgid", "envuidgid",
        "chpst", "run0", "capsh",
        # in other namespaces, sandboxes, roots or services
        "nsenter", "unshare", "systemd-run", "firejail", "bwrap", "proot", "fakeroot",
        "fakechroot", "schroot", "sandbox-exec", "cgexec", "tini", "dumb-init",
        # with other limits, processors or networks
        "numactl", "setarch", "linux32", "linux64", "arch", "prlimit", "cpulimit",
        "trickle", "torsocks", "proxychains", "proxychains4", "tsocks", "lockf",
        # inside another program's session or under a debugger or profiler
        "dbus-run-session", "dbus-launch", "xvfb-run", "caffeinate", "rlwrap", "catchsegv",
        "valgrind", "gdb", "perf", "nocache", "chronic", "ifne", "screen",
    }
)  # fmt: skip
"""Programs that run a command named in their arguments, with options the analysis
does not read: each later word may start that command (read for deny and ask rules),
and the line is opaque."""
_JOINED_RUNNERS = frozenset({"ssh", "sg", "parallel", "tmux"})
"""Programs that run their later words joined as a shell string (``ssh host rm x``
runs ``rm x`` in the remote shell, ``sg group 'rm x'`` in ``sh -c``): the line is
opaque and the text from each later word on is read for deny and ask rules."""
_COMMAND_BUDGET = 4096
"""How many simple commands (wrapped ones included) one analysis collects; past it the
line is opaque and the rest unread (a line of many unsure wrappers could otherwise
make exponentially many)."""
_WORD_BUDGET = 1 << 15
"""How many words those commands hold in all: each later word of an unsure wrapper
may start a command, so a long line would otherwise give a quadratic number."""
_MAX_TEXT = 1 << 13
"""The longest command text parsed (bashlex takes up to about 0.3 s for this many
characters); a longer one is opaque and only read loosely (see ``unread``)."""
_PARSE_BUDGET = 3 * _MAX_TEXT
"""How many characters one analysis parses in all: the line, and the strings it runs
(``sh -c``, ``ssh``, ``${...}``) read for deny rules."""
_NESTED_DEPTH = 3
"""How deep strings run by ``eval`` / ``sh -c`` are parsed for deny rules."""
_WRAPPED_DEPTH = 8
"""How many wrappers (``sudo nice env ...``) are looked through."""
_EXPANSION_TRIES = 64
"""How many candidate texts of commands hidden in parameter expansions (``${x:-$(...)}``)
one analysis parses; past it those expansions stay opaque, unread."""
_EXPANSION_TEXT = 1 << 16
"""The longest such candidate text parsed."""


@final
@dataclass(frozen=True, slots=True)
class _Wrapper:
    """How a command that runs another reads its options (``getopt`` with ``+``: options
    end at the first word that is not one, or at ``--``).

    Attributes:
        flags: Short options without a value (``-E``; several in one word: ``-En``).
        values: Short options that take a value, attached (``-uroot``) or the next
            word (``-u root``, ``-Eu root``).
        attached: Short options whose value can only be attached (``xargs -e[END]``).
        unsure: Short options whose reading depends on what follows (``sudo -h``).
        long_flags: Long options without a value.
        long_values: Long options that take a value (``--user=root``, ``--user root``).
        long_attached: Long options whose value can only be attached (``--eof[=END]``).
        positional: Words between the options and the command (``timeout 5``).
        assignments: ``NAME=VALUE`` words may come before the command.
        numeric: ``-5`` / ``--5`` is an option (``nice``).
    """

    flags: str = ""
    values: str = ""
    attached: str = ""
    unsure: str = ""
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    long_attached: frozenset[str] = frozenset()
    positional: int = 0
    assignments: bool = False
    numeric: bool = False

    def long(self, name: str) -> str | None:
        """The long option ``name`` stands for: itself, or the one option it is an
        unambiguous prefix of (``getopt_long``); ``None`` when it is neither."""
        names = self.long_flags | self.long_values | self.long_attached
        if name in names:
            return name
        found = [n for n in names if n.startswith(name)] if name else []
        return found[0] if len(found) == 1 else None


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WRAPPERS: dict[str, _Wrapper] = {
    "builtin": _Wrapper(),
    "busybox": _Wrapper(long_flags=_names("help list list-full install")),
    "chroot": _Wrapper(
        long_flags=_names("skip-chdir help version"),
        long_values=_names("userspec groups"),
        positional=1,
    ),
    "chrt": _Wrapper(
        flags="abdefimopRrvhV",
        values="TPD",
        long_flags=_names(
            "all-tasks batch deadline fifo idle other rr reset-on-fork max pid verbose"
            " ext help version"
        ),
        long_values=_names("sched-runtime sched-period sched-deadline"),
        positional=1,  # the priority, when it is a number (newer chrt may omit it)
    ),
    "command": _Wrapper(flags="pvV"),
    "doas": _Wrapper(flags="Lns", values="aCu"),
    "env": _Wrapper(
        flags="iv0",
        values="uCSPaLU",  # GNU (-a: argv0) and BSD (-P altpath, -L/-U user)
        long_flags=_names("ignore-environment null debug list-signal-handling help version"),
        long_values=_names("unset chdir split-string argv0"),
        long_attached=_names("block-signal default-signal ignore-signal"),
        assignments=True,
    ),
    "exec": _Wrapper(flags="cl", values="a"),
    "flock": _Wrapper(
        flags="sexnoFuhV",
        values="wE",
        long_flags=_names(
            "shared exclusive unlock nonblock nb close no-fork verbose fcntl help version"
        ),
        long_values=_names("timeout wait conflict-exit-code"),
        positional=1,  # the lock file; then a command, or -c/--command and a string
    ),
    "ionice": _Wrapper(
        flags="thV",
        values="cnpPu",
        long_flags=_names("ignore help version"),
        long_values=_names("class classdata pid pgid uid"),
    ),
    "ltrace": _Wrapper(
        flags="bcCfhiLrStTV",
        values="aADeFlnopsuwx",
        long_flags=_names("demangle help version"),
        long_values=_names("align indent library output"),
    ),
    "nice": _Wrapper(
        values="n",
        long_flags=_names("help version"),
        long_values=_names("adjustment"),
        numeric=True,
    ),
    "nohup": _Wrapper(long_flags=_names("help version")),
    "setsid": _Wrapper(flags="cfwhV", long_flags=_names("ctty fork wait help version")),
    "stdbuf": _Wrapper(
        values="ioe",
        long_flags=_names("help version"),
        long_values=_names("input output error"),
    ),
    "strace": _Wrapper(
        flags="AcCdDfFhiknqrtTvVwxyzZ",
        values="abeEIoOpPsSuUX",
    ),
    "sudo": _Wrapper(
        flags="ABbEeHiKklNnPSsVv",
        values="aCcDgpRrTtUu",
        unsure="h",  # -h alone is help; -h HOST takes the next word when it is no option
        long_flags=_names(
            "askpass background bell edit set-home help login remove-timestamp"
            " reset-timestamp list non-interactive preserve-groups stdin shell validate"
            " version"
        ),
        long_values=_names(
            "auth-type close-from chdir login-class group host prompt chroot role type"
            " command-timeout other-user user"
        ),
        long_attached=_names("preserve-env"),
        assignments=True,
    ),
    "taskset": _Wrapper(
        flags="apchV",
        long_flags=_names("all-tasks pid cpu-list help version"),
        positional=1,
    ),
    "time": _Wrapper(
        flags="apqvhV",
        values="fo",
        long_flags=_names("append portability quiet verbose help version"),
        long_values=_names("format output"),
    ),
    "timeout": _Wrapper(
        flags="fpv",
        values="ks",
        long_flags=_names("foreground preserve-status verbose help version"),
        long_values=_names("kill-after signal"),
        positional=1,
    ),
    "unbuffer": _Wrapper(flags="p"),
    "watch": _Wrapper(
        flags="bcCegprtwxhv",
        values="nq",
        attached="d",
        long_flags=_names(
            "beep color no-color errexit chgexit precise no-rerun no-title no-wrap exec"
            " help version"
        ),
        long_values=_names("interval equexit"),
        long_attached=_names("differences"),
    ),
    "xargs": _Wrapper(
        flags="0oprtx",
        values="adEILnPsJRS",  # GNU, and BSD's -J/-R/-S
        attached="eil",
        long_flags=_names(
            "null open-tty interactive no-run-if-empty show-limits verbose exit help version"
        ),
        long_values=_names(
            "arg-file delimiter max-lines max-args max-procs max-chars process-slot-var"
        ),
        long_attached=_names("eof replace"),
    ),
}
"""Commands that run the command named by their later words, and how they read their
options. What they run is a command of the line too: deny and ask rules meet it, and
allow rules must cover it as well. An option the table does not know makes the line
opaque, and every later word may start the command."""
_ASSIGNMENT = re.compile(r"[^=]+=")


class _Unsure(Exception):
    """The word at ``index`` of a wrapper cannot be read for sure."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def _getopt(spec: _Wrapper, words: list[Word]) -> tuple[list[tuple[str, str]], int]:
    """The options of the wrapper ``words`` (``(option, value)``; a long one as
    ``--name`` in full) and the index of the first word after them.

    Raises:
        _Unsure: A word cannot be read for sure (it is expanded by the shell, or it is
            an option the table does not know).
    """
    found: list[tuple[str, str]] = []
    i = 1
    n = len(words)
    while i < n:
        word = words[i]
        text = word.text
        if word.dynamic:
            raise _Unsure(i)
        if text == "--":
            return found, i + 1
        if spec.numeric and re.match(r"-[-+]?[0-9]", text):
            found.append(("-n", text.lstrip("-")))
            i += 1
        elif text.startswith("--"):
            name, eq, value = text[2:].partition("=")
            full = spec.long(name)
            if full is None:
                if not eq:
                    raise _Unsure(i)
                i += 1  # --what=ever is one word, whatever it means
                continue
            if full in spec.long_values and not eq:
                if i + 1 >= n:
                    return found, n  # its value is missing: the tool runs nothing
                value = words[i + 1].text
                i += 1
            found.append(("--" + full, value))
            i += 1
        elif text.startswith("-") and len(text) > 1:
            letters = text[1:]
            for k, letter in enumerate(letters):
                rest = letters[k + 1 :]
                if letter in spec.unsure:
                    raise _Unsure(i)
                if letter in spec.values:
                    if not rest:
                        if i + 1 >= n:
                            return found, n
                        i += 1
                        rest = words[i].text
                    found.append(("-" + letter, rest))
                    break
                if letter in spec.attached:
                    found.append(("-" + letter, rest))
                    break
                if letter in spec.flags:
                    found.append(("-" + letter, ""))
                    continue
                raise _Unsure(i)  # an option the table does not know
            i += 1
        else:
            break
    return found, i


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
    reader = _Reader(out, root, cwd)
    if len(command) > _MAX_TEXT:
        reader.opaque(f"it is longer than {_MAX_TEXT:,} characters")
        reader.unread(command, 0)
    else:
        reader.read(command, 0)
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
        self.source = ""
        """The text bashlex parsed last: the positions of its nodes are in it."""
        self.tries = _EXPANSION_TRIES
        self.seen: set[tuple[tuple[Word, ...], str | None]] = set()
        """The simple commands collected, each once."""
        self.words_left = _WORD_BUDGET
        self.parse_left = _PARSE_BUDGET

    def opaque(self, why: str) -> None:
        if not self.out.opaque:
            self.out.opaque = why

    def parse(self, text: str) -> list[Any] | None:
        """``text`` parsed, or ``None`` once the analysis has parsed
        :data:`_PARSE_BUDGET` characters (the line is opaque then)."""
        if len(text) > self.parse_left:
            self.opaque("it holds more text to parse than can be read")
            return None
        self.parse_left -= len(text)
        return _parse(text)

    def read(self, command: str, depth: int) -> None:
        try:
            trees = self.parse(command)
            if trees is None:
                return  # past the budget: the line is opaque, the rest unread
        except Exception as exc:  # bashlex raises many kinds for what it cannot read
            self.opaque(f"the shell parser cannot read it ({type(exc).__name__})")
            self.unread(command, depth)
            return
        self.walk(command, trees, depth)

    def unread(self, command: str, depth: int) -> None:
        """A text the parser cannot read (``time rm x``, ``coproc rm x``): each of its
        first :data:`_LOOSE_WORDS` words that is no operator may start a command, read
        for deny and ask rules (the line is opaque already)."""
        words = _loose_words(command)
        saved = self.cwd
        for j, word in enumerate(words):
            if not _OPERATOR.fullmatch(word.text):
                self.simple(list(words[j:]), depth, 1)
            self.cwd = saved

    def walk(self, source: str, trees: list[Any], depth: int) -> None:
        saved = self.source
        self.source = source
        try:
            for tree in trees:
                self.node(tree, depth)
        finally:
            self.source = saved

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
        expansion = False
        parts = getattr(node, "parts", None) or ()
        for part in parts:
            dynamic = True
            inner = getattr(part, "command", None)
            if inner is not None:  # $(...), backticks, <(...), >(...)
                saved = self.cwd
                self.node(inner, depth)
                self.cwd = saved
            elif getattr(part, "kind", None) == "parameter":
                expansion = True
        if expansion:
            self.expansion(node, parts, depth)
        text: str = node.word
        if glob_chars(text) or ("{" in text and ("," in text or ".." in text)):
            dynamic = True
        return Word(text, dynamic)

    def expansion(self, node: Any, parts: Any, depth: int) -> None:
        """A word with a parameter expansion: one in braces may hide commands
        (``${x:-$(rm y)}``, ``${x/a/`rm y`}``, ``${a[$(rm y)]}``, ``${x:-<(rm y)}``),
        which bashlex leaves unread in the expansion's text. Such a word makes the line
        opaque, and every text in it that may be a command substitution is read for
        the deny and ask rules."""
        raw, offset = _source(node, self.source)
        if "${" not in raw:
            return
        read = [
            (p.pos[0] - offset, p.pos[1] - offset)
            for p in parts
            if getattr(p, "command", None) is not None and _has_pos(p) and offset >= 0
        ]
        starts = _substitution_starts(raw, read)
        if not starts:
            return
        self.opaque("it runs a command inside a parameter expansion (${...})")
        if depth >= _NESTED_DEPTH:
            return
        for body in _candidates(raw, starts):
            if self.tries <= 0:
                return
            self.tries -= 1
            try:
                trees = self.parse(body)
            except Exception:  # not a command text: not how the shell reads it
                continue
            if trees is None:
                return
            saved = self.cwd
            self.walk(body, trees, depth + 1)
            self.cwd = saved

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
        if len(self.seen) >= _COMMAND_BUDGET or len(words) > self.words_left:
            self.opaque("it runs more commands than can be read")
            return
        found = Command(tuple(words), self.cwd)
        key = (found.words, found.cwd)
        if wrapped and key in self.seen:
            return  # the same words, reached through another wrapper: read once
        self.words_left -= len(words)
        self.seen.add(key)
        self.out.commands.append(found)
        name = words[0]
        if name.dynamic or "=" in name.text:
            self.opaque("its command name is not a plain word")
            return
        base = os.path.basename(name.text)
        if base in _EVALUATORS:
            self.opaque(f"it runs text as commands ({base})")
            if depth < _NESTED_DEPTH and base == "eval":
                rest = words[2:] if len(words) > 1 and words[1].text == "--" else words[1:]
                self.nested(" ".join(w.text for w in rest), depth)
            elif depth < _NESTED_DEPTH and base == "trap":
                for action in _trap_actions(words):
                    self.nested(action, depth)
        elif base in _SHELLS:
            self.shell(base, words, depth)
        elif base in _STRING_RUNNERS and _command_values(words):
            self.opaque(f"it runs a string as commands ({base} -c)")
            if depth < _NESTED_DEPTH:
                for text in _command_values(words):
                    self.nested(text, depth)
        elif base in _RUNNERS and len(words) > 1:
            self.opaque(f"what {base} runs cannot be told")
            if wrapped >= _WRAPPED_DEPTH:
                return
            for inner in self.suffixes(words, 1):
                self.simple(inner, depth, wrapped + 1)
        elif base in _JOINED_RUNNERS and len(words) > 1:
            self.opaque(f"it runs its words as a shell string ({base})")
            if depth < _NESTED_DEPTH:
                texts = (" ".join(w.text for w in inner) for inner in self.suffixes(words, 1))
                # an option's value may be a command too (ssh -o ProxyCommand='rm x')
                values = (w.text.split("=", 1)[1] for w in words[1:] if "=" in w.text)
                for text in (*values, *texts):
                    if self.tries <= 0:
                        break
                    if len(text) <= _MAX_TEXT:
                        self.tries -= 1
                        self.nested(text, depth)
        elif base in ("cd", "pushd", "popd"):
            self.change_directory(words)
        if base in _WRAPPERS or (base == "find" and any(w.text in _FIND_EXEC for w in words)):
            if wrapped >= _WRAPPED_DEPTH:
                self.opaque(f"it wraps commands more than {_WRAPPED_DEPTH} deep")
                return
            for inner in self.wrapped(base, words, depth):
                self.simple(inner, depth, wrapped + 1)

    def shell(self, base: str, words: list[Word], depth: int) -> None:
        """A shell: on a string (``-c``), read for deny rules; on its input, unread."""
        runs, strings = _shell_strings(words)
        if runs:
            self.opaque(f"it starts a shell on a string ({base} -c)")
            if depth < _NESTED_DEPTH:
                for text in strings:
                    self.nested(text, depth)
        elif strings == [] and base != "busybox":
            self.opaque(f"it starts a shell that reads commands from its input ({base})")

    def suffixes(self, words: list[Word], start: int) -> Iterator[list[Word]]:
        """``words[j:]`` for each ``j`` from ``start``: each may be a command; those
        longer than the words left to read are skipped (the line is opaque then)."""
        for j in range(start, len(words)):
            if len(words) - j <= self.words_left:
                yield words[j:]
            else:
                self.opaque("it runs more commands than can be read")

    def wrapped(self, base: str, words: list[Word], depth: int) -> Iterable[list[Word]]:
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
        spec = _WRAPPERS[base]
        try:
            options, i = _getopt(spec, words)
            i = self.operands(base, spec, words, i)
        except _Unsure as unsure:  # an option or a command: each later word may start it
            self.opaque(f"what {base} runs cannot be told")
            return self.suffixes(words, unsure.index + 1)
        names = {name for name, _ in options}
        split = [value for name, value in options if name in ("-S", "--split-string")]
        if base == "env" and split:
            # env -S 'rm -rf x': the string is split into the command's first words
            self.opaque("it runs a command env splits from a string")
            if depth < _NESTED_DEPTH:
                rest = " ".join(shlex.quote(w.text) for w in words[i:])
                self.nested(f"{split[-1]} {rest}", depth)
            return []
        if base == "flock" and i < len(words) and words[i].text in ("-c", "--command"):
            self.opaque("it runs a string as commands (flock -c)")
            if depth < _NESTED_DEPTH and i + 1 < len(words):
                self.nested(words[i + 1].text, depth)
            return []
        inner = words[i:]
        if inner and inner[0].text.startswith("-") and inner[0].text != "-":
            # no command is named so (env -i A=1 -u X rm runs "-u"): an option the
            # tool may read after all, so each later word may start the command
            self.opaque(f"what {base} runs cannot be told")
            return self.suffixes(words, i + 1)
        if base == "watch" and not names & {"-x", "--exec"}:
            # it runs its words joined, as a shell string
            self.opaque("it runs a string as commands (watch)")
            if inner and depth < _NESTED_DEPTH:
                self.nested(" ".join(w.text for w in inner), depth)
            return []
        if base == "xargs":
            return [[*(inner or [Word("echo", dynamic=False)]), _UNKNOWN]]
        return [inner] if inner else []

    def operands(self, base: str, spec: _Wrapper, words: list[Word], i: int) -> int:
        """The index of the command after the options that end at ``i``: past env's
        ``-``, ``NAME=VALUE`` words and the wrapper's positional words.

        Raises:
            _Unsure: A word there is expanded by the shell.
        """
        n = len(words)
        if base == "env" and i < n and words[i].text == "-":
            i += 1  # env - = env -i
        while spec.assignments and i < n and _ASSIGNMENT.match(words[i].text):
            if words[i].dynamic:
                raise _Unsure(i)  # FOO=$X splits into more words
            i += 1
        for _ in range(spec.positional):
            if i >= n:
                break
            if words[i].dynamic:
                raise _Unsure(i)
            if base == "chrt" and not words[i].text.isdigit():
                break  # no priority given: the command follows at once
            i += 1
        return i

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


_LOOSE_WORDS = 512
"""How many words of a text the parser cannot read are looked at."""
_OPERATOR = re.compile(r"[;&|()<>!{}]+")
"""A word of operator characters only (``;``, ``&&``, ``|``, ``(`` ...)."""
_EXPANDED = re.compile(r"[$`*?\[{~]")
"""Characters that make a loosely read word dynamic."""


def _loose_words(command: str) -> tuple[Word, ...]:
    """The words of ``command`` as :mod:`shlex` splits them (operators apart), or at
    its white space when its quotes do not close; at most :data:`_LOOSE_WORDS`."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    texts: list[str] = []
    try:
        for text in lexer:
            texts.append(text)
            if len(texts) >= _LOOSE_WORDS:
                break
    except ValueError:  # no closing quotation
        texts = command.split()[:_LOOSE_WORDS]
    return tuple(Word(t, dynamic=bool(_EXPANDED.search(t))) for t in texts)


def _parse(command: str) -> list[Any]:
    trees: list[Any] = require_parser().parse(command)
    return trees


def _has_pos(node: Any) -> bool:
    pos = getattr(node, "pos", None)
    return isinstance(pos, tuple) and len(pos) == 2 and all(isinstance(p, int) for p in pos)


def _source(node: Any, source: str) -> tuple[str, int]:
    """The text of the word ``node`` as written (quotes kept), and where it starts in
    ``source``; its text after quote removal, and -1, when its position does not fit."""
    if _has_pos(node):
        start, end = node.pos
        if 0 <= start < end <= len(source):
            return source[start:end], start
    return str(node.word), -1


def _substitution_starts(raw: str, read: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """Where a command substitution may start in ``raw`` (``$(``, a backtick, ``<(``,
    ``>(``; those bashlex has read, in ``read``, left out): ``(index of its text, the
    character that may close it)``. Escapes and quotes are not trusted: a candidate
    too many is read for deny rules, never one too few."""
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(read):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    firsts = [begin for begin, _ in merged]
    starts: list[tuple[int, str]] = []
    for index, char in enumerate(raw):
        if char != "`" and not (char == "(" and index and raw[index - 1] in "$<>"):
            continue
        k = bisect_right(firsts, index) - 1
        if k >= 0 and index < merged[k][1]:
            continue  # inside a substitution bashlex has read
        starts.append((index + 1, "`" if char == "`" else ")"))
    return starts


def _candidates(raw: str, starts: list[tuple[int, str]]) -> list[str]:
    """Every text from a start to a closing character after it that may be the
    substitution's command (the shell's own reading is one of them); backtick texts
    also with their ``\\` \\\\ \\$`` escapes undone."""
    out: list[str] = []
    total = 0
    for begin, closer in starts:
        end = raw.find(closer, begin)
        while end != -1 and end - begin <= _EXPANSION_TEXT:
            body = raw[begin:end]
            if body.strip():
                out.append(body)
                total += len(body)
                if closer == "`":
                    plain = re.sub(r"\\([`\\$])", r"\1", body)
                    if plain != body:
                        out.append(plain)
            if len(out) > _EXPANSION_TRIES or total > 4 * _EXPANSION_TEXT:
                return list(dict.fromkeys(out))
            end = raw.find(closer, end + 1)
    return list(dict.fromkeys(out))


def _shell_strings(words: list[Word]) -> tuple[bool, list[str]]:
    """Whether a shell runs a string (``-c``), and the words that may be it: the first
    word after the options (``bash -c -e 'cmd'``, ``bash -c -- 'cmd'``), and the word
    right after ``-c`` (``fish``, ``csh``). Without ``-c``: the script it runs, or
    ``[]`` when it reads commands from its input."""
    runs = False
    strings: list[str] = []
    i = 1
    n = len(words)
    reads = False
    while i < n:
        word = words[i]
        text = word.text
        if word.dynamic:  # it may be -c, or the string: read every later word
            return True, [*strings, *(w.text for w in words[i:])]
        if text in ("-", "--"):
            i += 1
            break
        if text.startswith("--"):
            name, eq, value = text[2:].partition("=")
            if name == "command":  # fish --command=... / --command ...
                runs = True
                if eq:
                    strings.append(value)
                elif i + 1 < n:
                    strings.append(words[i + 1].text)
                    i += 1
            elif name in ("rcfile", "init-file") and not eq:
                i += 1
            i += 1
            continue
        if text[:1] in "-+" and len(text) > 1:
            letters = text[1:]
            takes = sum(letter in "oO" for letter in letters)  # -o NAME, -O NAME
            if text[0] == "-" and "c" in letters:
                runs = True
                if letters.endswith("c") and not takes and i + 1 < n:
                    strings.append(words[i + 1].text)
            if text[0] == "-" and ("s" in letters or "i" in letters):
                reads = True
            i += 1 + takes
            continue
        break
    if runs:
        if i < n:
            strings.append(words[i].text)
        return True, [s for s in dict.fromkeys(strings) if s not in ("-", "--")]
    if reads or i >= n:
        return False, []
    return False, [words[i].text]


def _command_values(words: list[Word]) -> list[str]:
    """The values of ``-c`` (also in ``-lc``), ``--command`` and ``--session-command``
    among ``words``: the strings ``su`` and the like run."""
    out: list[str] = []
    for index, word in enumerate(words[1:], 1):
        text = word.text
        following = words[index + 1].text if index + 1 < len(words) else None
        if text.startswith("--"):
            name, eq, value = text[2:].partition("=")
            if name in ("command", "session-command"):
                if eq:
                    out.append(value)
                elif following is not None:
                    out.append(following)
        elif text.startswith("-") and "c" in text[1:]:
            value = text[text.index("c", 1) + 1 :]
            if value:
                out.append(value)
            elif following is not None:
                out.append(following)
    return out


def _trap_actions(words: list[Word]) -> list[str]:
    """The commands ``trap`` sets: its first word after the options (every later
    word, when a word before it is expanded by the shell)."""
    for index, word in enumerate(words[1:], 1):
        if word.dynamic:
            return [w.text for w in words[index:]]
        if word.text == "--":
            return [words[index + 1].text] if index + 1 < len(words) else []
        if not (word.text.startswith("-") and len(word.text) > 1):
            return [word.text]
    return []


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
