"""The command line's output ends quietly when its reader goes away."""
from __future__ import annotations

from pathlib import Path

import rodgen
from conftest import EXAMPLES

MODEL = str(EXAMPLES / "double_pendulum.yaml")


def test_output_into_a_closed_pipe_ends_quietly() -> None:
    """`rodgen equations MODEL.yaml | head`: the reader goes away; no traceback, no error line."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(Path(rodgen.__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-m", "rodgen.cli", "equations", MODEL], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()                     # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""
