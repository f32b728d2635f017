"""Co-Simulation: inputs set under a running hybrid run (rodgen_hybrid_forget) can release a contact that is
below the ground and sinking; it is held again at once, as hy_jump does after a jump (see
test_hybrid_jump_again.py: the bar, its lift as an input).

The bar at rest flat on both ends, below the ground within the start tolerance, the lift 0 (both ends press);
after one communication step the lift is set to F: the next DoStep's check releases a and b, and a, left
sinking, touches at once. References: the same run of robot.simulate with the lift held (its sample at DT
releases them), a never below where it started (without the touch it sinks about 1 mm in the run), the force
on a at rest on its own by hand.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_hybrid_jump_again import DT, FLAT_PHI, FLAT_Y, I_A, S_C, S_F, T_FLAT, F, G, M, _model

import rodgen
from rodgen.runtime.result import Status

fmpy = pytest.importorskip("fmpy")
from test_fmu3 import Instance  # noqa: E402


def test_inputs_set_under_the_run_release_a_contact_left_sinking_and_it_is_held_at_once(
        build_dir: Path, tmp_path: Path) -> None:
    robot = rodgen.build(_model(held=True), build_dir=build_dir)
    fmu = rodgen.export_fmu(robot, tmp_path / "lever.fmu", contacts=["a", "b"])
    y0 = np.r_[0, FLAT_Y, FLAT_PHI, 0, 0, 0]
    states = [f"q.{c}" for c in robot.coordinates] + [f"qd.{c}" for c in rodgen.fmu.velocity_names(robot)]
    names = states + ["force.a.n", "force.b.n"]
    inst = Instance(fmu).start(dict(zip(states, map(float, y0))) | {"fmu.max_step": DT})
    n = round(T_FLAT / DT)
    first = inst.run(0.0, 1, DT, names)
    assert np.all(first[:, -2:] > 0)                      # both ends press under the bar's weight
    inst.set({"u.lift_y": F})                             # rodgen_hybrid_forget: the next DoStep checks
    rows = np.vstack([first, inst.run(DT, n - 1, DT, names)])

    def lift(t: float, q: np.ndarray, qd: np.ndarray) -> list[float]:
        return [0.0, 0.0 if t < 0.5 * DT else F]

    ref = robot.simulate(y0, T_FLAT, DT, contacts=["a", "b"], u=lift, hold=True)
    assert ref.status == Status.SUCCESS, ref.message
    assert [(e["kind"], e["block"]) for e in ref.events] == [("liftoff", "a"), ("liftoff", "b"), ("touchdown", "a")]
    # the FMU's state at DT is the one before the jump (made in the next DoStep), the reference's first row there
    grid = np.r_[[np.flatnonzero(ref.t == k * DT)[-1 if k > 1 else 0] for k in range(1, n + 1)]]
    np.testing.assert_allclose(rows[:, :6], np.column_stack([ref.q, ref.qd])[grid], rtol=0, atol=1e-12)

    gap_a = robot.constraint_position(rows[:, :3])[:, 1]
    assert gap_a.min() > FLAT_Y - 1e-12 and gap_a[-1] < 0     # a never sinks
    assert np.all(rows[1:, -2] > 0) and np.all(rows[1:, -1] == 0)   # a held alone from DT on
    phidd = (F * S_F - M * G * S_C) / I_A
    np.testing.assert_allclose(rows[1:, -2], ref.lam[grid[1:], 1], rtol=1e-9)
    # at rest right after the touch, a carries the pivot's force by hand (the reference's row after it at DT)
    assert ref.lam[np.flatnonzero(ref.t == DT)[-1], 1] == pytest.approx(M * S_C * phidd - (F - M * G), rel=1e-5)
