"""Numerical evaluation of :class:`Equations` through ``sympy.lambdify``.

:func:`lambdify_equations` returns a :class:`NumericModel` with the same
batched interface as a compiled model (``mass_matrix``, ``bias``,
``forward_dynamics``, ``inverse_dynamics``, ``rhs``, ``ode``, ``energy``,
``points``), evaluated by NumPy. It needs no C compiler and serves as the
independent reference the compiled code is checked against, and as the
evaluator for small models in scripts and tests. It is much slower than the
compiled model; use :func:`rodgen.build` for long simulations.

Shapes: a single state is ``q: (nq,)``; a batch is ``q: (N, nq)`` and
every result gets the same leading ``N``. ``y = [q0..q{nq-1}, qd0..qd{nq-1}]``.
``p`` is ``None`` (the model's default parameter values), a sequence in the
order of ``parameters``, or a mapping name -> value overriding defaults.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence, Union

import numpy as np
import sympy as sp

from ..errors import DerivationError
from .equations import Equations

ParamsLike = Union[None, Sequence[float], np.ndarray, Mapping[str, float]]


class NumericModel:
    """Batched numerical evaluation of equations of motion (see module docstring)."""

    def __init__(self, eqs: Equations) -> None:
        if eqs.configuration_rate is not None:
            raise DerivationError(f"model {eqs.model.name!r} has a free, spherical or planar joint: the NumPy "
                                  f"evaluator takes models whose velocities are their coordinates' rates; use "
                                  f"rodgen.build(model) for it")
        eqs = eqs.expanded()
        self.equations = eqs
        self.name = eqs.model.name
        self.nq = len(eqs.q)
        self.nu = len(eqs.u)
        self.coordinates = [str(s) for s in eqs.q]
        self.inputs = [str(s) for s in eqs.u]
        self.parameters = {str(s): float(eqs.param_values[s]) for s in eqs.params}
        self.dependent_coordinates = [str(s) for s in eqs.couplings]
        q, qd, p = list(eqs.q), list(eqs.qd), list(eqs.params)

        def lam(args: Sequence[Any], exprs: Sequence[sp.Expr]) -> Callable[..., Any]:
            return sp.lambdify(args, list(exprs), modules="numpy", dummify=True, cse=True)

        self._M = lam((q, p), list(eqs.M))
        # the force elements may depend on the time t (a scalar or (N,) array, the last argument)
        self._bias = lam((q, qd, p, eqs.t), list(eqs.bias))
        self._B = lam((q, p), list(eqs.B)) if self.nu else None
        self._TV = lam((q, qd, p), [eqs.T, eqs.V])
        self._point_names = list(eqs.points)
        self._points = lam((q, p), [c for nm in self._point_names for c in eqs.points[nm]])
        self._full = lam((q, p), list(eqs.couplings.values())) if eqs.couplings else None
        self.force_names = [f.name for f in eqs.forces]
        u = list(eqs.u)
        self._forces = (lam((q, qd, u, p, eqs.t), [c for f in eqs.forces for c in f.force]) if eqs.forces
                        else None)
        full_order = [c.name for c in eqs.model.coordinates()]
        self.full_coordinate_names = full_order if eqs.couplings else list(self.coordinates)

    # -- helpers -------------------------------------------------------------
    def params(self, p: ParamsLike = None) -> np.ndarray:
        """The parameter vector: defaults, a full vector, or defaults overridden by a mapping."""
        base = np.array(list(self.parameters.values()), dtype=float)
        if p is None:
            return base
        if isinstance(p, Mapping):
            unknown = [k for k in p if k not in self.parameters]
            if unknown:
                raise ValueError(f"unknown parameter {unknown[0]!r}; the model {self.name!r} has "
                                 f"{', '.join(self.parameters) or 'no parameters'}")
            names = list(self.parameters)
            for k, v in p.items():
                base[names.index(k)] = float(v)
            return base
        arr = np.asarray(p, dtype=float)
        if arr.shape != base.shape:
            raise ValueError(f"Input 'p' has length {arr.size}; the model {self.name!r} expects "
                             f"{base.size} parameters ({', '.join(self.parameters)})")
        return arr

    def _vec(self, x: Any, n: int, what: str) -> tuple[np.ndarray, bool]:
        a = np.asarray(x, dtype=float)
        single = a.ndim == 1
        a2 = np.atleast_2d(a)
        if a2.ndim != 2 or a2.shape[1] != n:
            raise ValueError(f"Input {what!r} has shape {a.shape}; expected ({n},) or (N, {n})")
        return a2, single

    @staticmethod
    def _stack(vals: Sequence[Any], N: int, shape: tuple[int, ...]) -> np.ndarray:
        out = np.empty((N, len(vals)))
        for k, v in enumerate(vals):
            out[:, k] = np.broadcast_to(np.asarray(v, dtype=float), (N,))
        return out.reshape((N,) + shape)

    # -- the compiled-model interface ----------------------------------------
    def mass_matrix(self, q: Any, p: ParamsLike = None) -> np.ndarray:
        """M(q): (nq, nq), or (N, nq, nq) for q: (N, nq)."""
        Q, single = self._vec(q, self.nq, "q")
        out = self._stack(self._M(Q.T, self.params(p)), len(Q), (self.nq, self.nq))
        return out[0] if single else out

    def bias(self, q: Any, qd: Any, p: ParamsLike = None, t: Any = 0.0) -> np.ndarray:
        """h + G + K + D - F at time t, as in M qdd + bias = B u: (nq,) or (N, nq)."""
        Q, single = self._vec(q, self.nq, "q")
        QD, _ = self._vec(qd, self.nq, "qd")
        out = self._stack(self._bias(Q.T, QD.T, self.params(p), np.asarray(t, dtype=float)), len(Q), (self.nq,))
        return out[0] if single else out

    def input_map(self, q: Any, p: ParamsLike = None) -> np.ndarray:
        """B(q): (nq, nu) or (N, nq, nu)."""
        Q, single = self._vec(q, self.nq, "q")
        if self._B is None:
            out = np.zeros((len(Q), self.nq, 0))
        else:
            out = self._stack(self._B(Q.T, self.params(p)), len(Q), (self.nq, self.nu))
        return out[0] if single else out

    def forward_dynamics(self, q: Any, qd: Any, u: Any = None, p: ParamsLike = None, t: Any = 0.0) -> np.ndarray:
        """qdd = M^-1 (B u - bias) at time t: (nq,) or (N, nq). ``u=None`` means no input."""
        Q, single = self._vec(q, self.nq, "q")
        rhs = -self.bias(Q, qd, p, t)
        if u is not None and self.nu:
            U, _ = self._vec(u, self.nu, "u")
            rhs = rhs + np.einsum("nij,nj->ni", self.input_map(Q, p), np.broadcast_to(U, (len(Q), self.nu)))
        out = np.linalg.solve(self.mass_matrix(Q, p), rhs[..., None])[..., 0]
        return out[0] if single else out

    def inverse_dynamics(self, q: Any, qd: Any, qdd: Any, p: ParamsLike = None, t: Any = 0.0) -> np.ndarray:
        """Generalized forces Q = M qdd + bias (at time t) that produce qdd: (nq,) or (N, nq)."""
        Q, single = self._vec(q, self.nq, "q")
        A, _ = self._vec(qdd, self.nq, "qdd")
        out = (np.einsum("nij,nj->ni", self.mass_matrix(Q, p), np.broadcast_to(A, Q.shape))
               + self.bias(Q, qd, p, t))
        return out[0] if single else out

    def rhs(self, t: float, y: Any, u: Any = None, p: ParamsLike = None) -> np.ndarray:
        """dy/dt for y = [q, qd]: (2 nq,) or (N, 2 nq)."""
        Y = np.asarray(y, dtype=float)
        n = self.nq
        qdd = self.forward_dynamics(Y[..., :n], Y[..., n:], u, p, t)
        return np.concatenate([Y[..., n:], qdd], axis=-1)

    def ode(self, u: Any = None, p: ParamsLike = None) -> Callable[[float, np.ndarray], np.ndarray]:
        """f(t, y) for scipy.integrate.solve_ivp; ``u`` is None, an array, or a callable u(t, y)."""
        pv = self.params(p)

        def f(t: float, y: np.ndarray) -> np.ndarray:
            uu = u(t, y) if callable(u) else u
            return self.rhs(t, y, uu, pv)
        return f

    def energy(self, q: Any, qd: Any, p: ParamsLike = None) -> tuple[np.ndarray, np.ndarray]:
        """(kinetic, potential): floats, or (N,) arrays for a batch."""
        Q, single = self._vec(q, self.nq, "q")
        QD, _ = self._vec(qd, self.nq, "qd")
        out = self._stack(self._TV(Q.T, QD.T, self.params(p)), len(Q), (2,))
        if single:
            return float(out[0, 0]), float(out[0, 1])  # type: ignore[return-value]
        return out[:, 0], out[:, 1]

    def points(self, q: Any, p: ParamsLike = None) -> dict[str, np.ndarray]:
        """Marker positions: name -> (2,) or (N, 2)."""
        Q, single = self._vec(q, self.nq, "q")
        flat = self._stack(self._points(Q.T, self.params(p)), len(Q), (len(self._point_names), 2))
        return {nm: (flat[0, k] if single else flat[:, k]) for k, nm in enumerate(self._point_names)}

    def contact_forces(self, q: Any, qd: Any, u: Any = None, p: ParamsLike = None,
                       t: Any = 0.0) -> dict[str, np.ndarray]:
        """Force of each force element on its point at time t, ground frame: name -> (2,) or (N, 2)."""
        Q, single = self._vec(q, self.nq, "q")
        QD, _ = self._vec(qd, self.nq, "qd")
        U = np.zeros((len(Q), self.nu)) if u is None else np.broadcast_to(self._vec(u, self.nu, "u")[0],
                                                                             (len(Q), self.nu))
        if self._forces is None:
            return {}
        with np.errstate(invalid="ignore"):   # a contact's unused branch may take a root of a negative depth
            flat = self._stack(self._forces(Q.T, QD.T, U.T, self.params(p), np.asarray(t, dtype=float)), len(Q),
                               (len(self.force_names), 2))
        return {nm: (flat[0, k] if single else flat[:, k]) for k, nm in enumerate(self.force_names)}

    def full_coordinates(self, q: Any, p: ParamsLike = None) -> np.ndarray:
        """All coordinates of the model (dependent ones recovered from the couplings), in model order."""
        Q, single = self._vec(q, self.nq, "q")
        if self._full is None:
            return Q[0] if single else Q
        dep = self._stack(self._full(Q.T, self.params(p)), len(Q), (len(self.dependent_coordinates),))
        cols = {nm: Q[:, k] for k, nm in enumerate(self.coordinates)}
        cols.update({nm: dep[:, k] for k, nm in enumerate(self.dependent_coordinates)})
        out = np.stack([cols[nm] for nm in self.full_coordinate_names], axis=-1)
        return out[0] if single else out


class ChainModel:
    """Single-state evaluation of equations through their own straight-line assignments.

    Unlike :class:`NumericModel` it never expands the assignments of the
    recursive method (the functions that ``sympy.lambdify`` writes evaluate
    them one by one), so it stays cheap for models of many coordinates, and
    it gives the exact stiffness ``d(bias - B u)/dq`` from the forward-mode
    derivative of the chain (:meth:`Equations.inverse_dynamics_jacobian`).
    Used by :func:`rodgen.modes` for a model that has not been compiled.
    Single states only: ``q: (nq,)``; force elements that depend on the time are taken at ``t = 0``.
    """

    def __init__(self, eqs: Equations) -> None:
        self.equations = eqs
        self.name = eqs.model.name
        self.nq, self.nu = len(eqs.q), len(eqs.u)
        self.nv = len(eqs.qd)      # velocities: nq except with free or spherical joints
        self.coordinates = [str(s) for s in eqs.q]
        self.inputs = [str(s) for s in eqs.u]
        self.parameters = {str(s): float(eqs.param_values[s]) for s in eqs.params}
        self.point_names = list(eqs.points)
        self._args = (list(eqs.q), list(eqs.qd), list(eqs.params))
        q, qd, p = self._args
        self._M = self._lam((q, p), list(eqs.M), eqs.assignments)
        at0 = {eqs.t: sp.S.Zero}   # single states at rest for modes: the force elements at t = 0
        self._bias = self._lam((q, qd, p), list(eqs.bias.xreplace(at0)), eqs.assignments)
        self._B = self._lam((q, p), list(eqs.B), eqs.assignments) if self.nu else None
        self._points = self._lam((q, p), [c for nm in self.point_names for c in eqs.points[nm]], eqs.assignments)
        self._K: Callable[..., Any] | None = None
        initial = {c.name: c.initial.evaluate(self.parameters) for c in eqs.model.coordinates()}
        #: the model's initial coordinates (independent ones, in the order of q)
        self.initial_q = np.array([initial.get(nm, 0.0) for nm in self.coordinates])

    @staticmethod
    def _lam(args: Sequence[Any], exprs: list[sp.Expr],
             assignments: Sequence[tuple[sp.Symbol, sp.Expr]]) -> Callable[..., Any]:
        # every symbol gets a plain identifier (rates are named like ``q'``, which Python cannot take)
        names: dict[sp.Symbol, sp.Symbol] = {}

        def safe(sym: sp.Symbol) -> sp.Symbol:
            if sym not in names:
                names[sym] = sp.Symbol(f"_v{len(names)}")
            return names[sym]

        flat_args = [[safe(a) for a in group] for group in args]
        outs = [sp.sympify(e) for e in exprs]
        index = {sym: i for i, (sym, _) in enumerate(assignments)}
        need = {f for e in outs for f in e.free_symbols if f in index}
        for i in range(len(assignments) - 1, -1, -1):  # keep only the assignments the outputs need
            sym, ex = assignments[i]
            if sym in need:
                need.update(f for f in ex.free_symbols if f in index)
        asg = [(safe(sym), ex.xreplace({f: safe(f) for f in ex.free_symbols}))
               for sym, ex in assignments if sym in need]
        outs = [e.xreplace({f: safe(f) for f in e.free_symbols}) for e in outs]
        return sp.lambdify(flat_args, outs, modules="numpy",
                           cse=lambda exs: (asg, list(exs)))  # the chain as it is: no expansion

    def params(self, p: ParamsLike = None) -> np.ndarray:
        return NumericModel.params(self, p)  # type: ignore[arg-type]

    def _q(self, q: Any, what: str = "q") -> np.ndarray:
        a = np.asarray(q, dtype=float)
        if a.shape != (self.nq,):
            raise ValueError(f"Input {what!r} has shape {a.shape}; expected ({self.nq},) "
                             f"({', '.join(self.coordinates)})")
        return a

    def _v(self, qd: Any) -> np.ndarray:
        a = np.asarray(qd, dtype=float)
        if a.shape != (self.nv,):
            raise ValueError(f"Input 'qd' has shape {a.shape}; expected ({self.nv},)")
        return a

    def mass_matrix(self, q: Any, p: ParamsLike = None) -> np.ndarray:
        return np.array(self._M(self._q(q), self.params(p)), dtype=float).reshape(self.nv, self.nv)

    def bias(self, q: Any, qd: Any, p: ParamsLike = None) -> np.ndarray:
        return np.array(self._bias(self._q(q), self._v(qd), self.params(p)), dtype=float)

    def input_map(self, q: Any, p: ParamsLike = None) -> np.ndarray:
        if self._B is None:
            return np.zeros((self.nv, 0))
        return np.array(self._B(self._q(q), self.params(p)), dtype=float).reshape(self.nv, self.nu)

    def points(self, q: Any, p: ParamsLike = None) -> dict[str, np.ndarray]:
        flat = np.array(self._points(self._q(q), self.params(p)), dtype=float).reshape(-1, 2)
        return {nm: flat[k] for k, nm in enumerate(self.point_names)}

    def stiffness(self, q: Any, u: Any = None, p: ParamsLike = None) -> np.ndarray:
        """Exact ``d(bias - B u)/dq`` at ``qd = 0`` (the stiffness about a state at rest), (nq, nq)."""
        eqs = self.equations
        if eqs.configuration_rate is not None:
            raise DerivationError(f"model {self.name!r}: the stiffness d(bias - B u)/dq of a model with a free, "
                                  f"spherical or planar joint (its velocities are not its coordinates' rates) is not "
                                  f"available yet")
        if self._K is None:
            from .derivative import forward_derivatives
            n = self.nq
            rest = {v: sp.S.Zero for v in eqs.qd}  # at rest: the velocity terms and dampers drop out
            chain: list[tuple[sp.Symbol, sp.Expr]] = []
            for sym, ex in eqs.assignments:
                e = ex.xreplace(rest)
                if e.is_Number:  # fold constants forward so that they do not become variables
                    rest[sym] = e
                else:
                    chain.append((sym, e))
            bu = eqs.B * sp.Matrix(eqs.u) if eqs.u else sp.zeros(n, 1)
            force = [e.xreplace(rest).xreplace({eqs.t: sp.S.Zero}) for e in (eqs.bias - bu)]
            assignments, rows = forward_derivatives(chain, force, list(eqs.q))
            self._K = self._lam((list(eqs.q), list(eqs.u), list(eqs.params)),
                                [rows[i][j] for i in range(n) for j in range(n)], assignments)
        uu = np.zeros(self.nu) if u is None else np.asarray(u, dtype=float).reshape(self.nu)
        return np.array(self._K(self._q(q), uu, self.params(p)), dtype=float).reshape(self.nq, self.nq)


def lambdify_equations(eqs: Equations) -> NumericModel:
    """A :class:`NumericModel` evaluating ``eqs`` with NumPy."""
    return NumericModel(eqs)


__all__ = ["NumericModel", "ChainModel", "lambdify_equations"]
