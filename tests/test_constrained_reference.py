"""The constrained-dynamics reference (tests/_constrained.py) against theory.

- a pendulum held by a loop: λ is the rod tension m (g cos β + l ω²), directed along the rod;
- the four-bar at rest: loop force and holding torque from moment balances written by hand;
- the four-bar in motion: energy is conserved and the loop stays closed (J̇q̇ right);
- compass-gait heel strike: angular momentum about the new contact point and of the trailing leg
  about the hip are conserved, and the post-impact rates equal Goswami's transition matrices.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from _constrained import ConstrainedNumeric, constrained_dynamics, impact, rk4

import rodgen

METHODS = ["lagrange", "matrix", "recursive"]


def cross(a: np.ndarray, b: np.ndarray) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def loop_pendulum() -> rodgen.Model:
    """Bob A on a free sliding arm (angle, length), bob B on a rigid rod of length l; a loop joins them."""
    m = rodgen.Model("loop_pendulum")
    m.parameter("g", 9.81)
    m.parameter("m", 0.7)
    m.parameter("m2", 1.9)
    m.parameter("l", 1.3)
    m.gravity = (0, "-g")
    arm = m.link("arm", initial=-1.0, joint=rodgen.Joint(actuated=False))
    arm.variable("arm_s", "l", masses=[rodgen.PointMass("m", fraction=1)], actuated=False)
    arm.marker("bob_a", "arm_s", fraction=1)
    rod = m.link("rod", initial=-1.0, joint=rodgen.Joint(actuated=False))
    rod.rigid("rod_s", "l", masses=[rodgen.PointMass("m2", fraction=1)])
    rod.marker("bob_b", "rod_s", fraction=1)
    m.loop("hold", "bob_a", "bob_b")
    return m


@pytest.mark.parametrize("method", METHODS)
def test_loop_force_is_the_rod_tension(method: str) -> None:
    sys = ConstrainedNumeric(rodgen.derive(loop_pendulum(), method=method))
    P = sys.parameters
    g, m, l = P["g"], P["m"], P["l"]
    for phi, w in ((-1.0, 0.0), (-0.3, 2.1), (-2.5, -1.4), (0.4, 3.0)):
        qdd, lam = constrained_dynamics(sys, [phi, l, phi], [w, 0, w], active=["hold"])
        # the pair is a simple pendulum of length l (masses at one point): phi'' = -g cos(phi) / l
        np.testing.assert_allclose(qdd, [-g * math.cos(phi) / l, 0, -g * math.cos(phi) / l], atol=1e-12)
        beta = phi + math.pi / 2                      # angle from the downward vertical
        tension = m * (g * math.cos(beta) + l * w ** 2)
        # λ is the force on marker b's body; on bob A (marker a) it is -λ, pulling it inwards
        np.testing.assert_allclose(lam, tension * np.array([math.cos(phi), math.sin(phi)]), atol=1e-12)


@pytest.fixture(scope="module", params=METHODS)
def fourbar(request) -> ConstrainedNumeric:
    return ConstrainedNumeric(rodgen.derive(rodgen.load("examples/fourbar.yaml"), method=request.param))


def test_fourbar_statics_by_moment_balance(fourbar: ConstrainedNumeric) -> None:
    P = fourbar.parameters
    g, a, b, c, d = P["g"], P["a"], P["b"], P["c"], P["d"]
    m1, m2, m3 = P["m1"], P["m2"], P["m3"]
    q = np.array([co.initial.evaluate(P) for co in fourbar.equations.coordinates])
    e = [np.array([math.cos(x), math.sin(x)]) for x in q]
    A, D = np.zeros(2), np.array([d, 0.0])
    B = A + a * e[0]
    C = B + b * e[1]
    G1, G2, G3 = A + a / 2 * e[0], B + b / 2 * e[1], D + c / 2 * e[2]

    def w(mass: float) -> np.ndarray:
        return np.array([0.0, -mass * g])

    # λ acts on the rocker at C, -λ on the coupler at C; hinges are passive:
    #   rocker about D:   (C-D) x λ + (G3-D) x w3 = 0
    #   coupler about B: -(C-B) x λ + (G2-B) x w2 = 0
    K = np.array([[-(C - D)[1], (C - D)[0]], [(C - B)[1], -(C - B)[0]]])
    lam = np.linalg.solve(K, [-cross(G3 - D, w(m3)), -cross(G2 - B, w(m2))])
    # coupler force balance: the crank pushes it at B with λ - w2; the crank gets the opposite,
    # and its moment balance about A gives the holding torque
    F_B = -(lam - w(m2))
    u = -(cross(B - A, F_B) + cross(G1 - A, w(m1)))
    qdd, lam_ref = constrained_dynamics(fourbar, q, np.zeros(3), [u], active=["close"])
    np.testing.assert_allclose(qdd, 0, atol=1e-10)
    np.testing.assert_allclose(lam_ref, lam, atol=1e-10)


def test_fourbar_motion_conserves_energy(fourbar: ConstrainedNumeric) -> None:
    P = fourbar.parameters
    q0 = np.array([co.initial.evaluate(P) for co in fourbar.equations.coordinates])
    # a velocity along the loop: the null space of J
    J = fourbar.constraint_jacobian(q0)
    v = np.linalg.svd(J)[2][-1]
    y0 = np.concatenate([q0, 3.0 * v / v[0]])

    def f(y: np.ndarray) -> np.ndarray:
        qdd, _ = constrained_dynamics(fourbar, y[:3], y[3:], [0.0], active=["close"])
        return np.concatenate([y[3:], qdd])
    ys = rk4(f, y0, 1.0, 1e-3)
    E = np.array([sum(fourbar.energy(y[:3], y[3:])) for y in ys])
    assert np.ptp(E) < 1e-7 * abs(E).max()
    gap = np.array([np.linalg.norm(fourbar.constraint_position(y[:3])) for y in ys])
    assert gap.max() < 1e-8
    # the crank turns (the state moved) while the loop stayed closed
    assert abs(ys[-1, 0] - ys[0, 0]) > 0.5


# -- compass-gait heel strike ---------------------------------------------------------------------

def goswami_transition(alpha: float, m: float, mH: float, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """Q⁻, Q⁺ of Goswami, Thuilot & Espiau (1998), eq. (5): Q⁺ [θ̇ns⁺, θ̇s⁺] = Q⁻ [θ̇ns⁻, θ̇s⁻]
    (after the impact the old stance leg is the swing leg), alpha the half inter-leg angle."""
    l = a + b
    c2 = math.cos(2 * alpha)
    Qm = np.array([[-m * a * b, -m * a * b + (mH * l ** 2 + 2 * m * a * l) * c2],
                   [0.0, -m * a * b]])
    Qp = np.array([[m * b * (b - l * c2), m * l * (l - b * c2) + m * a ** 2 + mH * l ** 2],
                   [m * b ** 2, -m * b * l * c2]])
    return Qm, Qp


def _momentum(sys: ConstrainedNumeric, q: np.ndarray, qd: np.ndarray, about: np.ndarray,
              names: tuple[str, ...]) -> float:
    """Σ m r × v of the named point masses about a point (velocities by central differences)."""
    P = sys.parameters
    mass = {"hip": P["m_H"], "mass_a": P["m"], "mass_b": P["m"]}
    eps = 1e-6
    p0, pp, pm = sys.points(q), sys.points(q + eps * qd), sys.points(q - eps * qd)
    return sum(mass[n] * cross(p0[n] - about, (pp[n] - pm[n]) / (2 * eps)) for n in names)


@pytest.mark.parametrize("method", METHODS)
def test_compass_heel_strike(method: str) -> None:
    sys = ConstrainedNumeric(rodgen.derive(rodgen.load("examples/compass_gait.yaml"), method=method))
    P = sys.parameters
    l = P["a"] + P["b"]
    th_a, th_b = -0.3234, 0.2187            # leg a in stance (trailing), leg b about to strike
    hip = -l * np.array([math.sin(th_a), -math.cos(th_a)])   # foot a at the origin
    q = np.array([hip[0], hip[1], th_a, th_b])
    c = sys.constraint_position(q)
    assert abs(c[1]) < 1e-12 and abs(c[3]) < 1e-4          # both feet on the slope
    for wa, wb in ((-1.09, -0.38), (-0.7, 0.9), (-1.5, -2.0)):
        # pre-impact: foot a at rest, the legs turning at wa (stance), wb (swing)
        J = sys.constraint_jacobian(q)
        # base rates from J_a qd = 0: the hip moves with the stance leg
        base = -np.linalg.solve(J[0:2, 0:2], J[0:2, 2:] @ [wa, wb])
        qd_m = np.array([base[0], base[1], wa, wb])
        np.testing.assert_allclose(J[0:2] @ qd_m, 0, atol=1e-12)
        qd_p, Lam = impact(sys, q, qd_m, ["foot_b"])
        # foot b sticks, foot a is released and lifts off
        np.testing.assert_allclose(J[2:4] @ qd_p, 0, atol=1e-12)
        assert Lam[1] > 0
        # conservation: whole walker about the new contact point, trailing leg (mass a) about the hip
        foot_b = sys.points(q)["foot_b"]
        all_masses = ("hip", "mass_a", "mass_b")
        assert _momentum(sys, q, qd_p, foot_b, all_masses) == pytest.approx(
            _momentum(sys, q, qd_m, foot_b, all_masses), rel=1e-8, abs=1e-8)
        hip_pt = sys.points(q)["hip"]
        assert _momentum(sys, q, qd_p, hip_pt, ("mass_a",)) == pytest.approx(
            _momentum(sys, q, qd_m, hip_pt, ("mass_a",)), rel=1e-8, abs=1e-8)
        # Goswami's closed form, with old stance a -> new swing, old swing b -> new stance
        Qm, Qp = goswami_transition((th_b - th_a) / 2, P["m"], P["m_H"], P["a"], P["b"])
        expected = np.linalg.solve(Qp, Qm @ [wb, wa])          # [θ̇ns⁺, θ̇s⁺]
        np.testing.assert_allclose([qd_p[2], qd_p[3]], expected, rtol=1e-10, atol=1e-12)


def test_compass_gait_step_matches_the_independent_walker() -> None:
    """examples/compass_gait.yaml with foot a held, integrated by the KKT reference, then heel strike by the
    impact reference, against tests/_compass_reference.py (a hand-written Lagrangian in the slope frame).

    Frames: the walker's angles are from the slope normal, positive towards +x (down the slope); the model's
    from the downward vertical, counter-clockwise, so theta_model = -(theta_walker + gamma) for both legs.
    """
    from _compass_reference import Walker, step
    sys = ConstrainedNumeric(rodgen.derive(rodgen.load("examples/compass_gait.yaml"), method="recursive"))
    P = sys.parameters
    w = Walker(m=P["m"], m_hip=P["m_H"], a=P["a"], b=P["b"], g=P["g"], slope=P["gamma"])
    x0 = np.array([-0.26, 0.26, 1.1, 0.35])               # [theta_s, theta_w, omega_s, omega_w] after a strike
    x1, period, x_minus = step(w, x0)

    def state(x: np.ndarray) -> np.ndarray:
        """The model's (q, qd) with foot a (the stance foot) at the origin."""
        th = -(x[:2] + w.slope)
        q = np.array([-w.l * math.sin(th[0]), w.l * math.cos(th[0]), th[0], th[1]])
        J = sys.constraint_jacobian(q)[0:2]
        base = -np.linalg.solve(J[:, :2], J[:, 2:] @ -x[2:])
        return np.concatenate([q, base, -x[2:]])

    y0 = state(x0)
    steps = 800

    def f(y: np.ndarray) -> np.ndarray:
        qdd, _ = constrained_dynamics(sys, y[:4], y[4:], active=["foot_a"])
        return np.concatenate([y[4:], qdd])
    y_minus = rk4(f, y0, period, period / steps)[-1]
    np.testing.assert_allclose(y_minus, state(x_minus), atol=1e-9)
    assert abs(sys.constraint_position(y_minus[:4])[3]) < 1e-9            # foot b reaches the slope
    qd_plus, _ = impact(sys, y_minus[:4], y_minus[4:], ["foot_b"])
    # after the strike leg b is the stance leg: its rate is -omega_s, leg a's is -omega_w
    np.testing.assert_allclose([qd_plus[3], qd_plus[2]], -x1[2:], atol=1e-9)
