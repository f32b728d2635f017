"""Compiling a problem's C with the collocation driver against IPOPT (cached by content hash).

IPOPT comes from CasADi's wheel (``pip install "rodgen[optimize]"``), which ships ``libipopt.so`` with
IPOPT's C interface and its headers (``casadi/include/coin-or``). The library
``<build_dir>/optimize-<hash12>/librodopt.so`` holds the problem's generated routines, the
model-independent ``rodgen_collocation.c`` and rodgen's Cholesky (``csrc/rodgen_linalg.c``); it links to
IPOPT with its folder as the run path, and reaches the model through the table pointer it is given.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional, Union

from ..errors import BuildError
from ..toolchain import cache
from ..toolchain.compiler import _finish, _Log, _start, compiler_identity, find_compiler, library_suffix
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
    from .. import __version__
    from ..codegen.runtime import files_digest, runtime_sources
    libdir, include = ipopt_paths()
    runtime = runtime_sources()
    driver = DRIVER.read_text(encoding="utf-8")
    cc = find_compiler(compiler)
    parts = {"problem": source, "driver": driver, "runtime": files_digest(runtime), "rodgen": __version__,
             "compiler": " ".join(cc) + "\n" + compiler_identity(cc), "cflags": " ".join(CFLAGS),
             "ipopt": str(libdir), "platform": sys.platform}
    digest = cache.build_hash(parts)
    key = f"optimize-{digest[:12]}"
    root = Path(build_dir) if build_dir is not None else cache.default_build_dir()
    lib = f"librodopt{library_suffix()}"

    def make(tmp: Path) -> dict[str, object]:
        start = time.perf_counter()
        for name, body in runtime.items():
            (tmp / name).write_text(body, encoding="utf-8")
        (tmp / "rodgen_collocation.c").write_text(driver, encoding="utf-8")
        (tmp / "rodopt_problem.c").write_text(source, encoding="utf-8")
        cmd = (list(cc) + ["-std=c99", "-shared"] + list(CFLAGS) + ["-I.", f"-I{include}",
               "rodgen_collocation.c", "rodopt_problem.c", "rodgen_linalg.c", "-o", lib, f"-L{libdir}",
               f"-Wl,-rpath,{libdir}", "-lipopt", "-lm"])
        _finish(_start(cmd, tmp), cmd, tmp, _Log(tmp / "build.log"), "compiling the optimisation problem")
        return {"library": lib, "build_hash": digest, "cflags": list(CFLAGS), "compiler": " ".join(cc),
                "ipopt": str(libdir), "compile_seconds": round(time.perf_counter() - start, 3)}

    def failure(exc: BuildError, failed: Path) -> BuildError:
        return BuildError(f"compiling the optimisation problem failed:\n{exc.log.strip()}",
                          command=exc.command, returncode=exc.returncode, folder=str(failed))

    return cache.build_folder(root, key, lib, make, failure,
                              advice="choose a writable build_dir= (or $RODGEN_CACHE_DIR) with free space")


__all__ = ["build_driver", "ipopt_paths", "EXTRA"]
