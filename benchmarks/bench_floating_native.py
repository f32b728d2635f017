"""Floating-base forward and constrained dynamics natively: rodgen's generated C against Pinocchio's C++.

The native counterpart of bench_floating.py. The generated library of each robot is compiled with gcc and
linked with ``constrained_harness.cpp`` (g++, Pinocchio's algorithms instantiated there), both at
``-O3 -march=native``; the harness reads the same states for both sides, prints the largest differences first
(accelerations, contact forces), then the mean time per call, the minimum over interleaved rounds:

- ``forward``: the generated forward dynamics (``model->forward_dynamics``) against ``pinocchio::aba`` with a
  free-flyer (solo12 and Talos);
- ``constrained``: ``rodgen_constrained_dynamics`` over the generated library with solo12's four feet held
  (3-row point contacts, all active) against ``pinocchio::constraintDynamics`` with four ``CONTACT_3D`` in
  ``LOCAL_WORLD_ALIGNED`` (``initConstraintDynamics`` once, outside the loop; proximal settings 1e-12, one
  iteration).

Target: rodgen at most half of Pinocchio's time. ``--callgrind`` also counts the instructions of each side
(valgrind's callgrind, the harness run with one side only and one round; the counts include the setup).

Needs what bench_derivatives.py needs (the ``pin`` wheel's headers, Eigen 3, g++ and gcc). The harness object is
compiled once (a few minutes) and kept in a cache folder.

    python benchmarks/bench_floating_native.py [--rounds 15] [--states 16] [--callgrind]

Writes ``results/floating_native.json``.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_derivatives import C_STD, CFLAGS, eigen_dir, harness_object, prefix_dirs, tool  # noqa: E402
from bench_floating import FEET, ROBOTS, robot_file  # noqa: E402

import rodgen  # noqa: E402

from common import machine, write_json  # noqa: E402

TARGET = 0.5

GLUE = """\
/* benchmark glue: the generated model's forward and constrained dynamics */
#include <stdlib.h>
#include "rodgen_contact.h"

const rodgen_model *{prefix}_model(void);
static const double P[] = {{ {p} }};
static const rodgen_model *M;
static void *W;
static int ACT[{nc1}];
static rodgen_cfd_options O;

int bench_setup(void)
{{
    int i;
    M = {prefix}_model();
    W = malloc((size_t)rodgen_contact_work_bytes(M) + 1);
    for (i = 0; i < M->nconstraints; ++i) {{
        ACT[i] = RODGEN_STICK;
    }}
    rodgen_cfd_defaults(&O);
    O.alpha = O.beta = 0.0;   /* no Baumgarte terms, as Pinocchio's */
    return W == 0;
}}

int bench_nrows(void) {{ return M->nrows; }}

int bench_forward(const double *q, const double *v, const double *u, double *qdd)
{{ return M->forward_dynamics(0.0, q, v, u, P, qdd); }}

int bench_constrained(const double *q, const double *v, const double *u, double *qdd, double *lambda)
{{ return rodgen_constrained_dynamics(M, 0.0, P, q, v, u, ACT, 0, &O, qdd, lambda, W); }}
"""


def robot_pair(name: str, feet: bool) -> tuple[rodgen.SpatialModel, Any, list[Any]]:
    """rodgen's model (URDF limits dropped; the feet as 3-row contacts if asked) and Pinocchio's with its
    contacts as (parent joint, placement)."""
    import pinocchio as pin
    path = robot_file(ROBOTS[name])
    model = rodgen.from_urdf(path, floating=True)
    model.name = f"{name}_native" + ("_feet" if feet else "")
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    contacts = []
    if feet:
        for lk in model.links:
            lk.joint.limits = None
        for leg in FEET:
            model.contact(leg, f"{leg}_FOOT", friction=1.0)
            f = pm.frames[pm.getFrameId(f"{leg}_FOOT")]
            contacts.append((f.parentJoint, f.placement))
    return model, pm, contacts


def run_case(label: str, name: str, feet: bool, obj: Path, libdir: Path, *, states: int, rounds: int,
             callgrind: bool) -> dict[str, Any]:
    import pinocchio as pin
    model, pm, contacts = robot_pair(name, feet)
    work = Path(tempfile.mkdtemp(prefix="rodgen_cdbench_"))
    cc, cxx = tool("gcc"), tool("g++")
    try:
        eqs = rodgen.derive(model)
        files = rodgen.generate(eqs, work)
        prefix = files.spec.prefix
        coords = [str(c) for c in model_coordinates(eqs)]
        p = ", ".join(repr(float(eqs.param_values[s])) for s in eqs.params) or "0.0"
        (work / "glue.c").write_text(GLUE.format(prefix=prefix, p=p, nc1=max(len(contacts), 1)))
        objs = []
        for f in ["glue.c", *[f for f in files.files if f.endswith(".c")]]:
            o = work / (Path(f).stem + ".o")
            proc = subprocess.run([cc, *CFLAGS, *C_STD, "-c", f, "-o", str(o)], cwd=work, capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{label}: {f} failed to compile:\n{proc.stderr[-3000:]}")
            objs.append(str(o))
        exe = work / "harness"
        proc = subprocess.run([cxx, *CFLAGS, "-o", str(exe), str(obj), *objs, f"-L{libdir}", f"-Wl,-rpath,{libdir}",
                               "-lboost_serialization", "-lm"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{label}: the harness failed to link:\n{proc.stderr[-3000:]}")
        nq, nv = pm.nq, pm.nv
        qi = list(range(7)) + [pm.idx_qs[pm.getJointId(c)] for c in coords[7:]]
        vi = list(range(6)) + [pm.idx_vs[pm.getJointId(c)] for c in coords[7:]]
        pm.saveToBinary(str(work / "model.bin"))
        lines = [str(work / "model.bin"), f"{nq} {nv} {len(contacts)} {states}"]
        for joint, placement in contacts:
            lines.append(" ".join([str(joint), *(repr(float(x)) for x in placement.translation),
                                   *(repr(float(x)) for x in placement.rotation.reshape(-1))]))
        lines.append(" ".join(map(str, vi)))
        rng = np.random.default_rng(0)
        pin.seed(0)
        for _ in range(states):
            pq = pin.randomConfiguration(pm, -np.ones(nq), np.ones(nq))
            pv, ptau = rng.normal(size=nv), np.zeros(nv)
            ptau[6:] = rng.normal(size=nv - 6)
            for arr in (pq, pv, ptau, pq[qi], pv[vi], ptau[vi][6:]):
                lines.append(" ".join(repr(float(x)) for x in arr))
        (work / "data.txt").write_text("\n".join(lines) + "\n")
        proc = subprocess.run([str(exe), str(work / "data.txt"), str(rounds)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{label}: the harness failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        print(proc.stdout.strip().replace("\n", " | "), flush=True)
        diffs, times, status = {}, {}, None
        for line in proc.stdout.splitlines():
            w = line.split()
            if w[0] == "diff":
                diffs[w[1]] = float(w[2])
            elif w[0] == "time":
                times[w[1]] = {"rodgen_ns": float(w[2]), "pinocchio_ns": float(w[3]),
                               "ratio": float(w[2]) / float(w[3])}
            elif w[0] == "status":
                status = int(w[1])
        row: dict[str, Any] = {"case": label, "nq": nq, "nv": nv, "contacts": len(contacts), "status": status,
                               "max_abs_difference": diffs, "times": times, "target": TARGET,
                               "targets_met": {k: t["ratio"] <= TARGET for k, t in times.items()}}
        if callgrind:
            row["callgrind_instructions"] = {side: instructions(exe, work, side) for side in ("rodgen", "pinocchio")}
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def instructions(exe: Path, work: Path, side: str) -> Any:
    """callgrind's instruction count of the harness run with one side; None (with the reason printed) when
    valgrind cannot run it (it stops with SIGILL on instructions it does not know, e.g. AVX-512 from
    -march=native)."""
    out = work / f"cg.{side}"
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe),
                           str(work / "data.txt"), "1", side], capture_output=True, text=True)
    found = re.search(r"^summary:\s*(\d+)", out.read_text(), re.M) if out.exists() else None
    if proc.returncode != 0 or not found:
        print(f"callgrind could not count {side}'s instructions (exit {proc.returncode}): {proc.stderr[-300:]}")
        return None
    return int(found.group(1))


def model_coordinates(eqs: Any) -> list[Any]:
    return list(eqs.q)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--states", type=int, default=16)
    ap.add_argument("--callgrind", action="store_true")
    args = ap.parse_args()
    include, libdir = prefix_dirs()
    obj = harness_object(include, eigen_dir(include), "constrained_harness.cpp", ("-DNDEBUG",))
    rows = []
    for label, name, feet in (("solo12, four feet held", "solo12", True), ("solo12", "solo12", False),
                              ("talos", "talos", False)):
        rows.append(run_case(label, name, feet, obj, libdir, states=args.states, rounds=args.rounds,
                             callgrind=args.callgrind))
        for k, t in rows[-1]["times"].items():
            print(f"{label}: {k} rodgen {t['rodgen_ns']:.0f} ns, pinocchio {t['pinocchio_ns']:.0f} ns, "
                  f"ratio {t['ratio']:.2f}", flush=True)
    write_json("floating_native", {"machine": machine(), "flags": CFLAGS, "rows": rows})


if __name__ == "__main__":
    main()
