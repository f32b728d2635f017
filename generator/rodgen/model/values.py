"""Checking parameter values given at run time (``p=`` of a simulation, ``--param`` of the command line).

Validation checks a model's masses, lengths and inertias with its default
parameter values; a run may give other values. :func:`check_parameter_values`
evaluates the same fields with the values of the run and refuses a mass or a
segment length that is not positive, a negative rod length, inertia, stiffness,
damping or friction, a kinetic friction above its static limit, and a telescopic
segment whose sections no longer fit, naming the field and the parameters
involved, as validation does.

This module uses no SymPy.
"""
from __future__ import annotations

import math
from typing import Callable, Iterator, Mapping, Optional, Union

from ..errors import ModelError
from .expr import Expression
from .spatial import ValidSpatialModel
from .valid import ValidModel

AnyValidModel = Union[ValidModel, ValidSpatialModel]


def _fields(vm: AnyValidModel) -> Iterator[tuple[str, Expression, str]]:
    """(where, expression, "positive" or "nonneg") of every field with a sign rule, planar or spatial (a
    spatial joint has no dry friction; a spatial link's bodies have a mass and principal moments)."""
    for lk in vm.links:
        lw = f"link {lk.name!r}"
        jt = lk.joint
        if jt.spring is not None:
            yield f"{lw}.joint.spring.stiffness", jt.spring.stiffness, "nonneg"
        if jt.damping is not None:
            yield f"{lw}.joint.damping", jt.damping, "nonneg"
        friction = getattr(jt, "friction", None)
        if friction is not None:
            yield f"{lw}.joint.friction.static", friction.static, "nonneg"
            yield f"{lw}.joint.friction.kinetic", friction.kinetic, "nonneg"
        for k, bd in enumerate(getattr(lk, "bodies", ())):
            bw = f"{lw}, body {bd.name!r}" if bd.name is not None else f"{lw}.bodies[{k}]"
            yield f"{bw}.mass", bd.mass, "nonneg"
            for i, nm in ((0, "ixx"), (3, "iyy"), (5, "izz")):
                yield f"{bw}.inertia.{nm}", bd.inertia[i], "nonneg"
        for sg in lk.segments:
            sw = f"{lw}, segment {sg.name!r}"
            yield f"{sw}.length", sg.length, "positive"
            for k, pm in enumerate(sg.masses):
                yield f"{sw}.masses[{k}].mass", pm.mass, "positive"
            for k, rd in enumerate(sg.rods):
                yield f"{sw}.rods[{k}].mass", rd.mass, "positive"
                yield f"{sw}.rods[{k}].length", rd.length, "nonneg"
                yield f"{sw}.rods[{k}].inertia", rd.inertia, "nonneg"
            ext = sg.extension
            if ext is not None:
                if ext.spring is not None:
                    yield f"{sw}.spring.stiffness", ext.spring.stiffness, "nonneg"
                if ext.damping is not None:
                    yield f"{sw}.damping", ext.damping, "nonneg"
                if ext.friction is not None:
                    yield f"{sw}.friction.static", ext.friction.static, "nonneg"
                    yield f"{sw}.friction.kinetic", ext.friction.kinetic, "nonneg"
    for c in vm.contacts:
        yield f"contact {c.name!r}.friction", c.friction, "nonneg"


def check_parameter_values(model: AnyValidModel, values: Mapping[str, float], *, what: str = "p") -> None:
    """Raise :class:`ModelError` if a field of ``model`` breaks its sign rule with the parameter ``values``
    (name -> value; names not given keep their defaults). ``what`` names where the values came from
    (``"p"``, ``"--param"``) in the message."""
    env = {p.name: p.value for p in model.parameters}
    env.update({k: float(v) for k, v in values.items()})
    changed = {k for k, v in values.items() if k in env and float(v) != model.parameter_values().get(k)}

    def given(ex: Expression) -> str:
        used = [n for n in ex.names if n in changed]
        return f" (with {what}: {', '.join(f'{n} = {env[n]:g}' for n in used)})" if used else ""

    for where, ex, rule in _fields(model):
        try:
            val = ex.evaluate(env)
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise ModelError(f"{ex.text!r} cannot be evaluated{given(ex)} ({exc})", source=model.source,
                             where=where) from None
        if not math.isfinite(val):
            raise ModelError(f"{ex.text!r} is not finite{given(ex)}", source=model.source, where=where)
        if rule == "positive" and not val > 0:
            raise ModelError(f"must be positive, got {ex.text} = {val:g}{given(ex)}", source=model.source,
                             where=where)
        if rule == "nonneg" and not val >= 0:
            raise ModelError(f"must not be negative, got {ex.text} = {val:g}{given(ex)}", source=model.source,
                             where=where)
    _telescopic(model, env, given)
    for fr in model.frictions() if isinstance(model, ValidModel) else ():
        vs, vk = fr.static.evaluate(env), fr.kinetic.evaluate(env)
        if not vk <= vs:
            where = f"link {fr.link!r}" + (f", segment {fr.segment!r}" if fr.segment else ".joint") + ".friction"
            raise ModelError(f"the kinetic friction {fr.kinetic.text} = {vk:g} exceeds the static limit "
                             f"{fr.static.text} = {vs:g}{given(fr.kinetic) or given(fr.static)}; stiction needs "
                             f"kinetic <= static", source=model.source, where=where)


def _telescopic(model: AnyValidModel, env: Mapping[str, float], given: Callable[[Expression], str]) -> None:
    for lk in model.links:
        for sg in lk.segments:
            if sg.kind != "telescopic" or len(sg.rods) < 2:
                continue
            outer, inner = sg.rods[0].length.evaluate(env), sg.rods[1].length.evaluate(env)
            length = sg.length.evaluate(env)
            bounds: list[tuple[str, Optional[Expression]]] = [("length", sg.length)]
            if sg.extension is not None and sg.extension.limits is not None:
                bounds += list(zip(("lower limit", "upper limit"), sg.extension.limits))
            for name, ex in bounds:
                if ex is None:
                    continue
                v = length if name == "length" else ex.evaluate(env)
                where = f"link {lk.name!r}, segment {sg.name!r}.{'length' if name == 'length' else 'limits'}"
                if v < inner:
                    raise ModelError(f"the {name} {v:g} is shorter than the inner section ({inner:g})"
                                     f"{given(sg.rods[1].length) or given(ex)}", source=model.source, where=where)
                if v > outer + inner:
                    raise ModelError(f"at the {name} {v:g} the sections no longer overlap (outer {outer:g} + "
                                     f"inner {inner:g}){given(sg.rods[0].length) or given(ex)}",
                                     source=model.source, where=where)


__all__ = ["check_parameter_values"]
