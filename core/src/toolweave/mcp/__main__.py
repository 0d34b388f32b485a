"""Serve installed packs over MCP: ``python -m toolweave.mcp [options]``.

Examples::

    python -m toolweave.mcp --packs fs --workspace ./project          # stdio
    python -m toolweave.mcp --packs fs --http 127.0.0.1:8765          # streamable HTTP
    python -m toolweave.mcp --packs none --pack my_module:pack        # a pack object

With ``--http`` and port 0, the endpoint URL is printed on stdout once the server
accepts connections (``toolweave: serving MCP on <url>``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from toolweave.errors import ToolweaveError
from toolweave.plugins import PackManager

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m toolweave.mcp", description="Serve toolweave packs over MCP."
    )
    parser.add_argument(
        "--packs",
        default=None,
        help="comma-separated pack names to load ('none' for none; default: every installed pack)",
    )
    parser.add_argument(
        "--pack",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="also load this pack object (repeatable)",
    )
    parser.add_argument("--workspace", default=None, help="workspace root (default: cwd)")
    parser.add_argument("--http", default=None, metavar="HOST:PORT", help="serve streamable HTTP")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --http bind an address that is not loopback (no authentication!)",
    )
    parser.add_argument("--name", default="toolweave", help="server name shown to clients")
    return parser


def _load_object(spec: str) -> object:
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server; returns the process exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    from toolweave.mcp import serve

    manager = PackManager()
    if args.packs is None:
        manager.discover()
    else:
        names = [p.strip() for p in args.packs.split(",") if p.strip() and p.strip() != "none"]
        manager.discover(include=names, autoload=False)
    try:
        for spec in args.pack:
            manager.add(spec.partition(":")[0].rpartition(".")[2], _load_object(spec))
        session = manager.build().session(workspace=args.workspace)

        def ready(url: str) -> None:
            print(f"toolweave: serving MCP on {url}", flush=True)

        serve(
            session,
            http=args.http,
            on_ready=ready,
            allow_remote=args.allow_remote,
            name=args.name,
        )
    except (ToolweaveError, ImportError, AttributeError) as exc:
        print(f"toolweave: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
