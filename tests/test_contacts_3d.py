"""Contacts, loops, limits and dry joint friction of spatial models: the vocabulary (builder, YAML, dump)
and its checks. The constraint rows themselves are not compiled for spatial models yet: deriving such a
model is refused with a ModelError that names the contact, loop or joint (docs/contacts-3d.md)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import rodgen
from rodgen.errors import ModelError
from rodgen.model import load_dict, to_dict
from rodgen.model.core import Friction
from rodgen.model.spatial import Body, SpatialModel


def leg_model() -> SpatialModel:
    """A two-link leg on a hip with a foot marker; the knee has limits and dry friction."""
    m = SpatialModel("leg")
    m.parameter("mu", 0.7)
    hip = m.link("hip", joint="revolute", axis=(0, 1, 0), xyz=(0, 0, 1.0), along=(0, 0, -1),
                 limits=(-1.0, 1.0))
    hip.bodies.append(Body(2.0, (0, 0, -0.25), (0.02, 0, 0, 0.02, 0, 0.01)))
    hip.rigid("thigh", 0.5)
    shank = m.link("shank", "hip", joint="revolute", axis=(0, 1, 0), along=(0, 0, -1), at="thigh",
                   limits=(-2.0, 0.0), friction=Friction(0.5, 0.3))
    shank.bodies.append(Body(1.0, (0, 0, -0.25), (0.01, 0, 0, 0.01, 0, 0.005), name="shank_com"))
    shank.rigid("shin", 0.5)
    shank.marker("foot", "shin", 1.0)
    return m


def test_builder_contacts_loops_limits_and_friction_validate() -> None:
    m = leg_model()
    m.contact("heel", "foot", friction="mu")
    m.contact("foot")                               # the frame named like the contact
    m.contact("knee_touch", "shank")                # a link's frame
    m.loop("close", "hip", "shin.end", rows=6)
    vm = m.validate()
    assert [(c.name, c.marker, vm.value(c.friction)) for c in vm.contacts] == [
        ("heel", "foot", 0.7), ("foot", "foot", 1.0), ("knee_touch", "shank", 1.0)]
    assert [(lp.name, lp.a, lp.b, lp.rows) for lp in vm.loops] == [("close", "hip", "shin.end", 6)]
    assert [(lim.name, lim.side, vm.value(lim.bound)) for lim in vm.limits()] == [
        ("q_hip_lower", "lower", -1.0), ("q_hip_upper", "upper", 1.0),
        ("q_shank_lower", "lower", -2.0), ("q_shank_upper", "upper", 0.0)]
    [fr] = vm.frictions()
    assert (fr.name, fr.coordinate, vm.value(fr.static), vm.value(fr.kinetic)) == ("q_shank_friction", "q_shank",
                                                                                   0.5, 0.3)
    frames = vm.frame_names()
    assert {"hip", "hip.joint", "shank", "shank.joint", "thigh.end", "shin.end", "foot", "shank_com"} <= set(frames)
    assert frames["foot"] == "shank" and frames["thigh.end"] == "hip"


def test_loop_rows_default_to_three() -> None:
    m = leg_model()
    m.loop("pin", "hip", "foot")
    assert m.validate().loops[0].rows == 3


YAML = """
name: leg
spatial: true
parameters: {mu: 0.7}
links:
  - name: hip
    joint: {type: revolute, axis: [0, 1, 0], xyz: [0, 0, 1.0], limits: [-1, 1]}
    along: [0, 0, -1]
    bodies: [{mass: 2.0, com: [0, 0, -0.25], inertia: [0.02, 0, 0, 0.02, 0, 0.01]}]
    segments: [{name: thigh, length: 0.5}]
  - name: shank
    parent: hip
    at: thigh
    joint: {type: revolute, axis: [0, 1, 0], friction: {static: 0.5, kinetic: 0.3}}
    along: [0, 0, -1]
    bodies: [{mass: 1.0, com: [0, 0, -0.25], inertia: [0.01, 0, 0, 0.01, 0, 0.005]}]
    segments: [{name: shin, length: 0.5}]
    markers: [{name: foot, segment: shin, fraction: 1.0}]
contacts:
  - {name: foot}
  - {name: toe, frame: shin.end, friction: mu}
loops:
  - {name: pin, a: hip, b: foot}
  - {name: weld, a: hip, b: shin.end, rows: 6}
"""


def test_yaml_reads_and_dump_round_trips(tmp_path: Path) -> None:
    model = load_dict(yaml.safe_load(YAML))
    vm = model.validate()
    assert [(c.name, c.marker) for c in vm.contacts] == [("foot", "foot"), ("toe", "shin.end")]
    assert vm.value(vm.contacts[1].friction) == 0.7
    assert [(lp.a, lp.b, lp.rows) for lp in vm.loops] == [("hip", "foot", 3), ("hip", "shin.end", 6)]
    assert [f.coordinate for f in vm.frictions()] == ["q_shank"]
    d = to_dict(model)
    assert d["contacts"] == [{"name": "foot"}, {"name": "toe", "frame": "shin.end", "friction": "mu"}]
    assert d["loops"] == [{"name": "pin", "a": "hip", "b": "foot"},
                          {"name": "weld", "a": "hip", "b": "shin.end", "rows": 6}]
    assert d["links"][1]["joint"]["friction"] == {"static": 0.5, "kinetic": 0.3}
    path = tmp_path / "leg.yaml"
    rodgen.dump(model, path)
    again = rodgen.load(path)
    assert to_dict(again) == d


@pytest.mark.parametrize("edit, where, message", [
    (lambda m: m.contact("c", "nowhere"), "contact 'c'.frame", "unknown frame 'nowhere'"),
    (lambda m: m.contact("c", "foot", friction=-0.1), "contact 'c'.friction", "must not be negative"),
    (lambda m: (m.contact("c", "foot"), m.contact("c", "shank")), "contact 'c'", "already used"),
    (lambda m: (m.contact("q_hip_lower", "foot")), "link 'hip'.limits", "already used"),
    (lambda m: m.loop("l", "hip", "hip"), "loop 'l'.b", "two different frames"),
    (lambda m: m.loop("l", "hip", "thigh.end"), "loop 'l'", "rigid link 'hip'"),
    (lambda m: m.loop("l", "hip", "foot", rows=2), "loop 'l'.rows", "3 rows"),
    (lambda m: m.loop("l", "hip", "fot"), "loop 'l'.b", "did you mean"),
    (lambda m: setattr(m.links[0].joint, "friction", Friction(-1.0)), "joint.friction.static", "must not be negative"),
    (lambda m: setattr(m.links[0].joint, "friction", Friction(0.2, 0.5)), "joint.friction", "exceeds"),
])
def test_bad_input_names_the_place(edit, where, message) -> None:  # type: ignore[no-untyped-def]
    m = leg_model()
    edit(m)
    with pytest.raises(ModelError) as info:
        m.validate()
    text = str(info.value)
    assert where in text and message.lower() in text.lower(), text


def test_yaml_errors_name_the_line() -> None:
    bad = YAML.replace("frame: shin.end", "frame: shin.tip")
    with pytest.raises(ModelError) as info:
        load_dict(yaml.safe_load(bad), source="leg.yaml")
    assert "unknown frame 'shin.tip'" in str(info.value) and "toe" in str(info.value)
    with pytest.raises(ModelError, match="unknown field|rows_"):
        load_dict(yaml.safe_load(YAML.replace("rows: 6", "rows_: 6")))


def test_planar_loop_refuses_other_rows() -> None:
    m = rodgen.Model("two")
    a = m.link("a")
    a.rigid("sa", 1.0, masses=[rodgen.PointMass(1.0, fraction=1)])
    a.marker("pa", "sa", fraction=1)
    b = m.link("b", parent="a")
    b.rigid("sb", 1.0, masses=[rodgen.PointMass(1.0, fraction=1)])
    b.marker("pb", "sb", fraction=1)
    m.loops.append(rodgen.model.core.Loop("l", "pa", "pb", rows=3))
    with pytest.raises(ModelError, match="2 rows"):
        m.validate()


def test_deriving_a_spatial_model_with_contacts_is_refused_clearly() -> None:
    m = leg_model()
    m.contact("foot")
    with pytest.raises(ModelError, match="contact 'foot'.*cannot be compiled yet|cannot be compiled yet"):
        rodgen.derive(m)
    plain = leg_model()                               # limits alone are kept (not constrained) as before
    plain.links[1].joint.friction = None
    assert len(rodgen.derive(plain).q) == 2
