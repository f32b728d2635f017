"""Constrained dynamics, impacts and hybrid simulation of compiled models, from Python.

References: the numpy KKT and impact solves of tests/_constrained.py on the lambdified symbolic
equations (no code stage), the independent compass-gait walker of tests/_compass_reference.py
(its own Lagrangian, SciPy's integrator, a momentum-law impact), energy conservation of the four-bar.
"""
from __future__ import annotations

import numpy as np
import pytest
from _compass_reference import Walker, fixed_point, step
from _constrained import ConstrainedNumeric, constrained_dynamics, impact

import rodgen
from rodgen.contract import StatusCode
from rodgen.runtime.compiled import DynamicsError
from rodgen.runtime.contact import contact_inverse_dynamics
from rodgen.runtime.result import Status

GAMMA = 0.05235987755982988
#: the swing foot rises about 1.6 cm after heel strike and passes under the slope at mid-stance
ARM_GAP = 0.02


@pytest.fixture(scope="module")
def fourbar(build_dir):
    m = rodgen.load("examples/fourbar.yaml")
    return rodgen.build(m, build_dir=build_dir), ConstrainedNumeric(rodgen.derive(m))


@pytest.fixture(scope="module")
def compass(build_dir):
    m = rodgen.load("examples/compass_gait.yaml")
    return rodgen.build(m, build_dir=build_dir), ConstrainedNumeric(rodgen.derive(m))


def _states(sys, n, seed):
    rng = np.random.default_rng(seed)
    q0 = sys.initial_state()[:sys.nq]
    return [(q0 + 0.2 * rng.standard_normal(sys.nq), rng.standard_normal(sys.nq),
             rng.standard_normal(sys.nu) if sys.nu else None) for _ in range(n)]


def test_constraint_table_and_rows_agree_with_the_symbolic_equations(fourbar, compass) -> None:
    for sys, ref in (fourbar, compass):
        assert [(b.name, b.kind, b.row, b.nrows) for b in sys.constraints] == \
            [(b.name, b.kind, b.row, b.nrows) for b in ref.constraints]
        for q, qd, _ in _states(sys, 5, 1):
            np.testing.assert_allclose(sys.constraint_position(q), ref.constraint_position(q), atol=1e-12)
            np.testing.assert_allclose(sys.constraint_jacobian(q), ref.constraint_jacobian(q), atol=1e-12)
            np.testing.assert_allclose(sys.constraint_bias(q, qd), ref.constraint_bias(q, qd), atol=1e-12)
    sys, ref = compass
    np.testing.assert_allclose(sys.constraint_friction(), ref.constraint_friction(), atol=0)


@pytest.mark.parametrize("which,active", [("fourbar", ["close"]), ("compass", ["foot_a"]),
                                          ("compass", ["foot_b"]), ("compass", [])])
def test_constrained_dynamics_agrees_with_the_kkt_reference(which, active, fourbar, compass) -> None:
    sys, ref = {"fourbar": fourbar, "compass": compass}[which]
    for q, qd, u in _states(sys, 6, 2):
        qdd, lam = sys.constrained_dynamics(q, qd, u, active=active)
        qdd_ref, lam_ref = constrained_dynamics(ref, q, qd, u, active=active)
        scale = 1 + np.max(np.abs(qdd_ref))
        np.testing.assert_allclose(qdd, qdd_ref, atol=1e-9 * scale)
        rows = ref.rows(active)
        np.testing.assert_allclose(lam[rows], lam_ref, atol=1e-9 * (1 + np.max(np.abs(lam_ref), initial=0)))
        others = np.setdiff1d(np.arange(sys.nrows), rows)
        assert np.all(lam[others] == 0)


def test_constrained_dynamics_argument_forms_agree(compass) -> None:
    """One state as arrays takes the runtime's one-state call (a kept active mask, no copies); lists, a
    mapping of modes, a parameter mapping or a batch take the checked path: the same numbers, the same
    errors."""
    sys, ref = compass
    q, qd, _ = _states(sys, 1, 5)[0]
    qdd_ref, lam_ref = constrained_dynamics(ref, q, qd, active=["foot_a"])
    forms = [dict(q=q, qd=qd, active=["foot_a"]), dict(q=q, qd=qd, active="foot_a"),
             dict(q=list(q), qd=tuple(qd), active=("foot_a",)), dict(q=q, qd=qd, active={"foot_a": "stick"}),
             dict(q=q, qd=qd, active=["foot_a"], p=dict(sys.parameters)),
             dict(q=q, qd=qd, active=["foot_a"], p=np.array(list(sys.parameters.values())))]
    for _ in range(2):          # the second time with the masks kept from the first
        for kw in forms:
            qdd, lam = sys.constrained_dynamics(**kw)
            np.testing.assert_allclose(qdd, qdd_ref, atol=1e-9 * (1 + np.max(np.abs(qdd_ref))))
            np.testing.assert_allclose(lam[ref.rows(["foot_a"])], lam_ref, atol=1e-9 * (1 + np.max(np.abs(lam_ref))))
    with pytest.raises(ValueError, match="expects 4 coordinates"):
        sys.constrained_dynamics(q[:3], qd, active=["foot_a"])
    with pytest.raises(ValueError, match="one state, not a batch"):
        sys.constrained_dynamics(np.stack([q, q]), qd, active=["foot_a"])
    with pytest.raises(DynamicsError, match="inf or NaN"):
        sys.constrained_dynamics(q * np.nan, qd, active="foot_a")


def _heel_strike(sys):
    """A compass-gait state at heel strike of foot_b (both feet on the slope), from the reference walker."""
    w = Walker()
    z, _ = fixed_point(w, np.array([-0.26, 1.1, 0.35]))
    _, _, x_minus = step(w, z)
    return _model_state(x_minus)


def _model_state(x, stance=0):
    """The rodgen model's y of a reference state x = [theta_s, theta_w, omega_s, omega_w] (angles from the
    slope normal, positive down the slope) with the stance foot at the origin: th = -(theta + gamma)."""
    th = [-(x[0] + GAMMA), -(x[1] + GAMMA)]
    w = [-x[2], -x[3]]
    if stance == 1:
        th, w = th[::-1], w[::-1]
    ts, ws = th[stance], w[stance]
    q = np.array([-np.sin(ts), np.cos(ts), *th])
    qd = np.array([-np.cos(ts) * ws, -np.sin(ts) * ws, *w])
    return np.concatenate([q, qd])


def test_impact_agrees_with_the_reference_and_releases_the_trailing_foot(compass, fourbar) -> None:
    sys, ref = compass
    y = _heel_strike(sys)
    q, qd = y[:4], y[4:]
    # both feet touch: the impulse of the trailing foot would pull, so it is released
    qd_plus, imp, after, loss = sys.impact(q, qd, active=["foot_a", "foot_b"])
    assert after == ["foot_b"]
    qd_ref, imp_ref = impact(ref, q, qd, ["foot_b"])
    np.testing.assert_allclose(qd_plus, qd_ref, atol=1e-9)
    np.testing.assert_allclose(imp[2:], imp_ref, atol=1e-9)
    assert np.all(imp[:2] == 0) and imp[3] > 0
    T = lambda v: sys.energy(q, v)[0]  # noqa: E731
    np.testing.assert_allclose(loss, T(qd) - T(qd_plus), rtol=1e-12)
    # four-bar: an impulsive loop closure on a velocity that opens the loop
    sys, ref = fourbar
    for q, qd, _ in _states(sys, 4, 3):
        qd_plus, imp, after, loss = sys.impact(q, qd, active=["close"])
        qd_ref, imp_ref = impact(ref, q, qd, ["close"])
        np.testing.assert_allclose(qd_plus, qd_ref, atol=1e-9 * (1 + np.max(np.abs(qd_ref))))
        np.testing.assert_allclose(imp, imp_ref, atol=1e-9 * (1 + np.max(np.abs(imp_ref))))
        assert after == ["close"] and loss >= 0


def test_errors_name_the_problem(compass) -> None:
    sys, _ = compass
    q, qd = sys.initial_state()[:4], np.zeros(4)
    with pytest.raises(ValueError, match="no constraint block 'foot_c'.*foot_a, foot_b"):
        sys.constrained_dynamics(q, qd, active=["foot_c"])
    with pytest.raises(ValueError, match="unknown mode 'glide'"):
        sys.constrained_dynamics(q, qd, active={"foot_a": "glide"})
    # both legs on one another, both feet held: dependent rows; one leg turning, no motion holds both feet
    q1 = q.copy()
    q1[3] = q1[2]
    with pytest.raises(DynamicsError, match="foot_a, foot_b.*singular") as err:
        sys.constrained_dynamics(q1, [0.0, 0.0, 1.0, 0.0], active=["foot_a", "foot_b"])
    assert err.value.status == StatusCode.ERR_SINGULAR_CONSTRAINTS
    with pytest.raises(DynamicsError, match="inf or NaN") as err:
        sys.constrained_dynamics(q * np.nan, qd, active=["foot_a"])
    assert err.value.status == StatusCode.ERR_NONFINITE_INPUT
    with pytest.raises(ValueError, match="expects 4 coordinates"):
        sys.impact(q[:3], qd, active=["foot_a"])


def test_contact_inverse_dynamics_on_a_compiled_model(fourbar) -> None:
    """The forces and inputs of a motion computed by the compiled constrained dynamics reproduce it."""
    sys, ref = fourbar
    for q, qd, u in _states(sys, 4, 4):
        qdd, lam = sys.constrained_dynamics(q, qd, u, active=["close"])
        r = contact_inverse_dynamics(sys, q, qd, qdd, active=["close"])
        np.testing.assert_allclose(r.residual, 0, atol=1e-9)
        # the loop's force and the input are determined: they equal those of the forward problem
        np.testing.assert_allclose(r.u, u, atol=1e-8)
        np.testing.assert_allclose(r.forces["close"], lam, atol=1e-8)


# ---- hybrid simulation -----------------------------------------------------------------------------------


def _walk(sys, x, t_end, dt, **kw):
    return sys.simulate(_model_state(x), t_end, dt, contacts=["foot_a"], disarmed=["foot_b"], arm_gap=ARM_GAP,
                        **kw)


def test_compass_gait_walks_50_steps_on_the_reference_gait(compass) -> None:
    sys, _ = compass
    w = Walker()
    z, eig = fixed_point(w, np.array([-0.26, 1.1, 0.35]))
    x1, period, _ = step(w, z)
    res = _walk(sys, z, 50 * period + 0.5 * period, 2e-3, event_tol=1e-13)
    assert res.status == Status.SUCCESS, res.message
    td = [e for e in res.events if e["kind"] == "touchdown"]
    assert len(td) >= 50
    lift = [e for e in res.events if e["kind"] == "liftoff"]
    assert len(lift) == len(td) and not [e for e in res.events if e["kind"] == "slip"]
    # feet alternate and the phases alternate with them
    assert [e["block"] for e in td[:4]] == ["foot_b", "foot_a", "foot_b", "foot_a"]
    assert [ph[1] for ph in res.phases[:3]] == [["foot_a"], ["foot_b"], ["foot_a"]]
    np.testing.assert_allclose(res.phases[1][0], td[0]["t"], atol=0)
    # the period of every step
    times = np.array([e["t"] for e in td])
    np.testing.assert_allclose(np.diff(np.concatenate([[0.0], times])), period, atol=1e-6)
    # the state just after each heel strike, in the reference's coordinates, is the fixed point
    for k, e in enumerate(td):
        i = np.flatnonzero(res.t == e["t"])[-1]  # the row after the jump
        stance = 1 if e["block"] == "foot_b" else 0
        th, om = res.q[i, 2:4], res.qd[i, 2:4]
        x = np.array([-th[stance] - GAMMA, -th[1 - stance] - GAMMA, -om[stance], -om[1 - stance]])
        np.testing.assert_allclose(x, x1, atol=1e-6, err_msg=f"step {k}")
        # the heel strike's energy loss equals the kinetic energy jump of the stored rows
        np.testing.assert_allclose(e["energy_loss"], res.kinetic[i - 1] - res.kinetic[i], rtol=1e-9)
    # forces: the held foot carries the weight on average; inactive rows are zero
    assert np.all(res.lam[res.active["foot_a"] == 0][:, :2] == 0)
    assert res.lam.shape == (len(res.t), 4)


def test_chunked_output_equals_one_buffer_and_bad_names_are_reported(compass) -> None:
    sys, _ = compass
    x = np.array([-0.27, 0.27, 1.09, 0.38])
    whole = _walk(sys, x, 2.0, 1e-2)
    parts = _walk(sys, x, 2.0, 1e-2, chunk_rows=5)
    assert whole.status == parts.status
    for name in ("t", "q", "qd", "lam"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(parts, name), err_msg=name)
    for nm in whole.active:
        np.testing.assert_array_equal(whole.active[nm], parts.active[nm])
    assert [(e["t"], e["kind"], e["block"]) for e in whole.events] == \
        [(e["t"], e["kind"], e["block"]) for e in parts.events]
    assert whole.phases == parts.phases
    with pytest.raises(ValueError, match="no constraint block 'foot_x'"):
        sys.simulate(_model_state(x), 1.0, 1e-2, contacts=["foot_x"])
    with pytest.raises(ValueError, match="on_slip"):
        sys.simulate(_model_state(x), 1.0, 1e-2, contacts=["foot_a"], on_slip="skid")
    # a stance foot lifted off the ground is not a valid start, the message names it
    y = _model_state(x)
    y[1] += 0.01
    with pytest.raises(ValueError, match="foot_a"):
        sys.simulate(y, 1.0, 1e-2, contacts=["foot_a"], disarmed=["foot_b"])


def test_slip_stops_the_run_naming_the_foot(compass) -> None:
    """Without friction enough (mu = 0.05) the stance foot slips at once: status and message name it."""
    sys, ref = compass
    res = sys.simulate(_model_state(np.array([-0.27, 0.27, 1.09, 0.38])), 1.0, 1e-2, contacts=["foot_a"],
                       disarmed=["foot_b"], arm_gap=ARM_GAP, p={"mu": 0.05})
    assert res.status == Status.FAILED and "foot_a" in res.message and "friction cone" in res.message
    assert res.events[-1]["kind"] == "slip" and res.events[-1]["block"] == "foot_a"
    # the logged force is the ground reaction of the KKT reference at the state where the run stopped,
    # outside the cone
    f = res.events[-1]["impulse"]
    _, lam_ref = constrained_dynamics(ref, res.q[-1], res.qd[-1], active=["foot_a"])
    np.testing.assert_allclose(f, lam_ref, rtol=1e-6)
    assert abs(f[0]) > 0.05 * f[1] > 0


def test_inputs_of_a_hybrid_run_reach_the_c_through_the_runtime_laws(fourbar) -> None:
    """A torque on the four-bar's crank: the run equals RK4 of the KKT reference (tests/_constrained.py) with
    the same input law; a constant, a table and a Python callable of the same law give the same run."""
    from _constrained import rk4

    from rodgen.runtime.control import InputTable
    sys, ref = fourbar
    y0 = sys.initial_state()
    tau = lambda t: 0.8 * np.sin(3.0 * t)  # noqa: E731
    dt, t_end = 1e-3, 0.5
    res = sys.simulate(y0, t_end, dt, contacts=[], u=lambda t, q, qd: [tau(t)])
    assert res.status == Status.SUCCESS and res.phases == [(0.0, ["close"])] and res.events == []

    def f(y):  # time is the last entry of the extended state
        qdd, _ = constrained_dynamics(ref, y[:3], y[3:6], [tau(y[6])], active=["close"])
        return np.concatenate([y[3:6], qdd, [1.0]])
    ys = rk4(f, np.concatenate([y0, [0.0]]), t_end, dt)
    np.testing.assert_allclose(res.q, ys[:, :3], atol=1e-8)
    np.testing.assert_allclose(res.u[:, 0], tau(res.t), atol=1e-15)
    # λ of the stored rows: the reference's at the same states
    for i in (0, len(res.t) // 2, -1):
        lam_ref = constrained_dynamics(ref, res.q[i], res.qd[i], res.u[i], active=["close"])[1]
        np.testing.assert_allclose(res.lam[i], lam_ref, rtol=1e-6, atol=1e-6)
    const = sys.simulate(y0, t_end, dt, contacts=[], u=[0.3])
    table = sys.simulate(y0, t_end, dt, contacts=[], u=InputTable([0.0, 1.0], [[0.3], [0.3]]))
    call = sys.simulate(y0, t_end, dt, contacts=[], u=lambda t, q, qd: [0.3])
    np.testing.assert_array_equal(const.q, call.q)
    np.testing.assert_array_equal(const.lam, call.lam)
    np.testing.assert_allclose(const.q, table.q, rtol=1e-12, atol=1e-12)  # interpolated: rounding only
    np.testing.assert_allclose(const.lam, table.lam, rtol=1e-12, atol=1e-12)
    # an input function that raises ends the run with its message
    def bad(t, q, qd):
        raise RuntimeError("no torque here")
    failed = sys.simulate(y0, t_end, dt, contacts=[], u=bad)
    assert failed.status != Status.SUCCESS and "no torque here" in failed.message


def _phases_by_row(t, active, names):
    """The phases row by row, the definition: a new one wherever the names of the active blocks change."""
    phases: list = []
    for i in range(len(t)):
        cur = [names[j] for j in range(len(names)) if active[i, j]]
        if not phases or phases[-1][1] != cur:
            phases.append((float(t[i]), cur))
    return phases


@pytest.mark.parametrize("seed", range(5))
def test_phases_are_the_changes_of_the_active_set(seed):
    """A hybrid result's phases (found by comparing whole rows of the active codes) against the row-by-row
    definition: random codes 0-3 held for random stretches, so that a block going from sticking (1) to sliding
    (2, 3) is in the same phase and a block released and held again starts new ones."""
    from rodgen.runtime.integrate import _phases
    rng = np.random.default_rng(seed)
    rows, names = 400, ["sole_l", "sole_r", "knee_limit"]
    runs = rng.integers(1, 30, size=rows)
    codes = np.repeat(rng.integers(0, 4, size=(rows, len(names))), runs, axis=0)[:rows].astype(np.intc)
    t = np.cumsum(rng.uniform(1e-4, 1e-3, size=len(codes)))
    got = _phases(t, codes, names)
    assert got == _phases_by_row(t, codes, names)
    assert len(got) > 10 and _phases(t[:0], codes[:0], names) == []
    # sticking to sliding is no new phase
    same = np.array([[1, 0, 0], [2, 0, 0], [3, 0, 0], [0, 0, 0], [1, 1, 0]], dtype=np.intc)
    assert _phases(np.arange(5.0), same, names) == [(0.0, ["sole_l"]), (3.0, []), (4.0, ["sole_l", "sole_r"])]


def test_energies_computed_on_first_use_are_the_models(compass) -> None:
    """A simulation's energies are left to their first use (one evaluation for both); then they are the
    model's energy routine at the stored states, and a pickled or replaced result carries them computed."""
    import dataclasses
    import pickle

    from rodgen.runtime.result import Deferred
    sys, _ = compass
    x = np.array([-0.27, 0.27, 1.09, 0.38])
    res = _walk(sys, x, 1.0, 1e-2)
    plain = sys.simulate(_model_state(x), 0.3, 1e-2)
    for r in (res, plain):
        assert isinstance(r.__dict__["_kinetic"], Deferred) and r.__dict__["_kinetic"] is r.__dict__["_potential"]
    T, V = sys.energy(np.ascontiguousarray(res.q), np.ascontiguousarray(res.qd))
    calls = []
    deferred = res.__dict__["_kinetic"]
    compute = deferred.compute
    deferred.compute = lambda: calls.append(1) or compute()
    np.testing.assert_array_equal(res.potential, V)
    np.testing.assert_array_equal(res.kinetic, T)
    assert calls == [1] and res.kinetic.shape == (len(res.t),)
    # a result pickled before its energies were read carries them computed (the model does not travel)
    back = pickle.loads(pickle.dumps(plain))
    T2, V2 = sys.energy(np.ascontiguousarray(plain.q), np.ascontiguousarray(plain.qd))
    np.testing.assert_array_equal(back.kinetic, T2)
    np.testing.assert_array_equal(back.total_energy, T2 + V2)
    again = dataclasses.replace(res, message="copied")
    np.testing.assert_array_equal(again.kinetic, T)
    assert again.message == "copied" and isinstance(again.__dict__["_kinetic"], np.ndarray)
