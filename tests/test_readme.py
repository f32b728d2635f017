"""The examples the README points to work as written: the pendulum of the deriving page (docs/deriving.md) and
the controller main.c of docs/controller.md (the README's own quick start: tests/test_docs.py)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import rodgen

REPO = Path(__file__).resolve().parents[1]
CONTROLLER = REPO / "docs" / "controller.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(r"```" + lang + r"\n(.*?)```", CONTROLLER.read_text(), flags=re.S)


def test_quick_start_pendulum_numbers(build_dir: Path) -> None:
    """The deriving page's pendulum: its forward dynamics equals the closed form phi'' = -g cos(phi)/l,
    l'' = -g sin(phi)."""
    model = rodgen.load(REPO / "examples" / "pendulum_vl.yaml")
    sys_ = rodgen.build(model, build_dir=build_dir)
    qdd = sys_.forward_dynamics(q=[-1.2, 1.0], qd=[0.0, 0.0], u=[0.0, 0.0])
    np.testing.assert_allclose(qdd, [-9.81 * np.cos(-1.2) / 1.0, -9.81 * np.sin(-1.2)], rtol=1e-14)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_controller_main_c_compiles_and_runs(tmp_path: Path, build_dir: Path) -> None:
    """The controller page's main.c, compiled with the strict flags it shows, prints the module's forward
    dynamics."""
    main_c = next(b for b in _blocks("c") if "int main" in b)
    cmd_line = next(line.strip() for line in CONTROLLER.read_text().splitlines()
                    if line.strip().startswith("gcc -std=c99") and "main.c" in line)
    model = rodgen.load(REPO / "examples" / "exo5.yaml")
    rodgen.generate(model, tmp_path)
    (tmp_path / "main.c").write_text(main_c)
    subprocess.run(cmd_line.split(), cwd=tmp_path, check=True, capture_output=True, text=True)
    out = subprocess.run(["./main"], cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    printed = np.array([float(x) for x in out.split()])
    sys_ = rodgen.build(model, build_dir=build_dir)
    q0 = sys_.initial_state()[: sys_.nq]
    expected = sys_.forward_dynamics(q0, np.zeros(sys_.nq), np.zeros(sys_.nu))
    np.testing.assert_allclose(printed, expected, rtol=1e-12, atol=1e-12)
