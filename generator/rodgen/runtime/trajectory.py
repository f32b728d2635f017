"""Inverse dynamics along a prescribed motion, and mixed problems.

*Control by prescribed kinematics* (Borisov, ch. 4; Ruchkin's actuator-torque
problem): the coordinates q(t) are given, and the generalized forces

    Q(t) = M(q) qdd + h(q, qd) + G(q) + K(q) + D(qd)

and the inputs u(t) with B(q) u = Q (joint torques, longitudinal forces) are
computed. :func:`prescribed_forces` does this for a whole time grid in one
batched call of the model's ``inverse_dynamics``.

A *mixed problem* (Leontiev's RKM-1; SEEDS.md section 3.2) prescribes some
coordinates (for instance the suspension point of a chain, a floating base
moved along x(t), y(t)) and leaves the others free under known inputs.
:class:`MixedProblem` integrates the free coordinates with

    M_ff qdd_f = B_f u - bias_f - M_fp qdd_p

and reports the compensating forces ``Q_p = M_pf qdd_f + M_pp qdd_p + bias_p - B_p u``
that the prescribed coordinates need besides what the inputs give them.

Ways to give a motion (``q``, and optionally ``qd``, ``qdd``):

* sampled: a NumPy array (N, nq) at the times ``t`` (a 1-D array for one
  coordinate). Rates and accelerations come from a cubic spline through the
  samples (``scipy.interpolate.CubicSpline``), unless given.
* per coordinate: a list or tuple of nq items (or a mapping coordinate
  name -> item), each a number, a 1-D array of samples at ``t``, a SymPy
  expression of one time symbol, a callable ``f(t) -> array``, or a triple
  ``(f, df, ddf)`` of callables (value, rate, acceleration). SymPy
  expressions are differentiated exactly before the run, by the symbolic
  stage (:func:`rodgen.symbolic.trajectory.numeric_motion` turns them into
  such triples); this module does no symbolic work.
  Callables without given rates are differentiated by 4th-order central
  differences with step 2e-3 (error ~1e-10 relative for smooth motions with
  time scales ~1 s; give ``qd``/``qdd`` or a triple for exact rates).
* a single callable ``q(t) -> (N, nq)``.

``model`` is a compiled model (``rodgen.build``), a :class:`rodgen.Equations`,
a :class:`rodgen.symbolic.numeric.NumericModel`, or a :class:`rodgen.Model`
(derived with the matrix method and evaluated through lambdify).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..errors import ModelError
from .result import SimulationResult, Status

FD_STEP = 2e-3  # central-difference step for callables; see module docstring

MotionSpec = Any  # array | callable | sequence/mapping of (number | sympy.Expr | callable)


# -- evaluating models ------------------------------------------------------------------------

def as_evaluator(model: Any) -> Any:
    """A batched evaluator for ``model`` (see module docstring for what is accepted)."""
    from ..model.core import Model
    from ..model.valid import ValidModel
    from ..symbolic.equations import Equations
    from ..symbolic.numeric import NumericModel, lambdify_equations
    if isinstance(model, NumericModel):
        return model
    if isinstance(model, (Model, ValidModel)):
        from ..symbolic import derive
        return lambdify_equations(derive(model, method="matrix"))
    if isinstance(model, Equations):
        return lambdify_equations(model)
    for attr in ("nq", "coordinates", "mass_matrix", "bias", "inverse_dynamics", "forward_dynamics"):
        if not hasattr(model, attr):
            raise TypeError(f"expected a compiled model, Equations or Model; {type(model).__name__} has no "
                            f"attribute {attr!r}")
    return model


def _names(x: Any) -> list[str]:
    return [str(n) for n in x]


def input_matrix(ev: Any, q: np.ndarray, qd: np.ndarray, p: Any = None) -> np.ndarray:
    """B(q) for a batch: (N, nq, nu).

    Uses the model's ``input_map`` when it has one; otherwise recovers the
    columns from forward dynamics, B e_j = M (qdd(u = e_j) - qdd(u = 0)),
    which is exact up to rounding because the equations are linear in u.
    """
    if hasattr(ev, "input_map"):
        return np.asarray(ev.input_map(q, p), dtype=float).reshape(len(q), ev.nq, -1)
    nu = len(ev.inputs)
    N = len(q)
    M = np.asarray(ev.mass_matrix(q, p), dtype=float).reshape(N, ev.nq, ev.nq)
    zero = np.zeros((N, nu))
    base = np.asarray(ev.forward_dynamics(q, qd, zero, p), dtype=float).reshape(N, ev.nq)
    cols = []
    for j in range(nu):
        e = zero.copy()
        e[:, j] = 1.0
        cols.append(np.asarray(ev.forward_dynamics(q, qd, e, p), dtype=float).reshape(N, ev.nq) - base)
    return np.einsum("nij,njk->nik", M, np.stack(cols, axis=-1)) if nu else np.zeros((N, ev.nq, 0))


def _at(fn: Callable[..., Any], t: Any) -> dict[str, Any]:
    """``{"t": t}`` for an evaluator's function that takes the time (a compiled or NumericModel: force elements
    may depend on it), else nothing (an evaluator of an autonomous model without the argument)."""
    try:
        takes = "t" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes = False
    return {"t": np.ascontiguousarray(np.asarray(t, dtype=float))} if takes else {}


# -- motions -----------------------------------------------------------------------------------

class Motion:
    """q(t), qd(t), qdd(t) of some coordinates; call ``motion(t)`` with an array of times."""

    def __init__(self, q: MotionSpec, names: Sequence[str], *, t: Optional[np.ndarray] = None,
                 qd: MotionSpec = None, qdd: MotionSpec = None, bc_type: Any = "not-a-knot") -> None:
        self.names = list(names)
        self.k = len(self.names)
        q, qd, qdd = (_numeric(spec, what, self.names) for spec, what in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
        self._q = self._component(q, t, bc_type, "q")
        self._qd = None if qd is None else self._component(qd, t, bc_type, "qd")
        self._qdd = None if qdd is None else self._component(qdd, t, bc_type, "qdd")

    def _component(self, spec: MotionSpec, t: Optional[np.ndarray], bc_type: Any, what: str) -> Any:
        from scipy.interpolate import CubicSpline
        if isinstance(spec, Mapping):
            missing = [n for n in self.names if n not in spec]
            unknown = [n for n in spec if n not in self.names]
            if missing or unknown:
                raise ValueError(f"{what}: " + (f"no motion for {', '.join(missing)}" if missing else
                                                f"unknown coordinate {unknown[0]!r} (coordinates: "
                                                f"{', '.join(self.names)})"))
            spec = [spec[n] for n in self.names]
        if isinstance(spec, np.ndarray):
            if t is None:
                raise ValueError(f"{what}: sampled values need the sample times t")
            arr = np.asarray(spec, dtype=float).reshape(len(t), -1) if spec.size == len(t) * self.k else None
            if arr is None or arr.shape[1] != self.k:
                raise ValueError(f"{what}: samples have shape {np.shape(spec)}; expected ({len(t)}, {self.k}) "
                                 f"for {', '.join(self.names)}")
            return ("spline", CubicSpline(np.asarray(t, dtype=float), arr, axis=0, bc_type=bc_type))
        if callable(spec):
            return ("callable", spec)
        if isinstance(spec, (list, tuple)) and len(spec) == self.k:
            return ("items", [self._item(x, what, n, t, bc_type) for x, n in zip(spec, self.names)])
        raise ValueError(f"{what}: cannot read a motion of {self.k} coordinate(s) ({', '.join(self.names)}) from "
                         f"{type(spec).__name__}; give samples (N, {self.k}) with t, a callable, or one item per "
                         f"coordinate")

    @staticmethod
    def _item(x: Any, what: str, name: str, t: Optional[np.ndarray], bc_type: Any) -> tuple[str, Any]:
        from scipy.interpolate import CubicSpline
        if isinstance(x, (int, float, np.floating)) and not isinstance(x, bool):
            return ("const", float(x))
        if isinstance(x, np.ndarray):
            if t is None or x.shape != (len(t),):
                raise ValueError(f"{what} of {name!r}: samples have shape {x.shape}; expected "
                                 f"({'N' if t is None else len(t)},) at the sample times t")
            return ("spline", CubicSpline(np.asarray(t, dtype=float), x.astype(float), bc_type=bc_type))
        if isinstance(x, tuple) and len(x) == 3 and all(callable(f) for f in x):
            return ("exact", x)
        if callable(x):
            return ("callable", x)
        raise ValueError(f"{what} of {name!r}: expected a number, a SymPy expression of time, a callable or "
                         f"(value, rate, acceleration) callables, got {type(x).__name__}")

    def _eval(self, comp: Any, t: np.ndarray, order: int) -> np.ndarray:
        kind, obj = comp
        N = len(t)
        if kind == "spline":
            return obj(t, order)
        if kind == "callable":
            return _fd(lambda tt: np.asarray(obj(tt), dtype=float).reshape(len(tt), self.k), t, order)
        cols = []
        for ik, io in obj:
            if ik == "const":
                cols.append(np.full(N, io if order == 0 else 0.0))
            elif ik == "exact":
                cols.append(np.broadcast_to(np.asarray(io[order](t), dtype=float), (N,)))
            elif ik == "spline":
                cols.append(io(t, order))
            else:
                cols.append(_fd(_column(io), t, order)[:, 0])
        return np.stack(cols, axis=-1) if cols else np.zeros((N, 0))

    def __call__(self, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, qdd) at the times t: each (N, k)."""
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        q = self._eval(self._q, tt, 0)
        qd = self._eval(self._qd, tt, 0) if self._qd is not None else self._eval(self._q, tt, 1)
        if self._qdd is not None:
            qdd = self._eval(self._qdd, tt, 0)
        elif self._qd is not None:
            qdd = self._eval(self._qd, tt, 1)
        else:
            qdd = self._eval(self._q, tt, 2)
        return q, qd, qdd


def _column(f: Callable[[np.ndarray], Any]) -> Callable[[np.ndarray], np.ndarray]:
    """f(t) of one coordinate as an (N, 1) array (a constant result broadcast)."""
    def g(tt: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(f(tt), dtype=float), (len(tt),)).reshape(-1, 1)
    return g


def _is_symbolic(x: Any) -> bool:
    """A SymPy object, recognised without importing SymPy."""
    return type(x).__module__.partition(".")[0] == "sympy"


def _numeric(spec: MotionSpec, what: str, names: Sequence[str]) -> MotionSpec:
    """``spec`` with SymPy expressions of time replaced by exact numeric callables (by the symbolic stage)."""
    items = spec.values() if isinstance(spec, Mapping) else spec if isinstance(spec, (list, tuple)) else ()
    if not (_is_symbolic(spec) or any(_is_symbolic(x) for x in items)):
        return spec
    from ..symbolic.trajectory import numeric_motion
    return numeric_motion(spec, what, names)


def _fd(f: Callable[[np.ndarray], np.ndarray], t: np.ndarray, order: int) -> np.ndarray:
    """Value, first or second derivative of f by 4th-order central differences (step FD_STEP)."""
    if order == 0:
        return f(t)
    h = FD_STEP
    fm2, fm1, fp1, fp2 = f(t - 2 * h), f(t - h), f(t + h), f(t + 2 * h)
    if order == 1:
        return (fm2 - 8 * fm1 + 8 * fp1 - fp2) / (12 * h)
    return (-fm2 + 16 * fm1 - 30 * f(t) + 16 * fp1 - fp2) / (12 * h * h)


# -- inverse dynamics ------------------------------------------------------------------------

@dataclass
class PrescribedForces:
    """Forces along a prescribed motion.

    t : (N,); q, qd, qdd : (N, nq); forces : (N, nq) generalized forces Q;
    u : (N, nu) inputs solving B u = Q (least squares if B is not square);
    residual : (N, nq) = Q - B u, the part of Q the inputs cannot produce
    (zero for a fully actuated model; for an underactuated one it is the
    force a prescribed motion would need in addition, so nonzero means the
    motion is not feasible with these inputs); kinetic, potential : (N,).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    forces: np.ndarray
    u: np.ndarray
    residual: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    coordinates: list[str]
    inputs: list[str]
    model: str = ""

    def to_result(self) -> SimulationResult:
        """A :class:`SimulationResult` (for ``rodgen.plot``, ``rodgen.animate``, CSV)."""
        return SimulationResult(t=self.t, q=self.q, qd=self.qd, u=self.u, kinetic=self.kinetic,
                                potential=self.potential, coordinates=self.coordinates, inputs=self.inputs,
                                status=Status.SUCCESS, message="prescribed motion", model=self.model,
                                qdd=self.qdd, forces=self.forces)


def prescribed_forces(model: Any, t: Any, q: MotionSpec, qd: MotionSpec = None, qdd: MotionSpec = None, *,
                      p: Any = None, bc_type: Any = "not-a-knot") -> PrescribedForces:
    """Generalized forces and inputs needed to move ``model`` along q(t).

    Parameters
    ----------
    model : a compiled model, Equations, NumericModel or Model.
    t : (N,) times at which to evaluate (and, for sampled q, the sample times).
    q, qd, qdd : the motion (see the module docstring); ``qd``/``qdd`` are
        optional.
    p : parameters (None for the model's defaults).
    bc_type : spline end conditions for sampled motions (``"periodic"`` for a
        cycle whose first and last samples coincide).

    Returns
    -------
    PrescribedForces, with ``forces`` (N, nq) and ``u`` (N, nu).
    """
    ev = as_evaluator(model)
    tt = np.asarray(t, dtype=float).reshape(-1)
    coords = _names(ev.coordinates)
    motion = Motion(q, coords, t=tt, qd=qd, qdd=qdd, bc_type=bc_type)
    Q_, QD, QDD = motion(tt)
    forces = np.asarray(ev.inverse_dynamics(Q_, QD, QDD, p, **_at(ev.inverse_dynamics, tt)),
                        dtype=float).reshape(len(tt), ev.nq)
    forces = forces - _friction(ev, Q_, QD, p)
    B = input_matrix(ev, Q_, QD, p)
    u = np.einsum("nij,nj->ni", np.linalg.pinv(B), forces) if B.shape[-1] else np.zeros((len(tt), 0))
    residual = forces - np.einsum("nij,nj->ni", B, u)
    T, V = ev.energy(Q_, QD, p)
    return PrescribedForces(tt, Q_, QD, QDD, forces, u, residual, np.asarray(T, float), np.asarray(V, float),
                            coords, _names(ev.inputs), str(getattr(ev, "name", "")))


def _friction(ev: Any, q: np.ndarray, qd: np.ndarray, p: Any) -> np.ndarray:
    """The generalized kinetic friction forces of a compiled model's dry-friction blocks at (q, qd) (N, nq):
    ``-F_k sign(rate)`` on each moving coordinate with friction, 0 at rest (and 0 for models without)."""
    if not hasattr(ev, "friction_forces") or \
            not any(getattr(b, "kind", None) == "friction" for b in getattr(ev, "constraints", None) or []):
        return np.zeros(np.shape(q))
    return np.asarray(ev.friction_forces(q, qd, p), dtype=float).reshape(np.shape(q))


# -- mixed problems -----------------------------------------------------------------------------

class MixedProblem:
    """Some coordinates prescribed as functions of time, the others free (see module docstring).

    Parameters
    ----------
    model : a compiled model, Equations, NumericModel or Model.
    prescribed : mapping coordinate name -> motion item (number, SymPy
        expression of time, callable; see the module docstring).
    u : inputs acting on the free coordinates: None, an array (nu,), an
        :class:`~rodgen.InputTable` (time-varying samples, interpolated
        linearly and held constant outside, as in ``simulate``), a
        :class:`~rodgen.CController` (a controller written in C, called with
        the full state; compiled models, ``method="rk4"``), or a callable
        ``u(t, y_free) -> (nu,)`` (Python path).
    p : parameters.

    Notes
    -----
    Bad input (a prescribed name that is not a coordinate, every coordinate
    prescribed, samples of the wrong shape, a ``u`` or ``p`` of the wrong
    length, a free coordinate with dry friction) raises
    :class:`~rodgen.ModelError` naming the coordinate or the field.

    Dry friction (``friction:`` of a joint or a variable segment): on a
    prescribed coordinate the drive must overcome its kinetic friction, so
    the compensating force includes ``+F_k sign(rate)`` (0 at rest, where the
    friction holds whatever it must); a free coordinate with friction is
    refused (sticking is a phase of the hybrid simulation, not of the mixed
    problem's integrator).

    The free state is ``y = [q_free, qd_free]`` in model order.

    Given a compiled model (``rodgen.build``), :meth:`simulate` runs in C
    (``rodgen_mixed_simulate`` of the runtime: RK4 with the step ``dt``, the
    prescribed motion sampled from its functions at every time the integrator
    evaluates it) and :meth:`solve` evaluates the split dynamics in C
    (``rodgen_mixed_accelerations``); other models, a Python callable ``u``
    or an explicit scipy ``method`` take the Python path (``solve_ivp``).
    """

    def __init__(self, model: Any, prescribed: Mapping[str, Any], *, u: Any = None, p: Any = None) -> None:
        from ..model.suggest import did_you_mean
        from .compiled import CompiledModel
        self.ev = as_evaluator(model)
        self.coordinates = _names(self.ev.coordinates)
        name = str(getattr(self.ev, "name", "") or "")
        self._where = f"MixedProblem of {name!r}" if name else "MixedProblem"
        if not isinstance(prescribed, Mapping):
            raise ModelError(f"prescribed must be a mapping coordinate name -> motion, got "
                             f"{type(prescribed).__name__}", where=f"{self._where}.prescribed")
        for k in prescribed:
            if k not in self.coordinates:
                raise ModelError(f"prescribed: unknown coordinate {k!r}{did_you_mean(str(k), self.coordinates)} "
                                 f"(coordinates: {', '.join(self.coordinates)})",
                                 where=f"{self._where}.prescribed[{k!r}]")
        self.pres = [i for i, c in enumerate(self.coordinates) if c in prescribed]
        self.free = [i for i, c in enumerate(self.coordinates) if c not in prescribed]
        if not self.free:
            raise ModelError("every coordinate is prescribed; use prescribed_forces() instead",
                             where=f"{self._where}.prescribed")
        try:
            self.motion = Motion({c: prescribed[c] for c in prescribed}, [self.coordinates[i] for i in self.pres])
        except ModelError:
            raise
        except ValueError as exc:
            raise ModelError(str(exc), where=f"{self._where}.prescribed") from None
        self.nu = len(_names(self.ev.inputs))
        #: True for a compiled model: simulate() and solve() run in C.
        self.compiled = isinstance(self.ev, CompiledModel)
        self.p = p
        if self.compiled and p is not None and not isinstance(p, Mapping):
            pa = np.asarray(p, dtype=float).reshape(-1)
            if pa.shape != (self.ev.np,):
                raise ModelError(f"p has {pa.size} values; the model has {self.ev.np} parameters "
                                 f"({', '.join(self.ev.parameters)})", where=f"{self._where}.p")
        self.u = self._check_u(u)
        for b in getattr(self.ev, "constraints", None) or []:
            if getattr(b, "kind", None) == "friction":
                if self.compiled:
                    row = self.ev.constraint_jacobian(self.ev.initial_state()[:self.ev.nq])[b.row]
                    moved = [self.coordinates[i] for i in self.free if row[i] != 0.0]
                else:   # the block <coordinate>_friction of the symbolic equations
                    moved = [self.coordinates[i] for i in self.free if f"{self.coordinates[i]}_friction" == b.name]
                if moved:
                    raise ModelError(f"the free coordinate {moved[0]!r} has dry friction with stiction "
                                     f"(block {b.name!r}), which the mixed problem's integrator does not "
                                     f"model; prescribe it, or simulate the whole model (its hybrid "
                                     f"simulation runs stick and slip)", where=f"{self._where}.prescribed")

    def _check_u(self, u: Any) -> Any:
        """u as given, checked: None, an InputTable of nu inputs, a CController, a callable, or nu numbers."""
        from .ccontroller import CController
        from .control import InputTable
        where = f"{self._where}.u"
        names = ", ".join(_names(self.ev.inputs)) or "none"
        if u is None:
            return None
        if isinstance(u, InputTable):
            if u.u.shape[1] != self.nu:
                raise ModelError(f"the InputTable has {u.u.shape[1]} inputs per row; the model has {self.nu} "
                                 f"({names})", where=where)
            return u
        if isinstance(u, CController):
            if not self.compiled:
                raise ModelError("a CController runs in C and needs a compiled model (rodgen.build)", where=where)
            if self.nu == 0:
                raise ModelError("the model has no inputs; a controller has nothing to drive", where=where)
            return u
        if callable(u):
            return u
        a = np.asarray(u, dtype=float).reshape(-1)
        if a.shape != (self.nu,) or not np.all(np.isfinite(a)):
            raise ModelError(f"expected {self.nu} finite inputs ({names}), got {np.asarray(u).tolist()}",
                             where=where)
        return a

    def _python_u(self) -> bool:
        """u is a Python callable u(t, y_free) (not an InputTable or a CController)."""
        from .ccontroller import CController
        from .control import InputTable
        return callable(self.u) and not isinstance(self.u, (InputTable, CController))

    def _full(self, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        N = len(t)
        nf = len(self.free)
        qp, qdp, qddp = self.motion(t)
        q = np.empty((N, self.ev.nq))
        qd = np.empty((N, self.ev.nq))
        q[:, self.free], qd[:, self.free] = y[:, :nf], y[:, nf:]
        q[:, self.pres], qd[:, self.pres] = qp, qdp
        return q, qd, qddp

    def _inputs(self, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        from .ccontroller import CController
        from .control import InputTable
        if self.u is None:
            return np.zeros((len(t), self.nu))
        if isinstance(self.u, InputTable):
            return np.stack([self.u(tk) for tk in t]) if len(t) else np.zeros((0, self.nu))
        if isinstance(self.u, CController):
            raise ModelError("a CController runs in C: use simulate(method='rk4') on the compiled model",
                             where=f"{self._where}.u")
        if callable(self.u):
            return np.stack([np.asarray(self.u(tk, yk), dtype=float).reshape(self.nu) for tk, yk in zip(t, y)])
        return np.broadcast_to(np.asarray(self.u, dtype=float).reshape(1, self.nu), (len(t), self.nu))

    def accelerations(self, t: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, qdd) of all coordinates for free states y: (N, 2 nfree) at times t: (N,)."""
        tt = np.atleast_1d(np.asarray(t, dtype=float))
        Y = np.asarray(y, dtype=float).reshape(len(tt), -1)
        q, qd, qddp = self._full(tt, Y)
        M = np.asarray(self.ev.mass_matrix(q, self.p), dtype=float).reshape(len(tt), self.ev.nq, self.ev.nq)
        rhs = -np.asarray(self.ev.bias(q, qd, self.p, **_at(self.ev.bias, tt)),
                          dtype=float).reshape(len(tt), self.ev.nq)
        if self.nu:
            B = input_matrix(self.ev, q, qd, self.p)
            rhs = rhs + np.einsum("nij,nj->ni", B, self._inputs(tt, Y))
        f, pr = self.free, self.pres
        rhs_f = rhs[:, f] - np.einsum("nij,nj->ni", M[:, f][:, :, pr], qddp)
        qddf = np.linalg.solve(M[:, f][:, :, f], rhs_f[..., None])[..., 0]
        qdd = np.empty_like(q)
        qdd[:, f], qdd[:, pr] = qddf, qddp
        return q, qd, qdd

    def ode(self) -> Callable[[float, np.ndarray], np.ndarray]:
        """f(t, y_free) for scipy.integrate.solve_ivp."""
        nf = len(self.free)

        def f(t: float, y: np.ndarray) -> np.ndarray:
            _, qd, qdd = self.accelerations(np.array([t]), np.asarray(y)[None, :])
            return np.concatenate([y[nf:], qdd[0, self.free]])
        return f

    def compensating_forces(self, t: Any, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """Q_p - B_p u, (N, nprescribed): the generalized forces the prescribed coordinates need besides what
        the problem's inputs give them (their kinetic dry friction included), as the C path reports."""
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        tt = np.broadcast_to(np.asarray(t, dtype=float).reshape(-1), (len(q),))
        Q = np.asarray(self.ev.inverse_dynamics(q, qd, qdd, self.p, **_at(self.ev.inverse_dynamics, tt)),
                       dtype=float).reshape(len(q), self.ev.nq)
        Q = Q - _friction(self.ev, q, qd, self.p)
        if self.nu and self.u is not None:
            Y = np.concatenate([q[:, self.free], qd[:, self.free]], axis=1)
            Q = Q - np.einsum("nij,nj->ni", input_matrix(self.ev, q, qd, self.p), self._inputs(tt, Y))
        return Q[:, self.pres]

    def _c_params(self) -> np.ndarray:
        ev = self.ev
        if self.p is None:
            return ev.parameter_vector()
        if isinstance(self.p, Mapping):
            return ev.parameter_vector(self.p)
        p = np.ascontiguousarray(np.asarray(self.p, dtype=float).reshape(-1))
        if p.shape != (ev.np,):
            raise ModelError(f"p has {p.size} values; the model {ev.name!r} has {ev.np} parameters",
                             where=f"{self._where}.p")
        return p

    def _c_inputs(self) -> Optional[np.ndarray]:
        """The constant inputs (nu,) or None (zero); a time-varying u has none."""
        if self.u is None or self.nu == 0:
            return None
        if callable(self.u):
            raise ModelError("solve() takes a constant u; this problem's u varies in time (use accelerations() "
                             "with times)", where=f"{self._where}.u")
        return np.ascontiguousarray(self.u, dtype=float)

    def _c_law(self, p: np.ndarray) -> tuple:
        """(kind, u, times, values, function) of the C input law of u."""
        from ..contract import constant
        from .ccontroller import CController
        from .control import InputTable
        none = np.empty(0)
        if isinstance(self.u, InputTable):
            return constant("INPUT_TABLE"), none, self.u.t, np.ascontiguousarray(self.u.u.reshape(-1)), None
        if isinstance(self.u, CController):
            return (constant("INPUT_CALLBACK"), none, none, none,
                    self.u.bind(self.ev._m.address(), p).input_function())
        u = self._c_inputs()
        return constant("INPUT_CONSTANT"), none if u is None else u, none, none, None

    def solve(self, q: Any, qd: Any, qdd_p: Any, t: Any = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(qdd, tau_p) at full states q, qd (N, nq) with prescribed accelerations qdd_p (N, nprescribed), at
        the times t (one for all rows, or (N,); the time of the force elements' expressions).

        qdd (N, nq) holds the solved free accelerations and qdd_p; tau_p
        (N, nprescribed) = M_pf qdd_f + M_pp qdd_p + bias_p - B_p u are the
        generalized forces the prescribed coordinates need. ``u`` is the
        problem's constant input (a callable ``u`` needs times: use
        :meth:`accelerations`). In C for a compiled model.
        """
        nq, npr = self.ev.nq, len(self.pres)
        Q = np.ascontiguousarray(np.asarray(q, dtype=float).reshape(-1, nq))
        N = len(Q)
        QD = np.ascontiguousarray(np.asarray(qd, dtype=float).reshape(N, nq))
        A = np.ascontiguousarray(np.asarray(qdd_p, dtype=float).reshape(N, npr))
        tt = np.array(np.broadcast_to(np.asarray(t, dtype=float).reshape(-1), (N,)))   # a writable copy
        if self.u is not None and callable(self.u):
            raise ModelError("solve() takes a constant u; this problem's u varies in time (use accelerations() "
                             "with times)", where=f"{self._where}.u")
        if self.compiled:
            from ..contract import StatusCode
            from .compiled import DynamicsError
            u = self._c_inputs()
            qdd, tau = np.empty((N, nq)), np.empty((N, npr))
            status = np.zeros(N, dtype=np.intc)
            uu = None if u is None else np.ascontiguousarray(np.broadcast_to(u, (N, self.nu))).reshape(-1)
            self.ev.runtime.mixed_accelerations(self.ev.table, np.asarray(self.pres, dtype=np.intc), N,
                                                Q.reshape(-1), QD.reshape(-1), A.reshape(-1), uu, self._c_params(),
                                                qdd.reshape(-1), tau.reshape(-1), status, tt)
            bad = np.flatnonzero(status)
            if bad.size:
                code = int(status[bad[0]])
                what = ("the mass matrix of the free coordinates is not positive definite"
                        if code == StatusCode.ERR_NOT_POSITIVE_DEFINITE else StatusCode.describe(code))
                raise DynamicsError(f"the mixed problem on the model {self.ev.name!r} failed at row {int(bad[0])}: "
                                    f"{what}", status=code, row=int(bad[0]))
            return qdd, tau - _friction(self.ev, Q, QD, self.p)[:, self.pres]
        M = np.asarray(self.ev.mass_matrix(Q, self.p), dtype=float).reshape(N, nq, nq)
        r = -np.asarray(self.ev.bias(Q, QD, self.p, **_at(self.ev.bias, tt)), dtype=float).reshape(N, nq)
        if self.nu and self.u is not None:
            r = r + np.einsum("nij,j->ni", input_matrix(self.ev, Q, QD, self.p), np.asarray(self.u, dtype=float))
        f, pr = self.free, self.pres
        qdd = np.empty((N, nq))
        qdd[:, pr] = A
        qdd[:, f] = np.linalg.solve(M[:, f][:, :, f], (r[:, f] - np.einsum("nij,nj->ni", M[:, f][:, :, pr], A))
                                    [..., None])[..., 0]
        tau = np.einsum("nij,nj->ni", M[:, pr], qdd) - r[:, pr]
        return qdd, tau - _friction(self.ev, Q, QD, self.p)[:, pr]

    def simulate(self, y0: Any, t_end: float, *, dt: float, method: Optional[str] = None, rtol: float = 1e-9,
                 atol: float = 1e-11, substeps: int = 1) -> SimulationResult:
        """Integrate the free coordinates from t = 0 to ``t_end``, sampled every ``dt``.

        ``y0`` = [q_free, qd_free] at t = 0. The result holds all
        coordinates; ``result.extra["compensating"]`` (N, nprescribed) holds
        the forces the prescribed coordinates need.

        ``method``: ``"rk4"`` runs in C with the fixed step ``dt`` (needs a
        compiled model, and ``u`` constant, an InputTable or a CController;
        the default for them); a scipy
        method (``"DOP853"``, the default otherwise, ``"RK45"``, ``"Radau"``,
        ...) integrates with ``solve_ivp`` to ``rtol``/``atol``. With
        ``"rk4"`` the step is ``dt / substeps`` (RK4 is stable while the step
        times the highest natural angular frequency of the free coordinates
        stays below about 2.8) and every ``substeps``-th state is returned.
        """
        if method is None:
            method = "rk4" if self.compiled and not self._python_u() else "DOP853"
        if str(method).lower() == "rk4":
            if not self.compiled:
                raise ValueError("method='rk4' runs in C and needs a compiled model (rodgen.build); "
                                 f"this problem has a {type(self.ev).__name__}")
            if self._python_u():
                raise ValueError("method='rk4' (in C) takes a constant u, an InputTable or a CController; give "
                                 "a scipy method such as 'DOP853' for a Python function u(t, y_free)")
            if int(substeps) != substeps or substeps < 1:
                raise ValueError(f"substeps must be a positive integer, got {substeps!r}")
            res = self._simulate_c(y0, float(t_end), float(dt) / int(substeps))
            if substeps > 1:
                keep = np.unique(np.r_[np.arange(0, len(res.t), int(substeps)), len(res.t) - 1])
                comp = res.extra["compensating"][keep]
                assert res.qdd is not None
                res = SimulationResult(t=res.t[keep], q=res.q[keep], qd=res.qd[keep], u=res.u[keep],
                                       kinetic=res.kinetic[keep], potential=res.potential[keep],
                                       coordinates=res.coordinates, inputs=res.inputs, status=res.status,
                                       message=res.message, model=res.model, qdd=res.qdd[keep])
                res.extra["compensating"] = comp
            return res
        if substeps != 1:
            raise ValueError("substeps applies to method='rk4' (in C) only")
        from scipy.integrate import solve_ivp
        t_eval = np.arange(0.0, t_end + 0.5 * dt, dt)
        sol = solve_ivp(self.ode(), (0.0, float(t_eval[-1])), np.asarray(y0, dtype=float), method=method,
                        t_eval=t_eval, rtol=rtol, atol=atol)
        tt, Y = sol.t, sol.y.T
        q, qd, qdd = self.accelerations(tt, Y)
        T, V = self.ev.energy(q, qd, self.p)
        res = SimulationResult(t=tt, q=q, qd=qd, u=self._inputs(tt, Y), kinetic=T, potential=V,
                               coordinates=self.coordinates, inputs=_names(self.ev.inputs),
                               status=Status.SUCCESS if sol.success else Status.FAILED, message=sol.message,
                               model=str(getattr(self.ev, "name", "")), qdd=qdd)
        res.extra["compensating"] = self.compensating_forces(tt, q, qd, qdd)
        return res

    def _simulate_c(self, y0: Any, t_end: float, dt: float) -> SimulationResult:
        from ..contract import StatusCode
        from .integrate import _outcome
        ev, rt = self.ev, self.ev.runtime
        nf, npr = len(self.free), len(self.pres)
        y0 = np.ascontiguousarray(np.asarray(y0, dtype=float).reshape(-1))
        if y0.shape != (2 * nf,) or not np.all(np.isfinite(y0)):
            free = ", ".join(self.coordinates[i] for i in self.free)
            raise ModelError(f"y0: expected {2 * nf} finite values [q_free, qd_free] of the free coordinates "
                             f"({free}), got {y0.tolist()}", where=f"{self._where}.simulate")
        if not (np.isfinite(dt) and dt > 0 and np.isfinite(t_end) and t_end > 0):
            raise ValueError(f"need 0 < dt and 0 < t_end (finite); got dt={dt}, t_end={t_end}")
        times = rt.mixed_grid(0.0, t_end, dt)
        qp, qdp, qddp = self.motion(times)
        values = np.ascontiguousarray(np.concatenate([qp, qdp, qddp], axis=1))
        if not np.all(np.isfinite(values)):
            row, col = np.argwhere(~np.isfinite(values))[0]
            what = ("q", "qd", "qdd")[col // npr]
            name = self.coordinates[self.pres[col % npr]]
            raise ModelError(f"prescribed motion of {name!r}: {what} is {values[row, col]} at t = {times[row]}",
                             where=f"{self._where}.prescribed[{name!r}]")
        p = self._c_params()
        kind, uc, utimes, uvalues, fn = self._c_law(p)
        cap = (len(times) - 1) // 2 + 1
        t_out, y_out = np.empty(cap), np.empty(cap * 2 * ev.nq)
        qdd_out, tau_out, u_out = np.empty(cap * ev.nq), np.empty(cap * npr), np.empty(cap * self.nu)
        code, n = rt.mixed_simulate(ev.table, np.asarray(self.pres, dtype=np.intc), times, values.reshape(-1),
                                    kind, uc, utimes, uvalues, fn, p, 0.0, t_end, dt, y0, t_out, y_out, qdd_out,
                                    tau_out, u_out)
        status, message = (Status.SUCCESS, "success") if code == StatusCode.OK else _outcome(code)
        if code == StatusCode.ERR_NOT_POSITIVE_DEFINITE:
            message = "the mass matrix of the free coordinates is not positive definite"
        Y = y_out[:n * 2 * ev.nq].reshape(n, 2 * ev.nq)
        q, qd = Y[:, :ev.nq].copy(), Y[:, ev.nq:].copy()
        T, V = ev.energy(q, qd, p) if n else (np.zeros(0), np.zeros(0))
        uu = u_out[:n * self.nu].reshape(n, self.nu).copy()
        res = SimulationResult(t=t_out[:n].copy(), q=q, qd=qd, u=uu, kinetic=np.asarray(T, float),
                               potential=np.asarray(V, float), coordinates=self.coordinates,
                               inputs=_names(ev.inputs), status=status, message=message, model=str(ev.name),
                               qdd=qdd_out[:n * ev.nq].reshape(n, ev.nq).copy())
        res.extra["compensating"] = tau_out[:n * npr].reshape(n, npr).copy() - _friction(ev, q, qd, p)[:, self.pres]
        if isinstance(fn, tuple):
            res.extra["controller_state"] = fn[2].state.copy()
        return res


__all__ = ["prescribed_forces", "PrescribedForces", "MixedProblem", "Motion", "input_matrix", "as_evaluator"]
