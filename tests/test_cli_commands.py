"""The command line: generate, build, and one-line errors with exit status 2."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO
from rodgen.cli import main


def test_generate_writes_the_model_and_the_runtime(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rodgen.codegen.runtime import runtime_sources
    out = tmp_path / "gen"
    assert main(["generate", str(EXAMPLES / "exo5.yaml"), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted({"exo5.c", "exo5.h"} | set(runtime_sources()))
    printed = capsys.readouterr().out.split()
    assert str(out / "exo5.h") in printed


def test_build_says_where(tmp_path: Path, capsys: pytest.CaptureFixture[str], build_dir: Path) -> None:
    assert main(["build", str(EXAMPLES / "double_pendulum.yaml"), "--build-dir", str(build_dir)]) == 0
    out = capsys.readouterr().out
    assert "built double_pendulum: nq=2, nu=2, np=5" in out
    module = Path(out.split("library: ")[1].split()[0])
    assert module.is_file() and module.parent.parent == build_dir


def test_bad_model_is_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: my model\nlinks: []\n")
    assert main(["generate", str(bad), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rodgen: error: ") and err.count("\n") == 1
    assert "'my model' is not a valid name" in err
    assert not (tmp_path / "o").exists()


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", str(tmp_path / "nope.yaml"), "--build-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rodgen: error: ") and "nope.yaml" in err and err.count("\n") == 1


def test_failed_build_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["build", str(EXAMPLES / "pendulum_vl.yaml"), "--build-dir", str(tmp_path),
               "--compiler", "no-such-cc-rodgen"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err == "rodgen: error: the C compiler 'no-such-cc-rodgen' was not found on PATH\n"


def test_arch_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["build", str(EXAMPLES / "pendulum_vl.yaml"), "--build-dir", str(tmp_path), "--arch", "no-such-cpu"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("rodgen: error: BuildOptions(arch='no-such-cpu'): the C compiler ") and err.count("\n") == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("pendulum_vl-")]
    rc = main(["build", str(EXAMPLES / "pendulum_vl.yaml"), "--build-dir", str(tmp_path), "--arch", "portable"])
    assert rc == 0
    meta = next(tmp_path.glob("pendulum_vl-*/rodgen-build.json")).read_text()
    assert "-march" not in meta and "-mcpu" not in meta


def test_entry_point_without_traceback(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "rodgen.cli", "generate", str(tmp_path / "nope.yaml"), "-o",
                          str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and res.stderr.startswith("rodgen: error:")


def test_method_choices_are_the_derivation_methods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every derivation method is offered by --method (the planar recursion included), and it is used."""
    from rodgen.codegen.options import METHODS
    from rodgen.symbolic import available_methods
    assert sorted(METHODS) == sorted(available_methods())
    out = tmp_path / "gen"
    assert main(["generate", str(EXAMPLES / "pendulum_vl.yaml"), "-o", str(out), "--method", "planar"]) == 0
    assert (out / "pendulum_vl.c").is_file()
