"""rodgen.runtime.contact_inverse_dynamics on a numeric stand-in of the compiled model.

- single support of a fully actuated chain: the unique answer equals the fixed-base model's joint
  torques, and the ground reaction equals total mass times (CM acceleration - g);
- the passive compass gait: the reactions of the reference KKT solve come back;
- double support (underdetermined): residual zero, Newton's law for the whole walker, the least
  weighted norm (orthogonal to the null space), a prescribed split of the tangential force (the normal forces
  are fixed by the motion).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from _constrained import ConstrainedNumeric, constrained_dynamics

import rodgen
from rodgen.runtime import ContactInverseDynamicsError, contact_inverse_dynamics
from rodgen.symbolic.numeric import lambdify_equations

LENGTHS = (0.45, 0.4, 0.35)
MASSES = (3.0, 2.0, 1.5)


def standing_chain(base: str) -> rodgen.Model:
    """A three-link chain standing on a point foot (the base point); torques at every joint."""
    m = rodgen.Model(f"stance_{base}", base=base, gravity=(0.0, -9.81))
    for i, (L, mass) in enumerate(zip(LENGTHS, MASSES), 1):
        lk = m.link(f"L{i}", parent=None if i == 1 else f"L{i-1}", angle="relative", coordinate=f"th{i}",
                    joint=rodgen.Joint(actuated=True))
        lk.rigid(f"s{i}", L, masses=[rodgen.PointMass(mass, fraction=0.6, name=f"p{i}")],
                 rod=rodgen.Rod(0.2 * mass, inertia=0.01))
        if i == 1:
            lk.marker("foot")
    if base == "floating":
        m.contact("foot")
    return m


def _cm(num, q: np.ndarray) -> np.ndarray:
    pts = num.points(q)
    names = [f"p{i}" for i in (1, 2, 3)] + [f"s{i}.rod0" for i in (1, 2, 3)]
    ms = list(MASSES) + [0.2 * m for m in MASSES]
    return sum(m * pts[n] for m, n in zip(ms, names)) / sum(ms)


def _cm_acc(num, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """CM acceleration along q(t) = q + qd t + qdd t^2/2 by central differences."""
    t = 1e-3

    def path(s: float) -> np.ndarray:
        return q + qd * s + qdd * s * s / 2

    return (_cm(num, path(t)) - 2 * _cm(num, path(0.0)) + _cm(num, path(-t))) / (t * t)


@pytest.mark.parametrize("method", ["matrix", "recursive"])
def test_single_support_is_the_fixed_base_answer(method: str) -> None:
    flo = ConstrainedNumeric(rodgen.derive(standing_chain("floating"), method=method))
    fix = lambdify_equations(rodgen.derive(standing_chain("fixed"), method="lagrange"))
    assert flo.inputs == ["tau_L1", "tau_L2", "tau_L3"] and flo.nq == 5
    rng = np.random.default_rng(7)
    total = sum(MASSES) * 1.2
    Q, QD, QDD = [], [], []
    for _ in range(5):
        th, thd, thdd = rng.uniform(-1, 1, 3) + [1.4, 0, 0], rng.normal(size=3), rng.normal(size=3)
        Q.append(np.r_[0.0, 0.0, th])
        QD.append(np.r_[0.0, 0.0, thd])
        QDD.append(np.r_[0.0, 0.0, thdd])
        r = contact_inverse_dynamics(flo, Q[-1], QD[-1], QDD[-1], ["foot"])
        np.testing.assert_allclose(r.residual, 0, atol=1e-9)
        # the foot pinned to the ground is the fixed-base model: the same joint torques
        np.testing.assert_allclose(r.u, fix.inverse_dynamics(th, thd, thdd), rtol=1e-10, atol=1e-10)
        # the reaction (flat ground: [tangential, normal] = [Fx, Fy]) is m (a_cm - g)
        a_cm = _cm_acc(flo, Q[-1], QD[-1], QDD[-1])
        np.testing.assert_allclose(r.forces["foot"], total * (a_cm - [0, -9.81]), rtol=1e-5, atol=1e-5)
    # a batch along the samples gives the same
    rb = contact_inverse_dynamics(flo, np.array(Q), np.array(QD), np.array(QDD), ["foot"])
    assert rb.u.shape == (5, 3) and rb.forces["foot"].shape == (5, 2)
    np.testing.assert_allclose(rb.u[-1], r.u, atol=1e-12)


def test_passive_compass_gait_reactions() -> None:
    sys = ConstrainedNumeric(rodgen.derive(rodgen.load("examples/compass_gait.yaml"), method="recursive"))
    q = np.array([-0.2, 0.97, 0.2, -0.3])
    J = sys.constraint_jacobian(q)
    wa, wb = -1.0, 0.4
    base = -np.linalg.solve(J[0:2, 0:2], J[0:2, 2:] @ [wa, wb])
    qd = np.array([base[0], base[1], wa, wb])
    qdd, lam = constrained_dynamics(sys, q, qd, active=["foot_a"])
    r = contact_inverse_dynamics(sys, q, qd, qdd, ["foot_a"])
    assert r.u.shape == (0,)
    np.testing.assert_allclose(r.forces["foot_a"], lam, rtol=1e-10)
    np.testing.assert_allclose(r.residual, 0, atol=1e-9)
    # a motion the passive walker cannot make is refused, or answered in the least-squares sense
    with pytest.raises(ContactInverseDynamicsError, match="underactuated"):
        contact_inverse_dynamics(sys, q, qd, qdd + [0, 0, 1.0, 0], ["foot_a"])
    r2 = contact_inverse_dynamics(sys, q, qd, qdd + [0, 0, 1.0, 0], ["foot_a"], check=False)
    assert np.linalg.norm(r2.residual) > 0.1
    # the block table as the C rodgen_constraint rows (name, kind number, row, nrows) works the same
    table = sys.constraints
    sys.constraints = [(b.name, 0, b.row, b.nrows) for b in table]
    try:
        np.testing.assert_allclose(contact_inverse_dynamics(sys, q, qd, qdd, ["foot_a"]).lam, r.lam, rtol=1e-12)
    finally:
        sys.constraints = table
    with pytest.raises(ValueError, match="unknown constraint block 'toe'"):
        contact_inverse_dynamics(sys, q, qd, qdd, ["toe"])


def telescopic_biped() -> rodgen.Model:
    """Hip on a floating base; two legs of variable length (forces), a hip torque; point feet."""
    m = rodgen.Model("biped", base="floating", gravity=(0.0, -9.81))
    a = m.link("leg_a", initial=-1.2)
    a.variable("la", 0.9, masses=[rodgen.PointMass(8.0, name="hip"), rodgen.PointMass(3.0, fraction=0.5, name="ma"),
                                  rodgen.PointMass(0.5, fraction=1, name="fa")])
    a.marker("foot_a", "la", fraction=1)
    b = m.link("leg_b", parent="leg_a", at="start", initial=-1.9)
    b.variable("lb", 0.9, masses=[rodgen.PointMass(3.0, fraction=0.5, name="mb"),
                                  rodgen.PointMass(0.5, fraction=1, name="fb")])
    b.marker("foot_b", "lb", fraction=1)
    m.contact("foot_a")
    m.contact("foot_b")
    return m


def _biped_state(t: float) -> np.ndarray:
    """q along a double-support motion: feet at (-0.3, 0) and (0.35, 0), the hip swaying."""
    hip = np.array([0.05 * math.sin(2 * t), 0.85 + 0.03 * math.cos(3 * t)])
    out = list(hip)
    for foot in (np.array([-0.3, 0.0]), np.array([0.35, 0.0])):
        d = foot - hip
        out += [math.atan2(d[1], d[0]), math.hypot(*d)]
    return np.array(out)


def test_double_support_least_norm_and_tangential_share() -> None:
    sys = ConstrainedNumeric(rodgen.derive(telescopic_biped(), method="recursive"))
    assert sys.inputs == ["F_la", "tau_leg_b", "F_lb"] and sys.nq == 6
    masses = {"hip": 8.0, "ma": 3.0, "fa": 0.5, "mb": 3.0, "fb": 0.5}
    for t in (0.0, 0.7, 1.9):
        h = 1e-4
        q = _biped_state(t)
        qd = (_biped_state(t + h) - _biped_state(t - h)) / (2 * h)
        qdd = (_biped_state(t + h) - 2 * q + _biped_state(t - h)) / (h * h)
        # the motion keeps both feet where they are
        np.testing.assert_allclose(sys.constraint_jacobian(q) @ qd, 0, atol=1e-7)
        r = contact_inverse_dynamics(sys, q, qd, qdd, ["foot_a", "foot_b"])
        np.testing.assert_allclose(r.residual, 0, atol=1e-9)
        # Newton for the whole walker: ground reactions = Σ m (a - g)
        pts = [sys.points(q + s * qd + s * s / 2 * qdd) for s in (-1e-3, 0.0, 1e-3)]
        ma = sum(m * (pts[0][n] - 2 * pts[1][n] + pts[2][n]) / 1e-6 for n, m in masses.items())
        np.testing.assert_allclose(r.forces["foot_a"] + r.forces["foot_b"], ma + [0, 15.0 * 9.81], rtol=1e-5, atol=1e-5)
        # least norm: (u, λ) is orthogonal to every (u, λ) change that leaves the equations unchanged
        A = np.hstack([sys.input_map(q), sys.constraint_jacobian(q).T])
        null = np.linalg.svd(A)[2][A.shape[0]:]
        assert null.shape == (1, 7)
        x = np.r_[r.u, r.lam]
        assert abs(null @ x)[0] < 1e-9 * np.linalg.norm(x)
        # other weights: another exact answer, orthogonal in the weighted sense
        w = np.r_[1.0, 1.0, 1.0, 0.01, 0.01, 0.01, 0.01]
        rw = contact_inverse_dynamics(sys, q, qd, qdd, ["foot_a", "foot_b"], force_weight=0.01)
        np.testing.assert_allclose(rw.residual, 0, atol=1e-9)
        assert abs(null @ (w * np.r_[rw.u, rw.lam]))[0] < 1e-9 * np.linalg.norm(x)
        # the normal forces are fixed by the motion (momentum balance); the free part is tangential
        for share in ({"foot_a": 0.3}, "friction"):
            rs = contact_inverse_dynamics(sys, q, qd, qdd, ["foot_a", "foot_b"], tangential_share=share)
            np.testing.assert_allclose(rs.residual, 0, atol=1e-9)
            np.testing.assert_allclose([rs.forces["foot_a"][1], rs.forces["foot_b"][1]],
                                       [r.forces["foot_a"][1], r.forces["foot_b"][1]], rtol=1e-9)
            (ta, na), (tb, nb) = rs.forces["foot_a"], rs.forces["foot_b"]
            if share == "friction":
                assert ta / na == pytest.approx(tb / nb, rel=1e-9)
            else:
                assert ta == pytest.approx(0.3 * (ta + tb), rel=1e-9, abs=1e-9)
    with pytest.raises(ValueError, match="tangential_share names 'foot_c'"):
        contact_inverse_dynamics(sys, q, qd, qdd, ["foot_a"], tangential_share={"foot_c": 0.5})
