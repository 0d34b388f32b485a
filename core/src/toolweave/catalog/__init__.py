"""Build time: type erasure, the catalogue of registered tools, configuration and its
one-pass validation, expressions, templates, behaviour versions, and the immutable
:class:`ToolSet` a session is built from.
"""

from toolweave.catalog._builder import ToolSetBuilder
from toolweave.catalog._catalog import Catalog
from toolweave.catalog._config import ToolConfig, ToolSetConfig
from toolweave.catalog._describe import (
    NOT_FOR_HINT,
    literal_parameters,
    literal_parameters_hint,
    says_what_not,
)
from toolweave.catalog._erasure import ErasedTool
from toolweave.catalog._expr import Expression, SetView, ToolFacts, compile_expression
from toolweave.catalog._external import external_tool, schema_validator
from toolweave.catalog._merge import BuildReport, SkippedEntry
from toolweave.catalog._templates import TemplateRenderer
from toolweave.catalog._toolset import ToolDefinition, ToolEntry, ToolSet
from toolweave.catalog._versions import DeprecatedVersionWarning, ToolweaveWarning

__all__ = [
    "NOT_FOR_HINT",
    "BuildReport",
    "Catalog",
    "DeprecatedVersionWarning",
    "ErasedTool",
    "Expression",
    "SetView",
    "SkippedEntry",
    "TemplateRenderer",
    "ToolConfig",
    "ToolDefinition",
    "ToolEntry",
    "ToolFacts",
    "ToolSet",
    "ToolSetBuilder",
    "ToolSetConfig",
    "ToolweaveWarning",
    "compile_expression",
    "external_tool",
    "literal_parameters",
    "literal_parameters_hint",
    "says_what_not",
    "schema_validator",
]
