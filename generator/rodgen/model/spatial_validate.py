"""Validation of a SpatialModel: names, topology, joints, bodies, segments, markers.

Called by :meth:`SpatialModel.validate <rodgen.model.spatial.SpatialModel.validate>`; returns a new
:class:`~rodgen.model.spatial.ValidSpatialModel` and leaves the model as it was. Every error is a
:class:`ModelError` naming the link and field. This module uses no SymPy.
"""
from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any

from .core import Contact, Loop, Parameter, check_name, is_finite_number
from .expr import Expression
from .spatial import (
    JOINT_TYPES,
    LIE_JOINTS,
    TWO_ANGLE_CONVENTIONS,
    Body,
    SpatialGround,
    SpatialJoint,
    SpatialLink,
    SpatialMarker,
    SpatialModel,
    ValidBody,
    ValidSpatialGround,
    ValidSpatialJoint,
    ValidSpatialLink,
    ValidSpatialMarker,
    ValidSpatialModel,
    default_joint_coordinate,
    default_joint_input,
    default_two_angle_coordinates,
    free_coordinates,
    free_velocities,
)
from .suggest import did_you_mean
from .valid import ValidContact, ValidLoop, ValidParameter, ValidSegment
from .validate import (
    _couplings,
    _Ctx,
    _friction,
    _limits,
    _order_links,
    _spring_damper,
    _text,
    _typed,
    check_constraints,
    check_forces,
    validate_segment,
)


def _vec3(ctx: _Ctx, value: object, where: str, *, nonzero: bool = False) -> tuple[Expression, Expression, Expression]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 3:
        raise ctx.err(f"expected three components [x, y, z], got {value!r}", where)
    out = (ctx.expr(value[0], f"{where}[0]"), ctx.expr(value[1], f"{where}[1]"), ctx.expr(value[2], f"{where}[2]"))
    if nonzero and all(c.evaluate(ctx.params) == 0 for c in out):
        raise ctx.err("must not be the zero vector", where)
    return out


def _inertia(ctx: _Ctx, value: object, where: str
             ) -> tuple[Expression, Expression, Expression, Expression, Expression, Expression]:
    """``(ixx, ixy, ixz, iyy, iyz, izz)`` from six values or a symmetric 3x3, positive semidefinite
    (at the default parameters, with a little slack for rounding)."""
    if isinstance(value, (tuple, list)) and len(value) == 3 and all(
            isinstance(r, (tuple, list)) and len(r) == 3 for r in value):
        rows = value
        for a, b in ((0, 1), (0, 2), (1, 2)):
            x, y = ctx.expr(rows[a][b], f"{where}[{a}][{b}]"), ctx.expr(rows[b][a], f"{where}[{b}][{a}]")
            if abs(x.evaluate(ctx.params) - y.evaluate(ctx.params)) > 1e-12 * (1 + abs(x.evaluate(ctx.params))):
                raise ctx.err(f"the inertia tensor must be symmetric: [{a}][{b}] = {x.text} but "
                              f"[{b}][{a}] = {y.text}", where)
        six = [rows[0][0], rows[0][1], rows[0][2], rows[1][1], rows[1][2], rows[2][2]]
    elif isinstance(value, (tuple, list)) and len(value) == 6:
        six = list(value)
    else:
        raise ctx.err(f"expected (ixx, ixy, ixz, iyy, iyz, izz) or a 3x3 matrix, got {value!r}", where)
    xx_, xy_, xz_, yy_, yz_, zz_ = (ctx.expr(v, f"{where}.{nm}")
                                    for v, nm in zip(six, ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")))
    out = (xx_, xy_, xz_, yy_, yz_, zz_)
    xx, xy, xz, yy, yz, zz = (e.evaluate(ctx.params) for e in out)
    scale = max(abs(xx), abs(yy), abs(zz), 1e-300)
    tol = 1e-9 * scale
    if min(xx, yy, zz) < -tol:
        raise ctx.err(f"the moments of inertia must not be negative (ixx={xx:g}, iyy={yy:g}, izz={zz:g})", where)
    if xx + yy < zz - tol or yy + zz < xx - tol or xx + zz < yy - tol:
        raise ctx.err(f"the moments of inertia violate the triangle inequality (ixx={xx:g}, iyy={yy:g}, "
                      f"izz={zz:g}): no rigid body has them", where)
    det = xx * (yy * zz - yz * yz) - xy * (xy * zz - yz * xz) + xz * (xy * yz - yy * xz)
    minors = (xx * yy - xy * xy, yy * zz - yz * yz, xx * zz - xz * xz)
    if min(minors) < -tol * scale or det < -tol * scale * scale:
        raise ctx.err("the inertia tensor is not positive semidefinite", where)
    return out


def _translates_only(parents: dict[str, SpatialLink], name: str | None) -> bool:
    """Whether the frame of link ``name`` keeps the ground's orientation: every joint from the ground down
    to it is prismatic or fixed, with an rpy of literal zeros (Borisov's free base: the base point's
    coordinates x, y, z as prismatic joints, the links after it at absolute angles)."""
    while name is not None:
        up = parents[name]
        if up.joint.type not in ("prismatic", "fixed"):
            return False
        rpy = up.joint.rpy
        if not isinstance(rpy, (tuple, list)) or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v != 0
                                                     for v in rpy):
            return False
        name = up.parent
    return True


def _joint(ctx: _Ctx, lk: SpatialLink, lw: str, claim: Any, parents: dict[str, SpatialLink]) -> ValidSpatialJoint:
    jw = f"{lw}.joint"
    _typed(ctx, lk.joint, SpatialJoint, jw)
    jt = lk.joint
    if jt.type not in JOINT_TYPES:
        raise ctx.err(f"unknown joint type {jt.type!r}{did_you_mean(str(jt.type), JOINT_TYPES)} "
                      f"(types: {', '.join(JOINT_TYPES)})", f"{jw}.type")
    xyz = _vec3(ctx, jt.xyz, f"{jw}.xyz")
    rpy = _vec3(ctx, jt.rpy, f"{jw}.rpy")
    offset = ctx.expr(jt.offset, f"{jw}.offset")
    if not isinstance(jt.actuated, bool):
        raise ctx.err(f"actuated must be true or false, got {jt.actuated!r}", f"{jw}.actuated")
    zero = ctx.expr(0.0, jw)
    axis = (zero, zero, ctx.expr(1.0, jw))
    if jt.type == "fixed":
        for fld in ("coordinate", "coordinates", "spring", "damping", "limits", "input", "friction"):
            if getattr(jt, fld) is not None:
                raise ctx.err(f"a fixed joint has no coordinate: {fld} does not apply", f"{jw}.{fld}")
        return ValidSpatialJoint("fixed", axis, xyz, rpy, (), (), (), offset)
    if jt.type in LIE_JOINTS:
        return _free_joint(ctx, lk, jw, claim, xyz, rpy, offset)
    spring, damping = _spring_damper(ctx, jt, jw)  # type: ignore[arg-type]
    if jt.type == "two_angle":
        if jt.angles not in TWO_ANGLE_CONVENTIONS:
            raise ctx.err(f"angles must be 'absolute' or 'relative', got {jt.angles!r}", f"{jw}.angles")
        if jt.coordinate is not None:
            raise ctx.err("a two-angle link has two coordinates: give 'coordinates' (phi, psi)", f"{jw}.coordinate")
        names = jt.coordinates if jt.coordinates is not None else default_two_angle_coordinates(lk.name)
        if not isinstance(names, (tuple, list)) or len(names) != 2:
            raise ctx.err(f"coordinates must name two coordinates (phi, psi), got {names!r}", f"{jw}.coordinates")
        coords = tuple(claim(nm, "coordinate", f"{jw}.coordinates") for nm in names)
        init = jt.initial if isinstance(jt.initial, (tuple, list)) else (jt.initial, jt.initial)
        if len(init) != 2:
            raise ctx.err(f"initial must give (phi, psi), got {jt.initial!r}", f"{jw}.initial")
        initial = tuple(ctx.expr(v, f"{jw}.initial[{i}]") for i, v in enumerate(init))
        inputs: tuple[str, ...] = ()
        if jt.actuated:
            given = jt.input if jt.input is not None else tuple(f"tau_{c}" for c in coords)
            if not isinstance(given, (tuple, list)) or len(given) != 2:
                raise ctx.err(f"a two-angle link takes two input names, got {given!r}", f"{jw}.input")
            inputs = tuple(claim(nm, "input", f"{jw}.input") for nm in given)
        if jt.limits is not None:
            raise ctx.err("limits apply to one-coordinate joints only", f"{jw}.limits")
        if jt.friction is not None:
            raise ctx.err("dry friction applies to one-coordinate joints only", f"{jw}.friction")
        if spring is not None or damping is not None:
            raise ctx.err("springs and dampers apply to one-coordinate joints only", jw)
        if jt.angles == "absolute":
            if lk.parent is not None:
                up = parents[lk.parent]
                if not (up.joint.type == "two_angle" and up.joint.angles == "absolute") \
                        and not _translates_only(parents, lk.parent):
                    raise ctx.err(f"absolute angles need a parent that is itself an absolute two-angle link "
                                  f"or one that only translates (prismatic and fixed joints without rpy "
                                  f"down from the ground; parent {lk.parent!r} has a {up.joint.type} joint); "
                                  f"use angles='relative'", f"{jw}.angles")
            if any(v.evaluate(ctx.params) != 0 for v in rpy):
                raise ctx.err("a two-angle link with absolute angles takes no rpy", f"{jw}.rpy")
        return ValidSpatialJoint("two_angle", axis, xyz, rpy, coords, inputs, initial, offset,
                                 angles=jt.angles, spring=spring, damping=damping)
    # revolute, prismatic
    if jt.coordinates is not None:
        raise ctx.err(f"a {jt.type} joint has one coordinate: give 'coordinate'", f"{jw}.coordinates")
    axis = _vec3(ctx, jt.axis, f"{jw}.axis", nonzero=True)
    coord = claim(jt.coordinate if jt.coordinate is not None else default_joint_coordinate(lk.name),
                  "coordinate", f"{jw}.coordinate")
    if isinstance(jt.initial, (tuple, list)):
        raise ctx.err(f"initial must be one value, got {jt.initial!r}", f"{jw}.initial")
    initial1 = ctx.expr(jt.initial, f"{jw}.initial")
    inputs = ()
    if jt.actuated:
        if jt.input is not None and not isinstance(jt.input, str):
            raise ctx.err(f"input must be a name, got {jt.input!r}", f"{jw}.input")
        inputs = (claim(jt.input if jt.input is not None else default_joint_input(lk.name, jt.type), "input",
                        f"{jw}.input"),)
    limits = _limits(ctx, jt.limits, f"{jw}.limits")
    effort = None if jt.effort is None else ctx.expr(jt.effort, f"{jw}.effort", nonneg=True)
    velocity = None if jt.velocity is None else ctx.expr(jt.velocity, f"{jw}.velocity", nonneg=True)
    friction = _friction(ctx, jt.friction, f"{jw}.friction")
    return ValidSpatialJoint(jt.type, axis, xyz, rpy, (coord,), inputs, (initial1,), offset, spring=spring,
                             damping=damping, limits=limits, effort=effort, velocity=velocity, friction=friction)


def _free_joint(ctx: _Ctx, lk: SpatialLink, jw: str, claim: Any, xyz: Any, rpy: Any,
                offset: Expression) -> ValidSpatialJoint:
    """A free joint (floating base: the root link only, placed by its coordinates), a spherical or a planar
    joint: no input, the coordinates and velocities of :data:`LIE_JOINTS`."""
    jt = lk.joint
    kind = jt.type
    suffixes, _, default = LIE_JOINTS[kind]
    if kind == "free" and lk.parent is not None:
        raise ctx.err(f"a free joint (floating base) joins the root link to the ground; link {lk.name!r} has the "
                      f"parent {lk.parent!r}", f"{jw}.type")
    for fld in ("coordinate", "coordinates", "spring", "damping", "limits", "input", "effort", "velocity"):
        if getattr(jt, fld) is not None:
            raise ctx.err(f"a {kind} joint has no {fld}", f"{jw}.{fld}")
    if offset.evaluate(ctx.params) != 0:
        raise ctx.err(f"a {kind} joint has no offset", f"{jw}.offset")
    if kind == "free" and any(v.evaluate(ctx.params) != 0 for v in (*xyz, *rpy)):
        raise ctx.err("a free joint is placed by its coordinates: xyz and rpy must be 0", jw)
    init: Any = jt.initial
    if isinstance(init, (int, float)) and init == 0:
        init = default
    if not isinstance(init, (tuple, list)) or len(init) != len(suffixes):
        raise ctx.err(f"the initial configuration of a {kind} joint is [{', '.join(suffixes)}], got {init!r}",
                      f"{jw}.initial")
    initial = tuple(ctx.expr(v, f"{jw}.initial[{i}]") for i, v in enumerate(init))
    if kind != "planar":
        quat = [v.evaluate(ctx.params) for v in initial[-4:]]
        norm = math.sqrt(sum(x * x for x in quat))
        if not norm > 1e-9 or not math.isfinite(norm):
            raise ctx.err(f"the initial quaternion [qx, qy, qz, qw] = {quat} has no direction (norm {norm:g})",
                          f"{jw}.initial")
    coords = tuple(claim(nm, "coordinate", f"{jw}.coordinates") for nm in free_coordinates(lk.name, kind))
    vels = tuple(claim(nm, "velocity", f"{jw}.velocities") for nm in free_velocities(lk.name, kind))
    zero = ctx.expr(0.0, jw)
    return ValidSpatialJoint(kind, (zero, zero, ctx.expr(1.0, jw)), xyz, rpy, coords, (), initial, offset,
                             velocities=vels)


def validate_spatial_model(model: SpatialModel) -> ValidSpatialModel:
    """Check ``model`` and return its :class:`ValidSpatialModel`; ``model`` itself is not changed."""
    ctx = _Ctx(model)  # type: ignore[arg-type]
    doc = _text(ctx, model.doc, "doc")
    if not isinstance(model, SpatialModel):
        raise TypeError(f"expected a SpatialModel, got {type(model).__name__}")
    check_name(model.name, "model name", "name", model.source)
    seen: dict[str, str] = {}

    def claim(name: object, what: str, where: str) -> str:
        nm = check_name(name, what, where, model.source)
        if nm in seen:
            raise ctx.err(f"{what} {nm!r} has the same name as {seen[nm]}", where)
        seen[nm] = f"{what} ({where})"
        return nm

    parameters: list[ValidParameter] = []
    for i, par in enumerate(model.parameters):
        _typed(ctx, par, Parameter, f"parameters[{i}]")
        claim(par.name, "parameter", f"parameters.{par.name}")
        if not is_finite_number(par.value):
            raise ctx.err(f"value must be a finite number, got {par.value!r}", f"parameters.{par.name}")
        ctx.params[par.name] = float(par.value)
        pw = f"parameters.{par.name}"
        unit, pdoc = _text(ctx, par.unit, f"{pw}.unit"), _text(ctx, par.doc, f"{pw}.doc")
        parameters.append(ValidParameter(par.name, float(par.value), unit, pdoc))
    gravity = _vec3(ctx, model.gravity, "gravity")
    _typed(ctx, model.ground, SpatialGround, "ground")
    ground = ValidSpatialGround(_vec3(ctx, model.ground.normal, "ground.normal", nonzero=True),
                                ctx.expr(model.ground.height, "ground.height"))

    if not isinstance(model.links, list) or not model.links:
        raise ctx.err("the model has no links", "links")
    names: dict[str, SpatialLink] = {}
    for i, lk in enumerate(model.links):
        _typed(ctx, lk, SpatialLink, f"links[{i}]")
        check_name(lk.name, "link name", f"links[{i}]", model.source)
        if lk.name in names:
            raise ctx.err(f"duplicate link name {lk.name!r}", f"link {lk.name!r}")
        names[lk.name] = lk
    ordered = _order_links(ctx, model.links, names)

    seg_names: dict[str, str] = {}
    links: list[ValidSpatialLink] = []
    for lk in ordered:
        lw = f"link {lk.name!r}"
        joint = _joint(ctx, lk, lw, claim, names)
        along = _vec3(ctx, lk.along, f"{lw}.along", nonzero=True)
        if not isinstance(lk.bodies, list):
            raise ctx.err(f"expected a list of bodies, got {type(lk.bodies).__name__}", f"{lw}.bodies")
        bodies: list[ValidBody] = []
        for k, b in enumerate(lk.bodies):
            bw = f"{lw}.bodies[{k}]" if b is None or getattr(b, "name", None) is None else f"{lw}, body {b.name!r}"
            _typed(ctx, b, Body, bw)
            if b.name is not None:
                claim(b.name, "point name", f"{bw}.name")
            mass = ctx.expr(b.mass, f"{bw}.mass", nonneg=True)
            bodies.append(ValidBody(mass, _vec3(ctx, b.com, f"{bw}.com"), _inertia(ctx, b.inertia, f"{bw}.inertia"),
                                    _vec3(ctx, b.rpy, f"{bw}.rpy"), b.name))
        if not isinstance(lk.segments, list):
            raise ctx.err(f"expected a list of segments, got {type(lk.segments).__name__}", f"{lw}.segments")
        segments: list[ValidSegment] = []
        for j, sg in enumerate(lk.segments):
            vs = validate_segment(ctx, sg, j, lw, lk.name, seg_names, claim)
            sw = f"{lw}, segment {sg.name!r}"
            points: tuple[tuple[str, tuple[Any, ...]], ...] = (("masses", vs.masses), ("rods", vs.rods))
            for what, items in points:
                for k, it in enumerate(items):
                    if it.lateral.evaluate(ctx.params) != 0:
                        raise ctx.err("a spatial link's segment points lie on the link axis: lateral must be 0 "
                                      "(add a Body for a mass off the axis)", f"{sw}.{what}[{k}].lateral")
            segments.append(vs)
        if joint.type == "two_angle" and any(v.evaluate(ctx.params) != 0 for v in along[1:]):
            raise ctx.err("a two-angle link's axis is its frame's x axis; along must be (1, 0, 0)", f"{lw}.along")
        seg_of = {sg.name for sg in lk.segments}
        markers: list[ValidSpatialMarker] = []
        for k, mk in enumerate(lk.markers):
            mw = f"{lw}.markers[{k}]"
            _typed(ctx, mk, SpatialMarker, mw)
            claim(mk.name, "marker", mw)
            if mk.segment is not None and mk.segment not in seg_of:
                raise ctx.err(f"unknown segment {mk.segment!r}{did_you_mean(str(mk.segment), seg_of)} "
                              f"(segments of {lk.name!r}: {', '.join(seg_of) or 'none'})", f"{mw}.segment")
            fraction = ctx.expr(mk.fraction, f"{mw}.fraction")
            if mk.segment is None and fraction.evaluate(ctx.params) != 0:
                raise ctx.err("fraction needs a segment; give offset along the link instead", f"{mw}.fraction")
            markers.append(ValidSpatialMarker(mk.name, mk.segment, fraction, ctx.expr(mk.offset, f"{mw}.offset"),
                                              _vec3(ctx, mk.xyz, f"{mw}.xyz"), _vec3(ctx, mk.rpy, f"{mw}.rpy")))
        links.append(ValidSpatialLink(lk.name, lk.parent, lk.at, joint, along, tuple(bodies), tuple(segments),
                                      tuple(markers)))

    for lk in model.links:
        if lk.parent is None:
            if lk.at != "end":
                raise ctx.err("'at' names a point of the parent; a link on the ground is placed by xyz and rpy",
                              f"link {lk.name!r}.at")
            continue
        up = names[lk.parent]
        valid = {"end", "start"} | {s.name for s in up.segments} | {m.name for m in up.markers}
        if not isinstance(lk.at, str) or lk.at not in valid:
            raise ctx.err(f"unknown attachment point {lk.at!r} on parent {up.name!r}"
                          f"{did_you_mean(str(lk.at), valid)} (use 'end', 'start', a segment or a marker of "
                          f"{up.name!r}: {', '.join(sorted(valid))})", f"link {lk.name!r}.at")

    out = ValidSpatialModel(name=model.name, links=tuple(links), parameters=tuple(parameters), gravity=gravity,
                            doc=doc, source=model.source, ground=ground)
    couplings = _couplings(ctx, model, out)  # type: ignore[arg-type]
    for vl in links:
        if vl.joint.type in LIE_JOINTS:
            for c in vl.joint.coordinates:
                if c in couplings:
                    raise ctx.err(f"coordinate {c!r} of the {vl.joint.type} joint of link {vl.name!r} cannot be "
                                  f"coupled",
                                  f"couplings.{c}")
    _check_masses(ctx, out)
    forces = check_forces(ctx, model.forces, out.point_links(), [c.name for c in out.coordinates()], claim, 3,
                          model.source)
    contacts, loops = _constraints(ctx, model, out)
    return ValidSpatialModel(name=out.name, links=out.links, parameters=out.parameters, gravity=out.gravity,
                             couplings=MappingProxyType(couplings), doc=out.doc, source=out.source, ground=ground,
                             forces=forces, contacts=contacts, loops=loops)


def _constraints(ctx: _Ctx, model: SpatialModel,
                 vm: ValidSpatialModel) -> tuple[tuple[ValidContact, ...], tuple[ValidLoop, ...]]:
    """Contacts and loops of a spatial model, at named frames (:meth:`ValidSpatialModel.frame_names`;
    :func:`~rodgen.model.validate.check_constraints`)."""
    frames = vm.frame_names()

    def frame(name: object, where: str) -> str:
        if not isinstance(name, str) or name not in frames:
            raise ctx.err(f"unknown frame {name!r}{did_you_mean(str(name), frames)} (a frame is a link, "
                          f"'<link>.joint', a named body or point, '<segment>.end' or a marker)", where)
        return name

    def loop_rows(lp: Loop, a: str, b: str, lw: str) -> int:
        rows = 3 if lp.rows is None else lp.rows
        if isinstance(rows, bool) or rows not in (3, 6):
            raise ctx.err(f"a spatial loop has 3 rows (the frames' origins coincide) or 6 (their orientations "
                          f"too), got rows = {lp.rows!r}", f"{lw}.rows")
        if frames[a] == frames[b] and not any(sg.variable for sg in vm.link_named(frames[a]).segments):
            raise ctx.err(f"frames {a!r} and {b!r} are on the rigid link {frames[a]!r}: the loop is either always "
                          f"closed or never; join frames of different links", lw)
        return int(rows)

    def contact_rows(c: Contact, where: str) -> int:
        rows = 3 if c.rows is None else c.rows
        if isinstance(rows, bool) or rows not in (3, 6):
            raise ctx.err(f"a spatial contact has 3 rows (a point: two tangential, the gap) or 6 (a flat foot: "
                          f"its orientation too), got rows = {c.rows!r}", where)
        return int(rows)

    return check_constraints(ctx, model, vm, "frame", frame, loop_rows, contact_rows)


def _check_masses(ctx: _Ctx, vm: ValidSpatialModel) -> None:
    """Every link with a coordinate must move some mass: its subtree carries mass (at the default parameters)."""
    own: dict[str, float] = {}
    for lk in vm.links:
        m = sum(b.mass.evaluate(ctx.params) for b in lk.bodies)
        for sg in lk.segments:
            m += sum(p.mass.evaluate(ctx.params) for p in sg.masses) + sum(r.mass.evaluate(ctx.params)
                                                                         for r in sg.rods)
        own[lk.name] = m
    total = dict(own)
    for lk in reversed(vm.links):
        if lk.parent is not None:
            total[lk.parent] += total[lk.name]
    for lk in vm.links:
        if lk.joint.coordinates and not total[lk.name] > 0 and not math.isnan(total[lk.name]):
            raise ctx.err(f"the joint of link {lk.name!r} moves no mass (the link and its descendants are "
                          f"massless): the mass matrix would be singular; give the link a body", f"link {lk.name!r}")
