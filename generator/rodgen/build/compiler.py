"""Compiling generated files into an extension module: Cython, then the C compiler.

The compiler is called directly (no setuptools round trip), which keeps a
model's build at a second or two: ``cython`` turns ``_<model>.pyx`` into C
while the compiler already works on ``<model>.c``; then the Cython output is
compiled and both objects are linked into ``_<model><EXT_SUFFIX>``.
Every command runs with an explicit ``cwd=`` and its output goes to
``build.log`` in the build folder.
"""
from __future__ import annotations

import enum
import functools
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

from ..errors import BuildError


class Optimization(str, enum.Enum):
    """Optimisation level of the C compiler (``-O<level>``)."""

    O0 = "O0"
    O1 = "O1"
    O2 = "O2"
    O3 = "O3"
    Os = "Os"


@dataclass(frozen=True)
class BuildOptions:
    """How to compile a model.

    compiler : the C compiler command (default: ``$CC``, else Python's compiler, else ``cc``/``gcc``).
    optimization : ``-O2`` by default.
    fast_math : add ``-ffast-math`` (changes the numbers; off unless you opt in).
    extra_cflags : further flags for every compile.
    """

    compiler: Optional[str] = None
    optimization: Union[Optimization, str] = Optimization.O2
    fast_math: bool = False
    extra_cflags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "optimization", Optimization(self.optimization))
        except ValueError:
            choices = ", ".join(o.value for o in Optimization)
            raise ValueError(f"optimization {self.optimization!r} is not one of {choices}") from None
        object.__setattr__(self, "extra_cflags", tuple(str(f) for f in self.extra_cflags))

    def cflags(self) -> list[str]:
        """Flags of the model's C."""
        opt = self.optimization.value if isinstance(self.optimization, Optimization) else str(self.optimization)
        flags = [f"-{opt}", "-fPIC"]
        if sys.platform != "win32":
            flags.append("-fvisibility=hidden")
        if self.fast_math:
            flags.append("-ffast-math")
        return flags + list(self.extra_cflags)

    def wrapper_cflags(self) -> list[str]:
        """Flags of the Cython wrapper: -O0, or -O1 for an -O3 build.

        The wrapper only checks arguments and loops over the model's C functions,
        which carry the work and get the full optimisation. Its generated C is
        large (about 1.7 MB), so optimising it dominated the build: at -O0 a
        model builds in about two thirds of the time, for about 0.15 us more per
        one-state call from Python (vl_chain(5): 0.71 us against 0.57 us at -O1;
        batches unchanged).
        """
        flags = self.cflags()
        if flags[0] in ("-O1", "-O2", "-Os"):
            flags[0] = "-O0"
        elif flags[0] == "-O3":
            flags[0] = "-O1"
        return flags


_compile_count = 0


def compile_count() -> int:
    """How many extension modules this process has compiled (the cache is meant to keep it low)."""
    return _compile_count


@functools.lru_cache(maxsize=None)
def find_compiler(requested: Optional[str] = None) -> tuple[str, ...]:
    """The C compiler command as a tuple of words; raises BuildError if none is found."""
    candidates: list[str] = []
    if requested:
        candidates.append(requested)
    else:
        if os.environ.get("CC"):
            candidates.append(os.environ["CC"])
        cc = sysconfig.get_config_var("CC")
        if cc:
            candidates.append(cc)
        candidates += ["cc", "gcc", "clang"]
    for cand in candidates:
        words = shlex.split(cand)
        if words and shutil.which(words[0]):
            return tuple([shutil.which(words[0]) or words[0]] + words[1:])
    if requested:
        raise BuildError(f"the C compiler {requested!r} was not found on PATH")
    raise BuildError("no C compiler found (tried $CC, Python's CC, cc, gcc, clang); install gcc or clang, "
                     "or pass compiler=...")


@functools.lru_cache(maxsize=None)
def compiler_identity(compiler: tuple[str, ...]) -> str:
    """The first line of ``<compiler> --version`` (part of the build hash)."""
    try:
        out = subprocess.run(list(compiler) + ["--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot run the C compiler: {exc}", command=list(compiler) + ["--version"]) from None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else " ".join(compiler)


def python_include() -> list[str]:
    paths = sysconfig.get_paths()
    out = []
    for key in ("include", "platinclude"):
        p = paths.get(key)
        if p and p not in out:
            out.append(p)
    return out


def ext_suffix() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX") or (".pyd" if sys.platform == "win32" else ".so"))


def link_flags() -> list[str]:
    if sys.platform == "darwin":
        return ["-bundle", "-undefined", "dynamic_lookup"]
    return ["-shared"]


class _Log:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.parts: list[str] = []

    def add(self, text: str) -> None:
        self.parts.append(text)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(text)

    def tail(self, n: int = 4000) -> str:
        return "".join(self.parts)[-n:]


def _start(cmd: Sequence[str], cwd: Path) -> subprocess.Popen:
    try:
        return subprocess.Popen(list(cmd), cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=_env())
    except OSError as exc:
        raise BuildError(f"cannot start {cmd[0]}: {exc}", command=list(cmd), folder=str(cwd)) from None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("LC_ALL", "C")
    return env


def _finish(proc: subprocess.Popen, cmd: Sequence[str], cwd: Path, log: _Log, what: str) -> None:
    out, _ = proc.communicate()
    log.add(f"$ {shlex.join(cmd)}\n{out or ''}\n")
    if proc.returncode != 0:
        raise BuildError(f"{what} failed", command=list(cmd), returncode=proc.returncode,
                         log=(out or "")[-4000:] or log.tail(), folder=str(cwd))


def compile_extension(folder: Union[str, Path], *, source: str, pyx: str, module: str,
                      options: Optional[BuildOptions] = None) -> Path:
    """Compile ``pyx`` + ``source`` (files in ``folder``) into the extension ``module``; return its path.

    Raises BuildError (command, exit status, compiler output, folder) if a step fails.
    """
    global _compile_count
    options = options or BuildOptions()
    folder = Path(folder)
    cc = list(find_compiler(options.compiler))
    flags = options.cflags()
    log = _Log(folder / "build.log")
    start = time.perf_counter()
    stem = Path(source).stem
    cy_c = f"{module}.c"
    cmd_cython = [sys.executable, "-m", "cython", "-3", "--fast-fail", pyx, "-o", cy_c]
    cmd_model = cc + ["-c", "-std=c99"] + flags + [source, "-o", f"{stem}.o"]
    includes = [f"-I{p}" for p in python_include()]
    cmd_wrap = cc + ["-c"] + options.wrapper_cflags() + includes + [cy_c, "-o", f"{module}.o"]
    target = f"{module}{ext_suffix()}"
    cmd_link = cc + link_flags() + [f"{module}.o", f"{stem}.o", "-o", target, "-lm"]

    # the model's C and the Cython translation run side by side
    running: list[subprocess.Popen] = []
    try:
        p_model = _start(cmd_model, folder)
        running.append(p_model)
        p_cython = _start(cmd_cython, folder)
        running.append(p_cython)
        _finish(p_cython, cmd_cython, folder, log, "cython")
        p_wrap = _start(cmd_wrap, folder)
        running.append(p_wrap)
        _finish(p_model, cmd_model, folder, log, "compiling the model's C")
        _finish(p_wrap, cmd_wrap, folder, log, "compiling the Cython module")
    finally:
        for proc in running:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    p_link = _start(cmd_link, folder)
    _finish(p_link, cmd_link, folder, log, "linking")
    _compile_count += 1
    log.add(f"# built {target} in {time.perf_counter() - start:.2f} s\n")
    return folder / target
