"""The build stage: cache reuse, hashing, failures, interrupted and concurrent builds."""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import rodgen
import rodgen.toolchain
from conftest import EXAMPLES, REPO
from rodgen.codegen import CodegenOptions, generate
from rodgen.errors import BuildError
from rodgen.toolchain import BuildOptions, build_key, compile_count

compiler_mod = importlib.import_module("rodgen.toolchain.compiler")


def model() -> rodgen.Model:
    return rodgen.load(EXAMPLES / "pendulum_vl.yaml")


def test_second_build_does_not_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = rodgen.build(model(), build_dir=tmp_path)
    before = compile_count()

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("the compiler ran for a cached model")

    monkeypatch.setattr(rodgen.toolchain, "compile_model", no_compile)
    second = rodgen.build(model(), build_dir=tmp_path)
    assert compile_count() == before
    assert second.path == first.path
    folders = [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1 and folders[0].startswith("pendulum_vl-") and len(folders[0]) == len("pendulum_vl-") + 12
    assert {"pendulum_vl.h", "pendulum_vl.c", "libpendulum_vl.so", "rodgen-build.json", "build.log"} <= \
        {p.name for p in (tmp_path / folders[0]).iterdir()}


def test_hash_covers_model_and_options() -> None:
    opts = BuildOptions()
    base = build_key(generate(model()), opts)
    changed_default = model()
    changed_default.parameters[-1].value = 0.77
    assert build_key(generate(changed_default), opts) != base
    changed_field = model()
    changed_field.links[0].initial = 0.3
    assert build_key(generate(changed_field), opts) != base
    assert build_key(generate(model()), BuildOptions(optimization="O3")) != base
    assert build_key(generate(model()), BuildOptions(extra_cflags=("-g",))) != base
    assert build_key(generate(model()), opts) == base
    assert build_key(generate(model(), method="matrix"), opts) != base      # the default is recursive


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="optimization 'O9' is not one of O0, O1, O2, O3, Os"):
        BuildOptions(optimization="O9")
    assert "-ffast-math" not in BuildOptions().cflags()
    assert BuildOptions().cflags()[0] == "-O1"
    assert "-ffast-math" in BuildOptions(fast_math=True).cflags()


def test_failed_compile_raises_build_error_with_log(tmp_path: Path) -> None:
    opts = BuildOptions(extra_cflags=("-include", "no_such_header_rodgen.h"))
    with pytest.raises(BuildError) as err:
        rodgen.build(model(), build_dir=tmp_path, options=opts)
    exc = err.value
    assert exc.command and exc.returncode not in (None, 0)
    assert "no_such_header_rodgen.h" in exc.log
    assert exc.folder and Path(exc.folder).is_dir() and (Path(exc.folder) / "build.log").is_file()
    assert "building the model 'pendulum_vl' failed" in str(exc)
    # nothing that a later build would import
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("pendulum_vl-")]


def test_missing_compiler_is_a_build_error(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="the C compiler 'no-such-cc-rodgen' was not found"):
        rodgen.build(model(), build_dir=tmp_path, options=BuildOptions(compiler="no-such-cc-rodgen"))


def test_interrupted_build_is_never_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build killed half-way leaves only a .tmp folder; the next build ignores it and compiles."""

    def interrupted(folder: Path, **kwargs: object) -> None:
        (Path(folder) / "partial.o").write_text("")
        raise KeyboardInterrupt

    monkeypatch.setattr(rodgen.toolchain, "compile_model", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rodgen.build(model(), build_dir=tmp_path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("pendulum_vl-")]
    monkeypatch.undo()
    before = compile_count()
    sys_ = rodgen.build(model(), build_dir=tmp_path)
    assert compile_count() == before + 1
    assert sys_.nq == 2


def test_incomplete_folder_is_rebuilt(tmp_path: Path) -> None:
    first = rodgen.build(model(), build_dir=tmp_path)
    first.path.unlink()  # a module deleted by hand
    before = compile_count()
    # a new process would import it from the file; the folder is rebuilt first
    again = rodgen.build(model(), build_dir=tmp_path)
    assert compile_count() == before + 1
    assert again.path.is_file()


CONCURRENT = """
import sys, rodgen, rodgen.toolchain
from rodgen.toolchain import compile_count
s = rodgen.build(rodgen.load(sys.argv[1]), build_dir=sys.argv[2])
print(compile_count(), s.path)
"""


def test_concurrent_builds_compile_once(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(EXAMPLES / "two_link_masses.yaml"),
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
             for _ in range(3)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
    counts = [int(out.split()[0]) for out, _ in results]
    paths = {out.split()[1] for out, _ in results}
    assert sum(counts) == 1, counts
    assert len(paths) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_default_build_dir_is_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing lands in the working directory; RODGEN_CACHE_DIR moves the cache, XDG_CACHE_HOME is the fallback.
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    from rodgen.toolchain import cache
    (tmp_path / "cache").mkdir()
    for runtime in cache.user_cache_dir().glob("_runtime-*"):  # the compiled runtime, not built again
        (tmp_path / "cache" / runtime.name).symlink_to(runtime)
    monkeypatch.setenv("RODGEN_CACHE_DIR", str(tmp_path / "cache"))
    robot = rodgen.build(model())
    assert robot.path.parent.parent == tmp_path / "cache" / "models"
    assert list(work.iterdir()) == []
    monkeypatch.delenv("RODGEN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_build_dir() == tmp_path / "xdg" / "rodgen" / "models"


def test_build_touches_no_global_state(tmp_path: Path) -> None:
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    rodgen.build(model(), build_dir=tmp_path)
    assert sys.path == path_before
    assert not {m for m in set(sys.modules) - modules_before if m.startswith("_pendulum")}


def test_parallel_units_give_the_equations_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's C compiled as three translation units (#if guards per routine group) computes what
    SymPy computes from the Equations, for every routine of the table."""
    import numpy as np
    from test_build_numeric import Reference, close, random_state
    monkeypatch.setattr(compiler_mod, "UNIT_MIN_STATEMENTS", 0)
    monkeypatch.setattr(compiler_mod, "default_jobs", lambda: 3)
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "exo5.yaml"), method="recursive")
    sys_ = rodgen.build(eqs, build_dir=tmp_path, codegen=CodegenOptions(jacobian=True))
    log = (sys_.folder / "build.log").read_text()
    assert log.count("-DEXO5_UNIT ") == 3 and "-DEXO5_UNIT_TABLE" in log
    assert all(sys_._m.info()["routines"][n] for n in ("mass_matrix", "forward_dynamics", "rhs_jacobian"))
    ref = Reference(eqs)
    seed = 21
    q, qd, u, p = random_state(np.random.default_rng(seed), sys_)
    M = ref.call(ref.M, q, qd, u, p)
    bias = ref.call(ref.bias, q, qd, u, p).ravel()
    close(sys_.mass_matrix(q, p), M, 1e-12, f"seed={seed}")
    close(sys_.bias(q, qd, p), bias, 1e-12, f"seed={seed}")
    want = np.linalg.solve(M, ref.call(ref.B, q, qd, u, p) @ u - bias)
    close(sys_.forward_dynamics(q, qd, u, p), want, 1e-12 * np.linalg.cond(M), f"seed={seed}")


def test_builds_are_for_this_cpu_and_keyed_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default compiles for the building machine's CPU; the key follows what "native" resolves to, so a cache
    shared with a machine of another CPU holds two builds, never one loaded on the wrong CPU."""
    cc = compiler_mod.find_compiler(None)
    native = compiler_mod.model_cflags(BuildOptions())
    portable = compiler_mod.model_cflags(BuildOptions(arch=None))
    if compiler_mod.accepts(cc, "-march=native"):
        assert "-march=native" in native and "-march=native" in compiler_mod.runtime_cflags(cc)
    assert not [f for f in portable if f.startswith(("-march", "-mcpu"))]
    assert BuildOptions(arch="portable").arch is None
    files = generate(model())
    base = build_key(files, BuildOptions())
    assert build_key(files, BuildOptions(arch=None)) != base
    real = compiler_mod.target_identity

    def other_cpu(compiler: tuple[str, ...], arch: object) -> str:
        return real(compiler, arch) + ("\n-march=another-cpu" if arch == "native" else "")  # type: ignore[arg-type]

    monkeypatch.setattr(compiler_mod, "target_identity", other_cpu)
    assert build_key(files, BuildOptions()) != base
    assert build_key(files, BuildOptions(arch=None)) == build_key(files, BuildOptions(arch="portable"))


def test_a_portable_build_gives_the_native_numbers(tmp_path: Path) -> None:
    import numpy as np
    native = rodgen.build(model(), build_dir=tmp_path)
    portable = rodgen.build(model(), build_dir=tmp_path, options=BuildOptions(arch=None))
    assert portable.path != native.path
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd = rng.uniform(-1, 1, native.nq), rng.uniform(-1, 1, native.nq)
        u = rng.uniform(-1, 1, native.nu)
        np.testing.assert_allclose(portable.forward_dynamics(q, qd, u), native.forward_dynamics(q, qd, u),
                                   rtol=1e-13, atol=1e-13)


def test_an_unknown_instruction_set_is_named() -> None:
    with pytest.raises(BuildError, match=r"BuildOptions\(arch='no-such-cpu'\): the C compiler .* rejects "
                                         r"-march=no-such-cpu"):
        compiler_mod.model_cflags(BuildOptions(arch="no-such-cpu"))
    with pytest.raises(ValueError, match="arch '-mavx2' is not an instruction set"):
        BuildOptions(arch="-mavx2")


def test_the_default_instruction_set_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    files = generate(model())
    monkeypatch.setenv("RODGEN_ARCH", "portable")
    assert BuildOptions().arch is None and build_key(files, BuildOptions()) == build_key(files, BuildOptions(arch=None))
    cc = compiler_mod.find_compiler(None)
    assert not [f for f in compiler_mod.runtime_cflags(cc) if f.startswith(("-march", "-mcpu"))]
    monkeypatch.setenv("RODGEN_ARCH", "-mavx2")
    with pytest.raises(ValueError, match=r"\$RODGEN_ARCH='-mavx2' is not an instruction set"):
        BuildOptions()
    monkeypatch.delenv("RODGEN_ARCH")
    assert BuildOptions().arch == "native"


def test_compiled_templates_are_kept_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The code stage's compiled Jinja templates are kept in a folder: a later environment renders the same
    files without compiling them; damaged files are compiled again; a folder that cannot be made is left alone."""
    import jinja2

    from rodgen.codegen import lower
    render = importlib.import_module("rodgen.codegen.render")
    spec = lower(rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"), method="recursive"))
    plain = render.render(spec).files
    folder = tmp_path / "templates"

    def fresh(where: Path) -> None:
        render.environment.cache_clear()
        render.keep_compiled_templates(where)

    try:
        fresh(folder)
        assert render.render(spec).files == plain
        kept = sorted(folder.iterdir())
        assert kept
        fresh(folder)
        with monkeypatch.context() as m:
            m.setattr(jinja2.Environment, "compile", lambda *a, **k: pytest.fail("a kept template compiled again"))
            assert render.render(spec).files == plain
        for f in kept:
            f.write_bytes(b"not a compiled template")
        fresh(folder)
        assert render.render(spec).files == plain
        (tmp_path / "file").write_text("in the way")
        fresh(tmp_path / "file" / "templates")
        assert render.environment().bytecode_cache is None
        assert render.render(spec).files == plain
    finally:
        render.environment.cache_clear()
