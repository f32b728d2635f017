"""Redundant contact rows: a rigid box on four corner point contacts (12 rows of rank 6). The motion is unique,
the forces are not; the constrained dynamics and the impact map take the least-norm forces, checked against the
least-norm solution of the whole KKT system by numpy.linalg.lstsq (the accelerations unique, the forces of least
norm), and against the box's statics (each corner carries a quarter of the weight when the centre of mass is over
the middle). Rows that contradict each other (no motion satisfies them all) are still refused."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from rodgen.contract import StatusCode
from rodgen.model.spatial import SpatialModel
from rodgen.runtime import DynamicsError

M, G, A, B, HC = 3.0, 9.81, 0.2, 0.1, 0.15     # mass, gravity, half sides of the sole (x, y), centre's height
MU = 0.8                                       # the corners' Coulomb friction
CORNERS = [(sx * A, sy * B) for sx in (1, -1) for sy in (1, -1)]


def _box(cx: float) -> SpatialModel:
    """A box on a free joint with its four bottom corners as point contacts, its centre of mass at (cx, 0, HC),
    pushed at its top by (kx, 0, 0)."""
    model = SpatialModel(f"box4_{'mid' if cx == 0 else 'off'}")
    model.parameter("kx", 0.0)
    body = model.link("body", joint="free")
    body.body(M, (cx, 0.0, HC), (0.02, 0.0, 0.0, 0.03, 0.0, 0.04))
    body.marker("top", xyz=(0.0, 0.0, 2 * HC))
    for i, (x, y) in enumerate(CORNERS):
        body.marker(f"c{i}", xyz=(x, y, 0.0))
        model.contact(f"c{i}", f"c{i}", friction=MU)
    model.point_force("push", "top", ("kx", 0, 0))
    return model


@pytest.fixture(scope="module")
def mid(build_dir: Path) -> Any:
    return rodgen.build(_box(0.0), build_dir=build_dir)


@pytest.fixture(scope="module")
def off(build_dir: Path) -> Any:
    return rodgen.build(_box(0.05), build_dir=build_dir)


STAND = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
ALL = [f"c{i}" for i in range(4)]


def _kkt_lstsq(robot: Any, q: np.ndarray, qd: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least-norm solution of [[M, -J^T], [J, 0]] [qdd, lam] = [-bias, -Jdot qd] (numpy's lstsq)."""
    Mq, h = robot.mass_matrix(q, p), robot.bias(q, qd, p)
    J, b = robot.constraint_jacobian(q, p), robot.constraint_bias(q, qd, p)
    nv, nr = J.shape[1], J.shape[0]
    K = np.block([[Mq, -J.T], [J, np.zeros((nr, nr))]])
    x = np.linalg.lstsq(K, np.r_[-h, -b], rcond=1e-12)[0]
    assert np.linalg.matrix_rank(J) == 6 and nr == 12
    return x[:nv], x[nv:]


@pytest.mark.parametrize("which, kx", [("mid", 0.0), ("off", 4.0)])
def test_four_corners_take_the_least_norm_forces(which: str, kx: float, request: pytest.FixtureRequest) -> None:
    """Standing on its four corners (pushed at the top for the second box): qdd = 0 and the forces are lstsq's
    least-norm ones to 1e-10; the forces balance the weight and the push; with the centre over the middle and no
    push each corner carries m g / 4."""
    robot = request.getfixturevalue(which)
    p = robot.parameter_vector(kx=kx)
    qd = np.zeros(6)
    qdd, lam = robot.constrained_dynamics(STAND, qd, active=ALL, p=p)
    qdd_ref, lam_ref = _kkt_lstsq(robot, STAND, qd, p)
    assert np.abs(qdd).max() < 1e-10 and np.abs(qdd_ref).max() < 1e-10
    assert np.abs(lam - lam_ref).max() < 1e-10 * M * G
    f = lam.reshape(4, 3)
    assert np.allclose(f.sum(axis=0), [-kx, 0.0, M * G], atol=1e-10)
    if which == "mid":
        assert np.allclose(f, [[0.0, 0.0, M * G / 4]] * 4, atol=1e-10)


def test_four_corners_impact_takes_the_least_norm_impulses(off: Any) -> None:
    """Landing flat with a velocity (down, sideways, turning about the vertical): the plastic impact on all four
    corners stops the box (12 rows, rank 6), its impulses lstsq's least-norm ones of the impact's KKT system
    [[M, -J^T], [J, 0]] [dqd, Lambda] = [0, -J qd-]."""
    qdm = np.array([0.3, -0.2, -1.0, 0.0, 0.0, 0.5])
    qdp, imp, after, loss = off.impact(STAND, qdm, active=ALL)
    Mq, J = off.mass_matrix(STAND), off.constraint_jacobian(STAND)
    K = np.block([[Mq, -J.T], [J, np.zeros((12, 12))]])
    x = np.linalg.lstsq(K, np.r_[np.zeros(6), -J @ qdm], rcond=1e-12)[0]
    assert sorted(after) == ALL
    assert np.abs(qdp).max() < 1e-12 and np.abs(qdm + x[:6]).max() < 1e-12
    assert np.abs(imp - x[6:]).max() < 1e-10
    assert abs(loss - 0.5 * qdm @ Mq @ qdm) < 1e-12


def test_dropped_box_lands_on_four_corners_and_rests_on_quarters(mid: Any) -> None:
    """Dropped flat from h: the four corners touch down together at sqrt(2h/g) and the box rests, each corner
    carrying m g / 4 (the hybrid simulation through the least-norm solves)."""
    h = 0.05
    res = mid.simulate(np.r_[0.0, 0.0, h, STAND[3:], np.zeros(6)], 0.4, 1e-3, contacts=[])
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    assert sorted(e["block"] for e in res.events) == ALL and all(e["kind"] == "touchdown" for e in res.events)
    assert max(abs(e["t"] - np.sqrt(2 * h / G)) for e in res.events) < 1e-9
    assert np.abs(res.qd[-1]).max() < 1e-9
    assert np.allclose(res.lam[-1].reshape(4, 3), [[0.0, 0.0, M * G / 4]] * 4, atol=1e-8)


SLIDE = {c: "slide" for c in ALL}


def _normals_sliding(cx: float, d: tuple[float, float]) -> np.ndarray:
    """The corners' normal forces of the box sliding without turning along the ground direction d at
    deceleration mu g: sum N = m g; the moments of N_i (0, 0, 1) - mu N_i (d, 0) at (x_i - cx, y_i, -HC) about
    the centre vanish: sum x_i N_i = m g (mu HC d_x + cx), sum y_i N_i = m g mu HC d_y; of those forces the
    least-norm ones lie in the span of (1), (x_i), (y_i), mutually orthogonal over the four corners."""
    x, y = np.array(CORNERS).T
    return M * G / 4 * (1 + x * (MU * HC * d[0] + cx) / A ** 2 + y * MU * HC * d[1] / B ** 2)



@pytest.mark.parametrize("which, d", [("mid", (1.0, 0.0)), ("off", (1.0, 0.0)), ("mid", (0.96, 0.28))])
def test_four_sliding_corners_take_the_least_norm_forces(which: str, d: tuple[float, float],
                                                         request: pytest.FixtureRequest) -> None:
    """Sliding along d on its four corners (four normal rows of rank 3, S = J M^-1 W^T not symmetric): the box
    decelerates at mu g against d without turning, each corner's normal force the closed form of
    _normals_sliding, its friction mu N against d; forces and accelerations are lstsq's least-norm solution of
    the KKT system [[M, -W^T], [J_n, 0]] [qdd, lam_n] = [-bias, -Jdot_n qd] to 1e-10, W_i = J_n,i - mu d J_t,i
    the force direction of corner i built here from the Jacobian's rows."""
    robot = request.getfixturevalue(which)
    cx = 0.0 if which == "mid" else 0.05
    qd = np.r_[d[0], d[1], 0.0, 0.0, 0.0, 0.0] * 0.7
    qdd, lam = robot.constrained_dynamics(STAND, qd, active=SLIDE)
    Mq, h = robot.mass_matrix(STAND), robot.bias(STAND, qd)
    J, b = robot.constraint_jacobian(STAND), robot.constraint_bias(STAND, qd)
    Jn, Jx, Jy = J[2::3], J[0::3], J[1::3]
    W = Jn - MU * (d[0] * Jx + d[1] * Jy)
    K = np.block([[Mq, -W.T], [Jn, np.zeros((4, 4))]])
    x = np.linalg.lstsq(K, np.r_[-h, -b[2::3]], rcond=1e-12)[0]
    assert np.linalg.matrix_rank(Jn) == 3
    assert np.abs(qdd - x[:6]).max() < 1e-10 and np.abs(lam[2::3] - x[6:]).max() < 1e-10 * M * G
    assert np.allclose(qdd, np.r_[-MU * G * np.array(d), 0.0, 0.0, 0.0, 0.0], rtol=0, atol=1e-10)
    n = _normals_sliding(cx, d)
    assert np.abs(lam[2::3] - n).max() < 1e-10 * M * G
    assert np.abs(lam[0::3] + MU * d[0] * n).max() < 1e-10 * M * G
    assert np.abs(lam[1::3] + MU * d[1] * n).max() < 1e-10 * M * G


def test_box_slides_on_four_corners_to_a_stop(off: Any) -> None:
    """The hybrid simulation of the box (centre off the middle) sliding on its four corners from v0 along x:
    it stops at v0 / (mu g) after v0^2 / (2 mu g), all four corners sticking there; sliding, the normal forces
    are _normals_sliding's, at rest the static ones m g / 4 (1 + x_i cx / A^2)."""
    v0 = 1.0
    res = off.simulate(np.r_[STAND, v0, 0.0, 0.0, 0.0, 0.0, 0.0], 0.2, 1e-3, contacts=SLIDE, on_slip="slide")
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    t_stop = v0 / (MU * G)
    assert sorted(e["block"] for e in res.events) == ALL and all(e["kind"] == "stick" for e in res.events)
    assert max(abs(e["t"] - t_stop) for e in res.events) < 1e-9
    s = np.where(res.t < t_stop, v0 * res.t - 0.5 * MU * G * res.t ** 2, v0 ** 2 / (2 * MU * G))
    assert np.abs(res.q[:, 0] - s).max() < 1e-9 and np.abs(res.q[:, 1:3]).max() < 1e-12
    sliding, stuck = res.t < t_stop - 1e-6, res.t > t_stop + 1e-6
    assert np.abs(res.lam[sliding][:, 2::3] - _normals_sliding(0.05, (1.0, 0.0))).max() < 1e-8
    x = np.array(CORNERS)[:, 0]
    assert np.abs(res.lam[stuck][:, 2::3] - M * G / 4 * (1 + x * 0.05 / A ** 2)).max() < 1e-8


def test_box_landing_sideways_slides_its_back_corners_through_the_impact(mid: Any) -> None:
    """Dropped flat from h moving along x at vx (vz = sqrt(2 g h)): held sticking on all four corners, the back
    ones' share of the tangential impulse leaves their cone, and with mu vz / (1 + mu HC / A) < vx <= mu vz the
    Coulomb impact holds the front corners sticking and the back ones sliding (tangential impulse mu times
    normal), eight rows of rank 6, and stops the box. The impulses in closed form: the sums M vz (normal) and
    M vx (tangential), the moment about the centre A (2 P_f - 2 P_b) = HC M vx, so P_f, P_b = M / 4 (vz +- HC vx
    / A) and T_f = M vx / 2 - mu P_b, inside the front corners' cone (T_f <= mu P_f iff vx <= mu vz); the energy
    lost is the kinetic energy before. (Above mu vz no corner can stick: the next test.)"""
    h, vx = 0.05, 0.65
    vz = np.sqrt(2 * G * h)
    res = mid.simulate(np.r_[0.0, 0.0, h, STAND[3:], vx, 0.0, 0.0, 0.0, 0.0, 0.0], 0.3, 1e-3, contacts=[],
                       on_slip="slide")
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    touch = {e["block"]: e for e in res.events if e["kind"] == "touchdown"}
    assert sorted(touch) == ALL and max(abs(e["t"] - np.sqrt(2 * h / G)) for e in touch.values()) < 1e-9
    vz = G * touch["c0"]["t"]   # the speed at the located touchdown (located to the event tolerance)
    pf, pb = M / 4 * (vz + HC * vx / A), M / 4 * (vz - HC * vx / A)
    tf = M * vx / 2 - MU * pb
    assert MU * vz / (1 + MU * HC / A) < vx <= MU * vz and tf <= MU * pf
    for c, (t, n) in zip(ALL, [(tf, pf), (tf, pf), (MU * pb, pb), (MU * pb, pb)]):
        assert np.abs(touch[c]["impulse"] - [t, n]).max() < 1e-10, c
        assert abs(touch[c]["energy_loss"] - 0.5 * M * (vx ** 2 + vz ** 2)) < 1e-10
    after = res.t > np.sqrt(2 * h / G) + 1e-6
    assert np.abs(res.qd[after]).max() < 1e-8 and np.abs(res.q[after, 2]).max() < 1e-9
    assert np.allclose(res.lam[-1].reshape(4, 3), [[0.0, 0.0, M * G / 4]] * 4, atol=1e-8)


def test_box_landing_fast_slides_on_all_four_corners_and_never_sinks(mid: Any) -> None:
    """Dropped flat from h moving along x faster than (A / HC) vz: held sticking, the back corners would have to
    pull (the front ones' friction pitches the box forward), so no set of sticking and released corners is an
    impact, and above mu vz the front corners cannot stick either; the Coulomb impact slides all four
    (tangential impulse mu times normal, against the motion). In closed form: no pitch, so the moment about
    the centre is 0: P_f (A - mu HC) = P_b (A + mu HC), with 2 (P_f + P_b) = M vz; the box leaves the impact at
    vx - mu vz, slides decelerating at mu g to a stop, and no corner goes below the ground."""
    h, vx = 0.05, 1.5
    res = mid.simulate(np.r_[0.0, 0.0, h, STAND[3:], vx, 0.0, 0.0, 0.0, 0.0, 0.0], 0.4, 1e-3, contacts=[],
                       on_slip="slide")
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    touch = {e["block"]: e for e in res.events if e["kind"] == "touchdown"}
    t0 = np.sqrt(2 * h / G)
    assert sorted(touch) == ALL and max(abs(e["t"] - t0) for e in touch.values()) < 1e-9
    vz = G * touch["c0"]["t"]
    assert vx > A / HC * vz and A > MU * HC       # the back corners would pull; sliding, both pairs push
    pb, pf = M * vz * (A - MU * HC) / (4 * A), M * vz * (A + MU * HC) / (4 * A)
    for c, n in zip(ALL, [pf, pf, pb, pb]):
        assert np.abs(touch[c]["impulse"] - [MU * n, n]).max() < 1e-10, c
    assert not [e for e in res.events if e["kind"] == "liftoff"]
    v1 = vx - MU * vz
    t_stop = t0 + v1 / (MU * G)
    stops = [e for e in res.events if e["kind"] == "stick"]
    assert sorted(e["block"] for e in stops) == ALL and max(abs(e["t"] - t_stop) for e in stops) < 1e-9
    assert abs(res.q[-1, 0] - (vx * touch["c0"]["t"] + v1 ** 2 / (2 * MU * G))) < 1e-9
    corners = np.array([z[:, 2] for name, z in mid.points(res.q).items() if name in ALL])
    assert corners.min() > -1e-9 and np.abs(res.qd[-1]).max() < 1e-8


def test_box_landing_slowly_sticks_on_all_four_corners(mid: Any) -> None:
    """The same landing below vx = (A / HC) vz and with the back corners' share in the cone: all four stick
    and stop the box at once, the normal impulses M / 4 (vz +- HC vx / A) (moment about the centre), the
    tangential ones summing to M vx."""
    h, vx = 0.05, 0.3
    res = mid.simulate(np.r_[0.0, 0.0, h, STAND[3:], vx, 0.0, 0.0, 0.0, 0.0, 0.0], 0.2, 1e-3, contacts=[],
                       on_slip="slide")
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    touch = {e["block"]: e for e in res.events if e["kind"] == "touchdown"}
    assert sorted(touch) == ALL and [e["kind"] for e in res.events] == ["touchdown"] * 4
    vz = G * touch["c0"]["t"]
    pf, pb = M / 4 * (vz + HC * vx / A), M / 4 * (vz - HC * vx / A)
    for c, n in zip(ALL, [pf, pf, pb, pb]):
        assert abs(touch[c]["impulse"][1] - n) < 1e-10, c
    assert abs(sum(e["impulse"][0] for e in touch.values()) - M * vx) < 1e-10
    after = res.t > touch["c0"]["t"] + 1e-6
    assert np.abs(res.qd[after]).max() < 1e-8


def test_contradicting_rows_are_still_singular(mid: Any) -> None:
    """Turning about the vertical while all four corners are held: their accelerations, the centripetal ones of
    the corners (-w^2 r, spreading them), are no rigid motion's, so no motion keeps the rows: the status
    RODGEN_ERR_SINGULAR_CONSTRAINTS, never forces."""
    with pytest.raises(DynamicsError, match="singular") as err:
        mid.constrained_dynamics(STAND, np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 2.0], active=ALL)
    assert err.value.status == StatusCode.ERR_SINGULAR_CONSTRAINTS
