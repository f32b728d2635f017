"""rodgen.gait.stride under the runtime's own PD and computed-torque laws: their closed-form ∂u/∂y (∂B/∂q and
the inverse dynamics' derivative from the model's constraint_partials) against central differences of the
laws themselves, and the Poincaré map's Jacobian of the compass gait with a PD hip torque against central
differences of the stride map simulated directly (``simulate(controller=...)`` with contacts, not stride)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen import gait
from rodgen.runtime.control import PD, ComputedTorque, Reference

DT = 1e-3
Z = np.array([0.2187, -1.0918, -0.3772])


@pytest.fixture(scope="module")
def walker(build_dir: Path, tmp_path_factory: Any) -> Any:
    """The compass gait with its hip actuated (one torque between the legs)."""
    sys.path.insert(0, str(EXAMPLES))
    import compass_gait as cg
    text = (EXAMPLES / "compass_gait.yaml").read_text().replace("joint: {actuated: false}",
                                                               "joint: {actuated: true}")
    path = tmp_path_factory.mktemp("compass") / "compass_gait_hip.yaml"
    path.write_text(text.replace("name: compass_gait", "name: compass_gait_hip"))
    robot = rodgen.build(rodgen.load(path), build_dir=build_dir)
    assert robot.nu == 1
    return robot, cg


def law_differences(law: Any, t: float, y: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = []
    for j in range(y.size):
        e = np.zeros(y.size)
        e[j] = h
        cols.append((law(t, y + e) - law(t, y - e)) / (2 * h))
    return np.stack(cols, axis=1)


def references(robot: Any) -> Reference:
    n = robot.nq
    t = np.linspace(0.0, 1.0, 5)
    q = np.array([[0.1 * k, 0.9 + 0.01 * k, 0.2 - 0.05 * k, -0.3 + 0.1 * k] for k in range(5)])[:, :n]
    return Reference(t, q)


@pytest.mark.parametrize("kind", ["pd", "computed_torque"])
def test_builtin_law_jacobian_is_the_difference_of_the_law(walker: Any, kind: str) -> None:
    robot, cg = walker
    n = robot.nv
    ref = references(robot)
    ctrl = (PD(ref, kp=30.0, kd=3.0) if kind == "pd"
            else ComputedTorque(ref, kp=np.linspace(20.0, 50.0, n), kd=np.linspace(2.0, 6.0, n)))
    law, dlaw = gait._input_law(robot, ctrl, None, None, 1e-6)
    y = cg.state(robot, Z)
    t = 0.37
    # the law itself is the runtime's: one RK4 step of a run under the controller equals one under u = law
    a = robot.simulate(y, 5 * DT, DT, controller=ctrl, contacts=["foot_a"], disarmed=["foot_b"],
                       alpha=0.0, beta=0.0)
    b = robot.simulate(y, 5 * DT, DT, u=lambda tt, q, qd: law(tt, np.concatenate([q, qd])),
                       contacts=["foot_a"], disarmed=["foot_b"], alpha=0.0, beta=0.0)
    assert np.abs(a.q[-1] - b.q[-1]).max() <= 1e-12 and np.abs(a.qd[-1] - b.qd[-1]).max() <= 1e-12
    D, num = dlaw(t, y), law_differences(law, t, y)
    assert np.abs(D - num).max() <= 1e-7 * max(1.0, np.abs(num).max())
    assert np.abs(num).max() > 1.0


def test_pd_gait_jacobian_is_the_difference_of_the_simulated_stride_map(walker: Any) -> None:
    robot, cg = walker
    y0 = cg.state(robot, Z)
    ctrl = PD(Reference.hold(y0[:robot.nq]), kp=2.0, kd=0.5)

    def simulated(z: np.ndarray) -> np.ndarray:
        res = robot.simulate(cg.state(robot, z), 2.0, DT, controller=ctrl, contacts=["foot_a"],
                             disarmed=["foot_b"], arm_gap=cg.ARM_GAP, event_tol=1e-13, alpha=0.0, beta=0.0)
        ev = res.events[0]
        assert ev["kind"] == "touchdown" and ev["block"] == "foot_b"
        i = int(np.flatnonzero(res.t == ev["t"])[-1])
        return cg.RELABEL @ np.concatenate([res.q[i], res.qd[i]])

    s = gait.stride(robot, y0, ["foot_a"], "foot_b", DT, u=ctrl, arm_gap=cg.ARM_GAP)
    DP = cg.RELABEL @ s.jacobian @ cg.section_jacobian(robot, Z)
    assert np.abs(cg.RELABEL @ s.y_plus - simulated(Z)).max() <= 1e-12
    h = 1e-6
    num = np.stack([(simulated(Z + h * e) - simulated(Z - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    assert np.abs(DP - num).max() <= 1e-6 * np.abs(num).max()
    # the feedback matters: the passive walker's map is another matrix
    passive = gait.stride(robot, y0, ["foot_a"], "foot_b", DT, arm_gap=cg.ARM_GAP)
    assert np.abs(cg.RELABEL @ passive.jacobian @ cg.section_jacobian(robot, Z) - num).max() > 1e-3


def test_builtin_law_with_input_jacobian_is_refused(walker: Any) -> None:
    robot, cg = walker
    ctrl = PD(Reference.hold(cg.state(robot, Z)[:robot.nq]), kp=2.0, kd=0.5)
    with pytest.raises(ValueError, match="closed form"):
        gait.stride(robot, cg.state(robot, Z), ["foot_a"], "foot_b", DT, u=ctrl,
                    input_jacobian=lambda t, y: np.zeros((1, 8)))


def test_constraint_partials_at_zero_inputs_is_the_inverse_dynamics_derivative(walker: Any) -> None:
    robot, cg = walker
    n = robot.nv
    y = cg.state(robot, Z)
    q, qd, a = y[:n], y[n:], np.array([0.3, -0.7, 1.1, -0.4])
    dg, dk = robot.constraint_partials(q, qd, a)
    assert dg.shape == (n, 2 * n) and dk.shape == (robot.nrows, 2 * n)
    ID = lambda x: robot.inverse_dynamics(x[:n], x[n:], a)  # noqa: E731
    assert np.abs(dg - law_differences(lambda _, x: ID(x), 0.0, y)).max() <= 1e-6 * np.abs(dg).max()
    # at u = e_j the difference is -∂(B e_j)/∂q: zero here (the hip torque's map is constant)
    du, _ = robot.constraint_partials(q, qd, a, u=np.ones(1))
    assert np.abs(du - dg).max() <= 1e-12
    with pytest.raises(ValueError, match="lam of the model 'compass_gait_hip'"):
        robot.constraint_partials(q, qd, a, lam=np.zeros(robot.nrows + 1))
