"""The ``simulate`` and ``equations`` subcommands of the ``rodgen`` command line.

    rodgen simulate MODEL.yaml --t-end 10 --dt 1e-3 [--integrator rk4|dopri5] [--hold KP,KD]
                    [--plot out.png] [--animate out.gif] [--csv out.csv]
    rodgen equations MODEL.yaml [--latex] [--blocks] [--method matrix] [-o FILE]

``simulate`` builds the model (or reuses the cached build), integrates it
from the model's initial state (or ``--set`` values) with the compiled
integrators (``robot.simulate``; RK4 by default, DOPRI5 on request, SciPy's
methods as a fallback), with no inputs or, with ``--hold KP,KD``, a PD law
that holds the initial posture; prints a summary and writes the requested
files. The summary is the run's energy balance (:mod:`rodgen.runtime.balance`:
the change of kinetic + potential energy, the input work, the energy the dampers
dissipated, and the residual, the integration error). The CSV columns are documented in
:meth:`rodgen.runtime.result.SimulationResult.to_csv`.
"""
from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from .codegen.options import DEFAULT_METHOD, METHODS
from .errors import RodgenError
from .model.suggest import did_you_mean


class UsageError(RodgenError, ValueError):
    """A command-line value that does not fit the model (an unknown name, a bad count); exit status 2."""
COMPILED = ("rk4", "dopri5")
INTEGRATORS = COMPILED + ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA")


def _gains(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        kp, kd = (float(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KP,KD (two numbers), got {text!r}") from None
    if not (math.isfinite(kp) and math.isfinite(kd) and kp >= 0 and kd >= 0):
        raise argparse.ArgumentTypeError(f"the gains must be finite and non-negative, got {text!r}")
    return kp, kd


def _assignment(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name.strip()}: {value!r} is not a number") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{name.strip()}: {value!r} is not finite")
    return name.strip(), v


def add_simulate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``rodgen simulate`` on an ``argparse`` subparsers object; returns the subparser."""
    s = subparsers.add_parser("simulate", help="build a model, simulate it and plot, animate or save the result",
                              description="Simulate a model from its initial state, with no inputs or holding "
                                          "its initial posture (--hold).")
    s.add_argument("model", metavar="MODEL.yaml", help="the model file")
    s.add_argument("--t-end", type=float, default=10.0, help="simulated time in s (default 10)")
    s.add_argument("--dt", type=float, default=1e-3,
                   help="output interval in s (default 1e-3); the RK4 step is dt/--substeps, the largest DOPRI5 "
                        "step is dt")
    s.add_argument("--integrator", choices=INTEGRATORS, default="rk4",
                   help="rk4 (fixed step) or dopri5 (adaptive), compiled in the model's C (default rk4); or a "
                        "SciPy method on the compiled rhs")
    s.add_argument("--substeps", type=int, default=1, metavar="N", help="RK4 steps per output interval (default 1)")
    s.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance of adaptive methods (default 1e-8)")
    s.add_argument("--atol", type=float, default=1e-10, help="absolute tolerance of adaptive methods (default 1e-10)")
    s.add_argument("--hold", type=_gains, default=None, metavar="KP,KD",
                   help="hold the initial posture with PD feedback on the inputs: u = KP B^T (q0 - q) - KD B^T qd "
                        "(see docs/simulation.md)")
    s.add_argument("--set", dest="initial", action="append", type=_assignment, default=[], metavar="NAME=VALUE",
                   help="initial value of a coordinate, or of a rate as NAME_dot=VALUE (repeatable)")
    s.add_argument("--param", dest="params", action="append", type=_assignment, default=[],
                   metavar="NAME=VALUE", help="override a parameter (repeatable)")
    s.add_argument("--plot", metavar="FILE", help="write a plot of coordinates, rates and energy (PNG, PDF, SVG)")
    s.add_argument("--animate", metavar="FILE.gif", help="write a stick-figure animation")
    s.add_argument("--csv", metavar="FILE", help="write the samples as CSV")
    s.add_argument("--method", choices=METHODS, default=None,
                   help=f"derivation method (default: {DEFAULT_METHOD}, as for every command that generates code)")
    s.add_argument("--build-dir", default=None, metavar="DIR",
                   help="build cache folder (default $RODGEN_CACHE_DIR/models, else ~/.cache/rodgen/models)")
    s.add_argument("--no-compile", action="store_true",
                   help="evaluate the equations with NumPy instead of compiling (slow; small models only)")
    s.add_argument("--progress", action="store_true", help="show a progress bar even if stderr is not a terminal")
    s.set_defaults(func=run_simulate)
    return s


def add_equations_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``rodgen equations`` on an ``argparse`` subparsers object; returns the subparser."""
    e = subparsers.add_parser("equations", help="print a model's equations of motion",
                              description="Print M qdd + h + G + K + D = B u of a model.")
    e.add_argument("model", metavar="MODEL.yaml", help="the model file")
    e.add_argument("--latex", action="store_true", help="LaTeX instead of plain text")
    e.add_argument("--blocks", action="store_true", help="LaTeX grouped by angle/length rows, as in the thesis")
    e.add_argument("--method", choices=METHODS, default="matrix", help="derivation method (default matrix)")
    e.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    e.set_defaults(func=run_equations)
    return e


def _evaluator(args: argparse.Namespace, model: Any) -> Any:
    """The compiled model, built exactly as ``rodgen build`` builds it (the same method, by default the
    code stage's, and the same options: one cache entry, found without deriving), or with
    ``--no-compile`` its equations evaluated by NumPy."""
    if args.no_compile:
        from .symbolic import derive
        from .symbolic.numeric import lambdify_equations
        return lambdify_equations(derive(model, method=args.method or DEFAULT_METHOD))
    from .toolchain import build
    return build(model, build_dir=args.build_dir, method=args.method)


def run_simulate(args: argparse.Namespace) -> int:
    """``rodgen simulate``: returns the exit status (0 on success, 1 if the run stopped early); a value
    that does not fit the model raises :class:`UsageError` (``rodgen`` prints it and exits with 2)."""
    from .model.loader import load
    from .runtime.plot import animate, plot
    from .runtime.solve import solve
    model = load(args.model).validate()
    ev = _evaluator(args, model)
    names = list(ev.parameters)
    unknown = [k for k, _ in args.params if k not in ev.parameters]
    if unknown:
        raise UsageError(f"--param {unknown[0]}: the model has no such parameter{did_you_mean(unknown[0], names)} "
                         f"(parameters: {', '.join(names) or 'none'})")
    p = np.array([dict(args.params).get(k, v) for k, v in ev.parameters.items()])
    from .model.values import check_parameter_values
    check_parameter_values(model, dict(args.params), what="--param")
    nq = ev.nq
    values = {c.name: c.initial.evaluate(dict(zip(names, p))) for c in model.independent_coordinates()}
    y0 = np.concatenate([[values[c] for c in ev.coordinates], np.zeros(nq)])
    for k, v in args.initial:
        base = k[:-4] if k.endswith("_dot") else k
        if base not in ev.coordinates:
            raise UsageError(f"--set {k}: not a coordinate{did_you_mean(base, ev.coordinates)} (coordinates: "
                             f"{', '.join(ev.coordinates)})")
        y0[ev.coordinates.index(base) + (nq if k.endswith("_dot") else 0)] = v
    progress = True if args.progress else None
    if args.substeps < 1:
        raise UsageError(f"--substeps must be at least 1, got {args.substeps}")
    controller = None
    if args.hold is not None:
        from .runtime.control import PD, Reference
        if len(ev.inputs) == 0:
            raise UsageError("--hold: the model has no inputs to hold it with")
        controller = PD(Reference.hold(y0[:nq]), kp=args.hold[0], kd=args.hold[1])
    integrator = args.integrator
    if not hasattr(ev, "simulate") and integrator in COMPILED:
        integrator = "DOP853"      # --no-compile: no compiled integrators
    if integrator == "rk4":
        res = ev.simulate(y0, args.t_end, args.dt / args.substeps, method="rk4", p=p, controller=controller,
                          store_every=args.substeps, progress=progress)
    elif integrator == "dopri5":
        res = ev.simulate(y0, args.t_end, method="dopri5", rtol=args.rtol, atol=args.atol, h_max=args.dt, p=p,
                          controller=controller, progress=progress)
    else:
        u_fun = None
        if controller is not None:
            q0, (kp, kd) = y0[:nq].copy(), args.hold

            def u_fun(t: float, y: np.ndarray) -> np.ndarray:
                B = ev.input_map(y[:nq], p)
                return kp * (B.T @ (q0 - y[:nq])) - kd * (B.T @ y[nq:])
        res = solve(ev, y0, args.t_end, dt=args.dt, p=p, u=u_fun, method=integrator, rtol=args.rtol,
                    atol=args.atol, progress=progress)
    print(f"{res.model}: {len(res.t)} samples to t = {res.t[-1]:g} s, status {res.status.value} ({res.message})")
    from .runtime.balance import energy_balance
    for line in energy_balance(ev, res, p).lines():
        print(line)
    if args.csv:
        res.to_csv(args.csv)
        print(f"wrote {args.csv}")
    if args.plot:
        plot(res, args.plot, model=model)
        print(f"wrote {args.plot}")
    if args.animate:
        animate(ev, res, args.animate, p=p, model=model)
        print(f"wrote {args.animate}")
    return 0 if res.ok else 1


def run_equations(args: argparse.Namespace) -> int:
    """``rodgen equations``: print or write the equations; returns 0."""
    import sympy as sp

    from .model.loader import load
    from .symbolic import derive
    eqs = derive(load(args.model), method=args.method).expanded()
    if getattr(eqs.model, "spatial", False):     # numbers as decimals where they are (URDF values as written)
        from .symbolic.closed_form import decimal_numbers

        def sstr(x: Any) -> str:
            return str(sp.sstr(decimal_numbers(x), full_prec=False))
    else:
        sstr = sp.sstr
    if args.latex or args.blocks:
        text = eqs.latex(blocks=args.blocks)
    else:
        rhs = "B u + F" if eqs.forces else "B u"
        lines = [f"model {eqs.model.name} ({eqs.method} method): M qdd + h + G + K + D = {rhs}",
                 "coordinates q: " + ", ".join(map(str, eqs.q)),
                 "inputs u: " + (", ".join(map(str, eqs.u)) or "(none)"),
                 "parameters: " + (", ".join(f"{s} = {eqs.param_values[s]:g}" for s in eqs.params) or "(none)")]
        if eqs.closed_form_reason:
            lines.append(f"not simplified to closed form: {eqs.closed_form_reason}")
        if eqs.couplings:
            lines.append("couplings: " + ", ".join(f"{k} = {v}" for k, v in eqs.couplings.items()))
        for name in ("M", "h", "G", "K", "D", "B") + (("F",) if eqs.forces else ()):
            mat = getattr(eqs, name)
            if name != "M" and name != "B" and all(e == 0 for e in mat):
                lines.append(f"{name} = 0")
                continue
            lines.append(f"{name} =")
            for i in range(mat.rows):
                for j in range(mat.cols):
                    if mat[i, j] != 0:
                        lines.append(f"  [{i},{j}] {sstr(mat[i, j])}" if mat.cols > 1 else
                                     f"  [{i}] {sstr(mat[i, j])}")
        for el in eqs.forces:
            lines.append(f"force element {el.name} ({el.type} at {el.point}), ground frame:")
            for i, comp in enumerate("xyz"[:el.force.rows]):
                lines.append(f"  F{comp} = {sstr(el.force[i])}")
        lines.append(f"T = {sstr(eqs.T)}")
        lines.append(f"V = {sstr(eqs.V)}")
        text = "\n".join(lines)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        print(f"wrote {args.output}")
    else:
        print(text)
    return 0


__all__ = ["add_simulate_parser", "add_equations_parser", "run_simulate", "run_equations", "UsageError"]
