"""Sample-and-hold inputs (simulate(..., hold=True)): the input law is evaluated once at the start of each RK4
step (and right after each event of the hybrid simulation) and held over the stages.

References: a constant-in-time law gives the per-stage run bit for bit; a held PD law equals a Python loop that
computes u once per step (the PD formula in NumPy) and integrates one step with that constant u; the located
touchdowns of a hybrid run with a held hip torque have the foot on the ground (the constraint position, to
the event tolerance).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from rodgen.contract import StatusCode, constant
from rodgen.runtime.control import PD, Reference
from rodgen.runtime.result import Status

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def pendulum2(build_dir: Any) -> Any:
    return rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)


@pytest.fixture(scope="module")
def walker(build_dir: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The compass gait with a hip torque (its swing leg's joint actuated)."""
    text = (EXAMPLES / "compass_gait.yaml").read_text()
    assert "    joint: {actuated: false}\n" in text
    path = tmp_path_factory.mktemp("hold") / "compass_hip.yaml"
    path.write_text(text.replace("name: compass_gait", "name: compass_hip").replace(
        "    joint: {actuated: false}\n", ""))
    return rodgen.build(rodgen.load(path), build_dir=build_dir)


def test_a_constant_law_held_or_per_stage_gives_the_same_run(pendulum2: Any) -> None:
    y0 = pendulum2.initial_state()
    for u in ([0.3, -0.2], lambda t, q, qd: [0.3, -0.2]):
        per_stage = pendulum2.simulate(y0, 0.5, 1e-3, u=u)
        held = pendulum2.simulate(y0, 0.5, 1e-3, u=u, hold=True)
        assert held.status == Status.SUCCESS
        np.testing.assert_array_equal(held.t, per_stage.t)
        np.testing.assert_array_equal(held.q, per_stage.q)
        np.testing.assert_array_equal(held.qd, per_stage.qd)
        np.testing.assert_array_equal(held.u, per_stage.u)


def test_a_held_pd_law_equals_one_step_runs_with_constant_inputs(pendulum2: Any) -> None:
    sys = pendulum2
    ref = Reference([0.0, 0.2, 0.5], [[-1.0, 0.5], [-0.6, 0.9], [-0.2, 0.1]], qd=[[1.0, 0.0], [2.0, 1.0],
                                                                                   [0.0, -1.0]])
    kp, kd = np.array([40.0, 25.0]), np.array([6.0, 3.0])
    dt, n = 5e-3, 100
    y0 = sys.initial_state()
    held = sys.simulate(y0, n * dt, dt, controller=PD(ref, kp, kd), hold=True)
    assert held.status == Status.SUCCESS and len(held.t) == n + 1

    def pd(t: float, y: np.ndarray) -> np.ndarray:
        q_ref = np.array([np.interp(t, ref.t, ref.q[:, i]) for i in range(2)])
        qd_ref = np.array([np.interp(t, ref.t, ref.qd[:, i]) for i in range(2)])
        B = sys.input_map(y[:2])
        return kp * (B.T @ (q_ref - y[:2])) + kd * (B.T @ (qd_ref - y[2:]))

    y = y0.copy()
    for k in range(n):
        uk = pd(k * dt, y)
        np.testing.assert_allclose(held.u[k], uk, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.concatenate([held.q[k], held.qd[k]]), y, rtol=0, atol=1e-12)
        one = sys.simulate(y, (k + 1) * dt, dt, u=uk, t0=k * dt)
        y = np.concatenate([one.q[-1], one.qd[-1]])
    np.testing.assert_allclose(np.concatenate([held.q[-1], held.qd[-1]]), y, rtol=0, atol=1e-12)
    # the held law differs from the continuous one by O(dt) (a check that hold did something)
    per_stage = sys.simulate(y0, n * dt, dt, controller=PD(ref, kp, kd))
    assert 1e-6 < np.max(np.abs(per_stage.q - held.q)) < 1e-1


def test_a_held_law_is_called_once_per_step(pendulum2: Any) -> None:
    calls = {"n": 0}

    def law(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        calls["n"] += 1
        return -5.0 * q - qd

    y0, steps = pendulum2.initial_state(), 200
    for hold, expected in ((True, 1 + steps + 1), (False, 1 + 4 * steps + steps + 1)):
        calls["n"] = 0
        res = pendulum2.simulate(y0, steps * 1e-3, 1e-3, u=law, hold=hold)
        # one call to check the function at t0, then per step: held 1 (the stored row's sample is reused),
        # per stage 4 and the stored row; the final row's inputs
        assert res.status == Status.SUCCESS and calls["n"] == expected


def test_hold_needs_rk4(pendulum2: Any) -> None:
    y0 = pendulum2.initial_state()
    with pytest.raises(ValueError, match="hold=True .* needs the fixed-step RK4"):
        pendulum2.simulate(y0, 0.1, method="dopri5", u=[0.1, 0.0], hold=True)
    with pytest.raises(TypeError, match="hold must be True or False"):
        pendulum2.simulate(y0, 0.1, 1e-3, hold="yes")
    # the C rejects it too (its options check), without Python's
    rt = pendulum2._runtime
    none = np.empty(0)
    pv = np.array(pendulum2._params(None)[0].reshape(-1), dtype=float)
    sim = rt.Simulation(pendulum2._m, constant("DOPRI5"), 0.0, 0.1, 0.0, 1e-6, 1e-9, 0.0, 0.0, 1000, 1,
                        constant("INPUT_CONSTANT"), none, none, none, none, none, None, pv, y0.copy(), 1)
    code, n = sim.run(np.empty(4), np.empty(16), np.empty(8))
    assert code == StatusCode.ERR_OPTIONS and n == 0


@pytest.fixture(scope="module")
def gait() -> np.ndarray:
    from _compass_reference import Walker, fixed_point
    from test_hybrid_bindings import _model_state
    z, _ = fixed_point(Walker(), np.array([-0.26, 1.1, 0.35]))
    return _model_state(z)


def _walk(sys: Any, y0: np.ndarray, **kw: Any) -> Any:
    from test_hybrid_bindings import ARM_GAP
    return sys.simulate(y0, 3.0, 2e-3, contacts=["foot_a"], disarmed=["foot_b"], arm_gap=ARM_GAP, event_tol=1e-12,
                        **kw)


def test_hybrid_hold_of_a_constant_torque_gives_the_same_run(walker: Any, gait: np.ndarray) -> None:
    per_stage = _walk(walker, gait, u=[0.0])
    held = _walk(walker, gait, u=[0.0], hold=True)
    assert per_stage.status == Status.SUCCESS and sum(e["kind"] == "touchdown" for e in held.events) >= 3
    np.testing.assert_array_equal(held.t, per_stage.t)
    np.testing.assert_array_equal(held.q, per_stage.q)
    np.testing.assert_array_equal(held.lam, per_stage.lam)
    assert [(e["t"], e["kind"], e["block"]) for e in held.events] == \
        [(e["t"], e["kind"], e["block"]) for e in per_stage.events]


def test_hybrid_hold_locates_events_with_the_foot_on_the_ground(walker: Any, gait: np.ndarray) -> None:
    sys = walker
    calls: list[float] = []

    def hip(t: float, q: np.ndarray, qd: np.ndarray) -> list[float]:
        calls.append(t)
        return [-0.1 * (qd[3] - qd[2])]   # a damper between the legs

    res = _walk(sys, gait, u=hip, hold=True, on_slip="continue")
    assert res.status == Status.SUCCESS, res.message
    touchdowns = [e for e in res.events if e["kind"] == "touchdown"]
    assert len(touchdowns) >= 3
    blocks = [b.name for b in sys.constraints]
    for e in touchdowns:
        i = int(np.flatnonzero(res.t == e["t"])[0])   # the row before the jump
        c = sys.constraint_position(res.q[i])
        row = sys.constraints[blocks.index(e["block"])].row + 1   # the contact's normal row
        assert abs(c[row]) < 1e-8
    # the inputs are sampled at the grid times and right after each event, and held in between
    grid = np.round(np.array(calls[1:]) / 2e-3, 6)
    off_grid = [t for t, g in zip(calls[1:], grid) if g != np.round(g)]
    event_times = {e["t"] for e in res.events}
    assert set(off_grid) <= event_times and len(off_grid) >= len(touchdowns)
    steps = int(round(3.0 / 2e-3))
    assert steps < len(calls) <= steps + 2 * len(res.events) + 3
    # the held run differs from the per-stage one (the law depends on the state) but walks the same steps
    per_stage = _walk(sys, gait, u=hip, on_slip="continue")
    assert len([e for e in per_stage.events if e["kind"] == "touchdown"]) == len(touchdowns)


def test_hybrid_hold_moves_the_last_evaluation_by_the_input_response(walker: Any, gait: np.ndarray,
                                                                      build_dir: Any) -> None:
    """A new held sample at the state of the last evaluation (the end of a step, evaluated for the event
    functions) moves that evaluation by the model's constrained_response instead of evaluating the dynamics
    again: the same run as the build without the routine, which evaluates again."""
    from rodgen.codegen.options import CodegenOptions
    from rodgen.contract import ELECTIVE_ROUTINES
    without = rodgen.build(walker.model, build_dir=build_dir, codegen=CodegenOptions(
        routines=[r for r in ELECTIVE_ROUTINES if r != "constrained_response"]))
    assert "constrained_response" in walker.routines and "constrained_response" not in without.routines

    def hip(t: float, q: np.ndarray, qd: np.ndarray) -> list[float]:
        return [-0.1 * (qd[3] - qd[2]) + 0.05 * np.sin(5.0 * t)]

    fast, full = (_walk(sys, gait, u=hip, hold=True, on_slip="continue") for sys in (walker, without))
    assert fast.status == Status.SUCCESS and full.status == Status.SUCCESS, (fast.message, full.message)
    steps = int(round(3.0 / 2e-3))
    assert int(full.extra["responses"]) == 0 and int(fast.extra["responses"]) > steps // 2
    # each response stands for an evaluation (a sample that returns to the memo's inputs needs neither)
    saved = int(full.extra["evaluations"]) - int(fast.extra["evaluations"])
    assert int(fast.extra["responses"]) <= saved <= int(fast.extra["responses"]) + len(fast.events)
    assert [(e["kind"], e["block"]) for e in fast.events] == [(e["kind"], e["block"]) for e in full.events]
    # the same arithmetic up to the order of its sums: events located to 1e-12 s move by a few of that, the
    # states agree to rounding
    np.testing.assert_allclose([e["t"] for e in fast.events], [e["t"] for e in full.events], rtol=0, atol=1e-10)
    assert fast.t.shape == full.t.shape
    np.testing.assert_allclose(fast.q, full.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.lam, full.lam, rtol=0, atol=1e-9 * np.abs(full.lam).max())
