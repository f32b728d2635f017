"""Lagrange's equations of the second kind: the slow, independent reference.

Positions are turned into Cartesian components, velocities are obtained by
differentiating them, and the equations follow from differentiating the
kinetic energy T and potential energy V:

    M_ij = d2T/dqd_i dqd_j
    h_i  = sum_j d2T/dqd_i dq_j qd_j - dT/dq_i
    G_i  = dV_gravity/dq_i

No result of the matrix method is used.
"""
from __future__ import annotations

import sympy as sp

from ..model.core import Model
from .common import rate_of, spring_energy
from .kinematics import build_kinematics
from .matrix import _assemble


def derive_lagrange(model: Model) -> Equations:  # noqa: F821 - forward ref for readability
    k = build_kinematics(model)
    n = len(k.q)
    T: sp.Expr = sp.Integer(0)
    Vg: sp.Expr = sp.Integer(0)
    gx, gy = k.gravity
    for el in k.elements:
        r = el.position.cartesian()
        v = [rate_of(r[0], k), rate_of(r[1], k)]
        T += el.mass * (v[0] ** 2 + v[1] ** 2) / 2
        Vg += -el.mass * (gx * r[0] + gy * r[1])
        if el.inertia != 0:
            T += el.inertia * rate_of(el.theta, k) ** 2 / 2
    dT_dqd = [sp.diff(T, s) for s in k.qd]
    M = sp.zeros(n, n)
    h = sp.zeros(n, 1)
    G = sp.zeros(n, 1)
    for i in range(n):
        for j in range(i, n):
            M[i, j] = sp.diff(dT_dqd[i], k.qd[j])
            M[j, i] = M[i, j]
        h[i] = sp.Add(*[sp.diff(dT_dqd[i], qj) * qdj for qj, qdj in zip(k.q, k.qd)]) - sp.diff(T, k.q[i])
        G[i] = sp.diff(Vg, k.q[i])
    eqs = _assemble(k, "lagrange", M, h, G, T, Vg + spring_energy(k))
    # springs, dampers and inputs from their potential, Rayleigh function and virtual work
    Vs = spring_energy(k)
    R = sp.Add(*[c * rate_of(var, k) ** 2 / 2 for c, var in k.dampers])
    W = sp.Add(*[usym * var for usym, var in k.generalized])
    eqs.K = sp.Matrix([sp.diff(Vs, s) for s in k.q])
    eqs.D = sp.Matrix([sp.diff(R, s) for s in k.qd])
    eqs.B = sp.Matrix(n, len(k.u), lambda i, j: sp.diff(W, k.q[i], k.u[j]))
    return eqs


from .equations import Equations  # noqa: E402
