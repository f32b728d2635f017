"""The ``rodgen`` command line.

    rodgen generate MODEL.yaml -o DIR     write <model>.h, <model>.c and the C runtime into DIR
    rodgen build MODEL.yaml               compile (or reuse) into the build cache and say where
    rodgen simulate MODEL.yaml ...        build, simulate, write plot / animation / CSV
    rodgen equations MODEL.yaml [--latex] print the equations of motion
    rodgen modes MODEL.yaml [--fixed Q]   natural frequencies and mode shapes at the initial coordinates
    rodgen sweep MODEL.yaml --grid ...    a parameter study on Dask workers (summaries or trajectories)
    rodgen fmu MODEL.yaml -o model.fmu    export an FMI 2.0/3.0 FMU (Co-Simulation and/or Model Exchange)

Errors print one line (``rodgen: error: ...``) and exit with status 2. When the reader of the
output goes away (``rodgen equations MODEL.yaml | head``) the command stops quietly with status 141.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from .codegen.options import DEFAULT_METHOD, MAX_STATEMENTS, METHODS, REAL_TYPES
from .errors import BuildError, RodgenError

if TYPE_CHECKING:
    from .codegen import CodegenOptions

OPT_LEVELS = ("O0", "O1", "O2", "O3", "Os")
FORWARD = ("auto", "aba", "cholesky")


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL.yaml", help="the model file")
    p.add_argument("--method", choices=METHODS, default=None,
                   help=f"derivation method (default: {DEFAULT_METHOD}, as for every command that generates code)")


def _add_codegen_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--forward", choices=FORWARD, default="auto",
                   help="forward-dynamics algorithm: articulated-body (aba) where it applies, else Cholesky "
                        "(default auto)")
    p.add_argument("--jacobian", dest="jacobian", action="store_true", default=None,
                   help="generate the exact RHS Jacobian (the default)")
    p.add_argument("--no-jacobian", dest="jacobian", action="store_false", help="do not generate it")


def _add_real_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--real", choices=REAL_TYPES, default="double",
                   help="C type of every number (default double); float for microcontrollers with a "
                        "single-precision FPU (no runtime table, no RHS Jacobian)")


def _codegen_options(args: argparse.Namespace) -> "CodegenOptions":
    from .codegen import CodegenOptions
    return CodegenOptions(max_statements=getattr(args, "max_statements", MAX_STATEMENTS), forward=args.forward,
                          jacobian=args.jacobian, real=getattr(args, "real", "double"))


def _cmd_generate(args: argparse.Namespace) -> int:
    from . import load
    from .codegen import generate
    model = load(args.model)
    files = generate(model, args.output, method=args.method, options=_codegen_options(args))
    out = Path(args.output)
    for name in sorted(files.files):
        print(out / name)
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from . import load
    from .toolchain import BuildOptions, build
    model = load(args.model)
    options = BuildOptions(compiler=args.compiler, optimization=args.opt, fast_math=args.fast_math, arch=args.arch)
    sys_ = build(model, build_dir=args.build_dir, method=args.method, options=options,
                 codegen=_codegen_options(args))
    print(f"built {sys_.name}: nq={sys_.nq}, nu={sys_.nu}, np={sys_.np}")
    print(f"library: {sys_.path}")
    print(f"C sources: {sys_.header} {sys_.source}")
    return 0


def _cmd_modes(args: argparse.Namespace) -> int:
    import numpy as np

    from . import load
    from .analysis import modes
    model = load(args.model)
    q0 = None
    if args.q0 is not None:
        q0 = np.array([float(x) for x in args.q0.split(",")])
    md = modes(model, q0, fixed=args.fixed or (), count=args.count)
    print(f"{model.name}: {len(md.coordinates)} coordinates ({', '.join(md.coordinates)})"
          + (f", fixed: {', '.join(args.fixed)}" if args.fixed else ""))
    print(f"{'mode':>4}  {'omega [rad/s]':>14}  {'f [Hz]':>12}")
    for k, (w, f) in enumerate(zip(md.omega, md.hz)):
        print(f"{k + 1:4d}  {w:14.6g}  {f:12.6g}" if np.isfinite(w) else
              f"{k + 1:4d}  unstable (omega^2 = {md.omega2[k]:.6g})")
    if args.plot:
        md.plot(args.plot, link=args.link)
        print(f"mode shapes: {args.plot}")
    return 0


def _cmd_fmu(args: argparse.Namespace) -> int:
    from . import load
    from .fmu import export_fmu
    from .toolchain import build
    robot = build(load(args.model), build_dir=args.build_dir, method=args.method, codegen=_codegen_options(args))
    version = {"2": "2.0", "3": "3.0"}.get(args.fmi, args.fmi)
    path = export_fmu(robot, args.output, kind=args.kind, fmi_version=version, contacts=args.contact or (),
                      disarmed=args.disarmed or (), arm_gap=args.arm_gap, event_tol=args.event_tol)
    print(f"FMU ({args.kind}, FMI {version}) of {robot.name}: {path}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands ``generate``, ``build``, ``fmu``, ``simulate``, ``equations``,
    ``modes``, ``sweep``)."""
    from . import __version__
    ap = argparse.ArgumentParser(prog="rodgen", description="Equations of motion of rod/link mechanisms, "
                                                            "compiled to C.")
    ap.add_argument("--version", action="version", version=f"rodgen {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    g = sub.add_parser("generate", help="write the C header and source of a model and the C runtime beside them")
    _add_model_args(g)
    g.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (created if needed)")
    g.add_argument("--max-statements", type=int, default=MAX_STATEMENTS, metavar="N",
                   help=f"split generated functions longer than N statements (default {MAX_STATEMENTS})")
    _add_codegen_args(g)
    _add_real_arg(g)
    g.set_defaults(func=_cmd_generate)

    b = sub.add_parser("build", help="generate and compile a model into the build cache")
    _add_model_args(b)
    b.add_argument("--build-dir", default=None, metavar="DIR",
                   help="cache folder (default $RODGEN_CACHE_DIR/models, else ~/.cache/rodgen/models)")
    b.add_argument("--compiler", default=None, metavar="CC", help="C compiler (default $CC, cc or gcc)")
    b.add_argument("-O", dest="opt", choices=OPT_LEVELS, default="O1", help="optimisation level (default O1)")
    b.add_argument("--fast-math", action="store_true", help="compile with -ffast-math (changes the numbers)")
    b.add_argument("--arch", default="native", metavar="ARCH",
                   help="instruction set: native (default, this machine's CPU), portable (the compiler's generic "
                        "target), or a -march value such as x86-64-v3")
    _add_codegen_args(b)
    b.set_defaults(func=_cmd_build)

    f = sub.add_parser("fmu", help="export the model as an FMI 2.0 or 3.0 FMU (sources, binary for this platform)")
    _add_model_args(f)
    f.add_argument("-o", "--output", required=True, metavar="FILE.fmu", help="the FMU file to write")
    f.add_argument("--kind", choices=("cs", "me", "both"), default="cs",
                   help="Co-Simulation (RK4 inside the FMU), Model Exchange, or both (default cs)")
    f.add_argument("--fmi-version", "--fmi", dest="fmi", choices=("2", "3", "2.0", "3.0"), default="2.0",
                   help="FMI version (default 2.0)")
    f.add_argument("--contact", action="append", metavar="BLOCK",
                   help="a model with contacts: a block active at the start of the hybrid simulation; may be repeated")
    f.add_argument("--disarmed", action="append", metavar="BLOCK",
                   help="a block allowed below the ground at the start (armed once above it); may be repeated")
    f.add_argument("--arm-gap", type=float, default=None, metavar="M",
                   help="height above which an inactive contact may touch down (default 1e-6)")
    f.add_argument("--event-tol", type=float, default=None, metavar="S",
                   help="events located in time to within S seconds (default 1e-10)")
    f.add_argument("--build-dir", default=None, metavar="DIR",
                   help="cache folder (default $RODGEN_CACHE_DIR/models, else ~/.cache/rodgen/models)")
    _add_codegen_args(f)
    f.set_defaults(func=_cmd_fmu)

    md = sub.add_parser("modes", help="natural frequencies and mode shapes about an equilibrium (no compiling)")
    md.add_argument("model", metavar="MODEL.yaml", help="the model file")
    md.add_argument("--q0", default=None, metavar="Q1,Q2,...",
                    help="the equilibrium coordinates (default: the model's initial coordinates)")
    md.add_argument("--fixed", action="append", metavar="COORDINATE",
                    help="hold a coordinate at q0 (a locked hub); may be repeated")
    md.add_argument("--count", type=int, default=None, metavar="K", help="print the K lowest modes")
    md.add_argument("--plot", default=None, metavar="FILE.png", help="plot the mode shapes along a link")
    md.add_argument("--link", default=None, metavar="LINK",
                    help="the link whose markers the plot follows (an elastic link's name)")
    md.set_defaults(func=_cmd_modes)

    from .cli_sim import add_equations_parser, add_simulate_parser
    from .cli_sweep import add_sweep_parser
    add_simulate_parser(sub)
    add_equations_parser(sub)
    add_sweep_parser(sub)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; return the exit status (0, or 2 on an error)."""
    args = parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        status = func(args)
        sys.stdout.flush()      # a broken pipe shows here, not at exit
        return status
    except BrokenPipeError:
        return _reader_gone()
    except BuildError as exc:
        where = f" (see {exc.folder}/build.log)" if exc.folder else ""
        _error(str(exc).splitlines()[0] + where)
    except RodgenError as exc:
        _error(" ".join(str(exc).split()))
    except FileNotFoundError as exc:
        _error(f"{exc.filename or exc}: no such file")
    except OSError as exc:
        _error(f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc}")
    except ValueError as exc:
        _error(" ".join(str(exc).split()))
    return 2


#: Exit status when the reader of standard output went away (``rodgen equations ... | head``): that of a
#: program ended by SIGPIPE, as ``cat`` or ``seq`` end in the same pipe.
EXIT_BROKEN_PIPE = 128 + 13


def _reader_gone() -> int:
    """Stop quietly: what is left in the buffer of standard output goes nowhere (else Python reports
    the broken pipe once more when it flushes at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def _error(message: str) -> None:
    print(f"rodgen: error: {message}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
