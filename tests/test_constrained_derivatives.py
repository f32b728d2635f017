"""Derivatives of the constrained dynamics and of the impact map (``constrained_dynamics_derivatives``,
``impact_derivatives``): against Pinocchio 4.1's ``computeConstraintDynamicsDerivatives`` and
``computeImpulseDynamicsDerivatives`` (3D contacts, LOCAL_WORLD_ALIGNED) on a spatial fixed-base tree and
on solo12's floating base with its four feet held (derivatives by q on the tangent space), and against central
differences of rodgen's own constrained dynamics and of the impact's KKT solution (from the compiled mass
matrix and constraint Jacobian) for the planar compass gait, exo5_walk and solo12 (q moved by ``integrate``)."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from _num import central_jacobian
from conftest import EXAMPLES

H = 1e-6
_central = functools.partial(central_jacobian, eps=H, relative=False)   # absolute steps of H


@pytest.fixture(scope="module")
def spatial(build_dir: Path) -> tuple[Any, Any]:
    """A random spatial tree (fixed base, revolute and prismatic joints) with two 3D contacts, compiled,
    and the same in Pinocchio with its two RigidConstraintModels."""
    import pinocchio as pin
    from test_spatial_pinocchio import random_tree
    model, pm = random_tree(20, 6)       # two feet on chains of enough joints: J of full row rank 6
    model.contact("ca", "L2")
    model.contact("cb", "L5")
    robot = rodgen.build(model, build_dir=build_dir)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    cms = pin.StdVec_RigidConstraintModel([pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm,
                                                                    pm.getJointId(j), pin.SE3.Identity(), lwa)
                                           for j in ("L2", "L5")])
    return robot, (pm, cms)


def _close(mine: np.ndarray, ref: np.ndarray, tol: float) -> bool:
    return bool(np.abs(mine - ref).max() <= tol * max(1.0, np.abs(ref).max()))


def test_constrained_dynamics_derivatives_are_pinocchios(spatial: tuple[Any, Any]) -> None:
    import pinocchio as pin
    robot, (pm, cms) = spatial
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(3)
    for active, models in ((["ca", "cb"], list(cms)), (["cb"], [cms[1]])):
        sub = pin.StdVec_RigidConstraintModel(models)
        for _ in range(3):
            datas = pin.StdVec_RigidConstraintData([c.createData() for c in sub])
            data = pm.createData()
            pin.initConstraintDynamics(pm, data, sub, datas)
            q, qd, u = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
            pin.constraintDynamics(pm, data, q, qd, u, sub, datas, prox)
            pin.computeConstraintDynamicsDerivatives(pm, data, sub, datas, prox)
            rows = slice(0, 6) if len(active) == 2 else slice(3, 6)
            got = robot.constrained_dynamics_derivatives(q, qd, u, active)
            ref = (data.ddq_dq, data.ddq_dv, data.ddq_dtau, data.dlambda_dq, data.dlambda_dv, data.dlambda_dtau)
            for k, (mine, theirs) in enumerate(zip(got, ref)):
                assert mine.shape == ((10,) if k < 3 else (6,)) + (10,)
                mine = mine if k < 3 else mine[rows]
                assert _close(mine, theirs, 1e-9), (active, k, np.abs(mine - theirs).max())
            if len(active) == 1:
                for d in got[3:]:
                    assert np.all(d[:3] == 0.0)      # the rows of the block left out


def test_impact_derivatives_are_pinocchios_impulse_dynamics_derivatives(spatial: tuple[Any, Any]) -> None:
    import pinocchio as pin
    robot, (pm, cms) = spatial
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(5)
    for _ in range(3):
        datas = pin.StdVec_RigidConstraintData([c.createData() for c in cms])   # fresh: Pinocchio's
        data = pm.createData()                                                   # impulse data carry over
        pin.initConstraintDynamics(pm, data, cms, datas)
        q, qd = rng.uniform(-1, 1, pm.nq), rng.normal(size=pm.nv)
        pin.impulseDynamics(pm, data, q, qd, cms, datas, 0.0, prox)       # plastic: J v+ = 0
        pin.computeImpulseDynamicsDerivatives(pm, data, cms, datas, 0.0, prox)
        dv_dq, dv_dv, di_dq, di_dv = robot.impact_derivatives(q, qd, ["ca", "cb"])
        assert _close(dv_dq, data.ddq_dq, 1e-9)
        # Pinocchio's ddq_dv of the impulse dynamics is d(v+ - v-)/d v-
        assert _close(dv_dv, data.ddq_dv + np.eye(pm.nv), 1e-9)
        assert _close(di_dq, data.dlambda_dq, 1e-9)
        assert _close(di_dv, data.dlambda_dv, 1e-9)


def _impact_kkt(robot: Any, q: np.ndarray, v: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """[q̇⁺, Λ] of M (q̇⁺ - q̇⁻) = Jᵀ Λ, J q̇⁺ = 0 for the constraint rows ``rows``, Λ in every row."""
    M, J = robot.mass_matrix(q), robot.constraint_jacobian(q)[rows]
    k = J.shape[0]
    sol = np.linalg.solve(np.block([[M, -J.T], [J, np.zeros((k, k))]]), np.concatenate([M @ v, np.zeros(k)]))
    imp = np.zeros(robot.nrows)
    imp[rows] = sol[robot.nv:]
    return np.concatenate([sol[:robot.nv], imp])


@pytest.mark.parametrize("example, active", [
    ("compass_gait.yaml", ["foot_a"]),
    ("compass_gait.yaml", ["foot_a", "foot_b"]),
    ("exo5_walk.yaml", ["foot_a", "foot_b"]),
])
def test_planar_derivatives_are_central_differences(example: str, active: list[str], build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / example), build_dir=build_dir)
    n, nu = robot.nv, robot.nu
    rng = np.random.default_rng(len(active))
    q = robot.initial_state()[:n] + 0.05 * rng.normal(size=n)
    qd, u = rng.normal(size=n), rng.normal(size=nu)

    def dyn(x: np.ndarray) -> np.ndarray:
        qdd, lam = robot.constrained_dynamics(x[:n], x[n:2 * n], x[2 * n:], active)
        return np.concatenate([qdd, lam])

    num = _central(dyn, np.concatenate([q, qd, u]))
    for args in ((q, qd, u), (list(q), list(qd), list(u))):   # arrays (the one-state path) and lists (checked)
        got = robot.constrained_dynamics_derivatives(*args, active)
        ana = np.block([[got[0], got[1], got[2]], [got[3], got[4], got[5]]])
        assert np.abs(ana - num).max() <= 1e-6 * max(1.0, np.abs(num).max())
    rows = np.concatenate([np.arange(b.row, b.row + b.nrows) for b in robot.constraints if b.name in active])
    num = _central(lambda x: _impact_kkt(robot, x[:n], x[n:], rows), np.concatenate([q, qd]))
    got = robot.impact_derivatives(q, qd, active)
    ana = np.block([[got[0], got[1]], [got[2], got[3]]])
    assert np.abs(ana - num).max() <= 1e-6 * max(1.0, np.abs(num).max())


def test_bad_requests_are_named(build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / "compass_gait.yaml"), build_dir=build_dir)
    q, qd = robot.initial_state()[:robot.nq], np.zeros(robot.nv)
    with pytest.raises(ValueError, match="'foot_a' slide"):
        robot.constrained_dynamics_derivatives(q, qd, None, {"foot_a": "slide_plus"})
    with pytest.raises(ValueError, match="unknown constraint block|foot_c"):
        robot.constrained_dynamics_derivatives(q, qd, None, ["foot_c"])
    with pytest.raises(ValueError, match="entries"):
        robot.constrained_dynamics_derivatives(q[:-1], qd, None, ["foot_a"])
    with pytest.raises(rodgen.DynamicsError, match="foot_a: the state.*NaN"):
        robot.constrained_dynamics_derivatives(np.full(robot.nq, np.nan), qd, None, ["foot_a"])
    plain = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)
    with pytest.raises(ValueError, match="no constraint blocks"):
        plain.impact_derivatives(np.zeros(2), np.zeros(2))


@pytest.fixture(scope="module")
def solo12(build_dir: Path) -> tuple[Any, Any]:
    """solo12 (free-flyer root) with its four foot contacts, compiled, and Pinocchio's model of the same URDF
    with a CONTACT_3D RigidConstraintModel at each foot frame (its parent joint and placement)."""
    import pinocchio as pin
    from test_floating_contacts import FEET, SOLO, solo

    from _robots import robot_file
    robot = rodgen.build(solo(), build_dir=build_dir)
    pm = pin.buildModelFromUrdf(str(robot_file(SOLO)), pin.JointModelFreeFlyer())
    cms = []
    for leg in FEET:
        frame = pm.frames[pm.getFrameId(f"{leg}_FOOT")]
        cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, frame.parentJoint, frame.placement,
                                            pin.ReferenceFrame.LOCAL))
    return robot, (pm, cms)


def _world_aligned(R: list[np.ndarray], lam: np.ndarray, dlam: np.ndarray) -> np.ndarray:
    """Pinocchio's derivatives of contact forces in the feet's LOCAL frames, ``dlam`` (3 per foot), turned into
    the ground's axes, rodgen's rows: f_world = R f_local, so d f_world = R d f_local + (dR) f_local. The
    rotation's own derivative needs the frames' angular Jacobians: ``R`` holds (R, J_ang) per foot, J_ang the
    frame's angular Jacobian in the world axes (d R / dδ_j = [J_ang e_j]× R)."""
    out = np.empty_like(dlam)
    for k, (Rk, Jw) in enumerate(R):
        rows = slice(3 * k, 3 * k + 3)
        out[rows] = Rk @ dlam[rows]
        if Jw is not None:
            f = Rk @ lam[rows]
            out[rows] += np.cross(Jw.T, f).T
    return out


def _pin_solo(pm: Any, cms: list[Any], pq: np.ndarray, pv: np.ndarray, ptau: np.ndarray) -> tuple[Any, ...]:
    """Pinocchio's constrained dynamics and its derivatives with the contacts in LOCAL frames, converted to
    rodgen's rows in the ground's axes: (ddq, lambda, ddq_dq, ddq_dv, ddq_dtau, dlam_dq, dlam_dv, dlam_dtau)."""
    import pinocchio as pin
    sub = pin.StdVec_RigidConstraintModel(cms)
    datas = pin.StdVec_RigidConstraintData([c.createData() for c in sub])
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, sub, datas)
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    pin.constraintDynamics(pm, data, pq, pv, ptau, sub, datas, prox)
    pin.computeConstraintDynamicsDerivatives(pm, data, sub, datas, prox)
    lam_local = data.lambda_c.copy()
    out = [data.ddq.copy(), None, data.ddq_dq.copy(), data.ddq_dv.copy(), data.ddq_dtau.copy()]
    pin.computeJointJacobians(pm, data, pq)
    pin.updateFramePlacements(pm, data)
    frames = []
    for c in cms:
        Mc = data.oMi[c.joint1_id] * c.joint1_placement
        J = pin.getJointJacobian(pm, data, c.joint1_id, pin.ReferenceFrame.WORLD)
        frames.append((Mc.rotation, J[3:]))
    rot = [(R, None) for R, _ in frames]
    out[1] = _world_aligned(rot, lam_local, lam_local[:, None])[:, 0]
    out += [_world_aligned(frames, lam_local, data.dlambda_dq), _world_aligned(rot, lam_local, data.dlambda_dv),
            _world_aligned(rot, lam_local, data.dlambda_dtau)]
    return tuple(out)


def test_floating_base_derivatives_are_pinocchios_with_local_contact_frames(solo12: tuple[Any, Any]) -> None:
    """solo12, four feet held: rodgen's rows are the feet's positions in the ground's axes; Pinocchio's contacts
    here are LOCAL (forces in the foot frames), converted explicitly: λ_world = R λ_local, its derivative by q
    with the frame's rotation turning too (d R/dδ = [ω_δ]× R, ω_δ the foot's angular Jacobian in world axes);
    q̈ and its derivatives do not depend on the frames the forces are written in."""
    from test_floating_contacts import FEET, _maps, _state
    robot, (pm, cms) = solo12
    qi, vi = _maps(robot, pm)
    rng = np.random.default_rng(11)
    for _ in range(3):
        pq, pv, ptau = _state(pm, rng)
        ptau[:6] = 0.0                      # the base is not actuated
        q, v, u = pq[qi], pv[vi], ptau[vi][6:]
        ref = _pin_solo(pm, cms, pq, pv, ptau)
        qdd, lam = robot.constrained_dynamics(q, v, u, active=list(FEET))
        assert _close(qdd, ref[0][vi], 1e-9) and _close(lam, ref[1], 1e-9)
        got = robot.constrained_dynamics_derivatives(q, v, u, list(FEET))
        want = (ref[2][np.ix_(vi, vi)], ref[3][np.ix_(vi, vi)], ref[4][np.ix_(vi, vi[6:])],
                ref[5][:, vi], ref[6][:, vi], ref[7][:, vi[6:]])
        for k, (mine, theirs) in enumerate(zip(got, want)):
            assert mine.shape == theirs.shape and mine.shape[1] == (12 if k % 3 == 2 else 18)
            assert _close(mine, theirs, 1e-9), (k, np.abs(mine - theirs).max())


def test_floating_base_impact_derivatives_are_pinocchios(solo12: tuple[Any, Any]) -> None:
    import pinocchio as pin
    from test_floating_contacts import FEET, _maps, _state
    robot, (pm, cms) = solo12
    qi, vi = _maps(robot, pm)
    lwa = [pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, c.joint1_id, c.joint1_placement,
                                    pin.ReferenceFrame.LOCAL_WORLD_ALIGNED) for c in cms]
    sub = pin.StdVec_RigidConstraintModel(lwa)
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(12)
    for _ in range(3):
        pq, pv, _tau = _state(pm, rng)
        datas = pin.StdVec_RigidConstraintData([c.createData() for c in sub])
        data = pm.createData()
        pin.initConstraintDynamics(pm, data, sub, datas)
        pin.impulseDynamics(pm, data, pq, pv, sub, datas, 0.0, prox)
        pin.computeImpulseDynamicsDerivatives(pm, data, sub, datas, 0.0, prox)
        dv_dq, dv_dv, di_dq, di_dv = robot.impact_derivatives(pq[qi], pv[vi], list(FEET))
        assert _close(dv_dq, data.ddq_dq[np.ix_(vi, vi)], 1e-9)
        assert _close(dv_dv, data.ddq_dv[np.ix_(vi, vi)] + np.eye(pm.nv), 1e-9)
        assert _close(di_dq, data.dlambda_dq[:, vi], 1e-9)
        assert _close(di_dv, data.dlambda_dv[:, vi], 1e-9)


def test_floating_base_derivatives_are_central_differences_on_the_tangent_space(solo12: tuple[Any, Any]) -> None:
    """Against rodgen's own constrained dynamics and impact KKT solution at ``integrate(q, δ)``: central
    differences in δ (the tangent space), in v and in u; two feet held, so the other two rows of λ stay 0."""
    robot, _ = solo12
    n, nu = robot.nv, robot.nu
    rng = np.random.default_rng(13)
    q = robot.integrate(robot.initial_state()[:robot.nq], 0.3 * rng.normal(size=n))
    v, u = rng.normal(size=n), rng.normal(size=nu)
    active = ["FL", "HR"]

    def dyn(x: np.ndarray) -> np.ndarray:
        qdd, lam = robot.constrained_dynamics(robot.integrate(q, x[:n]), x[n:2 * n], x[2 * n:], active)
        return np.concatenate([qdd, lam])

    num = _central(dyn, np.concatenate([np.zeros(n), v, u]))
    got = robot.constrained_dynamics_derivatives(q, v, u, active)
    ana = np.block([[got[0], got[1], got[2]], [got[3], got[4], got[5]]])
    assert np.abs(ana - num).max() <= 1e-6 * max(1.0, np.abs(num).max())
    rows = np.concatenate([np.arange(b.row, b.row + b.nrows) for b in robot.constraints if b.name in active])
    num = _central(lambda x: _impact_kkt(robot, robot.integrate(q, x[:n]), x[n:], rows),
                   np.concatenate([np.zeros(n), v]))
    got = robot.impact_derivatives(q, v, active)
    ana = np.block([[got[0], got[1]], [got[2], got[3]]])
    assert np.abs(ana - num).max() <= 1e-6 * max(1.0, np.abs(num).max())


def _partials_function(eqs: Any, out: tuple) -> Any:  # type: ignore[type-arg]
    """The partials' straight-line code as a Python function of (q, qd, qdd, u, p, lam, t) -> (dg, dk)."""
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter
    assignments, lam, dg, dk = out
    args = [*eqs.q, *eqs.qd, *eqs.qdd, *eqs.u, *eqs.params, *lam, eqs.t]
    ren = {s: sp.Symbol(f"x{i}") for i, s in enumerate(args)}
    ren.update({s: sp.Symbol(f"a{i}") for i, (s, _) in enumerate(assignments)})
    pr = PythonCodePrinter({"fully_qualified_modules": True})

    def text(ex: Any) -> str:
        return str(pr.doprint(sp.sympify(ex).xreplace(ren)))
    lines = ["import math", "def f(" + ", ".join(f"x{i}" for i in range(len(args))) + "):"]
    lines += [f"    {text(s)} = {text(ex)}" for s, ex in assignments]
    lines.append("    return [" + ", ".join(text(x) for row in dg for x in row) + "], ["
                 + ", ".join(text(x) for row in dk for x in row) + "]")
    ns: dict[str, Any] = {}
    exec("\n".join(lines), ns)
    return ns["f"]


def test_contact_and_loop_rows_from_the_recursion_are_forward_mode_derivatives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of spatial contacts and loops differentiated from the Newton-Euler recursion's motion (a leg's point
    and flat contacts on a tilted ground, a 3- and a 6-row loop to a frame on the hip, with its limit and friction
    rows beside them) against the same partials differentiated in forward mode through the frames' kinematics,
    at random states."""
    from test_contacts_3d import leg_model

    import rodgen.symbolic.constrained_derivative as cd
    from rodgen.model.spatial import SpatialGround
    leg = leg_model()
    leg.contact("heel", "foot", friction="mu")
    leg.contact("knee_touch", "shank", rows=6)
    leg.ground = SpatialGround(normal=(0.3, -0.2, 1.0), height=0.1)
    leg.link_named("hip").marker("anchor", xyz=(0.0, 0.0, -1.0))    # where the foot is at q = 0
    leg.loop("pin", "foot", "anchor")
    leg.loop("weld", "shin.end", "anchor", rows=6)
    rng = np.random.default_rng(21)
    eqs = rodgen.derive(leg)
    motion = eqs.inverse_dynamics_derivatives().motion
    assert len(cd._motion_blocks(eqs, motion)) == 4     # the recursion gives the rows of all four blocks
    new = eqs.constraint_partials()
    monkeypatch.setattr(cd, "_motion_blocks", lambda e, m: {})
    old = eqs.constraint_partials()
    monkeypatch.undo()
    f_new, f_old = _partials_function(eqs, new), _partials_function(eqs, old)
    for _ in range(3):
        x = [*rng.normal(size=len(eqs.q) + 2 * len(eqs.qd) + len(eqs.u)),
             *(float(eqs.param_values[s]) for s in eqs.params), *rng.normal(size=len(new[1])), 0.3]
        for mine, ref in zip(f_new(*x), f_old(*x)):
            assert _close(np.array(mine), np.array(ref), 1e-12)
