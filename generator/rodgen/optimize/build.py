"""Compiling a problem's C with the collocation driver against IPOPT (cached by content hash).

IPOPT comes from CasADi's wheel (``pip install "rodgen[optimize]"``), which ships ``libipopt.so`` with
IPOPT's C interface and its headers (``casadi/include/coin-or``). The library
``<build_dir>/optimize-<hash12>/librodopt.so`` holds the problem's generated routines linked with the
model-independent driver (``rodgen_collocation.c``, rodgen's Cholesky ``csrc/rodgen_linalg.c`` and constrained
derivatives ``csrc/rodgen_cderiv.c``), an object file compiled once beside the runtime's extension
(``optimize-driver-<hash12>/rodopt_driver.o``); it links to IPOPT with its folder as the run path, and reaches
the model through the table pointer it is given.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

from .problem import OptimizeError

#: The extra that installs the solver.
EXTRA = 'pip install "rodgen[optimize]" (CasADi\'s wheel, which ships IPOPT)'
CFLAGS = ("-O2", "-fPIC")
DRIVER = Path(__file__).with_name("rodgen_collocation.c")


def casadi_module() -> Any:
    """CasADi (the `optimize` extra), or an OptimizeError that says how to install it."""
    try:
        import casadi
    except ImportError:
        raise OptimizeError(f"rodgen.optimize needs IPOPT: {EXTRA}") from None
    return casadi


def ipopt_paths() -> tuple[Path, Path]:
    """(the folder of libipopt, the folder of IpStdCInterface.h) from CasADi's wheel; OptimizeError without."""
    casadi = casadi_module()
    root = Path(casadi.__file__).resolve().parent
    include = root / "include" / "coin-or"
    libs = sorted(root.glob("libipopt.*"))
    if not (include / "IpStdCInterface.h").is_file() or not any(p.suffix in (".so", ".dylib", ".dll") or ".so." in
                                                                p.name for p in libs):
        raise OptimizeError(f"the installed casadi ({root}) has no IPOPT library with its C interface; {EXTRA}")
    return root, include


def build_driver(source: str, *, build_dir: Union[str, Path, None] = None,
                 compiler: Optional[str] = None) -> Path:
    """Compile the problem's C ``source`` and link it with the collocation driver's object file (compiled
    once per machine, compiler and rodgen version: :func:`build_driver_object`); the library's path."""
    from ..toolchain.cached import compile_cached
    libdir, include = ipopt_paths()
    driver = build_driver_object(compiler=compiler)
    return compile_cached("optimize", {"rodopt_problem.c": source}, compile=["rodopt_problem.c", str(driver)],
                          flags=CFLAGS, include_dirs=[include], key_parts={"ipopt": str(libdir)},
                          link=[f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lipopt", "-lm"], library="librodopt",
                          what="the optimisation problem", meta={"ipopt": str(libdir)}, build_dir=build_dir,
                          compiler=compiler)


def build_driver_object(*, compiler: Optional[str] = None) -> Path:
    """The model-independent part of every problem's library (``rodgen_collocation.c``, rodgen's Cholesky and
    constrained derivatives, one translation unit) compiled into an object file beside the runtime's extension
    (once per machine, compiler and rodgen version, as that is), or reused; its path."""
    from ..codegen.runtime import runtime_sources
    from ..toolchain.cached import compile_cached
    from ..toolchain.runtime import cache_dir
    _, include = ipopt_paths()
    files = dict(runtime_sources())
    files["rodgen_collocation.c"] = DRIVER.read_text(encoding="utf-8")
    files["rodopt_driver.c"] = "".join(f'#include "{name}"\n' for name in
                                       ("rodgen_collocation.c", "rodgen_linalg.c", "rodgen_cderiv.c"))
    return compile_cached("optimize-driver", files, compile=["rodopt_driver.c"], flags=CFLAGS,
                          include_dirs=[include], library="rodopt_driver", what="the collocation driver",
                          build_dir=cache_dir(), compiler=compiler, object_file=True)


__all__ = ["build_driver", "casadi_module", "ipopt_paths", "EXTRA"]
