"""rodgen.gait.stride under the runtime's own PD and computed-torque laws: their closed-form ∂u/∂y (∂B/∂q and
the inverse dynamics' derivative from the model's constraint_partials) against central differences of the
laws themselves, and the Poincaré map's Jacobian of the compass gait under a PD or computed-torque hip torque
against central differences of the stride map simulated directly (``simulate(controller=...)`` with contacts,
not stride), with its multipliers.

Two models: the compass gait with its hip actuated (B constant), and the same walker pushed at its swing leg's
mass by a force in the leg's frame (inputs F_along, F_across): B depends on the swing leg's angle, so the
∂B/∂q terms of the laws (``constraint_partials`` at u = eⱼ) are exercised."""
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


@pytest.fixture(scope="module")
def pushed(build_dir: Path, tmp_path_factory: Any) -> Any:
    """The hip-actuated compass gait with a force at the swing leg's mass in the leg's frame: B(q)."""
    sys.path.insert(0, str(EXAMPLES))
    import compass_gait as cg
    text = (EXAMPLES / "compass_gait.yaml").read_text().replace("joint: {actuated: false}",
                                                               "joint: {actuated: true}")
    text = text.replace("name: compass_gait", "name: compass_gait_pushed")
    text += "forces:\n  - {name: push, type: point_force, at: mass_b, frame: link, inputs: [F_along, F_across]}\n"
    path = tmp_path_factory.mktemp("compass") / "compass_gait_pushed.yaml"
    path.write_text(text)
    robot = rodgen.build(rodgen.load(path), build_dir=build_dir)
    assert robot.nu == 3
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


@pytest.mark.parametrize("model", ["walker", "pushed"])
@pytest.mark.parametrize("kind", ["pd", "computed_torque"])
def test_builtin_law_jacobian_is_the_difference_of_the_law(request: Any, model: str, kind: str) -> None:
    robot, cg = request.getfixturevalue(model)
    n, m = robot.nv, robot.nu
    ref = references(robot)
    kp_pd = np.linspace(30.0, 10.0, m)
    ctrl = (PD(ref, kp=kp_pd, kd=3.0) if kind == "pd"
            else ComputedTorque(ref, kp=np.linspace(20.0, 50.0, n), kd=np.linspace(2.0, 6.0, n)))
    law, dlaw = gait._input_law(robot, ctrl, None, None, 1e-6)
    y = cg.state(robot, Z)
    t = 0.37
    # the law itself is the runtime's: one RK4 step of a run under the controller equals one under u = law
    # (in flight: the pushed walker's computed torque carries its weight, the stance foot would slip at once)
    held = (dict(contacts=["foot_a"], disarmed=["foot_b"]) if model == "walker"
            else dict(contacts=[], disarmed=["foot_a", "foot_b"]))
    a = robot.simulate(y, 5 * DT, DT, controller=ctrl, alpha=0.0, beta=0.0, **held)
    b = robot.simulate(y, 5 * DT, DT, u=lambda tt, q, qd: law(tt, np.concatenate([q, qd])), alpha=0.0, beta=0.0,
                       **held)
    assert a.t[-1] == b.t[-1] == pytest.approx(5 * DT)
    assert np.abs(a.q[-1] - b.q[-1]).max() <= 1e-12 and np.abs(a.qd[-1] - b.qd[-1]).max() <= 1e-12
    y = y + 0.01 * np.arange(2 * n)                 # off the section: no symmetry of the state helps
    D, num = dlaw(t, y), law_differences(law, t, y)
    assert np.abs(D - num).max() <= 1e-7 * max(1.0, np.abs(num).max())
    assert np.abs(num).max() > 1.0
    if model == "pushed" and kind == "pd":
        # ∂B/∂q matters here: the law's ∂u/∂q is not -Kp Bᵀ (the Jacobian with B frozen)
        assert np.abs(num[:, :n] + kp_pd[:, None] * robot.input_map(y[:n]).T).max() > 0.1


def matched(a: np.ndarray, b: np.ndarray) -> float:
    """The largest distance from a multiplier in ``a`` to the nearest one in ``b`` (conjugate pairs of equal
    modulus may come in either order)."""
    return float(max(np.abs(b - x).min() for x in a))


@pytest.mark.parametrize("model, kind", [("walker", "pd"), ("walker", "computed_torque"), ("pushed", "pd")])
def test_gait_jacobian_is_the_difference_of_the_simulated_stride_map(request: Any, model: str, kind: str) -> None:
    """The pushed walker under computed torque is left out: its law carries the weight through the push and
    the stance foot slips at once. Its ∂B/∂q terms are the law's (tested above against differences); the stride
    composes any law's ∂u/∂y the same way, as the PD runs of both walkers show."""
    robot, cg = request.getfixturevalue(model)
    n = robot.nv
    y0 = cg.state(robot, Z)
    hold = Reference.hold(y0[:robot.nq])
    ctrl = (PD(hold, kp=np.linspace(2.0, 5.0, robot.nu), kd=0.5) if kind == "pd"
            else ComputedTorque(hold, kp=np.linspace(3.0, 5.0, n), kd=1.0))

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
    # the multipliers (the eigenvalues) of the exact map are those of the differenced one
    mult, mult_num = gait.multipliers(DP), gait.multipliers(num)
    assert matched(mult, mult_num) <= 1e-5 * np.abs(mult_num).max() and np.abs(mult_num).max() > 0.1
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


def test_constraint_partials_at_unit_inputs_is_the_input_maps_derivative(pushed: Any) -> None:
    """dg(u = eⱼ) - dg(u = 0) = -∂(B eⱼ)/∂q: against central differences of the generated input map."""
    robot, cg = pushed
    n = robot.nv
    y = cg.state(robot, Z)
    q, qd, a = y[:n], y[n:], np.array([0.3, -0.7, 1.1, -0.4])
    g0, _ = robot.constraint_partials(q, qd, a)
    h = 1e-6
    for j, e in enumerate(np.eye(robot.nu)):
        gj, _ = robot.constraint_partials(q, qd, a, u=e)
        num = np.stack([(robot.input_map(q + h * d) @ e - robot.input_map(q - h * d) @ e) / (2 * h)
                        for d in np.eye(n)], axis=1)
        assert np.abs((g0 - gj)[:, :n] - num).max() <= 1e-8 * max(1.0, np.abs(num).max()), robot.inputs[j]
        assert np.abs((g0 - gj)[:, n:]).max() == 0.0          # B depends on q only
    # the push's map turns with the swing leg; the hip torque's does not
    assert np.abs(g0 - robot.constraint_partials(q, qd, a, u=np.array([1.0, 0.0, 0.0]))[0]).max() <= 1e-12
    assert np.abs(g0 - robot.constraint_partials(q, qd, a, u=np.array([0.0, 1.0, 0.0]))[0]).max() > 0.5
