"""Compiling a controller written in C into a shared library (cached by content hash).

    path = compile_controller("my_controller.c")       # <build_dir>/controller-my_controller-<hash12>/

The user's C file is compiled together with rodgen's C runtime (``csrc/*.c``:
Cholesky, the input laws and integrators, the constrained dynamics and impact
map of ``rodgen_contact.h``), so a controller can call any of them and reach
the simulated model through the ``rodgen_model`` table of its context
(``rodgen_controller``, declared in ``rodgen_runtime.h``). The compiler sees
``-I<build folder>`` (rodgen's headers), ``-I<the source's folder>`` and the
given ``include_dirs``. The hash covers the source, every ``.h`` in those
folders, rodgen's runtime sources, the compiler and its flags; a folder with
that hash is reused without compiling. Loading and binding the library is the
runtime's business (:class:`rodgen.runtime.CController`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Sequence, Union

from ..errors import BuildError

#: Flags of a controller's library (besides -std=c99 -shared and the include folders). -O3: a controller is
#: small, so it compiles in a second or two, and its loops over the model's sizes (triangular solves,
#: small matrix products) gain from unrolling and vectorisation (the walking example: 37 % fewer
#: instructions per call than at -O2).
CONTROLLER_CFLAGS = ("-O3", "-fPIC")


def _headers(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        return {}
    return {f"{folder}/{h.name}": h.read_text(encoding="utf-8", errors="replace")
            for h in sorted(folder.glob("*.h")) if h.is_file()}


def compile_controller(source: Union[str, Path], *, include_dirs: Sequence[Union[str, Path]] = (),
                       cflags: Sequence[str] = (), build_dir: Union[str, Path, None] = None,
                       compiler: Optional[str] = None) -> Path:
    """Compile the C file ``source`` with rodgen's runtime into a shared library (or reuse it); its path.

    Raises BuildError naming the file when it does not exist or does not compile (with the compiler's
    diagnostics in the message).
    """
    from ..codegen.runtime import runtime_sources
    from .cached import compile_cached
    src = Path(source)
    if not src.is_file():
        raise BuildError(f"the controller source {src} does not exist")
    src = src.resolve()
    text = src.read_text(encoding="utf-8", errors="replace")
    dirs = [src.parent] + [Path(d).resolve() for d in include_dirs]
    runtime = runtime_sources()
    flags = list(CONTROLLER_CFLAGS) + [str(f) for f in cflags]
    parts = {"source": text, "source_path": str(src)}
    for d in dirs:
        parts.update({f"header:{k}": v for k, v in _headers(d).items()})
    stem = re.sub(r"[^A-Za-z0-9_]", "_", src.stem) or "controller"
    return compile_cached(f"controller-{stem}", runtime, compile=[str(src)] + sorted(n for n in runtime
                          if n.endswith(".c")), flags=flags, link=["-lm"], include_dirs=dirs, key_parts=parts,
                          library=f"lib{stem}", what=f"the controller {src}", meta={"controller": str(src)},
                          build_dir=build_dir, compiler=compiler)


__all__ = ["compile_controller", "CONTROLLER_CFLAGS"]
