"""Contacts and loops on a floating base (a free-flyer root, nq = nv + 1): solo12 from example-robot-data with
four point contacts at its feet against Pinocchio's model of the same file with a ``JointModelFreeFlyer`` root.

At seeded random states the compiled constrained dynamics (q̈ in the velocities' space and λ) is the KKT
solution built from Pinocchio's mass matrix, nonlinear effects, frame Jacobians (LOCAL_WORLD_ALIGNED) and
classical accelerations to 1e-8, through both the generated ``constrained_solve`` and the runtime's
factorisation of ``constrained_terms``; the impact map is the KKT impulse solution to 1e-9; the contact
inverse dynamics balances Pinocchio's equations of motion; a 3-row loop between a foot and a marker on the
base is the KKT solution of Pinocchio's frame constraint. The joint limits of the URDF are dropped (they
would be inactive limit blocks)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from _robots import robot_file
from rodgen.codegen import CodegenOptions
from rodgen.model.core import Friction

pin = pytest.importorskip("pinocchio")

SOLO = "solo_description/robots/solo12.urdf"
FEET = ("FL", "FR", "HL", "HR")
_built: dict[str, Any] = {}


def solo(contacts: bool = True, loop: bool = False) -> rodgen.SpatialModel:
    """solo12 with a free-flyer root, its joint limits dropped; four foot contacts (friction 1) and/or a
    3-row loop between the FL foot and a marker on the base placed where the foot is at q0 with dry friction
    (static 0.3, kinetic 0.2 N m) on the HR knee."""
    m = rodgen.from_urdf(robot_file(SOLO), floating=True)
    for lk in m.links:
        lk.joint.limits = None
    if contacts:
        for leg in FEET:
            m.contact(leg, f"{leg}_FOOT", friction=1.0)
    if loop:
        m.name = "solo_loop"
        pm = pin.buildModelFromUrdf(str(robot_file(SOLO)), pin.JointModelFreeFlyer())
        pd = pm.createData()
        pin.framesForwardKinematics(pm, pd, pin.neutral(pm))
        foot = pd.oMf[pm.getFrameId("FL_FOOT")].translation
        m.link_named("base_link").marker("anchor", xyz=tuple(float(x) for x in foot))
        m.loop("fl_anchor", "FL_FOOT", "anchor")
        m.link_named("HR_LOWER_LEG").joint.friction = Friction(0.3, 0.2)
    return m


def _robot(key: str, build_dir: Path) -> tuple[Any, Any]:
    if key not in _built:
        model = solo(contacts=key == "contacts", loop=key == "loop")
        _built[key] = (rodgen.build(model, build_dir=build_dir),
                       pin.buildModelFromUrdf(str(robot_file(SOLO)), pin.JointModelFreeFlyer()))
    return _built[key]


def _maps(robot: Any, pm: Any) -> tuple[np.ndarray, np.ndarray]:
    """Indices of rodgen's q and v entries in Pinocchio's q and v (the root first in both)."""
    qi, vi = list(range(7)), list(range(6))
    for name in robot.coordinates[7:]:
        jid = pm.getJointId(name)
        qi.append(pm.idx_qs[jid])
        vi.append(pm.idx_vs[jid])
    return np.array(qi), np.array(vi)


def _state(pm: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pinocchio's (q, v, tau) at random: unit quaternion, joints within ±π, base within ±1 m."""
    lo, hi = np.full(pm.nq, -np.pi), np.full(pm.nq, np.pi)
    lo[:3], hi[:3] = -1.0, 1.0
    return pin.randomConfiguration(pm, lo, hi), rng.normal(size=pm.nv), rng.normal(size=pm.nv)


def _rows(pm: Any, pd: Any, q: np.ndarray, v: np.ndarray, frames: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The stacked linear rows of the frames' LOCAL_WORLD_ALIGNED Jacobians and classical accelerations at
    zero acceleration (J̇ v), Pinocchio's velocity order."""
    pin.forwardKinematics(pm, pd, q, v, np.zeros(pm.nv))
    pin.computeJointJacobians(pm, pd, q)
    pin.updateFramePlacements(pm, pd)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    J = np.vstack([pin.getFrameJacobian(pm, pd, f, lwa)[:3] for f in frames])
    a = np.concatenate([pin.getFrameClassicalAcceleration(pm, pd, f, lwa).linear for f in frames])
    return J, a


def _kkt(M: np.ndarray, J: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = J.shape[0]
    sol = np.linalg.solve(np.block([[M, -J.T], [J, np.zeros((k, k))]]), np.concatenate([top, bottom]))
    return sol[:M.shape[0]], sol[M.shape[0]:]


def _close(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    return bool(np.abs(a - b).max() <= tol * max(1.0, np.abs(b).max()))


def test_four_feet_constrained_dynamics_is_pinocchios_kkt_solution(build_dir: Path) -> None:
    robot, pm = _robot("contacts", build_dir)
    pd = pm.createData()
    assert (robot.nq, robot.nv, robot.nrows) == (19, 18, 12)
    assert [(b.name, b.kind, b.nrows) for b in robot.constraints] == [(f, "contact", 3) for f in FEET]
    qi, vi = _maps(robot, pm)
    back = np.argsort(vi)                     # rodgen's velocity order -> Pinocchio's
    frames = [pm.getFrameId(f"{f}_FOOT") for f in FEET]
    rng = np.random.default_rng(21)
    for _ in range(4):
        pq, pv, ptau = _state(pm, rng)
        q, v = pq[qi], pv[vi]
        u = ptau[vi][6:]
        tau = np.concatenate([np.zeros(6), u])[back]
        M = pin.crba(pm, pd, pq)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(pm, pd, pq, pv)
        J, gamma = _rows(pm, pd, pq, pv, frames)
        a_ref, lam_ref = _kkt(M, J, tau - h, -gamma)
        # the rows themselves: dc/dt = J v, J̇ v = the classical acceleration
        np.testing.assert_allclose(robot.constraint_jacobian(q), J[:, vi], atol=1e-12)
        np.testing.assert_allclose(robot.constraint_bias(q, v), gamma, atol=1e-10)
        feet = np.concatenate([pd.oMf[f].translation for f in frames])
        np.testing.assert_allclose(robot.constraint_position(q), feet, atol=1e-12)
        for active in (list(FEET), ["FL", "HR"]):
            rows = np.concatenate([np.arange(3 * FEET.index(f), 3 * FEET.index(f) + 3) for f in active])
            a_k, lam_k = _kkt(M, J[rows], tau - h, -gamma[rows])
            qdd, lam = robot.constrained_dynamics(q, v, u, active=active)       # generated constrained_solve
            assert _close(qdd, a_k[vi], 1e-8)
            assert _close(lam[rows], lam_k, 1e-8)
            assert np.all(lam[np.setdiff1d(np.arange(12), rows)] == 0.0)
        qdd, lam = robot.constrained_dynamics(q, v, u, active={f: "stick" for f in FEET})
        assert _close(qdd, a_ref[vi], 1e-8) and _close(lam, lam_ref, 1e-8)


def test_runtime_factorisation_without_generated_solve_agrees(build_dir: Path) -> None:
    """The same model built without constrained_terms/constrained_solve: the runtime's dense path on nv."""
    robot, pm = _robot("contacts", build_dir)
    dense = rodgen.build(solo(), build_dir=build_dir,
                         codegen=CodegenOptions(constrained_terms=False))
    assert dense.content_hash != robot.content_hash
    qi, vi = _maps(robot, pm)
    rng = np.random.default_rng(4)
    for _ in range(3):
        pq, pv, ptau = _state(pm, rng)
        q, v, u = pq[qi], pv[vi], ptau[vi][6:]
        a1, l1 = robot.constrained_dynamics(q, v, u, active=list(FEET), alpha=3.0, beta=4.0)
        a2, l2 = dense.constrained_dynamics(q, v, u, active=list(FEET), alpha=3.0, beta=4.0)
        assert _close(a1, a2, 1e-9) and _close(l1, l2, 1e-9)


def test_four_feet_impact_is_pinocchios_kkt_impulse(build_dir: Path) -> None:
    robot, pm = _robot("contacts", build_dir)
    pd = pm.createData()
    qi, vi = _maps(robot, pm)
    frames = [pm.getFrameId(f"{f}_FOOT") for f in FEET]
    rng = np.random.default_rng(8)
    for _ in range(200):          # a state where every normal impulse pushes (no foot released)
        pq, pv, _ = _state(pm, rng)
        M = pin.crba(pm, pd, pq)
        M = np.triu(M) + np.triu(M, 1).T
        J, _ = _rows(pm, pd, pq, pv, frames)
        v_ref, imp_ref = _kkt(M, J, M @ pv, np.zeros(12))
        if np.all(imp_ref[2::3] > 0):
            break
    else:
        pytest.fail("no state with four pushing impulses")
    q, v = pq[qi], pv[vi]
    v_plus, impulse, after, loss = robot.impact(q, v, list(FEET))
    assert after == list(FEET)
    assert _close(v_plus, v_ref[vi], 1e-9)
    assert _close(impulse, imp_ref, 1e-9)
    assert abs(loss - 0.5 * (pv @ M @ pv - v_ref @ M @ v_ref)) <= 1e-9 * max(1.0, pv @ M @ pv)
    np.testing.assert_allclose(robot.constraint_jacobian(q) @ v_plus, 0.0, atol=1e-9)


def test_contact_inverse_dynamics_balances_pinocchios_equations(build_dir: Path) -> None:
    robot, pm = _robot("contacts", build_dir)
    pd = pm.createData()
    qi, vi = _maps(robot, pm)
    back = np.argsort(vi)
    frames = [pm.getFrameId(f"{f}_FOOT") for f in FEET]
    rng = np.random.default_rng(2)
    pq, pv, _ = _state(pm, rng)
    a = rng.normal(size=pm.nv)
    res = rodgen.runtime.contact_inverse_dynamics(robot, pq[qi], pv[vi], a[vi], active=list(FEET))
    assert res.u.shape == (12,) and res.lam.shape == (12,)
    J, _ = _rows(pm, pd, pq, pv, frames)
    tau = np.concatenate([np.zeros(6), res.u])[back]
    lhs = pin.rnea(pm, pd, pq, pv, a)
    np.testing.assert_allclose(lhs, tau + J.T @ res.lam, atol=1e-8 * max(1.0, np.abs(lhs).max()))


def test_loop_on_a_floating_base_is_pinocchios_frame_constraint(build_dir: Path) -> None:
    robot, pm = _robot("loop", build_dir)
    pd = pm.createData()
    assert [(b.name, b.kind, b.nrows) for b in robot.constraints] == [("fl_anchor", "loop", 3),
                                                                       ("HR_KFE_friction", "friction", 1)]
    pin.framesForwardKinematics(pm, pd, pin.neutral(pm))
    anchor = pd.oMf[pm.getFrameId("base_link")].actInv(pd.oMf[pm.getFrameId("FL_FOOT")])
    fa = pm.getFrameId("FL_FOOT")
    fm = pm.addFrame(pin.Frame("anchor", pm.frames[pm.getFrameId("base_link")].parentJoint,
                               pm.frames[pm.getFrameId("base_link")].placement * pin.SE3(np.eye(3),
                                                                                         anchor.translation),
                               pin.FrameType.OP_FRAME))
    pd = pm.createData()
    qi, vi = _maps(robot, pm)
    back = np.argsort(vi)
    rng = np.random.default_rng(6)
    for _ in range(3):
        pq, pv, ptau = _state(pm, rng)
        q, v, u = pq[qi], pv[vi], ptau[vi][6:]
        tau = np.concatenate([np.zeros(6), u])[back]
        M = pin.crba(pm, pd, pq)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(pm, pd, pq, pv)
        Jf, af = _rows(pm, pd, pq, pv, [fa])
        Jm, am = _rows(pm, pd, pq, pv, [fm])
        a_ref, lam_ref = _kkt(M, Jm - Jf, tau - h, -(am - af))
        qdd, lam = robot.constrained_dynamics(q, v, u)          # a loop is always held
        assert _close(qdd, a_ref[vi], 1e-8) and _close(lam[:3], lam_ref, 1e-8) and lam[3] == 0.0
        # the HR knee's dry friction: sticking, a row on its velocity; slipping, its kinetic torque +0.2
        knee = np.zeros((1, pm.nv))
        knee[0, pm.idx_vs[pm.getJointId("HR_KFE")]] = 1.0
        a_s, lam_s = _kkt(M, np.vstack([Jm - Jf, knee]), tau - h, np.concatenate([-(am - af), [0.0]]))
        qdd, lam = robot.constrained_dynamics(q, v, u, active={"HR_KFE_friction": "stick"})
        assert _close(qdd, a_s[vi], 1e-8) and _close(lam, lam_s, 1e-8)
        a_k, lam_k = _kkt(M, Jm - Jf, tau - h + 0.2 * knee[0], -(am - af))
        qdd, lam = robot.constrained_dynamics(q, v, u, active={"HR_KFE_friction": "slide_plus"})
        assert _close(qdd, a_k[vi], 1e-8) and _close(lam, np.append(lam_k, 0.2), 1e-8)
    v_plus, impulse, _, loss = robot.impact(q, v)
    v_ref, imp_ref = _kkt(M, Jm - Jf, M @ pv, np.zeros(3))
    assert _close(v_plus, v_ref[vi], 1e-9) and _close(impulse[:3], imp_ref, 1e-9) and loss >= 0
    assert impulse[3] == 0.0                 # a bounded friction torque has no impulse


def _example() -> Any:
    import importlib.util
    path = Path(__file__).resolve().parent.parent / "examples" / "spatial" / "solo12_stand.py"
    spec = importlib.util.spec_from_file_location("example_solo12_stand", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_solo12_dropped_lands_and_stands(tmp_path: Path) -> None:
    """examples/spatial/solo12_stand.py: dropped from 0.1 m, the four feet touch down (a plastic impact:
    the kinetic energy drops, by the energy the event reports), stick, and the robot stands under the joint
    PD law: after 2 s the base height is steady, every foot pushes, and the normal forces carry the total
    mass of Pinocchio's model of the URDF times g to 1e-6; the quaternion stays a unit quaternion."""
    mod = _example()
    res, info = mod.run(str(tmp_path), t_end=2.0)
    assert res.ok, res.message
    assert (tmp_path / "solo12_stand.png").is_file()
    assert res.q.shape[1] == 19 and res.qd.shape[1] == 18 and res.velocities is not None
    touch = [e for e in res.events if e["kind"] == "touchdown"]
    assert sorted(e["block"] for e in touch) == list(FEET) and len(res.events) == 4
    assert abs(touch[0]["t"] - np.sqrt(2 * 0.1 / 9.81)) < 1e-6          # free fall of 0.1 m
    # across the impact: the states before and after are stored at the same time
    k = np.flatnonzero(res.t == touch[0]["t"])
    assert len(k) == 2
    E = res.kinetic + res.potential
    assert E[k[1]] < E[k[0]]
    assert abs((res.kinetic[k[0]] - res.kinetic[k[1]]) - touch[0]["energy_loss"]) <= 1e-9
    np.testing.assert_allclose(res.potential[k[0]], res.potential[k[1]], rtol=0, atol=1e-12)
    robot = rodgen.build(mod.solo12_model())
    np.testing.assert_allclose(robot.constraint_jacobian(res.q[k[1]]) @ res.qd[k[1]], 0.0, atol=1e-10)
    # standing: steady base height, every foot pushing, the weight carried
    late = res.t >= res.t[-1] - 0.5
    assert np.ptp(res.q[late, 2]) < 1e-6 and 0.15 < res.q[-1, 2] < 0.3
    normal = res.lam[:, 2::3]
    assert np.all(normal[late] > 0.5)
    pm = pin.buildModelFromUrdf(str(robot_file(SOLO)), pin.JointModelFreeFlyer())
    weight = pin.computeTotalMass(pm) * 9.81
    assert abs(normal[-1].sum() - weight) <= 1e-6 * weight
    np.testing.assert_allclose(res.lam[-1, 0::3].sum(), 0.0, atol=1e-6 * weight)   # no net horizontal force
    np.testing.assert_allclose(res.lam[-1, 1::3].sum(), 0.0, atol=1e-6 * weight)
    np.testing.assert_allclose(np.linalg.norm(res.q[:, 3:7], axis=1), 1.0, atol=1e-12)
    # friction: every foot inside its cone (mu = 1)
    assert np.all(np.hypot(res.lam[late, 0::3], res.lam[late, 1::3]) < normal[late])


def test_hybrid_refusals_on_a_floating_base_name_the_place(build_dir: Path) -> None:
    robot, _ = _robot("contacts", build_dir)
    y0 = robot.initial_state()
    y0[2] = 1.0
    with pytest.raises(ValueError, match=r"y0: the quaternion"):
        bad = y0.copy()
        bad[3:7] = 0.0
        robot.simulate(bad, 0.01, 1e-3, contacts=())
    with pytest.raises(ValueError, match="velocities"):
        ref = rodgen.Reference([0.0], y0[None, :19], np.ones((1, 19)), np.zeros((1, 19)))
        robot.simulate(y0, 0.01, 1e-3, contacts=(), controller=rodgen.PD(ref, 1.0, 0.1))
    # in flight the hybrid run is the free dynamics: the same as the plain RK4 of simulate()
    a = robot.simulate(y0, 0.05, 1e-3, contacts=())
    b = robot.simulate(y0, 0.05, 1e-3)
    assert a.ok and b.ok and not a.events
    np.testing.assert_allclose(a.q[-1], b.q[-1], atol=1e-12)
    np.testing.assert_allclose(a.qd[-1], b.qd[-1], atol=1e-12)


def test_tracking_laws_on_a_floating_base_take_the_error_on_the_manifold(build_dir: Path) -> None:
    """PD and ComputedTorque on solo12 in flight: the inputs the C law computes at the first state are those of
    the formulas with the position error q_ref ⊖ q (``difference``, SE(3) for the base) and velocity errors in
    the nv velocities; a reference rotated and moved by a known twist gives that twist back as the error."""
    robot, _ = _robot("contacts", build_dir)
    rng = np.random.default_rng(12)
    q = robot.initial_state()[:robot.nq]
    q[2] = 1.0
    q[7:] = rng.uniform(-0.5, 0.5, 12)
    v = rng.normal(size=robot.nv)
    twist = rng.normal(scale=0.3, size=robot.nv)
    q_ref = robot.integrate(q, twist)
    np.testing.assert_allclose(robot.difference(q, q_ref), twist, atol=1e-12)
    v_ref, a_ref = rng.normal(size=robot.nv), rng.normal(size=robot.nv)
    ref = rodgen.Reference([0.0], q_ref[None], v_ref[None], a_ref[None])
    y0 = np.concatenate([q, v])
    kp, kd = rng.uniform(1, 5, 12), rng.uniform(0.1, 0.5, 12)
    res = robot.simulate(y0, 1e-3, 1e-3, controller=rodgen.PD(ref, kp, kd))
    B = robot.input_map(q)
    np.testing.assert_allclose(res.u[0], kp * (B.T @ twist) + kd * (B.T @ (v_ref - v)), atol=1e-10)
    kpc, kdc = rng.uniform(1, 5, robot.nv), rng.uniform(0.1, 0.5, robot.nv)
    res = robot.simulate(y0, 1e-3, 1e-3, controller=rodgen.ComputedTorque(ref, kpc, kdc))
    Q = robot.inverse_dynamics(q, v, a_ref + kpc * twist + kdc * (v_ref - v))
    np.testing.assert_allclose(res.u[0], np.linalg.lstsq(B, Q, rcond=None)[0], atol=1e-9)
    with pytest.raises(ValueError, match="ComputedTorque kp has 12 entries; expected one gain or 18"):
        robot.simulate(y0, 1e-3, 1e-3, controller=rodgen.ComputedTorque(ref, kp, kd))


def test_a_point_force_on_a_free_body_accelerates_it_by_newton(build_dir: Path) -> None:
    """A world-frame force at the origin of a free body's frame (its centre of mass): at rest the linear
    acceleration, in the body's axes as the free joint's velocities are, is Rᵀ (F/m + g), the angular one 0."""
    m = rodgen.SpatialModel("flyer_push")
    m.link("body", joint="free").body(2.0, (0, 0, 0), (1.0, 0, 0, 1.5, 0, 2.0))
    m.point_force("push", "body", (1.0, -3.0, 0.5))
    robot = rodgen.build(m, build_dir=build_dir)
    quat = np.array([0.3, -0.2, 0.5, 0.8]) / np.linalg.norm([0.3, -0.2, 0.5, 0.8])
    q = np.concatenate([[0.1, 0.2, 0.3], quat])
    R = pin.Quaternion(quat[3], *quat[:3]).toRotationMatrix()
    a = robot.forward_dynamics(q, np.zeros(6))
    np.testing.assert_allclose(a[:3], R.T @ (np.array([1.0, -3.0, 0.5]) / 2.0 + [0, 0, -9.81]), atol=1e-12)
    np.testing.assert_allclose(a[3:], 0.0, atol=1e-12)
