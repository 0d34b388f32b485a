"""Language-server tools for toolweave: the errors a real language server reports in a
file, where a symbol is defined and used, what it is, and a file's outline.

Each session starts its servers on first use (one per workspace and language), starts
one again when it dies, and stops them, with every process they started, when the
session closes. After a file is edited or written, errors the server reports that the
file did not have are added to the model's text.

The default server for Python is ``python-lsp-server`` (``pylsp``, with pyflakes),
installed with the pack; any server that speaks LSP over standard input and output is
configured per language by the tools' params (:class:`LspParams`).
"""

from __future__ import annotations

from toolweave_lsp import _pack as pack
from toolweave_lsp._client import LspClient
from toolweave_lsp._hook import EditDiagnostics
from toolweave_lsp._servers import LanguageServers, LspParams
from toolweave_lsp._tools import (
    Diagnostic,
    Diagnostics,
    DiagnosticsOutput,
    DocumentSymbols,
    FindReferences,
    GoToDefinition,
    Hover,
    Location,
    LocationsOutput,
)

__all__ = [
    "Diagnostic",
    "Diagnostics",
    "DiagnosticsOutput",
    "DocumentSymbols",
    "EditDiagnostics",
    "FindReferences",
    "GoToDefinition",
    "Hover",
    "LanguageServers",
    "Location",
    "LocationsOutput",
    "LspClient",
    "LspParams",
    "pack",
]
