"""Force elements on spatial models, checked against independent sources: Pinocchio (frame placements,
velocities and Jacobians, ``aba`` with the elements' Jᵀ F added to the joint forces) with every law written
again here in NumPy; the spatial Lagrange reference (its own positions); energy conservation of undamped
springs; a compliant contact holding a body's weight; and a planar model described spatially (same element
forces and accelerations)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from rodgen.errors import ModelError
from rodgen.model.spatial import SpatialGround

pin = pytest.importorskip("pinocchio")

TOL = 1e-10
NORMAL = np.array([0.1, -0.2, 1.0])
HEIGHT = 0.2
K_C, C_C, MU, VS = 2.0e3, 0.7, 0.8, 0.05        # ground contact
CA, CC = 1.5, 4.0                                # viscous, along / across
MU_I, N_I, VS_I = 0.6, 5.0, 0.02                 # isotropic Coulomb
K_S, C_S, L0 = 40.0, 0.9, 0.3                    # spring-damper
T = 0.7                                          # the time of the point force's expression

# links: name, parent, axis, xyz, rpy, mass, com, inertia (ixx, ixy, ixz, iyy, iyz, izz)
LINKS = [
    ("L0", None, (0.0, 0.0, 1.0), (0.0, 0.0, 0.6), (0.0, 0.0, 0.0), 1.2, (0.3, 0.02, -0.01),
     (0.02, 0.001, 0.0, 0.05, 0.002, 0.04)),
    ("L1", "L0", (0.0, 1.0, 0.0), (0.6, 0.0, 0.0), (0.0, 0.0, 0.0), 0.9, (0.25, -0.03, 0.02),
     (0.015, 0.0, 0.001, 0.03, 0.0, 0.035)),
    ("L2", "L1", (0.0, 1.0, 0.0), (0.5, 0.05, 0.0), (0.2, 0.0, 0.0), 0.7, (0.2, 0.01, 0.03),
     (0.01, 0.0005, 0.0, 0.02, 0.001, 0.018)),
]
MARKERS = {"tip0": ("L0", (0.55, 0.02, 0.0), (0.0, 0.0, 0.0)),
           "tip2": ("L2", (0.45, 0.05, -0.02), (0.0, 0.0, 0.7))}
ALONG = (1.0, 0.2, 0.0)      # L2's link axis (in its frame), for the friction laws


def _spatial() -> rodgen.SpatialModel:
    m = rodgen.SpatialModel("forces3d", gravity=(0.0, 0.0, -9.81))
    m.ground = SpatialGround(tuple(NORMAL), HEIGHT)
    m.parameter("k", 3.0)
    for name, parent, axis, xyz, rpy, mass, com, inertia in LINKS:
        lk = m.link(name, parent, axis=axis, xyz=xyz, rpy=rpy, along=ALONG if name == "L2" else (1.0, 0.0, 0.0))
        lk.body(mass, com, inertia, name=f"c{name[1]}")
    for name, (link, xyz, rpy) in MARKERS.items():
        m.link_named(link).marker(name, xyz=xyz, rpy=rpy)
    m.point_force("push", "tip2", ("0.3*t", "k*q_L0 + q_L1_dot", "-1.5"))
    m.point_force("local", "tip2", (1.0, -2.0, 0.5), frame="link")
    m.spring_damper("spring", "tip0", "tip2", stiffness=K_S, damping=C_S, rest_length=L0)
    m.ground_contact("foot", "tip2", stiffness=K_C, exponent=1.5, damping=C_C, friction=MU, velocity_scale=VS)
    m.viscous_friction("drag", "tip2", along=CA, across=CC)
    m.coulomb_friction("dry", "c1", coefficient=MU_I, normal=N_I, velocity_scale=VS_I)
    return m


def _pinocchio() -> tuple["pin.Model", dict[str, int]]:
    pm = pin.Model()
    pm.gravity.linear = np.array([0.0, 0.0, -9.81])
    joints: dict[str, int] = {}
    for name, parent, axis, xyz, rpy, mass, com, inertia in LINKS:
        a = np.array(axis) / np.linalg.norm(axis)
        place = pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz))
        jid = pm.addJoint(0 if parent is None else joints[parent], pin.JointModelRevoluteUnaligned(a), place, name)
        joints[name] = jid
        xx, xy, xz, yy, yz, zz = inertia
        Ic = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        pm.appendBodyToJoint(jid, pin.Inertia(mass, np.array(com), Ic), pin.SE3.Identity())
        pm.addFrame(pin.Frame(f"c{name[1]}", jid, pin.SE3(np.eye(3), np.array(com)), pin.FrameType.OP_FRAME))
    for name, (link, xyz, rpy) in MARKERS.items():
        pm.addFrame(pin.Frame(name, joints[link], pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz)),
                              pin.FrameType.OP_FRAME))
    return pm, joints


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _laws(pm: "pin.Model", data: "pin.Data", joints: dict[str, int], q: np.ndarray, v: np.ndarray
          ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every element's force on its point (ground frame) and the sum of their generalized forces, from
    Pinocchio's kinematics and the laws written out here."""
    pin.forwardKinematics(pm, data, q, v)
    pin.computeJointJacobians(pm, data, q)
    pin.updateFramePlacements(pm, data)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def frame(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        fid = pm.getFrameId(name)
        J = pin.getFrameJacobian(pm, data, fid, lwa)[:3]
        return data.oMf[fid].translation.copy(), data.oMf[fid].rotation.copy(), J @ v, J

    n = _unit(NORMAL)
    t1 = _unit(np.array([1.0, 0, 0]) - n[0] * n)
    t2 = np.cross(n, t1)
    forces: dict[str, np.ndarray] = {}
    Q = np.zeros(pm.nv)
    r2, R2, v2, J2 = frame("tip2")
    forces["push"] = np.array([0.3 * T, 3.0 * q[0] + v[1], -1.5])
    forces["local"] = R2 @ np.array([1.0, -2.0, 0.5])
    r0, _, v0, J0 = frame("tip0")
    d, dv = r2 - r0, v2 - v0
    L = np.linalg.norm(d)
    forces["spring"] = (K_S * (L - L0) + C_S * d @ dv / L) * d / L
    depth, rate = HEIGHT - n @ r2, -n @ v2
    fn = K_C * max(depth, 0.0) ** 1.5 * (1 + C_C * rate)
    Fn = fn if depth > 0 and fn > 0 else 0.0
    vt = np.array([t1 @ v2, t2 @ v2])
    s = np.linalg.norm(vt)
    forces["foot"] = Fn * n - MU * Fn * np.tanh(s / VS) / s * (vt[0] * t1 + vt[1] * t2)
    a = data.oMi[joints["L2"]].rotation @ _unit(np.array(ALONG))
    ea = _unit(a - (a @ n) * n)
    ec = np.cross(n, ea)
    forces["drag"] = -(CA * (ea @ v2) * ea + CC * (ec @ v2) * ec)
    _, _, v1, J1 = frame("c1")
    a1 = data.oMi[joints["L1"]].rotation @ np.array([1.0, 0, 0])
    e1 = _unit(a1 - (a1 @ n) * n)
    c1 = np.cross(n, e1)
    va, vc = e1 @ v1, c1 @ v1
    forces["dry"] = -MU_I * N_I * (va * e1 + vc * c1) / np.sqrt(va ** 2 + vc ** 2 + VS_I ** 2)
    for name in ("push", "local", "foot", "drag"):
        Q += J2.T @ forces[name]
    Q += (J0 - J2).T @ forces["spring"]
    Q += J1.T @ forces["dry"]
    return forces, Q


@pytest.fixture(scope="module")
def robot(build_dir: Path) -> "rodgen.runtime.CompiledModel":
    return rodgen.build(_spatial(), build_dir=build_dir)


def test_element_forces_and_dynamics_match_pinocchio(robot: "rodgen.runtime.CompiledModel") -> None:
    pm, joints = _pinocchio()
    data = pm.createData()
    assert robot.forward == "aba"
    assert robot.force_names == ["push", "local", "spring", "foot", "drag", "dry"]
    rng = np.random.default_rng(3)
    touching = 0
    for _ in range(12):
        q = rng.uniform(-np.pi, np.pi, 3)
        v = rng.normal(size=3)
        u = rng.normal(size=3)
        forces, Q = _laws(pm, data, joints, q, v)
        touching += bool(np.any(forces["foot"]))
        f = robot.element_forces(q, v, u, t=T)
        assert f.shape == (6, 3)
        for i, name in enumerate(robot.force_names):
            assert np.abs(f[i] - forces[name]).max() <= TOL * max(1.0, np.abs(forces[name]).max()), name
        a_pin = pin.aba(pm, data, q, v, u + Q)
        a = robot.forward_dynamics(q, v, u, t=T)
        assert np.abs(a - a_pin).max() <= TOL * max(1.0, np.abs(a_pin).max())
        h = robot.bias(q, v, t=T)
        h_pin = pin.rnea(pm, data, q, v, np.zeros(3)) - Q
        assert np.abs(h - h_pin).max() <= TOL * max(1.0, np.abs(h_pin).max())
    assert 0 < touching < 12          # the contact law was seen on and off the ground


def test_undamped_spring_conserves_energy(build_dir: Path) -> None:
    m = rodgen.SpatialModel("spring3d", gravity=(0.0, 0.0, -9.81))
    for name, parent, axis, xyz, rpy, mass, com, inertia in LINKS[:2]:
        m.link(name, parent, axis=axis, xyz=xyz, rpy=rpy).body(mass, com, inertia)
    m.link_named("L1").marker("tip", xyz=(0.5, 0.1, 0.0))
    m.link_named("L0").marker("anchor0", xyz=(0.2, -0.1, 0.0))
    m.link("base", None, joint="fixed", xyz=(0.3, 0.4, 0.2)).marker("anchor")
    m.spring_damper("s", "anchor", "tip", stiffness=25.0, rest_length=0.1)
    m.spring_damper("s2", "anchor0", "tip", stiffness=10.0, rest_length=0.2)
    robot = rodgen.build(m, build_dir=build_dir)
    y0 = np.array([0.3, -0.4, 1.0, 0.5])
    res = robot.simulate(y0, 2.0, 1e-4, method="rk4")
    q, qd = res.q, res.qd

    def spring_energy(qq: np.ndarray) -> np.ndarray:
        fr = robot.frames(qq)
        a, b, c = fr["anchor"][0], fr["tip"][0], fr["anchor0"][0]
        return (0.5 * 25.0 * (np.linalg.norm(b - a, axis=-1) - 0.1) ** 2
                + 0.5 * 10.0 * (np.linalg.norm(b - c, axis=-1) - 0.2) ** 2)

    T_, V_ = robot.energy(q, qd)
    E = T_ + V_ + spring_energy(q)
    assert np.ptp(spring_energy(q)) > 0.1          # the springs work
    assert np.abs(E - E[0]).max() < 1e-8 * max(1.0, abs(E[0]))


def test_compliant_contact_brings_a_dropped_body_to_rest(build_dir: Path) -> None:
    """A body on three slides (x, y, z) dropped with a sliding speed on a tilted plane's contact: it comes to
    rest, the contact force balances the weight (normal and friction together)."""
    m = rodgen.SpatialModel("drop3d", gravity=(0.0, 0.0, -9.81))
    m.ground = SpatialGround((0.0, 0.0, 1.0), 0.0)
    m.link("sx", None, joint="prismatic", axis=(1, 0, 0)).body(0.0)
    m.link("sy", "sx", joint="prismatic", axis=(0, 1, 0)).body(0.0)
    m.link("sz", "sy", joint="prismatic", axis=(0, 0, 1)).body(2.0, name="ball")
    m.ground_contact("c", "ball", stiffness=1e4, exponent=1.5, damping=5.0, friction=0.9, velocity_scale=0.01)
    robot = rodgen.build(m, build_dir=build_dir)
    y0 = np.array([0.0, 0.0, 0.3, 0.5, -0.3, 0.0])
    res = robot.simulate(y0, 3.0, 1e-4, method="rk4", store_every=100)
    q, qd = res.q[-1], res.qd[-1]
    f = robot.element_forces(q, qd)[0]
    assert np.abs(qd).max() < 1e-3
    assert abs(f[2] - 2.0 * 9.81) < 1e-3 * 2.0 * 9.81
    assert np.abs(f[:2]).max() < 1e-2
    assert abs(res.q[0, 0] - q[0]) > 0.01        # it slid before it stopped


def _planar_pair(plane: str) -> tuple[rodgen.Model, rodgen.SpatialModel]:
    """A two-link planar chain and the same chain described spatially (revolute joints about z, links along x).
    ``plane="horizontal"``: a snake's links lying on the ground z = 0 (friction on the plane of motion);
    ``"vertical"``: a chain in a vertical plane over the ground line y = 0.1 (compliant contact)."""
    g = (0.0, -9.81) if plane == "vertical" else (0.0, 0.0)
    p = rodgen.Model(f"pl_{plane}", gravity=g)
    s = rodgen.SpatialModel(f"sp_{plane}", gravity=(g[0], g[1], 0.0))
    if plane == "vertical":
        p.ground = rodgen.Ground(height=-1.1)
        s.ground = SpatialGround((0.0, 1.0, 0.0), -1.1)
    for name, parent in (("a", None), ("b", "a")):
        lk = p.link(name, parent=parent, angle="relative")
        lk.rigid(f"{name}seg", 0.8, masses=[rodgen.PointMass(1.1, fraction=0.5, name=f"{name}m")],
                 rods=[rodgen.Rod(0.4)])
        lk.marker(f"{name}tip", f"{name}seg", fraction=1.0)
        sl = s.link(name, parent, coordinate=f"th_{name}")
        sl.rigid(f"{name}seg", 0.8, masses=[rodgen.PointMass(1.1, fraction=0.5, name=f"{name}m")],
                 rods=[rodgen.Rod(0.4, inertia=0.4 * 0.8 ** 2 / 12)])
        sl.marker(f"{name}tip", f"{name}seg", fraction=1.0)
    return p, s


def test_planar_and_spatial_descriptions_give_the_same_forces(build_dir: Path) -> None:
    for plane in ("horizontal", "vertical"):
        p, s = _planar_pair(plane)
        for m in (p, s):
            three = isinstance(m, rodgen.SpatialModel)
            m.point_force("f", "btip", ("0.5*th_a_dot", "2*t", "0") if three else ("0.5*th_a_dot", "2*t"))
            m.point_force("fl", "am", (0.3, -0.7, 0.0) if three else (0.3, -0.7), frame="link")
            m.spring_damper("sd", "atip", "bm", stiffness=12.0, damping=0.4, rest_length=0.1)
            if plane == "horizontal":
                m.viscous_friction("v", "bm", along=0.5, across=6.0)
                m.coulomb_friction("c", "btip", along=0.3, across=0.9, normal=4.0)
                m.coulomb_friction("ci", "am", coefficient=0.4, normal=2.0)
            else:
                m.ground_contact("gc", "btip", stiffness=3e3, damping=0.5, friction=0.7)
        rp = rodgen.build(p, build_dir=build_dir)
        rs = rodgen.build(s, build_dir=build_dir)
        rng = np.random.default_rng(11)
        contact = 0
        for _ in range(10):
            q = rng.uniform(-np.pi, np.pi, 2)
            qd = rng.normal(size=2)
            fp, fs = rp.element_forces(q, qd, t=0.4), rs.element_forces(q, qd, t=0.4)
            assert fp.shape == (len(p.forces), 2) and fs.shape == (len(p.forces), 3)
            assert np.abs(fs[:, 2]).max() <= 1e-12
            assert np.abs(fs[:, :2] - fp).max() <= 1e-10 * max(1.0, np.abs(fp).max())
            a_p, a_s = rp.forward_dynamics(q, qd, t=0.4), rs.forward_dynamics(q, qd, t=0.4)
            assert np.abs(a_p - a_s).max() <= 1e-9 * max(1.0, np.abs(a_p).max())
            contact += plane == "vertical" and bool(np.any(fp[-1]))
        assert plane == "horizontal" or contact > 0


def test_bad_force_elements_are_refused_with_the_place() -> None:
    m = _spatial()
    m.point_force("flat", "tip2", (1.0, 2.0))
    with pytest.raises(ModelError, match=r"force 'flat'.*\[fx, fy, fz\]"):
        m.validate()
    m = _spatial()
    m.spring_damper("bad", "tip2", "tpi0", stiffness=1.0)
    with pytest.raises(ModelError, match=r"force 'bad'.*unknown point 'tpi0'.*tip0"):
        m.validate()
    m = _spatial()
    m.ground_contact("neg", "tip2", stiffness=1.0, friction=-0.5)
    with pytest.raises(ModelError, match=r"force 'neg'.*friction"):
        m.validate()
    m = _spatial()
    m.point_force("u", "tip2", inputs=True)
    with pytest.raises(ModelError, match=r"planar models only"):
        m.validate()


def test_spatial_force_elements_in_yaml_round_trip(tmp_path: Path) -> None:
    """The YAML schema of the planar forces, with three components: loaded, dumped and loaded again gives the
    same validated elements, and a two-component force is refused with the place."""
    text = """
name: yaml3d
spatial: true
ground: {normal: [0, 0, 1], height: -0.5}
parameters: {k: 20.0}
links:
  - name: arm
    joint: {type: revolute, axis: [0, 1, 0]}
    bodies: [{mass: 1.0, com: [0.5, 0, 0], inertia: [0.01, 0, 0, 0.08, 0, 0.08], name: c}]
    markers: [{name: tip, xyz: [1.0, 0, 0]}]
  - name: post
    joint: {type: fixed, xyz: [0.2, 0, 1.0]}
    markers: [{name: top}]
forces:
  - {name: push, type: point_force, at: tip, force: [0, "0.1*t", "-k*q_arm"]}
  - {name: sd, type: spring_damper, at: top, b: tip, stiffness: k, damping: 0.3, rest_length: 0.4}
  - {name: foot, type: ground_contact, at: tip, stiffness: 1.0e4, friction: 0.5}
"""
    path = tmp_path / "m.yaml"
    path.write_text(text)
    vm = rodgen.load(path).validate()
    assert [f.type for f in vm.forces] == ["point_force", "spring_damper", "ground_contact"]
    assert vm.forces[1].b == "tip" and vm.forces[1].rest_length is not None
    again = tmp_path / "again.yaml"
    again.write_text(rodgen.dump(vm))
    vm2 = rodgen.load(again).validate()
    assert rodgen.dump(vm2) == rodgen.dump(vm)
    assert [(f.name, f.type, f.point, f.b) for f in vm2.forces] == [(f.name, f.type, f.point, f.b) for f in vm.forces]
    for f, g in zip(vm.forces, vm2.forces):
        for fld in ("stiffness", "damping", "friction", "rest_length", "exponent"):
            a, b = getattr(f, fld), getattr(g, fld)
            assert (a is None) == (b is None) and (a is None or vm.value(a) == vm2.value(b))
    path.write_text(text.replace('force: [0, "0.1*t", "-k*q_arm"]', "force: [0, 1]"))
    with pytest.raises(ModelError, match=r"force 'push'.*\[fx, fy, fz\]"):
        rodgen.load(path).validate()


def _hunt_crossley_expressions(h: str, v: str, vt: list[str], k: float, c: float, mu: float, vs: float
                               ) -> tuple[str, list[str]]:
    """A Hunt–Crossley contact with regularised friction written with point states: ``h`` the height above
    the ground, ``v`` its rate, ``vt`` the sliding velocity's components (gait2d's law, as an expression)."""
    dp = f"(abs({h}) - ({h}))/2"
    fn = f"{k}*abs({dp})**1.5*(1 - {c}*{v})"     # abs: no negative rounding error under the power
    Fn = f"(({fn}) + abs({fn}))/2"
    if len(vt) == 1:
        return Fn, [f"-{mu}*{Fn}*tanh({vt[0]}/{vs})"]
    s = f"sqrt({vt[0]}**2 + {vt[1]}**2)"
    return Fn, [f"-{mu}*{Fn}*tanh({s}/{vs})/({s})*{x}" for x in vt]


def test_point_states_write_gait2d_contact_as_a_point_force(build_dir: Path) -> None:
    """A contact law written as a point force from the point's height and sliding speed (x_<point>,
    vy_<point> ...) equals the built-in ground_contact: planar (ground line y = -1.1) and spatial (z = 0.2)."""
    p, _ = _planar_pair("vertical")
    p.ground_contact("builtin", "btip", stiffness=3e3, exponent=1.5, damping=0.5, friction=0.7, velocity_scale=0.01)
    Fn, (Ft,) = _hunt_crossley_expressions("y_btip + 1.1", "vy_btip", ["vx_btip"], 3e3, 0.5, 0.7, 0.01)
    p.point_force("written", "btip", (Ft, Fn))
    s = _spatial()
    s.forces = [f for f in s.forces if f.name == "foot"]
    s.ground = SpatialGround((0.0, 0.0, 1.0), HEIGHT)
    Fn3, (Fx, Fy) = _hunt_crossley_expressions(f"z_tip2 - {HEIGHT}", "vz_tip2", ["vx_tip2", "vy_tip2"],
                                                K_C, C_C, MU, VS)
    s.point_force("written", "tip2", (Fx, Fy, Fn3))
    rng = np.random.default_rng(2)
    for model, n in ((p, 2), (s, 3)):
        robot = rodgen.build(model, build_dir=build_dir)
        on = 0
        for _ in range(40):
            q, qd = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n)
            f = robot.element_forces(q, qd)
            assert np.abs(f[-1] - f[-2]).max() <= 1e-10 * max(1.0, np.abs(f[-2]).max())
            on += bool(np.any(f[-2]))
        assert 0 < on < 40


def test_unknown_point_state_is_refused_with_a_suggestion() -> None:
    m = _spatial()
    m.point_force("typo", "tip2", ("0", "0", "-vz_tip3"))
    with pytest.raises(ModelError, match=r"force 'typo'.*'vz_tip3'.*did you mean 'vz_tip2'"):
        m.validate()
    p, _ = _planar_pair("vertical")
    p.point_force("noz", "btip", ("z_btip", "0"))
    with pytest.raises(ModelError, match=r"'z_btip'.*point state \(x/y/vx/vy_<point>\)"):
        p.validate()


def test_spatial_lagrange_reference_gives_the_same_generalized_forces() -> None:
    """The spatial Lagrange reference, whose frames are its own positions, and the recursive derivation give the
    same Jᵀ F (a spring-damper between two links, a point force in a marker's axes, viscous drag)."""
    import sympy as sp
    m = rodgen.SpatialModel("lag3d", gravity=(0.0, 0.0, -9.81))
    for name, parent, axis, xyz, rpy, mass, com, inertia in LINKS[:2]:
        m.link(name, parent, axis=axis, xyz=xyz, rpy=rpy).body(mass, com, inertia)
    m.link_named("L0").marker("a0", xyz=(0.3, 0.1, 0.0))
    m.link_named("L1").marker("b1", xyz=(0.5, 0.0, 0.1), rpy=(0.0, 0.0, 0.4))
    m.spring_damper("s", "a0", "b1", stiffness=K_S, damping=C_S, rest_length=L0)
    m.point_force("f", "b1", ("q_L0_dot", "2*t", "-1"), frame="link")
    m.viscous_friction("v", "b1", along=CA, across=CC)
    rec, lag = rodgen.derive(m, "recursive"), rodgen.derive(m, "lagrange")
    rng = np.random.default_rng(8)

    def F(eqs: "rodgen.symbolic.Equations") -> "object":
        args = [*eqs.q, *eqs.qd, eqs.t, *eqs.params]
        return sp.lambdify(args, eqs.F, "numpy"), [eqs.param_values[s] for s in eqs.params]

    (fr, pr), (fl, pl) = F(rec), F(lag)
    for _ in range(5):
        q, qd = rng.uniform(-np.pi, np.pi, 2), rng.normal(size=2)
        a = np.asarray(fr(*q, *qd, T, *pr), dtype=float).ravel()
        b = np.asarray(fl(*q, *qd, T, *pl), dtype=float).ravel()
        assert np.abs(a).max() > 0.1
        assert np.abs(a - b).max() <= 1e-10 * max(1.0, np.abs(b).max())


def test_a_link_name_names_its_frame() -> None:
    """A force element at a link's bare name acts at the link's frame ``<link>.joint``, as a contact does
    (a URDF link's name is its frame); the same element given the frame's full name is the same element."""
    for at in ("L1", "L1.joint"):
        m = _spatial()
        m.point_force("at_link", at, (1.0, 0.0, 0.0))
        m.spring_damper("to_link", "tip0", at, stiffness=2.0)
        vm = m.validate()
        forces = {f.name: f for f in vm.forces}
        assert forces["at_link"].point == "L1.joint" and forces["at_link"].link == "L1"
        assert forces["to_link"].b == "L1.joint"
    m = _spatial()
    m.point_force("nowhere", "L9", (1.0, 0.0, 0.0))
    with pytest.raises(ModelError, match=r"force 'nowhere'\.at: unknown point 'L9'"):
        m.validate()
