"""The 12-joint biped of examples/spatial/biped12.yaml, its planned gait and its C walking controller.

The gait (examples/spatial/biped12_gait.py) is inverse kinematics on the compiled model's flat-foot rows and
the free-flyer CoM; these tests check its numbers against independent sources: the model's frames (another
generated routine than the constraint rows the plan solves), MuJoCo's centre of mass and geometry of the same
mechanism written as MJCF, Newton's law for the whole robot (the feet's vertical forces against the CoM's
acceleration), and the C controller against the NumPy reference of its law.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rodgen

SPATIAL = Path(__file__).resolve().parent.parent / "examples" / "spatial"
G0 = 9.81


def _example(file: str, name: str) -> Any:
    """The example script examples/spatial/<file> imported as the module <name>."""
    spec = importlib.util.spec_from_file_location(name, SPATIAL / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod              # its dataclass looks its module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def setup(build_dir: Path) -> tuple[Any, Any, Any]:
    G = _example("biped12_gait.py", "example_biped12_gait")
    robot = rodgen.build(rodgen.load(SPATIAL / "biped12.yaml"), build_dir=build_dir)
    gait = G.plan(robot, 10)
    return G, robot, gait


def test_model_sizes_and_mass(setup: tuple[Any, Any, Any]) -> None:
    """12 actuated joints on a free pelvis; the total mass is the sum of the YAML's bodies."""
    _, robot, _ = setup
    assert (robot.nq, robot.nv, robot.nu) == (19, 18, 12)
    p = robot.parameters
    total = p["m_pelvis"] + p["m_torso"] + 2 * (0.5 + 0.5 + p["m_thigh"] + p["m_shank"] + 0.3 + p["m_foot"])
    assert abs(robot.mass_matrix(robot.initial_state()[:19])[0, 0] - total) < 1e-12
    assert [(b.name, b.nrows) for b in robot.constraints] == [("sole_l", 6), ("sole_r", 6)]


def test_plan_footholds_and_flat_soles(setup: tuple[Any, Any, Any]) -> None:
    """Ten steps, each landing at its foothold; at every sample each sole frame (robot.frames) is flat and
    facing forward, and a foot in stance stays at its foothold, on the ground, to 1e-9."""
    G, robot, gait = setup
    assert len(gait.steps) == 10
    assert [s["swing"] for s in gait.steps] == ["r", "l"] * 5
    fr = robot.frames(gait.q)
    for side in G.SIDES:
        pos, rot = fr[f"foot_{side}"]
        assert np.abs(rot - np.eye(3)).max() < 1e-9
        assert pos[:, 2].min() > -1e-9
    for step in gait.steps:
        k = int(round(step["land"] / (gait.t[1] - gait.t[0])))
        pos = fr[f"foot_{step['swing']}"][0]
        assert np.abs(pos[k] - step["foothold"]).max() < 1e-9
        # the stance foot does not move during the swing
        lift = int(round(step["lift"] / (gait.t[1] - gait.t[0])))
        still = fr[f"foot_{step['stance']}"][0][lift:k + 1]
        assert np.abs(still - still[0]).max() < 1e-9 and abs(still[0, 2]) < 1e-9
    # the footholds advance by the step length: 0.15 m for the first, 0.3 m for the others but the last
    lengths = [s["length"] for s in gait.steps]
    assert np.allclose(lengths, [0.15] + [0.3] * 8 + [0.15], atol=1e-12)
    # the pelvis stays level (its quaternion's vector part at 0)
    assert np.abs(gait.q[:, 3:6]).max() < 1e-9


def test_plan_com_against_mujoco(setup: tuple[Any, Any, Any]) -> None:
    """MuJoCo's centre of mass and sole boxes of the MJCF twin (biped12_gait.mjcf) at planned configurations
    equal the plan's CoM and the model's sole frames."""
    mujoco = pytest.importorskip("mujoco")
    G, robot, gait = setup
    mm = mujoco.MjModel.from_xml_string(G.mjcf(robot))
    d = mujoco.MjData(mm)
    assert abs(mm.body_subtreemass[1] - robot.mass_matrix(gait.q[0])[0, 0]) < 1e-9
    fr = robot.frames(gait.q)
    for k in range(0, len(gait.t), 251):
        d.qpos[:] = G.mujoco_qpos(gait.q[k])
        mujoco.mj_forward(mm, d)
        c, _ = G.com(robot, gait.q[k])
        assert np.abs(d.subtree_com[1] - c).max() < 1e-9
        for side in G.SIDES:
            gid = mujoco.mj_name2id(mm, mujoco.mjtObj.mjOBJ_GEOM, f"sole_{side}")
            bottom = d.geom_xpos[gid] - d.geom_xmat[gid].reshape(3, 3)[:, 2] * mm.geom_size[gid][2]
            assert np.abs(bottom - fr[f"foot_{side}"][0][k] - G.SOLE_CENTRE).max() < 1e-9


def test_plan_com_height_and_over_the_stance_foot(setup: tuple[Any, Any, Any]) -> None:
    """The CoM holds its height and, during every swing, stays over the stance sole (a quasi-static gait:
    its ground projection well inside the sole rectangle)."""
    G, robot, gait = setup
    c = np.array([G.com(robot, q)[0] for q in gait.q])
    assert np.abs(c[:, 2] - 0.83).max() < 1e-9
    fr = robot.frames(gait.q)
    for code, side in ((G.STANCE_L, "l"), (G.STANCE_R, "r")):
        k = gait.phase == code
        off = c[k, :2] - fr[f"foot_{side}"][0][k, :2] - G.SOLE_CENTRE[:2]
        assert np.abs(off[:, 0]).max() < G.SOLE_HALF[0] / 2 and np.abs(off[:, 1]).max() < G.SOLE_HALF[1] / 2


def test_feedforward_carries_the_weight(setup: tuple[Any, Any, Any]) -> None:
    """The feedforward torques are those of the constrained inverse dynamics: with them, the generalized
    forces left over (M a + bias - B tau) are a wrench at the feet in contact (zero in the rows of the other
    joints), whose vertical force is m (g + z_com'') (Newton's law for the whole robot, the CoM's
    acceleration by central differences of the plan's CoM); over the gait they average the weight."""
    G, robot, gait = setup
    rows = {b.name: b.row for b in robot.constraints}
    m = robot.mass_matrix(gait.q[0])[0, 0]
    c = np.array([G.com(robot, q)[0] for q in gait.q])
    dt = gait.t[1] - gait.t[0]
    fz = []
    for k in range(1, len(gait.t) - 1, 7):
        q, v, a = gait.q[k], gait.v[k], gait.a[k]
        rest = robot.inverse_dynamics(q, v, a) - robot.input_map(q) @ gait.tau[k]
        J = robot.constraint_jacobian(q)
        blocks = {G.STANCE_L: ["sole_l"], G.STANCE_R: ["sole_r"], G.DOUBLE: ["sole_l", "sole_r"]}[gait.phase[k]]
        Jc = np.vstack([J[rows[b]:rows[b] + 6] for b in blocks])
        lam, *_ = np.linalg.lstsq(Jc.T, rest, rcond=None)
        assert np.abs(Jc.T @ lam - rest).max() < 1e-6 * m * G0
        total = sum(lam[6 * i + 2] for i in range(len(blocks)))
        com_acc = (c[k + 1, 2] - 2 * c[k, 2] + c[k - 1, 2]) / dt ** 2
        # a = central differences of the configurations: Newton's law holds to their truncation error
        assert abs(total - m * (G0 + com_acc)) < 1e-3 * m * G0
        fz.append(total)
    assert abs(np.mean(fz) - m * G0) < 1e-3 * m * G0


def test_c_controller_equals_reference(setup: tuple[Any, Any, Any], build_dir: Path) -> None:
    """biped12_walk_controller.c, run by the C simulation (in flight, for a few steps from a perturbed
    planned state, in double support, unloading a foot and in single support), gives the inputs of the NumPy
    law at the stored states and times to 1e-9 relative."""
    G, robot, gait = setup
    ctrl = G.controller(gait, robot, str(build_dir))
    for k in (150, 370, 480, 960):     # double support, unloading the right foot, left stance, right stance
        y0 = np.r_[gait.q[k], gait.v[k]]
        y0[7:19] += 0.01 * np.sin(np.arange(12))
        t0 = gait.t[k] + 0.0013
        res = robot.simulate(y0, t0 + 0.004, 1e-3, controller=ctrl, t0=t0)
        assert res.ok, res.message
        for i in range(len(res.t)):
            ref = G.law(gait, robot, res.t[i], np.r_[res.q[i], res.qd[i]])
            assert np.abs(res.u[i] - ref).max() < 1e-9 * max(1.0, np.abs(ref).max())
    assert [(int(gait.phase[k]), int(gait.gains[k])) for k in (150, 370, 480, 960)] == [
        (G.DOUBLE, G.DOUBLE), (G.DOUBLE, G.STANCE_L), (G.STANCE_L, G.STANCE_L), (G.STANCE_R, G.STANCE_R)]


def test_first_step_in_the_hybrid_simulator(setup: tuple[Any, Any, Any], build_dir: Path) -> None:
    """examples/spatial/biped12_walk.py to 20 ms before the end of the first swing (the planned foot comes
    down within 0.05 mm of the ground over the swing's last 25 ms) in rodgen's hybrid simulator with the C
    controller: the right sole lifts off once, when the feedforward has unloaded it (its normal force reaches
    0 within the last 2% of the shift), nothing touches down or tips, the left sole stays at its foothold,
    the swing foot follows the plan to 5 mm, the pelvis to 1 mm, and the feet's vertical forces average the
    weight (the CoM ends at rest at the height it started at)."""
    G, robot, gait = setup
    walk = _example("biped12_walk.py", "example_biped12_walk")
    robot, gait, res = walk.run(10, t_end=gait.steps[0]["land"] - 0.02, build_dir=str(build_dir), gait=gait)
    assert res.ok, res.message
    kinds = [(e["kind"], e["block"]) for e in res.events if e["kind"] != "slip"]
    assert kinds == [("liftoff", "sole_r")]
    lift = res.events[[e["kind"] for e in res.events].index("liftoff")]["t"]
    assert gait.steps[0]["lift"] - 0.02 * 1.6 < lift <= gait.steps[0]["lift"]
    fr = robot.frames(res.q)
    assert np.abs(fr["foot_l"][0] - gait.footholds["l"][0]).max() < 1e-6
    assert np.abs(fr["foot_l"][1] - np.eye(3)).max() < 1e-6
    dt = gait.t[1] - gait.t[0]
    k = np.minimum(np.round(res.t / dt).astype(int), len(gait.t) - 1)
    on_plan = np.abs(res.t - k * dt) < 1e-9
    plan_foot = robot.frames(gait.q[k[on_plan]])["foot_r"][0]
    assert np.abs(fr["foot_r"][0][on_plan] - plan_foot).max() < 5e-3
    assert np.abs(res.q[on_plan, :3] - gait.q[k[on_plan], :3]).max() < 1e-3
    fz = res.lam[:, 2] + res.lam[:, 8]
    m = robot.mass_matrix(gait.q[0])[0, 0]
    steady = np.r_[np.diff(res.t) > 0, True]
    assert abs(np.trapezoid(fz[steady], res.t[steady]) / res.t[-1] - m * G0) < 2e-3 * m * G0


def test_landing_keeps_the_robot_on_its_feet(setup: tuple[Any, Any, Any], build_dir: Path) -> None:
    """Through the first landing (to 1.5 ms after the planned one): the right sole touches down within 20 ms
    before its planned landing, at rest (the impacts lose under 5 mJ); the left sole stays held (the impact
    leaves it at rest at the step's resolution), so that at every stored instant from the touchdown on a sole
    is held; the left foot stays at its foothold to 1e-5 m and flat to 1e-4 rad, the right at its planned
    foothold to 1 cm."""
    G, robot, gait = setup
    walk = _example("biped12_walk.py", "example_biped12_walk_l")
    land = gait.steps[0]["land"]
    robot, gait, res = walk.run(10, t_end=land + 0.0015, build_dir=str(build_dir), gait=gait)
    assert res.ok, res.message
    kinds = [(e["kind"], e["block"]) for e in res.events if e["kind"] != "slip"]
    assert kinds[:2] == [("liftoff", "sole_r"), ("touchdown", "sole_r")], kinds
    first = [e for e in res.events if e["kind"] == "touchdown"][0]
    assert land - 0.02 < first["t"] <= land + 1e-9
    assert sum(e["energy_loss"] for e in res.events if e["kind"] == "touchdown") < 5e-3
    after = res.t >= first["t"]
    assert np.all((res.active["sole_l"][after] != 0) | (res.active["sole_r"][after] != 0))
    fr = robot.frames(res.q[after])
    assert np.abs(fr["foot_l"][0] - gait.footholds["l"][0]).max() < 1e-5
    assert np.abs(fr["foot_l"][1] - np.eye(3)).max() < 1e-4
    assert np.abs(fr["foot_r"][0] - gait.footholds["r"][1]).max() < 1e-2


def test_mujoco_twin_walks_the_first_step_like_rodgen(setup: tuple[Any, Any, Any], build_dir: Path) -> None:
    """The MJCF twin (biped12_gait.mjcf with mj_contact's stiff soles, RK4 at dt = 1 ms) driven through MuJoCo's
    Python bindings by the same C controller (called at every RK4 stage, as benchmarks/bench_walk3d.py's
    harness does) over 4 s, the first step and 1.2 s after its landing: it stays upright (pelvis above 0.75 m),
    its right sole lifts at least 2 cm in the swing, and its pelvis follows rodgen's hybrid run to 5 mm over the
    first 0.5 s (double support: the same mechanism) and within the deviations the benchmark reports over the
    whole 10 s walk (82, 29, 6 mm in x, y, z) throughout."""
    mujoco = pytest.importorskip("mujoco")
    G, robot, gait = setup
    dt, t_end = 1e-3, 4.0
    ctrl = G.controller(gait, robot, str(build_dir))
    res = robot.simulate(np.r_[gait.q[0], gait.v[0]], t_end, dt, controller=ctrl, contacts=["sole_l", "sole_r"],
                         on_slip="continue", max_events=2000)
    assert res.ok, res.message
    mm = mujoco.MjModel.from_xml_string(G.mjcf(robot, dt))
    md = mujoco.MjData(mm)
    assert mm.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4

    def rot(x: float, y: float, z: float, w: float) -> np.ndarray:
        return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                         [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                         [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])

    law = ctrl.function(robot)

    def control(m: Any, d: Any) -> None:   # MuJoCo's (qpos, qvel) as rodgen's [q, v]
        q = np.r_[d.qpos[:3], d.qpos[4:7], d.qpos[3], d.qpos[7:]]
        d.ctrl[:] = law(d.time, np.r_[q, rot(*q[3:7]).T @ d.qvel[:3], d.qvel[3:]])

    md.qpos[:] = G.mujoco_qpos(gait.q[0])
    md.qvel[:] = np.r_[rot(*gait.q[0][3:7]) @ gait.v[0][:3], gait.v[0][3:]]
    n = int(round(t_end / dt))
    pelvis, sole_r = np.empty((n, 4)), np.empty(n)
    mujoco.set_mjcb_control(control)
    try:
        for k in range(n):
            mujoco.mj_step(mm, md)
            pelvis[k] = [md.time, *md.qpos[:3]]
            sole_r[k] = md.geom("sole_r").xpos[2] - 0.005   # the box sole's bottom face
    finally:
        mujoco.set_mjcb_control(None)
    assert pelvis[:, 3].min() > 0.75 and sole_r.max() > 0.02
    ours = np.array([np.interp(pelvis[:, 0], res.t, res.q[:, i]) for i in range(3)]).T
    early = pelvis[:, 0] <= 0.5 + 1e-9
    assert np.abs(pelvis[early, 1:] - ours[early]).max() < 5e-3
    assert np.all(np.abs(pelvis[:, 1:] - ours).max(axis=0) < [0.082, 0.029, 0.006])


@pytest.fixture(scope="module")
def walked(setup: tuple[Any, Any, Any], build_dir: Path) -> Any:
    """The whole planned walk (10 steps, 26.4 s) in rodgen's hybrid simulator with the C controller."""
    G, robot, gait = setup
    walk = _example("biped12_walk.py", "example_biped12_walk_all")
    return walk.run(10, t_end=float(gait.t[-1]), build_dir=str(build_dir), gait=gait)[2]


def test_ten_steps_single_support_carries_the_weight(setup: tuple[Any, Any, Any], walked: Any) -> None:
    """The 10-step walk reaches its end, standing at rest on both feet. In each single support (from 0.1 s
    after the planned lift-off to 0.1 s before the planned landing) the swing sole is not in contact and the
    stance sole carries the weight: its vertical force averages m g to 0.5 % (Newton's law for the whole robot
    over an interval where the CoM starts and ends nearly at rest) and never drops below 0.9 m g."""
    G, robot, gait = setup
    res = walked
    assert res.ok and res.t[-1] == pytest.approx(gait.t[-1]), res.message
    assert res.active["sole_l"][-1] != 0 and res.active["sole_r"][-1] != 0
    assert np.abs(res.qd[-1]).max() < 0.2
    w = robot.mass_matrix(gait.q[0])[0, 0] * G0
    for step in gait.steps:
        single = (res.t > step["lift"] + 0.1) & (res.t < step["land"] - 0.1)
        stance = 2 if step["stance"] == "l" else 8
        assert np.all(res.active[f"sole_{step['swing']}"][single] == 0)
        fz = res.lam[single, stance]
        assert abs(fz.mean() / w - 1.0) < 5e-3, step
        assert fz.min() > 0.9 * w, step


def test_ten_steps_footholds_advance_by_the_stride(setup: tuple[Any, Any, Any], walked: Any) -> None:
    """Where each foot stands (its sole frame, robot.frames, 1.5 s after its planned landing) against the
    plan's footholds: every foot advances by its planned stride (0.3 m, 0.15 m for the first and last step) to
    5 mm, stands within 1 cm of its foothold along the walk and 2 cm across it, flat to 1 degree (a flat foot
    is laid flat on the ground after its touchdown); no sole frame goes below the ground by more than arm_gap
    (1e-6 m) over the walk (a released sole touches again as soon as it moves into the ground); the pelvis
    stays within 1 cm of its planned height and tilts less than 8 degrees throughout."""
    G, robot, gait = setup
    res = walked
    fr = robot.frames(res.q)
    for side in G.SIDES:
        assert fr[f"foot_{side}"][0][:, 2].min() >= -1e-6, side
    where = {s: [np.asarray(gait.footholds[s][0])] for s in G.SIDES}
    for step in gait.steps:
        i = int(np.searchsorted(res.t, step["land"] + 1.5))
        pos, rot = fr[f"foot_{step['swing']}"]
        assert abs(pos[i, 0] - step["foothold"][0]) < 1e-2 and abs(pos[i, 1] - step["foothold"][1]) < 2e-2
        assert abs(pos[i, 2]) < 1e-5
        assert np.abs(rot[i] - np.eye(3)).max() < np.radians(1.0)
        where[step["swing"]].append(pos[i])
    for side in G.SIDES:
        advance = np.diff(np.array(where[side])[:, 0])
        planned = np.diff(np.array(gait.footholds[side])[:, 0])
        assert np.abs(advance - planned).max() < 5e-3, (side, advance)
    dt = gait.t[1] - gait.t[0]
    k = np.minimum(np.round(res.t / dt).astype(int), len(gait.t) - 1)
    assert np.abs(res.q[:, 2] - gait.q[k, 2]).max() < 1e-2
    tilt = 2 * np.arcsin(np.minimum(1.0, np.linalg.norm(res.q[:, 3:5], axis=1)))
    assert np.degrees(tilt).max() < 8.0
