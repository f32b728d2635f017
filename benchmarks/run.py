"""rodgen's speed against PyDy, Pinocchio and MuJoCo on the vl_chain(n) family and the exoskeleton.

Run from the repository root (takes a few minutes; PyDy's derivation dominates):

    python benchmarks/run.py                    # everything, n = 1 2 3 5 8 12 20, PyDy up to n = 8
    python benchmarks/run.py --pydy-max-n 12    # PyDy also at n = 12 (about two more minutes)
    python benchmarks/run.py --only build forward --n 1 2 5

Sections (each writes benchmarks/results/<section>.json):

* build    derive + generate + compile wall time of rodgen (split) and of PyDy (Kane + Cython), code size;
           rodgen's runtime extension (compiled once per machine, not per model) is built first and its
           compile time reported once, outside the per-model times;
* forward  forward dynamics per call from Python, per state in a batch, per call in C, vs Pinocchio
           aba and PyDy's rhs;
* simulate 10 s at 1 kHz, RK4, of vl_chain(5) and exo5: rodgen's C vs MuJoCo's C rollout, and
           Pinocchio/PyDy/rodgen under scipy's solve_ivp;
* opcount  operations of the generated forward dynamics vs n, beside SEEDS §4.3's formulas.

Then ``summary`` checks the targets, writes results/summary.json, results/summary.md and
results/benchmarks.png. A section whose anchor is missing is skipped with a message.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402
from rodgen.codegen import CodegenOptions, lower, render  # noqa: E402
from rodgen.codegen.printer import count_ops  # noqa: E402
from rodgen.codegen.straight import straight_line  # noqa: E402
from rodgen.examples import vl_chain  # noqa: E402
from rodgen.symbolic.recursive import forward_dynamics  # noqa: E402
from rodgen.toolchain import build as rodgen_build  # noqa: E402
from rodgen.toolchain import build_codegen, compile_files  # noqa: E402

from common import (  # noqa: E402
    HERE,
    RESULTS,
    CHarness,
    NumericTree,
    autorange,
    machine,
    missing,
    mjcf,
    pinocchio_model,
    pydy_build,
    write_json,
)

NS = [1, 2, 3, 5, 8, 12, 20]
EXO = HERE.parent / "examples" / "exo5.yaml"
SIM_T, SIM_DT = 10.0, 1e-3
BATCH = 1000

#: PyDy rhs functions built in the build section, reused by forward and simulate
_PYDY: dict[str, tuple[Callable[..., np.ndarray], NumericTree]] = {}


def state(tree: NumericTree, sysm: Any, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q0 = np.asarray(sysm.initial_state())[:tree.n]
    return q0 + 0.05 * rng.normal(size=tree.n), 0.2 * rng.normal(size=tree.n)


# -- build ---------------------------------------------------------------------------------------
def _rodgen_build_once(model: rodgen.Model) -> tuple[list[float], Any, Any]:
    """The stages of ``rodgen.build(model)``, cold; then, where the build defers the RHS Jacobian to its first
    use, that first use's build (generate and compile with the Jacobian; the equations are kept)."""
    with tempfile.TemporaryDirectory(prefix="rodgen_bench_") as d:
        t0 = time.perf_counter()
        eqs = rodgen.derive(model, method="recursive")
        t1 = time.perf_counter()
        now, deferred = build_codegen(CodegenOptions(), len(eqs.q))
        files = render(lower(eqs, options=now))
        t2 = time.perf_counter()
        compile_files(files, build_dir=d)
        t3 = time.perf_counter()
        t_jac = math.nan
        if deferred:
            compile_files(render(lower(eqs, options=CodegenOptions(jacobian=True))), build_dir=d)
            t_jac = time.perf_counter() - t3
    return [t1 - t0, t2 - t1, t3 - t2, t3 - t0, t_jac], eqs, files


def _runtime_once() -> dict[str, Any]:
    """Build (or find) rodgen's runtime extension before timing models; its one-off compile time."""
    import json

    from rodgen.toolchain.runtime import build_seconds, runtime_path
    t0 = time.perf_counter()
    path = runtime_path()
    wall = time.perf_counter() - t0
    manifest = json.loads((path.parent / "rodgen-build.json").read_text())
    built_now = bool(build_seconds())
    info = {"path": str(path), "compile_s": manifest.get("compile_seconds"), "built_in_this_run": built_now,
            "lookup_s": wall}
    print(f"runtime extension: compiled once in {info['compile_s']:.1f} s "
          f"({'now' if built_now else 'cached earlier'}; {path.parent}); not part of the model build times",
          flush=True)
    return info


def section_build(ns: list[int], pydy_max_n: int, repeat: int) -> dict[str, Any]:
    runtime = _runtime_once()
    rows = []
    for n in ns:
        model = vl_chain(n)
        runs = []
        for _ in range(repeat):       # cold every time: a fresh build folder, no cache
            times, eqs, files = _rodgen_build_once(model)
            runs.append(times)
        best = sorted(runs, key=lambda r: r[3])[len(runs) // 2]      # the run with the median total
        t_derive, t_gen, t_comp, t_total, t_jac = best
        c_text = files.source   # the model's own C (the runtime's C is copied beside it)
        row: dict[str, Any] = {"n": n, "nq": 2 * n, "rodgen_derive_s": t_derive, "rodgen_generate_s": t_gen,
                               "rodgen_compile_s": t_comp, "rodgen_total_s": t_total,
                               "rodgen_total_runs_s": [r[3] for r in runs],
                               "rodgen_jacobian_first_use_s": None if math.isnan(t_jac) else t_jac,
                               "rodgen_assignments": len(eqs.assignments), "rodgen_c_bytes": len(c_text),
                               "rodgen_c_lines": c_text.count("\n")}
        if n <= pydy_max_n and not missing("pydy"):
            tree = NumericTree(model)
            with tempfile.TemporaryDirectory(prefix="pydy_bench_") as d:
                rhs, td, tg = pydy_build(tree, tmp_dir=d)
                _PYDY[model.name] = (rhs, tree)
            row.update(pydy_derive_s=td, pydy_generate_compile_s=tg, pydy_total_s=td + tg,
                       ratio_pydy_over_rodgen=(td + tg) / row["rodgen_total_s"])
        rows.append(row)
        print(f"build n={n:2d}: rodgen {t_total:.2f} s "
              f"(derive {t_derive:.2f}, generate {t_gen:.2f}, compile {t_comp:.2f}, {len(c_text) / 1e3:.0f} kB C"
              + ("" if math.isnan(t_jac) else f"; RHS Jacobian on first use {t_jac:.2f}") + ")"
              + (f"; PyDy {row['pydy_total_s']:.2f} s" if "pydy_total_s" in row else ""), flush=True)
    return {"rows": rows, "pydy_max_n": pydy_max_n, "repeat": repeat, "runtime": runtime,
            "note": f"rodgen: the median of {repeat} cold runs (fresh folder, no model cache; the runtime "
                    f"extension, compiled once per machine, excluded and reported under 'runtime'); PyDy "
                    f"(sympy Kane + generate_ode_function(cython)): one run"}


# -- forward dynamics ----------------------------------------------------------------------------
def section_forward(ns: list[int], build_dir: str) -> dict[str, Any]:
    have_pin = missing("pinocchio") is None
    if have_pin:
        import pinocchio as pin
    rows = []
    for n in ns:
        model = vl_chain(n)
        tree = NumericTree(model)
        eqs = rodgen.derive(model, method="recursive")
        sysm = rodgen_build(eqs, build_dir=build_dir)
        q, qd = state(tree, sysm, seed=n)
        u = np.zeros(tree.n)
        row: dict[str, Any] = {"n": n, "nq": tree.n}
        row["rodgen_python_s"] = autorange(lambda: sysm.forward_dynamics(q, qd, u))
        # the compiled kernel without the runtime's argument checks (what a fast path could reach)
        q2, qd2, u2 = q[None, :].copy(), qd[None, :].copy(), u[None, :].copy()
        p2 = np.asarray(sysm.parameter_vector(), float)[None, :].copy()
        res, st, t2 = np.empty((1, tree.n)), np.zeros(1, dtype=np.intc), np.zeros(1)
        row["rodgen_kernel_s"] = autorange(lambda: sysm._m.forward_dynamics(1, t2, q2, qd2, u2, p2, res, st))
        Q, QD, U = np.tile(q, (BATCH, 1)), np.tile(qd, (BATCH, 1)), np.zeros((BATCH, tree.n))
        out = np.empty_like(Q)
        row["rodgen_batch_per_state_s"] = autorange(lambda: sysm.forward_dynamics(Q, QD, U, out=out)) / BATCH
        row["forward"] = sysm.forward
        harness = CHarness(eqs, np.concatenate([q, qd]), forward="cholesky")
        row["rodgen_c_s"] = harness.forward_dynamics_seconds()
        harness.close()
        if sysm.forward == "aba":       # the generated <model>_forward_dynamics, articulated-body algorithm
            harness = CHarness(eqs, np.concatenate([q, qd]), forward="aba")
            row["rodgen_c_aba_s"] = harness.forward_dynamics_seconds()
            harness.close()
        if have_pin:
            pm = pinocchio_model(tree)
            data = pm.createData()
            s, sd = tree.T @ q, tree.T @ qd
            tau = np.zeros(tree.n)
            row["pinocchio_aba_python_s"] = autorange(lambda: pin.aba(pm, data, s, sd, tau))
            row["ratio_rodgen_python_over_pinocchio"] = row["rodgen_python_s"] / row["pinocchio_aba_python_s"]
        if model.name in _PYDY:
            rhs, _ = _PYDY[model.name]
            x = np.concatenate([tree.T @ q, tree.T @ qd])
            r, pp = np.zeros(tree.n), np.array([9.81])
            row["pydy_rhs_python_s"] = autorange(lambda: rhs(x, 0.0, r, pp))
        rows.append(row)
        print(f"forward n={n:2d}: rodgen python {row['rodgen_python_s'] * 1e6:.2f} µs, kernel "
              f"{row['rodgen_kernel_s'] * 1e6:.2f} µs, batch {row['rodgen_batch_per_state_s'] * 1e6:.3f} µs/state, "
              f"C {row['rodgen_c_s'] * 1e6:.3f} µs (ABA {row.get('rodgen_c_aba_s', float('nan')) * 1e6:.3f} µs)"
              + (f"; pinocchio aba {row['pinocchio_aba_python_s'] * 1e6:.2f} µs" if have_pin else "")
              + (f"; PyDy rhs {row['pydy_rhs_python_s'] * 1e6:.2f} µs" if "pydy_rhs_python_s" in row else ""),
              flush=True)
    return {"rows": rows, "batch": BATCH, "pinocchio": missing("pinocchio"),
            "note": "median of 7 runs; python = one state per call through the public API (the default build: "
                    "articulated-body forward dynamics where it applies); kernel = the compiled module's batch "
                    "function called directly on one row; C = a C main() calling the generated "
                    "<model>_forward_dynamics built with CodegenOptions(forward='cholesky') (mass matrix + "
                    "Cholesky); C ABA = the same with forward='aba' (the default for vl_chain)"}


# -- simulation ----------------------------------------------------------------------------------
def _rk4_python(f: Callable[[np.ndarray], np.ndarray], y: np.ndarray, steps: int, dt: float) -> np.ndarray:
    for _ in range(steps):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def section_simulate(build_dir: str, repeat: int) -> dict[str, Any]:
    from scipy.integrate import solve_ivp
    steps = int(round(SIM_T / SIM_DT))
    out: dict[str, Any] = {"t_end": SIM_T, "dt": SIM_DT, "steps": steps, "integrator": "RK4 (classical)",
                           "inputs": "zero (passive motion under gravity)", "models": {}}
    for model in (vl_chain(5), rodgen.load(EXO)):
        tree = NumericTree(model)
        eqs = rodgen.derive(model, method="recursive")
        sysm = rodgen_build(eqs, build_dir=build_dir)
        q0 = np.asarray(sysm.initial_state())[:tree.n]
        y0 = np.concatenate([q0, np.zeros(tree.n)])
        res: dict[str, Any] = {"nq": tree.n}
        res["forward"] = sysm.forward
        harness = CHarness(eqs, y0, forward="cholesky")
        t_c, y_c = harness.rk4(steps, repeat=repeat)
        res["rodgen_c_rk4_s"] = t_c
        harness.close()
        if sysm.forward == "aba":       # the generated rhs with the articulated-body forward dynamics
            harness = CHarness(eqs, y0, forward="aba")
            t_a, y_a = harness.rk4(steps, repeat=repeat)
            res["rodgen_c_aba_rk4_s"] = t_a
            res["max_state_difference_aba_vs_cholesky"] = float(np.abs(y_a - y_c).max())
            harness.close()
        s_c = np.concatenate([tree.T @ y_c[:tree.n], tree.T @ y_c[tree.n:]])
        if hasattr(sysm, "simulate"):
            runs = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                sysm.simulate(y0, SIM_T, dt=SIM_DT, method="rk4")
                runs.append(time.perf_counter() - t0)
            res["rodgen_simulate_s"] = statistics.median(runs)
        else:
            res["rodgen_simulate_s"] = None
            res["rodgen_simulate_note"] = "the compiled model has no simulate() yet; rodgen_c_rk4_s is the " \
                                          "generated rhs driven by an RK4 loop in C"
        rhs_fn = sysm.ode(u=np.zeros(len(eqs.u))) if len(eqs.u) else sysm.ode()
        t0 = time.perf_counter()
        solve_ivp(rhs_fn, (0, SIM_T), y0, method="RK45", rtol=1e-8, atol=1e-10)
        res["rodgen_solve_ivp_s"] = time.perf_counter() - t0
        s0 = np.concatenate([tree.T @ q0, np.zeros(tree.n)])
        if missing("mujoco") is None:
            import mujoco
            from mujoco import rollout
            mj = mujoco.MjModel.from_xml_string(mjcf(tree, model.name, SIM_DT))
            md = mujoco.MjData(mj)
            md.qpos[:], md.qvel[:] = s0[:tree.n], s0[tree.n:]
            spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
            init = np.empty(mujoco.mj_stateSize(mj, spec))
            mujoco.mj_getState(mj, md, init, spec)
            ctrl = np.zeros((1, steps, mj.nu))
            runs, final = [], None
            for _ in range(repeat):
                t0 = time.perf_counter()
                st, _ = rollout.rollout(mj, md, init[None, :], ctrl, nstep=steps)
                runs.append(time.perf_counter() - t0)
                final = st[0, -1]
            res["mujoco_rollout_s"] = statistics.median(runs)
            qpos = final[1:1 + tree.n]
            qvel = final[1 + tree.n:1 + 2 * tree.n]
            res["max_state_difference_rodgen_vs_mujoco"] = float(np.abs(np.concatenate([qpos, qvel]) - s_c).max())
            res["ratio_mujoco_over_rodgen_c"] = res["mujoco_rollout_s"] / t_c
        if missing("pinocchio") is None:
            import pinocchio as pin
            pm = pinocchio_model(tree)
            data = pm.createData()
            tau = np.zeros(tree.n)
            nq = tree.n

            def f_pin(t: float, y: np.ndarray) -> np.ndarray:
                return np.concatenate([y[nq:], pin.aba(pm, data, y[:nq], y[nq:], tau)])
            t0 = time.perf_counter()
            solve_ivp(f_pin, (0, SIM_T), s0, method="RK45", rtol=1e-8, atol=1e-10)
            res["pinocchio_solve_ivp_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            _rk4_python(lambda y: f_pin(0.0, y), s0, steps, SIM_DT)
            res["pinocchio_python_rk4_s"] = time.perf_counter() - t0
        if model.name in _PYDY or (missing("pydy") is None and model.name not in _PYDY):
            if model.name not in _PYDY:
                with tempfile.TemporaryDirectory(prefix="pydy_bench_") as d:
                    _PYDY[model.name] = (pydy_build(tree, tmp_dir=d)[0], tree)
            rhs, _ = _PYDY[model.name]
            r, pp = np.zeros(tree.n), np.array([9.81])
            t0 = time.perf_counter()
            solve_ivp(lambda t, y: rhs(y, t, r, pp), (0, SIM_T), s0, method="RK45", rtol=1e-8, atol=1e-10)
            res["pydy_solve_ivp_s"] = time.perf_counter() - t0
        out["models"][model.name] = res
        print(f"simulate {model.name}: " + ", ".join(f"{k} {v:.4g}" for k, v in res.items()
                                                      if isinstance(v, float)), flush=True)
    return out


# -- operation counts ----------------------------------------------------------------------------
def seeds_formulas(d: int) -> dict[str, float]:
    """SEEDS §4.3 (Kuzmin) operation counts for an n-DOF serial chain, n = d (signs as read there)."""
    return {"N_K": 194.0 if d == 1 else 366.0 * d - 217.0,
            "N_M": 11 / 3 * d ** 3 + 9 / 2 * d ** 2 - d / 6,
            "N_G": 11 / 2 * d ** 2 + 7 / 2 * d,
            "N_V": 12.0 * d ** 4 + 12 * d ** 3 + 18 * d ** 2 + 55 * d}


def cholesky_ops(d: int) -> int:
    """Additions, multiplications, divisions and square roots of a dense Cholesky factorisation of a
    d×d matrix and the two triangular solves (what forward_dynamics does after evaluating M and B u - bias)."""
    factor = sum(2 * k + (d - 1 - k) * (2 * k + 1) + 1 for k in range(d))   # dot products, divisions, sqrt
    solves = 2 * d * d
    return factor + solves


def section_opcount(ns: list[int]) -> dict[str, Any]:
    rows = []
    for n in ns:
        eqs = rodgen.derive(vl_chain(n), method="recursive")
        spec = lower(eqs, options=CodegenOptions(forward="cholesky", jacobian=False))
        straight = spec.routine("mass_force").ops
        generated = lower(eqs, options=CodegenOptions(jacobian=False))     # the default: what build() emits
        d = 2 * n
        fd = forward_dynamics(vl_chain(n))
        temps, outs = straight_line(fd.assignments, list(fd.qdd))        # the code stage's CSE and count
        aba = sum(count_ops(x) for _, x in temps) + sum(count_ops(x) for x in outs)
        row = {"n": n, "dof": d, "straight_line_ops": straight, "cholesky_ops": cholesky_ops(d),
               "total_ops": (straight or 0) + cholesky_ops(d), "aba_ops": aba, "seeds_dof": d,
               "generated_forward": generated.forward, "generated_ops": generated.forward_ops,
               **seeds_formulas(d)}
        row["seeds_total_without_S"] = row["N_K"] + row["N_M"] + row["N_G"] + row["N_V"]
        rows.append(row)
        print(f"opcount n={n:2d}: straight-line {straight}, Cholesky {cholesky_ops(d)}, ABA {aba}, "
              f"SEEDS N_M+N_G+N_V+N_K {row['seeds_total_without_S']:.0f}", flush=True)

    def slope(key: str) -> float:
        a, b = rows[-2], rows[-1]
        return math.log(b[key] / a[key]) / math.log(b["n"] / a["n"])
    growth = ({k: slope(k) for k in ("straight_line_ops", "total_ops", "aba_ops", "generated_ops")}
              if len(rows) >= 2 else {})
    return {"rows": rows, "growth_exponent_last_two": growth,
            "note": "generated = ModelSpec.forward_ops of the default code generation (the articulated-body "
                    "algorithm for vl_chain); "
                    "straight-line = the generated M and B u - bias (count_ops after CSE, as printed in the C); "
                    "the Cholesky factorisation and solves run as loops and are counted analytically; "
                    "aba = rodgen.symbolic.recursive.forward_dynamics (articulated-body algorithm) after the "
                    "same CSE and with the same count"}


# -- summary -------------------------------------------------------------------------------------
def load(name: str) -> Any:
    import json
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def section_summary() -> dict[str, Any]:
    build, fwd, sim, ops = (load(k) for k in ("build", "forward", "simulate", "opcount"))
    targets: list[dict[str, Any]] = []

    def target(name: str, value: Any, limit: Any, met: bool, detail: str) -> None:
        targets.append({"target": name, "value": value, "limit": limit, "met": bool(met), "detail": detail})

    if build:
        by_n = {r["n"]: r for r in build["rows"]}
        for n, lim in ((5, 1.0), (12, 1.5), (20, 15.0)):
            if n in by_n:
                v = by_n[n]["rodgen_total_s"]
                target(f"derive+generate+compile vl_chain({n}) ≤ {lim:g} s", round(v, 2), lim, v <= lim,
                       f"{v:.2f} s, {'within' if v <= lim else 'over'} by {abs(lim - v) / lim * 100:.0f}%")
    if fwd:
        by_n = {r["n"]: r for r in fwd["rows"]}
        for n in (5, 12):
            r = by_n.get(n)
            if r and "pinocchio_aba_python_s" in r:
                ratio = r["rodgen_python_s"] / r["pinocchio_aba_python_s"]
                target(f"forward dynamics from Python ≤ 0.5 × Pinocchio aba, n = {n}", round(ratio, 2), 0.5,
                       ratio <= 0.5,
                       f"{r['rodgen_python_s'] * 1e6:.2f} µs vs {r['pinocchio_aba_python_s'] * 1e6:.2f} µs "
                       f"(ratio {ratio:.2f}; the compiled kernel alone {r['rodgen_kernel_s'] * 1e6:.2f} µs, "
                       f"ratio {r['rodgen_kernel_s'] / r['pinocchio_aba_python_s']:.2f}; in C "
                       f"{r.get('rodgen_c_aba_s', r['rodgen_c_s']) * 1e6:.2f} µs)")
    if sim:
        r = sim["models"].get("vl_chain5", {})
        if "mujoco_rollout_s" in r:
            mj = r["mujoco_rollout_s"]
            # the user's path is the runtime's compiled simulate(); without it, the generated rhs in a C loop
            main_key = "rodgen_simulate_s" if r.get("rodgen_simulate_s") else "rodgen_c_rk4_s"
            speedup = mj / r[main_key]
            parts = [f"MuJoCo {mj * 1e3:.1f} ms"]
            for key, lab in (("rodgen_simulate_s", "rodgen simulate()"),
                             ("rodgen_c_rk4_s", "generated rhs in a C loop"),
                             ("rodgen_c_aba_rk4_s", "articulated-body forward dynamics in a C loop")):
                if r.get(key):
                    parts.append(f"{lab} {r[key] * 1e3:.1f} ms ({mj / r[key]:.1f}× faster)")
            target("10 s at 1 kHz RK4 of vl_chain(5) ≥ 5× faster than MuJoCo's C rollout", round(speedup, 2), 5.0,
                   speedup >= 5.0, "; ".join(parts))
    if ops and ops.get("growth_exponent_last_two"):
        g = ops["growth_exponent_last_two"]
        key = "generated_ops" if "generated_ops" in g else "total_ops"
        target("operation count of generated forward dynamics grows ≤ n²", round(g[key], 2), 2.0,
               g[key] <= 2.05,
               f"local exponent between the two largest n: the generated forward dynamics "
               f"({ops['rows'][-1].get('generated_forward', 'cholesky')}) {g[key]:.2f}; for comparison the "
               f"mass-matrix path: straight-line code (M, B u − bias) {g['straight_line_ops']:.2f}, with the dense "
               f"Cholesky solve {g['total_ops']:.2f}")
    warm = load("warm")
    if warm:
        v = warm["warm_s"]
        target(f"warm rodgen.build of {warm['model']} in a fresh process (import included) < "
               f"{warm['target_s']:g} s", round(v, 3), warm["target_s"], v < warm["target_s"],
               f"{v:.3f} s warm (median; SymPy imported: {warm['warm_imports_sympy']}) beside {warm['cold_s']:.2f} s "
               f"cold (benchmarks/bench_warm.py)")
    md = summary_markdown(build, fwd, sim, ops, targets)
    (RESULTS / "summary.md").write_text(md)
    readme = HERE / "README.md"
    marker = "<!-- summary -->"
    if readme.exists() and marker in readme.read_text():
        head = readme.read_text().split(marker)[0]
        readme.write_text(f"{head}{marker}\n\n{md}")
    print(md)
    plot(build, fwd, sim, ops)
    return {"targets": targets}


def summary_markdown(build: Any, fwd: Any, sim: Any, ops: Any, targets: list[dict[str, Any]]) -> str:
    m = machine()
    lines = [f"Measured on {m['cpu']} ({m['cores']} cores), {m['compiler']}, Python {m['versions']['python']}; "
             "medians of repeated runs; anchors measured in the same run.", ""]
    if build:
        lines += ["**Derive + generate + compile, vl_chain(n) (2n coordinates), seconds**", "",
                  "| n | rodgen total | derive | generate | compile | C size (kB) | RHS Jacobian on first use "
                  "| PyDy (Kane + Cython) | PyDy / rodgen |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in build["rows"]:
            py = f"{r['pydy_total_s']:.2f}" if "pydy_total_s" in r else "–"
            ratio = f"{r['ratio_pydy_over_rodgen']:.1f}×" if "ratio_pydy_over_rodgen" in r else "–"
            jac = r.get("rodgen_jacobian_first_use_s")
            lines.append(f"| {r['n']} | {r['rodgen_total_s']:.2f} | {r['rodgen_derive_s']:.2f} | "
                         f"{r['rodgen_generate_s']:.2f} | {r['rodgen_compile_s']:.2f} | "
                         f"{r['rodgen_c_bytes'] / 1e3:.0f} | {'–' if jac is None else f'{jac:.2f}'} | "
                         f"{py} | {ratio} |")
        rt = build.get("runtime")
        if rt and rt.get("compile_s") is not None:
            lines += ["", f"rodgen's runtime extension (the Python binding of every model) is compiled once per "
                          f"rodgen version and machine, {rt['compile_s']:.1f} s, and is not part of these times."]
        lines += ["", "The times are those of `rodgen.build(model)`: up to 12 coordinates it compiles the model "
                      "without its exact RHS Jacobian, which is generated and compiled (as a second, cached "
                      "library) on the first call of `rhs_jacobian` or `ode().jac`; that first use is the "
                      "Jacobian column (`CodegenOptions(jacobian=True)` compiles it with the model)."]
        lines.append("")
    if fwd:
        lines += ["**Forward dynamics, one state, µs per call**", "",
                  "| n | rodgen from Python | rodgen kernel (batch function, one row) | rodgen batch, per state | "
                  "rodgen in C, M + Cholesky | rodgen in C, ABA | Pinocchio aba (Python) | PyDy rhs (Python) |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in fwd["rows"]:
            pin_t = f"{r['pinocchio_aba_python_s'] * 1e6:.2f}" if "pinocchio_aba_python_s" in r else "–"
            pyd = f"{r['pydy_rhs_python_s'] * 1e6:.2f}" if "pydy_rhs_python_s" in r else "–"
            lines.append(f"| {r['n']} | {r['rodgen_python_s'] * 1e6:.2f} | {r['rodgen_kernel_s'] * 1e6:.2f} | "
                         f"{r['rodgen_batch_per_state_s'] * 1e6:.3f} | {r['rodgen_c_s'] * 1e6:.3f} | "
                         f"{r['rodgen_c_aba_s'] * 1e6 if 'rodgen_c_aba_s' in r else float('nan'):.3f} | "
                         f"{pin_t} | {pyd} |")
        lines.append("")
    if sim:
        lines += [f"**{sim['t_end']:g} s of motion at {1 / sim['dt']:g} Hz, seconds (real-time factor)**", "",
                  "| model | rodgen C, RK4 | rodgen ABA C, RK4 | MuJoCo rollout, RK4 | rodgen solve_ivp | "
                  "Pinocchio solve_ivp | Pinocchio RK4 loop in Python | PyDy solve_ivp |",
                  "|---|---|---|---|---|---|---|---|"]

        def cell(v: Any) -> str:
            return "–" if v is None else f"{v:.3f} ({sim['t_end'] / v:.0f}×)"
        with_simulate = any(r.get("rodgen_simulate_s") for r in sim["models"].values())
        if with_simulate:
            lines[-2] = lines[-2].replace("| MuJoCo rollout", "| rodgen simulate() | MuJoCo rollout")
            lines[-1] += "---|"
        for name, r in sim["models"].items():
            sim_cell = f"{cell(r.get('rodgen_simulate_s'))} | " if with_simulate else ""
            lines.append(f"| {name} | {cell(r.get('rodgen_c_rk4_s'))} | {cell(r.get('rodgen_c_aba_rk4_s'))} | "
                         f"{sim_cell}"
                         f"{cell(r.get('mujoco_rollout_s'))} | "
                         f"{cell(r.get('rodgen_solve_ivp_s'))} | {cell(r.get('pinocchio_solve_ivp_s'))} | "
                         f"{cell(r.get('pinocchio_python_rk4_s'))} | {cell(r.get('pydy_solve_ivp_s'))} |")
        lines += ["", "rodgen C: the generated `<model>_rhs` built with `forward='cholesky'` (mass matrix + "
                  "Cholesky) in an RK4 loop in C; rodgen ABA C: the generated `<model>_rhs` with the "
                  "articulated-body forward dynamics (the default) in the same loop; rodgen simulate(): the "
                  "runtime's compiled RK4 (default build), storing every step. "
                  "solve_ivp: RK45, rtol 1e-8, atol 1e-10. Inputs zero (passive motion). The final states "
                  "of rodgen and MuJoCo agree to "
                  + ", ".join(f"{r.get('max_state_difference_rodgen_vs_mujoco', float('nan')):.0e} ({nm})"
                              for nm, r in sim["models"].items()) + ".", ""]
    if ops:
        lines += ["**Operations of the generated forward dynamics (vl_chain(n), 2n DOF) beside SEEDS §4.3**", "",
                  "| n | DOF | generated (default) | straight-line (M, B u − bias) | + Cholesky & solves | "
                  "articulated-body | SEEDS N_M (n³) | SEEDS N_V (n⁴) |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in ops["rows"]:
            gen = f"{r['generated_ops']} ({r['generated_forward']})" if "generated_ops" in r else "–"
            lines.append(f"| {r['n']} | {r['dof']} | {gen} | {r['straight_line_ops']} | {r['total_ops']} | "
                         f"{r.get('aba_ops', '–')} | {r['N_M']:.0f} | {r['N_V']:.0f} |")
        lines.append("")
    if targets:
        lines += ["**Targets**", "", "| target | met | measured |", "|---|---|---|"]
        for t in targets:
            lines.append(f"| {t['target']} | {'yes' if t['met'] else 'no'} | {t['detail']} |")
        lines.append("")
    return "\n".join(lines)


def plot(build: Any, fwd: Any, sim: Any, ops: Any) -> None:
    if missing("matplotlib"):
        print("matplotlib missing: no plot")
        return
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    if build:
        rs = build["rows"]
        n = [r["n"] for r in rs]
        a = ax[0, 0]
        a.loglog(n, [r["rodgen_total_s"] for r in rs], "o-", label="rodgen total")
        for key, lab in (("rodgen_derive_s", "derive"), ("rodgen_generate_s", "generate"),
                         ("rodgen_compile_s", "compile")):
            a.loglog(n, [r[key] for r in rs], ".--", label=f"rodgen {lab}")
        py = [(r["n"], r["pydy_total_s"]) for r in rs if "pydy_total_s" in r]
        if py:
            a.loglog(*zip(*py), "s-", label="PyDy Kane + Cython")
        a.set(xlabel="links n", ylabel="seconds", title="derive + generate + compile")
        a.legend(fontsize=8)
    if fwd:
        rs = fwd["rows"]
        n = [r["n"] for r in rs]
        a = ax[0, 1]
        for key, lab in (("rodgen_python_s", "rodgen, Python call"), ("rodgen_kernel_s", "rodgen kernel"),
                         ("rodgen_batch_per_state_s", "rodgen batch / state"), ("rodgen_c_s", "rodgen in C"),
                         ("rodgen_c_aba_s", "rodgen ABA in C"),
                         ("pinocchio_aba_python_s", "Pinocchio aba (Python)"), ("pydy_rhs_python_s", "PyDy rhs")):
            pts = [(r["n"], r[key] * 1e6) for r in rs if key in r]
            if pts:
                a.loglog(*zip(*pts), "o-", label=lab)
        a.set(xlabel="links n", ylabel="µs per call", title="forward dynamics")
        a.legend(fontsize=8)
    if ops:
        rs = ops["rows"]
        d = [r["dof"] for r in rs]
        a = ax[1, 0]
        a.loglog(d, [r["straight_line_ops"] for r in rs], "o-", label="rodgen straight-line")
        a.loglog(d, [r["total_ops"] for r in rs], "o-", label="rodgen + Cholesky")
        if all("aba_ops" in r for r in rs):
            a.loglog(d, [r["aba_ops"] for r in rs], "o-", label="rodgen articulated-body")
        a.loglog(d, [r["N_M"] for r in rs], "--", label="SEEDS N_M")
        a.loglog(d, [r["N_V"] for r in rs], "--", label="SEEDS N_V")
        a.set(xlabel="degrees of freedom", ylabel="operations", title="forward dynamics operation count")
        a.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        a.set_xticks(d, [str(x) for x in d])
        a.legend(fontsize=8)
    if sim:
        a = ax[1, 1]
        keys = [("rodgen_c_rk4_s", "rodgen C"), ("rodgen_c_aba_rk4_s", "rodgen ABA C"), ("mujoco_rollout_s", "MuJoCo"),
                ("rodgen_solve_ivp_s", "rodgen ivp"),
                ("pinocchio_solve_ivp_s", "Pin ivp"), ("pydy_solve_ivp_s", "PyDy ivp")]
        names = list(sim["models"])
        w = 0.8 / len(keys)
        for j, (k, lab) in enumerate(keys):
            vals = [sim["models"][m].get(k) or np.nan for m in names]
            a.bar(np.arange(len(names)) + j * w, vals, w, label=lab)
        a.set_yscale("log")
        a.set_xticks(np.arange(len(names)) + 0.4 - w / 2, names)
        a.set(ylabel="seconds for 10 s of motion", title="simulation")
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "benchmarks.png", dpi=110)
    print(f"wrote {RESULTS / 'benchmarks.png'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=NS, help="chain sizes (default %(default)s)")
    ap.add_argument("--pydy-max-n", type=int, default=8, help="largest n PyDy derives (its cost grows like n⁴)")
    ap.add_argument("--only", nargs="+", choices=["build", "forward", "simulate", "opcount", "summary"])
    ap.add_argument("--repeat", type=int, default=5, help="repeats of the simulations")
    ap.add_argument("--build-repeat", type=int, default=3, help="cold rodgen builds per n (median)")
    args = ap.parse_args(argv)
    sections = args.only or ["build", "forward", "simulate", "opcount", "summary"]
    build_dir = tempfile.mkdtemp(prefix="rodgen_bench_build_")
    for missing_mod in ("pinocchio", "mujoco", "pydy"):
        msg = missing(missing_mod)
        if msg:
            print(f"note: {msg}; its columns are skipped")
    if "build" in sections:
        write_json("build", section_build(args.n, args.pydy_max_n, args.build_repeat))
    if "forward" in sections:
        write_json("forward", section_forward(args.n, build_dir))
    if "simulate" in sections:
        write_json("simulate", section_simulate(build_dir, args.repeat))
    if "opcount" in sections:
        write_json("opcount", section_opcount(args.n))
    if "summary" in sections:
        write_json("summary", section_summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
