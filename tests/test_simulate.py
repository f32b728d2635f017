"""The compiled integrators (sys.simulate): against SciPy, energy, inverse dynamics, failures, tracking laws.

Every number is compared with an independent path: SciPy's DOP853 at tight
tolerances on the compiled rhs (with input laws written here in NumPy),
conservation of energy, finite differences of the stored rates, closed
forms of the error dynamics of computed torque and of a uniform motion.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import rodgen
from conftest import EXAMPLES
from rodgen.runtime import PD, ComputedTorque, InputTable, Reference
from rodgen.runtime.result import Status

#: SciPy's reference solution: DOP853 at rtol = atol = 1e-12 (its own error is far below the bounds below).
REF = dict(method="DOP853", rtol=1e-12, atol=1e-12)
#: RK4 at dt = 1e-3: global error ~ C dt^4 with C of order one for these smooth, moderate motions.
ATOL_RK4 = 1e-7
#: DOPRI5 at rtol = 1e-10, atol = 1e-12: global error a few hundred times the local tolerance.
ATOL_DOPRI5 = 1e-7
#: PD gains that hold exo5 standing (stiff enough for the variable lengths, damped for the light shanks).
HOLD_KP, HOLD_KD = 2.0e4, 1.0e2


@pytest.fixture(scope="session")
def pendulum2(build_dir: Any) -> Any:
    return rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)


@pytest.fixture(scope="session")
def exo5(build_dir: Any) -> Any:
    return rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir, method="recursive")


@pytest.fixture(scope="session")
def pendulum_vl(build_dir: Any) -> Any:
    return rodgen.build(rodgen.load(EXAMPLES / "pendulum_vl.yaml"), build_dir=build_dir)


def states(res: Any) -> np.ndarray:
    return np.hstack([res.q, res.qd])


@pytest.mark.parametrize("method, kw, tol", [("rk4", dict(dt=1e-3), ATOL_RK4),
                                             ("dopri5", dict(rtol=1e-10, atol=1e-12), ATOL_DOPRI5)])
def test_double_pendulum_agrees_with_scipy(pendulum2: Any, method: str, kw: dict, tol: float) -> None:
    y0 = np.array([-1.0, 0.5, 0.3, -0.2])
    u = np.array([0.4, -0.1])
    res = pendulum2.simulate(y0, 2.0, method=method, u=u, **kw)
    assert res.status is Status.SUCCESS, res.message
    assert res.t[0] == 0.0 and res.t[-1] == 2.0
    ref = solve_ivp(pendulum2.ode(u=u), (0.0, 2.0), y0, t_eval=res.t, **REF)
    np.testing.assert_allclose(states(res), ref.y.T, rtol=0, atol=tol)
    np.testing.assert_allclose(res.u, np.tile(u, (len(res.t), 1)), rtol=0, atol=0)


@pytest.mark.parametrize("method, kw", [("rk4", dict(dt=1e-3)), ("dopri5", dict(rtol=1e-10, atol=1e-12))])
def test_exo5_holding_ten_seconds_agrees_with_scipy(exo5: Any, method: str, kw: dict) -> None:
    """exo5 over 10 s held by the PD law, against SciPy with the same law written in NumPy."""
    nq = exo5.nq
    y0 = exo5.initial_state()
    y0[nq:] = 0.05 * np.sin(np.arange(nq))            # a small push, so that something moves
    q0 = y0[:nq].copy()
    res = exo5.simulate(y0, 10.0, method=method, controller=PD(Reference.hold(q0), HOLD_KP, HOLD_KD),
                        store_every=10 if method == "rk4" else 1, **kw)
    assert res.status is Status.SUCCESS, res.message

    def law(t: float, y: np.ndarray) -> np.ndarray:
        B = exo5.input_map(y[:nq])
        return HOLD_KP * (B.T @ (q0 - y[:nq])) + HOLD_KD * (B.T @ (0.0 - y[nq:]))

    ref = solve_ivp(exo5.ode(u=law), (0.0, 10.0), y0, t_eval=res.t, **REF)
    assert ref.success
    # the stiff PD loop (time constants of a few ms) keeps the error of both at this level
    np.testing.assert_allclose(states(res), ref.y.T, rtol=0, atol=1e-6)
    np.testing.assert_allclose(res.u, [law(t, y) for t, y in zip(res.t, states(res))], rtol=1e-9, atol=1e-6)
    assert np.abs(res.q - q0).max() < 0.1                  # it stands


def test_rk4_energy_drift_scales_with_dt4(pendulum2: Any) -> None:
    """No inputs, no dampers: RK4's energy error over 100 s is O(dt^4); halving dt divides it by ~16."""
    y0 = np.array([0.6, -0.4, 0.0, 0.0])
    drift = []
    for dt in (0.01, 0.005):
        res = pendulum2.simulate(y0, 100.0, dt, store_every=10)
        assert res.status is Status.SUCCESS and res.t[-1] == 100.0
        E = res.total_energy
        drift.append(np.abs(E - E[0]).max())
    ratio = drift[0] / drift[1]
    assert 8.0 < ratio < 32.0, (drift, ratio)              # 2^4 = 16 within a factor of two
    # the motion is chaotic (the lower link spins): the largest error depends on rounding (0.11 % of the energy
    # with fused multiply-adds, 0.08 % without)
    assert drift[1] < 2e-3 * abs(pendulum2.energy(y0[:2], y0[2:])[1])


def test_dopri5_energy_drift_follows_the_tolerance(pendulum2: Any) -> None:
    """DOPRI5 over 100 s: the energy drift stays below 1000 rtol |E|, and a hundredfold smaller rtol gives at
    least a tenfold smaller drift (documented in docs/simulation.md). The trajectory is chaotic: which path the
    rounding of a build takes moves the drift at rtol 1e-8 between about 70 and 250 rtol |E|."""
    y0 = np.array([0.6, -0.4, 0.0, 0.0])
    drift = {}
    for rtol in (1e-8, 1e-10):
        res = pendulum2.simulate(y0, 100.0, method="dopri5", rtol=rtol, atol=rtol * 1e-2)
        assert res.status is Status.SUCCESS
        E = res.total_energy
        drift[rtol] = np.abs(E - E[0]).max() / abs(E[0])
        assert drift[rtol] < 1000 * rtol, (rtol, drift[rtol])
        assert int(res.extra["steps"]) == len(res.t) - 1
    assert drift[1e-10] < 0.1 * drift[1e-8], drift


def test_store_every_keeps_every_kth_step_and_the_last(pendulum2: Any) -> None:
    y0 = np.array([-1.0, 0.5, 0.0, 0.0])
    full = pendulum2.simulate(y0, 1.0, 0.01)
    part = pendulum2.simulate(y0, 1.0, 0.01, store_every=7)
    assert len(full.t) == 101
    idx = list(range(0, 101, 7)) + [100]
    np.testing.assert_allclose(part.t, full.t[idx], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(states(part), states(full)[idx])


def test_callable_input_equals_the_same_table(pendulum2: Any) -> None:
    """A Python u(t, q, qd) (slow path) and an InputTable of the same piecewise-linear input agree."""
    ts = np.linspace(0.0, 2.0, 41)
    us = np.column_stack([np.sin(3 * ts), 0.5 * np.cos(2 * ts)])
    table = InputTable(ts, us)
    y0 = np.array([-1.0, 0.5, 0.0, 0.0])
    a = pendulum2.simulate(y0, 2.0, 1e-3, u=table)
    b = pendulum2.simulate(y0, 2.0, 1e-3, u=lambda t, q, qd: table(t))
    assert a.ok and b.ok
    np.testing.assert_allclose(states(a), states(b), rtol=0, atol=1e-13)
    np.testing.assert_allclose(a.u, [table(t) for t in a.t], rtol=0, atol=1e-13)


def test_inverse_dynamics_reproduces_the_inputs(pendulum2: Any, exo5: Any) -> None:
    """Inverse dynamics at qdd from finite differences of the simulated rates gives back B u.

    exo5's stiff holding loop (time constants of a few ms) needs a finer step for the differences.
    """

    def smooth(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        return np.array([2 * np.sin(4 * t), -np.cos(3 * t)])

    for sys_, dt, kw, y0 in [
            (pendulum2, 1e-3, dict(u=smooth), np.array([-1.0, 0.5, 0.2, 0.0])),
            (exo5, 2e-4, dict(controller=PD(Reference.hold(exo5.initial_state()[:9]), HOLD_KP, HOLD_KD)),
             exo5.initial_state())]:
        res = sys_.simulate(y0, 1.0, dt, **kw)
        assert res.ok, res.message
        v = res.qd
        # fourth-order central differences: truncation O(dt^4), round-off ~ 1e-16 |qd| / dt
        qdd = (-v[4:] + 8 * v[3:-1] - 8 * v[1:-3] + v[:-4]) / (12 * dt)
        k = slice(2, -2)
        Q = sys_.inverse_dynamics(res.q[k], res.qd[k], qdd)
        B = sys_.input_map(res.q[k])
        Bu = np.einsum("nij,nj->ni", B, res.u[k])
        np.testing.assert_allclose(Q, Bu, rtol=0, atol=1e-6 * np.abs(Bu).max())


def test_computed_torque_error_follows_its_closed_form(pendulum2: Any) -> None:
    """B = I: computed torque makes e'' + Kd e' + Kp e = 0; with Kp = w^2, Kd = 2w, e = e0 (1 + w t) exp(-w t)."""
    w = 8.0
    q_ref = np.array([0.3, -0.6])
    e0 = np.array([0.2, -0.1])
    y0 = np.concatenate([q_ref - e0, [0.0, 0.0]])
    res = pendulum2.simulate(y0, 2.0, 1e-3, controller=ComputedTorque(Reference.hold(q_ref), w * w, 2 * w))
    assert res.ok, res.message
    expected = q_ref - np.outer((1 + w * res.t) * np.exp(-w * res.t), e0)
    np.testing.assert_allclose(res.q, expected, rtol=0, atol=1e-9)


def test_tracking_laws_track_a_moving_reference(exo5: Any) -> None:
    """exo5 driven along a small periodic motion: the tracking error shrinks under both laws."""
    nq = exo5.nq
    q0 = exo5.initial_state()[:nq]
    t = np.linspace(0.0, 3.0, 3001)
    amp = 0.05 * np.cos(np.arange(nq))
    w = 2 * np.pi
    q = q0 + np.outer(np.sin(w * t), amp)
    ref = Reference(t, q, np.outer(w * np.cos(w * t), amp), np.outer(-w * w * np.sin(w * t), amp))
    y0 = np.concatenate([q0 + 0.03, np.zeros(nq)])       # starts off the reference
    # PD with the static torques of the initial posture as feedforward (B u_ff = G(q0))
    u_ff = np.linalg.solve(exo5.input_map(q0), exo5.gravity(q0))
    # computed torque cancels the dynamics (only the 1 ms sampling of the reference is left);
    # PD leaves a lag proportional to the reference's accelerations over the stiffness
    for controller, u, shrink in [(ComputedTorque(ref, 400.0, 40.0), None, 1e-3),
                                  (PD(ref, HOLD_KP, HOLD_KD), u_ff, 0.5)]:
        res = exo5.simulate(y0, 3.0, 1e-3, controller=controller, u=u)
        assert res.ok, res.message
        err = np.abs(res.q - np.array([np.interp(res.t, t, q[:, i]) for i in range(nq)]).T).max(axis=1)
        assert err[-500:].max() < shrink * err[0], (type(controller).__name__, err[0], err[-500:].max())


def test_singular_mass_matrix_stops_with_the_last_good_state(pendulum_vl: Any) -> None:
    """A massless rod of variable length shrinking at 1 m/s without gravity: l = 0.5 - t exactly,
    and M = diag(m l^2, m) is singular at t = 0.5, which the last RK4 stage of the step from 0.375 reaches."""
    res = pendulum_vl.simulate([-1.2, 0.5, 0.0, -1.0], 1.0, 0.125, p={"g": 0.0})
    assert res.status is Status.SINGULAR_MASS
    assert "stopped at t = 0.375" in res.message and "not positive definite" in res.message
    np.testing.assert_array_equal(res.t, [0.0, 0.125, 0.25, 0.375])
    np.testing.assert_allclose(res.q[:, 1], 0.5 - res.t, rtol=0, atol=1e-15)


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_nonfinite_input_stops_before_it(pendulum2: Any, method: str) -> None:
    ts = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    us = np.ones((5, 2))
    us[2, 0] = np.nan                                        # NaN interpolated in on (0.25, 0.75)
    res = pendulum2.simulate([-1.0, 0.5, 0.0, 0.0], 1.0, 0.01 if method == "rk4" else None, method=method,
                             u=InputTable(ts, us))
    assert res.status is Status.NONFINITE_INPUT, res.message
    assert 0.2 < res.t[-1] <= 0.25 + 1e-12
    assert np.all(np.isfinite(res.q)) and np.all(np.isfinite(res.u))


def test_step_underflow_and_max_steps(pendulum2: Any) -> None:
    y0 = [-1.0, 0.5, 0.0, 0.0]
    res = pendulum2.simulate(y0, 10.0, method="dopri5", rtol=1e-12, atol=1e-12, h_min=1e-2)
    assert res.status is Status.STEP_UNDERFLOW and "step size fell below" in res.message
    assert len(res.t) >= 1 and res.t[-1] < 10.0
    res = pendulum2.simulate(y0, 10.0, method="dopri5", max_steps=10)
    assert res.status is Status.MAX_STEPS and "max_steps = 10" in res.message
    assert int(res.extra["steps"]) + int(res.extra["rejected"]) == 10      # accepted and rejected count
    assert len(res.t) == int(res.extra["steps"]) + 1 and np.all(np.diff(res.t) > 0)


def test_input_function_that_raises_keeps_the_partial_result(pendulum2: Any) -> None:
    def u(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        if t > 0.5:
            raise RuntimeError("sensor lost")
        return np.zeros(2)

    res = pendulum2.simulate([-1.0, 0.5, 0.0, 0.0], 1.0, 0.01, u=u)
    assert res.status is Status.FAILED and "RuntimeError: sensor lost" in res.message
    # RK4 asks for u at t, t + h/2, t + h: the step from 0.50 is the first to ask beyond 0.5 (at 0.505), so the
    # 50 steps up to t = 0.5 are kept, 51 samples
    assert len(res.t) == 51 and res.t[-1] == pytest.approx(0.5, abs=1e-12)


def test_arguments_are_checked(pendulum2: Any) -> None:
    y0 = [-1.0, 0.5, 0.0, 0.0]
    with pytest.raises(ValueError, match="RK4 needs a positive step dt"):
        pendulum2.simulate(y0, 1.0)
    with pytest.raises(ValueError, match="unknown method 'euler'"):
        pendulum2.simulate(y0, 1.0, 0.1, method="euler")
    with pytest.raises(ValueError, match="expects 4 state entries"):
        pendulum2.simulate([0.0, 0.0], 1.0, 0.1)
    with pytest.raises(ValueError, match="must increase strictly"):
        InputTable([0.0, 1.0, 1.0], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="PD kp has 3 entries"):
        pendulum2.simulate(y0, 1.0, 0.1, controller=PD(Reference.hold([0, 0]), [1, 2, 3], 1))
