"""opty 1.5 on its human-gait problem against rodgen on the same model, mesh and objective.

The problem is opty's examples-gallery/advanced/plot_human_gait.py (gait2d's planar human driven by six
joint torques, 40 nodes of backward Euler over a free time step h in [0.001, 0.1] s, the least
h * sum of the squared torques, half a gait cycle with the legs swapped, the hip's average speed fixed,
opty's bounds) at the walking speed of --speed (1.2 m/s; opty's example runs at 3.0 m/s). rodgen states it
with examples/gait2d.yaml and examples/gait2d_walk.py. Two changes to opty's script make the NLPs the same:
the objective leaves out the first node's torques (backward Euler's quadrature, h * sum over nodes 1..N-1,
which rodgen's backward-euler method integrates), and both start from the same point (examples/gait2d_walk.py's
stride_guess: the hip gliding at the speed, the thighs swinging, no torques; opty's example starts from
zeros).

Imports (SymPy and the rodgen modules its stages import on first use, IMPORTS; opty and pygait2d) are not timed
on either side. Timed separately: the derivation (gait2d's Kane equations in SymPy / rodgen.derive of the model
file by the method rodgen.build uses, whose Equations the build then takes), the compilation (opty's code
generation and Cython build in Problem(); rodgen's model build with its RHS Jacobian in one library and only the
routines the collocation calls, CodegenOptions(jacobian=True, routines=rodgen.optimize.ROUTINES), and the
problem's compile, the derivation not counted, in a fresh build folder; the collocation driver's object file,
compiled once per machine like the runtime's extension, is built first and reported apart) and the solve (IPOPT
from the same start, tol 1e-8; median of --repeat solves, interleaved): opty and rodgen with the limited-memory
Hessian, and rodgen with hessian='differences' and 'forward-differences'. Beside wall times, CPU times (user +
system of the process and its finished children, the compilers; load disturbs them less). The optima are
compared by their objectives, and solvers are restarted from each other's optima. Starts: stride_guess, and the
optima on 20, 25, 30 and 35 nodes (limited-memory) interpolated onto the 40; the summary gives, per rodgen
solver, the starts from which it reaches opty's optimum (objectives within 1e-6) and the median of the total
ratios there (one start is one sample of two paths through a non-convex NLP).

Needs opty, cyipopt (Debian: coinor-libipopt-dev, liblapack-dev, libblas-dev, pkg-config) and gait2d's
source (github.com/csu-hmc/gait2d; --gait2d PATH, its pygait2d package needs symmeplot and pydy).

    python benchmarks/bench_opty_gait.py --gait2d /path/to/gait2d [--repeat 3] [--speed 1.2]
"""
from __future__ import annotations

import argparse
import importlib.util
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402
from rodgen import optimize  # noqa: E402
from rodgen.codegen import DEFAULT_METHOD, CodegenOptions  # noqa: E402

from common import write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NODES = 40
OPTIONS = {"tol": 1e-8, "max_iter": 3000}
#: the coarse meshes whose limited-memory optima, interpolated onto NODES, are the common starts
COARSE = (20, 25, 30, 35)
#: two solves reach the same optimum when their objectives are this close (relative)
SAME = 1e-6
#: rodgen's solves with a Hessian by differences (beside the limited-memory one, like opty's): key -> hessian=
DIFFERENCES = {"rodgen_differences": "differences", "rodgen_forward": "forward-differences"}


def _walk():
    spec = importlib.util.spec_from_file_location("gait2d_walk", ROOT / "examples" / "gait2d_walk.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: The modules rodgen's derivation, build and problem compile import on first use (rodgen imports its stages
#: lazily), SymPy's own imports on first use among them: imported before the clocks start, as opty's and
#: pygait2d's modules are (opty imports its code generation, SymPy's mechanics and cyipopt with its package).
IMPORTS = ("sympy", "sympy.tensor.tensor", "sympy.physics.units", "sympy.printing.c", "sympy.codegen.ast",
           "rodgen.model.validate", "rodgen.model.spatial_io", "rodgen.symbolic", "rodgen.symbolic.planar_tree",
           "rodgen.symbolic.forces", "rodgen.symbolic.constraints", "rodgen.symbolic.derivative",
           "rodgen.symbolic.rnea_derivatives", "rodgen.codegen.lower", "rodgen.codegen.render", "rodgen.toolchain.key",
           "rodgen.runtime", "rodgen.optimize.derive", "rodgen.optimize.render")


def cpu_seconds() -> float:
    """CPU time so far of this process and its finished children (the compilers): user + system."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def warm_imports() -> None:
    """Import :data:`IMPORTS` and load the runtime's extension module (compiled once per machine)."""
    for name in IMPORTS:
        importlib.import_module(name)
    from rodgen.toolchain import load_runtime
    load_runtime()


def opty_setup(speed: float, parallel: bool, values: dict):
    """opty's human-gait problem, as its example builds it; (derivation s, compilation s, problem, symbols)."""
    import sympy as sm
    from opty import Problem
    from pygait2d import derive
    from pygait2d.segment import time_symbol

    t0, c0 = time.perf_counter(), cpu_seconds()
    h = sm.symbols("h", real=True, positive=True)
    duration = (NODES - 1) * h
    symbolics = derive.derive_equations_of_motion()
    eom = symbolics.equations_of_motion
    delt = sm.Function("delt", real=True)(time_symbol)
    eom = eom.col_join(sm.Matrix([delt.diff(time_symbol) - 1]))
    derivation, derivation_cpu = time.perf_counter() - t0, cpu_seconds() - c0
    states = symbolics.states + [delt]
    qax, qay, qa, qb, qc, qd, qe, qf, qg = symbolics.coordinates
    uax, uay, ua, ub, uc, ud, ue, uf, ug = symbolics.speeds
    Fax, Fay, Ta, Tb, Tc, Td, Te, Tf, Tg = symbolics.specifieds
    par_map = {c: values["iF" if str(c) == "if" else str(c)] for c in symbolics.constants}
    traj_map = {Fax: np.zeros(NODES), Fay: np.zeros(NODES), Ta: np.zeros(NODES)}
    deg = np.deg2rad
    bounds = {h: (0.001, 0.1), delt: (0.0, 10.0), qax: (0.0, 10.0), qay: (0.5, 1.5), qa: tuple(deg((-60.0, 60.0))),
              uax: (0.0, 10.0), uay: (-10.0, 10.0)}
    bounds.update({k: (-deg(40.0), deg(40.0)) for k in [qb, qe]})
    bounds.update({k: (-deg(60.0), 0.0) for k in [qc, qf]})
    bounds.update({k: (-deg(30.0), deg(30.0)) for k in [qd, qg]})
    bounds.update({k: (-deg(400.0), deg(400.0)) for k in [ua, ub, uc, ud, ue, uf, ug]})
    bounds.update({k: (-100.0, 100.0) for k in [Tb, Tc, Td, Te, Tf, Tg]})
    instance = (delt.func(0 * h) - 0.0, qax.func(0 * h) - 0.0, qax.func(duration) - speed * delt.func(duration),
                qay.func(0 * h) - qay.func(duration), qa.func(0 * h) - qa.func(duration),
                qb.func(0 * h) - qe.func(duration), qc.func(0 * h) - qf.func(duration),
                qd.func(0 * h) - qg.func(duration), qe.func(0 * h) - qb.func(duration),
                qf.func(0 * h) - qc.func(duration), qg.func(0 * h) - qd.func(duration),
                uax.func(0 * h) - uax.func(duration), uay.func(0 * h) - uay.func(duration),
                ua.func(0 * h) - ua.func(duration), ub.func(0 * h) - ue.func(duration),
                uc.func(0 * h) - uf.func(duration), ud.func(0 * h) - ug.func(duration),
                ue.func(0 * h) - ub.func(duration), uf.func(0 * h) - uc.func(duration),
                ug.func(0 * h) - ud.func(duration))
    ns = len(states)

    def obj(free):
        T, hh = free[ns * NODES:-1].reshape(6, NODES), free[-1]
        return hh * np.sum(T[:, 1:] ** 2)

    def obj_grad(free):
        T, hh = free[ns * NODES:-1].reshape(6, NODES), free[-1]
        grad = np.zeros_like(free)
        g = 2.0 * hh * T
        g[:, 0] = 0.0
        grad[ns * NODES:-1] = g.ravel()
        grad[-1] = np.sum(T[:, 1:] ** 2)
        return grad

    t0, c0 = time.perf_counter(), cpu_seconds()
    prob = Problem(obj, obj_grad, eom, states, NODES, h, known_parameter_map=par_map,
                   known_trajectory_map=traj_map, instance_constraints=instance, bounds=bounds,
                   time_symbol=time_symbol, parallel=parallel)
    compilation, compilation_cpu = time.perf_counter() - t0, cpu_seconds() - c0
    prob.add_option("tol", OPTIONS["tol"])
    prob.add_option("max_iter", OPTIONS["max_iter"])
    prob.add_option("print_level", 0)
    return (derivation, compilation), (derivation_cpu, compilation_cpu), prob, symbolics


def dynamics_difference(cm, symbolics, samples: int = 20) -> float:
    """The largest difference of rodgen's accelerations from gait2d's Kane equations at random states (the
    points deep in the ground included), relative to the largest acceleration."""
    import sympy as sm
    km = symbolics.kanes_method
    args = (symbolics.coordinates, symbolics.speeds, symbolics.specifieds, symbolics.constants)
    fM = sm.lambdify(args, km.mass_matrix_full, cse=True)
    fF = sm.lambdify(args, km.forcing_full, cse=True)
    p = dict(cm.parameters)
    c = np.array([p["iF" if str(k) == "if" else str(k)] for k in symbolics.constants])
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(samples):
        q, u, tau = rng.uniform(-0.5, 0.5, 9), rng.uniform(-1, 1, 9), rng.uniform(-50, 50, 6)
        q[1] = rng.uniform(-0.05, 1.0)
        ref = np.linalg.solve(np.asarray(fM(q, u, np.r_[0, 0, 0, tau], c), float),
                              np.asarray(fF(q, u, np.r_[0, 0, 0, tau], c), float).ravel())[9:]
        worst = max(worst, float(np.max(np.abs(cm.forward_dynamics(q, u, tau) - ref)) / np.max(np.abs(ref))))
    return worst


def to_opty(x: np.ndarray, n: int = 9, nu: int = 6) -> np.ndarray:
    """rodgen's variables ([q, qd, u] per node, then T) in opty's order (each state over the nodes, then
    delt, the torques over the nodes, then h)."""
    z = x[:-1].reshape(NODES, 2 * n + nu)
    T = x[-1]
    delt = np.linspace(0.0, T, NODES)
    return np.r_[z[:, :2 * n].T.ravel(), delt, z[:, 2 * n:].T.ravel(), T / (NODES - 1)]


def from_opty(free: np.ndarray, n: int = 9, nu: int = 6) -> np.ndarray:
    ns = 2 * n + 1
    states = free[:ns * NODES].reshape(ns, NODES)[:2 * n]
    torques = free[ns * NODES:-1].reshape(nu, NODES)
    return np.r_[np.vstack([states, torques]).T.ravel(), free[-1] * (NODES - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gait2d", required=True, help="a checkout of github.com/csu-hmc/gait2d")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--speed", type=float, default=1.2)
    ap.add_argument("--parallel", action="store_true", help="opty's parallel=True (its example's choice)")
    args = ap.parse_args()
    sys.path.insert(0, args.gait2d)
    walk = _walk()
    out: dict = {"problem": {"model": "gait2d", "nodes": NODES, "method": "backward-euler", "speed": args.speed,
                             "options": OPTIONS, "opty_parallel": args.parallel}, "rodgen": {}, "opty": {}}
    # compiled once per machine like the runtime's extension, and not part of the times
    from rodgen.optimize.build import build_driver_object
    t0 = time.perf_counter()
    build_driver_object()
    out["rodgen_driver_seconds"] = time.perf_counter() - t0
    # imports are outside both sides' times, as opty's and pygait2d's are (SymPy is imported here first)
    t0 = time.perf_counter()
    warm_imports()
    out["rodgen_imports_seconds"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), cpu_seconds()
        model_file = rodgen.load(ROOT / "examples" / "gait2d.yaml")
        eqs = rodgen.derive(model_file, method=DEFAULT_METHOD)   # the method rodgen.build derives by
        derivation, derivation_cpu = time.perf_counter() - t0, cpu_seconds() - c0
        t0, c0 = time.perf_counter(), cpu_seconds()
        # one library with its RHS Jacobian and only the routines the collocation calls (optimize.ROUTINES);
        # the build takes the Equations just derived
        cm = rodgen.build(model_file, build_dir=tmp, equations=eqs,
                          codegen=CodegenOptions(jacobian=True, routines=optimize.ROUTINES))
        cm.jacobian_model()
        model_build, model_build_cpu = time.perf_counter() - t0, cpu_seconds() - c0
        del eqs
        t0, c0 = time.perf_counter(), cpu_seconds()
        nlp = optimize.compile_problem(walk.problem(cm, speed=args.speed, nodes=NODES), build_dir=tmp)
        compilation = model_build + time.perf_counter() - t0
        compilation_cpu = model_build_cpu + cpu_seconds() - c0
        out["rodgen"].update(derivation_seconds=derivation, compilation_seconds=compilation,
                             derivation_cpu_seconds=derivation_cpu, compilation_cpu_seconds=compilation_cpu)
        nlp_of = {}
        for key, hessian in DIFFERENCES.items():
            t0 = time.perf_counter()
            nlp_of[key] = optimize.compile_problem(replace(walk.problem(cm, speed=args.speed, nodes=NODES),
                                                           hessian=hessian), build_dir=tmp)
            out[key] = {"derivation_seconds": derivation,
                        "compilation_seconds": model_build + time.perf_counter() - t0}
        print(f"rodgen: derivation {derivation:.2f} s, compilation {compilation:.2f} s (CPU {derivation_cpu:.2f} s, "
              f"{compilation_cpu:.2f} s; "
              + ", ".join(f"hessian={h!r}: {out[k]['compilation_seconds']:.2f} s" for k, h in DIFFERENCES.items())
              + ")")
    (o_der, o_comp), (o_der_cpu, o_comp_cpu), prob, symbolics = opty_setup(args.speed, args.parallel,
                                                                           dict(cm.parameters))
    out["opty"].update(derivation_seconds=o_der, compilation_seconds=o_comp, derivation_cpu_seconds=o_der_cpu,
                       compilation_cpu_seconds=o_comp_cpu)
    print(f"opty:   derivation {o_der:.2f} s, compilation {o_comp:.2f} s (CPU {o_der_cpu:.2f} s, {o_comp_cpu:.2f} s)")
    for k in ("rodgen", "opty"):
        o = out[k]
        o["preparation_cpu_seconds"] = o["derivation_cpu_seconds"] + o["compilation_cpu_seconds"]
    out["ratio_preparation_cpu_seconds"] = (out["opty"]["preparation_cpu_seconds"]
                                            / out["rodgen"]["preparation_cpu_seconds"])
    out["dynamics_rel_diff_gait2d"] = dynamics_difference(cm, symbolics)
    print(f"accelerations: rodgen against gait2d's Kane equations, {out['dynamics_rel_diff_gait2d']:.1e} relative")

    x0 = walk.stride_guess(nlp, speed=args.speed)
    xl, xu, _, _ = nlp.bounds()
    x0 = np.clip(x0, xl, xu)
    def opty_solve(x: np.ndarray) -> tuple[np.ndarray, dict, float, int]:
        prob.obj_value = []
        t0 = time.perf_counter()
        sol, info = prob.solve(x)
        return sol, info, time.perf_counter() - t0, len(prob.obj_value) - 1

    r_times, o_times, res, sol, info, o_iter = [], [], None, None, None, 0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        res = nlp.solve(x0, OPTIONS)
        r_times.append(time.perf_counter() - t0)
        sol, info, dt, o_iter = opty_solve(to_opty(x0))
        o_times.append(dt)
    assert res is not None and sol is not None and info is not None
    o_obj = float(info["obj_val"])
    out["rodgen"].update(solve_seconds=statistics.median(r_times), objective=res.objective,
                         iterations=res.iterations, status=res.message, duration=res.duration)
    out["opty"].update(solve_seconds=statistics.median(o_times), objective=o_obj, iterations=o_iter,
                       status=str(info["status_msg"]), duration=float(sol[-1]) * (NODES - 1))
    rel = abs(o_obj - res.objective) / abs(o_obj)
    out["objective_rel_diff"] = rel
    # each from the other's optimum: the same NLP has the same optima
    t0 = time.perf_counter()
    cross_r = nlp.solve(from_opty(sol), OPTIONS)
    cross_r_time = time.perf_counter() - t0
    _, cross_info, cross_o_time, cross_o_iter = opty_solve(to_opty(res.x))
    out["rodgen"]["from_opty_optimum"] = {"objective": cross_r.objective, "iterations": cross_r.iterations,
                                          "solve_seconds": cross_r_time, "status": cross_r.message}
    out["opty"]["from_rodgen_optimum"] = {"objective": float(cross_info["obj_val"]), "iterations": cross_o_iter,
                                          "solve_seconds": cross_o_time, "status": str(cross_info["status_msg"])}
    out["cross_rel_diff"] = {
        "rodgen_optimum": abs(float(cross_info["obj_val"]) - res.objective) / abs(res.objective),
        "opty_optimum": abs(cross_r.objective - o_obj) / abs(o_obj)}
    for k in ("rodgen", "opty"):
        out[k]["seconds_per_iteration"] = out[k]["solve_seconds"] / max(1, out[k]["iterations"])
    # rodgen with the Hessians by differences from the same start
    for key, nlp_d in nlp_of.items():
        d_times, res_d = [], None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            res_d = nlp_d.solve(x0, OPTIONS)
            d_times.append(time.perf_counter() - t0)
        assert res_d is not None
        out[key].update(solve_seconds=statistics.median(d_times), objective=res_d.objective,
                        iterations=res_d.iterations, status=res_d.message)
    # more common starts: the optimum on 20 or 30 nodes (limited-memory) interpolated onto the 40 (mesh
    # refinements); each solver from each, and opty from rodgen's optima with the Hessians by differences
    out["from_coarse_optima"] = {}
    for coarse_nodes in COARSE:
        coarse_nlp = optimize.compile_problem(walk.problem(cm, speed=args.speed, nodes=coarse_nodes))
        coarse = coarse_nlp.solve(walk.stride_guess(coarse_nlp, speed=args.speed), OPTIONS)
        x1 = np.clip(nlp.guess(coarse), xl, xu)
        nlps = {"rodgen": nlp, **nlp_of}
        times: dict[str, list[float]] = {k: [] for k in (*nlps, "opty")}
        cpu: dict[str, list[float]] = {k: [] for k in (*nlps, "opty")}   # the solves' own CPU time
        results: dict = {}
        info1 = None
        o_iter1 = 0
        for _ in range(args.repeat):
            for k, n in nlps.items():
                t0, c0 = time.perf_counter(), time.process_time()
                results[k] = n.solve(x1, OPTIONS)
                times[k].append(time.perf_counter() - t0)
                cpu[k].append(time.process_time() - c0)
            c0 = time.process_time()
            _, info1, dt, o_iter1 = opty_solve(to_opty(x1))
            times["opty"].append(dt)
            cpu["opty"].append(time.process_time() - c0)
        assert info1 is not None
        refine: dict = {"coarse_objective": coarse.objective, "coarse_status": coarse.message}
        for k in DIFFERENCES:   # opty restarted from these optima: are they optima of opty's NLP too?
            _, back, back_time, back_iter = opty_solve(to_opty(results[k].x))
            refine[f"opty_from_{k}_optimum"] = {
                "objective": float(back["obj_val"]), "iterations": back_iter, "solve_seconds": back_time,
                "rel_diff": abs(float(back["obj_val"]) - results[k].objective) / abs(results[k].objective)}
        for k, r in results.items():
            refine[k] = {"objective": r.objective, "iterations": r.iterations, "status": r.message,
                         "solve_seconds": statistics.median(times[k]), "solve_cpu_seconds": statistics.median(cpu[k])}
        refine["opty"] = {"objective": float(info1["obj_val"]), "iterations": o_iter1,
                          "status": str(info1["status_msg"]), "solve_seconds": statistics.median(times["opty"]),
                          "solve_cpu_seconds": statistics.median(cpu["opty"])}
        for k in nlps:
            r = refine[k]
            r["rel_diff_opty"] = abs(refine["opty"]["objective"] - r["objective"]) / abs(r["objective"])
            r["total_seconds"] = out[k]["derivation_seconds"] + out[k]["compilation_seconds"] + r["solve_seconds"]
        refine["opty"]["total_seconds"] = (out["opty"]["derivation_seconds"] + out["opty"]["compilation_seconds"]
                                           + refine["opty"]["solve_seconds"])
        for k in ("rodgen", "opty"):    # CPU: the preparation's (compilers included) and the solve's
            refine[k]["total_cpu_seconds"] = out[k]["preparation_cpu_seconds"] + refine[k]["solve_cpu_seconds"]
        refine["ratio_total_cpu_seconds_rodgen"] = (refine["opty"]["total_cpu_seconds"]
                                                    / refine["rodgen"]["total_cpu_seconds"])
        for k in nlps:
            refine[f"ratio_total_seconds_{k}"] = refine["opty"]["total_seconds"] / refine[k]["total_seconds"]
            refine[f"ratio_solve_seconds_{k}"] = refine["opty"]["solve_seconds"] / refine[k]["solve_seconds"]
        out["from_coarse_optima"][str(coarse_nodes)] = refine
    # the starts from which a solve of rodgen's reaches opty's optimum (objectives within SAME relative): the
    # ratios there, and their median (one start is one sample of two solvers' paths through a non-convex NLP)
    out["same_optimum"] = {}
    for k in ("rodgen", *DIFFERENCES):
        starts = [n for n, r in out["from_coarse_optima"].items() if r[k]["rel_diff_opty"] <= SAME]
        ratios = [out["from_coarse_optima"][n][f"ratio_total_seconds_{k}"] for n in starts]
        out["same_optimum"][k] = {"starts": starts, "ratios_total_seconds": ratios,
                                  "median_ratio_total_seconds": statistics.median(ratios) if ratios else None}
    for k in ("rodgen", "opty"):
        o = out[k]
        o["total_seconds"] = o["derivation_seconds"] + o["compilation_seconds"] + o["solve_seconds"]
    for part in ("derivation_seconds", "compilation_seconds", "solve_seconds", "total_seconds"):
        out[f"ratio_{part}"] = out["opty"][part] / out["rodgen"][part]
    for k in ("rodgen", "opty"):
        o = out[k]
        print(f"{k:6s} derivation {o['derivation_seconds']:7.2f} s  compilation {o['compilation_seconds']:7.2f} s  "
              f"solve {o['solve_seconds']:7.2f} s  total {o['total_seconds']:7.2f} s  J = {o['objective']:.10g}")
    parts = ("derivation_seconds", "compilation_seconds", "solve_seconds", "total_seconds")
    print("opty / rodgen: " + ", ".join(f"{p.split('_')[0]} {out['ratio_' + p]:.1f}x" for p in parts))
    for k in ("rodgen", "opty"):
        print(f"{k:6s} {out[k]['iterations']} iterations, {out[k]['seconds_per_iteration'] * 1e3:.1f} ms each")
    fo, fr = out["opty"]["from_rodgen_optimum"], out["rodgen"]["from_opty_optimum"]
    print(f"objectives: relative difference {rel:.1e}; rodgen from opty's optimum J = {cross_r.objective:.10g} "
          f"({fr['iterations']} iterations, {fr['solve_seconds']:.2f} s), opty from rodgen's J = "
          f"{fo['objective']:.10g} ({fo['iterations']} iterations, {fo['solve_seconds']:.2f} s)")
    for k, h in DIFFERENCES.items():
        rd = out[k]
        print(f"rodgen, hessian={h!r}: compilation {rd['compilation_seconds']:.2f} s, solve "
              f"{rd['solve_seconds']:.2f} s ({rd['iterations']} iterations), J = {rd['objective']:.10g}")
    for nodes, refine in out["from_coarse_optima"].items():
        print(f"from the {nodes}-node optimum (J = {refine['coarse_objective']:.6g}) on 40 nodes:")
        for k in ("rodgen", *DIFFERENCES, "opty"):
            r = refine[k]
            print(f"  {k:18s} J = {r['objective']:.10g} ({r['iterations']} iterations, solve "
                  f"{r['solve_seconds']:.2f} s, total {r['total_seconds']:.2f} s)"
                  + (f", opty / this: total {refine['ratio_total_seconds_' + k]:.1f}x, solve "
                     f"{refine['ratio_solve_seconds_' + k]:.1f}x, objectives {r['rel_diff_opty']:.1e} apart"
                     if k != "opty" else ""))
        for k in DIFFERENCES:
            b = refine[f"opty_from_{k}_optimum"]
            print(f"  opty from {k}'s optimum: J = {b['objective']:.10g} ({b['iterations']} iterations, "
                  f"{b['rel_diff']:.1e} apart)")
        print(f"  CPU, limited-memory: rodgen {refine['rodgen']['total_cpu_seconds']:.2f} s (solve "
              f"{refine['rodgen']['solve_cpu_seconds']:.2f} s), opty {refine['opty']['total_cpu_seconds']:.2f} s "
              f"(solve {refine['opty']['solve_cpu_seconds']:.2f} s): {refine['ratio_total_cpu_seconds_rodgen']:.1f}x")
    for k, same in out["same_optimum"].items():
        med = same["median_ratio_total_seconds"]
        print(f"{k}: opty's optimum reached from {len(same['starts'])} of {len(COARSE)} coarse optima ("
              + ", ".join(f"{n}: {r:.1f}x" for n, r in zip(same["starts"], same["ratios_total_seconds"]))
              + (f"; median {med:.1f}x)" if med is not None else ")"))
    print(f"preparation CPU (derivation + compilation, compilers included): rodgen "
          f"{out['rodgen']['preparation_cpu_seconds']:.2f} s, opty {out['opty']['preparation_cpu_seconds']:.2f} s: "
          f"{out['ratio_preparation_cpu_seconds']:.1f}x")
    write_json("opty_gait", out)


if __name__ == "__main__":
    main()
