"""The ``sweep`` subcommand of the ``rodgen`` command line: a parameter study on Dask.

    rodgen sweep MODEL.yaml --grid k=100:1000:10 --grid m_torso=60,80,100 --t-end 5 \\
                 --summary max_abs:u --summary rms:q -o results.csv [--scheduler tcp://host:8786]

Each ``--grid NAME=VALUES`` adds a dimension: ``START:STOP:NUM`` (NUM values from START to STOP, both
included, as ``numpy.linspace``) or ``V1,V2,...``; ``--table FILE.csv`` gives points as rows (a column per
name). A NAME is a parameter, a coordinate (its initial value), ``<coordinate>_dot`` (its initial rate),
an input (a constant input; with ``--hold``, the PD law's feedforward), or ``kp`` / ``kd``, the gains of
``--hold``. ``--summary`` is a built-in ``STAT:WHAT`` (STAT: max_abs, max, min, mean, rms, final; WHAT:
q, qd, u, or a coordinate, ``<coordinate>_dot`` or input by name) or ``module:function`` (a function of
an importable module; see :mod:`rodgen.runtime.study`). Without ``--summary`` the trajectories are
written (``-o FILE.zarr``). The study runs on a LocalCluster of ``--workers`` processes, or on the
scheduler at ``--scheduler``. Exit status 0, or 1 if a trajectory stopped early.
"""
from __future__ import annotations

import argparse
from typing import Any

from .cli_sim import METHODS, UsageError, _assignment, _gains


def _grid(text: str) -> tuple[str, str]:
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=START:STOP:NUM or NAME=V1,V2,..., got {text!r}")
    return name.strip(), values.strip()


def add_sweep_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``rodgen sweep`` on an ``argparse`` subparsers object; returns the subparser."""
    s = subparsers.add_parser("sweep", help="run a parameter study (a grid or a table of points) on Dask workers",
                              description="Simulate a model once per point of a grid or a table, in chunks of "
                                          "trajectories on Dask workers, and write the trajectories (Zarr) or "
                                          "their summaries (CSV, Parquet, Zarr).")
    s.add_argument("model", metavar="MODEL.yaml", help="the model file")
    s.add_argument("--grid", action="append", type=_grid, default=[], metavar="NAME=VALUES",
                   help="a dimension of the study: NAME=START:STOP:NUM (linspace, ends included) or "
                        "NAME=V1,V2,...; NAME a parameter, coordinate, <coordinate>_dot, input, or kp/kd of "
                        "--hold (repeatable)")
    s.add_argument("--table", metavar="FILE.csv", help="points as rows of a CSV file (a column per name)")
    s.add_argument("--t-end", type=float, required=True, help="simulated time of each trajectory in s")
    s.add_argument("--dt", type=float, default=1e-3,
                   help="RK4 step, or the largest DOPRI5 step, in s (default 1e-3)")
    s.add_argument("--integrator", choices=("rk4", "dopri5"), default="rk4",
                   help="rk4 (fixed step) or dopri5 (adaptive; summaries only) (default rk4)")
    s.add_argument("--store-every", type=int, default=1, metavar="N",
                   help="store every N-th RK4 step of the trajectories (default 1)")
    s.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance of dopri5 (default 1e-8)")
    s.add_argument("--atol", type=float, default=1e-10, help="absolute tolerance of dopri5 (default 1e-10)")
    s.add_argument("--hold", type=_gains, default=None, metavar="KP,KD",
                   help="hold the initial posture with PD feedback on the inputs (as rodgen simulate --hold); "
                        "--grid kp=... and kd=... vary its gains")
    s.add_argument("--set", dest="initial", action="append", type=_assignment, default=[], metavar="NAME=VALUE",
                   help="initial value of a coordinate, or of a rate as NAME_dot=VALUE, for every point")
    s.add_argument("--param", dest="params", action="append", type=_assignment, default=[],
                   metavar="NAME=VALUE", help="override a parameter for every point (repeatable)")
    s.add_argument("--summary", action="append", default=[], metavar="SPEC",
                   help="a summary computed on the workers: STAT:WHAT (STAT max_abs, max, min, mean, rms, final; "
                        "WHAT q, qd, u or a coordinate, <coordinate>_dot or input name) or module:function "
                        "(repeatable)")
    s.add_argument("-o", "--output", metavar="FILE",
                   help="write the result: .zarr (trajectories or summaries), .csv or .parquet (summaries)")
    s.add_argument("--chunk", type=int, default=100, metavar="N", help="trajectories per task (default 100)")
    s.add_argument("--threads", type=int, default=1, metavar="N",
                   help="threads of each task's simulate_batch (default 1)")
    s.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes of the embedded LocalCluster (default: one per core)")
    s.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run on an existing Dask cluster instead of a LocalCluster")
    s.add_argument("--method", choices=METHODS, default=None, help="derivation method")
    s.add_argument("--build-dir", default=None, metavar="DIR",
                   help="build cache folder (default $RODGEN_CACHE_DIR/models, else ~/.cache/rodgen/models)")
    s.add_argument("--progress", action="store_true", help="show a progress bar even if stderr is not a terminal")
    s.set_defaults(func=run_sweep)
    return s


def run_sweep(args: argparse.Namespace) -> int:
    """``rodgen sweep``: returns 0, or 1 if a trajectory stopped early; a study that cannot run raises a
    SweepError (``rodgen`` prints it and exits with 2)."""
    import numpy as np

    from .model.loader import load
    from .model.values import check_parameter_values
    from .runtime.study import sweep
    model = load(args.model).validate()
    if not args.grid and not args.table:
        raise UsageError("rodgen sweep needs --grid NAME=VALUES (repeatable) or --table FILE.csv")
    if not args.summary and not args.output:
        raise UsageError("rodgen sweep without --summary writes trajectories: give -o FILE.zarr")
    names = [n for n, _ in args.grid]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"--grid {dup[0]}: given more than once")
    defaults = model.parameter_values()
    for k, _ in args.params:
        if k not in defaults:
            from .model.suggest import did_you_mean
            raise UsageError(f"--param {k}: the model has no such parameter{did_you_mean(k, defaults)} "
                             f"(parameters: {', '.join(defaults) or 'none'})")
    check_parameter_values(model, dict(args.params), what="--param")
    table = None
    if args.table:
        import pandas as pd
        try:
            table = pd.read_csv(args.table)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--table {args.table}: {exc}") from None
    controller = None
    if args.hold is not None:
        from .runtime.control import PD, Reference
        if not model.inputs():
            raise UsageError("--hold: the model has no inputs to hold it with")
        values = {**defaults, **dict(args.params)}
        q0 = [c.initial.evaluate(values) for c in model.independent_coordinates()]
        for k, v in args.initial:
            coords = [c.name for c in model.independent_coordinates()]
            if k in coords:
                q0[coords.index(k)] = v
        controller = PD(Reference.hold(np.array(q0)), kp=args.hold[0], kd=args.hold[1])
    if args.store_every < 1:
        raise UsageError(f"--store-every must be at least 1, got {args.store_every}")
    options: dict[str, Any] = {}
    if args.integrator == "rk4":
        options["store_every"] = args.store_every
        dt = args.dt
    else:
        options.update(rtol=args.rtol, atol=args.atol, h_max=args.dt)
        dt = None
    out = sweep(model, dict(args.grid), table=table, t_end=args.t_end, dt=dt, method=args.integrator,
                initial=dict(args.initial), p=dict(args.params), controller=controller,
                summary=args.summary or None, chunk=args.chunk, threads=args.threads,
                scheduler=args.scheduler, workers=args.workers, output=args.output,
                progress=True if args.progress else None, build_dir=args.build_dir, build_method=args.method,
                **options)
    n = len(out) if args.summary else int(out.status.size)
    failed = int(out.attrs["failed"])
    print(f"{model.name}: {n} trajectories to t = {args.t_end:g} s in {out.attrs['seconds']:g} s, "
          f"{failed} stopped early")
    if args.output:
        print(f"wrote {args.output}")
    else:
        import pandas as pd
        with pd.option_context("display.max_rows", 40, "display.width", 200):
            print(out.to_string(index=False) if len(out) <= 40 else out)
    return 0 if failed == 0 else 1


__all__ = ["add_sweep_parser", "run_sweep"]
