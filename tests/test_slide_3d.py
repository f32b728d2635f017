"""Coulomb friction of 3-row (spatial) point contacts in the constrained dynamics and the hybrid simulator:
sliding in the ground plane against the tangential velocity (the Euclidean cone's edge), stick -> slide
when the sticking force leaves the cone, slide -> stick when the contact stops, lift-off and touchdown
with a Coulomb impact. A point mass on three prismatic joints (x, y, z) gives closed forms (deceleration
mu g along a straight line, the stop time and distance, F - mu m g), a SciPy solve_ivp of the plane's
friction ODE (a curving path) and the impact of a falling point; the sliding constrained dynamics of a
random tree is the KKT solution from Pinocchio's mass matrix, bias and frame Jacobians with the tangential
rows replaced by the friction force. A free body (a floating base) slides on a contact at its centre of mass
to the closed-form stop while it spins about the vertical."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from rodgen.model.spatial import SpatialModel
from rodgen.runtime.result import Status

MU, MASS, G = 0.5, 2.0, 9.81


def point_model() -> SpatialModel:
    """A point mass on a fixed-base chain of three prismatic joints x, y, z (its forces F_x, F_y, F_z), a
    contact at its frame on the default ground z = 0."""
    m = SpatialModel("slider3")
    m.parameter("mu", MU)
    m.link("x", joint="prismatic", axis=(1, 0, 0))
    m.link("y", "x", joint="prismatic", axis=(0, 1, 0))
    z = m.link("z", "y", joint="prismatic", axis=(0, 0, 1))
    z.body(MASS)
    m.contact("foot", "z", friction="mu")
    return m


@pytest.fixture(scope="module")
def slider(build_dir: Path):  # type: ignore[no-untyped-def]
    return rodgen.build(point_model(), build_dir=build_dir)


def _events(res, kind: str) -> list:  # type: ignore[no-untyped-def]
    return [e for e in res.events if e["kind"] == kind]


def _energy_never_increases(res, u=None) -> None:  # type: ignore[no-untyped-def]
    """Kinetic + potential energy minus the work of constant inputs u never increases (1e-9 relative)."""
    e = res.kinetic + res.potential
    if u is not None:
        e = e - res.q @ np.asarray(u)
    scale = max(1.0, float(np.abs(e).max()))
    assert np.diff(e).max() <= 1e-9 * scale


def test_sliding_constrained_dynamics_is_coulomb_against_the_velocity(slider) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    for _ in range(5):
        v = np.r_[rng.normal(size=2), 0.0]
        u = np.r_[rng.normal(size=2), 0.0] * 3.0
        qdd, lam = slider.constrained_dynamics(np.zeros(3), v, u, active={"foot": "slide"})
        vhat = v[:2] / np.linalg.norm(v[:2])
        # normal m g, friction mu m g against the velocity, the rest of the force accelerates the mass
        assert np.allclose(lam, np.r_[-MU * MASS * G * vhat, MASS * G], rtol=0, atol=1e-12)
        assert np.allclose(qdd, np.r_[(u[:2] - MU * MASS * G * vhat) / MASS, 0.0], rtol=0, atol=1e-12)
    with pytest.raises(rodgen.runtime.compiled.DynamicsError):     # at rest without a direction to slide in
        slider.constrained_dynamics(np.zeros(3), np.zeros(3), np.zeros(3), active={"foot": "slide"})
    with pytest.raises(rodgen.runtime.compiled.DynamicsError):     # one tangent's modes: planar contacts only
        slider.constrained_dynamics(np.zeros(3), np.r_[1.0, 0, 0], np.zeros(3), active={"foot": "slide_plus"})


def test_dense_path_slides_like_the_generated_terms(slider, build_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """Without the generated constrained_terms the runtime factorises M and J M^-1 W^T itself: the same
    sliding dynamics, and the same stop of a pushed mass."""
    from rodgen.codegen.options import CodegenOptions
    dense = rodgen.build(point_model(), build_dir=build_dir, codegen=CodegenOptions(constrained_terms=False))
    rng = np.random.default_rng(2)
    for _ in range(3):
        v, u = np.r_[rng.normal(size=2), 0.0], rng.normal(size=3)
        a = dense.constrained_dynamics(np.zeros(3), v, u, active={"foot": "slide"})
        b = slider.constrained_dynamics(np.zeros(3), v, u, active={"foot": "slide"})
        assert np.allclose(a[0], b[0], rtol=0, atol=1e-12) and np.allclose(a[1], b[1], rtol=0, atol=1e-12)
    v0 = np.array([-0.4, 0.9])
    res = dense.simulate(np.r_[0, 0, 0, v0, 0], 0.3, 1e-3, contacts={"foot": "slide"}, on_slip="slide")
    [stop] = _events(res, "stick")
    assert abs(stop["t"] - np.linalg.norm(v0) / (MU * G)) <= 1e-9


@pytest.mark.parametrize("angle", [0.3, 2.2, -1.9])
def test_pushed_mass_decelerates_along_a_line_and_stops(slider, angle: float) -> None:  # type: ignore[no-untyped-def]
    v0 = 1.3 * np.array([np.cos(angle), np.sin(angle)])
    speed = np.linalg.norm(v0)
    res = slider.simulate(np.r_[0, 0, 0, v0, 0], 0.5, 1e-3, contacts={"foot": "slide"}, on_slip="slide")
    assert res.status == Status.SUCCESS, res.message
    [stop] = _events(res, "stick")
    t_stop = speed / (MU * G)
    assert abs(stop["t"] - t_stop) <= 1e-9
    before = res.t < t_stop - 1e-9
    s = speed * res.t[before] - 0.5 * MU * G * res.t[before] ** 2       # distance along the line
    assert np.abs(res.q[before, :2] - np.outer(s, v0 / speed)).max() <= 1e-12
    assert np.abs(res.qd[before, :2] - np.outer(speed - MU * G * res.t[before], v0 / speed)).max() <= 1e-12
    after = res.t > stop["t"]                                          # past the jump's two rows
    assert np.abs(res.q[after, :2] - speed ** 2 / (2 * MU * G) * v0 / speed).max() <= 1e-9
    assert np.abs(res.qd[after]).max() <= 1e-8
    assert set(res.active["foot"][after]) == {1}                      # sticks
    assert np.abs(res.lam[after, :2]).max() <= 1e-6 and np.allclose(res.lam[after, 2], MASS * G)
    assert [e["kind"] for e in res.events] == ["stick"]
    _energy_never_increases(res)


def test_constant_force_below_the_cone_holds_above_it_slides(slider) -> None:  # type: ignore[no-untyped-def]
    d = np.array([np.cos(0.7), np.sin(0.7)])
    below = np.r_[0.9 * MU * MASS * G * d, 0.0]
    res = slider.simulate(np.zeros(6), 0.3, 1e-3, contacts=["foot"], on_slip="slide", u=below)
    assert res.status == Status.SUCCESS and res.events == []
    assert np.abs(res.q).max() <= 1e-12 and set(res.active["foot"]) == {1}
    assert np.allclose(res.lam[:, :2], -below[:2], atol=1e-9)
    F = 1.6 * MU * MASS * G
    above = np.r_[F * d, 0.0]
    res = slider.simulate(np.zeros(6), 0.3, 1e-3, contacts=["foot"], on_slip="slide", u=above)
    assert res.status == Status.SUCCESS, res.message
    [slip] = res.events
    assert slip["kind"] == "slip" and slip["t"] == 0.0
    assert np.allclose(slip["impulse"], [F, MASS * G])               # |sticking force| and the normal
    a = (F - MU * MASS * G) / MASS
    assert np.abs(res.q[:, :2] - np.outer(0.5 * a * res.t ** 2, d)).max() <= 1e-12
    assert np.abs(res.q[:, 2]).max() <= 1e-12
    assert set(res.active["foot"][1:]) == {4}                          # RODGEN_SLIDE
    _energy_never_increases(res, above)


def _plane_ode(v0: np.ndarray, force: np.ndarray, t_end: float):  # type: ignore[no-untyped-def]
    """solve_ivp of m x'' = F - mu m g v/|v| in the plane up to the stop (|v| = 0)."""
    from scipy.integrate import solve_ivp

    def f(t, y):  # type: ignore[no-untyped-def]
        v = y[2:]
        return np.r_[v, force / MASS - MU * G * v / np.linalg.norm(v)]

    def stop(t, y):  # type: ignore[no-untyped-def]
        return np.linalg.norm(y[2:]) - 1e-7
    stop.terminal = True  # type: ignore[attr-defined]
    return solve_ivp(f, (0, t_end), np.r_[0, 0, v0], rtol=1e-12, atol=1e-14, events=stop, dense_output=True)


def test_transverse_force_curves_the_path_like_the_plane_ode(slider) -> None:  # type: ignore[no-untyped-def]
    v0 = np.array([1.5, 0.0])
    force = np.array([0.0, 0.6 * MU * MASS * G])      # below the cone: the mass curves, then stops and sticks
    ref = _plane_ode(v0, force, 2.0)
    t_stop = float(ref.t_events[0][0])
    res = slider.simulate(np.r_[0, 0, 0, v0, 0], 0.6, 1e-3, contacts={"foot": "slide"}, on_slip="slide",
                          u=np.r_[force, 0.0])
    assert res.status == Status.SUCCESS, res.message
    [stop] = _events(res, "stick")
    # (the reference stops at |v| = 1e-7 m/s, about 5e-8 s early)
    assert abs(stop["t"] - t_stop) <= 2e-7
    sliding = res.t < stop["t"]
    y = ref.sol(res.t[sliding])
    assert np.abs(res.q[sliding, :2] - y[:2].T).max() <= 1e-8
    assert np.abs(res.qd[sliding, :2] - y[2:].T).max() <= 1e-6
    assert abs(res.q[sliding, 1].max()) > 0.05                     # it did curve
    at = np.searchsorted(res.t, stop["t"])
    assert np.abs(res.q[at, :2] - ref.sol(t_stop)[:2]).max() <= 1e-8
    # it sticks: the drift control takes up what speed was left
    assert set(res.active["foot"][res.t > stop["t"]]) == {1}
    assert np.abs(res.q[res.t > stop["t"], :2] - res.q[at, :2]).max() <= 1e-7
    _energy_never_increases(res, np.r_[force, 0.0])


@pytest.mark.parametrize("vt, slides", [((1.2, -0.9), True), ((0.3, 0.2), False)])
def test_dropped_point_impacts_then_slides_or_sticks(slider, vt, slides: bool) -> None:  # type: ignore[no-untyped-def]
    h0, vt = 0.2, np.array(vt)
    res = slider.simulate(np.r_[0, 0, h0, vt, 0], 0.6, 1e-3, contacts=(), on_slip="slide")
    assert res.status == Status.SUCCESS, res.message
    t_td = np.sqrt(2 * h0 / G)
    vz = G * t_td                                          # falling speed at touchdown
    [td] = _events(res, "touchdown")
    assert abs(td["t"] - t_td) <= 1e-9
    # Coulomb impact: the normal impulse m vz; a tangential one m |vt| if that is inside the cone, else
    # mu m vz against vt (the point keeps sliding with |vt| - mu vz)
    speed = np.linalg.norm(vt)
    dv = min(speed, MU * vz)
    assert np.allclose(td["impulse"], [MASS * dv, MASS * vz], rtol=1e-8)
    after_speed = speed - dv
    assert np.isclose(td["energy_loss"], 0.5 * MASS * (vz ** 2 + speed ** 2 - after_speed ** 2), rtol=1e-8)
    j = np.searchsorted(res.t, td["t"], side="right") - 1  # the jump's second row: the state after it
    assert np.allclose(res.qd[j], np.r_[vt / speed * after_speed, 0.0], atol=1e-8)
    if slides:
        assert res.active["foot"][j] == 4
        [stop] = _events(res, "stick")
        assert abs(stop["t"] - (t_td + after_speed / (MU * G))) <= 1e-8
        dist = after_speed ** 2 / (2 * MU * G)
        # in flight x moves with vt until touchdown, then slides along vt to the stop
        assert np.allclose(res.q[-1], np.r_[vt * t_td + dist * vt / speed, 0.0], atol=1e-8)
    else:
        assert res.active["foot"][j] == 1 and _events(res, "stick") == []
        assert np.allclose(res.q[-1], np.r_[vt * t_td, 0.0], atol=1e-8)
    _energy_never_increases(res)


def test_sliding_mass_lifts_off_when_its_normal_force_reaches_zero(slider) -> None:  # type: ignore[no-untyped-def]
    """An upward force k t on a sliding mass: the normal force m g - k t reaches 0 at t = m g / k (lift-off,
    located), then free flight: the plane velocity it had, z from the force's integral."""
    k = 10.0 * MASS * G
    v0 = np.array([0.8, -0.6])
    speed = np.linalg.norm(v0)

    def law(t, q, qd):  # type: ignore[no-untyped-def]
        return np.array([0.0, 0.0, k * t])
    res = slider.simulate(np.r_[0, 0, 0, v0, 0], 0.3, 1e-3, contacts={"foot": "slide"}, on_slip="slide", u=law)
    assert res.status == Status.SUCCESS, res.message
    [off] = _events(res, "liftoff")
    t_off = MASS * G / k
    assert abs(off["t"] - t_off) <= 1e-9
    assert [e["kind"] for e in res.events] == ["liftoff"]
    # while sliding the normal force is m g - k t and the friction mu times that, against the velocity
    sl = res.t < off["t"]
    fn = MASS * G - k * res.t[sl]
    assert np.allclose(res.lam[sl, 2], fn, atol=1e-9)
    assert np.allclose(res.lam[sl, :2], -MU * np.outer(fn, v0 / speed), atol=1e-9)
    # speed lost: integral of mu (g - k t / m) dt
    lost = MU * (G * t_off - 0.5 * k / MASS * t_off ** 2)
    end = res.t > off["t"]
    assert np.allclose(res.qd[end, :2], (speed - lost) * v0 / speed, atol=1e-9)
    tt = res.t[end]
    z = k / (6 * MASS) * (tt - t_off) ** 2 * (tt + 2 * t_off) - 0.5 * G * (tt - t_off) ** 2
    assert np.abs(res.q[end, 2] - z).max() <= 1e-9
    assert set(res.active["foot"][end]) == {0}


def test_growing_push_slips_when_it_leaves_the_cone(slider) -> None:  # type: ignore[no-untyped-def]
    """A horizontal push c t along d: the sticking force reaches the cone mu m g at t = mu m g / c (a slip,
    located), then the mass accelerates along d at (c t - mu m g) / m."""
    c, d = 40.0, np.array([-0.28, 0.96])
    t_slip = MU * MASS * G / c

    def law(t, q, qd):  # type: ignore[no-untyped-def]
        return np.r_[c * t * d, 0.0]
    res = slider.simulate(np.zeros(6), 0.4, 1e-3, contacts=["foot"], on_slip="slide", u=law)
    assert res.status == Status.SUCCESS, res.message
    [slip] = res.events
    assert slip["kind"] == "slip" and abs(slip["t"] - t_slip) <= 1e-9
    assert np.allclose(slip["impulse"], [MU * MASS * G, MASS * G], rtol=1e-8)
    stuck = res.t < slip["t"]
    assert np.abs(res.q[stuck]).max() <= 1e-10
    assert np.allclose(res.lam[stuck, :2], -np.outer(c * res.t[stuck], d), atol=1e-8)
    after = res.t > slip["t"]
    tau = res.t[after] - t_slip
    s = c / (6 * MASS) * tau ** 3                     # x'' = c (t - t_slip) / m along d, from rest
    assert np.abs(res.q[after, :2] - np.outer(s, d)).max() <= 1e-9


def test_free_body_slides_to_a_stop_in_closed_form(build_dir: Path) -> None:
    """A free body (a floating base: nq = 7 with the quaternion, nv = 6) on one 3-row contact at its centre of
    mass, turned by a yaw and spinning about the vertical: the friction at the contact point has no moment about
    the centre, so the centre decelerates at mu g against its initial world velocity v0, stops after
    |v0| / (mu g) at |v0|^2 / (2 mu g) along v0, and the yaw grows at the constant spin throughout. The free
    joint's linear velocities are in the body's axes: R(yaw)^T of the world's."""
    m = SpatialModel("puck_free")
    m.link("body", joint="free").body(MASS, (0, 0, 0), (1.0, 0, 0, 1.5, 0, 2.0))
    m.contact("foot", "body", friction=MU)
    robot = rodgen.build(m, build_dir=build_dir)
    assert (robot.nq, robot.nv) == (7, 6)
    yaw, spin, v0 = 0.7, 1.3, np.array([0.6, 0.8, 0.0])

    def rot(a):  # type: ignore[no-untyped-def]
        return np.array([[np.cos(a), -np.sin(a), 0.0], [np.sin(a), np.cos(a), 0.0], [0.0, 0.0, 1.0]])
    y0 = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2), rot(yaw).T @ v0, 0.0, 0.0, spin]
    res = robot.simulate(y0, 0.5, 1e-3, contacts={"foot": "slide"}, on_slip="slide")
    assert res.status == Status.SUCCESS, res.message
    speed, vhat = np.linalg.norm(v0), v0 / np.linalg.norm(v0)
    t_stop = speed / (MU * G)
    [stop] = res.events
    assert stop["kind"] == "stick" and abs(stop["t"] - t_stop) <= 1e-9
    t = res.t
    s = np.where(t < t_stop, speed * t - 0.5 * MU * G * t ** 2, speed ** 2 / (2 * MU * G))
    # the body's axes turn under the velocities: RK4's error of the position's rate R(quat) v_b, O(dt^4)
    assert np.abs(res.q[:, :3] - np.outer(s, vhat)).max() <= 1e-8
    psi = 2 * np.arctan2(res.q[:, 5], res.q[:, 6])
    assert np.abs(res.q[:, 3:5]).max() <= 1e-12 and np.abs(psi - (yaw + spin * t)).max() <= 1e-9
    sliding, stuck = t < t_stop - 1e-6, t > t_stop + 1e-6
    assert set(res.active["foot"][sliding]) == {4} and set(res.active["foot"][stuck]) == {1}
    # the velocity (world axes) to 1e-9 m/s up to 10 ms before the stop, the friction mu m g against it; the
    # direction of motion is neutral under friction, so RK4's error across it (< 1e-9 m/s) turns it by that
    # over the speed, and in the last steps (a few rest speeds mu f_n dt / m = 5e-3 m/s) up to 1e-5 rad
    moving = t < t_stop - 0.01
    v_world = np.einsum("nij,nj->ni", np.array([rot(a) for a in psi]), res.qd[:, :3])
    v_ref = np.outer(np.maximum(speed - MU * G * t, 0.0), vhat)
    assert np.abs(v_world - v_ref)[moving].max() <= 1e-9 and np.abs(v_world - v_ref).max() <= 1e-7
    v_hat = v_world[moving, :2] / np.linalg.norm(v_world[moving, :2], axis=1)[:, None]
    assert np.abs(res.lam[moving, :2] + MU * MASS * G * v_hat).max() <= 1e-9
    assert np.abs(res.lam[sliding, :2] + MU * MASS * G * vhat[:2]).max() <= 1e-4
    assert np.abs(res.lam[:, 2] - MASS * G).max() <= 1e-9
    assert np.abs(res.qd[:, 3:] - [0.0, 0.0, spin]).max() <= 1e-12
