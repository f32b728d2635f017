"""Numeric evaluation of symbolic Equations for tests (sympy.lambdify, independent of the code stage)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp


@dataclass
class NumericEquations:
    eqs: object
    M: Callable
    h: Callable
    G: Callable
    K: Callable
    D: Callable
    B: Callable
    T: Callable
    V: Callable
    p0: np.ndarray

    def bias(self, q, qd, p=None):
        p = self.p0 if p is None else p
        return (self.h(q, qd, p) + self.G(q, qd, p) + self.K(q, qd, p) + self.D(q, qd, p)).ravel()

    def mass(self, q, p=None):
        p = self.p0 if p is None else p
        return np.asarray(self.M(q, q * 0, p), dtype=float)

    def qdd(self, q, qd, u, p=None):
        p = self.p0 if p is None else p
        rhs = self.B(q, qd, p) @ u - self.bias(q, qd, p)
        return np.linalg.solve(self.mass(q, p), rhs)

    def energy(self, q, qd, p=None):
        p = self.p0 if p is None else p
        return float(self.T(q, qd, p)), float(self.V(q, qd, p))


def numeric(eqs) -> NumericEquations:
    e = eqs.expanded()
    qs, qds, ps = sp.Matrix(e.q), sp.Matrix(e.qd), sp.Matrix(e.params) if e.params else sp.Matrix([sp.Dummy()])
    args = [list(qs), list(qds), list(ps)]

    def lam(expr):
        f = sp.lambdify(args, expr, modules="numpy", cse=True)
        shape = expr.shape if hasattr(expr, "shape") else None

        def call(q, qd, p):
            out = f(list(q), list(qd), list(p))
            return np.asarray(out, dtype=float).reshape(shape) if shape else float(out)
        return call

    p0 = np.array([e.param_values[s] for s in e.params]) if e.params else np.zeros(1)
    return NumericEquations(eqs, lam(e.M), lam(e.h), lam(e.G), lam(e.K), lam(e.D), lam(e.B), lam(e.T), lam(e.V),
                            p0)


def random_state(eqs, rng: np.random.Generator):
    """A random state near the model's initial state (lengths kept positive)."""
    n = len(eqs.q)
    q = rng.uniform(-np.pi, np.pi, n)
    for i, c in enumerate(eqs.coordinates):
        if c.kind == "length":
            q[i] = rng.uniform(0.3, 1.5)
    qd = rng.normal(size=n)
    return q, qd


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0), 1e-300)
    return float(np.abs(a - b).max(initial=0.0) / scale)


def central_jacobian(fun: Callable, x: np.ndarray, eps: float = 1e-6, relative: bool = True) -> np.ndarray:
    """Central differences of the vector function ``fun`` at ``x``, a column per entry of x; the step of
    entry i is eps * max(1, |x_i|) (``relative``) or eps."""
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps * max(1.0, abs(x[i])) if relative else eps
        cols.append((fun(x + e) - fun(x - e)) / (2 * e[i]))
    return np.array(cols).T


def check_nlp_jacobian(nlp: object, x: np.ndarray, outside_atol: float = 0.0) -> np.ndarray:
    """An NLP's sparse constraint Jacobian at x against central differences of its constraints (to 1e-6 of the
    largest entry), and nothing outside its sparsity pattern (differences there at most ``outside_atol``).
    Returns the differences."""
    J = nlp.jacobian(x).toarray()  # type: ignore[attr-defined]
    Jn = central_jacobian(nlp.constraints, x)  # type: ignore[attr-defined]
    assert np.abs(J - Jn).max() <= 1e-6 * max(1.0, np.abs(Jn).max())
    rows, cols = nlp.jacobian_structure()  # type: ignore[attr-defined]
    outside = np.ones_like(J, dtype=bool)
    outside[rows, cols] = False
    assert np.all(np.abs(Jn[outside]) <= outside_atol)
    return Jn
