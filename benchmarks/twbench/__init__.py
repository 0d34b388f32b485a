"""toolweave's benchmark suite: the same tool, the same arguments, every framework, one run.

Run it with ``python benchmarks/run.py`` (or ``nox -s bench``); see ``benchmarks/README.md``.
"""
