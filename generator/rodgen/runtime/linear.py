"""Linearisation and modal analysis about a state.

:func:`linearize` gives the matrices of the first-order system
``dy/dt = A (y - y0) + B (u - u0)`` with ``y = [q, qd]``:

    A = d[qd, qdd]/d[q, qd]   the compiled model's exact RHS Jacobian (``rhs_jacobian``);
    B = [0; M(q0)^-1 B(q0)]   exact, since the inputs enter M qdd + bias = B(q) u linearly.

:func:`modes` solves the generalized eigenproblem ``K phi = w**2 M phi`` at an
equilibrium ``q0`` (at rest, inputs ``u0``), with ``M = M(q0)`` and the stiffness

    K = d(bias - B u0)/dq  at (q0, qd = 0)

which holds the springs, gravity's contribution and any force law that
depends on q. For a compiled model K is ``-M A_qq`` from the exact Jacobian
(``A_qq`` the block d qdd/dq; at an equilibrium qdd = 0, so the term with
dM/dq vanishes); a model built without the Jacobian falls back on central
differences of the compiled bias (relative error about 1e-8). For a
:class:`~rodgen.model.core.Model`, :func:`rodgen.analysis.modes` derives the
equations (recursive method) and K is the exact forward-mode derivative of
their straight-line code (:class:`rodgen.symbolic.numeric.ChainModel`);
nothing is compiled.

Damping is left out of the modes (the undamped natural frequencies); use
:func:`linearize` for the damped first-order system.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import RodgenError

ArrayLike = Any  # a sequence of floats or an ndarray
Params = Any  # None, a parameter vector, or a mapping name -> value


def linearize(sys: Any, q0: ArrayLike, qd0: Optional[ArrayLike] = None, u0: Optional[ArrayLike] = None,
              p: Params = None) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of the first-order system about (q0, qd0, u0): A (2nv, 2nv), B (2nv, nu) (nv = nq except with
    free, spherical or planar joints, where y is [dq, v] on the tangent space: see ``rhs_jacobian``).

    ``sys`` is a compiled model with the Jacobian (``rodgen.build`` gives every model one, built on
    its first use, unless ``CodegenOptions(jacobian=False)``). ``qd0`` and ``u0`` default to zero.
    """
    q = np.asarray(q0, dtype=float)
    nq, nu = sys.nq, sys.nu
    nv = getattr(sys, "nv", nq)
    qd = np.zeros(nv) if qd0 is None else np.asarray(qd0, dtype=float)
    u = np.zeros(nu) if u0 is None else np.asarray(u0, dtype=float)
    for name, v, n in (("q0", q, nq), ("qd0", qd, nv), ("u0", u, nu)):
        if v.shape != (n,):
            raise ValueError(f"{name} has shape {v.shape}; the model {sys.name!r} expects ({n},)")
    A = np.array(sys.rhs_jacobian(q, qd, u, p), dtype=float)
    B = np.zeros((2 * nv, nu))
    if nu:
        B[nv:] = np.linalg.solve(sys.mass_matrix(q, p), sys.input_map(q, p))
    return A, B


@dataclass
class Modes:
    """Natural frequencies and mode shapes about an equilibrium (see :func:`modes`).

    omega : (k,) circular frequencies in rad/s, ascending (NaN where ``omega2 < 0``: unstable).
    hz : (k,) the same in Hz.
    omega2 : (k,) the eigenvalues w**2 (negative: the equilibrium is unstable in that mode).
    shapes : (nq, k) mode shapes in the coordinates, mass-normalised (shapes.T M shapes = I), each with
        its largest entry positive (zero in the rows of ``fixed`` coordinates).
    M, K : the numeric mass and stiffness matrices at q0.
    q0, u0 : the equilibrium; coordinates : names in the order of q.
    points : marker positions at q0, name -> (2,); point_shapes : name -> (k, 2), the displacement of
        each marker in each mode (the marker Jacobian times the shape), for plots.
    """

    omega: np.ndarray
    hz: np.ndarray
    omega2: np.ndarray
    shapes: np.ndarray
    M: np.ndarray
    K: np.ndarray
    q0: np.ndarray
    u0: np.ndarray
    coordinates: list[str]
    points: dict[str, np.ndarray] = field(default_factory=dict)
    point_shapes: dict[str, np.ndarray] = field(default_factory=dict)

    def plot(self, *args: Any, **kwargs: Any) -> Any:
        """Plot the mode shapes along the chain (see :func:`rodgen.runtime.plot.plot_modes`)."""
        from .plot import plot_modes
        return plot_modes(self, *args, **kwargs)


def _stiffness_fd(sys: Any, q: np.ndarray, u: np.ndarray, p: Params) -> np.ndarray:
    nq = sys.nq
    K = np.empty((nq, nq))
    z = np.zeros(nq)

    def force(x: np.ndarray) -> np.ndarray:
        f = np.asarray(sys.bias(x, z, p), dtype=float)
        if sys.nu:
            f = f - np.asarray(sys.input_map(x, p)) @ u
        return f

    for j in range(nq):
        h = 1e-6 * max(1.0, abs(q[j]))
        dq = np.zeros(nq)
        dq[j] = h
        K[:, j] = (force(q + dq) - force(q - dq)) / (2 * h)
    return K


def modes(obj: Any, q0: Optional[ArrayLike] = None, *, u0: Optional[ArrayLike] = None, p: Params = None,
          count: Optional[int] = None, tol: float = 1e-8, fixed: Sequence[str] = ()) -> Modes:
    """Natural frequencies and mode shapes of ``obj`` about the equilibrium ``q0``.

    Parameters
    ----------
    obj : a compiled model (``rodgen.build``), or any object with its ``mass_matrix``, ``bias``,
        ``input_map`` and ``points`` (and optionally ``stiffness``), such as
        :class:`rodgen.symbolic.numeric.ChainModel`; :func:`rodgen.modes` also takes a Model.
    q0 : the equilibrium coordinates (default: the model's initial coordinates).
    u0 : constant inputs that hold the equilibrium (default zero).
    p : parameter values (defaults of the model).
    count : keep the ``count`` lowest modes (default all).
    fixed : names of coordinates held at q0 (a locked hub, a clamped joint): the modes of the
        others, from the sub-blocks of M and K; their shapes have zeros in the fixed rows.
    tol : q0 must be an equilibrium: the residual force ``|bias(q0, 0) - B u0|`` may be at most
        ``tol * max(1, |K|)``, else RodgenError.
    """
    sys = obj
    if not (hasattr(sys, "mass_matrix") and hasattr(sys, "bias")):
        raise TypeError(f"modes() takes a model or a compiled model, got {type(obj).__name__}")
    nq, nu = sys.nq, sys.nu
    if q0 is None:
        if hasattr(sys, "initial_q"):
            q = np.asarray(sys.initial_q, dtype=float)
        elif hasattr(sys, "initial_state"):
            q = np.asarray(sys.initial_state()[:nq], dtype=float)
        else:
            raise ValueError(f"give the equilibrium q0: {type(sys).__name__} has no initial coordinates")
    else:
        q = np.asarray(q0, dtype=float)
    u = np.zeros(nu) if u0 is None else np.asarray(u0, dtype=float)
    if q.shape != (nq,) or u.shape != (nu,):
        raise ValueError(f"q0 must have shape ({nq},) and u0 ({nu},); got {q.shape} and {u.shape}")
    z = np.zeros(nq)
    M = np.asarray(sys.mass_matrix(q, p), dtype=float)
    if hasattr(sys, "stiffness"):
        K = sys.stiffness(q, u, p)
    elif getattr(sys, "has_jacobian", False):
        A = np.asarray(sys.rhs_jacobian(q, z, u, p), dtype=float)
        K = -M @ A[nq:, :nq]
    else:
        K = _stiffness_fd(sys, q, u, p)
    names = list(sys.coordinates)
    unknown = [c for c in fixed if c not in names]
    if unknown:
        raise ValueError(f"fixed: {unknown[0]!r} is not a coordinate of {sys.name!r} "
                         f"(coordinates: {', '.join(names)})")
    free = [i for i, c in enumerate(names) if c not in fixed]
    residual = np.asarray(sys.bias(q, z, p), dtype=float)
    if nu:
        residual = residual - np.asarray(sys.input_map(q, p)) @ u
    residual = residual[free]  # a fixed coordinate is held by whatever force it takes
    scale = max(1.0, float(np.max(np.abs(K))) if K.size else 1.0)
    if np.max(np.abs(residual), initial=0.0) > tol * scale:
        worst = int(np.argmax(np.abs(residual)))
        raise RodgenError(f"q0 is not an equilibrium of {sys.name!r}: the residual force on "
                          f"{names[free[worst]]!r} is {residual[worst]:.3g} (bias(q0, 0) - B u0 must vanish); "
                          f"give the rest state in q0 (and the holding inputs in u0)")
    Ks = 0.5 * (K + K.T)  # a conservative system's K is symmetric at an equilibrium
    from scipy.linalg import eigh
    w2, phi_free = eigh(Ks[np.ix_(free, free)], M[np.ix_(free, free)])
    phi = np.zeros((nq, len(free)))
    phi[free] = phi_free
    for k in range(phi.shape[1]):
        if phi[np.argmax(np.abs(phi[:, k])), k] < 0:
            phi[:, k] = -phi[:, k]
    if count is not None:
        w2, phi = w2[:count], phi[:, :count]
    # a rigid-body mode has w**2 = 0 up to round-off: treat |w**2| below 1e-10 of the largest as zero
    zero = np.abs(w2) <= 1e-10 * max(float(np.max(np.abs(w2), initial=0.0)), 1e-300)
    w2 = np.where(zero, 0.0, w2)
    omega = np.where(w2 >= 0, np.sqrt(np.abs(w2)), np.nan)
    pts = sys.points(q, p)
    shapes_pts: dict[str, np.ndarray] = {nm: np.zeros((phi.shape[1], 2)) for nm in pts}
    h = 1e-6
    for k in range(phi.shape[1]):  # marker displacement per mode: central difference along the shape
        hi, lo = sys.points(q + h * phi[:, k], p), sys.points(q - h * phi[:, k], p)
        for nm in pts:
            shapes_pts[nm][k] = (np.asarray(hi[nm]) - np.asarray(lo[nm])) / (2 * h)
    return Modes(omega=omega, hz=omega / (2 * np.pi), omega2=w2, shapes=phi, M=M, K=K, q0=q, u0=u,
                 coordinates=list(sys.coordinates), points={k: np.asarray(v) for k, v in pts.items()},
                 point_shapes=shapes_pts)


__all__ = ["linearize", "modes", "Modes"]
