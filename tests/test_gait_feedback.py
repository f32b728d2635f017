"""rodgen.gait under a feedback law: exo5_walk's virtual-constraint controller (in C, its stance leg held over
a step). The step map's Jacobian (constrained dynamics exact, the controller's ∂u/∂y by central differences,
saltation, impact) against central differences of the step map simulated here directly (``simulate`` with
contacts, the section and the relabelling of this file, not gait.stride); the largest Floquet multiplier
against the decay of a perturbation over several simulated steps; the C law called from Python against the
Python reference law."""
from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from conftest import EXAMPLES
from rodgen import gait

DT = 1e-3


@pytest.fixture(scope="module")
def cycle(build_dir: Any) -> Any:
    sys.path.insert(0, str(EXAMPLES))
    import exo5_walk as ex
    robot, ctrl, lc = ex.stability(DT, build_dir=str(build_dir))
    return ex, robot, ctrl, lc


def simulated_map(ex: Any, robot: Any, ctrl: Any, z: np.ndarray) -> np.ndarray:
    """P(z) from the hybrid simulation alone: the state after foot_b's heel strike, legs swapped."""
    y0, _ = ex.section_state(robot, z)
    res = robot.simulate(y0, ex.STEP_T_MAX, DT, u=ctrl, contacts=["foot_a"], disarmed=["foot_b"],
                         arm_gap=ex.ARM_GAP, on_slip="continue", event_tol=1e-13, alpha=0.0, beta=0.0)
    strike = next(e for e in res.events if e["kind"] == "touchdown")
    assert strike["block"] == "foot_b"
    i = int(np.flatnonzero(res.t == strike["t"])[-1])
    names = list(robot.coordinates)
    other = {"a": "b", "b": "a"}
    swapped = [names.index("_".join(other.get(w, w) for w in nm.split("_"))) for nm in names[2:]]
    return np.concatenate([res.q[i, swapped], res.qd[i, swapped]])


def test_exo5_gait_under_its_controller_is_a_fixed_point(cycle: Any) -> None:
    ex, robot, ctrl, lc = cycle
    assert lc.residual < 1e-9
    np.testing.assert_allclose(simulated_map(ex, robot, ctrl, lc.z), lc.z, atol=1e-9)
    # a walking step: the phase variable, the stance leg's mean angle from +x, falls (the hip moves forwards)
    k, names = robot.nq - 2, list(robot.coordinates)[2:]
    rate = 0.5 * (lc.z[k + names.index("phi_thigh_a")] + lc.z[k + names.index("phi_shank_a")])
    assert rate < -0.5


def test_step_jacobian_is_the_difference_of_the_simulated_step_map(cycle: Any) -> None:
    ex, robot, ctrl, lc = cycle
    _, DP = ex.poincare(robot, ctrl, lc.z, DT)
    k = lc.z.size
    num = np.zeros((k, k))
    for j in range(k):
        h = 1e-6 * max(1.0, abs(lc.z[j]))
        e = np.zeros(k)
        e[j] = h
        num[:, j] = (simulated_map(ex, robot, ctrl, lc.z + e) - simulated_map(ex, robot, ctrl, lc.z - e)) / (2 * h)
    assert np.abs(DP - num).max() <= 1e-6 * np.abs(num).max()
    # the controller's share matters: with ∂u/∂y left out the Jacobian is another matrix
    y0, S = ex.section_state(robot, lc.z)
    s = gait.stride(robot, y0, ["foot_a"], "foot_b", DT, u=ctrl, arm_gap=ex.ARM_GAP, on_slip="continue",
                    t_max=ex.STEP_T_MAX, input_jacobian=lambda t, y: np.zeros((robot.nu, 2 * robot.nq)))
    assert np.abs(ex.relabelling(robot) @ s.jacobian @ S - num).max() > 1e-1 * np.abs(num).max()


def test_largest_multiplier_is_the_decay_of_a_perturbation(cycle: Any) -> None:
    ex, robot, ctrl, lc = cycle
    lam = lc.multipliers[0]
    assert lc.stable and abs(lam.imag) < 1e-12 and 0.5 < lam.real < 1.0
    assert np.all(np.abs(lc.multipliers[1:]) < 0.1)
    rng = np.random.default_rng(3)
    z = lc.z + 1e-5 * rng.standard_normal(lc.z.size)
    dev = []
    for _ in range(7):
        z = simulated_map(ex, robot, ctrl, z)
        dev.append(np.linalg.norm(z - lc.z))
    # after two steps the fast multipliers (below 0.1) have died out: each step scales the deviation by λ₁
    ratios = np.array(dev[3:]) / np.array(dev[2:-1])
    np.testing.assert_allclose(ratios, lam.real, rtol=2e-3)


def test_c_law_from_python_is_the_python_reference(cycle: Any) -> None:
    ex, robot, ctrl, lc = cycle
    y0, _ = ex.section_state(robot, lc.z)
    ref = ex.VirtualConstraints(robot, hold_stance=True)
    for frac in (0.0, 1e-3):
        y = y0 + frac * np.linspace(-1.0, 1.0, y0.size)
        u_c = ctrl.evaluate(robot, 0.0, y)
        u_py = ref(0.0, y[:robot.nq], y[robot.nq:])
        np.testing.assert_allclose(u_c, u_py, rtol=1e-8, atol=1e-8 * np.abs(u_py).max())
    assert ref.current == "a"
    with pytest.raises(ValueError, match="has 22 entries"):
        ctrl.evaluate(robot, 0.0, y0[:5])


def test_a_python_law_with_its_jacobian_gives_the_same_stride(cycle: Any) -> None:
    ex, robot, ctrl, lc = cycle
    y0, _ = ex.section_state(robot, lc.z)
    law = ctrl.function(robot)
    calls = []

    def du_dy(t: float, y: np.ndarray) -> np.ndarray:
        calls.append(t)
        D = np.zeros((robot.nu, y.size))
        for j in range(y.size):
            e = np.zeros(y.size)
            e[j] = 1e-6 * max(1.0, abs(y[j]))
            D[:, j] = (law(t, y + e) - law(t, y - e)) / (2 * e[j])
        return D

    kw = dict(arm_gap=ex.ARM_GAP, on_slip="continue", t_max=ex.STEP_T_MAX)
    s_c = gait.stride(robot, y0, ["foot_a"], "foot_b", DT, u=ctrl, **kw)
    s_py = gait.stride(robot, y0, ["foot_a"], "foot_b", DT, u=lambda t, q, qd: law(t, np.r_[q, qd]),
                       input_jacobian=du_dy, **kw)
    assert len(calls) > 4 * 200
    assert s_py.t_event == pytest.approx(s_c.t_event, abs=1e-12)
    np.testing.assert_allclose(s_py.jacobian, s_c.jacobian, rtol=0, atol=1e-9 * np.abs(s_c.jacobian).max())


def test_bad_feedback_arguments_are_named(cycle: Any) -> None:
    ex, robot, ctrl, lc = cycle
    y0, _ = ex.section_state(robot, lc.z)
    with pytest.raises(ValueError, match=r"input_jacobian gave shape \(2, 2\)"):
        gait.stride(robot, y0, ["foot_a"], "foot_b", DT, u=ctrl, arm_gap=ex.ARM_GAP, on_slip="continue",
                    t_max=ex.STEP_T_MAX, input_jacobian=lambda t, y: np.zeros((2, 2)))
    with pytest.raises(ValueError, match="u is constant"):
        gait.stride(robot, y0, ["foot_a"], "foot_b", DT, u=np.zeros(robot.nu), input_jacobian=lambda t, y: 0)
    with pytest.raises(ValueError, match="has 8 entries, got 3"):
        gait.stride(robot, y0, ["foot_a"], "foot_b", DT, u=np.zeros(3))
