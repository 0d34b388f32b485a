"""One adapter per framework; each times the framework's natural public path."""

from __future__ import annotations

from twbench.frameworks._base import Dispatch, Framework, Variant
from twbench.frameworks.fastmcp_ import FastMCPServer
from twbench.frameworks.floor import Floor
from twbench.frameworks.langchain_core_ import LangchainCore
from twbench.frameworks.mcp_sdk import McpSdk
from twbench.frameworks.openai_agents_ import OpenAIAgents
from twbench.frameworks.pydantic_ai_ import PydanticAI
from twbench.frameworks.toolweave_ import Toolweave

__all__ = ["ALL", "Dispatch", "Framework", "Variant", "available"]

ALL: tuple[type[Framework], ...] = (
    Floor,
    Toolweave,
    OpenAIAgents,
    PydanticAI,
    McpSdk,
    FastMCPServer,
    LangchainCore,
)
"""Every framework, in table order: the floor, toolweave, then the peers."""


def available(only: set[str] | None = None) -> tuple[list[Framework], dict[str, str]]:
    """The frameworks that can run here, and why the others cannot."""
    ready: list[Framework] = []
    missing: dict[str, str] = {}
    for cls in ALL:
        if only is not None and cls.key not in only and cls.key not in {"floor", "toolweave"}:
            continue
        fw = cls()
        reason = fw.missing()
        if reason is None:
            ready.append(fw)
        else:
            missing[cls.key] = reason
    return ready, missing
