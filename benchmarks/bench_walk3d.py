"""The 3D biped: rodgen's compiled hybrid simulation against MuJoCo's, the same mechanism and C controller.

    python benchmarks/bench_walk3d.py [--t-end T] [--repeat 5] [--instructions]

examples/spatial/biped12.yaml (12 joints on a free pelvis, 6-row flat feet) walking its planned gait
(examples/spatial/biped12_gait.py) under the joint controller in C (examples/spatial/biped12_walk_controller.c),
at dt = 1 ms for ``--t-end`` seconds (default: what the gait runs correctly today in rodgen's simulator, the
first step up to 10 ms before its landing, about 2.8 s).

rodgen: ``robot.simulate(..., controller=CController, contacts=["sole_l", "sole_r"])``, RK4 with events, the
controller called at every stage and held over each step (``hold=True``). MuJoCo: the MJCF twin
(``biped12_gait.mjcf``: the same bodies, joints and inertias, box soles on a plane, MuJoCo's stiffest contact
at this step, ``biped12_gait.mj_contact``), driven by the *same* C function as ``mjcb_control`` (or called
before each ``mj_step``, held) in a C program (benchmarks/mujoco_walk3d.c) linking the mujoco wheel's
libmujoco, with RK4 and MuJoCo's default Euler (which does not walk with these contacts: it falls). The
callback maps MuJoCo's (qpos, qvel) to rodgen's (q, v): the quaternion's order (w x y z to x y z w) and the
free joint's linear velocity (world frame to the pelvis frame). Runs are interleaved; the controller's own
time per call is measured alone. The "same mechanism" check: the pelvis position of the two runs over the
first 0.5 s (double support); "upright": whether each run's pelvis stays above UPRIGHT to the end. Every
timed run is a fresh process on fresh copies of the libraries (rodgen's model, MuJoCo's libmujoco): a
library's speed moves with where its pages land (up to 40 % between loads of one file), so the medians are
over placements as well as runs.
``--instructions`` counts instructions with callgrind.

Writes benchmarks/results/walk3d.json.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402

from common import WALK_VARIANTS, c_array, callgrind, fresh_copy, library_files, machine, missing, write_json  # noqa: E402

SPATIAL = HERE.parent / "examples" / "spatial"
DT = 1e-3
#: the double-support window of the "same mechanism" check [s] and its tolerance on the pelvis position [m]
AGREE_T, AGREE_TOL = 0.5, 5e-3
#: a run is upright when its pelvis never goes below this height [m] (the gait's: about 0.85 m)
UPRIGHT = 0.75

RODGEN_ONCE = """
import sys
import time
import numpy as np
import rodgen
from rodgen.toolchain import load_module
robot = load_module(sys.argv[1])
ctrl = rodgen.CController(sys.argv[2], "biped12_walk_controller", params=np.load(sys.argv[3]))
y0 = np.load(sys.argv[4])
t0 = time.perf_counter()
res = robot.simulate(y0, float(sys.argv[5]), float(sys.argv[6]), controller=ctrl,
                     contacts=["sole_l", "sole_r"], on_slip="continue", max_events=2000,
                     hold=sys.argv[7] == "hold")
print(time.perf_counter() - t0)
print(res.message)
"""



#: the instruction set of the callgrind runs (valgrind stops at AVX-512; the timed runs use rodgen's default)
CALLGRIND_ARCH = "x86-64-v3"

#: the walking controller's C function (its share of the instructions)
CONTROLLER = "biped12_walk_controller"

def quat_matrix(xyzw: np.ndarray) -> np.ndarray:
    """The rotation (body to world) of the unit quaternion (x, y, z, w)."""
    x, y, z, w = xyzw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def mujoco_qvel(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """rodgen's v of the biped (pelvis velocity and angular velocity in the pelvis frame, 12 joint rates) as
    MuJoCo's qvel (the free joint's linear velocity in the world frame, its angular velocity in the body's)."""
    v = np.asarray(v, float)
    return np.r_[quat_matrix(np.asarray(q, float)[3:7]) @ v[:3], v[3:]]


def walk3d(build_dir: str, repeat: int, t_end: Optional[float] = None,
           instructions: bool = False) -> dict[str, Any]:
    sys.path.insert(0, str(SPATIAL))
    import biped12_gait as gait_mod  # examples/spatial/biped12_gait.py: the plan, the table, the MJCF twin

    robot = rodgen.build(rodgen.load(SPATIAL / "biped12.yaml"), build_dir=build_dir)
    gait = gait_mod.plan(robot, 10)
    ctrl = gait_mod.controller(gait, robot, build_dir)
    if t_end is None:
        t_end = float(gait.steps[0]["land"]) - 0.01
    steps = int(round(t_end / DT))
    t_end = steps * DT
    y0 = np.r_[gait.q[0], gait.v[0]]
    out: dict[str, Any] = {"t_end": t_end, "dt": DT, "steps": steps, "model": "examples/spatial/biped12.yaml",
                           "controller": "examples/spatial/biped12_walk_controller.c",
                           "first_landing_planned_s": float(gait.steps[0]["land"])}

    def run(hold: bool) -> Any:
        return robot.simulate(y0, t_end, DT, controller=ctrl, contacts=["sole_l", "sole_r"], on_slip="continue",
                              max_events=2000, hold=hold)

    results = {}
    for key, hold, _ in WALK_VARIANTS[:2]:
        res = run(hold)
        results[key] = res
        out[f"{key}_status"] = res.message
        out[f"{key}_ok"] = bool(res.ok)
        out[f"{key}_events"] = [f"{e['t']:.4f} {e['kind']} {e.get('block', '')}".strip() for e in res.events
                                if e["kind"] in ("liftoff", "touchdown", "tip")]
        out[f"{key}_pelvis_end_m"] = [float(x) for x in res.q[-1, :3]]
        out[f"{key}_lowest_pelvis_m"] = float(res.q[:, 2].min())
        out[f"{key}_evaluations"] = int(res.extra["evaluations"])
        out[f"{key}_responses"] = int(res.extra.get("responses", 0))   # held: evaluations replaced by the response
    why = missing("mujoco")
    if why:
        out["mujoco"] = why
        return out
    import mujoco

    from rodgen.codegen.runtime import runtime_sources
    work = Path(tempfile.mkdtemp(prefix="rodgen_mjwalk3d_"))
    for name, text in runtime_sources().items():
        (work / name).write_text(text)
    (work / "biped12.xml").write_text(gait_mod.mjcf(robot, DT))
    q0, v0 = gait.q[0], gait.v[0]
    (work / "walk3d_data.h").write_text(
        f"#define WALK_PARAMS {c_array(ctrl.params)}\n#define WALK_QPOS0 {c_array(gait_mod.mujoco_qpos(q0))}\n"
        f"#define WALK_QVEL0 {c_array(mujoco_qvel(q0, v0))}\n")
    mjdir = Path(mujoco.__file__).parent
    lib = next(iter(sorted(mjdir.glob("libmujoco.so*"))), None)
    if lib is None:
        out["mujoco"] = f"no libmujoco in {mjdir}"
        return out
    from rodgen.toolchain.compiler import ARCH_ENV, arch_flags, default_arch, find_compiler
    from rodgen.toolchain.controller import CONTROLLER_CFLAGS
    ctl_opt = next(f for f in CONTROLLER_CFLAGS if f.startswith("-O"))

    def link_mujoco(arch: Optional[str], exe: str) -> None:
        """The MuJoCo harness with the controller compiled as rodgen compiles it (for ``arch``)."""
        flags = arch_flags(find_compiler(None), arch)
        objs = []
        for src, opt in ((str(SPATIAL / "biped12_walk_controller.c"), ctl_opt),
                         (str(HERE / "mujoco_walk3d.c"), "-O2")):
            obj = f"{Path(src).stem}.{exe}.o"
            subprocess.run(["gcc", "-std=c99", "-fPIC", opt, *flags, "-I.", f"-I{mjdir / 'include'}", "-c", src,
                            "-o", obj], cwd=work, check=True)
            objs.append(obj)
        subprocess.run(["gcc", *objs, "-o", exe, f"-L{mjdir}", f"-l:{lib.name}", f"-Wl,-rpath,{mjdir}", "-lm"],
                       cwd=work, check=True)

    link_mujoco(default_arch(), "mujoco_walk3d")
    out["mujoco_version"] = mujoco.__version__
    out["mujoco_contact"] = (f"{gait_mod.mj_contact(DT)}, default solver options; box soles 22 x 10 x 1 cm on a "
                             "plane, friction 0.8 (rodgen: 6-row flat-foot contacts, rigid, mu of biped12.yaml)")

    libs = sorted(mjdir.glob("libmujoco.so*"))

    def harness(mode: str, n: int, reps: int, trace: int = 0) -> tuple[list[float], dict[str, str], str]:
        # a fresh copy of libmujoco each run (its run path is a RUNPATH, which LD_LIBRARY_PATH overrides)
        env = {**os.environ, "LD_LIBRARY_PATH": str(fresh_copy(libs, work))}
        proc = subprocess.run([str(work / "mujoco_walk3d"), "biped12.xml", mode, str(n), str(reps), str(trace)],
                              cwd=work, capture_output=True, text=True, check=True, env=env)
        lines = proc.stdout.splitlines()
        info = lines[reps].split()
        return [float(x) for x in lines[:reps]], {info[i]: info[i + 1] for i in range(0, len(info), 2)}, proc.stderr

    # the "same mechanism" check: the pelvis position over the first AGREE_T s (both feet on the ground)
    # (and, for the record, over the whole run: whether MuJoCo's biped follows the same motion with the same
    # gains)
    _, _, trace = harness("rk4", steps, 1, 1)
    mj_p = np.array([[float(x) for x in ln.split()[1:]] for ln in trace.splitlines() if ln.startswith("p ")])
    rg = results["rodgen"]
    rg_p = np.array([np.interp(mj_p[:, 0], rg.t, rg.q[:, i]) for i in range(3)]).T
    # the swing: the right sole's highest lift above the ground in each run (the box's bottom face; rodgen's
    # sole frame foot_r)
    out["mujoco_rk4_right_sole_max_lift_m"] = float(mj_p[:, 5].max() - 0.005)
    out["rodgen_right_sole_max_lift_m"] = float(robot.frames(rg.q)["foot_r"][0][:, 2].max())
    mj_p = mj_p[:, :4]
    early = mj_p[:, 0] <= AGREE_T + 1e-9
    dev = np.abs(mj_p[early, 1:] - rg_p[early]).max(axis=0)
    out["agreement_window_s"] = AGREE_T
    out["agreement_pelvis_max_abs_m"] = [float(x) for x in dev]
    out["agreement_tolerance_m"] = AGREE_TOL
    out["agreement_ok"] = bool(dev.max() <= AGREE_TOL)
    out["whole_run_pelvis_max_abs_m"] = [float(x) for x in np.abs(mj_p[:, 1:] - rg_p).max(axis=0)]

    (work / "rodgen_once.py").write_text(RODGEN_ONCE)
    np.save(work / "params.npy", ctrl.params)
    np.save(work / "y0.npy", y0)
    model_files = library_files(Path(robot.path).parent)

    def rodgen_run(hold: bool) -> float:
        """One timed run in a fresh process on a fresh copy of the model's library, as MuJoCo's harness runs."""
        folder = fresh_copy(model_files, work)
        proc = subprocess.run([sys.executable, "rodgen_once.py", str(folder / Path(robot.path).name),
                               str(ctrl.library), "params.npy", "y0.npy", repr(t_end), repr(DT),
                               "hold" if hold else "stage"], cwd=work, capture_output=True, text=True, check=True)
        return float(proc.stdout.split()[0])

    times: dict[str, list[float]] = {key: [] for key, _, _ in WALK_VARIANTS}
    info: dict[str, dict[str, str]] = {}
    for _ in range(repeat):
        for key, hold, mode in WALK_VARIANTS:
            if mode is None:
                times[key].append(rodgen_run(hold))
            else:
                t, info[key], _ = harness(mode, steps, 1)
                times[key] += t
    per_call, _, _ = harness("controller", 20000, 5)
    ctl_s = statistics.median(per_call)
    out["controller_us_per_call"] = 1e6 * ctl_s
    # rodgen's controller calls: 4 per RK4 step, 1 held (events add a few; counted from the evaluations)
    for key, hold, mode in WALK_VARIANTS:
        out[f"{key}_s"] = statistics.median(times[key])
        out[f"{key}_us_per_step"] = 1e6 * out[f"{key}_s"] / steps
        if mode is None:
            calls = steps if hold else out[f"{key}_evaluations"]
        else:
            kv = info[key]
            calls = int(kv["calls"]) if not hold else steps
            out[f"{key}_controller_failed"] = bool(int(kv["failed"]))
            out[f"{key}_pelvis_x_end_m"] = float(kv["x"])
            out[f"{key}_lowest_pelvis_m"] = float(kv["low"])
        out[f"{key}_controller_calls"] = int(calls)
        out[f"{key}_us_per_step_without_controller"] = 1e6 * (out[f"{key}_s"] - calls * ctl_s) / steps
    for key, hold, mode in WALK_VARIANTS[2:]:
        ref = "rodgen_hold" if hold else "rodgen"
        out[f"ratio_{key}_over_{ref}"] = out[f"{key}_s"] / out[f"{ref}_s"]
        out[f"ratio_{key}_over_{ref}_without_controller"] = (out[f"{key}_us_per_step_without_controller"]
                                                             / out[f"{ref}_us_per_step_without_controller"])
    out["ratio_mujoco_rk4_over_rodgen_hold"] = out["mujoco_rk4_s"] / out["rodgen_hold_s"]
    # like for like: the RK4 runs compared all stay upright to the end
    out["upright_m"] = UPRIGHT
    out["upright"] = {key: out[f"{key}_lowest_pelvis_m"] > UPRIGHT for key, _, _ in WALK_VARIANTS}
    if instructions and shutil.which("valgrind"):
        # valgrind stops at AVX-512: count both sides built for CALLGRIND_ARCH (model, runtime, controller)
        saved = os.environ.get(ARCH_ENV)
        os.environ[ARCH_ENV] = CALLGRIND_ARCH
        try:
            robot_cg = rodgen.build(rodgen.load(SPATIAL / "biped12.yaml"), build_dir=build_dir)
            ctrl_cg = gait_mod.controller(gait, robot_cg, build_dir)
            link_mujoco(CALLGRIND_ARCH, "mujoco_walk3d_cg")
            ins: dict[str, Any] = {"arch": CALLGRIND_ARCH}
            for key, hold, mode in WALK_VARIANTS:
                if mode is None:
                    tot, ctl = callgrind([sys.executable, "rodgen_once.py", str(robot_cg.path),
                                          str(ctrl_cg.library), "params.npy", "y0.npy", repr(t_end), repr(DT),
                                          "hold" if hold else "stage"],
                                         work, ("rodgen_hybrid_simulate",), work / f"cg.{key}", CONTROLLER)
                else:
                    tot, ctl = callgrind([str(work / "mujoco_walk3d_cg"), "biped12.xml", mode, str(steps), "1"],
                                         work,
                                         ("mj_step", "control") if hold else ("mj_step",), work / f"cg.{key}",
                                         CONTROLLER)
                ins[key], ins[f"{key}_controller"] = tot, ctl
        finally:
            if saved is None:
                os.environ.pop(ARCH_ENV, None)
            else:
                os.environ[ARCH_ENV] = saved
        for key, hold, mode in WALK_VARIANTS[2:]:
            ref = "rodgen_hold" if hold else "rodgen"
            ins[f"ratio_{key}_over_{ref}"] = ins[key] / ins[ref]
        ins["ratio_mujoco_rk4_over_rodgen_hold"] = ins["mujoco_rk4"] / ins["rodgen_hold"]
        out["instructions"] = ins
    shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-end", type=float, default=None,
                    help="simulated time [s] (default: the first step, 10 ms before its planned landing)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--instructions", action="store_true",
                    help="also count the runs' instructions with valgrind's callgrind (a few minutes)")
    ap.add_argument("--build-dir", default=str(HERE / "results" / ".build"))
    args = ap.parse_args()
    payload = {"machine": machine(), "walk3d": walk3d(args.build_dir, args.repeat, args.t_end, args.instructions)}
    path = write_json("walk3d", payload)
    print(f"wrote {path}")
    for k, v in payload["walk3d"].items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
