"""The energy balance of a run closes to the integration error: the change of kinetic + potential energy
equals the input work minus the energy dissipated by the dampers, each computed here from the model's own
dampers and input torques (not from the compiled bias), and rodgen simulate prints it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import simpson

import rodgen
from conftest import EXAMPLES
from rodgen.cli import main
from rodgen.runtime import PD, Reference
from rodgen.runtime.balance import energy_balance

ARM = EXAMPLES / "telescopic_arm.yaml"


@pytest.fixture(scope="module")
def arm(build_dir: Path) -> "rodgen.runtime.CompiledModel":
    return rodgen.build(rodgen.load(ARM), build_dir=build_dir)


def test_damped_pd_run_balances(arm) -> None:
    y0 = arm.initial_state()
    y0[3:] = [1.0, -2.0, 0.3]
    hold = Reference.hold(y0[:3] + [0.3, -0.2, 0.05])
    res = arm.simulate(y0, 2.0, 5e-4, controller=PD(hold, kp=40.0, kd=3.0))
    assert res.ok
    bal = energy_balance(arm, res)
    # independent of the compiled bias: the model's dampers (joint of 'upper' on its relative angle, which
    # is th_upper; the telescopic segment on its length) and the inputs on relative angles and the length,
    # whose input map is the identity
    np.testing.assert_array_equal(arm.input_map(y0[:3]), np.eye(3))
    c_joint, c_ext = arm.parameters["c_joint"], arm.parameters["c_ext"]
    dissipated = simpson(c_joint * res.qd[:, 0] ** 2 + c_ext * res.qd[:, 2] ** 2, x=res.t)
    input_work = simpson(np.einsum("ni,ni->n", res.u, res.qd), x=res.t)
    assert bal.dissipated == pytest.approx(dissipated, rel=1e-10)
    assert bal.input_work == pytest.approx(input_work, rel=1e-10)
    assert bal.dissipated > 0.05 and abs(bal.input_work) > 1.0
    E = res.kinetic + res.potential
    assert bal.change == pytest.approx(E[-1] - E[0], rel=1e-14)
    # what is left is the integration error: RK4 at 0.5 ms
    assert abs(bal.residual) < 1e-7 * max(abs(bal.input_work), bal.dissipated)
    # a ten times longer step leaves a residual that grows like dt^4
    coarse = energy_balance(arm, arm.simulate(y0, 2.0, 5e-3, controller=PD(hold, kp=40.0, kd=3.0)))
    assert abs(coarse.residual) > 100 * abs(bal.residual)


def test_free_undamped_run_dissipates_nothing(build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)
    y0 = robot.initial_state()
    y0[2:] = [0.5, -1.0]
    res = robot.simulate(y0, 2.0, 1e-3)
    bal = energy_balance(robot, res)
    assert bal.input_work == 0.0
    assert abs(bal.dissipated) < 1e-12
    assert abs(bal.residual) < 1e-8


def test_cli_prints_the_balance(tmp_path: Path, build_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(ARM), "--t-end", "1", "--dt", "1e-3", "--hold", "50,5",
                 "--build-dir", str(build_dir)]) == 0
    out = capsys.readouterr().out
    assert "drift" not in out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    assert set(lines) == {"input", "dissipated", "residual"}
    residual = float(lines["residual"].split()[1])
    work = float(lines["input"].split()[2])
    assert abs(residual) < 1e-6 * abs(work)
