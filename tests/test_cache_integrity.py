"""The build cache checks what it loads and survives a full or read-only disk.

A library in the cache carries the SHA-256 its build recorded in the manifest; a truncated, garbled,
emptied or changed library is built again (never loaded), which the tests check in a child process (a
damaged library may kill the process that maps it) against the closed-form mass matrix of the double
pendulum. A build that cannot write gives a BuildError naming the folder and the cause, and leaves no
temporary folder (nor the bulk of a failed one) behind, so a retry has the space it needs.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import rodgen
from rodgen.errors import BuildError
from rodgen.toolchain import cache, compile_files, load_module

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "examples" / "double_pendulum.yaml"
Q = [0.3, -0.8]


def closed_form_mass(q: list[float], m1: float = 1.0, m2: float = 0.8, l1: float = 1.0, l2: float = 0.7) -> np.ndarray:
    """Two uniform rods, relative angles: the textbook mass matrix."""
    c = np.cos(q[1])
    m11 = m1 * l1 ** 2 / 3 + m2 * (l1 ** 2 + l2 ** 2 / 3 + l1 * l2 * c)
    m12 = m2 * (l2 ** 2 / 3 + l1 * l2 * c / 2)
    return np.array([[m11, m12], [m12, m2 * l2 ** 2 / 3]])


CHILD = textwrap.dedent("""\
    import json, sys
    import rodgen
    from rodgen.toolchain import compile_count
    robot = rodgen.build(rodgen.load(sys.argv[1]), build_dir=sys.argv[2], progress=False)
    print(json.dumps({"path": str(robot.path), "M": robot.mass_matrix(json.loads(sys.argv[3])).tolist(),
                      "compiles": compile_count()}))
    """)


def build_in_child(model: Path, build_dir: Path) -> dict[str, Any]:
    """``rodgen.build`` + the mass matrix at Q in a fresh process; fails the test on a crash or an error."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "generator"), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", CHILD, str(model), str(build_dir), json.dumps(Q)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, f"the child exited with {out.returncode}:\n{out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _truncate(lib: Path, other: Path) -> None:
    data = lib.read_bytes()
    lib.write_bytes(data[: len(data) // 2])


def _garble(lib: Path, other: Path) -> None:
    lib.write_bytes(np.random.default_rng(7).integers(0, 256, lib.stat().st_size, dtype=np.uint8).tobytes())


def _empty(lib: Path, other: Path) -> None:
    lib.write_bytes(b"")


def _change(lib: Path, other: Path) -> None:
    """The library of the same model name with another default mass: loads fine, gives other numbers."""
    shutil.copyfile(other, lib)


@pytest.fixture(scope="module")
def changed_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library named like the double pendulum's whose default m2 is 2.0 instead of 0.8."""
    folder = tmp_path_factory.mktemp("other")
    text = MODEL.read_text().replace("m2: {value: 0.8", "m2: {value: 2.0")
    assert "value: 2.0" in text
    (folder / "double_pendulum.yaml").write_text(text)
    got = build_in_child(folder / "double_pendulum.yaml", folder / "build")
    np.testing.assert_allclose(got["M"], closed_form_mass(Q, m2=2.0), rtol=1e-12)
    return Path(got["path"])


@pytest.mark.parametrize("damage", [_truncate, _garble, _empty, _change])
def test_a_damaged_library_is_built_again_not_loaded(tmp_path: Path, changed_library: Path,
                                                     damage: Callable[[Path, Path], None]) -> None:
    first = build_in_child(MODEL, tmp_path)
    np.testing.assert_allclose(first["M"], closed_form_mass(Q), rtol=1e-12)
    lib = Path(first["path"])
    manifest = json.loads((lib.parent / cache.MANIFEST).read_text())
    assert manifest["sha256"] == {lib.name: cache.checksum(lib)}
    damage(lib, changed_library)
    assert cache.checksum(lib) != manifest["sha256"][lib.name]
    again = build_in_child(MODEL, tmp_path)
    assert again["compiles"] == 1, "the damaged library was loaded instead of built again"
    assert again["path"] == first["path"]
    np.testing.assert_allclose(again["M"], closed_form_mass(Q), rtol=1e-12)
    assert cache.checksum(lib) == manifest["sha256"][lib.name]  # the same build, byte for byte
    warm = build_in_child(MODEL, tmp_path)
    assert warm["compiles"] == 0


@pytest.fixture(scope="module")
def files() -> Any:
    return rodgen.generate(rodgen.load(MODEL))


def test_load_module_refuses_a_library_that_does_not_match_its_manifest(tmp_path: Path, files: Any) -> None:
    path = compile_files(files, build_dir=tmp_path)
    _garble(path, path)
    with pytest.raises(BuildError, match="is not the one that was built .* the file was changed or damaged"):
        load_module(path)
    assert not cache.complete(path.parent, path.name)


def test_a_damaged_controller_library_is_compiled_again(tmp_path: Path) -> None:
    from rodgen.toolchain.controller import compile_controller
    src = tmp_path / "zero.c"
    src.write_text("int zero(void *c, double t, const double *y, double *u) { u[0] = 0; return 0; }\n")
    lib = compile_controller(src, build_dir=tmp_path / "build")
    good = cache.checksum(lib)
    _truncate(lib, lib)
    assert compile_controller(src, build_dir=tmp_path / "build") == lib
    assert cache.checksum(lib) == good


def test_a_damaged_runtime_is_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime's cache follows the same discipline: a truncated extension module is not returned; the
    build is run again (here the compile step copies the good module in, to spare a 20 s compile)."""
    from rodgen.toolchain import runtime
    good = runtime.runtime_path()
    cache_root = tmp_path / "cache"
    shutil.copytree(good.parent, cache_root / good.parent.name)
    copy = cache_root / good.parent.name / good.name
    _truncate(copy, copy)
    monkeypatch.setenv(cache.CACHE_ENV, str(cache_root))
    calls = []

    def fake_compile(folder: Any, *, module: str, **kw: Any) -> None:
        calls.append(folder)
        shutil.copyfile(good, Path(folder) / good.name)

    monkeypatch.setattr(runtime, "compile_extension", fake_compile)
    assert runtime.runtime_path() == copy
    assert len(calls) == 1
    assert cache.checksum(copy) == cache.checksum(good)


# -- a read-only folder, a full disk ------------------------------------------------------------------------

def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith((".tmp-", ".failed-", ".stale-")))


def test_a_build_folder_that_cannot_be_created_is_a_build_error(tmp_path: Path, files: Any) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    root = blocker / "models"
    with pytest.raises(BuildError, match=f"cannot write the build folder {root}: .*choose a writable build_dir"):
        compile_files(files, build_dir=root)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_build_folder_is_a_build_error(tmp_path: Path, files: Any) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o555)
    try:
        with pytest.raises(BuildError, match=f"cannot write the build folder {root}: .*not writable"):
            compile_files(files, build_dir=root)
    finally:
        root.chmod(0o755)


def test_a_folder_that_refuses_writes_is_a_build_error(tmp_path: Path, files: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """As root chmod does not stop writes: the refusal is made by the write of the sources."""
    def refuse(self: Any, folder: Any) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(Path(folder) / "x.c"))

    monkeypatch.setattr(type(files), "write", refuse)
    with pytest.raises(BuildError, match=f"cannot write the build folder {tmp_path}: Permission denied "
                                         r"\(the folder is not writable\)"):
        compile_files(files, build_dir=tmp_path)
    assert _leftovers(tmp_path) == []


def test_a_full_disk_is_a_build_error_and_the_retry_has_the_space(tmp_path: Path, files: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import rodgen.toolchain as tc
    real = tc.compile_model

    def full_disk(folder: Any, **kw: Any) -> None:
        (Path(folder) / "partial.o").write_bytes(b"\0" * 100_000)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(folder) / "partial.o"))

    monkeypatch.setattr(tc, "compile_model", full_disk)
    with pytest.raises(BuildError) as info:
        compile_files(files, build_dir=tmp_path)
    assert f"cannot write the build folder {tmp_path}: No space left on device" in str(info.value)
    assert info.value.folder == str(tmp_path)
    assert _leftovers(tmp_path) == []  # the failed build's space is free again
    monkeypatch.setattr(tc, "compile_model", real)
    path = compile_files(files, build_dir=tmp_path)
    np.testing.assert_allclose(load_module(path).mass_matrix(Q), closed_form_mass(Q), rtol=1e-12)


def test_a_failed_compile_keeps_its_log_not_its_objects_and_the_retry_clears_it(
        tmp_path: Path, files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiler itself failing (it too may run out of space): the sources and the log stay for
    inspection, the objects go, and the next attempt removes the folder before it starts."""
    import rodgen.toolchain as tc
    real = tc.compile_model

    def compiler_fails(folder: Any, **kw: Any) -> None:
        (Path(folder) / "unit0.o").write_bytes(b"\0" * 100_000)
        (Path(folder) / "build.log").write_text("fatal error: error writing to unit0.o: No space left on device\n")
        raise BuildError("compiling failed", returncode=1, log="No space left on device", folder=str(folder))

    monkeypatch.setattr(tc, "compile_model", compiler_fails)
    with pytest.raises(BuildError, match="No space left on device"):
        compile_files(files, build_dir=tmp_path)
    (failed,) = [p for p in tmp_path.iterdir() if p.name.startswith(".failed-")]
    assert (failed / "build.log").is_file() and (failed / files.spec.source).is_file()
    assert not (failed / "unit0.o").exists()
    monkeypatch.setattr(tc, "compile_model", real)
    path = compile_files(files, build_dir=tmp_path)
    assert _leftovers(tmp_path) == []
    np.testing.assert_allclose(load_module(path).mass_matrix(Q), closed_form_mass(Q), rtol=1e-12)
