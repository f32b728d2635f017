"""The example scripts run (short horizons) and their numbers agree with independent results."""
from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from types import ModuleType
from typing import Iterator

import numpy as np
import pytest
from PIL import Image
from scipy.integrate import solve_ivp

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")


def script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GALLERY = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "docs", "gallery")


@pytest.fixture(autouse=True)
def gallery_shows_the_figures(tmp_path: "os.PathLike[str]") -> Iterator[None]:
    """After each test: every PNG figure the example script wrote (into tmp_path) is shown, under its name, on
    the script's page of the documentation's gallery (docs/gallery/<script>.md; refresh the figures with
    `python docs/_ext/rodgen_reference.py --figures`)."""
    yield
    scripts = sorted((f[:-3] for f in os.listdir(EXAMPLES) if f.endswith(".py")), key=len, reverse=True)
    for name in sorted(os.listdir(tmp_path)):
        script = next((s for s in scripts if name.startswith(s)), None)
        if script is None or not name.endswith(".png"):
            continue
        with open(os.path.join(GALLERY, f"{script}.md"), encoding="utf-8") as page:
            assert f"(img/{script}/{name})" in page.read(), f"docs/gallery/{script}.md does not show {name}"
        assert os.path.isfile(os.path.join(GALLERY, "img", script, name)), name


def image_ok(path: str) -> None:
    with Image.open(path) as im:
        im.verify()


def test_exo5_gait_power_balance_and_periodicity(tmp_path: "os.PathLike[str]") -> None:
    mod = script("exo5_gait")
    out = str(tmp_path)
    res = mod.main([out, "--cycles", "1", "--dt", "0.01", "--no-compile"])
    image_ok(os.path.join(out, "exo5_gait.png"))
    # periodic motion -> periodic forces
    np.testing.assert_allclose(res.u[0], res.u[-1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(res.residual, 0.0, atol=1e-9)
    # power of the generalized forces = d(T + V)/dt (central difference of the energy, h = 1e-5)
    import rodgen
    from rodgen.runtime.trajectory import Motion, as_evaluator
    ev = as_evaluator(rodgen.load(os.path.join(EXAMPLES, "exo5.yaml")))
    motion = Motion(mod.gait(1.2), ev.coordinates)
    h = 1e-5
    E = [np.sum(ev.energy(*motion(res.t + s)[:2]), axis=0) for s in (-h, h)]
    power = np.einsum("ni,ni->n", res.forces, res.qd)
    np.testing.assert_allclose(power, (E[1] - E[0]) / (2 * h), rtol=0, atol=1e-5 * np.abs(power).max())


def test_solar_panel_torque_and_link_energies_closed_form(tmp_path: "os.PathLike[str]") -> None:
    mod = script("solar_panel_deploy")
    out = str(tmp_path)
    res, energies = mod.main([out, "--samples", "41", "--no-compile", "--gif"])
    image_ok(os.path.join(out, "solar_panel_deploy.png"))
    image_ok(os.path.join(out, "solar_panel_deploy.gif"))
    m, a, R1, R2 = 0.8143, 1.0, 0.05, 0.046
    I = m * a**2 / 12 + m * (R1**2 + R2**2) / 4
    w = math.pi / 2
    q1 = res.q[:, 0]
    c = np.cos(2 * q1)
    np.testing.assert_allclose(res.u[:, 0], -4 * m * a**2 * w**2 * np.sin(2 * q1), rtol=0, atol=1e-9)
    # hand-derived: CM speeds |v1| = a w/2, |v2|^2 = a^2 w^2 (5/4 + cos 2q1), |v3|^2 = a^2 w^2 (13/4 + 3 cos 2q1)
    expected = {"link1": 0.5 * (I + m * a**2 / 4) * w**2,
                "link2": 0.5 * m * a**2 * w**2 * (1.25 + c) + 0.5 * I * w**2,
                "link3": 0.5 * m * a**2 * w**2 * (3.25 + 3 * c) + 0.5 * I * w**2}
    # directional differences with step 1e-6: error ~1e-10 relative, rounding ~1e-10
    for name, T in expected.items():
        np.testing.assert_allclose(energies[name], np.broadcast_to(T, q1.shape), rtol=1e-8, err_msg=name)
    np.testing.assert_allclose(sum(energies.values()), res.kinetic, rtol=1e-8)


def test_pumped_pendulum_against_hand_written_ode_and_mathieu(tmp_path: "os.PathLike[str]") -> None:
    mod = script("pumped_pendulum")
    out = str(tmp_path)
    eps, theta0, t_end = 0.05, 0.02, 14.0
    res, info = mod.main([out, "--t-end", str(t_end), "--eps", str(eps), "--theta0", str(theta0), "--no-compile"])
    image_ok(os.path.join(out, "pumped_pendulum.png"))
    g, m, l0 = 9.81, 1.0, 1.0
    w0 = math.sqrt(g / l0)

    def length(t: float) -> tuple[float, float, float]:
        return (l0 * (1 + eps * math.cos(2 * w0 * t)), -2 * w0 * l0 * eps * math.sin(2 * w0 * t),
                -4 * w0**2 * l0 * eps * math.cos(2 * w0 * t))

    def f(t: float, y: np.ndarray) -> list[float]:
        l, ld, _ = length(t)                    # l phi'' + 2 l' phi' + g cos(phi) = 0
        return [y[1], -(2 * ld * y[1] + g * math.cos(y[0])) / l]

    sol = solve_ivp(f, (0, t_end), [-math.pi / 2 + theta0, 0.0], t_eval=res.t, rtol=1e-11, atol=1e-12,
                    method="DOP853")
    # both integrations at rtol ~1e-9..1e-11 over ~7 periods: agreement to ~1e-6 rad
    np.testing.assert_allclose(res.q[:, 0], sol.y[0], rtol=0, atol=1e-6)
    L = np.array([length(t) for t in res.t])
    phi, w = res.q[:, 0], res.qd[:, 0]
    F = m * (L[:, 2] - L[:, 0] * w**2 + g * np.sin(phi))   # radial equation of the bob
    np.testing.assert_allclose(res.extra["compensating"][:, 0], F, rtol=0, atol=1e-8)
    # amplitude grows; the rate matches the first-order Mathieu estimate 3 eps w0 / 4 within O(eps) ~ 10 %
    assert info["growth"] > 3.0
    assert abs(info["mu_fit"] - 3 * eps * w0 / 4) < 0.1 * (3 * eps * w0 / 4)


def test_suspended_chain_energy_balance_and_statics(tmp_path: "os.PathLike[str]") -> None:
    mod = script("suspended_chain")
    out = str(tmp_path)
    res, info = mod.main([out, "--t-end", "4", "--damping", "0", "--no-compile"])
    image_ok(os.path.join(out, "suspended_chain.png"))
    # the suspension's work equals the chain's energy change (no damping)
    P = np.einsum("ni,ni->n", res.extra["compensating"], res.qd[:, :2])
    work = np.concatenate([[0.0], np.cumsum((P[1:] + P[:-1]) / 2 * np.diff(res.t))])
    E = res.kinetic + res.potential
    # trapezoid rule at dt = 5e-3: error ~ dt^2 |P''| t / 12 ~ 1e-5 J for |P''| ~ 1 W/s^2
    np.testing.assert_allclose(E - E[0], work, rtol=0, atol=5e-5)
    # a suspension at rest holds the chain's weight and nothing moves (up to the drift that starts from
    # cos(-pi/2) = 6e-17 in double: ~1e-11 after 1 s)
    still, _ = mod.main([out, "--t-end", "1", "--amplitude", "0", "--no-compile"])
    np.testing.assert_allclose(still.extra["compensating"], np.tile([0.0, 3 * 0.5 * 9.81], (len(still.t), 1)),
                               rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(still.q[:, 2:], np.tile([-math.pi / 2, 0.0, 0.0], (len(still.t), 1)), atol=1e-9)


def test_script_from_the_command_line_with_the_compiled_model(tmp_path: "os.PathLike[str]") -> None:
    """The way a user runs it: a fresh interpreter, the compiled model (built under the working folder)."""
    out = os.path.join(str(tmp_path), "figs")
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "solar_panel_deploy.py"), out, "--samples", "21"],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "peak |M_1| = 8.0368 N m" in proc.stdout      # 4 m a^2 (pi/2)^2 = 8.03682
    image_ok(os.path.join(out, "solar_panel_deploy.png"))


def test_compass_gait_fixed_point_against_the_independent_walker(tmp_path: "os.PathLike[str]") -> None:
    """The fixed point of the compiled hybrid step map is that of tests/_compass_reference.py (SciPy, its own
    Lagrangian and momentum-law impact); the eigenvalues of the two maps agree (similar Jacobians)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _compass_reference import Walker, fixed_point
    mod = script("compass_gait")
    info = mod.main([str(tmp_path), "--steps", "50"])
    image_ok(os.path.join(str(tmp_path), "compass_gait.png"))
    assert info["steps"] >= 50 and info["residual"] < 1e-9
    assert np.max(np.abs(info["eig"])) < 1.0
    x, eig = fixed_point(Walker(), np.array([-0.26, 1.1, 0.35]))
    gamma = np.deg2rad(3.0)
    # model angles from the vertical th = -(theta + gamma), rates w = -omega
    np.testing.assert_allclose(info["z"], [-(x[0] + gamma), -x[2], -x[3]], atol=1e-6)
    np.testing.assert_allclose(np.sort_complex(info["eig"]), np.sort_complex(eig), atol=1e-4)
    # after 50 steps from Goswami's rounded numbers the walker has converged onto the fixed point
    np.testing.assert_allclose(info["last"], info["z"], atol=1e-6)


def test_exo5_walks_ten_steps_with_an_energy_balance(tmp_path: "os.PathLike[str]") -> None:
    """The exoskeleton walks: ten alternating heel strikes, the hip moving forwards every step, the stance foot
    held and pushed (never pulled) by the ground, and the work of the inputs equal to the change of energy
    plus the energy lost in the impacts (an independent account of the hybrid run)."""
    mod = script("exo5_walk")
    robot, res, strikes = mod.walk(10, 1e-3, build_dir=str(tmp_path))
    assert res.status.name == "SUCCESS", res.message
    assert len(strikes) >= 10
    feet = [e["block"] for e in strikes]
    assert all(a != b for a, b in zip(feet, feet[1:]))                  # the feet take turns
    hip_at = [res.q[np.flatnonzero(res.t == e["t"])[-1], 0] for e in strikes]
    steps = np.diff(hip_at)
    assert np.all(steps > 0.25) and np.all(steps < 0.45)                 # about 0.34 m a step, always forwards
    for b in robot.constraints:
        held = res.active[b.name] > 0
        gap = robot.constraint_position(res.q[held])[:, b.row + 1]
        assert np.abs(gap).max() < 1e-6                                   # the held foot stays on the ground
        assert res.lam[held, b.row + 1].min() > -1e-6                     # and the ground only pushes
    # work of the inputs: integral of u . (B^T qd), trapezoidal over the stored samples between the jumps
    B = robot.input_map(res.q)
    power = np.einsum("ni,nij,nj->n", res.qd, B, res.u)
    keep = np.diff(res.t) > 0
    work = float(np.sum(0.5 * (power[1:] + power[:-1]) * np.diff(res.t) * keep))
    T, V = robot.energy(res.q, res.qd)
    lost = sum(e["energy_loss"] for e in res.events)
    change = (T[-1] + V[-1]) - (T[0] + V[0])
    assert abs(work - (change + lost)) < 0.01 * sum(abs(x) for x in (work, change, lost))


def test_snake_crawls_forward_and_friction_is_the_only_external_force(tmp_path: "os.PathLike[str]") -> None:
    mod = script("snake_robot")
    out = os.path.join(str(tmp_path), "out")
    res, info = mod.run(out, t_end=6.0)
    image_ok(os.path.join(out, "snake_robot.png"))
    assert info["links"] == 8
    assert 0.2 < info["speed"] < 0.5 and abs(info["drift"]) < 0.05 * info["speed"]
    # momentum balance: the joint torques are internal, so the friction forces alone accelerate the
    # centre of mass (8 links of 1 kg): sum F = 8 a_cm, a_cm by central differences of the positions
    sys_ = mod.rodgen.build(mod.snake_model(False))
    pts = sys_.points(res.q)
    cm = np.mean([pts[f"c{i}"] for i in range(1, 9)], axis=0)
    dt = res.t[1] - res.t[0]
    acc = (cm[2:] - 2 * cm[1:-1] + cm[:-2]) / dt ** 2
    total = sum(res.element_forces.values())[1:-1]
    late = res.t[1:-1] > 1.0
    np.testing.assert_allclose(8.0 * acc[late], total[late], atol=2e-3 * np.abs(total[late]).max() + 1e-3)


def test_exo5_stands_on_compliant_contacts_carrying_its_weight(tmp_path: "os.PathLike[str]") -> None:
    mod = script("exo5_stand")
    out = os.path.join(str(tmp_path), "out")
    res, info = mod.run(out, t_end=1.5)
    image_ok(os.path.join(out, "exo5_stand.png"))
    # at rest the vertical ground reactions carry the weight (masses of the model file times g)
    weight = (30.0 + 2 * (7.0 + 3.5 + 1.0)) * 9.81
    np.testing.assert_allclose(info["weight"], weight)
    np.testing.assert_allclose(info["vertical"], weight, rtol=5e-3)
    assert info["peak"] > 1.5 * weight                     # the landing
    assert all(f[:, 1].min() >= 0 for f in res.element_forces.values())   # the ground never pulls
    assert abs(info["horizontal"]) < 0.05 * weight


def test_panda_from_urdf_holds_its_posture_against_pinocchio_gravity(tmp_path: "os.PathLike[str]") -> None:
    """The Panda example: the PD law brings the arm to rest at the ready posture, where the torques it
    applies are the gravity torques Pinocchio computes from the same URDF (a static balance)."""
    import pinocchio as pin
    mod = script("panda_urdf")
    out = str(tmp_path)
    res, info = mod.main([out, "--t-end", "2", "--frames", "10"])
    for name in ("panda_urdf.png", "panda_urdf_3d.png", "panda_urdf.gif"):
        image_ok(os.path.join(out, name))
    assert info["final_error"] < 1e-4 and info["final_rate"] < 1e-3       # settled (decay rate about 5/s)
    full = pin.buildModelFromUrdf(mod.panda_urdf())
    q_lock = pin.neutral(full)
    fingers = [full.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
    for j in fingers:
        q_lock[full.idx_qs[j]] = 0.03
    arm = pin.buildReducedModel(full, fingers, q_lock)
    gravity = pin.computeGeneralizedGravity(arm, arm.createData(), res.q[-1])
    np.testing.assert_allclose(res.u[-1], gravity, rtol=0, atol=1e-3)
    np.testing.assert_allclose(info["gravity"], pin.computeGeneralizedGravity(arm, arm.createData(), mod.READY),
                               rtol=0, atol=1e-10)


def test_exo5_steps_forward_on_compliant_contacts(tmp_path: "os.PathLike[str]") -> None:
    """Four steps of the prescribed gait: the walker gets at least 0.7 m ahead (1.0 m planned; the body rocks on
    its compliant soles and the swing foot lands short), never falls (hip above 0.8 m, torso within 0.3 rad of upright),
    lifts each foot clear of the ground twice, and over a gait cycle the vertical reactions carry the weight."""
    mod = script("exo5_step")
    out = os.path.join(str(tmp_path), "out")
    res, info = mod.run(out, steps=4)
    image_ok(os.path.join(out, "exo5_step.png"))
    weight = (30.0 + 2 * (7.0 + 3.5 + 1.0)) * 9.81          # masses of the model file times g
    x, y = res.q[:, 0], res.q[:, 1]
    assert x[-1] - x[0] > 0.7
    assert y.min() > 0.8
    assert np.abs(res.q[:, 2] - math.pi / 2).max() < 0.3
    np.testing.assert_allclose(info["mean_vertical"], weight, rtol=0.02)
    assert all(f[:, 1].min() >= 0 for f in res.element_forces.values())   # the ground never pulls
    for side in "ab":   # swing phases: both contacts of the foot unloaded for at least 0.2 s, twice
        free = (res.element_forces[f"heel_{side}"][:, 1] == 0) & (res.element_forces[f"toe_{side}"][:, 1] == 0)
        change = np.diff(np.concatenate([[0], free.astype(int), [0]]))
        starts, ends = np.flatnonzero(change == 1), np.flatnonzero(change == -1) - 1
        spans = res.t[ends] - res.t[starts]
        assert np.sum(spans > 0.2) >= 2, (side, spans)


def test_stiction_example_events_at_the_hand_computed_times(tmp_path: "os.PathLike[str]") -> None:
    mod = script("stiction")
    out = mod.main([str(tmp_path)])
    image_ok(os.path.join(str(tmp_path), "stiction.png"))
    ev = [(e["kind"], e["t"]) for e in out["block"].events]
    # slip when c t = Fs = 3 N (c = 1 N/s, ts = 3 s); stick when the momentum at 2T = 10 s,
    # c T^2 - c ts^2/2 - Fk (2T - ts) = 25 - 4.5 - 14 = 6.5 N s, is used up by Fk = 2 N: 10 + 6.5/2 = 13.25 s
    assert [k for k, _ in ev] == ["slip", "stick"]
    assert ev[0][1] == pytest.approx(3.0, abs=1e-8) and ev[1][1] == pytest.approx(13.25, abs=1e-6)
    sticks = [e["t"] for e in out["pendulum"].events if e["kind"] == "stick"]
    angles = [float(np.interp(t, out["pendulum"].t, out["pendulum"].q[:, 0])) for t in sticks]
    np.testing.assert_allclose(angles, out["stops"][1:], atol=1e-6)


def test_borisov_spatial_exo_runs(tmp_path: "os.PathLike[str]", capsys: pytest.CaptureFixture[str]) -> None:
    """The script's figures and its printed standing reactions: the weight, 51 kg x 9.81 m/s^2, carried by the
    feet (its physics is checked in tests/test_borisov_spatial.py)."""
    mod = script("borisov_spatial_exo")
    mod.main([str(tmp_path)])
    for name in ("borisov_spatial_exo.png", "borisov_spatial_exo_flight.png"):
        image_ok(os.path.join(str(tmp_path), name))
    out = capsys.readouterr().out
    assert "foot_a [-0.0 +0.0 +500.3] N" in out and "(weight 500.3 N)" in out


def test_swing_up_energy_balance(tmp_path: "os.PathLike[str]") -> None:
    """The optimised swing-up ends upright at rest, and the work of the torques along it equals the gain in
    potential energy m1 g L1/2 (1 - (-1)) + m2 g (L1 (1 - (-1)) + L2/2 (1 - (-1))) (the model's energy routine
    and the closed form)."""
    pytest.importorskip("casadi")
    mod = script("swing_up")
    out = str(tmp_path)
    result, info = mod.main([out, "--nodes", "31"])
    image_ok(os.path.join(out, "swing_up.png"))
    assert result.success
    assert result.q[-1, 0] == pytest.approx(math.pi / 2, abs=1e-9) and np.allclose(result.qd[-1], 0, atol=1e-9)
    g, m1, m2, L1, L2 = 9.81, 1.0, 0.8, 1.0, 0.7
    gain = m1 * g * L1 + m2 * g * (2 * L1 + L2)
    assert info["energy_gain"] == pytest.approx(gain, rel=1e-9)
    assert info["work"] == pytest.approx(gain, rel=1e-3)
