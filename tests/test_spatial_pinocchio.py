"""Spatial models against Pinocchio (an independent engine): mass matrix (crba) and forward dynamics (aba)
of random spatial trees with revolute and prismatic joints about arbitrary axes, fixed joints, branches and
variable-length segments (Pinocchio: a revolute joint, then a prismatic one along the link axis)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen

pin = pytest.importorskip("pinocchio")

TOL = 1e-10


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    return pin.rpy.rpyToMatrix(r, p, y)


def _rotation(rng: np.random.Generator) -> np.ndarray:
    qr, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return qr * np.sign(np.linalg.det(qr))


def _inertia(rng: np.random.Generator) -> np.ndarray:
    """A physical inertia about the centre of mass: principal moments b+c, a+c, a+b, turned at random."""
    a, b, c = rng.uniform(0.005, 0.05, 3)
    R = _rotation(rng)
    return R @ np.diag([b + c, a + c, a + b]) @ R.T


def random_tree(seed: int, n: int) -> tuple[rodgen.SpatialModel, "pin.Model"]:
    """A random spatial tree of ``n`` links and the same mechanism in Pinocchio (links declared depth first,
    the order in which Pinocchio's algorithms expect the joints of a tree)."""
    rng = np.random.default_rng(seed)
    g = rng.normal(size=3)
    g *= 9.81 / np.linalg.norm(g)
    model = rodgen.SpatialModel(f"tree{seed}", gravity=tuple(g))
    pm = pin.Model()
    pm.gravity.linear = g
    # where a link's children attach: (pinocchio joint, placement of the link's end in that joint's frame)
    ends: dict[str, tuple[int, pin.SE3]] = {}
    path: list[str] = []      # the last link and its ancestors: a parent among them keeps the order depth-first
    for i in range(n):
        name = f"L{i}"
        parent = None if i == 0 else path[int(rng.integers(0, len(path)))]
        path = (path[:path.index(parent) + 1] if parent is not None else []) + [name]
        kind = "revolute" if i == 0 else str(rng.choice(["revolute", "revolute", "prismatic", "fixed"]))
        xyz = tuple(float(x) for x in rng.uniform(-0.3, 0.3, 3))
        rpy = tuple(float(x) for x in rng.uniform(-np.pi, np.pi, 3))
        axis = rng.normal(size=3)
        along = rng.normal(size=3)
        along /= np.linalg.norm(along)
        lk = model.link(name, parent, joint=kind, axis=tuple(axis), xyz=xyz, rpy=rpy, along=tuple(along))
        pj, base = (0, pin.SE3.Identity()) if parent is None else ends[parent]
        place = base * pin.SE3(_rpy(*rpy), np.array(xyz))
        if kind == "fixed":
            joint, frame = pj, place
        else:
            jm = (pin.JointModelRevoluteUnaligned(axis / np.linalg.norm(axis)) if kind == "revolute"
                  else pin.JointModelPrismaticUnaligned(axis / np.linalg.norm(axis)))
            joint, frame = pm.addJoint(pj, jm, place, name), pin.SE3.Identity()
        m, com, Ic = float(rng.uniform(0.5, 2.0)), rng.uniform(-0.2, 0.2, 3), _inertia(rng)
        lk.body(m, tuple(com), tuple(Ic[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]))
        pm.appendBodyToJoint(joint, pin.Inertia(m, com, Ic), frame)
        end = frame
        if rng.uniform() < 0.5:     # a variable segment along the link axis: a prismatic joint in Pinocchio
            me, L0 = float(rng.uniform(0.3, 1.0)), float(rng.uniform(0.2, 0.6))
            mr, Ir = float(rng.uniform(0.1, 0.5)), float(rng.uniform(0.001, 0.01))
            lk.variable(f"s{i}", L0, masses=[rodgen.PointMass(me, fraction=1)],
                        rods=[rodgen.Rod(mr, inertia=Ir, fraction=1, offset=-0.1)])
            js = pm.addJoint(joint, pin.JointModelPrismaticUnaligned(along), frame, f"s{i}")
            pm.appendBodyToJoint(js, pin.Inertia(me, np.zeros(3), np.zeros((3, 3))), pin.SE3.Identity())
            rod_I = Ir * (np.eye(3) - np.outer(along, along))
            pm.appendBodyToJoint(js, pin.Inertia(mr, -0.1 * along, rod_I), pin.SE3.Identity())
            joint, end = js, pin.SE3.Identity()
        elif rng.uniform() < 0.5:   # a rigid segment with a rod: children attach at its end
            L = float(rng.uniform(0.2, 0.5))
            mr = float(rng.uniform(0.2, 0.8))
            lk.rigid(f"s{i}", L, rod=rodgen.Rod(mr))
            rod_I = mr * L ** 2 / 12 * (np.eye(3) - np.outer(along, along))
            pm.appendBodyToJoint(joint, pin.Inertia(mr, frame.translation + frame.rotation @ (L / 2 * along),
                                                    frame.rotation @ rod_I @ frame.rotation.T), pin.SE3.Identity())
            end = frame * pin.SE3(np.eye(3), L * along)
        ends[name] = (joint, end)
    return model, pm


def _compare(robot: "rodgen.runtime.CompiledModel", pm: "pin.Model", seed: int) -> None:
    assert robot.nq == pm.nq and robot.nv == pm.nv
    data = pm.createData()
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q = rng.uniform(-np.pi, np.pi, pm.nq)
        qd = rng.normal(size=pm.nv)
        u = rng.normal(size=robot.nu)
        M_pin = pin.crba(pm, data, q)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        M = robot.mass_matrix(q)
        assert np.abs(M - M_pin).max() <= TOL * max(1.0, np.abs(M_pin).max())
        a_pin = pin.aba(pm, data, q, qd, u)   # every joint actuated: u is the joint force vector
        a = robot.forward_dynamics(q, qd, u)
        assert np.abs(a - a_pin).max() <= TOL * max(1.0, np.abs(a_pin).max())
        tau = robot.inverse_dynamics(q, qd, a_pin)
        assert np.abs(tau - u).max() <= TOL * max(1.0, np.abs(u).max())


@pytest.mark.parametrize("seed,n", [(1, 4), (2, 6), (3, 7)])
def test_random_trees_match_pinocchio(seed: int, n: int, build_dir: Path) -> None:
    model, pm = random_tree(seed, n)
    robot = rodgen.build(model, build_dir=build_dir)
    assert robot.forward == "aba"
    _compare(robot, pm, 100 + seed)


def test_frames_and_jacobians_match_pinocchio(build_dir: Path) -> None:
    model, pm = random_tree(4, 5)
    robot = rodgen.build(model, build_dir=build_dir)
    data = pm.createData()
    rng = np.random.default_rng(7)
    q = rng.uniform(-np.pi, np.pi, pm.nq)
    pin.computeJointJacobians(pm, data, q)
    pin.updateFramePlacements(pm, data)
    frames, jac = robot.frames(q), robot.frame_jacobians(q)
    # the frames of the links whose joint is a Pinocchio joint: placement and world-aligned Jacobian
    for jid in range(1, pm.njoints):
        name = pm.names[jid]
        key = f"{name}.joint" if name.startswith("L") else f"{name}.end"
        pos, rot = frames[key]
        oMi = data.oMi[jid]
        assert np.allclose(pos, oMi.translation, atol=1e-12) and np.allclose(rot, oMi.rotation, atol=1e-12)
        J = pin.getJointJacobian(pm, data, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        assert np.allclose(jac[key], J, atol=1e-12)
    assert robot.points(q)[key].shape == (3,)
    assert robot.points(np.stack([q, q]))[key].shape == (2, 3)
