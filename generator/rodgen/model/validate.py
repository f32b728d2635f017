"""Validation of a Model: names, topology, expressions, values.

Called by :meth:`Model.validate`. Reads the mutable :class:`Model` and
returns a new :class:`~rodgen.model.valid.ValidModel`; the Model is left as
it was. Every error is a :class:`ModelError` that names the source file (if
any), the place (link, segment, field) and what was expected.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Callable, Optional, Protocol, TypeVar

from ..errors import ModelError
from .core import (
    ANGLE_CONVENTIONS,
    BASES,
    FORCE_FIELDS,
    FORCE_FRAMES,
    FORCE_TYPES,
    Contact,
    Force,
    Friction,
    Ground,
    Joint,
    Link,
    Loop,
    Marker,
    Model,
    Parameter,
    PointMass,
    Rod,
    Segment,
    Spring,
    check_name,
    default_angle_coordinate,
    default_force,
    default_length_coordinate,
    default_torque,
    is_finite_number,
)
from .expr import Expression, ExpressionError, as_expression
from .suggest import did_you_mean
from .valid import (
    SEGMENT_KINDS,
    Bounds,
    Extension,
    ValidContact,
    ValidForce,
    ValidFriction,
    ValidGround,
    ValidJoint,
    ValidLink,
    ValidLoop,
    ValidMarker,
    ValidModel,
    ValidParameter,
    ValidPointMass,
    ValidRod,
    ValidSegment,
    ValidSpring,
)


class _Ctx:
    def __init__(self, model: Model) -> None:
        self.model = model
        self.src = model.source
        self.params: dict[str, float] = {}

    def err(self, msg: str, where: Optional[str]) -> ModelError:
        return ModelError(msg, source=self.src, where=where)

    def parse(self, value: object, where: str, what: str = "an arithmetic expression") -> Expression:
        """Type check and parse a field (no name or value checks)."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str, Expression)):
            raise self.err(f"expected a number or {what}, got {type(value).__name__} {value!r}", where)
        try:
            return as_expression(value)
        except ExpressionError as exc:
            raise self.err(str(exc), where) from None

    def expr(self, value: object, where: str, *, positive: bool = False, nonneg: bool = False) -> Expression:
        ex = self.parse(value, where)
        unknown = [n for n in ex.names if n not in self.params]
        if unknown:
            raise self.err(f"parameter {unknown[0]!r} is used but never defined{did_you_mean(unknown[0], self.params)}"
                           + (f" (defined: {', '.join(self.params)})" if self.params else
                              " (the model defines no parameters)"), where)
        try:
            val = ex.evaluate(self.params)
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise self.err(f"{ex.text!r} cannot be evaluated with the default parameters ({exc})", where) \
                from None
        if val != val or val in (float("inf"), float("-inf")):
            raise self.err(f"{ex.text!r} is not finite with the default parameters", where)
        if positive and not val > 0:
            raise self.err(f"must be positive, got {ex.text} = {val:g}", where)
        if nonneg and not val >= 0:
            raise self.err(f"must not be negative, got {ex.text} = {val:g}", where)
        return ex


def _typed(ctx: _Ctx, obj: object, cls: type, where: str) -> None:
    if not isinstance(obj, cls):
        raise ctx.err(f"expected a {cls.__name__}, got {type(obj).__name__}", where)


def _text(ctx: _Ctx, value: object, where: str) -> str:
    """A free text field (a model's ``doc``, a parameter's ``unit`` and ``doc``): a string."""
    if not isinstance(value, str):
        raise ctx.err(f"expected text (a string), got {type(value).__name__}", where)
    return value


class _TreeLink(Protocol):
    name: str
    parent: Optional[str]


_L = TypeVar("_L", bound=_TreeLink)


def _order_links(ctx: _Ctx, model_links: Sequence[_L], names: Mapping[str, _L]) -> list[_L]:
    """Check that every parent names a link and that the links form no cycle; return them
    parents before children, otherwise in their given order. Shared by the planar and spatial checks."""
    for lk in model_links:
        if lk.parent is not None and lk.parent not in names:
            raise ctx.err(f"unknown parent {lk.parent!r}{did_you_mean(lk.parent, names)} (links: {', '.join(names)})",
                          f"link {lk.name!r}.parent")
    acyclic: set[str] = set()     # links whose way to the root is known to end there
    for lk in model_links:
        path = [lk.name]
        on_path = {lk.name}
        cur = lk
        while cur.parent is not None and cur.name not in acyclic:
            if cur.parent in on_path:
                cycle = " -> ".join(path[path.index(cur.parent):] + [cur.parent])
                raise ctx.err(f"links form a cycle: {cycle}", f"link {lk.name!r}.parent")
            path.append(cur.parent)
            on_path.add(cur.parent)
            cur = names[cur.parent]
        acyclic.update(path)
    # the first link in the given order whose parent is placed, again and again (a heap of given positions)
    children: dict[Optional[str], list[int]] = {}
    for i, lk in enumerate(model_links):
        children.setdefault(lk.parent, []).append(i)
    ordered: list[_L] = []
    ready = list(children.get(None, []))
    heapq.heapify(ready)
    while ready:
        lk = model_links[heapq.heappop(ready)]
        ordered.append(lk)
        for i in children.get(lk.name, []):
            heapq.heappush(ready, i)
    return ordered


def validate_model(model: Model) -> ValidModel:
    """Check ``model`` and return its :class:`ValidModel`; ``model`` itself is not changed."""
    ctx = _Ctx(model)
    doc = _text(ctx, model.doc, "doc")
    check_name(model.name, "model name", "name", model.source)
    if model.base not in BASES:
        raise ctx.err(f"base must be one of {', '.join(BASES)}, got {model.base!r}", "base")

    # parameters first: expressions refer to them
    seen: dict[str, str] = {}

    def claim(name: object, what: str, where: str) -> str:
        nm = check_name(name, what, where, model.source)
        if nm in seen:
            raise ctx.err(f"{what} {nm!r} has the same name as {seen[nm]}", where)
        seen[nm] = f"{what} ({where})"
        return nm

    parameters: list[ValidParameter] = []
    for i, par in enumerate(model.parameters):
        where = f"parameters[{i}]"
        _typed(ctx, par, Parameter, where)
        claim(par.name, "parameter", f"parameters.{par.name}")
        if not is_finite_number(par.value):
            raise ctx.err(f"value must be a finite number, got {par.value!r}", f"parameters.{par.name}")
        ctx.params[par.name] = float(par.value)
        pw = f"parameters.{par.name}"
        unit, pdoc = _text(ctx, par.unit, f"{pw}.unit"), _text(ctx, par.doc, f"{pw}.doc")
        parameters.append(ValidParameter(par.name, float(par.value), unit, pdoc))

    if not isinstance(model.gravity, (tuple, list)) or len(model.gravity) != 2:
        raise ctx.err(f"gravity must have two components [gx, gy], got {type(model.gravity).__name__}"
                      if not isinstance(model.gravity, (tuple, list)) else
                      "gravity must have two components [gx, gy]", "gravity")
    gravity = (ctx.expr(model.gravity[0], "gravity[0]"), ctx.expr(model.gravity[1], "gravity[1]"))

    base_coordinates = tuple(model.base_coordinates)
    if model.base == "floating":
        if len(base_coordinates) != 2:
            raise ctx.err("base_coordinates must name two coordinates", "base_coordinates")
        for nm in base_coordinates:
            claim(nm, "base coordinate", "base_coordinates")
    if not isinstance(model.base_initial, (tuple, list)) or len(model.base_initial) != 2:
        raise ctx.err("base_initial must be [x, y]", "base_initial")
    base_initial = (ctx.expr(model.base_initial[0], "base_initial[0]"),
                    ctx.expr(model.base_initial[1], "base_initial[1]"))
    if model.base == "fixed" and any(v.evaluate(ctx.params) != 0 for v in base_initial):
        raise ctx.err("base_initial applies to a floating base only", "base_initial")

    if not model.links:
        raise ctx.err("the model has no links", "links")

    names: dict[str, Link] = {}
    for i, lk in enumerate(model.links):
        _typed(ctx, lk, Link, f"links[{i}]")
        check_name(lk.name, "link name", f"links[{i}]", model.source)
        if lk.name in names:
            raise ctx.err(f"duplicate link name {lk.name!r}", f"link {lk.name!r}")
        names[lk.name] = lk

    # topology: parents exist, no cycles; order parents before children (stable)
    ordered = _order_links(ctx, model.links, names)

    seg_names: dict[str, str] = {}
    links: list[ValidLink] = []
    for lk in ordered:
        lw = f"link {lk.name!r}"
        if lk.angle not in ANGLE_CONVENTIONS:
            raise ctx.err(f"angle must be 'absolute' or 'relative', got {lk.angle!r}", f"{lw}.angle")
        coordinate = claim(lk.coordinate if lk.coordinate is not None else
                           default_angle_coordinate(lk.name, lk.angle), "coordinate", f"{lw}.coordinate")
        offset = ctx.expr(lk.offset, f"{lw}.offset")
        initial = ctx.expr(lk.initial, f"{lw}.initial")
        if not isinstance(lk.origin, (tuple, list)) or len(lk.origin) != 2:
            raise ctx.err("origin must be [x, y]", f"{lw}.origin")
        if lk.parent is not None and any(ctx.expr(c, f"{lw}.origin").evaluate(ctx.params) != 0
                                         for c in lk.origin):
            raise ctx.err("origin applies to links on the ground or base only; use 'at' for a child link",
                          f"{lw}.origin")
        origin = (ctx.expr(lk.origin[0], f"{lw}.origin[0]"), ctx.expr(lk.origin[1], f"{lw}.origin[1]"))
        _typed(ctx, lk.joint, Joint, f"{lw}.joint")
        jt = lk.joint
        actuated = jt.actuated
        if actuated is None:
            # a torque at a joint on a floating base pushes against nothing: opt in only
            actuated = not (model.base == "floating" and lk.parent is None) or jt.torque is not None
        if not isinstance(actuated, bool):
            raise ctx.err(f"actuated must be true or false, got {actuated!r}", f"{lw}.joint.actuated")
        torque = None
        if actuated:
            torque = claim(jt.torque if jt.torque is not None else default_torque(lk.name), "input",
                           f"{lw}.joint.torque")
        spring, damping = _spring_damper(ctx, jt, f"{lw}.joint")
        joint = ValidJoint(torque, spring, damping, _friction(ctx, jt.friction, f"{lw}.joint.friction"))
        link_limits = _limits(ctx, lk.limits, f"{lw}.limits")
        if not isinstance(lk.segments, list) or not lk.segments:
            raise ctx.err("a link needs at least one segment", f"{lw}.segments")
        segments: list[ValidSegment] = []
        for j, sg in enumerate(lk.segments):
            segments.append(validate_segment(ctx, sg, j, lw, lk.name, seg_names, claim))
        seg_of = {sg.name for sg in lk.segments}
        markers: list[ValidMarker] = []
        for k, mk in enumerate(lk.markers):
            mw = f"{lw}.markers[{k}]"
            _typed(ctx, mk, Marker, mw)
            claim(mk.name, "marker", mw)
            if mk.segment is not None and mk.segment not in seg_of:
                raise ctx.err(f"unknown segment {mk.segment!r}{did_you_mean(mk.segment, seg_of)} "
                              f"(segments of {lk.name!r}: {', '.join(seg_of)})",
                              f"{mw}.segment")
            fraction, koff, lateral = _station(ctx, mk, mw)
            if mk.segment is None and fraction.evaluate(ctx.params) != 0:
                raise ctx.err("fraction needs a segment; give offset along the link instead", f"{mw}.fraction")
            markers.append(ValidMarker(mk.name, mk.segment, fraction, koff, lateral))
        links.append(ValidLink(lk.name, tuple(segments), lk.parent, lk.at, origin, lk.angle, coordinate, offset,
                               initial, joint, tuple(markers), link_limits))

    # attachment points of children
    for lk in model.links:
        if lk.parent is None:
            continue
        up = names[lk.parent]
        valid = {"end", "start"} | {s.name for s in up.segments} | {m.name for m in up.markers}
        if not isinstance(lk.at, str) or lk.at not in valid:
            raise ctx.err(f"unknown attachment point {lk.at!r} on parent {up.name!r}{did_you_mean(lk.at, valid)} "
                          f"(use 'end', 'start', a segment or a marker of {up.name!r}: "
                          f"{', '.join(sorted(valid))})", f"link {lk.name!r}.at")

    out = ValidModel(name=model.name, links=tuple(links), parameters=tuple(parameters), gravity=gravity,
                     base=model.base, base_coordinates=(base_coordinates[0], base_coordinates[1]),
                     base_initial=base_initial, ground=ValidGround(*_ground(ctx, model)),
                     doc=doc, source=model.source)
    couplings = _couplings(ctx, model, out)
    contacts, loops = _constraints(ctx, model, out)
    forces = _forces(ctx, model, out, claim)
    return ValidModel(name=out.name, links=out.links, parameters=out.parameters, gravity=out.gravity,
                      base=out.base, base_coordinates=out.base_coordinates, base_initial=out.base_initial,
                      ground=out.ground, contacts=contacts, loops=loops, forces=forces,
                      couplings=MappingProxyType(couplings), doc=out.doc, source=out.source)


def validate_segment(ctx: _Ctx, sg: Segment, j: int, lw: str, lk_name: str, seg_names: dict[str, str],
                     claim: Callable[[object, str, str], str]) -> ValidSegment:
    """Check segment ``j`` of a link (``lw`` names the link for messages) and return its ValidSegment;
    ``seg_names`` maps the segment names seen so far to their links."""
    _typed(ctx, sg, Segment, f"{lw}.segments[{j}]")
    check_name(sg.name, "segment name", f"{lw}.segments[{j}]", ctx.src)
    if sg.name in seg_names:
        raise ctx.err(f"duplicate segment name {sg.name!r} (also in link {seg_names[sg.name]!r})",
                      f"{lw}.segments[{j}]")
    seg_names[sg.name] = lk_name
    sw = f"{lw}, segment {sg.name!r}"
    kind = _segment_kind(ctx, sg, sw)
    length = ctx.expr(sg.length, f"{sw}.length", positive=True)
    extension = None
    if kind != "rigid":
        seg_coordinate = claim(sg.coordinate if sg.coordinate is not None else
                               default_length_coordinate(sg.name), "coordinate", f"{sw}.coordinate")
        force = None
        if sg.actuated:
            force = claim(sg.force if sg.force is not None else default_force(sg.name), "input",
                          f"{sw}.force")
        seg_spring, seg_damping = _spring_damper(ctx, sg, sw)
        extension = Extension(seg_coordinate, force, seg_spring, seg_damping,
                              _limits(ctx, sg.limits, f"{sw}.limits"),
                              _friction(ctx, sg.friction, f"{sw}.friction"))
    else:
        for fld in ("spring", "damping", "limits", "friction"):
            if getattr(sg, fld) is not None:
                raise ctx.err(f"{fld} needs a variable segment (this one is rigid)", f"{sw}.{fld}")
    masses: list[ValidPointMass] = []
    for k, pm in enumerate(sg.masses):
        mw = f"{sw}.masses[{k}]"
        _typed(ctx, pm, PointMass, mw)
        mass = ctx.expr(pm.mass, f"{mw}.mass", positive=True)
        fraction, moff, lateral = _station(ctx, pm, mw)
        if pm.name is not None:
            claim(pm.name, "point name", f"{mw}.name")
        masses.append(ValidPointMass(mass, fraction, moff, lateral, pm.name))
    rods: list[ValidRod] = []
    for k, rd in enumerate(sg.rods):
        rw = f"{sw}.rods[{k}]"
        _typed(ctx, rd, Rod, rw)
        mass = ctx.expr(rd.mass, f"{rw}.mass", positive=True)
        if rd.length is None:
            if kind != "rigid" and rd.inertia is None:
                raise ctx.err("a rod on a variable segment needs its own length or inertia", rw)
            rod_length = length
        else:
            rod_length = ctx.expr(rd.length, f"{rw}.length", nonneg=True)
        inertia = ctx.expr(rd.inertia if rd.inertia is not None else
                           as_expression(f"({mass.text})*({rod_length.text})**2/12"),
                           f"{rw}.inertia", nonneg=True)
        fraction, roff, lateral = _station(ctx, rd, rw)
        if rd.name is not None:
            claim(rd.name, "point name", f"{rw}.name")
        rods.append(ValidRod(mass, rod_length, inertia, fraction, roff, lateral, rd.name))
    if kind == "telescopic" and len(rods) >= 2:
        _telescopic_fits(ctx, length, rods[0], rods[1], extension, sw)
    return ValidSegment(sg.name, kind, length, tuple(masses), tuple(rods), extension)


#: The name of the time in a point force's expressions.
TIME_NAME = "t"

#: Defaults of the force elements' optional fields.
VELOCITY_SCALE = 0.01
CONTACT_EXPONENT = 1.5


#: The point states a force expression may use, ``<state>_<point>``: the position and the velocity of a
#: named point in the ground frame (a planar model has no z, vz).
POINT_STATES = ("x", "y", "z", "vx", "vy", "vz")


def point_states(points: Mapping[str, str], dim: int) -> dict[str, tuple[str, str]]:
    """The point-state names of a model (``x_<point>`` ... ``vz_<point>`` -> (state, point)); points whose
    names are not identifiers (``<link>.joint``, ``<segment>.end``) have none."""
    kinds = POINT_STATES[:dim] + POINT_STATES[3:3 + dim]
    return {f"{k}_{p}": (k, p) for p in points if p.isidentifier() for k in kinds}


def _forces(ctx: _Ctx, model: Model, vm: ValidModel, claim: Callable[[object, str, str], str]
            ) -> tuple[ValidForce, ...]:
    """The force elements of a planar model (see :func:`check_forces`)."""
    return check_forces(ctx, model.forces, vm.point_links(), [c.name for c in vm.coordinates()], claim, 2,
                        model.source)


def _point_name(name: object, points: dict[str, str]) -> Optional[str]:
    """The point a force element names: one of ``points``, or a link's bare name for its frame
    ``<link>.joint`` (as contacts take it); None if it names none."""
    if not isinstance(name, str):
        return None
    if name in points:
        return name
    return f"{name}.joint" if f"{name}.joint" in points else None


def check_forces(ctx: _Ctx, forces: object, points: dict[str, str], coords: list[str],
                 claim: Callable[[object, str, str], str], dim: int, source: Optional[str]
                 ) -> tuple[ValidForce, ...]:
    """The force elements of a planar (``dim`` 2) or spatial (``dim`` 3) model: names unique among
    themselves, points known (``points``: point name -> its link), vectors of ``dim`` components,
    coefficients finite and not negative."""
    if not isinstance(forces, list):
        raise ctx.err(f"expected a list of force elements, got {type(forces).__name__}", "forces")
    rates = {f"{c}_dot": c for c in coords}
    states = point_states(points, dim)
    axes = "xyz"[:dim]
    vec = "[" + ", ".join(f"f{a}" for a in axes) + "]"
    seen: set[str] = set()
    out: list[ValidForce] = []
    for i, f in enumerate(forces):
        _typed(ctx, f, Force, f"forces[{i}]")
        fw = f"force {f.name!r}" if isinstance(f.name, str) else f"forces[{i}]"
        name = check_name(f.name, "force name", fw, source)
        if name in seen:
            raise ctx.err(f"force name {name!r} is used twice", fw)
        seen.add(name)
        if f.type not in FORCE_TYPES:
            raise ctx.err(f"type must be one of {', '.join(FORCE_TYPES)}, got {f.type!r}", f"{fw}.type")
        at = _point_name(f.at, points)
        if at is None:
            raise ctx.err(f"unknown point {f.at!r}{did_you_mean(str(f.at), points)} (a marker or a mass point: "
                          f"{', '.join(points)})", f"{fw}.at")
        defaults = Force(name, f.type, f.at)
        for fld in ("frame", "force", "inputs", "coefficient", "along", "across", "normal", "velocity_scale",
                    "stiffness", "exponent", "damping", "friction", "b", "rest_length"):
            if fld not in FORCE_FIELDS[f.type] and getattr(f, fld) != getattr(defaults, fld):
                raise ctx.err(f"a {f.type} element takes no {fld!r} (fields: {', '.join(FORCE_FIELDS[f.type])})",
                              f"{fw}.{fld}")
        vf: dict[str, Any] = dict(name=name, type=f.type, point=at, link=points[at])

        def coef(value: object, fld: str, *, positive: bool = False) -> Expression:
            where = f"{fw}.{fld}"
            return ctx.expr(value, where, positive=positive, nonneg=not positive)

        def scale(value: object) -> Expression:
            return coef(VELOCITY_SCALE if value is None else value, "velocity_scale", positive=True)

        if f.type == "point_force":
            if f.frame not in FORCE_FRAMES:
                raise ctx.err(f"frame must be one of {', '.join(FORCE_FRAMES)}, got {f.frame!r}", f"{fw}.frame")
            vf["frame"] = f.frame
            if (f.force is None) == (f.inputs is None or f.inputs is False):
                raise ctx.err(f"give either force: {vec} (expressions) or inputs (true, or {dim} input names)",
                              fw)
            if f.force is not None:
                if not isinstance(f.force, (tuple, list)) or len(f.force) != dim:
                    raise ctx.err(f"force must be {vec}, got {f.force!r}", f"{fw}.force")
                comps = []
                for k, v in enumerate(f.force):
                    where = f"{fw}.force[{k}]"
                    ex = ctx.parse(v, where, "an expression of coordinates, rates, the time t and parameters")
                    for nm in ex.names:
                        if nm == TIME_NAME:
                            if nm in ctx.params or nm in coords:
                                raise ctx.err(f"{nm!r} is the time in a force expression, and also a "
                                              f"{'parameter' if nm in ctx.params else 'coordinate'} of the "
                                              f"model; rename that one", where)
                            continue
                        if nm in ctx.params and (nm in coords or nm in rates or nm in states):
                            raise ctx.err(f"{nm!r} is both a parameter and a coordinate, rate or point state",
                                          where)
                        if nm not in ctx.params and nm not in coords and nm not in rates and nm not in states:
                            known = [*ctx.params, *coords, *rates, *states]
                            raise ctx.err(f"{nm!r} is neither a parameter, a coordinate, a rate "
                                          f"<coordinate>_dot, a point state "
                                          f"({'/'.join(POINT_STATES[:dim] + POINT_STATES[3:3 + dim])}_<point>) nor "
                                          f"the time t{did_you_mean(nm, known)} (coordinates: {', '.join(coords)})",
                                          where)
                    comps.append(ex)
                vf["force"] = tuple(comps)
            else:
                if dim != 2:
                    raise ctx.err("a point force given by inputs is available in planar models only; give force: "
                                  f"{vec} (expressions of q, rates, t and parameters)", f"{fw}.inputs")
                names = (f"{name}_x", f"{name}_y") if f.inputs is True else f.inputs
                if not isinstance(names, (tuple, list)) or len(names) != 2:
                    raise ctx.err(f"inputs must be true or two input names, got {f.inputs!r}", f"{fw}.inputs")
                vf["inputs"] = tuple(claim(nm, "input", f"{fw}.inputs") for nm in names)
        elif f.type in ("viscous", "coulomb"):
            if f.coefficient is not None:
                if f.along is not None or f.across is not None:
                    raise ctx.err("give either coefficient (isotropic) or along and across (anisotropic)",
                                  f"{fw}.coefficient")
                c = coef(f.coefficient, "coefficient")
                vf.update(along=c, across=c, isotropic=True)
            else:
                for fld in ("along", "across"):
                    if getattr(f, fld) is None:
                        raise ctx.err(f"missing {fld!r}: give coefficient (isotropic) or along and across",
                                      f"{fw}.{fld}")
                vf.update(along=coef(f.along, "along"), across=coef(f.across, "across"))
            if f.type == "coulomb":
                if f.normal is None:
                    raise ctx.err("missing 'normal' (the normal load, N)", f"{fw}.normal")
                vf.update(normal=coef(f.normal, "normal"), velocity_scale=scale(f.velocity_scale))
        elif f.type == "spring_damper":
            b = _point_name(f.b, points)
            if b is None:
                raise ctx.err(f"unknown point {f.b!r}{did_you_mean(str(f.b), points)} (a marker or a mass point: "
                              f"{', '.join(points)})", f"{fw}.b")
            if b == at:
                raise ctx.err("a spring-damper needs two different points", f"{fw}.b")
            if f.stiffness is None:
                raise ctx.err("missing 'stiffness'", f"{fw}.stiffness")
            vf.update(b=b, stiffness=coef(f.stiffness, "stiffness"),
                      damping=coef(0.0 if f.damping is None else f.damping, "damping"),
                      rest_length=coef(0.0 if f.rest_length is None else f.rest_length, "rest_length"))
        else:
            if f.stiffness is None:
                raise ctx.err("missing 'stiffness'", f"{fw}.stiffness")
            exponent = coef(CONTACT_EXPONENT if f.exponent is None else f.exponent, "exponent")
            if not exponent.evaluate(ctx.params) >= 1:
                raise ctx.err(f"must be at least 1 (the force's derivative is unbounded at touchdown below 1), "
                              f"got {exponent.text}", f"{fw}.exponent")
            vf.update(stiffness=coef(f.stiffness, "stiffness", positive=True), exponent=exponent,
                      damping=coef(0.0 if f.damping is None else f.damping, "damping"),
                      friction=coef(0.0 if f.friction is None else f.friction, "friction"),
                      velocity_scale=scale(f.velocity_scale))
        out.append(ValidForce(**vf))
    return tuple(out)


def _telescopic_fits(ctx: _Ctx, length: Expression, outer: ValidRod, inner: ValidRod,
                     extension: Optional[Extension], where: str) -> None:
    """A telescopic segment's sections fit its length: the inner section (fixed to the distal end) must not
    reach behind the segment's start, and the two must overlap, at the initial length and at the limits."""
    lo_in, hi_both = inner.length.evaluate(ctx.params), (outer.length.evaluate(ctx.params)
                                                         + inner.length.evaluate(ctx.params))
    lengths = [("length", length.evaluate(ctx.params), length.text)]
    if extension is not None and extension.limits is not None:
        for side, bound in zip(("lower limit", "upper limit"), extension.limits):
            if bound is not None:
                lengths.append((side, bound.evaluate(ctx.params), bound.text))
    def shown(text: str, value: float) -> str:
        return text if text == f"{value:g}" else f"{text} = {value:g}"

    for what, value, text in lengths:
        field = f"{where}.{'length' if what == 'length' else 'limits'}"
        if value < lo_in:
            raise ctx.err(f"the {what} {shown(text, value)} is shorter than the inner section (length "
                          f"{shown(inner.length.text, lo_in)}), which would reach behind the segment's start", field)
        if value > hi_both:
            raise ctx.err(f"at the {what} {shown(text, value)} the sections no longer overlap (outer "
                          f"{outer.length.text} + inner {inner.length.text} = {hi_both:g})", field)


def _segment_kind(ctx: _Ctx, sg: Segment, where: str) -> str:
    """The segment's kind: ``kind`` as given, ``"variable"`` for ``variable=True`` with the default kind."""
    if sg.kind not in SEGMENT_KINDS:
        raise ctx.err(f"kind must be one of {', '.join(SEGMENT_KINDS)}, got {sg.kind!r}", f"{where}.kind")
    if not isinstance(sg.variable, bool):
        raise ctx.err(f"variable must be true or false, got {sg.variable!r}", f"{where}.variable")
    if sg.kind == "rigid":
        return "variable" if sg.variable else "rigid"
    if not sg.variable:
        raise ctx.err(f"a {sg.kind} segment has a length coordinate; it cannot have variable=False",
                      f"{where}.variable")
    return sg.kind


def _limits(ctx: _Ctx, limits: object, where: str) -> Bounds:
    """``[lower, upper]`` (either may be None): expressions with lower < upper at the default parameters."""
    if limits is None:
        return None
    if not isinstance(limits, (tuple, list)) or len(limits) != 2:
        raise ctx.err(f"limits must be [lower, upper] (null for no bound on a side), got {limits!r}", where)
    lo, hi = (None if v is None else ctx.expr(v, f"{where}[{i}]") for i, v in enumerate(limits))
    if lo is None and hi is None:
        return None
    if lo is not None and hi is not None:
        vlo, vhi = lo.evaluate(ctx.params), hi.evaluate(ctx.params)
        if not vlo < vhi:
            raise ctx.err(f"lower limit {lo.text} = {vlo:g} must be below upper limit {hi.text} = {vhi:g}", where)
    return (lo, hi)


def _friction(ctx: _Ctx, friction: object, where: str) -> Optional[ValidFriction]:
    """Dry friction with stiction: ``static`` and ``kinetic`` (default: ``static``) finite, non-negative,
    kinetic <= static at the default parameters."""
    if friction is None:
        return None
    if isinstance(friction, Mapping):
        unknown = sorted(set(friction) - {"static", "kinetic"})
        if unknown:
            raise ctx.err(f"unknown field {unknown[0]!r} (friction takes static and kinetic)", where)
        if "static" not in friction:
            raise ctx.err("friction needs its static limit (static: ...)", where)
        friction = Friction(friction["static"], friction.get("kinetic"))
    if not isinstance(friction, Friction):
        raise ctx.err(f"expected a Friction or a mapping {{static: ..., kinetic: ...}}, got "
                      f"{type(friction).__name__}", where)
    static = ctx.expr(friction.static, f"{where}.static", nonneg=True)
    kinetic = static if friction.kinetic is None else ctx.expr(friction.kinetic, f"{where}.kinetic", nonneg=True)
    vs, vk = static.evaluate(ctx.params), kinetic.evaluate(ctx.params)
    if not vk <= vs:
        raise ctx.err(f"the kinetic friction {kinetic.text} = {vk:g} exceeds the static limit {static.text} = "
                      f"{vs:g}; stiction needs kinetic <= static", f"{where}.kinetic")
    return ValidFriction(static, kinetic)


def _ground(ctx: _Ctx, model: Model) -> tuple[Expression, Expression]:
    _typed(ctx, model.ground, Ground, "ground")
    return ctx.expr(model.ground.slope, "ground.slope"), ctx.expr(model.ground.height, "ground.height")


class _ConstraintOwner(Protocol):
    contacts: Any
    loops: Any
    source: Optional[str]


class _BlockTree(Protocol):
    def limits(self) -> list[Any]: ...

    def frictions(self) -> list[Any]: ...


def check_constraints(ctx: _Ctx, model: _ConstraintOwner, vm: _BlockTree, field: str,
                      place: Callable[[object, str], str], loop_rows: Callable[[Loop, str, str, str], int],
                      contact_rows: Callable[[Contact, str], int]
                      ) -> tuple[tuple[ValidContact, ...], tuple[ValidLoop, ...]]:
    """Contacts and loops of either kind of model, and the names of every constraint block (contacts, loops,
    limits and frictions share one namespace). ``field`` names a contact's place (``marker`` in a planar
    model, ``frame`` in a spatial one), ``place(name, where)`` checks one and returns its name;
    ``loop_rows(loop, a, b, where)`` checks what a loop between two different places needs in its kind of
    model and returns its rows; ``contact_rows(contact, where)`` a contact's rows."""
    blocks: dict[str, str] = {}

    def block(name: object, what: str, where: str) -> str:
        nm = check_name(name, f"{what} name", where, model.source)
        if nm in blocks:
            raise ctx.err(f"{what} name {nm!r} is already used by {blocks[nm]}", where)
        blocks[nm] = f"{what} {nm!r}"
        return nm

    if not isinstance(model.contacts, list):
        raise ctx.err(f"expected a list of contacts, got {type(model.contacts).__name__}", "contacts")
    contacts: list[ValidContact] = []
    for i, c in enumerate(model.contacts):
        _typed(ctx, c, Contact, f"contacts[{i}]")
        cw = f"contact {c.name!r}" if isinstance(c.name, str) else f"contacts[{i}]"
        name = block(c.name, "contact", cw)
        at = place(c.marker if c.marker is not None else name, f"{cw}.{field}")
        rows = contact_rows(c, f"{cw}.rows")
        contacts.append(ValidContact(name, at, ctx.expr(c.friction, f"{cw}.friction", nonneg=True), rows,
                                     _sole(ctx, getattr(c, "sole", None), rows, f"{cw}.sole")))
    if not isinstance(model.loops, list):
        raise ctx.err(f"expected a list of loops, got {type(model.loops).__name__}", "loops")
    loops: list[ValidLoop] = []
    for i, lp in enumerate(model.loops):
        _typed(ctx, lp, Loop, f"loops[{i}]")
        lw = f"loop {lp.name!r}" if isinstance(lp.name, str) else f"loops[{i}]"
        name = block(lp.name, "loop", lw)
        a, b = place(lp.a, f"{lw}.a"), place(lp.b, f"{lw}.b")
        if a == b:
            raise ctx.err(f"a loop needs two different {field}s, got {a!r} twice", f"{lw}.b")
        loops.append(ValidLoop(name, a, b, loop_rows(lp, a, b, lw)))
    for lim in vm.limits():
        where = f"link {lim.link!r}" + (f", segment {lim.segment!r}" if lim.segment else "") + ".limits"
        block(lim.name, "limit", where)
    for fr in vm.frictions():
        where = f"link {fr.link!r}" + (f", segment {fr.segment!r}.friction" if fr.segment else ".joint.friction")
        block(fr.name, "friction", where)
    return tuple(contacts), tuple(loops)


def _sole(ctx: _Ctx, sole: object, rows: int, where: str) -> Optional[tuple[float, float, float, float]]:
    """A flat foot's sole (x_min, x_max, y_min, y_max): four finite numbers, each minimum below its maximum."""
    if sole is None:
        return None
    if rows != 6:
        raise ctx.err(f"a sole belongs to a flat foot (rows: 6); this contact has {rows} rows", where)
    if (not isinstance(sole, (list, tuple)) or len(sole) != 4
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in sole)):
        raise ctx.err(f"a sole is four finite numbers [x_min, x_max, y_min, y_max] (metres, in the frame's "
                      f"tangential axes), got {sole!r}", where)
    x0, x1, y0, y1 = (float(x) for x in sole)
    if not (x0 < x1 and y0 < y1):
        raise ctx.err(f"a sole needs x_min < x_max and y_min < y_max, got {list(sole)!r}", where)
    return (x0, x1, y0, y1)


def _constraints(ctx: _Ctx, model: Model, vm: ValidModel) -> tuple[tuple[ValidContact, ...], tuple[ValidLoop, ...]]:
    """Contacts and loops of a planar model, at markers (:func:`check_constraints`)."""
    markers = vm.markers()
    known = f"markers: {', '.join(markers)}" if markers else "the model has no markers; add one to a link"

    def marker(name: object, where: str) -> str:
        if not isinstance(name, str) or name not in markers:
            raise ctx.err(f"unknown marker {name!r}{did_you_mean(name, markers)} ({known})", where)
        return name

    def loop_rows(lp: Loop, a: str, b: str, lw: str) -> int:
        (la, ma), (lb, mb) = markers[a], markers[b]
        if la is lb and _stretch(ctx, la, ma) == _stretch(ctx, lb, mb):
            raise ctx.err(f"markers {a!r} and {b!r} are on one rigid part of link {la.name!r}: their "
                          f"distance never changes, so the loop is either always closed or never; join markers "
                          f"of different links", lw)
        if getattr(lp, "rows", None) not in (None, 2):
            raise ctx.err(f"a loop of a planar model has 2 rows (the markers coincide), got rows = {lp.rows!r}",
                          f"{lw}.rows")
        return 2

    def contact_rows(c: Contact, where: str) -> int:
        if c.rows is not None and (isinstance(c.rows, bool) or c.rows != 2):
            raise ctx.err(f"a planar contact has 2 rows (along the ground, the gap), got rows = {c.rows!r}", where)
        return 2

    return check_constraints(ctx, model, vm, "marker", marker, loop_rows, contact_rows)


def _stretch(ctx: _Ctx, lk: ValidLink, mk: ValidMarker) -> tuple[float, ...]:
    """How a marker's distance from its link's hinge depends on the link's variable lengths (coefficients);
    two markers of one link with equal coefficients keep a constant distance."""
    idx = None if mk.segment is None else [s.name for s in lk.segments].index(mk.segment)
    out: list[float] = []
    for k, sg in enumerate(lk.segments):
        if not sg.variable:
            continue
        if idx is None or k > idx:
            out.append(0.0)
        elif k < idx:
            out.append(1.0)
        else:
            out.append(round(mk.fraction.evaluate(ctx.params), 12))
    return tuple(out)


def _couplings(ctx: _Ctx, model: Model, vm: ValidModel) -> dict[str, Expression]:
    """Couplings: each target is a coordinate; expressions use independent coordinates and parameters."""
    if not isinstance(model.couplings, dict):
        raise ctx.err(f"expected a mapping coordinate: expression, got {type(model.couplings).__name__}",
                      "couplings")
    if not model.couplings:
        return {}
    initial: dict[str, float] = {}
    for c in vm.coordinates():
        initial[c.name] = 0.0 if c.kind == "base" else c.initial.evaluate(ctx.params)
    coords = list(initial)
    for target in model.couplings:
        if not isinstance(target, str) or target not in initial:
            raise ctx.err(f"{target!r} is not a coordinate of the model (coordinates: {', '.join(coords)})",
                          f"couplings.{target}")
    if len(model.couplings) >= len(coords):
        raise ctx.err("every coordinate is coupled; at least one must stay independent", "couplings")
    checked: dict[str, Expression] = {}
    for target, value in model.couplings.items():
        where = f"couplings.{target}"
        ex = ctx.parse(value, where, "an expression of coordinates and parameters")
        for nm in ex.names:
            if nm in model.couplings:
                how = "itself" if nm == target else f"{nm!r}, which is itself coupled"
                raise ctx.err(f"{target!r} is coupled to {how}; write it in terms of independent "
                              f"coordinates only (chains and cycles of couplings are not allowed)", where)
            if nm not in initial and nm not in ctx.params:
                raise ctx.err(f"{nm!r} is neither a coordinate nor a parameter (coordinates: "
                              f"{', '.join(coords)}; parameters: {', '.join(ctx.params) or 'none'})", where)
        try:
            val = ex.evaluate({**ctx.params, **initial})
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise ctx.err(f"{ex.text!r} cannot be evaluated at the initial coordinates ({exc})", where) from None
        if val != val or val in (float("inf"), float("-inf")):
            raise ctx.err(f"{ex.text!r} is not finite at the initial coordinates", where)
        checked[target] = ex
    return checked


def _station(ctx: _Ctx, obj: PointMass | Rod | Marker, where: str) -> tuple[Expression, Expression, Expression]:
    """``(fraction, offset, lateral)`` of a point on a segment."""
    return (ctx.expr(obj.fraction, f"{where}.fraction"), ctx.expr(obj.offset, f"{where}.offset"),
            ctx.expr(obj.lateral, f"{where}.lateral"))


def _spring_damper(ctx: _Ctx, obj: Joint | Segment, where: str) -> tuple[Optional[ValidSpring], Optional[Expression]]:
    spring = damping = None
    if obj.spring is not None:
        _typed(ctx, obj.spring, Spring, f"{where}.spring")
        spring = ValidSpring(ctx.expr(obj.spring.stiffness, f"{where}.spring.stiffness", nonneg=True),
                             ctx.expr(obj.spring.rest, f"{where}.spring.rest"))
    if obj.damping is not None:
        damping = ctx.expr(obj.damping, f"{where}.damping", nonneg=True)
    return spring, damping
