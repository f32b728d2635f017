"""Derivatives of solo12's constrained dynamics natively: rodgen's generated C against Pinocchio's C++.

The native counterpart of bench_constrained_derivatives.py. solo12 (floating base, nq = 19, nv = 18) with its
four feet held: rodgen's ``rodgen_constrained_derivatives`` (``csrc/rodgen_cderiv.c``; q̈, λ and their
derivatives by q, q̇, u in one call) over the library generated with the RHS Jacobian (which holds
``constraint_partials``), against ``pinocchio::constraintDynamics`` followed by
``pinocchio::computeConstraintDynamicsDerivatives`` with four ``CONTACT_3D`` in ``LOCAL_WORLD_ALIGNED`` on each
foot frame's parent joint at the frame's placement (``initConstraintDynamics`` once, outside the loop; proximal
settings 1e-14, mu 0, one iteration, as bench_constrained_derivatives.py). The generated library is compiled
with gcc and linked with ``cderiv_harness.cpp`` (g++, Pinocchio's algorithms instantiated there), both at
``-O3 -march=native``; the harness reads the same states for both sides, prints the largest differences first
(q̈, λ and the six derivatives, derivatives by q on the tangent space), then the mean time per call, the
minimum over interleaved rounds.

Target: rodgen at most half of Pinocchio's time. ``--callgrind`` also counts the instructions of each side
(valgrind's callgrind, the harness run with one side only; the counts include the setup, so the script runs it
with 0 and with 1 round and reports the difference per call), both sides then built with ``-march=x86-64-v3``
added (AVX2 and FMA; valgrind stops at the AVX-512 instructions -march=native may emit).

Needs what bench_derivatives.py needs (the ``pin`` wheel's headers, Eigen 3, g++ and gcc). The harness object is
compiled once (a few minutes) and kept in a cache folder.

    python benchmarks/bench_cderiv_native.py [--rounds 15] [--states 16] [--callgrind]

Writes ``results/cderiv_native.json``.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_derivatives import (  # noqa: E402,E501
    C_STD,
    CFLAGS,
    coordinate_maps,
    eigen_dir,
    from_urdf_pair,
    harness_object,
    prefix_dirs,
    tool,
)
from bench_floating import FEET  # noqa: E402

import rodgen  # noqa: E402
from rodgen.codegen import CodegenOptions  # noqa: E402

from common import machine, write_json  # noqa: E402

TARGET = 0.5
#: added to CFLAGS for the callgrind counts (valgrind does not know AVX-512, which -march=native may emit)
CALLGRIND_FLAGS = ["-march=x86-64-v3"]
#: the harness's repetitions per round and state (cderiv_harness.cpp's reps)
REPS = 100

GLUE = """\
/* benchmark glue: the derivatives of the generated model's constrained dynamics */
#include <stdlib.h>
#include "rodgen_cderiv.h"
#include "rodgen_contact.h"

const rodgen_model *{prefix}_model(void);
static const double P[] = {{ {p} }};
static const rodgen_model *M;
static void *W;
static int ACT[{nc1}];

int bench_setup(void)
{{
    int i;
    M = {prefix}_model();
    W = malloc((size_t)rodgen_cderiv_work_bytes(M) + 1);
    for (i = 0; i < M->nconstraints; ++i) {{
        ACT[i] = RODGEN_STICK;
    }}
    return W == 0;
}}

int bench_nrows(void) {{ return M->nrows; }}

int bench_nu(void) {{ return M->nu; }}

int bench_derivatives(const double *q, const double *v, const double *u, double *qdd, double *lambda, double *D)
{{ return rodgen_constrained_derivatives(M, 0.0, P, q, v, u, ACT, qdd, lambda, D, W); }}
"""


def build(work: Path, obj: Path, libdir: Path, flags: list[str]) -> tuple[Path, Any, list[int], list[int]]:
    """The harness linked with solo12's generated library compiled with ``flags``; (executable, Pinocchio's
    model, qi, vi)."""
    model, pm = from_urdf_pair("solo_description/robots/solo12.urdf", floating=True)
    for lk in model.links:              # the URDF's joint limits would be blocks of their own
        lk.joint.limits = None
    for leg in FEET:
        model.contact(leg, f"{leg}_FOOT")
    eqs = rodgen.derive(model)
    files = rodgen.generate(eqs, work, options=CodegenOptions(jacobian=True))
    prefix = files.spec.prefix
    p = ", ".join(repr(float(eqs.param_values[s])) for s in eqs.params) or "0.0"
    (work / "glue.c").write_text(GLUE.format(prefix=prefix, p=p, nc1=len(FEET)))
    cc, cxx = tool("gcc"), tool("g++")
    objs = []
    for f in ["glue.c", *[f for f in files.files if f.endswith(".c")]]:
        o = work / (Path(f).stem + ".o")
        proc = subprocess.run([cc, *flags, *C_STD, "-c", f, "-o", str(o)], cwd=work, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{f} failed to compile:\n{proc.stderr[-3000:]}")
        objs.append(str(o))
    exe = work / "harness"
    proc = subprocess.run([cxx, *flags, "-o", str(exe), str(obj), *objs, f"-L{libdir}", f"-Wl,-rpath,{libdir}",
                           "-lboost_serialization", "-lm"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the harness failed to link:\n{proc.stderr[-3000:]}")
    qi, vi = coordinate_maps([str(c) for c in eqs.q], len(eqs.q), len(eqs.qd), pm)
    return exe, pm, qi, vi


def write_data(work: Path, pm: Any, qi: list[int], vi: list[int], states: int) -> Path:
    """The harness's data file: Pinocchio's model, the contacts, vi and the states (Pinocchio's, then rodgen's)."""
    import pinocchio as pin
    nq, nv = pm.nq, pm.nv
    pm.saveToBinary(str(work / "model.bin"))
    lines = [str(work / "model.bin"), f"{nq} {nv} {len(FEET)} {states}"]
    for leg in FEET:
        f = pm.frames[pm.getFrameId(f"{leg}_FOOT")]
        lines.append(" ".join([str(f.parentJoint), *(repr(float(x)) for x in f.placement.translation),
                               *(repr(float(x)) for x in f.placement.rotation.reshape(-1))]))
    lines.append(" ".join(map(str, vi)))
    rng = np.random.default_rng(0)
    pin.seed(0)
    for _ in range(states):
        pq = pin.randomConfiguration(pm, -np.ones(nq), np.ones(nq))
        pv, ptau = rng.normal(size=nv), np.zeros(nv)
        ptau[6:] = rng.normal(size=nv - 6)
        for arr in (pq, pv, ptau, pq[qi], pv[vi], ptau[vi][6:]):
            lines.append(" ".join(repr(float(x)) for x in arr))
    path = work / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def instructions(exe: Path, data: Path, side: str, states: int) -> Optional[float]:
    """callgrind's instructions per call of one side: the run with one round less the run with none, over the
    calls of a round; None (with the reason printed) when valgrind cannot run it (e.g. AVX-512 from
    -march=native)."""
    counts = []
    for rounds in (0, 1):
        out = data.parent / f"cg.{side}.{rounds}"
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), str(data),
                               str(rounds), side], capture_output=True, text=True)
        found = re.search(r"^summary:\s*(\d+)", out.read_text(), re.M) if out.exists() else None
        if proc.returncode != 0 or not found:
            print(f"callgrind could not count {side}'s instructions (exit {proc.returncode}): {proc.stderr[-300:]}")
            return None
        counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / (REPS * states)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--states", type=int, default=16)
    ap.add_argument("--callgrind", action="store_true")
    args = ap.parse_args()
    include, libdir = prefix_dirs()
    obj = harness_object(include, eigen_dir(include), "cderiv_harness.cpp", ("-DNDEBUG",))
    work = Path(tempfile.mkdtemp(prefix="rodgen_cderivbench_"))
    try:
        exe, pm, qi, vi = build(work, obj, libdir, CFLAGS)
        data = write_data(work, pm, qi, vi, args.states)
        proc = subprocess.run([str(exe), str(data), str(args.rounds)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the harness failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        print(proc.stdout.strip(), flush=True)
        diffs: dict[str, Any] = {}
        times: dict[str, float] = {}
        status = None
        for line in proc.stdout.splitlines():
            w = line.split()
            if w[0] == "diff":
                diffs[w[1]] = {"max_abs": float(w[2]), "max_abs_pinocchio": float(w[3])}
            elif w[0] == "time":
                times = {"rodgen_ns": float(w[2]), "pinocchio_ns": float(w[3])}
            elif w[0] == "status":
                status = int(w[1])
        ratio = times["rodgen_ns"] / times["pinocchio_ns"]
        print(f"solo12, four feet held: rodgen {times['rodgen_ns'] / 1e3:.2f} us, Pinocchio "
              f"{times['pinocchio_ns'] / 1e3:.2f} us, ratio {ratio:.2f} (target {TARGET})")
        row: dict[str, Any] = {"case": "solo12, four feet held", "nq": pm.nq, "nv": pm.nv, "contacts": len(FEET),
                               "status": status, "differences": diffs, **times, "ratio": ratio, "target": TARGET,
                               "target_met": ratio <= TARGET}
        if args.callgrind:       # valgrind stops at AVX-512: both sides built again at CALLGRIND_FLAGS
            cg_obj = harness_object(include, eigen_dir(include), "cderiv_harness.cpp", ("-DNDEBUG", *CALLGRIND_FLAGS))
            (work / "cg").mkdir()
            cg_exe, *_ = build(work / "cg", cg_obj, libdir, [*CFLAGS, *CALLGRIND_FLAGS])
            cg = {side: instructions(cg_exe, data, side, args.states) for side in ("rodgen", "pinocchio")}
            row["callgrind_instructions_per_call"] = {**cg, "flags": [*CFLAGS, *CALLGRIND_FLAGS]}
            if cg["rodgen"] and cg["pinocchio"]:
                print(f"instructions per call: rodgen {cg['rodgen']:.0f}, Pinocchio {cg['pinocchio']:.0f}, "
                      f"ratio {cg['rodgen'] / cg['pinocchio']:.2f}")
        write_json("cderiv_native", {"machine": machine(), "flags": CFLAGS, "rows": [row]})
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
