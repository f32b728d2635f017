"""One derivation method by default for every entry point that generates code: ``rodgen build``,
``rodgen generate``, ``rodgen simulate``, ``rodgen.build`` and ``rodgen.generate`` make the same C
and share one cache entry."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rodgen
import rodgen.toolchain
from conftest import EXAMPLES
from rodgen.cli import main

MODEL = str(EXAMPLES / "double_pendulum.yaml")


def folders(build_dir: Path) -> list[Path]:
    return sorted(p for p in build_dir.iterdir() if not p.name.startswith("."))


def test_build_and_simulate_share_a_cache_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "cache"
    assert main(["build", MODEL, "--build-dir", str(d)]) == 0
    (built,) = folders(d)
    assert f"library: {built / 'libdouble_pendulum.so'}" in capsys.readouterr().out

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was derived or compiled again")

    # simulate finds the build of `rodgen build` without deriving or compiling
    monkeypatch.setattr(rodgen.toolchain, "compile_model", no_work)
    monkeypatch.setattr("rodgen.codegen.equations_of", no_work)
    csv = tmp_path / "run.csv"
    assert main(["simulate", MODEL, "--t-end", "0.2", "--dt", "0.01", "--build-dir", str(d),
                 "--csv", str(csv)]) == 0
    assert folders(d) == [built]
    # and so does the Python API
    robot = rodgen.build(rodgen.load(MODEL), build_dir=d)
    assert robot.folder == built
    manifest = json.loads((built / "rodgen-build.json").read_text())
    assert manifest["method"] == rodgen.codegen.DEFAULT_METHOD == "recursive"
    # the simulated run is the physics of the model: no inputs, no dampers, energy is conserved
    data = np.loadtxt(csv, delimiter=",", skiprows=1)
    E = data[:, -2] + data[:, -1]
    assert np.ptp(E) < 1e-6 * np.abs(E).max()


def test_generate_writes_the_c_that_build_compiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """build compiles generate's C: at once, or (the RHS Jacobian of a small model) on its first use."""
    d = tmp_path / "cache"
    robot = rodgen.build(rodgen.load(MODEL), build_dir=d)
    out = tmp_path / "gen"
    assert main(["generate", MODEL, "-o", str(out)]) == 0
    generated = (out / "double_pendulum.c").read_text()
    assert rodgen.generate(rodgen.load(MODEL)).source == generated
    # the model without its Jacobian now ...
    without = rodgen.generate(rodgen.load(MODEL), options=rodgen.codegen.CodegenOptions(jacobian=False)).source
    assert (robot.folder / "double_pendulum.c").read_text() == without
    # ... and generate's C, Jacobian included, when the Jacobian is first used
    assert not robot.jacobian_built
    robot.rhs_jacobian([0.1, 0.2], [0.0, 0.0])
    (full,) = [f for f in d.iterdir() if f.is_dir() and (f / "double_pendulum.c").is_file() and f != robot.folder]
    assert (full / "double_pendulum.c").read_text() == generated


def test_the_default_is_written_once(capsys: pytest.CaptureFixture[str]) -> None:
    import inspect

    from rodgen.codegen import DEFAULT_METHOD
    from rodgen.codegen.options import DEFAULT_METHOD as in_options
    assert DEFAULT_METHOD is in_options
    for command in ("build", "generate", "simulate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert f"default: {DEFAULT_METHOD}," in " ".join(capsys.readouterr().out.split())
    # no entry point that generates code names a method of its own
    for fn in (rodgen.build, rodgen.generate):
        assert inspect.signature(fn).parameters["method"].default is None

