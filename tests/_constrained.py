"""An independent Python reference of constrained dynamics, for tests.

Everything here is NumPy on numbers: M, bias, B from :class:`rodgen.symbolic.numeric.NumericModel`
(``sympy.lambdify`` of the symbolic equations, no code stage) and the constraint rows of
``Equations.constraints`` lambdified the same way. Conventions (docs/ARCHITECTURE.md, "Constraints"):

    M qdd + bias = B u + Jᵀ λ           (λ: the forces of the active rows)
    J qdd + J̇q̇ = 0                     (active rows held)

Plastic impact with the rows ``J`` becoming active (the others released):

    M (qd⁺ - qd⁻) = Jᵀ Λ,   J qd⁺ = 0.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from rodgen.symbolic.equations import Equations
from rodgen.symbolic.numeric import NumericModel


@dataclass(frozen=True)
class Block:
    """One constraint block, as the C table ``rodgen_constraint`` describes it."""

    name: str
    kind: str
    row: int
    nrows: int


class ConstrainedNumeric(NumericModel):
    """A NumericModel with the constraint functions of the compiled model's table:
    ``constraint_position(q, p)``, ``constraint_jacobian(q, p)``, ``constraint_bias(q, qd, p)``,
    ``constraint_friction(p)`` (all rows, all blocks) and ``constraints`` (the block table)."""

    def __init__(self, eqs: Equations) -> None:
        super().__init__(eqs)
        e = self.equations
        q, qd, p = list(e.q), list(e.qd), list(e.params)
        blocks, row = [], 0
        for c in e.constraints:
            blocks.append(Block(c.name, c.kind, row, c.nrows))
            row += c.nrows
        self.constraints = blocks
        self.nrows = row
        pos = [x for c in e.constraints for x in c.position]
        jac = [x for c in e.constraints for x in c.jacobian]
        bias = [x for c in e.constraints for x in c.bias]
        fric = [c.friction if c.friction is not None else sp.Integer(0) for c in e.constraints]

        def lam(args, exprs):  # type: ignore[no-untyped-def]
            return sp.lambdify(args, exprs, modules="numpy", dummify=True, cse=True)
        self._c = lam((q, p), pos)
        self._J = lam((q, p), jac)
        self._Jb = lam((q, qd, p), bias)
        self._mu = lam((p,), fric)

    def constraint_position(self, q, p=None) -> np.ndarray:
        return np.array(self._c(np.asarray(q, float), self.params(p)), dtype=float)

    def constraint_jacobian(self, q, p=None) -> np.ndarray:
        return np.array(self._J(np.asarray(q, float), self.params(p)), dtype=float).reshape(self.nrows, self.nq)

    def constraint_bias(self, q, qd, p=None) -> np.ndarray:
        return np.array(self._Jb(np.asarray(q, float), np.asarray(qd, float), self.params(p)), dtype=float)

    def constraint_friction(self, p=None) -> np.ndarray:
        return np.array(self._mu(self.params(p)), dtype=float)

    def rows(self, active: Sequence[str]) -> list[int]:
        """Row indices of the named blocks, in the order given."""
        by = {b.name: b for b in self.constraints}
        return [r for nm in active for r in range(by[nm].row, by[nm].row + by[nm].nrows)]


def kkt_solve(M: np.ndarray, h: np.ndarray, Bu: np.ndarray, J: np.ndarray, Jdqd: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """qdd and λ of M qdd + h = Bu + Jᵀ λ, J qdd + Jdqd = 0 (one KKT solve)."""
    n, k = M.shape[0], J.shape[0]
    K = np.zeros((n + k, n + k))
    K[:n, :n] = M
    K[:n, n:] = -J.T
    K[n:, :n] = J
    sol = np.linalg.solve(K, np.concatenate([Bu - h, -Jdqd]))
    return sol[:n], sol[n:]


def constrained_dynamics(sys: ConstrainedNumeric, q, qd, u=None, active: Sequence[str] = (), p=None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """qdd and λ (forces of the active rows, in block order) of the constrained equations."""
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    M = sys.mass_matrix(q, p)
    h = sys.bias(q, qd, p)
    Bu = sys.input_map(q, p) @ np.asarray(u, float) if (u is not None and sys.nu) else np.zeros(sys.nq)
    rows = sys.rows(active)
    J = sys.constraint_jacobian(q, p)[rows]
    Jdqd = sys.constraint_bias(q, qd, p)[rows]
    return kkt_solve(M, h, Bu, J, Jdqd)


def impact(sys: ConstrainedNumeric, q, qd_minus, active: Sequence[str], p=None) -> tuple[np.ndarray, np.ndarray]:
    """Plastic impact: post-impact qd and the impulses Λ of the rows of ``active`` (all others released)."""
    q, qd_minus = np.asarray(q, float), np.asarray(qd_minus, float)
    M = sys.mass_matrix(q, p)
    J = sys.constraint_jacobian(q, p)[sys.rows(active)]
    n, k = M.shape[0], J.shape[0]
    K = np.zeros((n + k, n + k))
    K[:n, :n] = M
    K[:n, n:] = -J.T
    K[n:, :n] = J
    sol = np.linalg.solve(K, np.concatenate([M @ qd_minus, np.zeros(k)]))
    return sol[:n], sol[n:]


def rk4(f, y0: np.ndarray, t_end: float, dt: float) -> np.ndarray:
    """Fixed-step classical Runge-Kutta, every state returned (steps + 1, len(y0))."""
    steps = round(t_end / dt)
    ys = np.empty((steps + 1, len(y0)))
    y = np.asarray(y0, float)
    ys[0] = y
    for i in range(steps):
        k1 = f(y)
        k2 = f(y + dt / 2 * k1)
        k3 = f(y + dt / 2 * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys[i + 1] = y
    return ys
