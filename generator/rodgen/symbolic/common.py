"""Pieces shared by the matrix and recursive methods: generalized forces of inputs, springs, dampers; energies."""
from __future__ import annotations

import sympy as sp

from .kinematics import Kinematics


def input_map(k: Kinematics) -> sp.Matrix:
    """B: column j is d(coordinate input j works on)/dq (virtual work of joint torques and axial forces)."""
    B = sp.zeros(len(k.q), len(k.u))
    col = {s: j for j, s in enumerate(k.u)}
    for usym, var in k.generalized:
        j = col[usym]
        free = sp.sympify(var).free_symbols
        for i, qi in enumerate(k.q):
            if qi in free:
                B[i, j] = sp.diff(var, qi)
    return B


def spring_forces(k: Kinematics) -> sp.Matrix:
    """K: generalized forces of the linear springs, on the left-hand side (K = dV_spring/dq)."""
    K = sp.zeros(len(k.q), 1)
    for stiff, var, rest in k.springs:
        free = sp.sympify(var).free_symbols
        for i, qi in enumerate(k.q):
            d = sp.diff(var, qi) if qi in free else 0
            if d != 0:
                K[i] += stiff * (var - rest) * d
    return K


def rate_of(expr: sp.Expr, k: Kinematics) -> sp.Expr:
    free = sp.sympify(expr).free_symbols
    return sp.Add(*[sp.diff(expr, qi) * qdi for qi, qdi in zip(k.q, k.qd) if qi in free])


def damper_forces(k: Kinematics) -> sp.Matrix:
    """D: generalized forces of the linear dampers, on the left-hand side (D = dR/dqd, R Rayleigh's function)."""
    D = sp.zeros(len(k.q), 1)
    for c, var in k.dampers:
        rate = rate_of(var, k)
        free = sp.sympify(var).free_symbols
        for i, qi in enumerate(k.q):
            d = sp.diff(var, qi) if qi in free else 0
            if d != 0:
                D[i] += c * rate * d
    return D


def spring_energy(k: Kinematics) -> sp.Expr:
    return sp.Add(*[stiff * (var - rest) ** 2 / 2 for stiff, var, rest in k.springs])
