"""The independent compass-gait reference (tests/_compass_reference.py) checked against theory.

It is the yardstick of rodgen's hybrid simulation of the same walker, so it is
checked on its own first: energy is conserved in the swing phase, heel strike
computed from momentum conservation equals heel strike computed as a plastic
impact of the unconstrained four-coordinate walker (a second, independent
formulation), and the period-one gait is a fixed point of the step map and is
stable (Goswami, Thuilot and Espiau 1998: stable for these parameters).
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from _compass_reference import Walker, energy, fixed_point, impact, step, swing_rhs
from scipy.integrate import solve_ivp

W = Walker()
#: a state near the walker's period-one gait (post-impact), a starting point for Newton
NEAR_GAIT = np.array([-0.26, 0.26, 1.1, 0.35])


def test_swing_conserves_energy() -> None:
    x0 = np.array([-0.25, 0.25, 1.2, -0.4])
    sol = solve_ivp(lambda t, x: swing_rhs(W, x), (0.0, 0.6), x0, rtol=1e-11, atol=1e-12)
    assert energy(W, sol.y[:, -1]) == pytest.approx(energy(W, x0), abs=1e-8)


def _impact_by_impulse(x: np.ndarray) -> np.ndarray:
    """Heel strike as a plastic impact of the free walker q = (x_f, y_f, theta_1, theta_2).

    theta_1 is the leg of the foot at (x_f, y_f) (the old stance leg), theta_2 the other;
    M (qd+ - qd-) = J^T Lambda, J qd+ = 0 with J the Jacobian of the new contact (the other foot).
    """
    xf, yf, t1, t2 = sp.symbols("xf yf t1 t2")
    q = sp.Matrix([xf, yf, t1, t2])
    qd = sp.Matrix(sp.symbols("vx vy w1 w2"))
    def d(th: sp.Expr) -> sp.Matrix:
        return sp.Matrix([sp.sin(th), sp.cos(th)])

    foot = sp.Matrix([xf, yf])
    hip = foot + W.l * d(t1)
    p1 = foot + W.a * d(t1)
    p2 = hip - W.b * d(t2)
    foot2 = hip - W.l * d(t2)
    def v(r: sp.Matrix) -> sp.Matrix:
        return r.jacobian(q) * qd

    T = (W.m_hip * v(hip).dot(v(hip)) + W.m * v(p1).dot(v(p1)) + W.m * v(p2).dot(v(p2))) / 2
    M = np.array(sp.hessian(T, qd).subs({xf: 0, yf: 0, t1: x[0], t2: x[1]}), float)
    J = np.array(foot2.jacobian(q).subs({t1: x[0], t2: x[1]}), float)
    qd_minus = np.array([0.0, 0.0, x[2], x[3]])
    K = np.block([[M, -J.T], [J, np.zeros((2, 2))]])
    sol = np.linalg.solve(K, np.concatenate([M @ qd_minus, np.zeros(2)]))
    w1, w2 = sol[2], sol[3]
    # relabel: the new stance leg is leg 2 (angle t2, rate w2), the new swing leg is leg 1
    return np.array([x[1], x[0], w2, w1])


def test_heel_strike_agrees_with_impulse_formulation() -> None:
    x1, _, x_minus = step(W, NEAR_GAIT)
    assert impact(W, x_minus) == pytest.approx(_impact_by_impulse(x_minus), abs=1e-12)
    # plastic: the impact loses energy, and the walker's gait repeats
    assert energy(W, x1) < energy(W, x_minus)


def test_gait_is_a_stable_fixed_point() -> None:
    z, eig = fixed_point(W, NEAR_GAIT[[0, 2, 3]])
    x1, period, _ = step(W, z)
    assert x1 == pytest.approx(z, abs=1e-9)              # a fixed point of the step map
    assert z[1] == -z[0] and 0.5 < period < 1.0          # both feet down at the section; a plausible step time
    assert np.max(np.abs(eig)) < 1.0                     # and a stable one
