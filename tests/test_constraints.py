"""Constraint rows (contacts, loops, limits): the model vocabulary, its errors, and the symbolic rows.

J is checked against central finite differences of the position rows, J̇q̇ against finite
differences of J(q + t qd) qd, on the four-bar and the compass gait, for every derivation method.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from _constrained import ConstrainedNumeric

import rodgen
from rodgen import ModelError
from rodgen.model import load_dict, to_dict

METHODS = ["lagrange", "matrix", "recursive"]


def _data(path: str) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh)


@pytest.fixture(scope="module", params=METHODS)
def fourbar(request) -> ConstrainedNumeric:
    return ConstrainedNumeric(rodgen.derive(rodgen.load("examples/fourbar.yaml"), method=request.param))


@pytest.fixture(scope="module", params=METHODS)
def compass(request) -> ConstrainedNumeric:
    return ConstrainedNumeric(rodgen.derive(rodgen.load("examples/compass_gait.yaml"), method=request.param))


def _check_jacobian_and_bias(sys: ConstrainedNumeric, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(4):
        q = rng.uniform(-1.5, 1.5, sys.nq)
        qd = rng.uniform(-2, 2, sys.nq)
        J = sys.constraint_jacobian(q)
        eps = 1e-6
        Jfd = np.column_stack([(sys.constraint_position(q + eps * e) - sys.constraint_position(q - eps * e))
                               / (2 * eps) for e in np.eye(sys.nq)])
        np.testing.assert_allclose(J, Jfd, atol=1e-8)
        t = 1e-5
        bfd = (sys.constraint_jacobian(q + t * qd) @ qd - sys.constraint_jacobian(q - t * qd) @ qd) / (2 * t)
        np.testing.assert_allclose(sys.constraint_bias(q, qd), bfd, atol=1e-7)
        # and J̇q̇ is the second derivative of the rows along the straight line q + t qd
        c2 = (sys.constraint_position(q + 1e-4 * qd) - 2 * sys.constraint_position(q)
              + sys.constraint_position(q - 1e-4 * qd)) / 1e-8
        np.testing.assert_allclose(sys.constraint_bias(q, qd), c2, atol=1e-5)


def test_fourbar_rows(fourbar: ConstrainedNumeric) -> None:
    assert [(b.name, b.kind, b.row, b.nrows) for b in fourbar.constraints] == [("close", "loop", 0, 2)]
    _check_jacobian_and_bias(fourbar, 1)
    # the loop is r_C(rocker) - r_C(coupler), written out by hand
    P = fourbar.parameters
    q = np.array([0.3, 0.9, 1.7])
    a, b, c, d = P["a"], P["b"], P["c"], P["d"]
    coupler = a * np.array([math.cos(q[0]), math.sin(q[0])]) + b * np.array([math.cos(q[1]), math.sin(q[1])])
    rocker = np.array([d, 0.0]) + c * np.array([math.cos(q[2]), math.sin(q[2])])
    np.testing.assert_allclose(fourbar.constraint_position(q), rocker - coupler, atol=1e-14)
    # closed at the initial coordinates (expressions of the lengths in the file)
    q0 = [c0.initial.evaluate(P) for c0 in fourbar.equations.coordinates]
    assert np.linalg.norm(fourbar.constraint_position(q0)) < 1e-12


def test_compass_gait_rows(compass: ConstrainedNumeric) -> None:
    assert [(b.name, b.kind, b.row, b.nrows) for b in compass.constraints] == [
        ("foot_a", "contact", 0, 2), ("foot_b", "contact", 2, 2)]
    assert compass.coordinates == ["x", "y", "th_a", "th_b"] and compass.nu == 0
    np.testing.assert_allclose(compass.constraint_friction(), [1.0, 1.0])
    np.testing.assert_allclose(compass.constraint_friction({"mu": 0.6}), [0.6, 0.6])
    _check_jacobian_and_bias(compass, 2)
    # ground frame: a foot's rows are (t·r, n·r - h cos s), checked against the foot's marker position
    P = compass.parameters
    s, l = -P["gamma"], P["a"] + P["b"]
    q = np.array([0.4, 1.1, 0.25, -0.35])
    pts = compass.points(q)
    for name, row in (("foot_a", 0), ("foot_b", 2)):
        r = pts[name]
        np.testing.assert_allclose(compass.constraint_position(q)[row:row + 2],
                                   [r @ [math.cos(s), math.sin(s)], r @ [-math.sin(s), math.cos(s)]], atol=1e-14)
    np.testing.assert_allclose(pts["foot_a"], [0.4 + l * math.sin(0.25), 1.1 - l * math.cos(0.25)], atol=1e-14)
    # the initial state: foot a at the origin, foot b on the slope too (legs symmetric about its normal)
    q0 = np.array([c.initial.evaluate(P) for c in compass.equations.coordinates])
    c0 = compass.constraint_position(q0)
    np.testing.assert_allclose(c0[:2], [0, 0], atol=1e-12)
    assert abs(c0[3]) < 1e-4


def test_ground_height_is_distance_from_the_line() -> None:
    data = _data("examples/compass_gait.yaml")
    data["ground"] = {"slope": 0.3, "height": 0.5}
    e = rodgen.derive(load_dict(data), method="matrix")
    sys = ConstrainedNumeric(e)
    # a foot at the point (0, 0.5) of the line, and one 0.2 along the normal above another point of it
    l = sys.parameters["a"] + sys.parameters["b"]
    th = 0.1
    foot = np.array([0.0, 0.5]) + 0.7 * np.array([math.cos(0.3), math.sin(0.3)]) \
        + 0.2 * np.array([-math.sin(0.3), math.cos(0.3)])
    hip = foot - l * np.array([math.sin(th), -math.cos(th)])
    c = sys.constraint_position([hip[0], hip[1], th, 0.0])
    np.testing.assert_allclose(c[:2], [0.7 + 0.5 * math.sin(0.3), 0.2], atol=1e-12)


def test_rows_agree_between_methods() -> None:
    rng = np.random.default_rng(4)
    q, qd = rng.normal(size=4), rng.normal(size=4)
    vals = []
    for m in METHODS:
        s = ConstrainedNumeric(rodgen.derive(rodgen.load("examples/compass_gait.yaml"), method=m))
        vals.append(np.concatenate([s.constraint_position(q), s.constraint_jacobian(q).ravel(),
                                    s.constraint_bias(q, qd)]))
    np.testing.assert_allclose(vals[1], vals[0], atol=1e-12)
    np.testing.assert_allclose(vals[2], vals[0], atol=1e-12)


def _limited() -> rodgen.Model:
    m = rodgen.Model("limited")
    m.parameter("lo", -0.5)
    m.parameter("m", 1.0)
    m.gravity = (0, -9.81)
    thigh = m.link("thigh", initial=-1.0, limits=("lo - 1", 0.5))
    thigh.variable("thigh_s", 0.4, masses=[rodgen.PointMass("m", fraction=1)], limits=(0.3, None))
    shank = m.link("shank", parent="thigh", angle="relative", limits=(None, 0.0))
    shank.rigid("shank_s", 0.4, masses=[rodgen.PointMass("m", fraction=1)])
    return m


@pytest.mark.parametrize("method", METHODS)
def test_limit_rows(method: str) -> None:
    e = rodgen.derive(_limited(), method=method)
    assert [(c.name, c.kind, c.nrows) for c in e.constraints] == [
        ("phi_thigh_lower", "limit", 1), ("phi_thigh_upper", "limit", 1), ("l_thigh_s_lower", "limit", 1),
        ("th_shank_upper", "limit", 1)]
    sys = ConstrainedNumeric(e)
    q = np.array([0.2, 0.35, -0.4])
    np.testing.assert_allclose(sys.constraint_position(q), [0.2 + 1.5, 0.5 - 0.2, 0.35 - 0.3, 0.4])
    np.testing.assert_allclose(sys.constraint_jacobian(q), [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, 0, -1]])
    np.testing.assert_allclose(sys.constraint_bias(q, [1, 2, 3]), 0)


def test_limit_on_a_coupled_coordinate() -> None:
    m = _limited()
    m.couple("th_shank", "-2*phi_thigh")
    e = rodgen.derive(m, method="matrix")
    sys = ConstrainedNumeric(e)
    q = np.array([0.2, 0.35])
    assert sys.constraint_position(q)[3] == pytest.approx(0.4)
    np.testing.assert_allclose(sys.constraint_jacobian(q)[3], [2, 0])


@pytest.mark.parametrize("method", METHODS)
def test_open_loop_is_refused_with_the_gap(method: str) -> None:
    data = _data("examples/fourbar.yaml")
    data["links"][0]["initial"] = "pi/2 + 0.01"
    with pytest.raises(ModelError) as err:
        rodgen.derive(load_dict(data, source="fourbar.yaml"), method=method)
    msg = str(err.value)
    assert msg.startswith("fourbar.yaml: loop 'close': ") and "m apart" in msg
    # the gap is |a (e(pi/2 + 0.01) - e(pi/2))| = 2 a sin(0.005)
    gap = float(msg.split(" are ")[1].split(" m apart")[0])
    assert gap == pytest.approx(2 * 0.2 * math.sin(0.005), rel=1e-5)


# -- model vocabulary: files, builder, dump, errors ---------------------------------------------

def _builder_compass() -> rodgen.Model:
    m = rodgen.Model("cg", base="floating", base_initial=(0, "l"))
    m.parameter("l", 1.0)
    m.parameter("m", 5.0)
    m.parameter("gamma", 0.05)
    m.ground = rodgen.Ground(slope="-gamma")
    a = m.link("leg_a", offset="-pi/2")
    a.rigid("leg_a_s", "l", masses=[rodgen.PointMass("m", fraction=0.5)])
    a.marker("foot_a", "leg_a_s", fraction=1)
    b = m.link("leg_b", parent="leg_a", at="start", offset="-pi/2", joint=rodgen.Joint(actuated=False))
    b.rigid("leg_b_s", "l", masses=[rodgen.PointMass("m", fraction=0.5)])
    b.marker("foot_b", "leg_b_s", fraction=1)
    m.contact("foot_a", friction=0.7)
    m.contact("heel_b", marker="foot_b")
    return m


def test_builder_and_dump_round_trip() -> None:
    m = _builder_compass().validate()
    assert [(c.name, c.marker) for c in m.contacts] == [("foot_a", "foot_a"), ("heel_b", "foot_b")]
    d = to_dict(m)
    assert d["ground"] == {"slope": "-gamma"} and d["base_initial"] == [0, "l"]
    assert d["contacts"] == [{"name": "foot_a", "friction": 0.7}, {"name": "heel_b", "marker": "foot_b"}]
    again = load_dict(d)
    assert to_dict(again) == d
    for path in ("examples/fourbar.yaml", "examples/compass_gait.yaml"):
        model = rodgen.load(path)
        d = to_dict(model)
        assert to_dict(load_dict(yaml.safe_load(rodgen.dump(model)))) == d
    lim = _limited()
    d = to_dict(lim.validate())
    assert d["links"][0]["limits"] == ["lo - 1", 0.5] and d["links"][0]["segments"][0]["limits"] == [0.3, None]
    assert [x.name for x in load_dict(d).limits()] == [x.name for x in lim.limits()]


def test_round_trip_gives_the_same_rows() -> None:
    model = rodgen.load("examples/fourbar.yaml")
    a = ConstrainedNumeric(rodgen.derive(model, "matrix"))
    b = ConstrainedNumeric(rodgen.derive(load_dict(to_dict(model)), "matrix"))
    q = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(a.constraint_jacobian(q), b.constraint_jacobian(q), atol=1e-15)


def _err(data: dict, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        load_dict(data, source="m.yaml")


def test_errors_name_the_contact_loop_and_field() -> None:
    base = _data("examples/compass_gait.yaml")
    d = dict(base, contacts=[{"name": "foot_a", "marker": "toe"}])
    _err(d, r"^m\.yaml: contact 'foot_a'\.marker: unknown marker 'toe' \(markers: foot_a, foot_b\)")
    d = dict(base, contacts=[{"name": "foot_a"}, {"name": "foot_a", "marker": "foot_b"}])
    _err(d, r"contact 'foot_a': contact name 'foot_a' is already used by contact 'foot_a'")
    d = dict(base, contacts=[{"name": "foot_a", "friction": -0.1}])
    _err(d, r"contact 'foot_a'\.friction: must not be negative, got -0\.1")
    d = dict(base, contacts=[{"name": "foot_a", "friction": float("inf")}])
    _err(d, r"contact 'foot_a'\.friction: .*(not finite|finite)")
    d = dict(base, contacts=[{"name": "foot_a", "friction": "mu/0"}])
    _err(d, r"contact 'foot_a'\.friction: .*cannot be evaluated")
    d = dict(base, contacts=[{"name": "foot_a", "grip": 1}])
    _err(d, r"contact 'foot_a': unknown field 'grip'")
    d = dict(base, loops=[{"name": "foot_a", "a": "foot_a", "b": "foot_b"}])
    _err(d, r"loop 'foot_a': loop name 'foot_a' is already used by contact 'foot_a'")
    d = dict(base, loops=[{"name": "l1", "a": "foot_a", "b": "hip2"}])
    _err(d, r"loop 'l1'\.b: unknown marker 'hip2'")
    d = dict(base, ground={"slope": "-gama"})
    _err(d, r"ground\.slope: parameter 'gama' is used but never defined")


def test_loop_on_one_rigid_part_is_refused() -> None:
    d = _data("examples/fourbar.yaml")
    d["links"][1]["markers"].append({"name": "mid", "segment": "coupler_s", "fraction": 0.5})
    d["loops"] = [{"name": "bad", "a": "C_coupler", "b": "mid"}]
    _err(d, r"loop 'bad': markers 'C_coupler' and 'mid' are on one rigid part of link 'coupler'")
    # across a variable segment the distance changes: accepted by the model stage
    d["links"][1]["segments"] = [{"name": "coupler_v", "type": "variable", "length": "b/2",
                                  "masses": [{"mass": 0.1, "fraction": 1}]},
                                 {"name": "coupler_s", "length": "b/2", "rod": {"mass": "m2"}}]
    d["links"][1]["markers"] = [{"name": "C_coupler", "segment": "coupler_s", "fraction": 1},
                                {"name": "mid", "segment": "coupler_v", "fraction": 0.5}]
    load_dict(d)


def test_limit_errors() -> None:
    d = _data("examples/fourbar.yaml")
    d["links"][0]["limits"] = [1.0, 1.0]
    _err(d, r"link 'crank'\.limits: lower limit 1\.0 = 1 must be below upper limit 1\.0 = 1")
    d["links"][0]["limits"] = [0.5]
    _err(d, r"link 'crank'\.limits: expected \[lower, upper\], got 1 values")
    d["links"][0]["limits"] = [None, "a*10"]
    load_dict(d)
    d["links"][0]["segments"][0]["limits"] = [0, 1]
    _err(d, r"link 'crank', segment 'crank_s'\.limits: 'limits' applies to variable segments only")
    d["links"][0]["segments"][0].pop("limits")
    d["loops"].append({"name": "phi1_upper", "a": "C_coupler", "b": "C_rocker"})
    _err(d, r"limit name 'phi1_upper' is already used by loop 'phi1_upper'")


# -- floating base with rotation ------------------------------------------------------------------

def test_floating_root_joint_gets_no_torque_unless_it_opts_in() -> None:
    m = rodgen.load("examples/compass_gait.yaml")
    assert m.inputs() == []
    d = _data("examples/compass_gait.yaml")
    d["links"][0]["joint"] = {"actuated": True}
    m = load_dict(d)
    assert [u.name for u in m.inputs()] == ["tau_leg_a"]
    assert to_dict(m)["links"][0]["joint"] == {"actuated": True}
    d["links"][0]["joint"] = {"torque": "tau_free"}
    assert [u.name for u in load_dict(d).inputs()] == ["tau_free"]
    d["base"] = "fixed"
    d.pop("base_initial")
    d["links"][0].pop("joint")
    assert [u.name for u in load_dict(d).inputs()] == ["tau_leg_a"]
    d["base_initial"] = [0, 1]
    _err(d, r"base_initial: base_initial applies to a floating base only")
