"""rodgen generate/build --forward and --no-jacobian reach the code stage."""
from __future__ import annotations

from pathlib import Path

from rodgen.cli import main

EX = Path(__file__).resolve().parents[1] / "examples"


def test_forward_and_jacobian_flags(tmp_path: Path, capsys) -> None:
    assert main(["generate", str(EX / "exo5.yaml"), "-o", str(tmp_path / "a"), "--forward", "cholesky",
                 "--no-jacobian"]) == 0
    header = (tmp_path / "a" / "exo5.h").read_text()
    assert "Cholesky" in header and "exo5_rhs_jacobian" not in header
    assert main(["generate", str(EX / "exo5.yaml"), "-o", str(tmp_path / "b")]) == 0
    header = (tmp_path / "b" / "exo5.h").read_text()
    assert "articulated-body" in header.lower() and "exo5_rhs_jacobian" in header


def test_forward_aba_refused_where_it_does_not_apply(tmp_path: Path, capsys) -> None:
    assert main(["generate", str(EX / "two_link_masses.yaml"), "-o", str(tmp_path), "--forward", "aba"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rodgen: error:") and "two_link_masses" in err and "intermediate fractions" in err


def test_build_reports_its_stages_when_asked(tmp_path: Path, capsys) -> None:
    import rodgen
    rodgen.build(rodgen.load(EX / "pendulum_vl.yaml"), build_dir=tmp_path, progress=True)
    err = capsys.readouterr().err
    assert "building pendulum_vl" in err and "3" in err
