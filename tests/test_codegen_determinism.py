"""Generated files are deterministic: byte-identical across processes and hash seeds, no timestamps."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO

SCRIPT = """
import sys, rodgen
from rodgen.codegen import generate
generate(rodgen.load(sys.argv[1]), sys.argv[2], method=sys.argv[3])
"""


@pytest.mark.parametrize("method", ["matrix", "recursive"])
def test_same_bytes_across_hash_seeds(tmp_path: Path, method: str) -> None:
    outs = []
    for seed in ("0", "4242"):
        out = tmp_path / f"seed{seed}"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        res = subprocess.run([sys.executable, "-c", SCRIPT, str(EXAMPLES / "exo5.yaml"), str(out), method],
                             env=env, capture_output=True, text=True, cwd=REPO)
        assert res.returncode == 0, res.stderr
        outs.append(out)
    names = sorted(p.name for p in outs[0].iterdir())
    from rodgen.codegen.runtime import runtime_sources
    assert names == sorted({"exo5.c", "exo5.h"} | set(runtime_sources()))
    assert names == sorted(p.name for p in outs[1].iterdir())
    for name in names:
        a, b = (outs[0] / name).read_bytes(), (outs[1] / name).read_bytes()
        assert a == b, f"{name} differs between PYTHONHASHSEED=0 and 4242 (see {tmp_path})"


def test_no_timestamps_or_hosts(tmp_path: Path) -> None:
    import datetime
    import socket

    import rodgen
    from rodgen.codegen import generate
    files = generate(rodgen.load(EXAMPLES / "double_pendulum.yaml"))
    year = str(datetime.date.today().year)
    host = socket.gethostname()
    for name, text in files.files.items():
        assert year not in text, name
        assert not host or host not in text, name
        if name in (files.spec.header, files.spec.source, "rodgen_runtime.h"):   # rendered, not copied
            assert "do not edit" in text.lower(), name
