"""The regressor of the inverse dynamics for identification: ``M q̈ + h + G = Y(q, q̇, q̈) θ``.

The inertial part of the inverse dynamics (mass matrix times q̈, velocity terms and gravity) is linear
in the inertial parameters θ. They are introduced as new parameters of a copy of the model, one per
inertial quantity, so that every mass and inertia of the copy is a linear function of them:

* planar model: per point mass its ``mass``; per rod its ``mass`` and its central ``inertia``
  (the rod's first moment and its share of the inertia about the joint are its mass times fixed
  lengths, as the planar vocabulary places it);
* spatial body: the ten standard parameters in the link frame, ``m``, ``m c`` (three first
  moments) and the inertia tensor about the link frame's origin ``I_o = R I_c Rᵀ + m (|c|² 1 − c cᵀ)``
  (``xx, xy, xz, yy, yz, zz``); the copy's body takes ``c = h / m`` and ``I_c = I_o − (|h|² 1 − h hᵀ) / m``,
  which the equations multiply out again (a body without mass and inertia gets no parameters); a spatial
  model's point masses and rods as in the planar case.

``Y = ∂τ/∂θ`` is then carried through the equations' straight-line code by forward-mode
differentiation (:func:`rodgen.symbolic.derivative.forward_derivatives`); since τ is linear in θ,
Y does not depend on θ and ``Y θ`` is the inverse dynamics at any θ. Springs, dampers, force
elements and inputs do not depend on θ and are left out of Y.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..errors import ModelError
from ..model.expr import as_expression
from ..model.spatial import SpatialModel


@dataclass(frozen=True)
class Regressor:
    """The regressor of a model as straight-line code.

    names : the inertial parameters θ, in the order of Y's columns (``<element>.<quantity>``).
    values : θ at the model's parameter defaults.
    q, qd, qdd, params : the symbols Y is written in (``params`` the model's own parameters, θ excluded).
    param_values : the defaults of ``params``.
    assignments : intermediate ``(symbol, expression)`` pairs in evaluation order.
    Y : ``Y[i][k] = ∂τ_i/∂θ_k`` in those symbols (nq rows, len(names) columns).
    theta : the symbols of θ (Y does not depend on them; where its code names them, they take ``values``).
    """

    names: list[str]
    values: list[float]
    q: list[sp.Symbol]
    qd: list[sp.Symbol]
    qdd: list[sp.Symbol]
    params: list[sp.Symbol]
    param_values: list[float]
    assignments: list[tuple[sp.Symbol, sp.Expr]]
    Y: list[list[sp.Expr]]
    theta: list[sp.Symbol]


def _value(v: Any, env: dict[str, float]) -> float:
    return float(as_expression(v).evaluate(env))


def _rpy_matrix(r: float, p: float, y: float) -> list[list[float]]:
    """URDF's rotation Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, spp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [[cy * cp, cy * spp * sr - sy * cr, cy * spp * cr + sy * sr],
            [sy * cp, sy * spp * sr + cy * cr, sy * spp * cr - cy * sr],
            [-spp, cp * sr, cp * cr]]


def _tensor(inertia: Any, env: dict[str, float]) -> list[list[float]]:
    if len(inertia) == 6 and not isinstance(inertia[0], (list, tuple)):
        xx, xy, xz, yy, yz, zz = (_value(v, env) for v in inertia)
        return [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]
    return [[_value(v, env) for v in row] for row in inertia]


def parameterized(model: Any) -> tuple[Any, list[str], list[str], list[float]]:
    """A copy of ``model`` whose inertias are linear in new parameters θ.

    Returns (copy, θ parameter names in the copy, θ display names, θ values at the defaults).
    """
    out = copy.deepcopy(model)
    env = {p.name: float(as_expression(p.value).evaluate({})) if not isinstance(p.value, (int, float))
           else float(p.value) for p in out.parameters}
    taken = {p.name for p in out.parameters}
    pnames: list[str] = []
    labels: list[str] = []
    values: list[float] = []

    def new(label: str, value: float) -> str:
        base = "theta_" + "".join(ch if ch.isalnum() else "_" for ch in label)
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        out.parameter(name, value, doc=f"inertial parameter {label} (regressor)")
        pnames.append(name)
        labels.append(label)
        values.append(value)
        return name

    for link in out.links:
        if isinstance(out, SpatialModel):
            for b, body in enumerate(link.bodies):
                tag = f"{link.name}.{body.name or f'body{b}'}"
                m = _value(body.mass, env)
                if m == 0 and not any(_value(v, env) for row in _tensor(body.inertia, env) for v in row):
                    continue      # a massless frame (a URDF's tool or sensor link): nothing to identify
                if m <= 0:
                    raise ModelError(f"link {link.name!r}: body {tag!r} has mass {m}; the regressor's "
                                     "parameterisation c = h/m needs a positive mass")
                c = [_value(v, env) for v in body.com]
                R = _rpy_matrix(*(_value(v, env) for v in body.rpy))
                Ic = _tensor(body.inertia, env)
                RI = [[sum(R[i][k] * Ic[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
                Il = [[sum(RI[i][k] * R[j][k] for k in range(3)) for j in range(3)] for i in range(3)]
                cc = sum(x * x for x in c)
                Io = [[Il[i][j] + m * ((cc if i == j else 0.0) - c[i] * c[j]) for j in range(3)] for i in range(3)]
                sm = new(f"{tag}.m", m)
                sh = [new(f"{tag}.m{ax}", m * c[i]) for i, ax in enumerate("xyz")]
                idx = {"xx": (0, 0), "xy": (0, 1), "xz": (0, 2), "yy": (1, 1), "yz": (1, 2), "zz": (2, 2)}
                si = {k: new(f"{tag}.I{k}", Io[i][j]) for k, (i, j) in idx.items()}
                hh = {(i, j): f"{sh[i]}*{sh[j]}" for i in range(3) for j in range(3)}
                sq = " + ".join(f"{sh[i]}**2" for i in range(3))

                def central(k: str) -> str:
                    i, j = idx[k]
                    if i == j:
                        return f"{si[k]} - ({sq} - {hh[i, i]})/{sm}"
                    return f"{si[k]} + {hh[i, j]}/{sm}"

                body.mass = sm
                body.com = tuple(f"{h}/{sm}" for h in sh)
                body.inertia = tuple(central(k) for k in ("xx", "xy", "xz", "yy", "yz", "zz"))
                body.rpy = (0.0, 0.0, 0.0)
        for seg in link.segments:
            for j, pm in enumerate(seg.masses):
                pm.mass = new(f"{seg.name}.{pm.name or f'mass{j}'}.m", _value(pm.mass, env))
            for j, rod in enumerate(seg.rods):
                tag = f"{seg.name}.{rod.name or f'rod{j}'}"
                m = _value(rod.mass, env)
                if rod.inertia is None:
                    length = _value(rod.length if rod.length is not None else seg.length, env)
                    inertia = m * length ** 2 / 12
                else:
                    inertia = _value(rod.inertia, env)
                rod.mass = new(f"{tag}.m", m)
                rod.inertia = new(f"{tag}.I", inertia)
    return out, pnames, labels, values


def regressor(model: Any, method: str = "recursive") -> Regressor:
    """The regressor ``Y`` and the inertial parameters θ of ``model`` (planar or spatial, fixed base):
    ``M(q) q̈ + h(q, q̇) + G(q) = Y(q, q̇, q̈) θ``. See the module's docstring for θ."""
    from . import derive
    from .derivative import forward_derivatives

    if not hasattr(model, "links") or not hasattr(model, "parameter"):
        raise ModelError(f"regressor() takes a model (rodgen.Model, rodgen.SpatialModel or rodgen.load(...)), "
                         f"got {type(model).__name__}")
    if getattr(model, "base", "fixed") != "fixed":
        raise ModelError(f"model {model.name!r}: the regressor is available for a fixed base only")
    copy_, pnames, labels, values = parameterized(model)
    eqs = derive(copy_, method)
    theta = {s.name: s for s in eqs.params}
    tsyms = [theta[n] for n in pnames]
    # the inertial part only (springs, dampers, force elements and inputs carry no θ)
    if eqs.inverse is None:
        inertial, extra = eqs.M * sp.Matrix(eqs.qdd) + eqs.h + eqs.G, []
    else:
        inertial, extra = eqs.inverse, list(eqs.inverse_assignments)
    assignments, rows = forward_derivatives(eqs.assignments + extra, list(inertial), tsyms, prefix="_y")
    own = [s for s in eqs.params if s.name not in set(pnames)]
    return Regressor(labels, values, list(eqs.q), list(eqs.qd), list(eqs.qdd), own,
                     [float(eqs.param_values[s]) for s in own], assignments, rows, tsyms)


__all__ = ["Regressor", "regressor", "parameterized", "numeric_regressor", "attach_regressor"]


def numeric_regressor(reg: Regressor) -> Any:
    """``Y(q, qd, qdd)`` of a :class:`Regressor` as a NumPy function (the straight-line code evaluated
    without compiling, as :func:`rodgen.modes` evaluates a model's equations); returns an
    ``(nq, len(reg.names))`` array."""
    import numpy as np

    from .numeric import ChainModel

    f = ChainModel._lam((reg.q, reg.qd, reg.qdd, reg.params + reg.theta), [x for r in reg.Y for x in r],
                        reg.assignments)
    p = np.array(reg.param_values + reg.values, dtype=float)
    n, k = len(reg.q), len(reg.names)

    def Y(q: Any, qd: Any, qdd: Any) -> Any:
        return np.array(f(np.asarray(q, float), np.asarray(qd, float), np.asarray(qdd, float), p),
                        dtype=float).reshape(n, k)

    return Y


def attach_regressor(eqs: Any, model: Any) -> Any:
    """``eqs`` (the Equations of ``model``) with its :attr:`~rodgen.symbolic.Equations.regressor` set: the
    regressor of ``model`` (the builder model the equations were derived from), for
    ``CodegenOptions(regressor=True)``."""
    reg = regressor(model, str(getattr(eqs.method, "value", eqs.method)))
    out = copy.copy(eqs)
    out.regressor = reg
    return out
