"""The mutable Model and the frozen ValidModel: validation never changes the Model, later stages never
see stale values, and the validated value has every default resolved."""
from __future__ import annotations

import copy
import dataclasses
import math

import pytest
import sympy as sp

import rodgen
from rodgen.model import ValidModel, ValidSegment, valid_model


def pendulum(mass: float = 2.0, length: float = 0.5) -> rodgen.Model:
    m = rodgen.Model("pendulum", gravity=(0, "-g"))
    m.parameter("g", 9.81)
    m.parameter("m", mass)
    lk = m.link("arm", initial=-1.0)
    lk.rigid("rod", length, masses=[rodgen.PointMass("m", fraction=1, name="bob")])
    return m


def closed_form(eqs: rodgen.Equations, phi: float) -> tuple[float, float]:
    """M and G of the point pendulum at absolute angle ``phi``, with the default parameters."""
    vals = {**eqs.param_values, eqs.q[0]: phi}
    return float(eqs.M[0, 0].xreplace(vals)), float(eqs.G[0].xreplace(vals))


def test_changing_the_model_after_deriving_uses_the_new_values() -> None:
    """M = m L^2 and G = m g L cos(phi) (V = m g L sin(phi)) before and after editing the Model."""
    m = pendulum(mass=2.0, length=0.5)
    first = rodgen.derive(m)
    phi = 0.3
    assert closed_form(first, phi) == pytest.approx((2.0 * 0.5**2, 2.0 * 9.81 * 0.5 * math.cos(phi)), rel=1e-15)
    # edit the mutable model in every way a user may: a parameter, a numeric field, a name, the builder
    m.parameters[1].value = 3.0
    m.links[0].segments[0].length = 0.8
    m.links[0].coordinate = "theta"
    second = rodgen.derive(m)
    assert [str(s) for s in second.q] == ["theta"]
    assert closed_form(second, phi) == pytest.approx((3.0 * 0.8**2, 3.0 * 9.81 * 0.8 * math.cos(phi)), rel=1e-15)
    # the first Equations keep the model they were derived from
    assert [c.name for c in first.model.coordinates()] == ["phi_arm"]
    assert first.model.links[0].segments[0].length.text == "0.5"
    # a link added with the builder after deriving is there the next time
    m.link("second", parent="arm").rigid("rod2", 1.0, masses=[rodgen.PointMass(1.0, fraction=1)])
    assert [str(s) for s in rodgen.derive(m).q] == ["theta", "phi_second"]


def test_an_edit_that_breaks_the_model_is_reported_at_the_next_use() -> None:
    m = pendulum()
    rodgen.derive(m)
    m.links[0].segments[0].length = -1.0
    with pytest.raises(rodgen.ModelError, match=r"link 'arm', segment 'rod'.length: must be positive"):
        rodgen.derive(m)


def test_validation_leaves_the_model_as_it_was() -> None:
    m = rodgen.load("examples/exo5.yaml")
    before = copy.deepcopy(m)
    vm = m.validate()
    assert m == before                                # no names filled in, no fields turned into Expressions
    assert isinstance(vm, ValidModel) and vm is not m
    assert m.validate() == vm                         # the same value each time, nothing cached


def test_the_valid_model_is_frozen() -> None:
    vm = pendulum().validate()
    with pytest.raises(dataclasses.FrozenInstanceError):
        vm.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        vm.links[0].segments[0].length = rodgen.model.parse("1")  # type: ignore[misc]
    assert isinstance(vm.links, tuple) and isinstance(vm.links[0].segments, tuple)
    with pytest.raises(TypeError):
        vm.couplings["phi_arm"] = rodgen.model.parse("0")  # type: ignore[index]
    hash(vm)


def test_every_default_is_resolved() -> None:
    m = rodgen.Model("walker", base="floating")
    m.parameter("L", 0.8)
    leg = m.link("leg")
    leg.rigid("shank", "L", rods=[rodgen.Rod(2.0)])
    leg.marker("foot", "shank", fraction=1)
    arm = m.link("arm", parent="leg", angle="relative")
    arm.variable("slide", 0.3, masses=[rodgen.PointMass(1.0, fraction=1)])
    m.contact("foot")
    vm = m.validate()
    leg_v, arm_v = vm.links
    assert (leg_v.coordinate, arm_v.coordinate) == ("phi_leg", "th_arm")
    assert leg_v.joint.torque is None and not leg_v.joint.actuated       # on a floating base: no input
    assert arm_v.joint.torque == "tau_arm" and arm_v.joint.actuated
    rod = leg_v.segments[0].rods[0]
    assert vm.value(rod.length) == 0.8
    assert vm.value(rod.inertia) == pytest.approx(2.0 * 0.8**2 / 12, rel=1e-15)   # a uniform thin rod
    assert vm.contacts[0].marker == "foot"
    ext = arm_v.segments[0].extension
    assert ext is not None and (ext.coordinate, ext.force) == ("l_slide", "F_slide")
    assert all(isinstance(x, rodgen.model.Expression) for x in (*vm.gravity, *leg_v.origin, leg_v.initial))
    assert [c.name for c in vm.coordinates()] == ["x", "y", "phi_leg", "th_arm", "l_slide"]
    assert [u.name for u in vm.inputs()] == ["tau_arm", "F_slide"]


def test_segment_kind_is_the_single_truth() -> None:
    m = rodgen.Model("kinds")
    lk = m.link("a")
    lk.rigid("r", 1.0, masses=[rodgen.PointMass(1.0)])
    lk.variable("v", 0.5, masses=[rodgen.PointMass(1.0, fraction=1)])
    lk.telescopic("t", length=0.7, outer_length=0.5, outer_mass=1.0, inner_length=0.45, inner_mass=0.5)
    segs = m.validate().links[0].segments
    assert [(s.kind, s.variable, s.extension is not None) for s in segs] == [
        ("rigid", False, False), ("variable", True, True), ("telescopic", True, True)]
    with pytest.raises(ValueError):
        ValidSegment("x", "rigid", rodgen.model.parse("1"), extension=segs[1].extension)
    lk.segments[2].variable = False
    with pytest.raises(rodgen.ModelError, match=r"link 'a', segment 't'.variable: a telescopic segment"):
        m.validate()
    lk.segments[2].variable, lk.segments[2].kind = True, "sliding"
    with pytest.raises(rodgen.ModelError, match=r"segment 't'.kind: kind must be one of rigid, variable"):
        m.validate()


def test_entry_points_take_either_type() -> None:
    m = pendulum()
    vm = m.validate()
    a, b = rodgen.derive(m), rodgen.derive(vm)
    assert isinstance(a.model, ValidModel) and b.model is vm
    assert a.M == b.M and a.G == b.G and a.q == b.q
    assert valid_model(vm) is vm
    assert rodgen.dump(vm) == rodgen.dump(m)
    files_a, files_b = rodgen.generate(m), rodgen.generate(vm)
    assert files_a.spec.content_hash == files_b.spec.content_hash
    with pytest.raises(TypeError, match="rodgen.Model"):
        rodgen.derive("pendulum.yaml")  # type: ignore[arg-type]
    assert sp.simplify(a.T - b.T) == 0
