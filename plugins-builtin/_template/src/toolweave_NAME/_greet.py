"""The ``greet`` tool: an example to replace with the pack's own tools."""

from __future__ import annotations

from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, Kind, Tool, ToolOutput


class GreetArgs(BaseModel):
    """Arguments of ``greet``."""

    name: str = Field(min_length=1, description="Who to greet.")
    """Who to greet."""

    excited: bool = Field(default=False, description="End the greeting with '!'.")
    """End the greeting with an exclamation mark."""


class Greeting(ToolOutput):
    """What ``greet`` returns."""

    text: str
    """The greeting."""

    def to_model(self) -> str:
        """The model reads the greeting itself, not JSON."""
        return self.text


class Greet(Tool[GreetArgs, Greeting]):
    """Greet someone by name."""

    id = "greet"
    namespace = "NAME"
    kind = Kind.OTHER
    description = (
        "Greet someone by name and get the greeting back as text. Do not use it to send "
        "messages or to talk to the user: it only builds the greeting."
    )
    capabilities = Capabilities(read_only=True, scope="none", blocking=False)

    async def run(self, ctx: Context, args: GreetArgs) -> Greeting:
        """Build the greeting."""
        end = "!" if args.excited else "."
        return Greeting(text=f"Hello, {args.name}{end}")
