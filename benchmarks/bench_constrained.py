"""Constrained forward dynamics in C against the unconstrained forward dynamics of the same model.

    python benchmarks/bench_constrained.py [--rounds 15] [--reps 100000] [--no-callgrind]

For examples/exo5_walk.yaml (floating base, 11 coordinates) in double support
(both feet held: 4 constraint rows) and single support (foot_a: 2 rows), and
for the closed loop examples/fourbar.yaml (3 coordinates, 2 rows), a C main()
times, in the same run and interleaved round by round:

* ``fd``: the model's ``<prefix>_forward_dynamics`` (the articulated-body
  algorithm where it applies, the default build);
* ``cfd``: ``rodgen_constrained_dynamics`` with the blocks held, default
  Baumgarte gains, through the model's ``constrained_solve`` (the default
  build: q̈ and λ for the rows held in one generated routine);
* ``cfd_dense``: the same call on the model generated with
  ``CodegenOptions(constrained_terms=False)``: the separate routines (M, bias,
  B, J, Jdot qd, c) and a dense Cholesky factorisation of M at run time (the
  implementation before the generated constrained routines).

The C is compiled as ``rodgen.build`` compiles it: the model's C with the
default BuildOptions (-O1), the runtime's C with its flags (-O2). Each round
times ``reps`` calls of each (short rounds, so that the load of the machine
changes little within one); the reported time of a call is the minimum over
the rounds (the least disturbed by other work on the machine), the ratio is
that of the minima (the median of the per-round ratios is reported beside it).
With valgrind installed, the instructions per call (callgrind, repeatable on a
loaded machine) are counted too. The results of the three calls are compared
(largest difference of qdd).

Writes benchmarks/results/constrained.json.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402
from rodgen.codegen import CodegenOptions, generate  # noqa: E402
from rodgen.toolchain.compiler import BuildOptions, find_compiler, model_cflags, runtime_cflags  # noqa: E402

from common import CC, machine, write_json  # noqa: E402

EXAMPLES = HERE.parent / "examples"

#: (label, model file, active blocks)
CASES = (
    ("exo5_walk double support", "exo5_walk.yaml", ("foot_a", "foot_b")),
    ("exo5_walk single support", "exo5_walk.yaml", ("foot_a",)),
    ("fourbar closed loop", "fourbar.yaml", ()),
)

HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rodgen_contact.h"
#include "rodgen_runtime.h"
const rodgen_model *{fast}_model(void);
const rodgen_model *{dense}_model(void);
static const int ACTIVE[{NC}] = {ACTIVE};
static double now(void) {{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}}
/* which: 0 fd, 1 cfd, 2 cfd_dense; returns seconds per call, qdd of the last call in out */
static double run(int which, long reps, double *work, double *out, int *status) {{
    const rodgen_model *m = which == 2 ? {dense}_model() : {fast}_model();
    double q[{NQ}], qd[{NQ}], u[{NU}], lam[{NR}], t0;
    long i;
    int j, st = 0;
    for (j = 0; j < {NQ}; ++j) {{ q[j] = m->initial_q[j]; qd[j] = 0.1 * (j % 3) - 0.1; }}
    for (j = 0; j < {NU}; ++j) u[j] = 0.0;
    t0 = now();
    for (i = 0; i < reps; ++i) {{
        q[0] = m->initial_q[0] + 1e-9 * (double)(i & 15);   /* defeat hoisting */
        if (which == 0) st |= m->forward_dynamics(0.0, q, qd, u, m->default_p, out);
        else st |= rodgen_constrained_dynamics(m, 0.0, m->default_p, q, qd, u, ACTIVE, 0, 0, out, lam, work);
    }}
    *status |= st;
    return reps > 0 ? (now() - t0) / (double)reps : 0.0;
}}
/* seconds per step of `steps` RK4 steps of 1 ms from the initial state at rest: which 3 the hybrid
 * simulation with the blocks of ACTIVE held (fast build), 4 the same on the dense build, 5 the
 * unconstrained rodgen_simulate (the model's rhs, fast build) */
static double steps_of(int which, long steps, void *hwork, double *out) {{
    const rodgen_model *m = which == 4 ? {dense}_model() : {fast}_model();
    double y[2 * {NQ}], t0, dt;
    static double t_out[64], y_out[64 * 2 * {NQ}], u_out[64 * {NU}];
    long n = 0, ne = 0;
    int j, st;
    for (j = 0; j < {NQ}; ++j) {{ y[j] = m->initial_q[j]; y[{NQ} + j] = 0.0; }}
    if (which == 5) {{
        rodgen_sim_options o;
        rodgen_sim_state s;
        rodgen_input in;
        double storage[RODGEN_SIM_STORAGE({NQ})];
        memset(&o, 0, sizeof o);
        memset(&in, 0, sizeof in);
        o.method = RODGEN_RK4; o.t_end = 1e-3 * (double)steps; o.dt = 1e-3; o.store_every = steps;
        in.kind = RODGEN_INPUT_CONSTANT;
        t0 = now();
        rodgen_sim_start(&s, m, 0.0, y, storage);
        st = rodgen_simulate(m, &o, &in, m->default_p, &s, 64, t_out, y_out, u_out, &n);
        dt = now() - t0;
        for (j = 0; j < {NQ}; ++j) out[j] = s.y[j];
    }} else {{
        rodgen_hybrid_options o;
        rodgen_hybrid_state s;
        rodgen_event ev[64];
        rodgen_hybrid_defaults(&o);
        o.t_end = 1e-3 * (double)steps; o.dt = 1e-3; o.store_every = steps; o.on_slip = RODGEN_SLIP_CONTINUE;
        t0 = now();
        st = rodgen_hybrid_start(&s, m, m->default_p, 0, 0, &o, 0.0, y, ACTIVE, 0, hwork);
        if (st == RODGEN_OK)
            st = rodgen_hybrid_simulate(&o, &s, 64, t_out, y_out, 0, 0, 0, &n, 64, ev, &ne);
        dt = now() - t0;
        for (j = 0; j < {NQ}; ++j) out[j] = s.y[j];
    }}
    return st == RODGEN_OK && steps > 0 ? dt / (double)steps : -1.0;
}}
int main(int argc, char **argv) {{
    const char *mode = argc > 1 ? argv[1] : "rounds";
    long reps = argc > 2 ? atol(argv[2]) : 100000;
    int rounds = argc > 3 ? atoi(argv[3]) : 10;
    double *work = malloc((size_t)rodgen_contact_work_bytes({dense}_model()) + 64);
    double *work2 = malloc((size_t)rodgen_contact_work_bytes({fast}_model()) + 64);
    double out[3][{NQ}];
    int r, w, j, status = 0;
    if (work == 0 || work2 == 0) return 2;
    if (strcmp(mode, "rounds") == 0) {{
        for (r = 0; r < rounds; ++r) {{
            for (w = 0; w < 3; ++w)
                printf("%s%.6e", w ? " " : "", run(w, reps, w == 2 ? work : work2, out[w], &status));
            printf("\n");
        }}
        printf("status %d\n", status);
        for (w = 0; w < 3; ++w) {{
            for (j = 0; j < {NQ}; ++j) printf("%s%.17g", j ? " " : "", out[w][j]);
            printf("\n");
        }}
    }} else if (strcmp(mode, "steps") == 0) {{
        void *hwork = malloc((size_t)rodgen_hybrid_work_bytes({dense}_model()) + 64);
        double y[3][{NQ}];
        if (hwork == 0) return 2;
        for (r = 0; r < rounds; ++r) {{
            for (w = 3; w < 6; ++w) printf("%s%.6e", w > 3 ? " " : "", steps_of(w, reps, hwork, y[w - 3]));
            printf("\n");
        }}
        for (w = 0; w < 2; ++w) {{
            for (j = 0; j < {NQ}; ++j) printf("%s%.17g", j ? " " : "", y[w][j]);
            printf("\n");
        }}
        free(hwork);
    }} else if (atoi(mode) >= 3) {{
        void *hwork = malloc((size_t)rodgen_hybrid_work_bytes({dense}_model()) + 64);
        double y[{NQ}];
        if (hwork == 0) return 2;
        steps_of(atoi(mode), reps, hwork, y);
        free(hwork);
    }} else {{
        w = atoi(mode);   /* one kind only, for callgrind */
        run(w, reps, w == 2 ? work : work2, out[0], &status);
    }}
    free(work);
    free(work2);
    return status;
}}
"""


def _sources(model: rodgen.Model, folder: Path, prefix: str, options: CodegenOptions) -> list[Path]:
    files = generate(model, options=options).files
    out = []
    for name, text in files.items():
        if name.startswith(model.name.lower()):
            name = name.replace(model.name.lower(), prefix, 1)
            text = text.replace(model.name.lower() + "_", prefix + "_").replace(
                model.name.upper() + "_", prefix.upper() + "_").replace(
                f'"{model.name.lower()}.h"', f'"{prefix}.h"')
        (folder / name).write_text(text)
        if name.endswith(".c") and (name.startswith(prefix) or name in ("rodgen_contact.c", "rodgen_linalg.c",
                                                                              "rodgen_simulate.c", "rodgen_lie.c")):
            out.append(folder / name)
    return out


def build(model: rodgen.Model, active: tuple[str, ...], folder: Path) -> Path:
    fast = _sources(model, folder, "fast", CodegenOptions())
    dense = _sources(model, folder, "dense", CodegenOptions(constrained_terms=False))
    eqs = rodgen.derive(model, method="recursive")
    names = [c.name for c in eqs.constraints]
    flags = ",".join("1" if n in active else "0" for n in names)
    nrows = sum(c.nrows for c in eqs.constraints)
    (folder / "harness.c").write_text(HARNESS.format(
        fast="fast", dense="dense", NC=len(names), ACTIVE="{" + flags + "}", NQ=len(eqs.q),
        NU=max(len(eqs.u), 1), NR=max(nrows, 1)))
    model_flags = [f for f in model_cflags(BuildOptions()) if f != "-fPIC"]
    runtime_flags = [f for f in runtime_cflags(find_compiler(None)) if f not in ("-fPIC", "-fvisibility=hidden")]
    objects = []
    for src in dict.fromkeys(fast + dense):   # rodgen_contact.c once
        obj = src.with_suffix(".o")
        fl = runtime_flags if src.name.startswith("rodgen_") else model_flags
        subprocess.run([CC, "-std=c99", *fl, "-c", str(src), "-o", str(obj)], cwd=folder, check=True)
        objects.append(obj)
    exe = folder / "harness"
    subprocess.run([CC, "-std=c99", *runtime_flags, "-o", str(exe), "harness.c", *map(str, objects), "-lm"],
                   cwd=folder, check=True)
    return exe


def instructions(exe: Path, which: int, reps: int) -> float | None:
    """Instructions per call counted by callgrind (None without valgrind)."""
    if shutil.which("valgrind") is None:
        return None

    def count(n: int) -> int:
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(exe),
                              str(which), str(n)], capture_output=True, text=True)
        for line in out.stderr.splitlines():
            if "refs:" in line:
                return int(line.split("refs:")[1].replace(",", "").strip())
        raise RuntimeError(out.stderr[-2000:])
    return (count(reps) - count(0)) / reps


def measure(label: str, file: str, active: tuple[str, ...], rounds: int, reps: int, grind: bool,
            steps: int) -> dict[str, Any]:
    model = rodgen.load(EXAMPLES / file)
    folder = Path(tempfile.mkdtemp(prefix="rodgen_cfd_"))
    try:
        exe = build(model, active, folder)
        out = subprocess.run([str(exe), "rounds", str(reps), str(rounds)], capture_output=True, text=True,
                             check=True).stdout.splitlines()
        times = [[float(x) for x in line.split()] for line in out[:rounds]]
        qdd = [[float(x) for x in line.split()] for line in out[rounds + 1:rounds + 4]]
        res: dict[str, Any] = {"case": label, "model": f"examples/{file}", "active": list(active),
                               "rounds": rounds, "reps": reps, "status": out[rounds]}
        for k, name in enumerate(("fd", "cfd", "cfd_dense")):
            res[f"{name}_us"] = 1e6 * min(t[k] for t in times)
            res[f"{name}_us_median"] = 1e6 * statistics.median(t[k] for t in times)
        res["ratio_cfd_over_fd"] = res["cfd_us"] / res["fd_us"]
        res["ratio_cfd_over_fd_median_of_rounds"] = statistics.median(t[1] / t[0] for t in times)
        res["ratio_cfd_dense_over_fd"] = res["cfd_dense_us"] / res["fd_us"]
        res["speedup_cfd_dense_over_cfd"] = res["cfd_dense_us"] / res["cfd_us"]
        res["max_abs_diff_qdd_cfd_vs_dense"] = max(abs(a - b) for a, b in zip(qdd[1], qdd[2]))
        if steps:
            sr = max(3, rounds // 4)
            out = subprocess.run([str(exe), "steps", str(steps), str(sr)], capture_output=True, text=True,
                                 check=True).stdout.splitlines()
            st = [[float(x) for x in line.split()] for line in out[:sr]]
            ys = [[float(x) for x in line.split()] for line in out[sr:sr + 2]]
            for k, name in enumerate(("hybrid_step", "hybrid_step_dense", "free_step")):
                res[f"{name}_us"] = 1e6 * min(t[k] for t in st)
            res["ratio_hybrid_step_over_free_step_median_of_rounds"] = statistics.median(t[0] / t[2] for t in st)
            res["ratio_hybrid_step_over_free_step"] = res["hybrid_step_us"] / res["free_step_us"]
            res["ratio_hybrid_step_dense_over_free_step"] = res["hybrid_step_dense_us"] / res["free_step_us"]
            res["max_abs_diff_q_hybrid_vs_dense"] = max(abs(a - b) for a, b in zip(ys[0], ys[1]))
        if grind:
            n = max(1000, reps)
            ins = {name: instructions(exe, k, n) for k, name in enumerate(("fd", "cfd", "cfd_dense"))}
            if steps:
                ins.update({name: instructions(exe, k, max(200, steps))
                            for k, name in zip((3, 4, 5), ("hybrid_step", "hybrid_step_dense", "free_step"))})
            if ins["fd"] is not None:
                res.update({f"{k}_instructions": v for k, v in ins.items()})
                res["instruction_ratio_cfd_over_fd"] = ins["cfd"] / ins["fd"]
                res["instruction_ratio_cfd_dense_over_fd"] = ins["cfd_dense"] / ins["fd"]
                if steps:
                    res["instruction_ratio_hybrid_step_over_free_step"] = ins["hybrid_step"] / ins["free_step"]
                    res["instruction_ratio_hybrid_step_dense_over_free_step"] = (ins["hybrid_step_dense"]
                                                                                / ins["free_step"])
        return res
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=401, help="rounds (short, so that the load of the machine "
                    "changes little within one)")
    ap.add_argument("--reps", type=int, default=2000, help="calls of each kind per round")
    ap.add_argument("--steps", type=int, default=200, help="RK4 steps of each simulation per round (0: none)")
    ap.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    args = ap.parse_args()
    cases = [measure(label, f, act, args.rounds, args.reps, not args.no_callgrind, args.steps)
             for label, f, act in CASES]
    for c in cases:
        print(f"{c['case']}: fd {c['fd_us']:.3f} us, constrained {c['cfd_us']:.3f} us "
              f"(ratio {c['ratio_cfd_over_fd']:.2f}, median of rounds {c['ratio_cfd_over_fd_median_of_rounds']:.2f}), "
              f"dense path {c['cfd_dense_us']:.3f} us "
              f"(ratio {c['ratio_cfd_dense_over_fd']:.2f})"
              + (f"; instructions {c['fd_instructions']:.0f} / {c['cfd_instructions']:.0f} / "
                 f"{c['cfd_dense_instructions']:.0f}" if "fd_instructions" in c else ""))
        if "hybrid_step_us" in c:
            print(f"  RK4 step: hybrid {c['hybrid_step_us']:.3f} us, free {c['free_step_us']:.3f} us "
                  f"(ratio {c['ratio_hybrid_step_over_free_step']:.2f}), hybrid on the dense build "
                  f"{c['hybrid_step_dense_us']:.3f} us (ratio {c['ratio_hybrid_step_dense_over_free_step']:.2f})")
    write_json("constrained", {"cases": cases, "machine": machine()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
