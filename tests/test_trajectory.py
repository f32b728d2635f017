"""Inverse dynamics along prescribed motions, and mixed problems, against independent results.

* The solar-panel boom at a constant 90 deg/s: M_1 = 1/2 J'(q1) q1'^2 =
  -4 m a^2 w^2 sin(2 q1) (closed form, see test_coupling.py).
* A simulated trajectory (scipy's solve_ivp under known inputs) played back
  through prescribed_forces returns the inputs that drove it.
* Power balance along an analytic exoskeleton gait: Q . qd = d(T + V)/dt.
* A pendulum whose pivot moves along x(t), y(t): the mixed problem's
  accelerations and the force on the pivot against the hand-derived
  equation of a pendulum with a moving support.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

import rodgen
from rodgen.runtime.trajectory import MixedProblem, Motion, as_evaluator, input_matrix, prescribed_forces
from rodgen.symbolic.numeric import NumericModel

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
SEED = 7031
# the same arithmetic in double on both sides, along different routes
RTOL_ROUNDING = 1e-10
# Cubic-spline derivatives of samples at dt = 1e-3 (torques of order 1 N m):
# the first derivative is O(dt^3) accurate, the second O(dt^2) times the
# fourth derivative of q, which reaches ~1e2 for the driven double pendulum.
ATOL_SPLINE_D1 = 1e-6
ATOL_SPLINE_D2 = 1e-3


def ex(name: str) -> rodgen.Model:
    return rodgen.load(os.path.join(EXAMPLES, name))


def test_solar_panel_torque_at_constant_rate_all_motion_forms() -> None:
    m, a, w = 0.8143, 1.0, np.pi / 2
    t = np.linspace(0.0, 1.0, 41)
    expected = -4 * m * a**2 * w**2 * np.sin(2 * w * t)
    ts = sp.Symbol("t")
    ev = as_evaluator(ex("solar_panel.yaml"))
    forms = [w * t, [w * t], {"q1": w * t}, [w * ts], {"q1": lambda tt: w * tt}, lambda tt: (w * tt)[:, None]]
    for form in forms:
        r = prescribed_forces(ev, t, form)
        np.testing.assert_allclose(r.u[:, 0], expected, rtol=1e-9, atol=1e-9, err_msg=repr(type(form)))
        np.testing.assert_allclose(r.forces[:, 0], expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(r.residual, 0.0, atol=1e-12)
    assert r.inputs == ["M_1"] and r.coordinates == ["q1"]


def test_playback_of_a_simulation_returns_its_inputs() -> None:
    """Double pendulum driven by known torques; prescribed_forces on the sampled motion gives them back."""
    ev = as_evaluator(ex("double_pendulum.yaml"))

    def u_of(t: float) -> np.ndarray:
        return np.array([2.0 * np.sin(3 * t), -1.0 + 0.5 * np.cos(2 * t)])

    y0 = np.array([-1.0, 0.5, 0.0, 0.0])
    t = np.linspace(0.0, 2.0, 2001)
    sol = solve_ivp(lambda tt, y: ev.rhs(tt, y, u_of(tt)), (0, 2), y0, t_eval=t, rtol=1e-12, atol=1e-12,
                    method="DOP853")
    q, qd = sol.y[:2].T, sol.y[2:].T
    U = np.array([u_of(tk) for tk in t])
    # rates from the simulation, accelerations from the spline of qd: accurate away from the ends
    r = prescribed_forces(ev, t, q, qd=qd)
    inner = slice(50, -50)
    np.testing.assert_allclose(r.u[inner], U[inner], rtol=0, atol=ATOL_SPLINE_D1)
    # positions only: everything from the spline
    r2 = prescribed_forces(ev, t, q)
    np.testing.assert_allclose(r2.u[inner], U[inner], rtol=0, atol=ATOL_SPLINE_D2)
    # exact state and acceleration: exact inputs
    qdd = np.array([ev.forward_dynamics(q[k], qd[k], U[k]) for k in range(len(t))])
    r3 = prescribed_forces(ev, t, q, qd=qd, qdd=qdd)
    np.testing.assert_allclose(r3.u, U, rtol=RTOL_ROUNDING, atol=RTOL_ROUNDING)


def gait(ts: sp.Symbol) -> dict[str, sp.Expr]:
    """A smooth periodic single-support gait for exo5 (period 1.2 s)."""
    w = 2 * sp.pi / sp.Rational(12, 10)
    return {
        "phi_stance_shank": sp.Rational(145, 100) + sp.Rational(15, 100) * sp.sin(w * ts),
        "l_stance_shank_l": sp.Rational(13, 100) + sp.Rational(1, 100) * sp.sin(2 * w * ts),
        "phi_stance_thigh": sp.Rational(150, 100) + sp.Rational(20, 100) * sp.sin(w * ts + sp.Rational(1, 5)),
        "l_stance_thigh_l": sp.Rational(14, 100) + sp.Rational(1, 100) * sp.cos(2 * w * ts),
        "phi_torso": sp.Rational(16, 10) + sp.Rational(5, 100) * sp.sin(2 * w * ts),
        "phi_swing_thigh": -sp.Rational(14, 10) + sp.Rational(30, 100) * sp.sin(w * ts + 2),
        "l_swing_thigh_l": sp.Rational(14, 100) + sp.Rational(2, 100) * sp.sin(w * ts),
        "phi_swing_shank": -sp.Rational(17, 10) + sp.Rational(40, 100) * sp.sin(w * ts + 3),
        "l_swing_shank_l": sp.Rational(13, 100) - sp.Rational(2, 100) * sp.cos(w * ts),
    }


def test_power_balance_along_an_analytic_gait() -> None:
    ts = sp.Symbol("t")
    model = ex("exo5.yaml")
    ev = as_evaluator(model)
    t = np.linspace(0.0, 1.2, 61)
    r = prescribed_forces(ev, t, gait(ts))
    assert r.forces.shape == (61, 9) and r.u.shape == (61, 9)
    np.testing.assert_allclose(r.residual, 0.0, atol=1e-9)       # fully actuated
    # d(T+V)/dt from the energy at t +- h along the exact motion (central difference, O(h^2) = 1e-10)
    h = 1e-5
    mot = Motion(gait(ts), ev.coordinates)
    E = [np.sum(ev.energy(*mot(t + s)[:2]), axis=0) for s in (-h, h)]
    dE = (E[1] - E[0]) / (2 * h)
    power = np.einsum("ni,ni->n", r.forces, r.qd)
    np.testing.assert_allclose(power, dE, rtol=1e-6, atol=1e-6 * np.abs(power).max())


def test_underactuated_motion_reports_the_missing_forces() -> None:
    """The solar panel without its couplings: only joint 1 is driven; the residual is the force on 2, 3."""
    model = ex("solar_panel.yaml")
    model.couplings = {}
    ev = as_evaluator(model)
    rng = np.random.default_rng(SEED)
    t = np.linspace(0, 1, 11)
    q = rng.standard_normal((11, 3))
    qd, qdd = rng.standard_normal((11, 3)), rng.standard_normal((11, 3))
    r = prescribed_forces(ev, t, q, qd=qd, qdd=qdd)
    np.testing.assert_allclose(r.u[:, 0], r.forces[:, 0], rtol=RTOL_ROUNDING)
    np.testing.assert_allclose(r.residual[:, 1:], r.forces[:, 1:], rtol=RTOL_ROUNDING)
    np.testing.assert_allclose(r.residual[:, 0], 0.0, atol=1e-12)


class _OpaqueModel:
    """A model that exposes only the compiled interface of DESIGN.md (no input_map)."""

    def __init__(self, num: NumericModel) -> None:
        self._n = num
        self.nq, self.coordinates, self.inputs, self.parameters = num.nq, num.coordinates, num.inputs, \
            num.parameters
        self.name = num.name

    def mass_matrix(self, q, p=None):  # type: ignore[no-untyped-def]
        return self._n.mass_matrix(q, p)

    def bias(self, q, qd, p=None):  # type: ignore[no-untyped-def]
        return self._n.bias(q, qd, p)

    def forward_dynamics(self, q, qd, u, p=None):  # type: ignore[no-untyped-def]
        return self._n.forward_dynamics(q, qd, u, p)

    def inverse_dynamics(self, q, qd, qdd, p=None):  # type: ignore[no-untyped-def]
        return self._n.inverse_dynamics(q, qd, qdd, p)

    def energy(self, q, qd, p=None):  # type: ignore[no-untyped-def]
        return self._n.energy(q, qd, p)


def test_input_map_recovered_from_forward_dynamics() -> None:
    num = as_evaluator(ex("two_link_masses.yaml"))
    opaque = _OpaqueModel(num)
    rng = np.random.default_rng(SEED)
    q, qd = rng.uniform(0.3, 1.2, (6, num.nq)), rng.standard_normal((6, num.nq))
    np.testing.assert_allclose(input_matrix(opaque, q, qd), num.input_map(q), atol=1e-12,
                               err_msg=f"seed {SEED}")
    t = np.linspace(0, 1, 6)
    a = prescribed_forces(opaque, t, q, qd=qd, qdd=qd)
    b = prescribed_forces(num, t, q, qd=qd, qdd=qd)
    np.testing.assert_allclose(a.u, b.u, rtol=1e-10, atol=1e-10)


# -- mixed problem: pendulum on a moving pivot --------------------------------------------------

def moving_pendulum() -> rodgen.Model:
    model = rodgen.Model("moving_pendulum", base="floating")
    model.parameter("g", 9.81)
    model.parameter("m", 1.3)
    model.parameter("L", 0.8)
    model.gravity = (0.0, "-g")
    lk = model.link("arm", initial=-1.2, joint=rodgen.Joint(actuated=False))
    lk.rigid("arm_s", "L", masses=[rodgen.PointMass("m", fraction=1, name="bob")])
    return model


def test_mixed_problem_matches_pendulum_on_moving_pivot() -> None:
    ts = sp.Symbol("t")
    A, W = 0.1, 5.0
    xs, ys = A * sp.sin(W * ts), 0.5 * A * sp.cos(1.5 * W * ts)
    mp = MixedProblem(moving_pendulum(), {"x": xs, "y": ys})
    g, m, L = 9.81, 1.3, 0.8
    rng = np.random.default_rng(SEED)
    t = rng.uniform(0, 2, 8)
    y = rng.standard_normal((8, 2))
    q, qd, qdd = mp.accelerations(t, y)
    xdd = sp.lambdify(ts, sp.diff(xs, ts, 2))(t)
    ydd = sp.lambdify(ts, sp.diff(ys, ts, 2))(t)
    phi, w = y[:, 0], y[:, 1]
    # bob at pivot + L (cos phi, sin phi): L phi'' = -(g + ydd) cos phi + xdd sin phi
    expected = (-(g + ydd) * np.cos(phi) + xdd * np.sin(phi)) / L
    np.testing.assert_allclose(qdd[:, 2], expected, rtol=1e-12, err_msg=f"seed {SEED}")
    np.testing.assert_allclose(qdd[:, :2], np.column_stack([xdd, ydd]), rtol=1e-12)
    Qp = mp.compensating_forces(t, q, qd, qdd)
    Fx = m * (xdd - L * np.sin(phi) * qdd[:, 2] - L * np.cos(phi) * w**2)
    Fy = m * (ydd + L * np.cos(phi) * qdd[:, 2] - L * np.sin(phi) * w**2 + g)
    np.testing.assert_allclose(Qp, np.column_stack([Fx, Fy]), rtol=1e-11, atol=1e-11)


def test_mixed_simulation_energy_balance() -> None:
    """The pivot force's work equals the change of the pendulum's energy."""
    ts = sp.Symbol("t")
    mp = MixedProblem(moving_pendulum(), {"x": 0.1 * sp.sin(6 * ts), "y": 0.05 * sp.sin(9 * ts)})
    res = mp.simulate([-1.2, 0.0], 2.0, dt=1e-3)
    assert res.ok and res.q.shape == (2001, 3)
    power = np.einsum("ni,ni->n", res.extra["compensating"], res.qd[:, :2])
    work = np.concatenate([[0.0], np.cumsum((power[1:] + power[:-1]) / 2 * np.diff(res.t))])
    E = res.kinetic + res.potential
    # trapezoid rule at dt = 1e-3 on a smooth power: error ~ dt^2 |P''| T / 12 ~ 1e-5 J
    np.testing.assert_allclose(E - E[0], work, rtol=0, atol=2e-5)


def test_motion_errors() -> None:
    ev = as_evaluator(ex("double_pendulum.yaml"))
    t = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match=r"samples have shape \(5, 3\); expected \(5, 2\) for th_upper, th_lower"):
        prescribed_forces(ev, t, np.zeros((5, 3)))
    with pytest.raises(ValueError, match="no motion for th_lower"):
        prescribed_forces(ev, t, {"th_upper": 0.0})
    with pytest.raises(ValueError, match="several free symbols"):
        prescribed_forces(ev, t, [sp.Symbol("t") * sp.Symbol("s"), 0.0])
    with pytest.raises(ValueError, match="prescribed: unknown coordinate 'x'"):
        MixedProblem(ev, {"x": 0.0})


# -- the compiled model ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["solar_panel.yaml", "exo5.yaml"])
def test_compiled_model_gives_the_same_forces_as_the_equations(name: str, build_dir: "os.PathLike[str]") -> None:
    """prescribed_forces through the compiled, batched inverse dynamics and input map vs lambdify."""
    from rodgen.toolchain import build
    model = ex(name)
    eqs = rodgen.derive(model)
    compiled = build(eqs, build_dir=build_dir)
    num = as_evaluator(eqs)
    rng = np.random.default_rng(SEED)
    t = np.linspace(0.0, 1.0, 21)
    q0 = np.array([c.initial.evaluate(num.parameters) for c in eqs.coordinates])
    q = q0 + 0.1 * rng.standard_normal((21, num.nq))
    qd, qdd = rng.standard_normal((21, num.nq)), rng.standard_normal((21, num.nq))
    a = prescribed_forces(compiled, t, q, qd=qd, qdd=qdd)
    b = prescribed_forces(num, t, q, qd=qd, qdd=qdd)
    for field in ("forces", "u", "kinetic", "potential"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-10, atol=1e-10,
                                   err_msg=f"{name}: {field}, seed {SEED}")


def test_symbolic_motions_become_exact_numeric_triples() -> None:
    """The symbolic stage turns an expression of time into value, rate and acceleration callables
    (closed forms: d/dt sin^2(3t) = 3 sin 6t, d2/dt2 = 18 cos 6t); the runtime takes such triples."""
    from rodgen.symbolic.trajectory import numeric_motion, time_functions
    ts = sp.Symbol("t")
    f, df, ddf = time_functions(sp.sin(3 * ts) ** 2)
    t = np.linspace(0.0, 2.0, 7)
    np.testing.assert_allclose(f(t), np.sin(3 * t) ** 2, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(df(t), 3 * np.sin(6 * t), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(ddf(t), 18 * np.cos(6 * t), rtol=1e-14, atol=1e-14)
    assert time_functions(sp.pi / 2) == pytest.approx(np.pi / 2, rel=1e-16)
    with pytest.raises(ValueError, match="qd of 'x': expression .* several free symbols"):
        numeric_motion({"x": ts * sp.Symbol("s")}, "qd")
    # a triple given directly is used as exact rates by the runtime
    motion = Motion([(np.sin, np.cos, lambda tt: -np.sin(tt))], ["x"])
    q, qd, qdd = motion(t)
    np.testing.assert_array_equal(np.c_[q, qd, qdd], np.c_[np.sin(t), np.cos(t), -np.sin(t)])
