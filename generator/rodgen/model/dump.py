"""Model -> the model-file schema (a dict, or YAML text): the inverse of :mod:`rodgen.model.loader`.

A :class:`~rodgen.model.core.Model` is validated first and its
:class:`~rodgen.model.valid.ValidModel` written (a ValidModel is written as it is).
``load_dict(to_dict(model))`` gives a model with the same coordinates,
inputs, parameters and equations. Fields at their default value are left out.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Optional, Sequence, Union

import yaml

from .core import default_angle_coordinate, default_force, default_length_coordinate, default_torque
from .expr import Expression
from .valid import (
    AnyModel,
    Extension,
    ValidContact,
    ValidForce,
    ValidJoint,
    ValidLink,
    ValidLoop,
    ValidMarker,
    ValidParameter,
    ValidPointMass,
    ValidRod,
    ValidSegment,
    ValidSpring,
    valid_model,
)


def _v(value: object) -> Any:
    """A field value as the file writes it: numbers stay numbers, expressions become their text."""
    if isinstance(value, Expression):
        try:
            return int(value.text) if value.text.lstrip("-").isdigit() else float(value.text)
        except ValueError:
            return value.text
    return value


def _is(value: object, default: float) -> bool:
    v = _v(value)
    return isinstance(v, (int, float)) and float(v) == default


def _spring(s: Optional[ValidSpring]) -> Optional[dict[str, Any]]:
    if s is None:
        return None
    out = {"stiffness": _v(s.stiffness)}
    if not _is(s.rest, 0.0):
        out["rest"] = _v(s.rest)
    return out


def _station(obj: Union[ValidPointMass, ValidRod, ValidMarker], out: dict[str, Any], fraction_default: float) -> None:
    if not _is(obj.fraction, fraction_default):
        out["fraction"] = _v(obj.fraction)
    if not _is(obj.offset, 0.0):
        out["offset"] = _v(obj.offset)
    if not _is(obj.lateral, 0.0):
        out["lateral"] = _v(obj.lateral)


def _actuation(out: dict[str, Any], obj: Union[ValidJoint, Extension], input_key: str, input_name: Optional[str],
               default_input: str, actuated_by_default: bool = True) -> None:
    """The fields a joint and a variable segment share (a ValidJoint or an Extension): the input name
    (None: not actuated), spring, damping."""
    if input_name is None:
        if actuated_by_default:
            out["actuated"] = False
    else:
        if not actuated_by_default:
            out["actuated"] = True
        if input_name is not None and input_name != default_input:
            out[input_key] = input_name
    if obj.spring is not None:
        out["spring"] = _spring(obj.spring)
    if obj.damping is not None:
        out["damping"] = _v(obj.damping)


def _segment(sg: ValidSegment) -> dict[str, Any]:
    out: dict[str, Any] = {"name": sg.name}
    ext = sg.extension
    if ext is not None:  # a telescopic segment is written as the variable segment with rods it is
        out["type"] = "variable"
    out["length"] = _v(sg.length)
    if ext is not None:
        if ext.coordinate != default_length_coordinate(sg.name):
            out["coordinate"] = ext.coordinate
        _actuation(out, ext, "force", ext.force, default_force(sg.name))
        _limits(out, ext.limits)
        _friction(out, ext.friction)
    if sg.masses:
        masses = []
        for pm in sg.masses:
            d: dict[str, Any] = {"mass": _v(pm.mass)}
            _station(pm, d, 0.0)
            if pm.name:
                d["name"] = pm.name
            masses.append(d)
        out["masses"] = masses
    if sg.rods:
        rods = []
        for rd in sg.rods:
            d = {"mass": _v(rd.mass), "length": _v(rd.length), "inertia": _v(rd.inertia)}
            _station(rd, d, 0.5)
            if rd.name:
                d["name"] = rd.name
            rods.append(d)
        out["rods"] = rods
    return out


def _friction(out: dict[str, Any], friction: Any) -> None:
    if friction is not None:
        out["friction"] = {"static": _v(friction.static), "kinetic": _v(friction.kinetic)}


def _limits(out: dict[str, Any], limits: Optional[tuple[Any, Any]]) -> None:
    if limits is not None:
        out["limits"] = [None if v is None else _v(v) for v in limits]


def _parameters(parameters: Iterable[ValidParameter]) -> dict[str, Any]:
    """The ``parameters`` mapping: a bare value, or ``{value, unit, doc}`` when there is a unit or doc;
    shared by the planar and spatial dumps."""
    params: dict[str, Any] = {}
    for p in parameters:
        if p.unit or p.doc:
            entry: dict[str, Any] = {"value": p.value}
            if p.unit:
                entry["unit"] = p.unit
            if p.doc:
                entry["doc"] = p.doc
            params[p.name] = entry
        else:
            params[p.name] = p.value
    return params


def _link(lk: ValidLink, floating: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": lk.name}
    if lk.parent is not None:
        out["parent"] = lk.parent
        if lk.at != "end":
            out["at"] = lk.at
    elif not (_is(lk.origin[0], 0.0) and _is(lk.origin[1], 0.0)):
        out["origin"] = [_v(lk.origin[0]), _v(lk.origin[1])]
    out["angle"] = lk.angle
    if lk.coordinate != default_angle_coordinate(lk.name, lk.angle):
        out["coordinate"] = lk.coordinate
    if not _is(lk.offset, 0.0):
        out["offset"] = _v(lk.offset)
    if not _is(lk.initial, 0.0):
        out["initial"] = _v(lk.initial)
    _limits(out, lk.limits)
    joint: dict[str, Any] = {}
    _actuation(joint, lk.joint, "torque", lk.joint.torque, default_torque(lk.name),
               actuated_by_default=not (floating and lk.parent is None))
    _friction(joint, lk.joint.friction)
    if joint:
        out["joint"] = joint
    out["segments"] = [_segment(sg) for sg in lk.segments]
    if lk.markers:
        markers = []
        for mk in lk.markers:
            d: dict[str, Any] = {"name": mk.name}
            if mk.segment is not None:
                d["segment"] = mk.segment
            _station(mk, d, 0.0)
            markers.append(d)
        out["markers"] = markers
    return out


def to_dict(source: AnyModel) -> dict[str, Any]:
    """The model in the model-file schema (validates a Model first); a spatial model in the spatial schema
    (:mod:`rodgen.model.spatial_io`)."""
    model = valid_model(source)
    if getattr(model, "spatial", False):
        from .spatial_io import spatial_to_dict
        return spatial_to_dict(model)  # type: ignore[arg-type]
    out: dict[str, Any] = {"name": model.name}
    if model.doc:
        out["doc"] = model.doc
    if model.base != "fixed":
        out["base"] = model.base
        if tuple(model.base_coordinates) != ("x", "y"):
            out["base_coordinates"] = list(model.base_coordinates)
        if not (_is(model.base_initial[0], 0.0) and _is(model.base_initial[1], 0.0)):
            out["base_initial"] = [_v(model.base_initial[0]), _v(model.base_initial[1])]
    out["gravity"] = [_v(model.gravity[0]), _v(model.gravity[1])]
    params = _parameters(model.parameters)
    if params:
        out["parameters"] = params
    if model.couplings:
        out["couplings"] = {k: _v(v) for k, v in model.couplings.items()}
    out["links"] = [_link(lk, model.base == "floating") for lk in model.links]
    if not (_is(model.ground.slope, 0.0) and _is(model.ground.height, 0.0)):
        ground: dict[str, Any] = {"slope": _v(model.ground.slope)}
        if not _is(model.ground.height, 0.0):
            ground["height"] = _v(model.ground.height)
        out["ground"] = ground
    _constraints(out, model.contacts, model.loops, "marker", 2)
    if model.forces:
        out["forces"] = [_force(f) for f in model.forces]
    return out


def _constraints(out: dict[str, Any], contacts: Sequence[ValidContact], loops: Sequence[ValidLoop], field: str,
                 rows: int) -> None:
    """Contacts and loops into ``out`` (either kind of model): a contact's place under ``field`` (``marker``,
    ``frame``) when it is not its name, friction when not 1, a loop's rows when not ``rows``."""
    if contacts:
        out["contacts"] = []
        for c in contacts:
            d: dict[str, Any] = {"name": c.name}
            if c.marker != c.name:
                d[field] = c.marker
            if not _is(c.friction, 1.0):
                d["friction"] = _v(c.friction)
            if c.rows == 6:
                d["rows"] = 6
            if c.sole is not None:
                d["sole"] = list(c.sole)
            out["contacts"].append(d)
    if loops:
        out["loops"] = [{"name": lp.name, "a": lp.a, "b": lp.b, **({"rows": lp.rows} if lp.rows != rows else {})}
                        for lp in loops]


def _force(f: ValidForce) -> dict[str, Any]:
    d: dict[str, Any] = {"name": f.name, "type": f.type, "at": f.point}
    if f.type == "point_force":
        if f.frame != "world":
            d["frame"] = f.frame
        if f.force is not None:
            d["force"] = [_v(c) for c in f.force]
        if f.inputs is not None:
            d["inputs"] = list(f.inputs)
        return d
    if f.isotropic:
        d["coefficient"] = _v(f.along)
    elif f.along is not None:
        d["along"], d["across"] = _v(f.along), _v(f.across)
    if f.b is not None:
        d["b"] = f.b
    for key in ("normal", "stiffness", "exponent", "damping", "friction", "velocity_scale", "rest_length"):
        if getattr(f, key) is not None:
            d[key] = _v(getattr(f, key))
    return d


def dump(model: AnyModel, path: Union[str, "os.PathLike[str]", None] = None) -> str:
    """The model as YAML text; written to ``path`` if given."""
    text = yaml.safe_dump(to_dict(model), sort_keys=False, default_flow_style=None, width=100)
    if path is not None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text
