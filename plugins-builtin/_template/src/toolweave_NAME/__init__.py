"""toolweave-NAME: a toolweave pack.

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``NAME``); ``load_packs(include=["NAME"])`` loads it alone.
"""

from __future__ import annotations

from toolweave_NAME import pack
from toolweave_NAME._greet import Greet, GreetArgs, Greeting

__all__ = ["Greet", "GreetArgs", "Greeting", "pack"]
