"""Inputs of a compiled simulation: sample tables and tracking laws evaluated in C.

``sys.simulate(..., u=...)`` takes a constant input vector, an
:class:`InputTable` (samples interpolated linearly in C), or a Python
callable ``u(t, q, qd)`` (the slow path: the C integrator calls back into
Python at every stage). ``controller=`` takes a tracking law toward a
:class:`Reference` trajectory, also evaluated in C at every stage:

* :class:`PD`, collocated proportional-derivative feedback on the inputs::

      u = u_ff + Kp * (B(q)^T (q_ref - q)) + Kd * (B(q)^T (qd_ref - qd))

  with one gain per input (``*`` is element-wise) and the feedforward
  ``u_ff`` the constant ``u`` of the call (zero if none). Each input acts
  on the error along its own direction of the input map: a torque between
  two links on the error of their relative angle, a longitudinal force on
  the error of its segment's length. The generalized force is then
  ``B Kp B^T e + B Kd B^T ė``, a symmetric positive semi-definite stiffness
  and damping (no pseudo-inverse of B is needed, and passive coordinates
  are left alone).

* :class:`ComputedTorque`, feedback linearisation::

      a = qdd_ref + Kp * (q_ref - q) + Kd * (qd_ref - qd)     (gains per coordinate)
      Q = M(q) a + bias(q, qd)                                 (inverse dynamics)
      u = argmin |B(q) u - Q|  = (B^T B)^-1 B^T Q

  When every coordinate is actuated (B square and invertible), B u = Q and
  the error obeys ë + Kd ė + Kp e = 0 exactly.

The reference is sampled: rows of ``q_ref``, ``qd_ref``, ``qdd_ref`` at
``t``, interpolated linearly in C and held constant before the first and
after the last sample. With free, spherical or planar joints (a floating
base) ``qd_ref`` and ``qdd_ref`` are velocities (nv per row, as ``qd``) and
the position error ``q_ref - q`` is the velocity that takes q to q_ref in
unit time (``CompiledModel.difference``: a free joint's on SE(3)).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

ArrayLike = Union[np.ndarray, Sequence[float], float]


def _times(t: ArrayLike, what: str) -> np.ndarray:
    tt = np.ascontiguousarray(np.asarray(t, dtype=float).reshape(-1))
    if tt.size < 1:
        raise ValueError(f"{what}: at least one sample time is needed")
    if not np.all(np.isfinite(tt)):
        raise ValueError(f"{what}: the sample times must be finite")
    if tt.size > 1 and not np.all(np.diff(tt) > 0):
        k = int(np.flatnonzero(np.diff(tt) <= 0)[0])
        raise ValueError(f"{what}: the sample times must increase strictly; t[{k}] = {tt[k]!r} and "
                         f"t[{k + 1}] = {tt[k + 1]!r}")
    return tt


def _samples(x: ArrayLike, n: int, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 1 and n == 1:
        a = a.reshape(1, -1)
    if a.ndim == 1 and a.shape[0] == n:
        a = a.reshape(n, 1)
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError(f"{what} has shape {a.shape}; expected one row per sample time, ({n}, width)")
    return np.ascontiguousarray(a)


@dataclass(frozen=True)
class InputTable:
    """Inputs given at sample times, interpolated linearly in C (constant outside the samples).

    t : (n,) strictly increasing times; u : (n, nu) inputs, one row per time.
    """

    t: np.ndarray
    u: np.ndarray

    def __init__(self, t: ArrayLike, u: ArrayLike) -> None:
        tt = _times(t, "InputTable")
        object.__setattr__(self, "t", tt)
        object.__setattr__(self, "u", _samples(u, tt.size, "InputTable u"))

    def __call__(self, t: float) -> np.ndarray:
        """The interpolated inputs at time t (as the C code computes them)."""
        return np.array([np.interp(t, self.t, col) for col in self.u.T])


@dataclass(frozen=True)
class Reference:
    """A prescribed trajectory: q_ref, qd_ref, qdd_ref at sample times.

    t : (n,) strictly increasing times; q : (n, nq). ``qd`` and ``qdd``
    default to derivatives of the samples (``numpy.gradient``, second
    order); give them when they are known exactly. A model with free,
    spherical or planar joints takes them as velocities, (n, nv): give them
    (:meth:`hold` gives zeros of either width).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray

    def __init__(self, t: ArrayLike, q: ArrayLike, qd: Optional[ArrayLike] = None,
                 qdd: Optional[ArrayLike] = None) -> None:
        tt = _times(t, "Reference")
        qq = _samples(q, tt.size, "Reference q")
        if qd is None:
            qd = np.gradient(qq, tt, axis=0, edge_order=2) if tt.size > 2 else np.zeros_like(qq)
        qdv = _samples(qd, tt.size, "Reference qd")
        if qdd is None:
            qdd = np.gradient(qdv, tt, axis=0, edge_order=2) if tt.size > 2 else np.zeros_like(qq)
        qddv = _samples(qdd, tt.size, "Reference qdd")
        if not (qdv.shape == qddv.shape and qdv.shape[0] == qq.shape[0] and qdv.shape[1] <= qq.shape[1]):
            raise ValueError(f"Reference: q {qq.shape}, qd {qdv.shape} and qdd {qddv.shape} must have the same "
                             f"shape (qd and qdd: the same rows, as many columns as q or, velocities of free, "
                             f"spherical or planar joints, fewer)")
        for name, a in (("q", qq), ("qd", qdv), ("qdd", qddv)):
            if not np.all(np.isfinite(a)):
                raise ValueError(f"Reference {name} holds inf or NaN")
        object.__setattr__(self, "t", tt)
        object.__setattr__(self, "q", qq)
        object.__setattr__(self, "qd", qdv)
        object.__setattr__(self, "qdd", qddv)

    @classmethod
    def hold(cls, q: ArrayLike) -> "Reference":
        """A posture held at rest: q_ref = q, qd_ref = qdd_ref = 0 at all times."""
        qq = np.asarray(q, dtype=float).reshape(1, -1)
        z = np.zeros_like(qq)
        return cls([0.0], qq, z, z)

    def rows(self, nv: Optional[int] = None) -> np.ndarray:
        """(n, nq + 2 nv) rows [q_ref, qd_ref, qdd_ref], as the C code reads them (nv: the model's velocities,
        default nq; a reference held at rest has zero rates of either width)."""
        nv = self.q.shape[1] if nv is None else nv
        qd, qdd = self.qd, self.qdd
        if qd.shape[1] != nv:
            if qd.shape[1] == self.q.shape[1] and not np.any(qd) and not np.any(qdd):
                qd = qdd = np.zeros((self.q.shape[0], nv))
            else:
                raise ValueError(f"the reference's qd and qdd have {qd.shape[1]} columns; the model has {nv} "
                                 f"velocities (free, spherical or planar joints: give qd and qdd as velocities)")
        return np.ascontiguousarray(np.hstack([self.q, qd, qdd]))


def _gains(k: ArrayLike, n: int, what: str) -> np.ndarray:
    a = np.asarray(k, dtype=float).reshape(-1)
    if a.size == 1:
        a = np.full(n, float(a[0]))
    if a.size != n:
        raise ValueError(f"{what} has {a.size} entries; expected one gain or {n}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{what} must hold finite, non-negative gains; got {a.tolist()}")
    return np.ascontiguousarray(a)


@dataclass(frozen=True)
class PD:
    """Collocated PD tracking: u = u_ff + Kp*(B^T (q_ref - q)) + Kd*(B^T (qd_ref - qd)).

    kp, kd : one gain for all inputs, or one per input (nu,). The
    feedforward u_ff is the constant ``u`` given to ``simulate`` (zero if none).
    """

    reference: Reference
    kp: Union[float, Sequence[float], np.ndarray]
    kd: Union[float, Sequence[float], np.ndarray]


@dataclass(frozen=True)
class ComputedTorque:
    """Computed torque: u = (B^T B)^-1 B^T [M (qdd_ref + Kp e + Kd ė) + bias], e = q_ref - q.

    kp, kd : one gain for all coordinates, or one per coordinate (nv,: per velocity).
    """

    reference: Reference
    kp: Union[float, Sequence[float], np.ndarray]
    kd: Union[float, Sequence[float], np.ndarray]


Controller = Union[PD, ComputedTorque]

__all__ = ["InputTable", "Reference", "PD", "ComputedTorque", "Controller"]
