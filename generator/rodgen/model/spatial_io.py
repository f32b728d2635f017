"""Spatial models in model files (YAML): reading (``spatial: true``) and writing.

The schema (docs/spatial.md, "Spatial models in YAML"; every key in rodgen.model.fields) mirrors the builder API of
:mod:`rodgen.model.spatial` key for key:

.. code-block:: yaml

    name: arm3
    spatial: true                  # marks a spatial model (a planar model leaves it out)
    gravity: [0, 0, -9.81]
    ground: {normal: [0, 0, 1], height: 0}   # the ground plane n·r = height (default z = 0)
    parameters: {m1: 2.0}
    links:
      - name: base
        joint: {type: revolute, axis: [0, 0, 1], xyz: [0, 0, 0.1], limits: [-2.9, 2.9]}
        bodies:
          - {mass: m1, com: [0, 0, 0.05], inertia: [0.01, 0, 0, 0.01, 0, 0.004]}
        markers: [{name: base_frame}]
      - name: upper
        parent: base
        joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, 0.2]}
        along: [0, 0, 1]
        segments: [{name: upper_rod, length: 0.4, rods: [{mass: 1.5}]}]
    couplings: {q_b: "-q_a"}
    contacts: [{name: tip, frame: upper_rod.end, friction: 0.8}]   # point contacts at named frames
    loops: [{name: close, a: base_frame, b: upper_rod.end, rows: 3}]  # frames coincide (rows 3 or 6)

A joint takes ``friction: {static: ..., kinetic: ...}`` (dry friction with stiction).

Errors are :class:`~rodgen.errors.ModelError` naming the file, the line, the link and the field, as for
planar models. This module uses no SymPy.
"""
from __future__ import annotations

from typing import Any, Optional

from ..errors import ModelError
from .core import Contact, Loop
from .dump import _constraints, _force, _friction, _is, _limits, _parameters, _segment, _spring, _v
from .loader import _Reader
from .spatial import (
    LIE_JOINTS,
    Body,
    SpatialGround,
    SpatialJoint,
    SpatialLink,
    SpatialMarker,
    SpatialModel,
    ValidSpatialJoint,
    ValidSpatialLink,
    ValidSpatialModel,
    default_joint_coordinate,
    default_joint_input,
    default_two_angle_coordinates,
)

_MODEL_KEYS = {"name", "doc", "spatial", "gravity", "ground", "parameters", "links", "couplings", "forces",
               "contacts", "loops"}
_CONTACT_KEYS = {"name", "frame", "friction", "rows", "sole"}
_LOOP_KEYS = {"name", "a", "b", "rows"}
_GROUND_KEYS = {"normal", "height"}
_LINK_KEYS = {"name", "parent", "at", "joint", "along", "bodies", "segments", "markers"}
_JOINT_KEYS = {"type", "axis", "xyz", "rpy", "coordinate", "coordinates", "angles", "offset", "initial", "input",
               "actuated", "spring", "damping", "limits", "effort", "velocity", "friction"}
_BODY_KEYS = {"mass", "com", "inertia", "rpy", "name"}
_MARKER_KEYS = {"name", "segment", "fraction", "offset", "xyz", "rpy"}


def is_spatial(data: Any) -> bool:
    """Whether a model file's mapping describes a spatial model (``spatial: true``)."""
    return isinstance(data, dict) and data.get("spatial") is True


class _SpatialReader(_Reader):
    def triple(self, obj: Any, where: str) -> tuple[Any, Any, Any]:
        o = self.seq(obj, where)
        if len(o) != 3:
            raise self.err(f"expected [x, y, z], got {len(o)} values", where)
        return (o[0], o[1], o[2])

    def spatial_model(self, data: Any) -> SpatialModel:
        d = self.mapping(data, "model", _MODEL_KEYS, ("name", "links"))
        for key, line in getattr(d, "lines", {}).items():     # top-level fields are named by their key
            self.lines.setdefault(str(key), line)
        if d.get("spatial") is not True:
            raise self.err(f"expected 'spatial: true', got {d.get('spatial')!r}", "spatial")
        model = SpatialModel(name=self.string(d["name"], "name"), source=self.src)
        model.doc = self.text(d.get("doc"), "doc")
        if "gravity" in d:
            model.gravity = self.triple(d["gravity"], "gravity")
        if "ground" in d:
            g = self.mapping(d["ground"], "ground", _GROUND_KEYS, ())
            model.ground = SpatialGround(self.triple(g["normal"], "ground.normal") if "normal" in g
                                         else (0.0, 0.0, 1.0), g.get("height", 0.0))
        self.parameters(d.get("parameters"), model)
        for i, ld in enumerate(self.seq(d["links"], "links")):
            model.links.append(self.spatial_link(ld, i))
        self.couplings(d.get("couplings"), model)
        for i, fd in enumerate(self.seq(d.get("forces"), "forces")):
            model.forces.append(self.force(fd, i, 3))
        for i, cd in enumerate(self.seq(d.get("contacts"), "contacts")):
            name = cd.get("name") if isinstance(cd, dict) else None
            cw = f"contact {name!r}" if isinstance(name, str) else f"contacts[{i}]"
            c = self.mapping(cd, cw, _CONTACT_KEYS, ("name",))
            model.contacts.append(Contact(self.string(c["name"], f"{cw}.name"),
                                          None if c.get("frame") is None else self.string(c["frame"], f"{cw}.frame"),
                                          c.get("friction", 1.0), c.get("rows"), c.get("sole")))
        for i, ld in enumerate(self.seq(d.get("loops"), "loops")):
            name = ld.get("name") if isinstance(ld, dict) else None
            lw = f"loop {name!r}" if isinstance(name, str) else f"loops[{i}]"
            lp = self.mapping(ld, lw, _LOOP_KEYS, ("name", "a", "b"))
            model.loops.append(Loop(self.string(lp["name"], f"{lw}.name"), self.string(lp["a"], f"{lw}.a"),
                                    self.string(lp["b"], f"{lw}.b"), lp.get("rows", 3)))
        return model

    def spatial_link(self, ld: Any, i: int) -> SpatialLink:
        name = ld.get("name") if isinstance(ld, dict) else None
        lw = f"link {name!r}" if isinstance(name, str) else f"links[{i}]"
        d = self.mapping(ld, lw, _LINK_KEYS, ("name",))
        lk = SpatialLink(name=self.string(d["name"], f"{lw}.name"))
        if d.get("parent") is not None:
            lk.parent = self.string(d["parent"], f"{lw}.parent")
        if "at" in d:
            lk.at = self.string(d["at"], f"{lw}.at")
        if "along" in d:
            lk.along = self.triple(d["along"], f"{lw}.along")
        if "joint" in d:
            lk.joint = self.spatial_joint(d["joint"], f"{lw}.joint")
        for k, bd in enumerate(self.seq(d.get("bodies"), f"{lw}.bodies")):
            bw = f"{lw}.bodies[{k}]"
            b = self.mapping(bd, bw, _BODY_KEYS, ("mass",))
            body = Body(mass=b["mass"])
            if "com" in b:
                body.com = self.triple(b["com"], f"{bw}.com")
            if "inertia" in b:
                body.inertia = self.seq(b["inertia"], f"{bw}.inertia")
            if "rpy" in b:
                body.rpy = self.triple(b["rpy"], f"{bw}.rpy")
            if b.get("name") is not None:
                body.name = self.string(b["name"], f"{bw}.name")
            lk.bodies.append(body)
        for j, sd in enumerate(self.seq(d.get("segments"), f"{lw}.segments")):
            lk.segments.append(self.segment(sd, lw, j))
        for k, md in enumerate(self.seq(d.get("markers"), f"{lw}.markers")):
            mw = f"{lw}.markers[{k}]"
            m = self.mapping(md, mw, _MARKER_KEYS, ("name",))
            mk = SpatialMarker(name=self.string(m["name"], f"{mw}.name"),
                               segment=None if m.get("segment") is None else self.string(m["segment"],
                                                                                          f"{mw}.segment"),
                               fraction=m.get("fraction", 0.0), offset=m.get("offset", 0.0))
            if "xyz" in m:
                mk.xyz = self.triple(m["xyz"], f"{mw}.xyz")
            if "rpy" in m:
                mk.rpy = self.triple(m["rpy"], f"{mw}.rpy")
            lk.markers.append(mk)
        return lk

    def spatial_joint(self, jv: Any, where: str) -> SpatialJoint:
        d = self.mapping(jv, where, _JOINT_KEYS)
        jt = SpatialJoint()
        if "type" in d:
            jt.type = self.string(d["type"], f"{where}.type")
        for key in ("axis", "xyz", "rpy"):
            if key in d:
                setattr(jt, key, self.triple(d[key], f"{where}.{key}"))
        if "coordinate" in d:
            jt.coordinate = self.string(d["coordinate"], f"{where}.coordinate")
        if "coordinates" in d:
            pair = self.pair(d["coordinates"], f"{where}.coordinates", "[phi, psi]")
            jt.coordinates = (self.string(pair[0], f"{where}.coordinates"),
                              self.string(pair[1], f"{where}.coordinates"))
        if "angles" in d:
            jt.angles = self.string(d["angles"], f"{where}.angles")
        for key in ("offset", "damping", "effort", "velocity"):
            if key in d:
                setattr(jt, key, d[key])
        if "initial" in d:
            init = d["initial"]
            if jt.type in LIE_JOINTS:   # e.g. [x, y, z, qx, qy, qz, qw], checked by the validation
                jt.initial = tuple(init) if isinstance(init, list) else init
            else:
                jt.initial = (tuple(self.pair(init, f"{where}.initial", "[phi, psi]")) if isinstance(init, list)
                              else init)
        if "input" in d:
            inp = d["input"]
            jt.input = (tuple(self.string(x, f"{where}.input") for x in self.pair(inp, f"{where}.input",
                                                                                    "[input_phi, input_psi]"))
                        if isinstance(inp, list) else self.string(inp, f"{where}.input"))
        if "actuated" in d:
            jt.actuated = self.boolean(d["actuated"], f"{where}.actuated")
        jt.spring = self.spring(d.get("spring"), f"{where}.spring")
        if d.get("limits") is not None:
            jt.limits = self.pair(d["limits"], f"{where}.limits", "[lower, upper]")
        jt.friction = self.friction(d.get("friction"), f"{where}.friction")
        return jt


def load_spatial_dict(data: Any, *, source: Optional[str] = None) -> SpatialModel:
    """Build and validate a SpatialModel from a mapping with the spatial schema (``spatial: true``)."""
    reader = _SpatialReader(source)
    try:
        model = reader.spatial_model(data)
        model.validate()
    except ModelError as exc:
        raise reader.located(exc) from None
    return model


# -- writing --------------------------------------------------------------------------------------------

def _triple(v: tuple[Any, Any, Any]) -> list[Any]:
    return [_v(c) for c in v]


def _zero3(v: tuple[Any, Any, Any]) -> bool:
    return all(_is(c, 0.0) for c in v)


def _joint(lk: ValidSpatialLink) -> dict[str, Any]:
    jt: ValidSpatialJoint = lk.joint
    out: dict[str, Any] = {"type": jt.type}
    if jt.type in ("revolute", "prismatic"):
        out["axis"] = _triple(jt.axis)
    if not _zero3(jt.xyz):
        out["xyz"] = _triple(jt.xyz)
    if not _zero3(jt.rpy):
        out["rpy"] = _triple(jt.rpy)
    if jt.type == "fixed":
        return out
    if jt.type in LIE_JOINTS:
        if [_v(x) for x in jt.initial] != list(LIE_JOINTS[jt.type][2]):
            out["initial"] = [_v(x) for x in jt.initial]
        return out
    if jt.type == "two_angle":
        out["angles"] = jt.angles
        if tuple(jt.coordinates) != default_two_angle_coordinates(lk.name):
            out["coordinates"] = list(jt.coordinates)
        if not all(_is(x, 0.0) for x in jt.initial):
            out["initial"] = [_v(x) for x in jt.initial]
        if not jt.inputs:
            out["actuated"] = False
        elif tuple(jt.inputs) != tuple(f"tau_{c}" for c in jt.coordinates):
            out["input"] = list(jt.inputs)
        return out
    if jt.coordinates[0] != default_joint_coordinate(lk.name):
        out["coordinate"] = jt.coordinates[0]
    if not _is(jt.offset, 0.0):
        out["offset"] = _v(jt.offset)
    if not _is(jt.initial[0], 0.0):
        out["initial"] = _v(jt.initial[0])
    if not jt.inputs:
        out["actuated"] = False
    elif jt.inputs[0] != default_joint_input(lk.name, jt.type):
        out["input"] = jt.inputs[0]
    if jt.spring is not None:
        out["spring"] = _spring(jt.spring)
    if jt.damping is not None:
        out["damping"] = _v(jt.damping)
    _limits(out, jt.limits)
    _friction(out, jt.friction)
    for key in ("effort", "velocity"):
        if getattr(jt, key) is not None:
            out[key] = _v(getattr(jt, key))
    return out


def _link(lk: ValidSpatialLink) -> dict[str, Any]:
    out: dict[str, Any] = {"name": lk.name}
    if lk.parent is not None:
        out["parent"] = lk.parent
    if lk.at != "end":
        out["at"] = lk.at
    out["joint"] = _joint(lk)
    if [_v(c) for c in lk.along] != [1, 0, 0]:
        out["along"] = _triple(lk.along)
    if lk.bodies:
        bodies = []
        for b in lk.bodies:
            d: dict[str, Any] = {"mass": _v(b.mass)}
            if not _zero3(b.com):
                d["com"] = _triple(b.com)
            d["inertia"] = [_v(c) for c in b.inertia]
            if not _zero3(b.rpy):
                d["rpy"] = _triple(b.rpy)
            if b.name is not None:
                d["name"] = b.name
            bodies.append(d)
        out["bodies"] = bodies
    if lk.segments:
        out["segments"] = [_segment(sg) for sg in lk.segments]
    if lk.markers:
        markers = []
        for mk in lk.markers:
            m: dict[str, Any] = {"name": mk.name}
            if mk.segment is not None:
                m["segment"] = mk.segment
            if not _is(mk.fraction, 0.0):
                m["fraction"] = _v(mk.fraction)
            if not _is(mk.offset, 0.0):
                m["offset"] = _v(mk.offset)
            if not _zero3(mk.xyz):
                m["xyz"] = _triple(mk.xyz)
            if not _zero3(mk.rpy):
                m["rpy"] = _triple(mk.rpy)
            markers.append(m)
        out["markers"] = markers
    return out


def spatial_to_dict(model: ValidSpatialModel) -> dict[str, Any]:
    """A validated spatial model in the spatial schema."""
    out: dict[str, Any] = {"name": model.name, "spatial": True}
    if model.doc:
        out["doc"] = model.doc
    out["gravity"] = _triple(model.gravity)
    gn, gh = model.ground.normal, model.ground.height
    if not (_is(gn[0], 0.0) and _is(gn[1], 0.0) and _is(gn[2], 1.0) and _is(gh, 0.0)):
        out["ground"] = {"normal": _triple(gn), "height": _v(gh)}
    params = _parameters(model.parameters)
    if params:
        out["parameters"] = params
    out["links"] = [_link(lk) for lk in model.links]
    if model.couplings:
        out["couplings"] = {k: _v(v) for k, v in model.couplings.items()}
    if model.forces:
        out["forces"] = [_force(f) for f in model.forces]
    _constraints(out, model.contacts, model.loops, "frame", 3)
    return out


__all__ = ["is_spatial", "load_spatial_dict", "spatial_to_dict"]

