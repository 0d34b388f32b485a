"""Run toolweave's benchmark suite: ``python benchmarks/run.py [--quick] [--check] [--only W1]``.

Peers are installed only in the benchmark environment (``benchmarks/requirements.txt``,
``nox -s bench``). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from twbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
