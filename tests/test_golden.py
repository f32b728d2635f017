"""Golden files: the generated C of one small model, byte for byte.

``tests/golden/pendulum_vl/`` holds ``pendulum_vl.h`` and ``pendulum_vl.c`` as
``rodgen generate examples/pendulum_vl.yaml`` writes them. Any change of the
templates, the lowering or the printer shows up here as a readable diff of
generated code, to be reviewed like a code change. The numbers of that code
are checked elsewhere (closed forms in test_closed_forms.py and
test_readme.py, Pinocchio, MuJoCo); this test only makes changes visible.

After an intended change, rewrite the files and review the diff:

    python -m pytest tests/test_golden.py --update-golden
    git diff tests/golden/

The files carry rodgen's version, so a version bump needs the same update.
"""
from __future__ import annotations

import difflib
from pathlib import Path

import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.codegen import generate

GOLDEN = Path(__file__).resolve().parent / "golden" / "pendulum_vl"


def test_generated_c_matches_golden_files(update_golden: bool) -> None:
    files = generate(rodgen.load(EXAMPLES / "pendulum_vl.yaml"))
    for name in (files.spec.header, files.spec.source):
        path = GOLDEN / name
        text = files.files[name]
        if update_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
            continue
        if not path.is_file():
            pytest.fail(f"{path} is missing; create it with: python -m pytest tests/test_golden.py --update-golden")
        want = path.read_bytes().decode("utf-8")
        if text != want:
            diff = "".join(list(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                     f"golden/{name}", f"generated/{name}"))[:80])
            pytest.fail(f"the generated {name} differs from tests/golden/pendulum_vl/{name}; if the change is "
                        f"intended, run python -m pytest tests/test_golden.py --update-golden and review the "
                        f"diff:\n{diff}")
