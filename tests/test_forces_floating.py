"""Force elements on floating bases (a free joint at the root): the element forces enter in the velocities
(nv rows, through the frames' Jacobians), checked against Pinocchio's ``aba`` with the same forces given as
external forces (``fext``, computed here from Pinocchio's own frame placements and velocities), and a
free box on Hunt-Crossley ground contacts comes to rest carrying its weight."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen

pin = pytest.importorskip("pinocchio")

K, C = 80.0, 3.0                       # the point force's spring and damper to the origin
TIP = np.array([0.3, 0.1, -0.05])      # the tip marker in the base frame
ARM_AT = np.array([0.2, 0.0, 0.1])     # the arm's hinge in the base frame
SD_A = np.array([-0.1, 0.05, 0.0])     # the spring-damper's end on the base
SD_B = np.array([0.25, 0.0, 0.0])      # ... and on the arm (its frame)
KS, CS, L0 = 150.0, 2.5, 0.2
BODY = dict(mass=2.0, com=(0.05, -0.02, 0.01), inertia=(0.11, 0.01, -0.02, 0.2, 0.015, 0.3))
ARM = dict(mass=0.7, com=(0.15, 0.0, 0.0), inertia=(0.002, 0.0, 0.0, 0.01, 0.0, 0.01))


def _model() -> rodgen.SpatialModel:
    m = rodgen.SpatialModel("ff_forces")
    b = m.link("base", joint="free")
    b.body(BODY["mass"], com=BODY["com"], inertia=BODY["inertia"])
    b.marker("tip", xyz=tuple(TIP), rpy=(0.1, -0.2, 0.3))
    b.marker("sd_a", xyz=tuple(SD_A))
    a = m.link("arm", "base", axis=(0, 1, 0), xyz=tuple(ARM_AT), coordinate="q_arm", at="start")
    a.body(ARM["mass"], com=ARM["com"], inertia=ARM["inertia"])
    a.marker("sd_b", xyz=tuple(SD_B))
    m.point_force("pull", "tip", (f"-{K}*x_tip - {C}*vx_tip", f"-{K}*y_tip", f"-{K}*z_tip - {C}*vz_tip"))
    m.spring_damper("sd", "sd_a", "sd_b", stiffness=KS, damping=CS, rest_length=L0)
    return m


def _pinocchio() -> tuple[Any, Any, int, int]:
    pm = pin.Model()
    base = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    I3 = lambda i: np.array([[i[0], i[1], i[2]], [i[1], i[3], i[4]], [i[2], i[4], i[5]]])  # noqa: E731
    pm.appendBodyToJoint(base, pin.Inertia(BODY["mass"], np.array(BODY["com"]), I3(BODY["inertia"])),
                         pin.SE3.Identity())
    arm = pm.addJoint(base, pin.JointModelRY(), pin.SE3(np.eye(3), ARM_AT), "q_arm")
    pm.appendBodyToJoint(arm, pin.Inertia(ARM["mass"], np.array(ARM["com"]), I3(ARM["inertia"])),
                         pin.SE3.Identity())
    pm.gravity.linear = np.array([0.0, 0.0, -9.81])
    return pm, pm.createData(), base, arm


def _fext(pm: Any, pd: Any, q: np.ndarray, v: np.ndarray, base: int, arm: int) -> list[Any]:
    """The two elements' forces as Pinocchio's external forces (each in its joint's frame, about its
    origin), from Pinocchio's placements and velocities of the points."""
    pin.forwardKinematics(pm, pd, q, v)

    def point(jid: int, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        M, nu = pd.oMi[jid], pd.v[jid]              # placement; velocity in the joint frame
        vel = M.rotation @ (nu.linear + np.cross(nu.angular, local))
        return M.act(local), vel

    fext = [pin.Force.Zero() for _ in range(pm.njoints)]

    def add(jid: int, local: np.ndarray, f_world: np.ndarray) -> None:
        f = pd.oMi[jid].rotation.T @ f_world
        fext[jid] = fext[jid] + pin.Force(f, np.cross(local, f))

    r, vel = point(base, TIP)
    add(base, TIP, np.array([-K * r[0] - C * vel[0], -K * r[1], -K * r[2] - C * vel[2]]))
    (ra, va), (rb, vb) = point(base, SD_A), point(arm, SD_B)
    d = rb - ra
    L = np.linalg.norm(d)
    F = (KS * (L - L0) + CS * (d @ (vb - va)) / L) * d / L          # on sd_a, towards sd_b when stretched
    add(base, SD_A, F)
    add(arm, SD_B, -F)
    return fext


def test_force_elements_on_a_free_base_equal_pinocchio_aba_with_external_forces(build_dir: Path) -> None:
    robot = rodgen.build(_model(), build_dir=build_dir)
    assert (robot.nq, robot.nv) == (8, 7)
    pm, pd, base, arm = _pinocchio()
    rng = np.random.default_rng(5)
    for _ in range(5):
        quat = rng.standard_normal(4)
        q = np.concatenate([rng.standard_normal(3) * 0.3, quat / np.linalg.norm(quat), rng.standard_normal(1)])
        v = rng.standard_normal(7)
        expected = pin.aba(pm, pd, q, v, np.zeros(7), _fext(pm, pd, q, v, base, arm))
        np.testing.assert_allclose(robot.forward_dynamics(q, v), expected, rtol=0, atol=1e-9)
        # the elements' forces in the result's ground frame: the point force by its law
        F = robot.element_forces(q, v)
        r, vel = pd.oMi[base].act(TIP), pd.oMi[base].rotation @ (pd.v[base].linear + np.cross(pd.v[base].angular,
                                                                                                TIP))
        np.testing.assert_allclose(np.asarray(F).reshape(-1)[:3],
                                   [-K * r[0] - C * vel[0], -K * r[1], -K * r[2] - C * vel[2]], atol=1e-9)


def test_free_box_settles_on_compliant_ground_contacts(build_dir: Path) -> None:
    """A 1.5 kg box on four Hunt-Crossley contacts at its corners, dropped from 5 cm tilted: it comes to
    rest level with the corners carrying its weight, a quarter each (k δ^1.5 = m g / 4), and its energy never
    grows (the contact's damping and friction only dissipate)."""
    m = rodgen.SpatialModel("box_on_ground")
    b = m.link("box", joint="free", initial=(0.0, 0.0, 0.15, 0.02, -0.03, 0.0, 1.0))
    mass, a, k = 1.5, 0.1, 2e4
    b.body(mass, inertia=(mass * 2 * a * a / 3,) + (0.0, 0.0) + (mass * 2 * a * a / 3, 0.0, mass * 2 * a * a / 3))
    for i, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        b.marker(f"c{i}", xyz=(sx * a, sy * a, -a))
        m.ground_contact(f"g{i}", f"c{i}", stiffness=k, damping=2.0, friction=0.8)
    robot = rodgen.build(m, build_dir=build_dir)
    y0 = np.array(robot.initial_state(), dtype=float)
    y0[3:7] /= np.linalg.norm(y0[3:7])
    res = robot.simulate(y0, 1.5, 2e-4)
    assert res.ok
    # the energy with the contacts' elastic part (k δ^2.5 / 2.5 per corner below the ground) never grows
    heights = np.array([[robot.frames(q)[f"c{i}"][0][2] for i in range(4)] for q in res.q])
    e = res.total_energy + (k * np.clip(-heights, 0.0, None) ** 2.5 / 2.5).sum(axis=1)
    assert np.all(np.diff(e) < 1e-7 * abs(e[0]))
    assert e[-1] < e[0] - 0.5 * mass * 9.81 * 0.05
    depth = (mass * 9.81 / 4 / k) ** (1 / 1.5)
    assert res.q[-1, 2] == pytest.approx(a - depth, abs=1e-6)                 # the centre's height
    np.testing.assert_allclose(res.q[-1, 3:5], 0.0, atol=1e-5)        # level: qx = qy = 0 (the yaw is free)
    fz = np.asarray(robot.element_forces(res.q[-1], res.qd[-1])).reshape(4, 3)[:, 2]
    assert fz.sum() == pytest.approx(mass * 9.81, rel=1e-6)
    np.testing.assert_allclose(fz, mass * 9.81 / 4, rtol=1e-3)      # a quarter each, up to the last creep
