"""Floating bases (a free joint at the root of a spatial model): Pinocchio's free flyer, one to one.

solo12 and Talos from example-robot-data, read with ``from_urdf(floating=True)``, against Pinocchio's model of
the same file with a ``JointModelFreeFlyer`` root at seeded random states: the compiled forward dynamics =
``aba``, the mass matrix = ``crba``, the inverse dynamics = ``rnea``, to 1e-9. A single free rigid body against
Euler's equations (closed form); the integrators keep the quaternion a unit quaternion and conserve the energy
of a robot in flight; ``integrate``/``difference`` = Pinocchio's; bad input is refused by name.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from _robots import robot_file
from rodgen import contract
from rodgen.codegen.runtime import csrc_root
from rodgen.model.dump import to_dict
from rodgen.model.loader import load_dict
from rodgen.runtime import liegroups
from rodgen.symbolic.numeric import ChainModel, NumericModel

pin = pytest.importorskip("pinocchio")

TOL = 1e-9
SOLO = "solo_description/robots/solo12.urdf"
TALOS = "talos_data/robots/talos_reduced.urdf"

_built: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _seed_pinocchio(request: pytest.FixtureRequest) -> None:
    """pinocchio.randomConfiguration draws from Pinocchio's own generator: seeded per test."""
    pin.seed(sum(map(ord, request.node.name)))


def _robot(relative: str, build_dir: Path) -> tuple[Any, Any]:
    """(compiled floating model, Pinocchio's model with a free-flyer root) of a URDF file, built once. solo12
    is test_floating_contacts' model (its joint limits dropped, four foot contacts that nothing here holds):
    the same model as there and in test_constrained_derivatives, so that the run derives and compiles it, and
    its derivatives' library, once (the build cache), not once per file."""
    if relative not in _built:
        path = robot_file(relative)
        if relative == SOLO:
            from test_floating_contacts import solo
            model = solo()
        else:
            model = rodgen.from_urdf(path, floating=True)
        _built[relative] = (rodgen.build(model, build_dir=build_dir),
                            pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()))
    return _built[relative]


def _maps(robot: Any, pm: Any) -> tuple[np.ndarray, np.ndarray]:
    """Indices of rodgen's q and v entries in Pinocchio's q and v (the root first in both)."""
    qi, vi = list(range(7)), list(range(6))
    for name in robot.coordinates[7:]:
        jid = pm.getJointId(name)
        assert pm.nqs[jid] == 1 and pm.nvs[jid] == 1, name
        qi.append(pm.idx_qs[jid])
        vi.append(pm.idx_vs[jid])
    return np.array(qi), np.array(vi)


def _state(pm: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pinocchio's (q, v, a, tau): a random configuration (unit quaternion) within the joint limits."""
    lo = np.where(np.isfinite(pm.lowerPositionLimit), pm.lowerPositionLimit, -np.pi)
    hi = np.where(np.isfinite(pm.upperPositionLimit), pm.upperPositionLimit, np.pi)
    lo[:3], hi[:3] = -1.0, 1.0
    q = pin.randomConfiguration(pm, lo, hi)
    return q, rng.normal(size=pm.nv), rng.normal(size=pm.nv), rng.normal(size=pm.nv)


#: Talos (about 30 s to derive and compile) is in the slow run: the same path (a URDF with a free-flyer root against
#: aba, crba and rnea) is guarded in the default run by the solo12 case here and, on deeper chains (a free pelvis
#: with two 6-joint legs), by tests/test_bench_walk3d.py::test_forward_dynamics_equals_rodgen (against MuJoCo)
_TALOS_SLOW = pytest.mark.slow(reason="solo12's case and test_bench_walk3d.py::test_forward_dynamics_equals_rodgen "
                                      "guard the same path in the default run")


@pytest.mark.parametrize("relative", [SOLO, pytest.param(TALOS, marks=_TALOS_SLOW)], ids=["solo12", "talos"])
def test_floating_dynamics_match_pinocchio(relative: str, build_dir: Path) -> None:
    robot, pm = _robot(relative, build_dir)
    pd = pm.createData()
    assert (robot.nq, robot.nv, robot.ny) == (pm.nq, pm.nv, pm.nq + pm.nv)
    assert robot.lie_joints == [(0, 0, 0)] and robot.forward == "aba"
    assert robot.velocities[:6] == [f"{robot.coordinates[0][:-2]}_{s}" for s in ("vx", "vy", "vz", "wx", "wy", "wz")]
    qi, vi = _maps(robot, pm)
    B = np.zeros((robot.nv, robot.nu))
    B[np.arange(6, robot.nv), np.arange(robot.nu)] = 1.0     # every joint actuated, the base not
    rng = np.random.default_rng(sum(map(ord, relative)))
    for _ in range(3):
        pq, pv, pa, ptau = _state(pm, rng)
        q, v, a = pq[qi], pv[vi], pa[vi]
        u = ptau[vi][6:]
        tau = np.concatenate([np.zeros(6), u])
        ref = pin.aba(pm, pd, pq, pv, tau[np.argsort(vi)])[vi]
        assert np.abs(robot.forward_dynamics(q, v, u) - ref).max() <= TOL * max(1.0, np.abs(ref).max())
        Mp = pin.crba(pm, pd, pq)
        Mp = (np.triu(Mp) + np.triu(Mp, 1).T)[np.ix_(vi, vi)]
        assert np.abs(robot.mass_matrix(q) - Mp).max() <= TOL * max(1.0, np.abs(Mp).max())
        Qp = pin.rnea(pm, pd, pq, pv, pa)[vi]
        assert np.abs(robot.inverse_dynamics(q, v, a) - Qp).max() <= TOL * max(1.0, np.abs(Qp).max())
        assert np.abs(robot.input_map(q) - B).max() == 0.0
        # the RHS: the configuration derivative of the free flyer (position R v, quaternion 1/2 q (0, w))
        dy = robot.rhs(0.0, np.concatenate([q, v]), u)
        h = 1e-7
        dq = (pin.integrate(pm, pq, h * pv) - pin.integrate(pm, pq, -h * pv)) / (2 * h)
        np.testing.assert_allclose(dy[:robot.nq], dq[qi], atol=1e-7)
        np.testing.assert_allclose(dy[robot.nq:], ref, atol=TOL * max(1.0, np.abs(ref).max()))


def test_free_rigid_body_follows_euler_equations(build_dir: Path) -> None:
    """One free body, centre of mass at its frame's origin: m (v' + w x v) = m R^T g, I w' + w x I w = 0."""
    m = rodgen.SpatialModel("spinner", gravity=(0.0, 0.0, -9.81))
    m.link("body", joint="free").body(2.0, (0, 0, 0), (1.0, 0.0, 0.0, 2.0, 0.0, 3.0))
    robot = rodgen.build(m, build_dir=build_dir)
    I = np.diag([1.0, 2.0, 3.0])
    rng = np.random.default_rng(7)
    for _ in range(5):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        q = np.concatenate([rng.normal(size=3), quat])
        v = rng.normal(size=6)
        lin, w = v[:3], v[3:]
        R = pin.Quaternion(quat[3], *quat[:3]).toRotationMatrix()
        want = np.concatenate([R.T @ np.array([0, 0, -9.81]) - np.cross(w, lin),
                               np.linalg.solve(I, -np.cross(w, I @ w))])
        np.testing.assert_allclose(robot.forward_dynamics(q, v), want, rtol=1e-12, atol=1e-12)
        # the symbolic chain the code stage prints, evaluated in Python: the same M and bias
        chain = ChainModel(rodgen.derive(m))
        np.testing.assert_allclose(chain.mass_matrix(q), robot.mass_matrix(q), atol=1e-13)
        np.testing.assert_allclose(chain.bias(q, v), robot.bias(q, v), atol=1e-12)


def test_quaternion_stays_unit_and_energy_is_conserved_in_flight(build_dir: Path) -> None:
    """solo12 thrown in the air: RK4 and DOPRI5 hold the quaternion's norm to 1e-12 at every stored step
    (it is renormalised after every accepted step) and conserve T + V."""
    robot, pm = _robot(SOLO, build_dir)
    rng = np.random.default_rng(3)
    pq, pv, _, _ = _state(pm, rng)
    qi, vi = _maps(robot, pm)
    y0 = np.concatenate([pq[qi], 0.5 * pv[vi]])
    for method, kw in (("rk4", {"dt": 5e-4}), ("dopri5", {"rtol": 1e-11, "atol": 1e-11})):
        res = robot.simulate(y0, 0.5, method=method, **kw)
        assert res.ok, res.message
        assert res.velocities == robot.velocities and res.qd.shape == (len(res.t), robot.nv)
        norms = np.linalg.norm(res.q[:, 3:7], axis=1)
        assert np.abs(norms - 1.0).max() <= 1e-12, method
        E = res.total_energy
        assert np.abs(E - E[0]).max() <= 1e-7 * max(1.0, abs(E[0])), method
    # the renormalisation bounds the drift whatever the number of steps: 20 000 steps of a fast spin
    spin = y0.copy()
    spin[robot.nq + 3:robot.nq + 6] = [3.0, -2.0, 5.0]
    res = robot.simulate(spin, 2.0, dt=1e-4, store_every=100)
    assert res.ok and np.abs(np.linalg.norm(res.q[:, 3:7], axis=1) - 1.0).max() <= 1e-12
    # batches step the same state
    batch = robot.simulate_batch(np.stack([y0, spin]), 0.1, dt=5e-4, threads=1)
    assert list(batch.codes) == [0, 0], batch.messages
    for i in range(2):
        reached = batch.q[i, :batch.rows[i], 3:7]
        assert len(reached) > 100 and np.abs(np.linalg.norm(reached, axis=1) - 1.0).max() <= 1e-12


def test_quaternion_norm_over_a_million_steps(build_dir: Path) -> None:
    """10^6 RK4 steps of a spinning, falling body (a quarter of a second): the quaternion's norm stays within
    1e-12 of 1 (it is renormalised after every step, so the rounding does not accumulate)."""
    m = rodgen.SpatialModel("spinner_m")
    m.link("body", joint="free").body(2.0, (0, 0, 0), (1.0, 0, 0, 2.0, 0, 3.0))
    robot = rodgen.build(m, build_dir=build_dir)
    y0 = np.zeros(13)
    y0[6], y0[7:10], y0[10:13] = 1.0, [0.3, -0.2, 0.1], [3.0, -2.0, 5.0]
    res = robot.simulate(y0, 1000.0, dt=1e-3, store_every=100_000)
    assert res.ok and len(res.t) == 11 and int(res.extra["steps"]) == 1_000_000
    assert np.abs(np.linalg.norm(res.q[:, 3:7], axis=1) - 1.0).max() <= 1e-12
    E = res.total_energy
    assert np.abs(E - E[0]).max() <= 1e-3 * abs(E[0])


def test_integrate_and_difference_match_pinocchio(build_dir: Path) -> None:
    robot, pm = _robot(SOLO, build_dir)
    qi, vi = _maps(robot, pm)
    rng = np.random.default_rng(11)
    for scale in (1.0, 1e-9, 0.0):
        pq, pv, _, _ = _state(pm, rng)
        pv = scale * pv
        want = pin.integrate(pm, pq, 0.3 * pv)
        got = robot.integrate(pq[qi], pv[vi], 0.3)
        np.testing.assert_allclose(got, want[qi], atol=1e-12)
        q1, _, _, _ = _state(pm, rng)
        np.testing.assert_allclose(robot.difference(pq[qi], q1[qi]), pin.difference(pm, pq, q1)[vi], atol=1e-10)
        back = robot.integrate(pq[qi], robot.difference(pq[qi], q1[qi]))
        np.testing.assert_allclose(back, pin.integrate(pm, pq, pin.difference(pm, pq, q1))[qi], atol=1e-10)
        sign = np.sign(back[3:7] @ q1[3:7])      # q and -q are the same rotation
        np.testing.assert_allclose(back * np.r_[1, 1, 1, [sign] * 4, np.ones(robot.nq - 7)], q1[qi], atol=1e-10)
        # the C (rodgen_lie.c, which CompiledModel calls) and the NumPy reference agree
        np.testing.assert_allclose(got, liegroups.integrate(pq[qi], 0.3 * pv[vi], robot.lie_joints), atol=1e-14)
        np.testing.assert_allclose(robot.difference(pq[qi], q1[qi]),
                                   liegroups.difference(pq[qi], q1[qi], robot.lie_joints, robot.nv), atol=1e-13)
    # rows
    qs = np.stack([pq[qi], q1[qi]])
    assert robot.difference(qs, qs).shape == (2, robot.nv) and np.abs(robot.difference(qs, qs)).max() < 1e-14


def test_table_carries_nv_and_the_free_joints(build_dir: Path) -> None:
    """rodgen_model has the fields nv, nlie, lie_joints of the contract (RODGEN_NV reads nv)."""
    header = csrc_root().joinpath("rodgen_model.h").read_text()
    assert "    int nq;\n" in header and "    int nv;\n" in header
    assert "int nlie;" in header and "const int *lie_joints;" in header
    assert contract.NV.expression.startswith("((m)->nv") and "ny" in contract.SIZES
    robot, pm = _robot(SOLO, build_dir)
    info = robot.table.info()
    assert (info["nq"], info["nv"], info["ny"], info["lie_joints"]) == (pm.nq, pm.nv, pm.nq + pm.nv, [(0, 0, 0)])
    # the header of the generated C names both sizes
    text = robot.header.read_text()
    assert f"_NQ {pm.nq}\n" in text and f"_NV {pm.nv}" in text


def test_bad_input_is_refused_by_name(build_dir: Path) -> None:
    m = rodgen.SpatialModel("bad")
    m.link("a").body(1.0, (0, 0, 0), (1, 0, 0, 1, 0, 1))
    m.link("b", "a", joint="free").body(1.0)
    with pytest.raises(rodgen.ModelError, match=r"link 'b'.*free joint .*ground; link 'b' has the parent 'a'"):
        m.validate()
    z = rodgen.SpatialModel("zero")
    z.link("base", joint="free", initial=(0, 0, 0, 0, 0, 0, 0)).body(1.0, (0, 0, 0), (1, 0, 0, 1, 0, 1))
    with pytest.raises(rodgen.ModelError, match=r"link 'base'.joint.initial.*quaternion.*norm 0"):
        z.validate()
    ok = rodgen.SpatialModel("spinner2")
    ok.link("base", joint="free").body(1.0, (0, 0, 0), (1, 0, 0, 2, 0, 3))
    robot = rodgen.build(ok, build_dir=build_dir)
    y0 = robot.initial_state()
    assert y0.tolist() == [0, 0, 0, 0, 0, 0, 1] + [0] * 6
    y0[3:7] = 0.0
    with pytest.raises(ValueError, match=r"y0: the quaternion \[base_qx, base_qy, base_qz, base_qw\].*norm 0"):
        robot.simulate(y0, 0.1, dt=1e-3)
    with pytest.raises(ValueError, match=r"y0s \(row 1\): the quaternion"):
        robot.simulate_batch(np.stack([robot.initial_state(), y0]), 0.1, dt=1e-3)
    with pytest.raises(rodgen.DerivationError, match="the NumPy evaluator takes models whose velocities"):
        NumericModel(rodgen.derive(ok))
    with pytest.raises(rodgen.DerivationError, match="free, spherical or planar joint: the Lagrange reference"):
        rodgen.derive(ok, method="lagrange")


def test_urdf_floating_joint_makes_the_base_float(build_dir: Path) -> None:
    """A file whose massless world link holds the base by a floating joint: the base floats (Pinocchio reads the
    floating joint as a free flyer too); the YAML dump of the model reads back equal."""
    path = Path(__file__).parent / "data" / "urdf" / "floating.urdf"
    model = rodgen.from_urdf(path)
    vm = model.validate()
    assert [lk.name for lk in vm.links] == ["trunk"] and vm.links[0].joint.type == "free"
    data = to_dict(model)
    assert data["links"][0]["joint"] == {"type": "free"} and to_dict(load_dict(data)) == data
    robot = rodgen.build(model, build_dir=build_dir)
    pm = pin.buildModelFromUrdf(str(path))
    assert pm.joints[1].shortname() == "JointModelFreeFlyer"
    pd = pm.createData()
    rng = np.random.default_rng(5)
    for _ in range(3):
        pq, pv, _, _ = _state(pm, rng)
        ref = pin.aba(pm, pd, pq, pv, np.zeros(6))
        np.testing.assert_allclose(robot.forward_dynamics(pq, pv), ref, atol=TOL)


def _ball_and_slider() -> tuple[Any, Any]:
    """A chain with a spherical and a planar joint between revolute ones, and Pinocchio's model of it."""
    m = rodgen.SpatialModel("ball_slider", gravity=(0.0, -2.0, -9.81))
    bodies = {"a": (1.2, (0.1, 0.0, 0.05), (0.02, 0.001, 0.0, 0.03, 0.002, 0.04)),
              "ball": (0.8, (0.05, -0.1, 0.2), (0.05, 0.0, 0.01, 0.04, 0.0, 0.03)),
              "slider": (0.6, (0.2, 0.1, -0.05), (0.01, 0.002, 0.0, 0.02, 0.001, 0.015)),
              "tip": (0.3, (0.0, 0.0, 0.15), (0.004, 0.0, 0.0, 0.004, 0.0, 0.001))}
    places = {"a": ((0, 0, 0), (0, 0, 0)), "ball": ((0.1, 0.2, 0.3), (0.1, 0.2, 0.3)),
              "slider": ((0.0, 0.0, 0.4), (0.3, -0.2, 0.1)), "tip": ((0.2, 0.0, 0.0), (0.0, 0.0, 0.0))}
    kinds = {"a": ("revolute", (0, 0, 1), pin.JointModelRZ()), "ball": ("spherical", None, pin.JointModelSpherical()),
             "slider": ("planar", None, pin.JointModelPlanar()), "tip": ("revolute", (0, 1, 0), pin.JointModelRY())}
    pm = pin.Model()
    pm.gravity.linear = np.array([0.0, -2.0, -9.81])
    parent, jid = None, 0
    for name in ("a", "ball", "slider", "tip"):
        kind, axis, pj = kinds[name]
        xyz, rpy = places[name]
        kw = {"axis": axis} if axis is not None else {}
        lk = m.link(name, parent, joint=kind, xyz=xyz, rpy=rpy, **kw)
        mass, com, six = bodies[name]
        lk.body(mass, com, six)
        jid = pm.addJoint(jid, pj, pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz, dtype=float)), name)
        xx, xy, xz, yy, yz, zz = six
        pm.appendBodyToJoint(jid, pin.Inertia(mass, np.array(com, dtype=float),
                                              np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])), pin.SE3.Identity())
        parent = name
    return m, pm


def _to_pin(q: np.ndarray) -> np.ndarray:
    """rodgen's q [a, ball quaternion (4), slider x y theta, tip] as Pinocchio's (theta as cos, sin)."""
    return np.concatenate([q[:5], q[5:7], [np.cos(q[7]), np.sin(q[7])], q[8:]])


def _from_pin(pq: np.ndarray) -> np.ndarray:
    return np.concatenate([pq[:5], pq[5:7], [np.arctan2(pq[8], pq[7])], pq[9:]])


def test_spherical_and_planar_joints_match_pinocchio(build_dir: Path) -> None:
    model, pm = _ball_and_slider()
    vm = model.validate()
    assert [c.name for c in vm.coordinates()] == ["q_a", "ball_qx", "ball_qy", "ball_qz", "ball_qw", "slider_x",
                                                  "slider_y", "slider_theta", "q_tip"]
    robot = rodgen.build(model, build_dir=build_dir)
    assert (robot.nq, robot.nv, pm.nv) == (9, 8, 8) and robot.lie_joints == [(1, 1, 1), (2, 5, 4)]
    assert robot.velocities == ["q_a'", "ball_wx", "ball_wy", "ball_wz", "slider_vx", "slider_vy", "slider_wz",
                                "q_tip'"]
    pd = pm.createData()
    rng = np.random.default_rng(21)
    for _ in range(4):
        pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        pv, pa, u = rng.normal(size=8), rng.normal(size=8), rng.normal(size=robot.nu)
        q = _from_pin(pq)
        tau = robot.input_map(q) @ u
        ref = pin.aba(pm, pd, pq, pv, tau)
        assert robot.forward == "aba"
        np.testing.assert_allclose(robot.forward_dynamics(q, pv, u), ref, atol=TOL * max(1.0, np.abs(ref).max()))
        Mp = pin.crba(pm, pd, pq)
        np.testing.assert_allclose(robot.mass_matrix(q), np.triu(Mp) + np.triu(Mp, 1).T, atol=TOL)
        np.testing.assert_allclose(robot.inverse_dynamics(q, pv, pa), pin.rnea(pm, pd, pq, pv, pa), atol=TOL)
        # dq/dt of the RHS = the rate of Pinocchio's integrate along v
        h = 1e-6
        dq = (_from_pin(pin.integrate(pm, pq, h * pv)) - _from_pin(pin.integrate(pm, pq, -h * pv))) / (2 * h)
        np.testing.assert_allclose(robot.rhs(0.0, np.concatenate([q, pv]), u)[:9], dq, atol=1e-7)
        # integrate and difference
        # (compared in Pinocchio's coordinates: theta as cos, sin, whatever its turn)
        np.testing.assert_allclose(_to_pin(robot.integrate(q, pv, 0.7)), pin.integrate(pm, pq, 0.7 * pv),
                                   atol=1e-12)
        pq1 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        np.testing.assert_allclose(robot.difference(q, _from_pin(pq1)), pin.difference(pm, pq, pq1), atol=1e-10)
    # the ball's quaternion stays a unit quaternion in a simulation; the energy is conserved (no inputs)
    y0 = np.concatenate([_from_pin(pq), 2.0 * pv])
    res = robot.simulate(y0, 1.0, method="dopri5", rtol=1e-11, atol=1e-11)
    assert res.ok and np.abs(np.linalg.norm(res.q[:, 1:5], axis=1) - 1.0).max() <= 1e-12
    E = res.total_energy
    assert np.abs(E - E[0]).max() <= 1e-7 * max(1.0, abs(E[0]))
    # YAML round trip
    data = to_dict(model)
    assert data["links"][1]["joint"]["type"] == "spherical" and to_dict(load_dict(data)) == data


def test_urdf_planar_joint_is_pinocchios(build_dir: Path) -> None:
    path = Path(__file__).parent / "data" / "urdf" / "planar.urdf"
    robot = rodgen.build(rodgen.from_urdf(path), build_dir=build_dir)
    pm = pin.buildModelFromUrdf(str(path))
    assert pm.joints[1].shortname() == "JointModelPlanar" and robot.velocities == ["slider_vx", "slider_vy",
                                                                                  "slider_wz"]
    pd = pm.createData()
    rng = np.random.default_rng(2)
    for _ in range(3):
        theta = rng.uniform(-3, 3)
        q = np.array([rng.normal(), rng.normal(), theta])
        pq = np.array([q[0], q[1], np.cos(theta), np.sin(theta)])
        v = rng.normal(size=3)
        np.testing.assert_allclose(robot.forward_dynamics(q, v), pin.aba(pm, pd, pq, v, np.zeros(3)), atol=TOL)


def test_rhs_jacobian_on_the_tangent_space_matches_pinocchio(build_dir: Path) -> None:
    """rhs_jacobian of a floating robot = [[0, 1], [d qdd/d dq, d qdd/d v]] with Pinocchio's
    computeABADerivatives (dq on the tangent space: q moved by integrate(q, dq))."""
    robot, pm = _robot(SOLO, build_dir)
    qi, vi = _maps(robot, pm)
    pd = pm.createData()
    rng = np.random.default_rng(13)
    n = robot.nv
    for _ in range(2):
        pq, pv, _, ptau = _state(pm, rng)
        ptau[:6] = 0.0
        q, v, u = pq[qi], pv[vi], ptau[vi][6:]
        J = robot.rhs_jacobian(q, v, u)
        assert J.shape == (2 * n, 2 * n)
        pin.computeABADerivatives(pm, pd, pq, pv, ptau)
        dq, dv = pd.ddq_dq[np.ix_(vi, vi)], pd.ddq_dv[np.ix_(vi, vi)]
        scale = max(1.0, np.abs(dq).max(), np.abs(dv).max())
        np.testing.assert_array_equal(J[:n], np.hstack([np.zeros((n, n)), np.eye(n)]))
        assert np.abs(J[n:, :n] - dq).max() <= 1e-8 * scale
        assert np.abs(J[n:, n:] - dv).max() <= 1e-8 * scale
    # ode().jac would be d f/d y in y = [q, qd]: refused for such a model
    f = robot.ode()
    with pytest.raises(rodgen.RodgenError, match="tangent space"):
        f.jac(0.0, np.concatenate([q, v]))
    # the spherical and planar joints too: against central differences along integrate
    model, pmb = _ball_and_slider()
    ball = rodgen.build(model, build_dir=build_dir)
    pq = pin.randomConfiguration(pmb, -np.ones(pmb.nq), np.ones(pmb.nq))
    q, v = _from_pin(pq), rng.normal(size=8)
    J = ball.rhs_jacobian(q, v)
    h = 1e-6
    for k in range(8):
        e = np.zeros(8)
        e[k] = h
        fd = ball.forward_dynamics
        num = (fd(ball.integrate(q, e), v) - fd(ball.integrate(q, -e), v)) / (2 * h)
        np.testing.assert_allclose(J[8:, k], num, atol=1e-6)
        num = (ball.forward_dynamics(q, v + e) - ball.forward_dynamics(q, v - e)) / (2 * h)
        np.testing.assert_allclose(J[8:, 8 + k], num, atol=1e-6)
