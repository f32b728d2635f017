"""The matrix method (Borisov's closed-form matrices; Kuzmin's point-mass algorithm).

    M = sum_k m_k J_k^T J_k + sum_rods I_k w_k w_k^T
    h = sum_k m_k J_k^T (Jdot_k qd)
    G = -sum_k m_k J_k^T g

where J_k is the Jacobian of mass element k's position and w_k the gradient
of its absolute angle. Positions are in direction form, so every entry comes
out as sums of ``C_ij = cos(theta_i - theta_j)`` and ``S_ij`` terms, as in the
thesis. No energy is differentiated and nothing is expanded or simplified.
"""
from __future__ import annotations

import sympy as sp

from ..model.valid import ValidModel
from .common import damper_forces, input_map, spring_energy, spring_forces
from .equations import Equations
from .kinematics import DVec, Kinematics, build_kinematics


def derive_matrix(model: ValidModel) -> Equations:
    k = build_kinematics(model)
    n = len(k.q)
    # collect the terms of every entry, add once at the end (repeated += re-flattens sums)
    Mt: list[list[list[sp.Expr]]] = [[[] for _ in range(n)] for _ in range(n)]
    ht: list[list[sp.Expr]] = [[] for _ in range(n)]
    Gt: list[list[sp.Expr]] = [[] for _ in range(n)]
    V_terms: list[sp.Expr] = []
    gvec = DVec(k.gravity)
    for el in k.elements:
        vel = el.position.time_derivative(k.q, k.qd).pruned()
        J = [vel.diff(s).pruned() for s in k.qd]
        avel = vel.time_derivative(k.q, k.qd).pruned()  # velocity part of the acceleration (qdd = 0)
        nz = [i for i in range(n) if _nonzero(J[i])]
        for a in nz:
            for b in nz:
                if b < a:
                    continue
                val = J[a].dot(J[b])
                if val != 0:
                    Mt[a][b].append(el.mass * val)
            ht[a].append(el.mass * J[a].dot(avel))
            Gt[a].append(-el.mass * J[a].dot(gvec))
        V_terms.append(-el.mass * el.position.dot(gvec))
        if el.inertia != 0:
            w = [sp.diff(el.theta, s) for s in k.q]
            for a in range(n):
                for b in range(a, n):
                    if w[a] != 0 and w[b] != 0:
                        Mt[a][b].append(el.inertia * w[a] * w[b])
    M = sp.zeros(n, n)
    for a in range(n):
        for b in range(a, n):
            M[a, b] = M[b, a] = sp.Add(*Mt[a][b])
    h = sp.Matrix([sp.Add(*t) for t in ht])
    G = sp.Matrix([sp.Add(*t) for t in Gt])
    # T = qd' M qd / 2 (M is by construction the Hessian of T in qd)
    T_terms = [M[a, a] * k.qd[a] ** 2 / 2 for a in range(n) if M[a, a] != 0]
    T_terms += [M[a, b] * k.qd[a] * k.qd[b] for a in range(n) for b in range(a + 1, n) if M[a, b] != 0]
    return _assemble(k, "matrix", M, h, G, sp.Add(*T_terms), sp.Add(*V_terms) + spring_energy(k))


def _nonzero(v: DVec) -> bool:
    return any(c != 0 for c in v.c) or any(a != 0 or b != 0 for a, b in v.terms.values())


def _assemble(k: Kinematics, method: str, M: sp.Matrix, h: sp.Matrix, G: sp.Matrix, T: sp.Expr,
              V: sp.Expr) -> Equations:
    return Equations(model=k.model, method=method, q=k.q, qd=k.qd, qdd=k.qdd, u=k.u, params=k.params,
                     param_values=k.param_values, M=M, h=h, G=G, K=spring_forces(k), D=damper_forces(k),
                     B=input_map(k), T=T, V=V, points={nm: v.cartesian() for nm, v in k.points.items()},
                     coordinates=k.model.coordinates(), inputs=k.model.inputs())
