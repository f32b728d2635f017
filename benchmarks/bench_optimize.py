"""Trajectory optimisation: build and solve times of rodgen.optimize, and the same NLP in CasADi.

The swing-up of the double pendulum (examples/double_pendulum.yaml, both joints actuated, |tau| <= 20 N m):
from hanging to upright in 2 s with the least integral of tau_upper^2 + tau_lower^2, on 51 trapezoidal nodes.
rodgen: the model's build and the problem's compile in a fresh build folder (cold), then again (warm: both
from the cache), and IPOPT's solve with the limited-memory and the exact Hessian. The anchor is the same
transcription written in CasADi (SX expressions of the textbook M, h, G of the double pendulum, checked
against the compiled model's rhs), solved by the same IPOPT (CasADi's wheel) with the same options (rodgen's
``limited_memory_aug_solver=extended`` included); the
objectives must agree to 1e-6 relative. Each solve time is a median of ``--repeat`` solves.

Kelly's five-link biped (examples/five_link_biped.py: one step of 0.7 s and 0.5 m, least torque squared,
25 Hermite-Simpson nodes, the heel strike as boundary constraints): the model's build, the problem's compile
and the solve from Kelly's guess, cold (a fresh build folder) and warm (the same folder again: both from the
cache); the anchor of its optimum is tests/test_optimize_biped.py (the same NLP in CasADi). The same gait on
the floating model (examples/five_link_biped_free.yaml), one phase of ``optimize.MultiPhase`` with the heel
strike by the model's own impact map, likewise; its optimum must equal the pinned model's to 1e-7.

Writes ``results/optimize.json``.

    python benchmarks/bench_optimize.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402
from rodgen import optimize  # noqa: E402

from common import write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NODES, T, TAU = 51, 2.0, 20.0
OPTIONS = {"tol": 1e-8}
#: the option rodgen's collocation gives IPOPT with the limited-memory Hessian (docs/optimize.md), given CasADi too
LOW_RANK = {"limited-memory": {"limited_memory_aug_solver": "extended"}}


def problem(model: object, hessian: str) -> optimize.Problem:
    return optimize.Problem(model, nodes=NODES, duration=T, method="trapezoidal", hessian=hessian,
                            objective="tau_upper**2 + tau_lower**2",
                            bounds={"tau_upper": (-TAU, TAU), "tau_lower": (-TAU, TAU)},
                            initial={"th_upper": -math.pi / 2, "th_lower": 0, "th_upper_dot": 0, "th_lower_dot": 0},
                            final={"th_upper": math.pi / 2, "th_lower": 0, "th_upper_dot": 0, "th_lower_dot": 0})


def casadi_solve(model: object, hessian: str, repeat: int) -> dict:
    import casadi as ca
    p = model.parameters
    g, m1, m2, L1, L2 = p["g"], p["m1"], p["m2"], p["L1"], p["L2"]
    c1, c2, I1, I2 = L1 / 2, L2 / 2, m1 * L1**2 / 12, m2 * L2**2 / 12

    def f(y: object, u: object) -> object:
        t1, t2, d1, d2 = y[0], y[1], y[2], y[3]
        M11 = I1 + I2 + m1 * c1**2 + m2 * (L1**2 + c2**2 + 2 * L1 * c2 * ca.cos(t2))
        M12 = I2 + m2 * (c2**2 + L1 * c2 * ca.cos(t2))
        M22 = I2 + m2 * c2**2
        h1 = -m2 * L1 * c2 * ca.sin(t2) * (2 * d1 * d2 + d2**2)
        h2 = m2 * L1 * c2 * ca.sin(t2) * d1**2
        G1 = m1 * g * c1 * ca.cos(t1) + m2 * g * (L1 * ca.cos(t1) + c2 * ca.cos(t1 + t2))
        G2 = m2 * g * c2 * ca.cos(t1 + t2)
        r1, r2 = u[0] - h1 - G1, u[1] - h2 - G2
        det = M11 * M22 - M12**2
        return ca.vertcat(d1, d2, (M22 * r1 - M12 * r2) / det, (M11 * r2 - M12 * r1) / det)

    # the anchor's dynamics are the compiled model's
    y0, u0 = np.array([0.3, -0.7, 1.1, 0.4]), np.array([2.0, -1.0])
    ys, us = ca.SX.sym("y", 4), ca.SX.sym("u", 2)
    f_num = np.array(ca.Function("f", [ys, us], [f(ys, us)])(y0, u0)).ravel()
    assert np.allclose(f_num, model.rhs(0.0, y0, u0), rtol=1e-12, atol=1e-12)
    h = T / (NODES - 1)
    Y, U = ca.SX.sym("Y", 4, NODES), ca.SX.sym("U", 2, NODES)
    F = [f(Y[:, k], U[:, k]) for k in range(NODES)]
    defects = [Y[:, k + 1] - Y[:, k] - h / 2 * (F[k] + F[k + 1]) for k in range(NODES - 1)]
    L = [ca.sumsqr(U[:, k]) for k in range(NODES)]
    J = h / 2 * sum(L[k] + L[k + 1] for k in range(NODES - 1))
    # the variables point by point, as rodgen orders them
    x = ca.vec(ca.vertcat(Y, U))
    build = time.perf_counter()
    solver = ca.nlpsol("s", "ipopt", {"x": x, "f": J, "g": ca.vertcat(*defects)},
                       {"ipopt": {**OPTIONS, "print_level": 0, "sb": "yes", "hessian_approximation": hessian,
                                  **LOW_RANK.get(hessian, {})},
                        "print_time": False})
    build = time.perf_counter() - build
    lo, hi = np.full((6, NODES), -np.inf), np.full((6, NODES), np.inf)
    lo[4:], hi[4:] = -TAU, TAU
    start, end = [-math.pi / 2, 0, 0, 0], [math.pi / 2, 0, 0, 0]
    lo[:4, 0] = hi[:4, 0] = start
    lo[:4, -1] = hi[:4, -1] = end
    guess = np.zeros((6, NODES))
    for i in range(4):
        guess[i] = np.linspace(start[i], end[i], NODES)
    times, sol = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        sol = solver(x0=guess.T.ravel(), lbx=lo.T.ravel(), ubx=hi.T.ravel(), lbg=0, ubg=0)
        times.append(time.perf_counter() - t0)
    stats = solver.stats()
    return {"objective": float(sol["f"]), "iterations": int(stats["iter_count"]), "status": stats["return_status"],
            "solve_seconds": statistics.median(times), "build_seconds": build}


def biped(repeat: int, free: bool = False) -> dict:
    """Kelly's five-link biped: build + compile + solve, cold and warm (the median of ``repeat`` warm runs);
    ``free``: the floating model, the heel strike by its own impact map (``optimize.MultiPhase``)."""
    sys.path.insert(0, str(ROOT / "examples"))
    import five_link_biped as flb
    out: dict = {"nodes": 25, "method": "hermite-simpson"}
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for _ in range(1 + repeat):
            t0 = time.perf_counter()
            if free:
                nlp = flb.multiphase(flb.build_free(tmp), 25).compile(build_dir=tmp)
                res = nlp.solve(flb.free_guess(nlp), options={"tol": 1e-8})
            else:
                nlp = optimize.compile_problem(flb.problem(flb.build(tmp), 25), build_dir=tmp)
                res = nlp.solve(flb.guess(nlp), options={"tol": 1e-8})
            runs.append((time.perf_counter() - t0, res))
            assert res.success, res.message
        warm = statistics.median(t for t, _ in runs[1:])
        res = runs[-1][1]
        out.update({"cold_seconds_with_build": runs[0][0], "warm_seconds_with_build": warm,
                    "solve_seconds": res.solve_seconds, "objective": res.objective, "iterations": res.iterations})
        print(f"five-link biped{' (floating, MultiPhase)' if free else ''}: {runs[0][0]:.2f} s cold, {warm:.2f} s "
              f"warm with the build; solve {res.solve_seconds * 1e3:.0f} ms, {res.iterations} iterations, "
              f"J = {res.objective:.10g}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    out: dict = {"problem": {"model": "double_pendulum", "nodes": NODES, "duration": T, "method": "trapezoidal",
                             "tau_bound": TAU, "options": OPTIONS}, "rodgen": {}, "casadi": {}}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        model = rodgen.build(rodgen.load(ROOT / "examples" / "double_pendulum.yaml"), build_dir=tmp)
        model.jacobian_model()
        out["rodgen"]["model_build_cold_seconds"] = time.perf_counter() - t0
        for hessian in ("limited-memory", "exact"):
            t0 = time.perf_counter()
            nlp = optimize.compile_problem(problem(model, hessian), build_dir=tmp)
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            nlp = optimize.compile_problem(problem(model, hessian), build_dir=tmp)
            warm = time.perf_counter() - t0
            times, res = [], None
            for _ in range(args.repeat):
                x0 = nlp.guess()
                t0 = time.perf_counter()
                res = nlp.solve(x0, options=OPTIONS)
                times.append(time.perf_counter() - t0)
            assert res is not None and res.success, res.message if res else "no run"
            out["rodgen"][hessian] = {"problem_compile_cold_seconds": cold, "problem_compile_warm_seconds": warm,
                                      "solve_seconds": statistics.median(times), "objective": res.objective,
                                      "iterations": res.iterations, "simulate_check": res.simulate_check()}
            print(f"rodgen {hessian:15s} compile {cold:6.2f} s cold, {warm:5.2f} s warm; solve "
                  f"{statistics.median(times) * 1e3:8.1f} ms, {res.iterations} iterations, J = {res.objective:.10g}")
            try:
                ref = casadi_solve(model, hessian, args.repeat)
            except ImportError:
                print("casadi is not installed: no anchor")
                continue
            out["casadi"][hessian] = ref
            rel = abs(ref["objective"] - res.objective) / abs(ref["objective"])
            out["rodgen"][hessian]["objective_rel_diff_casadi"] = rel
            out["rodgen"][hessian]["solve_ratio_casadi_over_rodgen"] = ref["solve_seconds"] / statistics.median(times)
            print(f"casadi {hessian:15s} build {ref['build_seconds']:6.2f} s; solve "
                  f"{ref['solve_seconds'] * 1e3:8.1f} ms, {ref['iterations']} iterations, J = {ref['objective']:.10g}"
                  f" (relative difference {rel:.1e})")
            assert rel < 1e-6, "rodgen and CasADi disagree on the optimum"
    out["five_link_biped"] = biped(args.repeat)
    out["five_link_biped_free"] = free = biped(args.repeat, free=True)
    free["objective_rel_diff_pinned"] = abs(free["objective"] / out["five_link_biped"]["objective"] - 1)
    assert free["objective_rel_diff_pinned"] < 1e-7, "the generated impact map and Kelly's disagree"
    write_json("optimize", out)


if __name__ == "__main__":
    main()
