"""Calling the C compiler and Cython: a model's shared library, and the runtime's extension module.

The compiler is called directly (no setuptools round trip). A model compiles
into a plain shared library ``lib<model>.so`` (its C and the runtime's
Cholesky; no Python headers, no Cython), in one compiler call. The runtime's
Cython wrapper is compiled once per machine (see :mod:`rodgen.toolchain.runtime`):
``cython`` turns ``_rodgen_runtime.pyx`` into C, which is compiled beside every
runtime C file, and the objects are linked into ``_rodgen_runtime<EXT_SUFFIX>``.
Every command runs with an explicit ``cwd=`` and its output goes to
``build.log`` in the build folder.
"""
from __future__ import annotations

import enum
import functools
import os
import platform
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
from .encoding import ENCODING_RULES, evex_available, rewrite_file


class Optimization(str, enum.Enum):
    """Optimisation level of the C compiler (``-O<level>``)."""

    O0 = "O0"
    O1 = "O1"
    O2 = "O2"
    O3 = "O3"
    Os = "Os"


#: Environment variable that sets the default instruction set of every compile (``BuildOptions.arch``, the
#: runtime, controllers, optimisation problems): ``native`` when unset, ``portable``, or a -march value.
ARCH_ENV = "RODGEN_ARCH"


def default_arch() -> Optional[str]:
    """The instruction set compiles use unless told otherwise: ``$RODGEN_ARCH`` (``"portable"`` is None), else
    ``"native"``. Set it to ``x86-64-v3`` to run rodgen's libraries under valgrind (which stops at AVX-512), or to
    ``portable`` for a cache shared by machines of different CPUs."""
    value = os.environ.get(ARCH_ENV, "native").strip()
    if value.startswith("-"):
        raise ValueError(f"${ARCH_ENV}={value!r} is not an instruction set: give native, portable or a -march "
                         f"value such as x86-64-v3")
    return None if value in ("", "portable") else value


@dataclass(frozen=True)
class BuildOptions:
    """How to compile a model.

    Parameters
    ----------
    compiler : the C compiler command (default: ``$CC``, else Python's compiler, else ``cc``/``gcc``).
    optimization : ``-O1`` by default. The model's C is long straight-line code, where -O2 adds
        little: the generated forward dynamics and mass matrix of vl_chain(12) ran 3 % faster at -O1,
        the exact RHS Jacobian of vl_chain(5) 4 % slower, and -O1 compiles in about 27 % less time.
        Pass ``"O2"`` or ``"O3"`` for a long simulation whose build time does not matter.
    fast_math : add ``-ffast-math`` (changes the numbers; off unless you opt in).
    extra_cflags : further flags for every compile.
    arch : the instruction set the code is compiled for (default: :func:`default_arch`, ``$RODGEN_ARCH`` or
        ``"native"``). ``"native"`` compiles for the CPU
        of the machine that builds, as a JIT would: the library runs where it was built, and the build
        cache keys it by that CPU (:func:`target_identity`), so a cache shared between machines never
        loads code built for another CPU. Any other string is passed as ``-march=<arch>`` (e.g.
        ``"x86-64-v3"``); ``None`` (or ``"portable"``) compiles for the compiler's generic target, for a
        library shipped to other machines (the FMU export does so). Measured on an AVX-512 x86-64 machine
        at -O1: the 3D biped's 10 s walk (benchmarks/bench_walk3d.py) takes 0.81x the CPU time of the
        generic build, the same trajectory to the printed digits (the model's C is ISO C99, where GCC
        contracts no multiply-add into an FMA unless asked, so the numbers stay those of the generic
        build), at the same compile time (biped12: 8.7 s either way). A compiler without ``-march=native``
        (clang on arm64 takes ``-mcpu=native``) gets what it accepts, or nothing.
    """

    compiler: Optional[str] = None
    optimization: Union[Optimization, str] = Optimization.O1
    fast_math: bool = False
    extra_cflags: tuple[str, ...] = field(default=())
    arch: Optional[str] = field(default_factory=default_arch)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "optimization", Optimization(self.optimization))
        except ValueError:
            choices = ", ".join(o.value for o in Optimization)
            raise ValueError(f"optimization {self.optimization!r} is not one of {choices}") from None
        object.__setattr__(self, "extra_cflags", tuple(str(f) for f in self.extra_cflags))
        arch = self.arch
        if arch is not None and (not isinstance(arch, str) or not arch.strip() or arch.strip().startswith("-")):
            raise ValueError(f"arch {arch!r} is not an instruction set: give 'native', a -march value such as "
                             f"'x86-64-v3', or None for a portable build")
        object.__setattr__(self, "arch", None if arch is None or arch.strip() == "portable" else arch.strip())

    def cflags(self) -> list[str]:
        """Flags of the model's C (its shared library exports every function of the model)."""
        opt = self.optimization.value if isinstance(self.optimization, Optimization) else str(self.optimization)
        flags = [f"-{opt}", "-fPIC"]
        if self.fast_math:
            flags.append("-ffast-math")
        return flags + list(self.extra_cflags)


#: Flags added for GCC to a model's C: dead-store elimination finds nothing in straight-line code that writes each
#: output once, yet takes 10-15 % of the compile (vl_chain(12): 1.15 -> 1.01 s of compiler CPU, the same run time).
GCC_MODEL_CFLAGS = ("-fno-dse", "-fno-tree-dse")


@functools.lru_cache(maxsize=None)
def version_text(compiler: tuple[str, ...]) -> str:
    """What ``<compiler> --version`` prints (asked once per process); a compiler that cannot be run is a
    BuildError, never a silent change of flags or key."""
    try:
        out = subprocess.run(list(compiler) + ["--version"], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot run the C compiler: {exc}", command=list(compiler) + ["--version"]) from None
    return out.stdout or out.stderr or ""


def is_gcc(compiler: tuple[str, ...]) -> bool:
    """Whether the compiler is GCC (its ``--version`` names the Free Software Foundation, and not clang)."""
    text = version_text(compiler)
    return "Free Software Foundation" in text and "clang" not in text.lower()


def model_cflags(options: "BuildOptions") -> list[str]:
    """Every flag a model's C is compiled with: the options' flags, the target's (:func:`arch_flags`) and, for
    GCC, :data:`GCC_MODEL_CFLAGS`."""
    compiler = find_compiler(options.compiler)
    flags = options.cflags()
    flags = flags[:2] + arch_flags(compiler, options.arch) + flags[2:]
    if is_gcc(compiler):
        flags = flags[:1] + list(GCC_MODEL_CFLAGS) + flags[1:]
    return flags


@functools.lru_cache(maxsize=None)
def accepts(compiler: tuple[str, ...], flag: str) -> bool:
    """Whether the compiler compiles an empty C file with ``flag`` (asked once per process). A compiler that
    cannot be run (or does not answer in 10 minutes) is a BuildError, never a silent change of flags."""
    cmd = list(compiler) + [flag, "-x", "c", "-c", os.devnull, "-o", os.devnull]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot ask the C compiler whether it takes {flag}: {exc}", command=cmd) from None
    return out.returncode == 0


#: Fused multiply-adds: every rodgen compile is ``-std=c99``, and GCC in an ISO mode does not contract ``a * b + c``
#: into one multiply-add (``-ffp-contract=off``) where its default gnu modes and C++ do. The generated code is
#: mostly such sums of products: chain36's RHS Jacobian takes 12 % less time with them (24.5 against 27.8 us;
#: one rounding instead of two, the same numbers to a few units in the last place).
CONTRACT_FLAG = "-ffp-contract=fast"


@functools.lru_cache(maxsize=None)
def arch_flags(compiler: tuple[str, ...], arch: Optional[str]) -> list[str]:
    """The flags that select instruction set ``arch`` (see :class:`BuildOptions`) for this compiler and let it use
    the set's fused multiply-add (:data:`CONTRACT_FLAG`, where the compiler takes it): for a portable build only
    the latter; for ``"native"``, ``-march=native`` or else ``-mcpu=native``, or neither if the compiler takes
    neither. An explicit ``arch`` the compiler rejects raises BuildError."""
    contract = [CONTRACT_FLAG] if accepts(compiler, CONTRACT_FLAG) else []
    if arch is None:
        return contract
    if arch == "native":
        for flag in ("-march=native", "-mcpu=native"):
            if accepts(compiler, flag):
                return [flag, *contract]
        return contract
    flag = f"-march={arch}"
    if not accepts(compiler, flag):
        raise BuildError(f"BuildOptions(arch={arch!r}): the C compiler {compiler[0]} rejects {flag}; give an "
                         f"instruction set it knows, 'native', or None for a portable build")
    return [flag, *contract]


def cpu_identity() -> str:
    """This machine's CPU as the operating system describes it: on Linux the model and the instruction-set
    flags of /proc/cpuinfo's first processor (the same for every process, read without running anything),
    elsewhere :func:`platform.processor` and the machine type."""
    try:
        lines = Path("/proc/cpuinfo").read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    keys = ("vendor_id", "model name", "cpu family", "model", "flags", "Features", "CPU implementer", "CPU part")
    first: dict[str, str] = {}
    for ln in lines:
        key, _, value = ln.partition(":")
        key = key.strip()
        if key in keys and key not in first:
            first[key] = " ".join(value.split())
    if first:
        return "\n".join(f"{k}: {first[k]}" for k in keys if k in first)
    return f"{platform.machine()} {platform.processor()}"


@functools.lru_cache(maxsize=None)
def target_identity(compiler: tuple[str, ...], arch: Optional[str]) -> str:
    """What the target of ``arch`` is on this machine, for the build cache's key: the flags, and for
    ``"native"`` the CPU they resolve to (:func:`cpu_identity`; with the compiler's identity, which the key
    holds too, it fixes what ``-march=native`` selects), so a build made on another CPU has another key."""
    flags = arch_flags(compiler, arch)
    if arch != "native" or not flags:
        return " ".join(flags)
    return " ".join(flags) + "\n" + cpu_identity()


#: Flags of the runtime's C and its Cython wrapper (compiled once, so optimised; the model's options
#: do not apply: the runtime's integrators call the model's functions, which carry the work). The runtime is
#: compiled for the machine's own CPU as well (:func:`runtime_cflags`).
RUNTIME_CFLAGS = ("-O2", "-fPIC") + (("-fvisibility=hidden",) if sys.platform != "win32" else ())


def runtime_cflags(compiler: tuple[str, ...]) -> list[str]:
    """Every flag of the runtime's C: :data:`RUNTIME_CFLAGS` and the default target's (:func:`arch_flags` of
    :func:`default_arch`)."""
    return list(RUNTIME_CFLAGS[:1]) + arch_flags(compiler, default_arch()) + list(RUNTIME_CFLAGS[1:])


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


def compiler_identity(compiler: tuple[str, ...]) -> str:
    """The first line of ``<compiler> --version`` (part of the build hash)."""
    lines = version_text(compiler).strip().splitlines()
    return lines[0] if lines else " ".join(compiler)


def compile_key_parts(compiler: tuple[str, ...], flags: Sequence[str], arch: Optional[str]) -> dict[str, str]:
    """The parts of a build cache key that say how it is compiled: the compiler and its identity, the flags, and
    what the target ``arch`` resolves to on this machine (:func:`target_identity`)."""
    return {"compiler": " ".join(compiler) + "\n" + compiler_identity(compiler), "cflags": " ".join(flags),
            "target": target_identity(compiler, arch)}


def model_key_parts(compiler: tuple[str, ...], options: "BuildOptions") -> dict[str, str]:
    """The compile parts of a model's build key: :func:`compile_key_parts` of :func:`model_cflags`, and for GCC
    the version of the rules its units are assembled by (:data:`~rodgen.toolchain.encoding.ENCODING_RULES`):
    whether they apply follows from the compiler, the flags and the target, which the key holds already, so
    nothing is run to compute the key."""
    parts = compile_key_parts(compiler, model_cflags(options), options.arch)
    return {**parts, "encoding": ENCODING_RULES} if is_gcc(compiler) else parts


def python_include() -> list[str]:
    paths = sysconfig.get_paths()
    out = []
    for key in ("include", "platinclude"):
        p = paths.get(key)
        if p and p not in out:
            out.append(p)
    return out


def numpy_include() -> str:
    """NumPy's C headers (the runtime's one-state methods take arrays' data through NumPy's C API)."""
    import numpy
    return str(numpy.get_include())


def ext_suffix() -> str:
    return str(sysconfig.get_config_var("EXT_SUFFIX") or (".pyd" if sys.platform == "win32" else ".so"))


def link_flags() -> list[str]:
    """Flags that link an extension module."""
    if sys.platform == "darwin":
        return ["-bundle", "-undefined", "dynamic_lookup"]
    return ["-shared"]


def library_suffix() -> str:
    """File suffix of a shared library on this platform."""
    if sys.platform == "darwin":
        return ".dylib"
    if sys.platform == "win32":
        return ".dll"
    return ".so"


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


#: Statements of a model's C below which it compiles as one unit (a second process costs more than it saves).
UNIT_MIN_STATEMENTS = 1500


def compile_units(groups: Sequence[tuple[str, int]], jobs: int) -> list[list[str]]:
    """Split weighted groups into at most ``jobs`` translation units of similar weight (largest first)."""
    units: list[tuple[int, list[str]]] = [(0, []) for _ in range(max(1, jobs))]
    for name, weight in sorted(groups, key=lambda g: (-g[1], g[0])):
        k = min(range(len(units)), key=lambda i: (units[i][0], i))
        units[k] = (units[k][0] + weight, units[k][1] + [name])
    return [sorted(names) for _, names in units if names]


def default_jobs() -> int:
    """Compiler processes a model's build runs at once: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


def _run_all(cmds: Sequence[list[str]], folder: Path, log: _Log, what: str) -> None:
    """Run the commands at once and wait for them all (BuildError for the first that fails)."""
    running: list[tuple[subprocess.Popen, list[str]]] = []
    try:
        for cmd in cmds:
            running.append((_start(cmd, folder), cmd))
        for proc, cmd in running:
            _finish(proc, cmd, folder, log, what)
    finally:
        for proc, _ in running:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def compile_model(folder: Union[str, Path], *, sources: Sequence[str], library: str,
                  options: Optional[BuildOptions] = None, macro: str = "",
                  groups: Sequence[tuple[str, int]] = (), jobs: Optional[int] = None) -> Path:
    """Compile C ``sources`` (files in ``folder``) into the shared library ``library``; return its path.

    C99, the options' flags. With ``groups`` of the first source (``ModelSpec.compile_groups``, whose
    ``#if`` guards use ``macro``) and a large enough model, the first source is compiled as up to
    ``jobs`` translation units in parallel (``-D<MACRO>_UNIT -D<MACRO>_UNIT_<GROUP>...``), then
    linked with the others. Raises BuildError (command, exit status, compiler output, folder) if a
    step fails.
    """
    global _compile_count
    options = options or BuildOptions()
    folder = Path(folder)
    cc = list(find_compiler(options.compiler))
    log = _Log(folder / "build.log")
    start = time.perf_counter()
    jobs = default_jobs() if jobs is None else jobs
    cflags = model_cflags(options)
    units = compile_units(groups, jobs) if macro and sum(w for _, w in groups) >= UNIT_MIN_STATEMENTS else []
    if len(units) < 2:
        cmd = cc + ["-std=c99", "-shared"] + cflags + list(sources) + ["-o", library, "-lm"]
        _finish(_start(cmd, folder), cmd, folder, log, "compiling the model's C")
    else:
        first, rest = sources[0], list(sources[1:])
        stem = Path(first).stem
        # on an AVX-512 target GCC's units go through the assembler with shorter encodings (encoding.py)
        evex = evex_available(tuple(cc), tuple(cflags))
        step, suffix = ("-S", "s") if evex else ("-c", "o")
        cmds = []
        for k, names in enumerate(units):
            defines = [f"-D{macro}_UNIT"] + [f"-D{macro}_UNIT_{g.upper()}" for g in names]
            cmds.append(cc + [step, "-std=c99"] + cflags + defines + [first, "-o", f"{stem}.{k}.{suffix}"])
        cmds += [cc + ["-c", "-std=c99"] + cflags + [src, "-o", f"{Path(src).stem}.o"] for src in rest]
        _run_all(cmds, folder, log, "compiling the model's C")
        if evex:
            marked = sum(rewrite_file(folder / f"{stem}.{k}.s") for k in range(len(units)))
            log.add(f"# {marked} instructions EVEX-encoded for their one-byte displacements\n")
            _run_all([cc + ["-c"] + cflags + [f"{stem}.{k}.s", "-o", f"{stem}.{k}.o"] for k in range(len(units))],
                     folder, log, "assembling the model's units")
        objects = [f"{stem}.{k}.o" for k in range(len(units))] + [f"{Path(src).stem}.o" for src in rest]
        cmd = cc + ["-shared"] + cflags + objects + ["-o", library, "-lm"]
        _finish(_start(cmd, folder), cmd, folder, log, "linking the model's library")
    _compile_count += 1
    log.add(f"# built {library} in {time.perf_counter() - start:.2f} s\n")
    return folder / library


def compile_extension(folder: Union[str, Path], *, pyx: str, sources: Sequence[str], module: str,
                      compiler: Optional[str] = None, cflags: Sequence[str] = RUNTIME_CFLAGS) -> Path:
    """Compile ``pyx`` and the C ``sources`` (files in ``folder``) into the extension ``module``.

    Cython runs while the compiler works on the C sources; then Cython's output is compiled and
    everything is linked into ``<module><EXT_SUFFIX>``. Returns its path; raises BuildError if a
    step fails.
    """
    folder = Path(folder)
    cc = list(find_compiler(compiler))
    log = _Log(folder / "build.log")
    start = time.perf_counter()
    cy_c = f"{module}.c"
    cmd_cython = [sys.executable, "-m", "cython", "-3", "--fast-fail", pyx, "-o", cy_c]
    includes = [f"-I{p}" for p in python_include()] + [f"-I{numpy_include()}", "-I.",
                                                         "-DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION"]
    cmd_c = [cc + ["-c", "-std=c99"] + list(cflags) + [src, "-o", f"{Path(src).stem}.o"] for src in sources]
    cmd_wrap = cc + ["-c"] + list(cflags) + includes + [cy_c, "-o", f"{module}.o"]
    target = f"{module}{ext_suffix()}"
    objects = [f"{module}.o"] + [f"{Path(src).stem}.o" for src in sources]
    cmd_link = cc + link_flags() + objects + ["-o", target, "-lm"]

    running: list[subprocess.Popen] = []
    try:
        p_cython = _start(cmd_cython, folder)
        running.append(p_cython)
        p_c = []
        for cmd in cmd_c:
            p_c.append(_start(cmd, folder))
            running.append(p_c[-1])
        _finish(p_cython, cmd_cython, folder, log, "cython")
        p_wrap = _start(cmd_wrap, folder)
        running.append(p_wrap)
        for proc, cmd in zip(p_c, cmd_c):
            _finish(proc, cmd, folder, log, f"compiling {cmd[-3]}")
        _finish(p_wrap, cmd_wrap, folder, log, "compiling the Cython module")
    finally:
        for proc in running:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    _finish(_start(cmd_link, folder), cmd_link, folder, log, "linking")
    log.add(f"# built {target} in {time.perf_counter() - start:.2f} s\n")
    return folder / target
