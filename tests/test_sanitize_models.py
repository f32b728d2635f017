"""Generated models and rodgen's C runtime under -fsanitize=address,undefined.

Two generated models are compiled with the runtime's C (as ``rodgen generate`` writes it) into a program
(tests/contact_c/sanitize_model.c) that calls every routine of the model's table with arrays of exactly
the contract's sizes (each its own allocation) and runs the runtime on it: the passive compass gait
(contacts, the hybrid simulation with touchdowns, lift-offs and output in chunks) and the spatial arm
(frames and their Jacobians, RK4 and Dormand-Prince in chunks). A sanitizer report fails the test (the
program is built with -fno-sanitize-recover). Its numbers are checked too: M qdd + bias = B u between
the mass matrix and the forward dynamics (two algorithms of the generated code), the walker's 13 heel
strikes in 10 s of Goswami's published gait, and the damped arm losing energy. Skipped when the compiler
has no sanitizer runtime.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from _contact_c import CC

import rodgen

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
PROGRAM = Path(__file__).resolve().parent / "contact_c" / "sanitize_model.c"
SANITIZE = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-O1", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


@pytest.fixture(scope="module")
def sanitizer(tmp_path_factory: pytest.TempPathFactory) -> None:
    if CC is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("probe")
    (folder / "probe.c").write_text("int main(void) { return 0; }\n")
    built = subprocess.run([CC, *SANITIZE, str(folder / "probe.c"), "-o", str(folder / "probe")],
                           capture_output=True, text=True)
    if built.returncode != 0 or subprocess.run([str(folder / "probe")], capture_output=True).returncode != 0:
        pytest.skip(f"the compiler has no address/undefined sanitizer runtime: {built.stderr[:200]}")


def run_sanitized(folder: Path, model_file: Path, y0: np.ndarray, mode: str) -> dict[str, list[float]]:
    """Generate ``model_file`` into ``folder``, build the program with the sanitizers, run it; its lines."""
    files = rodgen.generate(rodgen.load(model_file))
    files.write(folder)
    prefix = files.spec.prefix
    defines = [f'-DMODEL_HEADER="{prefix}.h"', f"-DMODEL_TABLE={prefix}_model"]
    if f"{prefix}_frames(" in (folder / f"{prefix}.h").read_text():
        defines += [f"-DFRAMES={prefix}_frames", f"-DFRAME_JACOBIANS={prefix}_frame_jacobians",
                    f"-DNFRAMES={prefix}_nframes"]
    sources = sorted(str(f) for f in folder.glob("*.c"))
    exe = folder / "sanitized"
    built = subprocess.run([CC, *SANITIZE, f"-I{folder}", *defines, str(PROGRAM), *sources, "-o", str(exe), "-lm"],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1", UBSAN_OPTIONS="print_stacktrace=1")
    run = subprocess.run([str(exe), *(repr(float(v)) for v in y0), mode], capture_output=True, text=True,
                         timeout=600, env=env)
    assert run.returncode == 0 and run.stderr == "", f"exit {run.returncode}\n{run.stderr[-4000:]}"
    out: dict[str, list[float]] = {}
    for line in run.stdout.splitlines():
        name, *values = line.split()
        out[name] = [float(v) for v in values]
    return out


def check_dynamics(out: dict[str, list[float]], nq: int, nu: int) -> None:
    """Forward dynamics (zero input) against the mass matrix and the bias: M qdd + bias = 0; inverse dynamics
    of that qdd is zero too; the RHS is [qd, qdd]."""
    M = np.array(out["M"]).reshape(nq, nq)
    qdd, bias = np.array(out["qdd"]), np.array(out["bias"])
    assert out["forward_status"] == [0] and out["rhs_status"] == [0]
    np.testing.assert_allclose(M, M.T, atol=1e-12 * np.abs(M).max())
    assert np.all(np.linalg.eigvalsh(M) > 0)
    scale = np.abs(M).max() * np.abs(qdd).max() + np.abs(bias).max()
    np.testing.assert_allclose(M @ qdd + bias, 0.0, atol=1e-12 * scale)
    np.testing.assert_allclose(out["Q"], 0.0, atol=1e-12 * scale)
    np.testing.assert_array_equal(out["dy"][nq:], qdd)
    assert len(out["B"]) == nq * nu


def test_the_compass_gait_walks_clean_under_the_sanitizers(sanitizer: None, tmp_path: Path) -> None:
    sys.path.insert(0, str(EXAMPLES))
    import compass_gait as cg  # examples/compass_gait.py: the walker's state on its section
    model = rodgen.load(EXAMPLES / "compass_gait.yaml")
    y0 = cg.state(SimpleNamespace(parameters=model.parameter_values()), np.array([0.2187, -1.0918, -0.3772]))
    out = run_sanitized(tmp_path, EXAMPLES / "compass_gait.yaml", y0, "walk")
    vm = model.validate()
    check_dynamics(out, len(vm.coordinates()), len(vm.inputs()))
    assert "constrained_S" in out and "constraint_jacobian" in out
    status, rows, events, touchdowns, t_last, _ = out["walk"]
    assert status == 0 and t_last == 10.0
    assert touchdowns == 13  # Goswami's period-one gait: a heel strike about every 0.74 s
    assert rows > 10_000 and events >= touchdowns


def test_the_spatial_arm_runs_clean_under_the_sanitizers(sanitizer: None, tmp_path: Path) -> None:
    model = rodgen.load(EXAMPLES / "spatial" / "arm3.yaml")
    vm = model.validate()
    nq = len(vm.coordinates())
    y0 = np.concatenate([[0.3, -0.6, 0.9], [0.5, -0.2, 0.1]])
    out = run_sanitized(tmp_path, EXAMPLES / "spatial" / "arm3.yaml", y0, "free")
    check_dynamics(out, nq, len(vm.inputs()))
    frames = np.array(out["frames"]).reshape(-1, 12)
    for f in frames:  # every frame's rotation is a rotation
        R = f[3:].reshape(3, 3)
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert len(out["frame_jacobians"]) == len(frames) * 6 * nq
    for method in ("free0", "free1"):  # RK4 and DOPRI5
        status, rows, t_last, e0, e1 = out[method]
        assert status == 0 and t_last == 1.0 and rows >= 2
        assert e1 < e0  # the shoulder's damping takes energy, nothing adds it
    assert out["free0"][1] == 1001  # RK4 at 1 ms: every step stored, over 21 chunks of 50 rows
    np.testing.assert_allclose(out["free1"][4], out["free0"][4], rtol=1e-6)  # the two integrators agree
