"""A released contact left below the ground and sinking after a jump is held again in the same instant (hy_jump's
repeat of hy_jump_once in rodgen_contact.c, which no other test reaches).

The scenario: a floating bar (mass m, central inertia I, centre of mass at s_c from its end a, length L to its
end b) with point contacts at both ends, lifted by a vertical force F at s_F and slowed by a rotational damper
c (the joint damping of its absolute angle). It starts pivoting on b with a tilted up; a comes down and
touches. The impact holds both ends (the bar stops). At rest, held at both ends, both ends pull; a pulls the
more and is released first (held on b alone it would rise: released at rest, RELEASED), then b (released it
rises too). With both free, a sinks (the damper that kept b pressed while the bar turned acts no more), and
a is below the ground by the touchdown's location tolerance: its event function is negative right after the
jump and would never turn negative, so hy_jump touches it again at once. a is then held alone and the bar
turns about it, b rising.

References, all by hand: the bar's statics at rest held at both ends, on b alone and free (Newton-Euler of a
rigid bar, the premise of the scenario); the impact conserves the angular momentum about b (a's impulse
I_b w / L, the kinetic energy 1/2 I_b w^2 lost, the bar at rest after it); the force on a at rest on its own
(Newton-Euler about the pivot a); after the instant the bar turns about a as a pendulum
I_a phi'' = (F s_F - m g s_c) cos(phi) - c phi', integrated by SciPy; kinetic energy from the state (not from
rodgen) never increases across the instant.

The same holds where hy_settle releases outside a jump (the start of a run, a new held sample, and
rodgen_hybrid_forget, which all settle at the top of rodgen_hybrid_simulate): the bar at rest flat on both ends,
below the ground within the start tolerance, both ends pull (the lift as a parameter at the start, or as a held
input that rises after the first step); a and b are released and a, left sinking, is held again at once. The
references are the same by hand (the force on a at rest on its own, the pendulum about a by SciPy).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import rodgen
from rodgen.runtime.result import Status

M, I, L, S_C, S_F, F, C, G = 3.0, 1.5, 5.0, 1.0, 1.1, 33.0, 10.0, 9.81
MU = 100.0                                    # the ends do not slip while they turn about the other end
PHI0, W0 = -0.05, 1.0                         # a tilted up, the bar turning about b towards the ground
DT, T_END = 1e-3, 0.1
I_A, I_B = I + M * S_C**2, I + M * (L - S_C)**2   # inertia about a and about b


def _model(held: bool = False) -> rodgen.Model:
    """The bar; held: the lift is the input (lift_x, lift_y) instead of the parameter F."""
    m = rodgen.Model("lever_held_lift" if held else "lever_jump_again", base="floating")
    for name, value in (("m", M), ("I", I), ("F", F), ("c", C), ("g", G), ("mu", MU)):
        if not (held and name == "F"):
            m.parameter(name, value)
    m.gravity = (0, "-g")
    bar = m.link("bar", coordinate="phi", joint=rodgen.Joint(damping="c"))
    bar.rigid("bar_s", L, rod=rodgen.Rod("m", inertia="I", fraction=S_C / L))
    bar.marker("a", "bar_s", fraction=0)
    bar.marker("b", "bar_s", fraction=1)
    bar.marker("lift", "bar_s", fraction=S_F / L)
    if held:
        m.point_force("lift", "lift", inputs=True)
    else:
        m.point_force("lift", "lift", (0, "F"))
    m.contact("a", friction="mu")
    m.contact("b", friction="mu")
    return m


@pytest.fixture(scope="module")
def lever(build_dir) -> Any:
    return rodgen.build(_model(), build_dir=build_dir)


@pytest.fixture(scope="module")
def held_lever(build_dir) -> Any:
    return rodgen.build(_model(held=True), build_dir=build_dir)


def _y0() -> np.ndarray:
    """b at (L, 0) on the ground, a above it, the bar turning about b at W0 (q = [x_a, y_a, phi])."""
    e = np.array([np.cos(PHI0), np.sin(PHI0)])
    va = -L * W0 * np.array([-e[1], e[0]])
    return np.r_[L - L * e[0], -L * e[1], PHI0, va, W0]


def _kinetic(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """1/2 m |v_c|^2 + 1/2 I phi'^2 from the state, v_c = v_a + phi' s_c (-sin phi, cos phi)."""
    vx = qd[:, 0] - qd[:, 2] * S_C * np.sin(q[:, 2])
    vy = qd[:, 1] + qd[:, 2] * S_C * np.cos(q[:, 2])
    return 0.5 * M * (vx**2 + vy**2) + 0.5 * I * qd[:, 2]**2


def test_the_scenarios_premise_by_hand() -> None:
    """At rest with the bar flat: held at both ends both pull, a the more; held on b alone b pulls and a rises;
    free, a sinks (Newton-Euler of the bar; normal forces up on the bar)."""
    # both held: la + lb = m g - F, moments about the centre: lb (L - s_c) - la s_c + F (s_F - s_c) = 0
    la, lb = np.linalg.solve([[1.0, 1.0], [-S_C, L - S_C]], [M * G - F, -F * (S_F - S_C)])
    assert la < lb < 0
    # on b alone: I_b phi'' = m g (L - s_c) - F (L - s_F), a's upward acceleration -L phi''
    phidd = (M * G * (L - S_C) - F * (L - S_F)) / I_B
    lb_alone = M * (L - S_C) * phidd - (F - M * G)      # m y_c'' = F - m g + lb, y_c'' = -(L - s_c) phi''
    assert lb_alone < 0 and -L * phidd > 0
    # free: a's acceleration (F - m g) / m - s_c F (s_F - s_c) / I
    assert (F - M * G) / M - S_C * F * (S_F - S_C) / I < -0.5


@pytest.mark.parametrize("on_slip", ["stop", "slide"])
def test_a_released_contact_left_sinking_is_held_again_in_the_same_instant(lever, on_slip: str) -> None:
    res = lever.simulate(_y0(), T_END, DT, contacts=["b"], on_slip=on_slip)
    assert res.status == Status.SUCCESS, res.message
    c = lever.constraint_position(res.q)                # rows: a (tangential, gap), b (tangential, gap)
    gap_a, gap_b = c[:, 1], c[:, 3]

    # one instant: a touches, both ends are released (a first), a touches again at once; nothing else to T_END
    tj = res.events[0]["t"]
    assert [(e["kind"], e["block"]) for e in res.events] == [
        ("touchdown", "a"), ("liftoff", "a"), ("liftoff", "b"), ("touchdown", "a")]
    assert all(e["t"] == tj for e in res.events)
    at = np.flatnonzero(res.t == tj)
    before, after = at[0], at[-1]

    # before it the bar turns about b, pressed on the ground
    pre = res.t < tj
    assert np.all(res.active["b"][pre] == 1) and np.all(res.active["a"][pre] == 0)
    assert np.all(res.lam[pre, 3] > 0)

    # the impact: the bar flat, the angular momentum about b kept, the bar at rest after it
    w = res.qd[before, 2]
    assert abs(res.q[before, 2]) < 1e-9 and w > 0.9
    first, again = res.events[0], res.events[3]
    assert first["impulse"][1] == pytest.approx(I_B * w / L, rel=1e-9)
    assert first["energy_loss"] == pytest.approx(0.5 * I_B * w**2, rel=1e-9)
    assert _kinetic(res.q[[before]], res.qd[[before]])[0] == pytest.approx(0.5 * I_B * w**2, rel=1e-9)
    # touching again at rest: no impulse, no loss
    assert np.abs(again["impulse"]).max() < 1e-12 and again["energy_loss"] == 0.0

    # after the instant a is held, below the ground only by the touchdown's tolerance, at rest, carrying the
    # pivot's force m s_c phi'' - (F - m g) with I_a phi'' = F s_F - m g s_c; b is free
    assert res.active["a"][after] == 1 and res.active["b"][after] == 0
    assert -1e-9 < gap_a[after] < 0
    assert np.abs(res.qd[after]).max() < 1e-12
    phidd = (F * S_F - M * G * S_C) / I_A
    assert res.lam[after, 1] == pytest.approx(M * S_C * phidd - (F - M * G), rel=1e-8)
    assert abs(res.lam[after, 0]) < 1e-9 and np.all(res.lam[after, 2:] == 0)

    # to T_END: a stays held on the ground, b rises; the bar turns about a as the pendulum of the reference
    post = res.t > tj
    assert np.all(res.active["a"][post] == 1) and np.all(res.active["b"][post] == 0)
    assert np.abs(c[post, 0]).max() < 1e-9 and gap_a[post].min() > -1e-9
    assert gap_b[post].min() > -1e-9 and gap_b[-1] > 1e-3

    def pendulum(_t: float, x: np.ndarray) -> list[float]:
        return [x[1], ((F * S_F - M * G * S_C) * np.cos(x[0]) - C * x[1]) / I_A]

    ref = solve_ivp(pendulum, (tj, res.t[-1]), [res.q[after, 2], 0.0], t_eval=res.t[post], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(res.q[post, 2], ref.y[0], atol=1e-8)
    np.testing.assert_allclose(res.qd[post, 2], ref.y[1], atol=1e-7)

    # the kinetic energy (from the state) does not increase across the instant's jumps
    T = _kinetic(res.q[at], res.qd[at])
    assert np.all(np.diff(T) <= 1e-12)


# the bar at rest, flat, a and b below the ground by less than the start tolerance (1e-8): q = [x_a, y_a, phi]
FLAT_Y, FLAT_PHI = -5e-9, 1e-9
T_FLAT = 0.05


def _pivots_on_a_from(res: Any, lever: Any, tr: float, rest: float = 1e-12) -> None:
    """From the instant tr on: a held (after being released with b and touching again at once), never below
    where the bar started, carrying the force of the pivot at rest; b free and rising; the bar turning about a
    as the pendulum of the reference, from rest (rest: the speeds at tr, the touch's impulse, to that)."""
    c = lever.constraint_position(res.q)
    gap_a, gap_b = c[:, 1], c[:, 3]
    assert [(e["kind"], e["block"]) for e in res.events] == [
        ("liftoff", "a"), ("liftoff", "b"), ("touchdown", "a")]
    assert all(e["t"] == tr for e in res.events)
    assert np.abs(res.events[2]["impulse"]).max() < rest and res.events[2]["energy_loss"] < rest**2
    after = np.flatnonzero(res.t == tr)[-1]
    post = res.t >= tr
    post[:after] = False
    assert np.all(res.active["a"][post] == 1) and np.all(res.active["b"][post] == 0)
    # a never sinks (without the touch it falls about 1 mm by T_FLAT), held where it touched
    assert gap_a.min() > FLAT_Y - 1e-12 and gap_a[-1] < 0
    assert np.abs(c[post, 0] - c[after, 0]).max() < 1e-9
    assert gap_b[-1] > 1e-3
    # at rest after the instant, a carrying the pivot's force m s_c phi'' - (F - m g), I_a phi'' = F s_F - m g s_c
    assert np.abs(res.qd[after]).max() < rest
    phidd = (F * S_F - M * G * S_C) / I_A
    assert res.lam[after, 1] == pytest.approx(M * S_C * phidd - (F - M * G), rel=1e-5)
    assert np.all(res.lam[post, 1] > 0) and np.all(res.lam[post, 2:] == 0)

    def pendulum(_t: float, x: np.ndarray) -> list[float]:
        return [x[1], ((F * S_F - M * G * S_C) * np.cos(x[0]) - C * x[1]) / I_A]

    ref = solve_ivp(pendulum, (tr, res.t[-1]), [res.q[after, 2], 0.0], t_eval=res.t[post], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(res.q[post, 2], ref.y[0], atol=1e-8)
    np.testing.assert_allclose(res.qd[post, 2], ref.y[1], atol=1e-7)


def test_a_contact_released_at_the_start_and_left_sinking_is_held_at_once(lever) -> None:
    """The start's check (hy_settle at the top of rodgen_hybrid_simulate) releases a and b; a, below the ground
    within the start tolerance and sinking, touches at once."""
    res = lever.simulate(np.r_[0, FLAT_Y, FLAT_PHI, 0, 0, 0], T_FLAT, DT, contacts=["a", "b"])
    assert res.status == Status.SUCCESS, res.message
    assert res.t[0] == res.t[1] == 0.0
    _pivots_on_a_from(res, lever, 0.0)


def test_a_contact_released_by_a_new_held_sample_and_left_sinking_is_held_at_once(held_lever) -> None:
    """hold=True: the lift is 0 over the first step (both ends press: m g carried by both), then F; the new
    sample's check releases a and b at t = DT; a, below the ground and sinking, touches at once."""
    def lift(t: float, q: np.ndarray, qd: np.ndarray) -> list[float]:
        return [0.0, 0.0 if t < 0.5 * DT else F]

    res = held_lever.simulate(np.r_[0, FLAT_Y, FLAT_PHI, 0, 0, 0], T_FLAT, DT, contacts=["a", "b"], u=lift,
                              hold=True)
    assert res.status == Status.SUCCESS, res.message
    first = res.t < DT
    assert np.all(res.active["a"][first] == 1) and np.all(res.active["b"][first] == 1)
    assert np.all(res.lam[first][:, [1, 3]] > 0)
    # the bar at rest on both ends: la + lb = m g, la s_c = lb (L - s_c)
    assert res.lam[0, 1] + res.lam[0, 3] == pytest.approx(M * G, rel=1e-6)
    assert res.lam[0, 1] * S_C == pytest.approx(res.lam[0, 3] * (L - S_C), rel=1e-6)
    assert np.all(res.u[res.t >= DT, 1] == F)
    # over the first step the constraints' stabilisation moves the bar up by rounding (gap -5e-9 -> 0)
    _pivots_on_a_from(res, held_lever, res.t[np.flatnonzero(res.t >= DT)[0]], rest=1e-8)


@pytest.mark.parametrize("start", ["jump", "flat"])
def test_the_touch_again_in_chunks_of_three_rows_gives_the_same_run(lever, start: str) -> None:
    """A jump again (two rows more) with no room for its rows left in the caller's buffer ends the call full
    and is made at the start of the next (3 rows a call: the least rodgen_hybrid_simulate takes): the same
    rows and events as in one buffer."""
    y0, contacts = (_y0(), ["b"]) if start == "jump" else (np.r_[0, FLAT_Y, FLAT_PHI, 0, 0, 0], ["a", "b"])
    one = lever.simulate(y0, T_END, DT, contacts=contacts)
    small = lever.simulate(y0, T_END, DT, contacts=contacts, chunk_rows=3)
    assert one.status == small.status == Status.SUCCESS
    assert [e["kind"] for e in one.events].count("touchdown") >= 1 + (start == "jump")
    np.testing.assert_array_equal(small.t, one.t)
    np.testing.assert_array_equal(small.q, one.q)
    np.testing.assert_array_equal(small.qd, one.qd)
    np.testing.assert_array_equal(small.lam, one.lam)
    for name in ("a", "b"):
        np.testing.assert_array_equal(small.active[name], one.active[name])
    assert [(e["t"], e["kind"], e["block"]) for e in small.events] == [
        (e["t"], e["kind"], e["block"]) for e in one.events]
