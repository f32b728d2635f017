"""Walking: rodgen's compiled hybrid simulation against MuJoCo's, and the cost of the constraints.

    python benchmarks/bench_walk.py [--repeat 5] [--instructions]

0. **exo5 walking, 10 s at dt = 1 ms, RK4 with events.** rodgen: `sys.simulate(..., contacts=["foot_a"])`
   of examples/exo5_walk.yaml with the walking controller in C (examples/exo5_walk_controller.c through
   `rodgen.CController`: no Python in the loop). MuJoCo: the same walker rebuilt from rodgen's expanded
   tree (hinge and slide joints, the same masses and inertias, a motor of gear 1 on every joint), a
   sphere of radius 1 mm centred on each foot marker, a plane 1 mm below rodgen's ground, MuJoCo's default
   soft contact and solver options, driven by the *same* C function as `mjcb_control` in a C program
   (benchmarks/mujoco_walk.c) that links the mujoco wheel's libmujoco and steps 10 000 times, with
   `integrator="RK4"` and with MuJoCo's default Euler. The callback maps MuJoCo's joint coordinates to
   rodgen's (q = T^-1 s) and the inputs to joint forces (tau = T^-T B u). Runs are interleaved; the
   controller's own time per call is measured alone, so that each simulator's time without it is
   reported too. ``--instructions`` counts instructions with callgrind (the machine is shared; counts
   are not disturbed by other work).
1. **Compass gait, 10 s at dt = 1 ms, RK4.** rodgen: `sys.simulate(..., contacts=[...])`
   of examples/compass_gait.yaml from its period-one gait (about 14 steps:
   constrained dynamics of the stance phase, heel strikes located in the step and
   applied as plastic impacts). MuJoCo: the same mechanism rebuilt from rodgen's
   expanded tree (slide x, slide y, hinge, hinge; the same masses), two sphere
   feet of radius 1 mm on a plane of the same slope, `integrator="RK4"`, the
   same time step, MuJoCo's default soft contact, rolled out by
   `mujoco.rollout`. MuJoCo has no way to let the swing foot pass through the
   ground at mid-stance, so its walker trips within a step and then lies on
   the slope with its feet in contact; the comparison is the cost per
   simulated second of the same mechanism with its foot contacts, not of the
   same motion.
2. **Constrained forward dynamics** of examples/exo5_walk.yaml in double
   support (both feet held, 11 coordinates, 4 constraint rows) against the
   unconstrained forward dynamics of the same model, one state from Python and
   per state in a batch.

Writes benchmarks/results/walk.json.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402

from common import WALK_VARIANTS, NumericTree, c_array, callgrind, machine, median_run, missing, mjcf, write_json  # noqa: E402

EXAMPLES = HERE.parent / "examples"
T_END, DT = 10.0, 1e-3


#: the walking controller's C function (its share of the instructions)
CONTROLLER = "exo5_walk_controller"

def compass_mjcf(tree: NumericTree, slope: float, leg: float) -> str:
    """The compass gait for MuJoCo: bodies and joints from rodgen's tree, a sphere foot at the far end of each
    leg (the revolute nodes), a plane of the same slope."""
    foot = f'<geom type="sphere" size="0.001" pos="{leg!r} 0 0" mass="0"/>'
    normal = (float(-np.sin(slope)), float(np.cos(slope)))
    return mjcf(tree, "compass_gait", DT, geoms={i: [foot] for i in range(tree.n) if tree.revolute[i]},
                ground=f'<geom type="plane" size="0 0 1" zaxis="{normal[0]!r} {normal[1]!r} 0"/>')


def compass(build_dir: str, repeat: int) -> dict[str, Any]:
    model = rodgen.load(EXAMPLES / "compass_gait.yaml")
    robot = rodgen.build(model, build_dir=build_dir)
    import compass_gait as cg  # examples/compass_gait.py: the walker's section state and options
    z = np.array([0.2187, -1.0918, -0.3772])   # Goswami's published period-one gait (4 digits)
    y0 = cg.state(robot, z)
    out: dict[str, Any] = {"t_end": T_END, "dt": DT, "model": "examples/compass_gait.yaml"}

    def run() -> Any:
        return robot.simulate(y0, T_END, DT, contacts=["foot_a"], disarmed=["foot_b"], arm_gap=cg.ARM_GAP)

    res = run()
    out["rodgen_steps"] = sum(1 for e in res.events if e["kind"] == "touchdown")
    out["rodgen_status"] = res.message
    out["rodgen_s"] = median_run(run, repeat)
    why = missing("mujoco")
    if why:
        out["mujoco"] = why
        return out
    import mujoco
    from mujoco import rollout
    tree = NumericTree(model)
    p = robot.parameters
    mj = mujoco.MjModel.from_xml_string(compass_mjcf(tree, -p["gamma"], p["a"] + p["b"]))
    md = mujoco.MjData(mj)
    s0 = np.concatenate([tree.T @ y0[:tree.n], tree.T @ y0[tree.n:]])
    init = np.concatenate([[0.0], s0[:tree.n], s0[tree.n:]])
    steps = int(round(T_END / DT))
    ctrl = np.zeros((1, steps, mj.nu))
    rollout.rollout(mj, md, init[None, :], ctrl[:, :10], nstep=10)
    out["mujoco_s"] = median_run(lambda: rollout.rollout(mj, md, init[None, :], ctrl, nstep=steps), repeat)
    out["ratio_mujoco_over_rodgen"] = out["mujoco_s"] / out["rodgen_s"]
    return out


def _foot_offsets(mj: Any, tree: NumericTree, robot: Any, feet: list[str]) -> dict[str, tuple[int, np.ndarray]]:
    """For each foot marker, the tree node (MuJoCo body b<i>) it is fixed to and its position in that body's
    frame: the deepest node whose local offset of the marker is the same in two different postures."""
    import mujoco
    md = mujoco.MjData(mj)
    q_a = robot.initial_state()[:robot.nq]
    postures = [q_a, q_a + 0.2 * np.random.default_rng(1).standard_normal(robot.nq)]
    local: list[dict[tuple[int, str], np.ndarray]] = []
    for q in postures:
        md.qpos[:] = tree.T @ q
        mujoco.mj_kinematics(mj, md)
        pts = robot.points(q)
        per: dict[tuple[int, str], np.ndarray] = {}
        for foot in feet:
            r = np.array([pts[foot][0], pts[foot][1], 0.0])
            for i in range(tree.n):
                body = mj.body(f"b{i}").id
                per[(i, foot)] = md.xmat[body].reshape(3, 3).T @ (r - md.xpos[body])
        local.append(per)
    out: dict[str, tuple[int, np.ndarray]] = {}
    for foot in feet:
        fixed = [i for i in range(tree.n) if np.allclose(local[0][(i, foot)], local[1][(i, foot)], atol=1e-9)]
        if not fixed:
            raise RuntimeError(f"no body of the tree carries the marker {foot!r} rigidly")
        out[foot] = (max(fixed), local[0][(max(fixed), foot)])
    return out


def walker_mjcf(tree: NumericTree, robot: Any, radius: float) -> str:
    """exo5_walk for MuJoCo: hinge and slide joints and inertias from rodgen's tree (common.mjcf), a sphere
    of ``radius`` centred on each foot marker, the ground plane ``radius`` below rodgen's ground (so the
    spheres touch it where rodgen's point feet do). The feet collide with the ground, not with each other."""
    import mujoco
    plain = mujoco.MjModel.from_xml_string(mjcf(tree, "exo5_walk", DT))
    feet = _foot_offsets(plain, tree, robot, ["foot_a", "foot_b"])
    geoms: dict[int, list[str]] = {}
    for _foot, (i, r) in feet.items():
        geoms.setdefault(i, []).append(f'<geom type="sphere" size="{radius!r}" pos="{float(r[0])!r} {float(r[1])!r} 0" '
                                       f'mass="0" contype="1" conaffinity="0"/>')
    ground = (f'<geom type="plane" size="0 0 1" pos="0 {-radius!r} 0" zaxis="0 1 0" contype="0" '
              f'conaffinity="1"/>')
    return mjcf(tree, "exo5_walk", DT, geoms=geoms, ground=ground)


RODGEN_ONCE = """
import sys
import numpy as np
import rodgen
from rodgen.toolchain import load_module
robot = load_module(sys.argv[1])
ctrl = rodgen.CController(sys.argv[2], "exo5_walk_controller", params=np.load(sys.argv[3]), state=[0.0])
res = robot.simulate(np.load(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), controller=ctrl,
                     contacts=["foot_a"], arm_gap=0.01, on_slip="continue", hold=sys.argv[7] == "hold")
print(res.message)
"""

#: The walking controller with a call counter (rodgen's calls of it in one run, per stage and held).
COUNTED = """
#include "exo5_walk_controller.c"
long exo5_walk_calls;
int exo5_walk_counted(void *context, double t, const double *y, double *u);
int exo5_walk_counted(void *context, double t, const double *y, double *u)
{
    ++exo5_walk_calls;
    return exo5_walk_controller(context, t, y, u);
}
"""

def exo5_walking(build_dir: str, repeat: int, instructions: bool = False) -> dict[str, Any]:
    """10 s of walking at dt = 1 ms: rodgen's hybrid RK4 with the C controller against MuJoCo (C harness,
    the same controller), the controller evaluated at every stage (rodgen's default; MuJoCo's mjcb_control)
    and held over each step (rodgen's hold=True; MuJoCo: d->ctrl set before each mj_step).
    ``instructions``: also count instructions with callgrind."""
    import subprocess
    import tempfile

    import exo5_walk  # examples/exo5_walk.py: the controller's parameters and the initial state

    from rodgen.codegen import generate
    from rodgen.codegen.runtime import runtime_sources
    model = rodgen.load(EXAMPLES / "exo5_walk.yaml")
    robot = rodgen.build(model, build_dir=build_dir)
    law = exo5_walk.VirtualConstraints(robot)
    y0 = law.initial_state()
    ctrl = law.c_controller(build_dir)
    out: dict[str, Any] = {"t_end": T_END, "dt": DT, "model": "examples/exo5_walk.yaml",
                           "controller": "examples/exo5_walk_controller.c"}

    def run(hold: bool, law: Any = ctrl) -> Any:
        return robot.simulate(y0, T_END, DT, controller=law, contacts=["foot_a"], arm_gap=0.01,
                              on_slip="continue", hold=hold)

    import ctypes
    count_dir = Path(tempfile.mkdtemp(prefix="rodgen_walkcount_"))
    (count_dir / "exo5_walk_counted.c").write_text(COUNTED)
    counted = rodgen.CController(count_dir / "exo5_walk_counted.c", "exo5_walk_counted", params=ctrl.params,
                                 state=ctrl.state, include_dirs=[EXAMPLES], build_dir=build_dir)
    counter = ctypes.c_long.in_dll(ctypes.CDLL(str(counted.library)), "exo5_walk_calls")
    for key, hold, _ in WALK_VARIANTS[:2]:
        res = run(hold)
        counter.value = 0
        again = run(hold, counted)
        np.testing.assert_array_equal(again.q, res.q)
        strikes = [e for e in res.events if e["kind"] == "touchdown"]
        out[f"{key}_status"] = res.message
        out[f"{key}_heel_strikes"] = len(strikes)
        out[f"{key}_distance_m"] = float(res.q[-1, 0] - res.q[0, 0])
        out[f"{key}_lowest_hip_m"] = float(res.q[:, 1].min())
        out[f"{key}_events"] = len(res.events)
        out[f"{key}_evaluations"] = int(res.extra["evaluations"])
        out[f"{key}_controller_calls"] = int(counter.value)
    why = missing("mujoco")
    if why:
        out["mujoco"] = why
        return out
    import mujoco
    tree = NumericTree(model)
    radius = 1e-3
    work = Path(tempfile.mkdtemp(prefix="rodgen_mjwalk_"))
    generate(model, work)
    for name, text in runtime_sources().items():
        (work / name).write_text(text)
    (work / "exo5_walk.xml").write_text(walker_mjcf(tree, robot, radius))
    (work / "walk_data.h").write_text(
        f"#define WALK_PARAMS {c_array(ctrl.params)}\n#define WALK_TINV {c_array(np.linalg.inv(tree.T))}\n"
        f"#define WALK_QPOS0 {c_array(tree.T @ y0[:tree.n])}\n#define WALK_QVEL0 {c_array(tree.T @ y0[tree.n:])}\n")
    mjdir = Path(mujoco.__file__).parent
    lib = next(iter(sorted(mjdir.glob("libmujoco.so*"))), None)
    if lib is None:
        out["mujoco"] = f"no libmujoco in {mjdir}"
        return out
    from rodgen.toolchain.compiler import arch_flags, find_compiler
    from rodgen.toolchain.controller import CONTROLLER_CFLAGS
    # the same flags as rodgen: the model's C at -O1 (BuildOptions), the runtime at -O2 (its extension), the
    # controller at rodgen's CONTROLLER_CFLAGS, all for this machine's CPU (BuildOptions(arch="native"))
    cc = ["gcc", "-std=c99", "-fPIC", *arch_flags(find_compiler(None), "native")]
    objs = []
    ctl_opt = next(f for f in CONTROLLER_CFLAGS if f.startswith("-O"))
    for src, opt in (("exo5_walk.c", "-O1"), ("rodgen_linalg.c", ctl_opt), ("rodgen_contact.c", "-O2"),
                     ("rodgen_simulate.c", "-O2"), ("rodgen_lie.c", "-O2"),
                     (str(EXAMPLES / "exo5_walk_controller.c"), ctl_opt), (str(HERE / "mujoco_walk.c"), "-O2")):
        obj = f"{Path(src).stem}.o"
        subprocess.run(cc + [opt, "-I.", f"-I{mjdir / 'include'}", "-c", src, "-o", obj], cwd=work, check=True)
        objs.append(obj)
    subprocess.run(["gcc", *objs, "-o", "mujoco_walk", f"-L{mjdir}", f"-l:{lib.name}", f"-Wl,-rpath,{mjdir}",
                    "-lm"], cwd=work, check=True)
    steps = int(round(T_END / DT))
    out["mujoco_version"] = mujoco.__version__
    out["mujoco_contact"] = (f"default soft contact and solver options; sphere feet of radius {radius} m, "
                             f"friction 1 (rodgen's mu = 1)")

    def harness(mode: str, n: int, reps: int) -> tuple[list[float], dict[str, str]]:
        proc = subprocess.run([str(work / "mujoco_walk"), "exo5_walk.xml", mode, str(n), str(reps)], cwd=work,
                              capture_output=True, text=True, check=True)
        lines = proc.stdout.splitlines()
        info = lines[reps].split()
        return [float(x) for x in lines[:reps]], {info[i]: info[i + 1] for i in range(0, len(info), 2)}

    # interleaved: each variant once, repeated (the machine is shared)
    times: dict[str, list[float]] = {key: [] for key, _, _ in WALK_VARIANTS}
    info: dict[str, dict[str, str]] = {}
    for _ in range(repeat):
        for key, hold, mode in WALK_VARIANTS:
            if mode is None:
                times[key].append(median_run(lambda: run(hold), 1))
            else:
                t, info[key] = harness(mode, steps, 1)
                times[key] += t
    per_call, _ = harness("controller", 20000, 5)
    out["controller_us_per_call"] = 1e6 * statistics.median(per_call)
    for key, hold, mode in WALK_VARIANTS:
        out[f"{key}_s"] = statistics.median(times[key])
        out[f"{key}_s_per_simulated_s"] = out[f"{key}_s"] / T_END
        if mode is not None:
            kv = info[key]
            out[f"{key}_controller_calls"] = int(kv["calls"])
            out[f"{key}_stance_changes"] = int(kv["switches"])
            out[f"{key}_controller_failed"] = bool(int(kv["failed"]))
            out[f"{key}_distance_m"] = float(kv["x"]) - float(tree.T[0] @ y0[:tree.n])
            out[f"{key}_lowest_hip_m"] = float(kv["low"])
        out[f"{key}_s_without_controller"] = out[f"{key}_s"] - out[f"{key}_controller_calls"] * statistics.median(
            per_call)
    for key, hold, mode in WALK_VARIANTS[2:]:
        # against rodgen with the controller called the same way (per stage, or held over the step)
        ref = "rodgen_hold" if hold else "rodgen"
        out[f"ratio_{key}_over_{ref}"] = out[f"{key}_s"] / out[f"{ref}_s"]
        out[f"ratio_{key}_over_{ref}_without_controller"] = (out[f"{key}_s_without_controller"]
                                                             / out[f"{ref}_s_without_controller"])
    # the headline: MuJoCo's RK4 with its per-stage callback against rodgen's held controller (each
    # simulator's way to run a digital controller at 1 kHz is the hold; MuJoCo's callback is per stage)
    out["ratio_mujoco_rk4_over_rodgen_hold"] = out["mujoco_rk4_s"] / out["rodgen_hold_s"]
    if instructions and shutil.which("valgrind"):
        # instructions are not disturbed by other work on the machine: rodgen inside rodgen_hybrid_simulate
        # (the model and the controller loaded from their libraries: no SymPy under valgrind), MuJoCo inside
        # mj_step; the controller's share from callgrind's inclusive counts
        (work / "rodgen_once.py").write_text(RODGEN_ONCE)
        np.save(work / "params.npy", ctrl.params)
        np.save(work / "y0.npy", y0)
        ins: dict[str, Any] = {}
        for key, hold, mode in WALK_VARIANTS:
            if mode is None:
                tot, ctl = callgrind([sys.executable, "rodgen_once.py", str(robot.path), str(ctrl.library),
                                       "params.npy", "y0.npy", repr(T_END), repr(DT), "hold" if hold else "stage"],
                                      work, ("rodgen_hybrid_simulate",), work / f"cg.{key}",
                                      CONTROLLER)
            else:
                # held: the controller's calls before each mj_step count too
                tot, ctl = callgrind([str(work / "mujoco_walk"), "exo5_walk.xml", mode, str(steps), "1"], work,
                                      ("mj_step", "control") if hold else ("mj_step",), work / f"cg.{key}",
                                      CONTROLLER)
            ins[key], ins[f"{key}_controller"] = tot, ctl
        for key, hold, mode in WALK_VARIANTS[2:]:
            ref = "rodgen_hold" if hold else "rodgen"
            ins[f"ratio_{key}_over_{ref}"] = ins[key] / ins[ref]
            ins[f"ratio_{key}_over_{ref}_without_controller"] = (ins[key] - ins[f"{key}_controller"]) / (
                ins[ref] - ins[f"{ref}_controller"])
        ins["ratio_mujoco_rk4_over_rodgen_hold"] = ins["mujoco_rk4"] / ins["rodgen_hold"]
        out["instructions"] = ins
    return out


def constrained(build_dir: str, repeat: int) -> dict[str, Any]:
    robot = rodgen.build(rodgen.load(EXAMPLES / "exo5_walk.yaml"), build_dir=build_dir)
    y0 = np.asarray(robot.initial_state(), float)
    q, qd = y0[:robot.nq], np.zeros(robot.nq)
    u = np.zeros(len(robot.inputs))
    both = [b.name for b in robot.constraints]
    n = 20000

    def per_call(fn: Any) -> float:
        return median_run(lambda: [fn() for _ in range(n)], repeat) / n

    out: dict[str, Any] = {"model": "examples/exo5_walk.yaml", "nq": robot.nq, "active": both}
    out["forward_dynamics_us"] = 1e6 * per_call(lambda: robot.forward_dynamics(q, qd, u))
    out["constrained_dynamics_us"] = 1e6 * per_call(lambda: robot.constrained_dynamics(q, qd, u, active=both))
    out["ratio_constrained_over_forward"] = out["constrained_dynamics_us"] / out["forward_dynamics_us"]
    # in C: 1 s of RK4 at 1 kHz standing in double support (both feet held, no inputs) against the same
    # model's unconstrained simulate() (free fall): the cost of a step with and without the constraints
    y = np.concatenate([q, qd])
    t_free = median_run(lambda: robot.simulate(y, 1.0, 1e-3, store_every=100), repeat)
    res = robot.simulate(y, 1.0, 1e-3, contacts=both, on_slip="continue", store_every=100)
    out["double_support_events"] = len(res.events)
    t_held = median_run(lambda: robot.simulate(y, 1.0, 1e-3, contacts=both, on_slip="continue", store_every=100),
                     repeat)
    out["c_step_free_us"], out["c_step_double_support_us"] = t_free * 1e3, t_held * 1e3
    out["ratio_c_double_support_over_free"] = t_held / t_free
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--instructions", action="store_true",
                    help="also count the walking runs' instructions with valgrind's callgrind (a few minutes)")
    ap.add_argument("--build-dir", default=str(HERE / "results" / ".build"))
    args = ap.parse_args()
    sys.path.insert(0, str(EXAMPLES))
    payload = {"machine": machine(), "exo5_walking": exo5_walking(args.build_dir, args.repeat, args.instructions),
               "compass_gait": compass(args.build_dir, args.repeat),
               "constrained": constrained(args.build_dir, args.repeat)}
    path = write_json("walk", payload)
    print(f"wrote {path}")
    for k, v in payload.items():
        if k != "machine":
            print(k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
