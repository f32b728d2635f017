"""Contacts, loops, limits and dry joint friction of spatial models: the vocabulary (builder, YAML, dump)
and its checks, the constraint rows against Pinocchio's frame Jacobians and accelerations, and compiled
loops (3 and 6 rows) against the KKT solution from Pinocchio's mass matrix and bias; a sliding 3-row contact
against that KKT solution with its tangential rows replaced by the friction force (tests/test_slide_3d.py
has the hybrid simulation of 3-row contacts)."""
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


def test_limits_alone_stay_data_and_friction_makes_blocks() -> None:
    plain = leg_model()                     # joint limits alone are kept with the model, not constrained
    plain.links[1].joint.friction = None
    assert rodgen.derive(plain).constraints == []
    eqs = rodgen.derive(leg_model())        # dry friction: the limit and friction blocks, rows on coordinates
    assert [(c.name, c.kind, c.nrows) for c in eqs.constraints] == [
        ("q_hip_lower", "limit", 1), ("q_hip_upper", "limit", 1), ("q_shank_lower", "limit", 1),
        ("q_shank_upper", "limit", 1), ("q_shank_friction", "friction", 1)]


# -- the constraint rows against Pinocchio ---------------------------------------------------------------

def _pin_frame(pm, name: str, joint: str, placement=None) -> int:  # type: ignore[no-untyped-def]
    import pinocchio as pin
    jid = pm.getJointId(joint)
    return pm.addFrame(pin.Frame(name, jid, placement if placement is not None else pin.SE3.Identity(),
                                 pin.FrameType.OP_FRAME))


def _pin_rows(pm, q, qd, fid: int):  # type: ignore[no-untyped-def]
    """(6, n) LOCAL_WORLD_ALIGNED Jacobian and the classical acceleration at zero q̈ (J̇ q̇) of a frame."""
    import numpy as np
    import pinocchio as pin
    data = pm.createData()
    pin.forwardKinematics(pm, data, q, qd, np.zeros(pm.nv))
    pin.computeJointJacobians(pm, data, q)
    pin.updateFramePlacements(pm, data)
    J = pin.getFrameJacobian(pm, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    a = pin.getFrameClassicalAcceleration(pm, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    return J, np.concatenate([a.linear, a.angular]), data.oMf[fid]


def _moving_links(pm) -> list[str]:  # type: ignore[no-untyped-def]
    return [nm for nm in list(pm.names)[1:] if nm.startswith("L")]


def test_contact_rows_are_pinocchios_frame_jacobian_and_acceleration_in_ground_axes() -> None:
    import numpy as np
    import sympy as sp
    from test_spatial_pinocchio import random_tree
    model, pm = random_tree(4, 5)
    a, b = _moving_links(pm)[-2:]
    model.ground.normal = (0.3, -0.2, 1.0)      # a tilted plane: λ and the rows in its axes
    model.ground.height = 0.1
    model.contact("ca", a)
    model.contact("cb", f"{b}.joint", friction=0.4)
    eqs = rodgen.derive(model)
    assert [(c.name, c.kind, c.nrows) for c in eqs.constraints] == [("ca", "contact", 3), ("cb", "contact", 3)]
    fa, fb = _pin_frame(pm, "ca", a), _pin_frame(pm, "cb", b)
    n = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])
    t1 = np.array([1.0, 0, 0]) - n[0] * n
    t1 /= np.linalg.norm(t1)
    T = np.vstack([t1, np.cross(n, t1), n])
    subs = list(eqs.q) + list(eqs.qd) + list(eqs.params)
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, qd = rng.uniform(-np.pi, np.pi, pm.nq), rng.normal(size=pm.nv)
        vals = list(q) + list(qd) + [float(eqs.param_values[s]) for s in eqs.params]
        for blk, fid in zip(eqs.expanded().constraints, (fa, fb)):   # J̇ q̇ refers to the intermediates
            J_pin, acc, oMf = _pin_rows(pm, q, qd, fid)
            pos = np.array(sp.lambdify(subs, blk.position, "numpy")(*vals), float).ravel()
            J = np.array(sp.lambdify(subs, blk.jacobian, "numpy")(*vals), float)
            bias = np.array(sp.lambdify(subs, blk.bias, "numpy")(*vals), float).ravel()
            assert np.allclose(pos, T @ oMf.translation - [0, 0, 0.1], atol=1e-12, rtol=0)
            assert np.allclose(J, T @ J_pin[:3], atol=1e-12, rtol=0)
            assert np.allclose(bias, T @ acc[:3], atol=1e-10, rtol=0)
    assert float(eqs.constraints[1].friction) == 0.4


def _kkt(M, J, rhs_top, rhs_bottom):  # type: ignore[no-untyped-def]
    import numpy as np
    k = J.shape[0]
    K = np.block([[M, -J.T], [J, np.zeros((k, k))]])
    sol = np.linalg.solve(K, np.concatenate([rhs_top, rhs_bottom]))
    return sol[:M.shape[0]], sol[M.shape[0]:]


def test_compiled_3d_contacts_dynamics_and_impact_are_the_kkt_solutions(build_dir: Path) -> None:
    import numpy as np
    import pinocchio as pin
    from test_spatial_pinocchio import random_tree
    model, pm = random_tree(20, 6)       # two feet on chains of enough joints: J of full row rank 6
    model.ground.normal = (0.3, -0.2, 1.0)
    model.contact("ca", "L2")
    model.contact("cb", "L5", friction=0.4)
    robot = rodgen.build(model, build_dir=build_dir)
    assert robot.nrows == 6
    fa, fb = _pin_frame(pm, "ca", "L2"), _pin_frame(pm, "cb", "L5")
    n = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])
    t1 = np.array([1.0, 0, 0]) - n[0] * n
    t1 /= np.linalg.norm(t1)
    T = np.vstack([t1, np.cross(n, t1), n])
    data = pm.createData()
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd, u = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        Ja, aa, _ = _pin_rows(pm, q, qd, fa)
        Jb, ab, _ = _pin_rows(pm, q, qd, fb)
        J = np.vstack([T @ Ja[:3], T @ Jb[:3]])
        gamma = np.concatenate([T @ aa[:3], T @ ab[:3]])
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.rnea(pm, data, q, qd, np.zeros(pm.nv))
        qdd_ref, lam_ref = _kkt(M, J, u - h, -gamma)
        qdd, lam = robot.constrained_dynamics(q, qd, u, active=["ca", "cb"])
        assert np.abs(qdd - qdd_ref).max() <= 1e-8 * max(1.0, np.abs(qdd_ref).max())
        assert np.abs(lam - lam_ref).max() <= 1e-8 * max(1.0, np.abs(lam_ref).max())
        qdd1, lam1 = robot.constrained_dynamics(q, qd, u, active=["cb"])          # one contact held
        qdd_ref1, lam_ref1 = _kkt(M, J[3:], u - h, -gamma[3:])
        assert np.abs(qdd1 - qdd_ref1).max() <= 1e-8 * max(1.0, np.abs(qdd_ref1).max())
        assert np.allclose(lam1[:3], 0.0)
        assert np.abs(lam1[3:] - lam_ref1).max() <= 1e-8 * max(1.0, np.abs(lam_ref1).max())
    # the plastic impact: M (q̇⁺ - q̇⁻) = Jᵀ Λ, J q̇⁺ = 0, at a state where both normal impulses push
    for _ in range(50):
        q, qd = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv)
        Ja, _, _ = _pin_rows(pm, q, qd, fa)
        Jb, _, _ = _pin_rows(pm, q, qd, fb)
        J = np.vstack([T @ Ja[:3], T @ Jb[:3]])
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        qd_ref, imp_ref = _kkt(M, J, M @ qd, np.zeros(6))
        if imp_ref[2] > 0 and imp_ref[5] > 0:
            break
    else:
        pytest.fail("no state with two pushing impulses")
    qd_plus, impulse, after, loss = robot.impact(q, qd, ["ca", "cb"])
    assert sorted(after) == ["ca", "cb"]
    assert np.abs(qd_plus - qd_ref).max() <= 1e-9 * max(1.0, np.abs(qd_ref).max())
    assert np.abs(impulse - imp_ref).max() <= 1e-9 * max(1.0, np.abs(imp_ref).max())
    assert abs(loss - 0.5 * (qd @ M @ qd - qd_ref @ M @ qd_ref)) <= 1e-9 * max(1.0, qd @ M @ qd)
    with pytest.raises(rodgen.runtime.compiled.DynamicsError):     # sliding along one tangent: planar only
        robot.constrained_dynamics(q, qd, np.zeros(pm.nv), active={"ca": "slide_plus"})
    # contact ca slides (its tangential rows replaced by the friction force -mu f_n v_t/|v_t|, mu = 1 by
    # default), cb sticks: the KKT system [M, -Wᵀ; J_held, 0] with W = [J_n,a - mu v̂_tᵀ J_t,a; J_b]
    for _ in range(3):
        q, qd, u = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        Ja, aa, _ = _pin_rows(pm, q, qd, fa)
        Jb, ab, _ = _pin_rows(pm, q, qd, fb)
        Jta, Jna = (T @ Ja[:3])[:2], (T @ Ja[:3])[2]
        vhat = Jta @ qd / np.linalg.norm(Jta @ qd)
        W = np.vstack([Jna - vhat @ Jta, T @ Jb[:3]])
        Jh = np.vstack([Jna, T @ Jb[:3]])
        gamma = np.concatenate([[(T @ aa[:3])[2]], T @ ab[:3]])
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.rnea(pm, data, q, qd, np.zeros(pm.nv))
        K = np.block([[M, -W.T], [Jh, np.zeros((4, 4))]])
        sol = np.linalg.solve(K, np.concatenate([u - h, -gamma]))
        qdd_ref, fn, lam_b = sol[:pm.nv], sol[pm.nv], sol[pm.nv + 1:]
        lam_ref = np.concatenate([-fn * vhat, [fn], lam_b])
        qdd, lam = robot.constrained_dynamics(q, qd, u, active={"ca": "slide", "cb": "stick"})
        assert np.abs(qdd - qdd_ref).max() <= 1e-8 * max(1.0, np.abs(qdd_ref).max())
        assert np.abs(lam - lam_ref).max() <= 1e-8 * max(1.0, np.abs(lam_ref).max())


def _closed_loop_model(rows: int):  # type: ignore[no-untyped-def]
    """A random tree with a loop between the frame of one link and a marker on another placed where (and, for
    6 rows, as) that frame is at the initial coordinates; the same tree in Pinocchio with both frames."""
    import numpy as np
    import pinocchio as pin
    from test_spatial_pinocchio import random_tree
    model, pm = random_tree(4, 6)
    a, k = "L2", "L5"           # a cycle of 7 coordinates through the root: J of full row rank for 6 rows
    data = pm.createData()
    vm = model.validate()
    q0 = np.array([vm.value(c.initial) for c in vm.coordinates()])   # a variable length starts at its length
    pin.forwardKinematics(pm, data, q0)
    oMa, oMk = data.oMi[pm.getJointId(a)], data.oMi[pm.getJointId(k)]
    kMm = oMk.inverse() * (oMa if rows == 6 else pin.SE3(oMk.rotation, oMa.translation))
    rpy = pin.rpy.matrixToRpy(kMm.rotation)
    model.link_named(k).marker("m", xyz=tuple(kMm.translation), rpy=tuple(rpy))
    model.loop("close", a, "m", rows=rows)
    fa = _pin_frame(pm, "a", a)
    fm = _pin_frame(pm, "m", k, pin.SE3(pin.rpy.rpyToMatrix(rpy), kMm.translation))
    return model, pm, fa, fm


@pytest.mark.parametrize("rows", [3, 6])
def test_compiled_loop_dynamics_is_the_kkt_solution_from_pinocchio(rows: int, build_dir: Path) -> None:
    import numpy as np
    import pinocchio as pin
    model, pm, fa, fm = _closed_loop_model(rows)
    robot = rodgen.build(model, build_dir=build_dir)
    assert robot.nrows == rows
    data = pm.createData()
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, qd, u = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        Ja, aa, _ = _pin_rows(pm, q, qd, fa)
        Jm, am, _ = _pin_rows(pm, q, qd, fm)
        J, gamma = (Jm - Ja)[:rows], (am - aa)[:rows]
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.rnea(pm, data, q, qd, np.zeros(pm.nv))
        K = np.block([[M, -J.T], [J, np.zeros((rows, rows))]])
        sol = np.linalg.solve(K, np.concatenate([u - h, -gamma]))
        qdd, lam = robot.constrained_dynamics(q, qd, u)
        assert np.abs(qdd - sol[:pm.nv]).max() <= 1e-8 * max(1.0, np.abs(sol[:pm.nv]).max())
        assert np.abs(lam - sol[pm.nv:]).max() <= 1e-8 * max(1.0, np.abs(sol[pm.nv:]).max())
        assert np.allclose(robot.constraint_jacobian(q), J, atol=1e-12)
        assert np.allclose(robot.constraint_bias(q, qd), gamma, atol=1e-10)
    # the plastic impact onto the loop: M Δq̇ = Jᵀ Λ, J q̇⁺ = 0
    q, qd = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv)
    Ja, _, _ = _pin_rows(pm, q, qd, fa)
    Jm, _, _ = _pin_rows(pm, q, qd, fm)
    J = (Jm - Ja)[:rows]
    M = pin.crba(pm, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    K = np.block([[M, -J.T], [J, np.zeros((rows, rows))]])
    sol = np.linalg.solve(K, np.concatenate([M @ qd, np.zeros(rows)]))
    qd_plus, impulse, _, loss = robot.impact(q, qd)
    assert np.abs(qd_plus - sol[:pm.nv]).max() <= 1e-9 * max(1.0, np.abs(sol[:pm.nv]).max())
    assert np.abs(impulse - sol[pm.nv:]).max() <= 1e-9 * max(1.0, np.abs(sol[pm.nv:]).max())
    assert loss >= 0


def test_open_spatial_loop_is_refused() -> None:
    import numpy as np
    model, _, _, _ = _closed_loop_model(3)
    mk = model.link_named("L5").markers[-1]
    mk.xyz = tuple(np.asarray(mk.xyz) + [0.05, 0, 0])
    with pytest.raises(ModelError, match="loop 'close'.*not closed"):
        rodgen.derive(model)


def test_flat_foot_dynamics_and_impact_are_pinocchios_6d_contact_kkt(build_dir: Path) -> None:
    """A flat foot (6 rows: the frame's origin and orientation held, λ = [f_t1, f_t2, f_n, m_t1, m_t2, m_n] in
    the ground's axes): q̈ and λ are the KKT solution from Pinocchio's mass matrix, bias, 6D frame Jacobian
    and classical acceleration (rotated into the ground's axes) to 1e-8, the impact to 1e-9."""
    import numpy as np
    import pinocchio as pin
    from test_spatial_pinocchio import random_tree
    model, pm = random_tree(5, 6)       # 8 coordinates, six of them on the way to L4
    model.ground.normal = (0.2, 0.1, 1.0)
    model.contact("flat", "L4", friction=0.3, rows=6)
    vm = model.validate()
    assert [(c.name, c.rows) for c in vm.contacts] == [("flat", 6)]
    assert to_dict(vm)["contacts"] == [{"name": "flat", "frame": "L4", "friction": 0.3, "rows": 6}]
    assert load_dict(to_dict(vm)).validate().contacts[0].rows == 6        # YAML's rows: 6 read back
    robot = rodgen.build(model, build_dir=build_dir)
    assert [(b.name, b.kind, b.nrows) for b in robot.constraints] == [("flat", "contact", 6)]
    ff = _pin_frame(pm, "flat", "L4")
    n = np.array([0.2, 0.1, 1.0]) / np.linalg.norm([0.2, 0.1, 1.0])
    t1 = np.array([1.0, 0, 0]) - n[0] * n
    t1 /= np.linalg.norm(t1)
    T6 = np.kron(np.eye(2), np.vstack([t1, np.cross(n, t1), n]))
    data = pm.createData()
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, qd, u = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
        Jf, af, _ = _pin_rows(pm, q, qd, ff)
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.rnea(pm, data, q, qd, np.zeros(pm.nv))
        qdd_ref, lam_ref = _kkt(M, T6 @ Jf, u - h, -T6 @ af)
        qdd, lam = robot.constrained_dynamics(q, qd, u, active=["flat"])
        assert np.abs(qdd - qdd_ref).max() <= 1e-8 * max(1.0, np.abs(qdd_ref).max())
        assert np.abs(lam - lam_ref).max() <= 1e-8 * max(1.0, np.abs(lam_ref).max())
    for _ in range(50):      # the plastic impact onto the flat foot, at a state where its normal impulse pushes
        q, qd = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv)
        Jf, _, _ = _pin_rows(pm, q, qd, ff)
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        qd_ref, imp_ref = _kkt(M, T6 @ Jf, M @ qd, np.zeros(6))
        if imp_ref[2] > 0:
            break
    else:
        pytest.fail("no state with a pushing normal impulse")
    qd_plus, impulse, after, loss = robot.impact(q, qd, ["flat"])
    assert after == ["flat"]
    assert np.abs(qd_plus - qd_ref).max() <= 1e-9 * max(1.0, np.abs(qd_ref).max())
    assert np.abs(impulse - imp_ref).max() <= 1e-9 * max(1.0, np.abs(imp_ref).max())
    with pytest.raises(ValueError, match="flat foot .* does not slide"):
        robot.simulate(np.zeros(2 * pm.nv), 0.1, 1e-3, contacts={"flat": "slide"}, on_slip="slide")
    with pytest.raises(ValueError, match="flat foot .* does not slide"):
        robot.constrained_dynamics(q, qd, np.zeros(pm.nv), active={"flat": "slide"})
    bad = random_tree(5, 6)[0]
    bad.contact("c", "L4", rows=4)
    with pytest.raises(ModelError, match="3 rows .* or 6"):
        bad.validate()


def test_flat_foot_holds_a_free_body_with_its_weights_wrench(build_dir: Path) -> None:
    """A free body (a floating base: nq = 7, nv = 6) held by a flat foot at its frame, its centre of mass c off
    the frame's origin: at rest, in any orientation, q̈ = 0 and λ is the wrench that carries its weight,
    [0, 0, m g] and the moment c × (0, 0, m g) about the origin; the plastic impact of the foot stops it
    (its frame's six velocities are the body's), the impulse's force -m v_c (v_c the world velocity of the
    centre of mass) and the energy lost all of it, ½ (m |v_c|² + ω_bᵀ I_c ω_b)."""
    import numpy as np
    mass, c_b, g = 2.0, np.array([0.1, -0.05, 0.2]), 9.81
    inertia = np.array([[1.0, 0.1, 0.0], [0.1, 1.5, 0.0], [0.0, 0.0, 2.0]])      # about the centre of mass
    model = SpatialModel("flat_free")
    model.link("body", joint="free").body(mass, tuple(c_b), (1.0, 0.1, 0.0, 1.5, 0.0, 2.0))
    model.contact("sole", "body", rows=6)
    robot = rodgen.build(model, build_dir=build_dir)
    assert (robot.nq, robot.nv) == (7, 6)
    rng = np.random.default_rng(8)
    for _ in range(3):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        x, y, z, w = quat
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        q = np.r_[rng.normal(size=3), quat]
        qdd, lam = robot.constrained_dynamics(q, np.zeros(6), None, active=["sole"])
        weight = np.array([0.0, 0.0, mass * g])
        assert np.abs(qdd).max() <= 1e-12
        assert np.allclose(lam, np.r_[weight, np.cross(R @ c_b, weight)], rtol=0, atol=1e-12)
        v = rng.normal(size=6)                     # linear and angular velocity in the body's axes
        v[:3] -= R.T @ np.array([0.0, 0.0, 5.0])   # falling: the normal impulse pushes
        qd_plus, impulse, after, loss = robot.impact(q, v, ["sole"])
        v_c = R @ (v[:3] + np.cross(v[3:], c_b))
        assert after == ["sole"]
        assert np.abs(qd_plus).max() <= 1e-12
        assert np.allclose(impulse[:3], -mass * v_c, rtol=0, atol=1e-10)
        assert abs(loss - 0.5 * (mass * v_c @ v_c + v[3:] @ inertia @ v[3:])) <= 1e-10


def test_recursive_frame_bias_is_the_rate_derivative_of_j_qd() -> None:
    """The recursive method's J̇ q̇ of a 6-row loop (the Newton-Euler recursion's accelerations at q̈ = 0,
    Equations.frame_biases) equals the forward-mode time derivative of J q̇ (the path without them)."""
    import copy

    import numpy as np
    import sympy as sp

    from rodgen.symbolic.constraints import constraint_equations
    model = _closed_loop_model(6)[0]
    eqs = rodgen.derive(model, "recursive")
    assert eqs.frame_biases and "m" in eqs.frame_biases
    other = copy.copy(eqs)
    other.frame_biases, other.assignments = {}, list(eqs.assignments)
    other.constraints = constraint_equations(other)
    subs = list(eqs.q) + list(eqs.qd) + list(eqs.params)
    fast, slow = (sp.lambdify(subs, e.expanded().constraints[0].bias, "numpy") for e in (eqs, other))
    rng = np.random.default_rng(5)
    for _ in range(3):
        vals = list(rng.uniform(-1, 1, len(eqs.q))) + list(rng.normal(size=len(eqs.qd))) \
            + [float(eqs.param_values[s]) for s in eqs.params]
        a, b = np.array(fast(*vals), float).ravel(), np.array(slow(*vals), float).ravel()
        assert np.abs(a).max() > 0.1
        assert np.allclose(a, b, atol=1e-11, rtol=1e-11)


def test_recursive_row_velocity_is_the_jacobian_times_qd() -> None:
    """The recursive method's J q̇ of a flat foot on a floating base and of a 6-row loop (the frames' velocities
    of the Newton-Euler recursion, ConstraintEquations.velocity, which the constrained solve uses) equals the
    rows' Jacobian times the velocities at random states."""
    import numpy as np
    import sympy as sp

    biped = rodgen.derive(rodgen.load(Path(__file__).resolve().parents[1] / "examples" / "spatial" / "biped12.yaml"),
                          "recursive")
    loop = rodgen.derive(_closed_loop_model(6)[0], "recursive")
    rng = np.random.default_rng(23)
    for eqs in (biped, loop):
        for _ in range(2):
            q = rng.uniform(-1, 1, len(eqs.q))
            if eqs.lie_joints:                           # the free joint's quaternion: a unit one
                q[3:7] /= np.linalg.norm(q[3:7])
            vals: dict = {**dict(zip(eqs.q, q)), **dict(zip(eqs.qd, rng.normal(size=len(eqs.qd)))),
                          **{s: float(eqs.param_values[s]) for s in eqs.params}}
            for sym, ex in eqs.assignments:              # the recursion's intermediates, in numbers
                vals[sym] = sp.Float(ex.xreplace(vals))
            for c in eqs.constraints:
                assert c.velocity is not None, c.name
                a = np.array([float(x.xreplace(vals)) for x in c.velocity])
                b = np.array([float(x.xreplace(vals)) for x in c.jacobian * sp.Matrix(eqs.qd)])
                assert np.abs(b).max() > 0.1
                assert np.allclose(a, b, atol=1e-12, rtol=1e-12), (c.name, a - b)
