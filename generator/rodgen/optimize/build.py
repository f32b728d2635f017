"""Compiling a problem's C with the collocation driver against IPOPT (cached by content hash).

IPOPT comes from CasADi's wheel (``pip install "rodgen[optimize]"``), which ships ``libipopt.so`` with
IPOPT's C interface and its headers (``casadi/include/coin-or``). The library
``<build_dir>/optimize-<hash12>/librodopt.so`` holds the problem's generated routines, the
model-independent ``rodgen_collocation.c`` and rodgen's Cholesky (``csrc/rodgen_linalg.c``); it links to
IPOPT with its folder as the run path, and reaches the model through the table pointer it is given.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from .problem import OptimizeError

#: The extra that installs the solver.
EXTRA = 'pip install "rodgen[optimize]" (CasADi\'s wheel, which ships IPOPT)'
CFLAGS = ("-O2", "-fPIC")
DRIVER = Path(__file__).with_name("rodgen_collocation.c")


def ipopt_paths() -> tuple[Path, Path]:
    """(the folder of libipopt, the folder of IpStdCInterface.h) from CasADi's wheel; OptimizeError without."""
    try:
        import casadi
    except ImportError:
        raise OptimizeError(f"rodgen.optimize needs IPOPT: {EXTRA}") from None
    root = Path(casadi.__file__).resolve().parent
    include = root / "include" / "coin-or"
    libs = sorted(root.glob("libipopt.*"))
    if not (include / "IpStdCInterface.h").is_file() or not any(p.suffix in (".so", ".dylib", ".dll") or ".so." in
                                                                p.name for p in libs):
        raise OptimizeError(f"the installed casadi ({root}) has no IPOPT library with its C interface; {EXTRA}")
    return root, include


def build_driver(source: str, *, build_dir: Union[str, Path, None] = None,
                 compiler: Optional[str] = None) -> Path:
    """Compile the problem's C ``source`` with the collocation driver (or reuse it); the library's path."""
    from ..codegen.runtime import runtime_sources
    from ..toolchain.cached import compile_cached
    libdir, include = ipopt_paths()
    files = dict(runtime_sources())
    files["rodgen_collocation.c"] = DRIVER.read_text(encoding="utf-8")
    files["rodopt_problem.c"] = source
    return compile_cached("optimize", files, compile=["rodgen_collocation.c", "rodopt_problem.c", "rodgen_linalg.c",
                                                         "rodgen_cderiv.c"],
                          flags=CFLAGS, include_dirs=[include], key_parts={"ipopt": str(libdir)},
                          link=[f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lipopt", "-lm"], library="librodopt",
                          what="the optimisation problem", meta={"ipopt": str(libdir)}, build_dir=build_dir,
                          compiler=compiler)


__all__ = ["build_driver", "ipopt_paths", "EXTRA"]
