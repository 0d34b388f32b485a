"""The pack author's kit: a scripted model and pack conformance checks.

A pack's own tests use it in two ways:

- **Conformance**, one small file (``tests/test_conformance.py``)::

      from toolweave.testing import assert_pack_conforms

      def test_conformance() -> None:
          \"\"\"The pack passes toolweave's pack conformance checks.\"\"\"
          assert_pack_conforms("fs")

- **End to end**, with a scripted model driving a real session::

      from toolweave.testing import ScriptedModel, step

      async def test_edit_flow(toolweave_session) -> None:
          session = toolweave_session("fs")          # the pytest plugin's fixture
          model = ScriptedModel([
              step("write_file", {"path": "a.txt", "content": "hi"}),
              step("read_file", {"path": "a.txt"}, contains="hi"),
              step("read_file", {"path": "../x"}, expect="permission_denied"),
          ])
          transcript = await model.run(session)
          assert transcript.ok, transcript.problems

The pytest plugin (loaded automatically through the ``pytest11`` entry point when
toolweave is installed) provides the ``toolweave_session`` fixture; the functions work
without it.
"""

from toolweave.testing._conformance import (
    CHECKS,
    Problem,
    assert_pack_conforms,
    assert_toolset_conforms,
    check_pack,
    check_toolset,
    example_arguments,
)
from toolweave.testing._scripted import ScriptedModel, Step, Transcript, Turn, step

__all__ = [
    "CHECKS",
    "Problem",
    "ScriptedModel",
    "Step",
    "Transcript",
    "Turn",
    "assert_pack_conforms",
    "assert_toolset_conforms",
    "check_pack",
    "check_toolset",
    "example_arguments",
    "step",
]
