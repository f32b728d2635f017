"""An independent compass-gait walker (Goswami, Thuilot and Espiau 1998), for checking rodgen's hybrid simulation.

Nothing here uses rodgen: the equations come from a Lagrangian written out by
hand in the slope frame and differentiated by SymPy, the swing phase is
integrated by SciPy, and heel strike is the classical plastic impact
(conservation of the whole walker's angular momentum about the new contact
point and of the trailing leg's about the hip), solved as a 2 x 2 system.

Frame: x down the slope, y along its normal; gravity ``(g sin(slope), -g cos(slope))``.
Angles are measured from the slope normal, positive towards +x:
``d(theta) = (sin theta, cos theta)``. The stance foot is at the origin, the hip
at ``l d(theta_s)``, the stance-leg mass at ``a d(theta_s)``, the swing-leg mass at
``hip - b d(theta_w)`` and the swing foot at ``hip - l d(theta_w)``, ``l = a + b``.
State ``x = [theta_s, theta_w, omega_s, omega_w]``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Callable

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp


@dataclass(frozen=True)
class Walker:
    m: float = 5.0
    m_hip: float = 10.0
    a: float = 0.5
    b: float = 0.5
    g: float = 9.81
    slope: float = np.deg2rad(3.0)

    @property
    def l(self) -> float:
        return self.a + self.b


@cache
def _symbolic() -> tuple[Callable[..., np.ndarray], Callable[..., np.ndarray], Callable[..., float],
                         Callable[..., float]]:
    ts, tw, ws, ww = sp.symbols("ts tw ws ww")
    m, mh, a, b, g, gam = sp.symbols("m mh a b g gam")
    l = a + b

    def d(th: sp.Expr) -> sp.Matrix:
        return sp.Matrix([sp.sin(th), sp.cos(th)])

    hip = l * d(ts)
    p1 = a * d(ts)
    p2 = hip - b * d(tw)
    q, qd = sp.Matrix([ts, tw]), sp.Matrix([ws, ww])

    def vel(r: sp.Matrix) -> sp.Matrix:
        return r.jacobian(q) * qd

    gvec = sp.Matrix([g * sp.sin(gam), -g * sp.cos(gam)])
    T = (mh * vel(hip).dot(vel(hip)) + m * vel(p1).dot(vel(p1)) + m * vel(p2).dot(vel(p2))) / 2
    V = -(mh * gvec.dot(hip) + m * gvec.dot(p1) + m * gvec.dot(p2))
    M = sp.hessian(T, qd)
    Tq = sp.Matrix([T]).jacobian(q).T
    h = sp.Matrix([sum(M[i, j].diff(q[k]) * qd[j] * qd[k] for j in range(2) for k in range(2)) for i in range(2)])
    rhs_force = -(h - Tq) - sp.Matrix([V]).jacobian(q).T
    args = (ts, tw, ws, ww, m, mh, a, b, g, gam)
    f_M = sp.lambdify(args, M, "numpy")
    f_F = sp.lambdify(args, rhs_force, "numpy")
    f_E = sp.lambdify(args, T + V, "numpy")
    f_gap = sp.lambdify(args, hip[1] - l * sp.cos(tw), "numpy")
    return f_M, f_F, f_E, f_gap


def _args(w: Walker, x: np.ndarray) -> tuple[float, ...]:
    return (x[0], x[1], x[2], x[3], w.m, w.m_hip, w.a, w.b, w.g, w.slope)


def swing_rhs(w: Walker, x: np.ndarray) -> np.ndarray:
    f_M, f_F, _, _ = _symbolic()
    acc = np.linalg.solve(np.asarray(f_M(*_args(w, x)), float), np.asarray(f_F(*_args(w, x)), float).ravel())
    return np.array([x[2], x[3], acc[0], acc[1]])


def energy(w: Walker, x: np.ndarray) -> float:
    return float(_symbolic()[2](*_args(w, x)))


def swing_gap(w: Walker, x: np.ndarray) -> float:
    """Height of the swing foot above the slope."""
    return float(_symbolic()[3](*_args(w, x)))


def _cross(r: np.ndarray, v: np.ndarray) -> float:
    return float(r[0] * v[1] - r[1] * v[0])


def _points(w: Walker, x: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    ts, tw, ws, ww = x
    def d(th: float) -> np.ndarray:
        return np.array([np.sin(th), np.cos(th)])

    def dd(th: float) -> np.ndarray:
        return np.array([np.cos(th), -np.sin(th)])

    hip, vhip = w.l * d(ts), w.l * dd(ts) * ws
    return {"hip": (hip, vhip), "p1": (w.a * d(ts), w.a * dd(ts) * ws),
            "p2": (hip - w.b * d(tw), vhip - w.b * dd(tw) * ww), "foot2": (hip - w.l * d(tw), None)}


def impact(w: Walker, x: np.ndarray) -> np.ndarray:
    """Heel strike of the swing foot: the post-impact state, legs relabelled (the swing leg becomes the stance leg).

    Conserved: the angular momentum of the whole walker about the new contact
    point, and that of the trailing leg (the old stance leg) about the hip.
    """
    pts = _points(w, x)
    c = pts["foot2"][0]
    hip = pts["hip"][0]

    def momenta(y: np.ndarray, relabel: bool) -> np.ndarray:
        # y in the labelling of the state it belongs to; return (L_total about c, L_trailing about hip)
        p = _points(w, y)
        if relabel:   # after impact the new stance foot is at the origin of y's frame: shift by c
            shift = c
            trailing = p["p2"]        # the new swing leg is the old stance leg
        else:
            shift = np.zeros(2)
            trailing = p["p1"]
        total = (w.m_hip * _cross(p["hip"][0] + shift - c, p["hip"][1])
                 + w.m * _cross(p["p1"][0] + shift - c, p["p1"][1])
                 + w.m * _cross(p["p2"][0] + shift - c, p["p2"][1]))
        trail = w.m * _cross(trailing[0] + shift - hip, trailing[1])
        return np.array([total, trail])

    before = momenta(x, False)
    angles = np.array([x[1], x[0]])          # new stance = old swing, new swing = old stance
    A = np.empty((2, 2))
    for j in range(2):
        e = np.zeros(2)
        e[j] = 1.0
        A[:, j] = momenta(np.concatenate([angles, e]), True)
    rates = np.linalg.solve(A, before)
    return np.concatenate([angles, rates])


def step(w: Walker, x0: np.ndarray, *, rtol: float = 1e-11, atol: float = 1e-12,
         t_max: float = 5.0) -> tuple[np.ndarray, float, np.ndarray]:
    """One step from just after heel strike: (post-impact state, step time, pre-impact state).

    Heel strike is the swing foot's gap crossing zero downwards while the foot
    is down the slope of the stance foot: its passage under the slope while it
    swings past the stance leg is ignored, as for every rigid-legged compass gait.
    """
    def strike(t: float, x: np.ndarray) -> float:
        ahead = np.sin(x[0]) - np.sin(x[1]) > 0.0      # the swing foot is down the slope of the stance foot
        return swing_gap(w, x) if ahead else 1.0

    strike.direction, strike.terminal = -1.0, True       # type: ignore[attr-defined]
    down = solve_ivp(lambda t, x: swing_rhs(w, x), (0.0, t_max), x0, rtol=rtol, atol=atol, events=strike)
    if not down.t_events[0].size:
        raise RuntimeError("no heel strike within t_max")
    x_minus = down.y_events[0][0]
    return impact(w, x_minus), float(down.t_events[0][0]), x_minus


def fixed_point(w: Walker, guess: np.ndarray, *, tol: float = 1e-10, iters: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Period-one gait by Newton on the step-to-step map (three numbers on the section).

    The section is the post-impact state; its coordinates are ``(theta_s, omega_s, omega_w)`` with
    ``theta_w = -theta_s`` (both feet on the slope). Returns (the state, the eigenvalues of the map's Jacobian).
    """
    def full(z: np.ndarray) -> np.ndarray:
        return np.array([z[0], -z[0], z[1], z[2]])

    def P(z: np.ndarray) -> np.ndarray:
        x1 = step(w, full(z))[0]
        return np.array([x1[0], x1[2], x1[3]])

    z = np.asarray(guess, float)
    for _ in range(iters):
        r = P(z) - z
        J = np.empty((3, 3))
        for j in range(3):
            dz = np.zeros(3)
            dz[j] = 1e-6
            J[:, j] = (P(z + dz) - P(z - dz)) / 2e-6
        z = z - np.linalg.solve(J - np.eye(3), r)
        if np.max(np.abs(r)) < tol:
            break
    J = np.empty((3, 3))
    for j in range(3):
        dz = np.zeros(3)
        dz[j] = 1e-6
        J[:, j] = (P(z + dz) - P(z - dz)) / 2e-6
    return full(z), np.linalg.eigvals(J)
