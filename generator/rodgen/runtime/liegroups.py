"""Configurations of free, spherical and planar joints: integrate, difference and checks.

A free joint (floating base) has seven coordinates ``[x y z qx qy qz qw]`` (position of its frame in the
ground frame, unit quaternion of its orientation) and six velocities ``[vx vy vz wx wy wz]``, its spatial
velocity in its own frame (Pinocchio's free flyer). Moving such a configuration by a velocity is the
exponential map of SE(3): ``M1 = M0 exp(v dt)`` (:func:`integrate`); its inverse is the logarithm,
``v = log(M0⁻¹ M1)`` (:func:`difference`). A spherical joint (quaternion, angular velocity in its own
frame) moves on SO(3), a planar joint (x, y, theta; velocity in its own frame) on SE(2). Every other
coordinate is added to. NumPy only.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

#: Below this rotation angle the series of the exponential's coefficients are used.
SMALL = 1e-6


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The product a ⊗ b of quaternions (x, y, z, w)."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - av @ bv]])


def quat_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of the unit quaternion q = (x, y, z, w)."""
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _coefficients(t: float) -> tuple[float, float]:
    """(1 - cos t)/t², (t - sin t)/t³, by their series near 0."""
    if t < SMALL:
        return 0.5 - t * t / 24.0, 1.0 / 6.0 - t * t / 120.0
    return (1.0 - np.cos(t)) / (t * t), (t - np.sin(t)) / (t ** 3)


def exp_se3(v: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp of the twist (v linear, w angular): (translation V(w) v, quaternion of exp([w]x))."""
    t = float(np.linalg.norm(w))
    a, b = _coefficients(t)
    W = _skew(w)
    p = v + a * (W @ v) + b * (W @ (W @ v))
    half = 0.5 * t
    s = 0.5 - t * t / 48.0 if t < SMALL else np.sin(half) / t    # sin(t/2)/t
    return p, np.concatenate([s * w, [np.cos(half)]])


def log_se3(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The twist (v, w) whose exponential is (p, q)."""
    if q[3] < 0:
        q = -q
    n = float(np.linalg.norm(q[:3]))
    t = 2.0 * np.arctan2(n, q[3])
    w = q[:3] * (2.0 + n * n / 3.0 if n < SMALL else t / n)   # t/n -> 2 as n -> 0
    W = _skew(w)
    if t < SMALL:
        c = 1.0 / 12.0 + t * t / 720.0
    else:
        c = (1.0 - t * np.sin(t) / (2.0 * (1.0 - np.cos(t)))) / (t * t)
    v = p - 0.5 * (W @ p) + c * (W @ (W @ p))
    return v, w


#: Codes of ``lie_joints`` (the table's ``RODGEN_JOINT_FREE``, ``_SPHERICAL``, ``_PLANAR``), their nq and nv.
FREE, SPHERICAL, PLANAR = 0, 1, 2
SIZES = {FREE: (7, 6), SPHERICAL: (4, 3), PLANAR: (3, 3)}
KINDS = {FREE: "free", SPHERICAL: "spherical", PLANAR: "planar"}


def _exp_so3(w: np.ndarray) -> np.ndarray:
    return exp_se3(np.zeros(3), w)[1]


def _planar_exp(v: np.ndarray) -> np.ndarray:
    """exp of the SE(2) twist (vx, vy, w): the translation V(w) (vx, vy)."""
    t = float(v[2])
    if abs(t) < SMALL:
        a, b = 1.0 - t * t / 6.0, t / 2.0 - t ** 3 / 24.0
    else:
        a, b = np.sin(t) / t, (1.0 - np.cos(t)) / t
    return np.array([a * v[0] - b * v[1], b * v[0] + a * v[1]])


def _planar_log(p: np.ndarray, t: float) -> np.ndarray:
    if abs(t) < SMALL:
        a, b = 1.0 - t * t / 6.0, t / 2.0 - t ** 3 / 24.0
    else:
        a, b = np.sin(t) / t, (1.0 - np.cos(t)) / t
    d = a * a + b * b
    return np.array([(a * p[0] + b * p[1]) / d, (-b * p[0] + a * p[1]) / d, t])


def _rot2(t: float) -> np.ndarray:
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


def integrate(q: np.ndarray, v: np.ndarray, lie_joints: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """q ⊕ v for one configuration (nq,) and velocity (nv,) (already scaled by the time step)."""
    nq = q.shape[0]
    out = np.empty(nq)
    taken_q = np.zeros(nq, dtype=bool)
    taken_v = np.zeros(v.shape[0], dtype=bool)
    for kind, iq, iv in lie_joints:
        if kind == FREE:
            p0, q0 = q[iq:iq + 3], q[iq + 3:iq + 7]
            dp, dq = exp_se3(v[iv:iv + 3], v[iv + 3:iv + 6])
            q1 = quat_mul(q0, dq)
            q1 = q1 / np.linalg.norm(q1)
            if q1 @ q0 < 0:
                q1 = -q1
            out[iq:iq + 3] = p0 + quat_matrix(q0) @ dp
            out[iq + 3:iq + 7] = q1
        elif kind == SPHERICAL:
            q1 = quat_mul(q[iq:iq + 4], _exp_so3(v[iv:iv + 3]))
            out[iq:iq + 4] = q1 / np.linalg.norm(q1)
        else:
            out[iq:iq + 2] = q[iq:iq + 2] + _rot2(q[iq + 2]) @ _planar_exp(v[iv:iv + 3])
            out[iq + 2] = q[iq + 2] + v[iv + 2]
        nq_, nv_ = SIZES[kind]
        taken_q[iq:iq + nq_] = True
        taken_v[iv:iv + nv_] = True
    out[~taken_q] = q[~taken_q] + v[~taken_v]
    return out


def _conj(a: np.ndarray) -> np.ndarray:
    return np.concatenate([-a[:3], [a[3]]])


def difference(q0: np.ndarray, q1: np.ndarray, lie_joints: Sequence[tuple[int, int, int]], nv: int) -> np.ndarray:
    """The velocity (nv,) that takes q0 to q1 in unit time: q0 ⊕ difference(q0, q1) = q1 (a planar joint's
    angle difference taken in (-pi, pi], as Pinocchio's)."""
    nq = q0.shape[0]
    out = np.empty(nv)
    taken_q = np.zeros(nq, dtype=bool)
    taken_v = np.zeros(nv, dtype=bool)
    for kind, iq, iv in lie_joints:
        if kind == FREE:
            a, b = q0[iq + 3:iq + 7], q1[iq + 3:iq + 7]
            a = a / np.linalg.norm(a)
            b = b / np.linalg.norm(b)
            p = quat_matrix(a).T @ (q1[iq:iq + 3] - q0[iq:iq + 3])
            lin, ang = log_se3(p, quat_mul(_conj(a), b))
            out[iv:iv + 3], out[iv + 3:iv + 6] = lin, ang
        elif kind == SPHERICAL:
            a, b = q0[iq:iq + 4], q1[iq:iq + 4]
            rel = quat_mul(_conj(a / np.linalg.norm(a)), b / np.linalg.norm(b))
            out[iv:iv + 3] = log_se3(np.zeros(3), rel)[1]
        else:
            t = float(np.arctan2(np.sin(q1[iq + 2] - q0[iq + 2]), np.cos(q1[iq + 2] - q0[iq + 2])))
            p = _rot2(q0[iq + 2]).T @ (q1[iq:iq + 2] - q0[iq:iq + 2])
            out[iv:iv + 3] = _planar_log(p, t)
        nq_, nv_ = SIZES[kind]
        taken_q[iq:iq + nq_] = True
        taken_v[iv:iv + nv_] = True
    out[~taken_v] = q1[~taken_q] - q0[~taken_q]
    return out


def check_quaternions(q: np.ndarray, lie_joints: Sequence[tuple[int, int, int]], names: Sequence[str],
                      what: str) -> None:
    """ValueError naming the coordinates when a quaternion in q (..., nq) has no direction."""
    q2 = np.asarray(q, dtype=float).reshape(-1, len(names))
    for kind, iq, _ in lie_joints:
        if kind == PLANAR:
            continue
        j = iq + 3 if kind == FREE else iq
        norms = np.linalg.norm(q2[:, j:j + 4], axis=1)
        bad = np.flatnonzero(~(norms > 1e-12))
        if bad.size:
            row = f" (row {int(bad[0])})" if q2.shape[0] > 1 else ""
            raise ValueError(f"{what}{row}: the quaternion [{', '.join(names[j:j + 4])}] of a {KINDS[kind]} joint "
                             f"has norm {norms[bad[0]]:g}; a rotation needs a nonzero quaternion (unit: [0, 0, 0, 1] "
                             f"is no rotation)")


__all__ = ["integrate", "difference", "exp_se3", "log_se3", "quat_mul", "quat_matrix", "check_quaternions",
           "FREE", "SPHERICAL", "PLANAR"]
