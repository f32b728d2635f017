"""Inverse dynamics with contacts: the inputs and ground reactions that produce a prescribed motion.

For a state ``q, qd``, prescribed accelerations ``qdd`` and a set of active
constraint blocks (contacts held, loops), find the inputs ``u`` (joint
torques, length forces) and the forces ``λ`` of the active rows with

    M(q) qdd + bias(q, qd) = B(q) u + J_a(q)ᵀ λ

(the sign convention of docs/ARCHITECTURE.md, "Constraints": a contact's
``λ`` is ``[tangential, normal]`` force on the foot in the ground frame; a
loop's is the force on marker ``b``, minus it on ``a``).

The unknowns ``x = (u, λ)`` satisfy ``nq`` equations. In single support of a
fully actuated model they are determined. In double support (or with a
loop) there are more unknowns than equations; the solution returned is the
one of least weighted norm

    minimise  Σ w_u,i u_i² + Σ w_λ,j λ_j²   subject to the equations,

with the weights ``input_weight`` and ``force_weight`` (scalars or one per
input / active row; default 1, which mixes N·m and N: scale them to your
units; a small ``force_weight`` lets the ground reactions grow to spare the
inputs).

What the equations leave free: with point feet in the plane and every
acceleration prescribed, the reactions must give the walker's momentum
rates (three equations), so with two feet on the ground the *normal* forces
are fixed by the motion and the free part is an internal tangential force
(the feet pushing apart or together along the ground; the inputs change
with it). ``tangential_share`` resolves it instead of the least norm:
``{"foot_a": 0.3}`` gives foot ``a`` 30 % of the summed tangential force of
the active contacts, and ``"friction"`` splits it in proportion to the
normal forces, i.e. the same ratio |tangential| / normal at every foot (the
smallest friction coefficient that keeps both feet stuck). A spatial
contact has two tangential rows; the share holds along each tangent axis.

If no (u, λ) produces ``qdd`` (an underactuated model asked for a motion its
inputs cannot make, e.g. a flight phase with the wrong base acceleration),
:class:`ContactInverseDynamicsError` says so with the residual; pass
``check=False`` to get the least-squares answer and its residual instead.

The functions used are the compiled model's (or a
:class:`~rodgen.symbolic.numeric.NumericModel` with the same methods):
``mass_matrix(q, p)``, ``bias(q, qd, p)``, ``input_map(q, p)``,
``constraint_jacobian(q, p)`` (all rows, ``(nrows, nq)``) and the block table
``constraints`` (items with ``name``, ``kind``, ``row``, ``nrows``, as the C
``rodgen_constraint``: objects, mappings or tuples in that order; ``kind`` a
name or the RODGEN_CONTACT/LOOP/LIMIT number). No symbolic work happens here.
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ..contract import BLOCK_KINDS, labels
from ..errors import RodgenError


class ContactInverseDynamicsError(RodgenError, ValueError):
    """The prescribed motion cannot be produced by the inputs and the active constraint forces."""


@dataclass
class ContactInverseDynamics:
    """Result of :func:`contact_inverse_dynamics` (arrays get a leading N for a batch).

    u : inputs (nu,). lam : forces of the active rows (k,), in the order of ``rows``.
    forces : block name -> its force (2,) or (1,) (contact: [tangential, normal]).
    rows : the active rows (indices into the model's constraint rows).
    residual : M qdd + bias - B u - Jᵀ λ (nq,), zero when the motion is produced.
    """

    u: np.ndarray
    lam: np.ndarray
    forces: dict[str, np.ndarray]
    rows: list[int]
    residual: np.ndarray


_FIELDS = ("name", "kind", "row", "nrows")


def _block_field(b: Any, name: str) -> Any:
    """A field of a block given as an object, a mapping or a tuple (name, kind, row, nrows)."""
    if isinstance(b, Mapping):
        return b[name]
    if isinstance(b, tuple) and not hasattr(b, name):
        return b[_FIELDS.index(name)]
    return getattr(b, name)


def active_rows(model: Any, active: Sequence[str]) -> tuple[list[int], list[tuple[str, str, int, int]]]:
    """Rows of the named blocks (in the order given) and the blocks as (name, kind, first row, nrows)."""
    kinds = labels(BLOCK_KINDS)      # RODGEN_CONTACT ... by code
    table = []
    for b in getattr(model, "constraints", None) or []:
        kind = _block_field(b, "kind")
        table.append((str(_block_field(b, "name")), kinds.get(kind, str(kind)), int(_block_field(b, "row")),
                      int(_block_field(b, "nrows"))))
    by = {b[0]: b for b in table}
    if isinstance(active, str):
        active = [active]
    rows: list[int] = []
    chosen: list[tuple[str, str, int, int]] = []
    for nm in active:
        if nm not in by:
            raise ValueError(f"unknown constraint block {nm!r}; the model has "
                             f"{', '.join(by) or 'no constraint blocks'}")
        if nm in [c[0] for c in chosen]:
            raise ValueError(f"constraint block {nm!r} is listed twice in active")
        b = by[nm]
        chosen.append(b)
        rows.extend(range(b[2], b[2] + b[3]))
    return rows, chosen


def _takes_time(fn: Any) -> bool:
    """Whether an evaluator's function takes the time ``t`` (a compiled model's or a NumericModel's do)."""
    try:
        return "t" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def contact_inverse_dynamics(model: Any, q: Any, qd: Any, qdd: Any, active: Sequence[str] = (),
                             p: Any = None, *, input_weight: Union[float, Sequence[float]] = 1.0,
                             force_weight: Union[float, Sequence[float]] = 1.0,
                             tangential_share: Union[None, str, Mapping[str, float]] = None,
                             check: bool = True,
                             tol: float = 1e-8, t: Any = 0.0) -> ContactInverseDynamics:
    """Inputs ``u`` and constraint forces ``λ`` that produce ``qdd`` with the ``active`` blocks held.

    ``q``: (nq,) or a batch (N, nq); ``qd, qdd``: (nv,) or (N, nv) (nv = nq but with free, spherical or planar
    joints); the same active set for every row.
    ``active``: names of the active constraint blocks (contacts, loops, limits).
    ``t``: the time of each row (one for all, or (N,)), for force elements that are expressions of the time
    (a model whose ``bias`` takes no ``t`` is called without it).
    See the module docstring for weights, ``tangential_share`` and ``check``.
    """
    Q = np.asarray(q, dtype=float)
    single = Q.ndim == 1
    Q = np.atleast_2d(Q)
    nv = getattr(model, "nv", None)
    nq = int(nv) if nv is not None else Q.shape[1]     # velocity-sized: M, h, B, J's columns
    QD = np.broadcast_to(np.atleast_2d(np.asarray(qd, dtype=float)), (Q.shape[0], nq))
    QDD = np.broadcast_to(np.atleast_2d(np.asarray(qdd, dtype=float)), (Q.shape[0], nq))
    rows, blocks = active_rows(model, active)
    k = len(rows)
    tangential, normal = _contact_rows(blocks)
    fixed = None
    if tangential_share is not None and not isinstance(tangential_share, str):
        fixed = _shares(tangential_share, list(tangential))
    elif tangential_share not in (None, "friction"):
        raise ValueError(f"tangential_share must be None, 'friction' or a mapping contact -> fraction, "
                         f"got {tangential_share!r}")
    out = []
    times = np.broadcast_to(np.asarray(t, dtype=float).reshape(-1), (Q.shape[0],))
    timed = _takes_time(model.bias)
    for i in range(Q.shape[0]):
        M = np.asarray(model.mass_matrix(Q[i], p), dtype=float).reshape(nq, nq)
        h = np.asarray(model.bias(Q[i], QD[i], p, **({"t": float(times[i])} if timed else {})),
                       dtype=float).reshape(nq)
        B = np.asarray(model.input_map(Q[i], p), dtype=float).reshape(nq, -1)
        J = np.asarray(model.constraint_jacobian(Q[i], p), dtype=float).reshape(-1, nq)[rows] if k else \
            np.zeros((0, nq))
        b = M @ QDD[i] + h
        S = np.zeros((0, k))
        if fixed is not None:
            S = _share_rows(fixed, tangential, k)
        elif tangential_share == "friction" and len(tangential) > 1:
            # the normal forces do not depend on the split: take them from the least-norm answer
            x0 = _solve(b, B, J, S, input_weight, force_weight, check, tol)[1]
            total = sum(x0[j] for j in normal.values())
            if total <= 0:
                raise ContactInverseDynamicsError(
                    f"the active contacts carry no net normal force ({total:.3g} N); a split of the tangential "
                    f"force in proportion to the normal forces is undefined")
            S = _share_rows({nm: x0[j] / total for nm, j in list(normal.items())[:-1]}, tangential, k)
        out.append(_solve(b, B, J, S, input_weight, force_weight, check, tol))
    u = np.array([o[0] for o in out])
    lam = np.array([o[1] for o in out]).reshape(len(out), k)
    res = np.array([o[2] for o in out])
    forces: dict[str, np.ndarray] = {}
    at = 0
    for name, _kind, _row, n in blocks:
        forces[name] = lam[:, at:at + n][0] if single else lam[:, at:at + n]
        at += n
    if single:
        return ContactInverseDynamics(u[0], lam[0], forces, rows, res[0])
    return ContactInverseDynamics(u, lam, forces, rows, res)


def _contact_rows(blocks: list[tuple[str, str, int, int]]) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Positions in λ of each active contact's tangential rows (one in the plane, two in space) and of its
    normal row (the last)."""
    tangential: dict[str, list[int]] = {}
    normal: dict[str, int] = {}
    at = 0
    for name, kind, _row, n in blocks:
        if kind == "contact":
            tangential[name], normal[name] = list(range(at, at + n - 1)), at + n - 1
        at += n
    return tangential, normal


def _shares(share: Mapping[str, float], contacts: list[str]) -> dict[str, float]:
    for name, value in share.items():
        if name not in contacts:
            raise ValueError(f"tangential_share names {name!r}, which is not an active contact "
                             f"(active contacts: {', '.join(contacts) or 'none'})")
        if not np.isfinite(value):
            raise ValueError(f"tangential_share of {name!r} must be a finite fraction, got {value!r}")
    return {k: float(v) for k, v in share.items()}


def _share_rows(share: Mapping[str, float], tangential: dict[str, list[int]], k: int) -> np.ndarray:
    """Rows S with S λ = 0: along each tangent axis, tangential(c) = share_c * Σ tangential of the active
    contacts."""
    S = []
    for name, value in share.items():
        for axis, own in enumerate(tangential[name]):
            row = np.zeros(k)
            for rows in tangential.values():
                row[rows[axis]] -= value
            row[own] += 1.0
            S.append(row)
    return np.array(S).reshape(len(S), k)


def _solve(b: np.ndarray, B: np.ndarray, J: np.ndarray, S: np.ndarray, wu: Any, wl: Any, check: bool,
           tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nq, nu = B.shape
    k = J.shape[0]
    A = np.hstack([B, J.T])
    w = np.concatenate([np.broadcast_to(np.asarray(wu, dtype=float), (nu,)),
                        np.broadcast_to(np.asarray(wl, dtype=float), (k,))])
    if np.any(~np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("input_weight and force_weight must be positive and finite")
    if len(S):
        A = np.vstack([A, np.hstack([np.zeros((len(S), nu)), S])])
        b = np.concatenate([b, np.zeros(len(S))])
    # least weighted norm: z = sqrt(w) x minimises |z| subject to (A / sqrt(w)) z = b
    scale = 1.0 / np.sqrt(w)
    z = np.linalg.pinv(A * scale, rcond=1e-12) @ b if A.size else np.zeros(0)
    x = scale * z
    r = A @ x - b if A.size else -b
    if check and np.linalg.norm(r) > tol * (1.0 + np.linalg.norm(b)):
        raise ContactInverseDynamicsError(
            f"the prescribed accelerations cannot be produced by the inputs and the active constraints "
            f"(residual {np.linalg.norm(r):.3g}): the model is underactuated in this phase; prescribe a motion "
            f"consistent with its dynamics, activate more contacts, or pass check=False for the "
            f"least-squares answer")
    return x[:nu], x[nu:], -r[:nq]
