"""Flat feet (6-row contacts) in the hybrid simulation: touchdown, rest, lift-off, tipping (the centre of
pressure leaving the sole) and slip, each against a closed form of a rigid box on a free joint; two flat feet
going from double to single support; the sole's model field, YAML key and errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen
from rodgen.errors import ModelError
from rodgen.model import load_dict, to_dict
from rodgen.model.spatial import SpatialModel

M, G, CX, HC, HF = 2.0, 9.81, 0.02, 0.1, 0.3    # mass, gravity, centre of mass (x, height), push height
SOLE = (-0.05, 0.15, -0.04, 0.04)               # x_min, x_max, y_min, y_max of the sole
MU = 0.8


def _box(sole: bool = True) -> SpatialModel:
    """A rigid box on a free joint standing on a flat foot at its frame's origin, its centre of mass at
    (CX, 0, HC): pushes along x and y at height HF (kx t, kw t), a push along y at the sole's origin (ky t)
    and a lift at the centre of mass (kz t), another there (ka sin(w t))."""
    model = SpatialModel("flatbox" if sole else "flatbox_bare")
    for k in ("kx", "ky", "kz", "kw", "ka", "w"):
        model.parameter(k, 0.0)
    body = model.link("body", joint="free")
    body.body(M, (CX, 0.0, HC), (0.01, 0.0, 0.0, 0.02, 0.0, 0.03))
    body.marker("hand", xyz=(0.0, 0.0, HF))
    body.marker("heel", xyz=(0.0, 0.0, 0.0))
    body.marker("com", xyz=(CX, 0.0, HC))
    model.point_force("push", "hand", ("kx*t", "kw*t", 0))
    model.point_force("shove", "heel", (0, "ky*t", 0))
    model.point_force("lift", "com", (0, 0, "kz*t"))
    model.point_force("shake", "com", (0, 0, "ka*sin(w*t)"))
    model.contact("sole", "body", friction=MU, rows=6, sole=SOLE if sole else None)
    return model


@pytest.fixture(scope="module")
def box(build_dir: Path) -> Any:
    return rodgen.build(_box(), build_dir=build_dir)


def _rest(z: float = 0.0) -> np.ndarray:
    return np.r_[0.0, 0.0, z, 0.0, 0.0, 0.0, 1.0, np.zeros(6)]


def test_dropped_box_lands_flat_at_the_free_fall_time_and_rests_on_its_weight(box: Any) -> None:
    """Dropped flat from h: touchdown at sqrt(2h/g) (event located to 1e-9 s), the plastic impact on all six
    rows stops it (normal impulse m sqrt(2 g h), energy lost m g h), then it rests with the wrench of its
    weight: f_n = m g, m_t2 = -CX m g (the centre of pressure under the centre of mass), the rest 0."""
    h = 0.2
    res = box.simulate(_rest(h), 0.5, 1e-3, contacts=[])
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    [td] = res.events
    assert td["kind"] == "touchdown" and td["block"] == "sole"
    assert abs(td["t"] - np.sqrt(2 * h / G)) < 1e-9
    assert abs(td["impulse"][1] - M * np.sqrt(2 * G * h)) < 1e-6 * M * np.sqrt(2 * G * h)
    assert abs(td["energy_loss"] - M * G * h) < 1e-6 * M * G * h
    after = np.searchsorted(res.t, td["t"], side="right")      # the rows after the jump
    assert np.abs(res.qd[after:]).max() < 1e-9
    assert np.allclose(res.lam[-1], [0, 0, M * G, 0, -CX * M * G, 0], rtol=0, atol=1e-8)  # drift control: 1e-9
    assert abs(res.q[-1, 2]) < 1e-9
    assert np.all(res.active["sole"][after:] == 1)


def test_box_landing_tilted_is_stopped_and_laid_flat_by_the_drift_control(box: Any) -> None:
    """Dropped with its frame turned by th about y (the orientation rows are in the impact): touchdown at
    sqrt(2h/g) still (free fall does not turn it), the impact stops it (no velocity after the jump), and it is
    laid flat on the ground: its tilt rows' targets are the ground's axes, so its pitch follows the drift
    control of its row sin(theta) with the angular velocity as its rate, theta'' = -2 alpha theta' - beta^2
    sin(theta) (alpha = beta = 10), from theta, 0 (integrated by SciPy to 1e-12; RK4 at 1 ms: 1e-10 rad) while
    its sole's origin stays where it touched."""
    from scipy.integrate import solve_ivp

    h, th, alpha = 0.1, 0.05, 10.0
    y0 = _rest(h)
    y0[3:7] = [0.0, np.sin(th / 2), 0.0, np.cos(th / 2)]
    res = box.simulate(y0, 0.4, 1e-3, contacts=[])
    [td] = res.events
    assert td["kind"] == "touchdown" and abs(td["t"] - np.sqrt(2 * h / G)) < 1e-9
    jump = np.searchsorted(res.t, td["t"], side="right") - 1     # the row after the jump
    assert np.abs(res.qd[jump]).max() < 1e-9
    pitch = 2 * np.arctan2(res.q[jump:, 4], res.q[jump:, 6])
    ref = solve_ivp(lambda t, x: [x[1], -2 * alpha * x[1] - alpha ** 2 * np.sin(x[0])], (td["t"], 0.4),
                    [th, 0.0], rtol=1e-12, atol=1e-14, dense_output=True)
    assert np.abs(pitch - ref.sol(res.t[jump:])[0]).max() < 1e-10
    assert pitch[-1] < 0.3 * th and np.abs(res.q[jump:, [0, 1, 2]]).max() < 1e-9
    assert np.all(res.active["sole"][jump:] == 1)


def test_box_pushed_above_its_sole_tips_where_the_moment_of_the_push_beats_the_weights(box: Any) -> None:
    """F = k t along x at height HF: the centre of pressure -m_t2/f_n = (CX m g + HF F)/(m g) reaches the
    sole's x_max at t = m g (x_max - CX) / (HF k): the run stops there with a "tip" event (its centre of
    pressure on the edge) and status ERR_TIPPED; F stays inside the friction cone (mu m g)."""
    k = 10.0
    res = box.simulate(_rest(), 2.0, 1e-3, contacts=["sole"], p={"kx": k})
    t_tip = M * G * (SOLE[1] - CX) / (HF * k)
    assert k * t_tip < MU * M * G
    [tip] = res.events
    assert tip["kind"] == "tip" and tip["block"] == "sole"
    assert abs(tip["t"] - t_tip) < 1e-9
    assert np.allclose(tip["impulse"], [SOLE[1], 0.0], atol=1e-8)
    assert res.status == rodgen.runtime.result.Status.FAILED
    assert "tipped" in res.message and "'sole'" in res.message
    assert abs(res.t[-1] - t_tip) < 1e-9
    # while it stood, the centre of pressure followed the closed form
    cop = -res.lam[:-1, 4] / res.lam[:-1, 2]
    assert np.allclose(cop, (CX * M * G + HF * k * res.t[:-1]) / (M * G), rtol=0, atol=1e-9)
    # pushed the other way it tips over x_min
    res = box.simulate(_rest(), 2.0, 1e-3, contacts=["sole"], p={"kx": -k})
    [tip] = res.events
    assert abs(tip["t"] - M * G * (CX - SOLE[0]) / (HF * k)) < 1e-9
    assert np.allclose(tip["impulse"], [SOLE[0], 0.0], atol=1e-8)
    # pushed along y at HF: m_t1 = HF F, the centre of pressure m_t1/f_n = HF F/(m g) reaches y_max (and y_min)
    for kw, edge in ((k, SOLE[3]), (-k, SOLE[2])):
        res = box.simulate(_rest(), 2.0, 1e-3, contacts=["sole"], p={"kw": kw})
        [tip] = res.events
        assert tip["kind"] == "tip" and abs(tip["t"] - M * G * edge / (HF * kw)) < 1e-9
        assert np.allclose(tip["impulse"], [CX, edge], atol=1e-8)


def test_box_pulled_up_lifts_off_when_the_normal_force_reaches_zero(box: Any) -> None:
    """A lift k t at the centre of mass: f_n = m g - k t reaches 0 at t1 = m g / k (lift-off, not a tip: the
    centre of pressure stays under the centre of mass); then z = k (t - t1)^3 / (6 m)."""
    k = 40.0
    res = box.simulate(_rest(), 1.0, 1e-3, contacts=["sole"], p={"kz": k})
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    [off] = res.events
    t1 = M * G / k
    assert off["kind"] == "liftoff" and abs(off["t"] - t1) < 1e-9
    before = res.t < t1
    assert np.allclose(res.lam[before, 2], M * G - k * res.t[before], rtol=0, atol=1e-9)
    assert abs(res.q[-1, 2] - k * (1.0 - t1) ** 3 / (6 * M)) < 1e-6
    assert np.all(res.active["sole"][res.t > off["t"]] == 0) and res.active["sole"][-1] == 0


def test_box_released_at_rest_is_armed_by_its_velocity_and_touches_at_the_ground(box: Any) -> None:
    """A lift a sin(w t) at the centre of mass, a = 1.2 m g: the normal force m g - a sin(w t) reaches 0 at
    t1 = asin(m g / a) / w (lift-off at rest); the box rises (by far less than arm_gap) and comes down:
    z(t) = -(a / (m w^2)) (sin(w t) - sin(w t1)) + (a cos(w t1) / (m w)) (t - t1) - g (t - t1)^2 / 2. Released at
    rest, it is armed as it moves up and touches down where z crosses 0 moving down, at the time of the closed
    form to 1e-9 s, the impact taking its kinetic energy m z'^2 / 2 (to 1e-6); it never sinks below the
    ground by more than the drift of a held contact."""
    from scipy.optimize import brentq

    a, w, arm = 1.2 * M * G, 100.0, 1e-3
    # dt = 5e-4: RK4's error of the flight's z (w dt = 0.05) over the touchdown speed stays under 1e-10 s
    res = box.simulate(_rest(), 0.2, 5e-4, contacts=["sole"], p={"ka": a, "w": w}, arm_gap=arm, event_tol=1e-13)
    assert res.ok, res.message
    t1 = np.arcsin(M * G / a) / w

    def z(t: float) -> float:
        return (-(a / (M * w * w)) * (np.sin(w * t) - np.sin(w * t1)) + a * np.cos(w * t1) / (M * w) * (t - t1)
                - G * (t - t1) ** 2 / 2)

    ts = np.linspace(t1 + 1e-4, 0.2, 20001)
    zs = np.array([z(t) for t in ts])
    assert zs[0] > 0 and zs.max() < arm                    # rises, but never through arm_gap
    j = int(np.argmax(zs < 0))
    t2 = brentq(z, ts[j - 1], ts[j], xtol=1e-15)
    v2 = -(a / (M * w)) * (np.cos(w * t2) - np.cos(w * t1)) - G * (t2 - t1)
    kinds = [(e["kind"], round(e["t"], 9)) for e in res.events][:2]
    assert [k for k, _ in kinds] == ["liftoff", "touchdown"], kinds
    off, td = res.events[0], res.events[1]
    assert abs(off["t"] - t1) < 1e-9 and abs(td["t"] - t2) < 1e-9
    assert v2 < 0 and abs(td["energy_loss"] - M * v2 ** 2 / 2) < 1e-6 * M * v2 ** 2
    assert res.q[:, 2].min() > -1e-9


def test_box_lifted_and_pushed_back_rests_until_released_it_would_rise(build_dir: Path) -> None:
    """A lift kz t at the centre of mass and a push kx t (kx < 0) at height HF on the box without a sole (no
    tip test): held, its normal force m g - kz t pulls from t1 = m g / kz on, but released its sole's origin
    would sink: at rest, its acceleration is kz t / m - g + CX (HF - HC) kx t / Iyy (the push's moment about
    the centre of mass turns it back onto its heel), negative until t* = g / (kz / m + CX (HF - HC) kx / Iyy).
    The held rows couple the normal row to the moments, so neither held nor released is consistent between
    t1 and t*: the box rests, held with the pull of the closed form, and lifts off at the end of the first step
    where, released, it would not come back within a step (within dt of t*); no touchdown, and the sole never
    goes below the ground (it used to lift off at t1, touch again at rest and sink 0.18 mm unnoticed)."""
    box = rodgen.build(_box(sole=False), build_dir=build_dir)
    kz, kx, dt, iyy = 40.0, -5.0, 1e-3, 0.02
    res = box.simulate(_rest(), 0.6, dt, contacts=["sole"], p={"kz": kz, "kx": kx}, on_slip="continue")
    assert res.ok, res.message
    t1 = M * G / kz
    t_star = G / (kz / M + CX * (HF - HC) * kx / iyy)
    [off] = [e for e in res.events if e["kind"] != "slip"]
    assert off["kind"] == "liftoff" and abs(off["t"] - t_star) <= dt, off
    resting = (res.t > t1 + 1e-9) & (res.t < off["t"])
    assert resting.sum() > 10 and np.all(res.active["sole"][resting] != 0)
    np.testing.assert_allclose(res.lam[resting, 2], M * G - kz * res.t[resting], rtol=0, atol=1e-6)
    assert res.q[:, 2].min() > -1e-9


def test_box_shoved_at_its_sole_slips_and_stops_a_flat_foot_does_not_slide(box: Any) -> None:
    """F = k t along y at the sole's origin (no moment: no tipping) leaves the cone at mu m g = k t: a "slip"
    event and status ERR_FRICTION_CONE, also with on_slip="slide" (a flat foot does not slide); with
    on_slip="continue" it is logged and the foot keeps sticking."""
    k = 20.0
    t_slip = MU * M * G / k
    for mode in ("stop", "slide"):
        res = box.simulate(_rest(), 1.5, 1e-3, contacts=["sole"], p={"ky": k}, on_slip=mode)
        [slip] = res.events
        assert slip["kind"] == "slip" and abs(slip["t"] - t_slip) < 1e-9
        assert "friction cone" in res.message and "'sole'" in res.message
    res = box.simulate(_rest(), 1.0, 1e-3, contacts=["sole"], p={"ky": k}, on_slip="continue")
    assert res.status == rodgen.runtime.result.Status.SUCCESS
    assert [e["kind"] for e in res.events] == ["slip"]
    assert np.abs(res.q[-1, :3]).max() < 1e-9
    with pytest.raises(ValueError, match="flat foot .* does not slide"):
        box.simulate(_rest(), 0.1, 1e-3, contacts={"sole": "slide"}, on_slip="slide")


def _two_feet(name: str, m1: float, m2: float, k: float, xl: float) -> SpatialModel:
    """A body of mass m1 on a free joint standing on its own flat foot, and a second foot of mass m2 on a
    passive chain of three sliders and three hinges from it (its six coordinates carry no force between the
    two), lifted by a force k t at x = xl ahead of its frame, 5 cm up."""
    model = SpatialModel(name)
    model.parameter("k", k)
    model.parameter("xl", xl)
    model.link("pelvis", joint="free").body(m1, (0.0, 0.0, 0.2), (0.05, 0.0, 0.0, 0.05, 0.0, 0.05))
    parent = "pelvis"
    for i, (kind, axis) in enumerate([("prismatic", (1, 0, 0)), ("prismatic", (0, 1, 0)),
                                      ("prismatic", (0, 0, 1)), ("revolute", (1, 0, 0)),
                                      ("revolute", (0, 1, 0)), ("revolute", (0, 0, 1))]):
        lk = model.link(f"r{i}", parent, joint=kind, axis=axis, xyz=(0.0, -0.2, 0.0) if i == 0 else (0, 0, 0))
        parent = lk.name
    foot = model.link("rfoot", parent, joint="fixed")
    foot.body(m2, (0.0, 0.0, 0.05), (0.01, 0.0, 0.0, 0.01, 0.0, 0.01))
    foot.marker("rlift", xyz=("xl", 0.0, 0.05))
    model.point_force("lift", "rlift", (0, 0, "k*t"))
    model.contact("left", "pelvis", rows=6, sole=(-0.1, 0.1, -0.05, 0.05))
    model.contact("right", "rfoot", rows=6, sole=(-0.1, 0.1, -0.05, 0.05))
    return model


def test_two_flat_feet_go_from_double_to_single_support(build_dir: Path) -> None:
    """A body on a free joint standing on its own flat foot, and a second foot on a passive chain of three
    sliders and three hinges from it (so its six coordinates carry no force between the two): both feet
    stick (double support, each carrying its own weight), a lift k t on the second foot takes it off at
    m2 g / k (single support), the first foot keeps the body's weight, and the second rises as
    k (t - t1)^3 / (6 m2)."""
    m1, m2, k = 3.0, 0.5, 10.0
    robot = rodgen.build(_two_feet("biped2", m1, m2, k, 0.0), build_dir=build_dir)
    assert (robot.nq, robot.nv) == (13, 12)
    y0 = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, np.zeros(6), np.zeros(12)]
    res = robot.simulate(y0, 0.8, 1e-3, contacts=["left", "right"])
    assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
    [off] = res.events
    t1 = m2 * G / k
    assert off["kind"] == "liftoff" and off["block"] == "right" and abs(off["t"] - t1) < 1e-9
    assert np.all(res.active["left"] == 1)
    assert np.all(res.active["right"][res.t < off["t"]] == 1) and np.all(res.active["right"][res.t > off["t"]] == 0)
    before = res.t < t1
    assert np.allclose(res.lam[:, 2], m1 * G, rtol=0, atol=1e-8)           # the left foot: the body's weight
    assert np.allclose(res.lam[before, 8], m2 * G - k * res.t[before], rtol=0, atol=1e-8)
    assert abs(res.q[-1, 9] - k * (0.8 - t1) ** 3 / (6 * m2)) < 1e-6          # the right foot's height
    assert np.abs(res.q[-1, :3]).max() < 1e-9                                 # the body stays


def test_compiled_model_lists_the_sole(box: Any) -> None:
    """The C table carries the sole to the compiled model's block list."""
    assert [(b.name, b.nrows, b.sole) for b in box.constraints] == [("sole", 6, SOLE)]


def test_sole_field_yaml_and_errors() -> None:
    """The sole reads and writes back through YAML; a sole on a point contact, of other than four numbers or
    with an empty side is a ModelError naming the contact's sole."""
    vm = _box().validate()
    assert vm.contacts[0].sole == SOLE
    d = to_dict(vm)
    assert d["contacts"][0]["sole"] == list(SOLE)
    assert load_dict(d).validate().contacts[0].sole == SOLE
    for bad, match in (((0.1, 0.2, 0.3), "four finite numbers"), ((0.1, -0.1, 0.0, 1.0), "x_min < x_max"),
                       ((0.0, 1.0, 0.0, float("nan")), "four finite numbers")):
        model = _box()
        model.contacts[0].sole = bad  # type: ignore[assignment]
        with pytest.raises(ModelError, match=match) as err:
            model.validate()
        assert "sole" in str(err.value)
    model = _box()
    model.contacts[0].rows = None
    with pytest.raises(ModelError, match="flat foot"):
        model.validate()


@pytest.mark.parametrize("xl, tips", [(0.05, True), (0.02, False)])
def test_a_foot_unloading_to_lift_off_is_not_tested_for_tipping(build_dir: Path, xl: float, tips: bool) -> None:
    """The two feet of the double-support test, the second foot lifted k t at x = xl ahead of its frame: its
    wrench balances its weight and the lift, f_n = m2 g - k t, m_t2 = xl k t, so its centre of pressure
    -m_t2/f_n reaches the sole's back edge x_min = -0.1 at t = 0.1 m2 g / ((0.1 + xl) k). With xl = 0.05 the
    foot then carries f_n = m2 g / 3, more than 5 % of the load (m1 g + f_n): it tips there. With xl = 0.02
    it carries m2 g / 6, under 5 %: it is unloading, its centre of pressure not checked, and it lifts off
    at m2 g / k."""
    m1, m2, k = 3.0, 0.5, 10.0
    robot = rodgen.build(_two_feet("biped2x", m1, m2, k, xl), build_dir=build_dir)
    y0 = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, np.zeros(6), np.zeros(12)]
    res = robot.simulate(y0, 0.8, 1e-3, contacts=["left", "right"])
    [ev] = res.events
    assert ev["block"] == "right"
    if tips:
        assert ev["kind"] == "tip" and abs(ev["t"] - 0.1 * m2 * G / ((0.1 + xl) * k)) < 1e-9
        assert res.status != rodgen.runtime.result.Status.SUCCESS
    else:
        assert res.status == rodgen.runtime.result.Status.SUCCESS, res.message
        assert ev["kind"] == "liftoff" and abs(ev["t"] - m2 * G / k) < 1e-9
