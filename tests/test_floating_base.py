"""Planar floating base with rotation: base x, y plus the root link's absolute angle.

Checked against a free planar rigid body in closed form, against Pinocchio (prismatic x, y and a
revolute joint as the root), between the three derivation methods, and by momentum conservation
in a simulation without gravity (a root torque, when opted in, changes the angular momentum at
exactly its own rate: it pushes against nothing).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from _constrained import rk4

import rodgen
from rodgen.symbolic.numeric import lambdify_equations

METHODS = ["lagrange", "matrix", "recursive"]


def free_body(d: float) -> rodgen.Model:
    m = rodgen.Model("free_body", base="floating")
    m.parameter("m", 2.5)
    m.parameter("I", 0.3)
    m.parameter("d", d)
    body = m.link("body", initial=0.4)
    body.rigid("body_s", 1.0, rod=rodgen.Rod("m", inertia="I", fraction=0, offset="d"))
    return m


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("d", [0.0, 0.35])
def test_free_rigid_body_mass_matrix(method: str, d: float) -> None:
    model = free_body(d)
    assert model.inputs() == []                      # the root joint pushes against nothing
    num = lambdify_equations(rodgen.derive(model, method=method))
    assert num.coordinates == ["x", "y", "phi_body"]
    m, I = 2.5, 0.3
    for phi in (0.0, 0.4, 2.2):
        q = np.array([0.3, -0.1, phi])
        expected = np.array([[m, 0, -m * d * math.sin(phi)],
                             [0, m, m * d * math.cos(phi)],
                             [-m * d * math.sin(phi), m * d * math.cos(phi), I + m * d * d]])
        np.testing.assert_allclose(num.mass_matrix(q), expected, atol=1e-14)
        # no gravity work on the angle at the centre of mass; centrifugal force m d w^2 outwards
        w = 1.7
        h = num.bias(q, [0, 0, w])
        np.testing.assert_allclose(h, [-m * d * w * w * math.cos(phi) + 0, -m * d * w * w * math.sin(phi) + m * 9.81,
                                       m * 9.81 * d * math.cos(phi)], atol=1e-12)


def floating_chain(root_torque: bool = False, gravity: float = 9.81) -> rodgen.Model:
    """Three links with point masses and rods; relative angles; torques at the two inner joints."""
    m = rodgen.Model("floating_chain3", base="floating", gravity=(0.0, -gravity))
    lengths = (0.5, 0.4, 0.3)
    for i, L in enumerate(lengths, 1):
        lk = m.link(f"L{i}", parent=None if i == 1 else f"L{i-1}", angle="relative", coordinate=f"th{i}",
                    joint=rodgen.Joint(actuated=True) if (i == 1 and root_torque) else None)
        lk.rigid(f"s{i}", L, masses=[rodgen.PointMass(1.0 + 0.3 * i, fraction=0.3 * i, lateral=0.02 * i,
                                                      name=f"p{i}")],
                 rod=rodgen.Rod(0.4 * i, inertia=0.01 * i, fraction=0.5))
    return m


def test_inputs_of_a_floating_chain() -> None:
    assert [u.name for u in floating_chain().inputs()] == ["tau_L2", "tau_L3"]
    assert [u.name for u in floating_chain(root_torque=True).inputs()] == ["tau_L1", "tau_L2", "tau_L3"]


def test_methods_agree_on_a_floating_chain() -> None:
    nums = [lambdify_equations(rodgen.derive(floating_chain(), method=m)) for m in METHODS]
    rng = np.random.default_rng(12)
    for _ in range(3):
        q, qd, u = rng.normal(size=5), rng.normal(size=5), rng.normal(size=2)
        ref = nums[0]
        for other in nums[1:]:
            np.testing.assert_allclose(other.mass_matrix(q), ref.mass_matrix(q), atol=1e-12)
            np.testing.assert_allclose(other.bias(q, qd), ref.bias(q, qd), atol=1e-12)
            np.testing.assert_allclose(other.forward_dynamics(q, qd, u), ref.forward_dynamics(q, qd, u), atol=1e-10)


def test_floating_chain_against_pinocchio() -> None:
    pin = pytest.importorskip("pinocchio")
    model = floating_chain()
    pm = pin.Model()
    pm.gravity.linear = np.array([0.0, -9.81, 0.0])
    jx = pm.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "x")
    jy = pm.addJoint(jx, pin.JointModelPY(), pin.SE3.Identity(), "y")
    parent, placement = jy, pin.SE3.Identity()
    for i, L in enumerate((0.5, 0.4, 0.3), 1):
        j = pm.addJoint(parent, pin.JointModelRZ(), placement, f"th{i}")
        mp, fr, lat = 1.0 + 0.3 * i, 0.3 * i, 0.02 * i
        pm.appendBodyToJoint(j, pin.Inertia(mp, np.array([fr * L, lat, 0.0]), np.zeros((3, 3))), pin.SE3.Identity())
        pm.appendBodyToJoint(j, pin.Inertia(0.4 * i, np.array([L / 2, 0.0, 0.0]), np.diag([0, 0, 0.01 * i])),
                             pin.SE3.Identity())
        parent, placement = j, pin.SE3(np.eye(3), np.array([L, 0.0, 0.0]))
    pd = pm.createData()
    for method in METHODS:
        num = lambdify_equations(rodgen.derive(model, method=method))
        rng = np.random.default_rng(3)
        for _ in range(4):
            q, qd, u = rng.normal(size=5), rng.normal(size=5), rng.normal(size=2)
            np.testing.assert_allclose(num.mass_matrix(q), pin.crba(pm, pd, q), atol=1e-12)
            np.testing.assert_allclose(num.bias(q, qd), pin.rnea(pm, pd, q, qd, np.zeros(5)), atol=1e-12)
            tau = num.input_map(q) @ u
            np.testing.assert_allclose(tau, [0, 0, 0, u[0], u[1]], atol=1e-15)   # nothing on x, y, th1
            np.testing.assert_allclose(num.forward_dynamics(q, qd, u), pin.aba(pm, pd, q, qd, tau), atol=1e-10)


def _momenta(num, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Linear momentum (2) and angular momentum about the origin, from the mass points and rods."""
    masses = {f"p{i}": 1.0 + 0.3 * i for i in (1, 2, 3)}
    masses.update({f"s{i}.rod0": 0.4 * i for i in (1, 2, 3)})
    eps = 1e-6
    p0, pp, pm = num.points(q), num.points(q + eps * qd), num.points(q - eps * qd)
    P, L = np.zeros(2), 0.0
    for nm, m in masses.items():
        v = (pp[nm] - pm[nm]) / (2 * eps)
        P += m * v
        L += m * (p0[nm][0] * v[1] - p0[nm][1] * v[0])
    # rods spin with their link's absolute angle th1 + ... + thi
    L += sum(0.01 * i * np.sum(qd[2:2 + i]) for i in (1, 2, 3))
    return np.array([P[0], P[1], L])


@pytest.mark.parametrize("root_torque", [False, True])
def test_momentum_in_flight_without_gravity(root_torque: bool) -> None:
    num = lambdify_equations(rodgen.derive(floating_chain(root_torque, gravity=0.0), method="recursive"))
    u = np.array([0.8, -0.5, 0.3]) if root_torque else np.array([-0.5, 0.3])
    y0 = np.array([0.1, 0.2, 0.3, 0.5, -0.4, 0.7, -0.2, 1.1, 0.9, -1.3])
    ys = rk4(lambda y: num.rhs(0.0, y, u), y0, 1.0, 1e-3)
    H = np.array([_momenta(num, y[:5], y[5:]) for y in ys[::100]])
    t = np.arange(len(H)) * 0.1
    np.testing.assert_allclose(H[:, :2], np.broadcast_to(H[0, :2], (len(H), 2)), atol=1e-8)
    # internal joint torques leave L unchanged; a root torque adds its own value per second
    np.testing.assert_allclose(H[:, 2] - H[0, 2], (u[0] if root_torque else 0.0) * t, atol=1e-8)
    assert np.ptp(ys[:, 2]) > 0.1                                      # the chain really tumbled
