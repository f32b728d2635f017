"""Validation: telescopic sections that do not fit, parameters made non-positive at run time, misspelt
names with a suggestion, and the YAML line of every semantic error."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from conftest import EXAMPLES
from rodgen.cli import main
from rodgen.errors import ModelError
from rodgen.model.values import check_parameter_values

ARM = EXAMPLES / "telescopic_arm.yaml"
TEXT = ARM.read_text()


def write(tmp_path: Path, old: str, new: str) -> Path:
    assert old in TEXT
    path = tmp_path / "arm.yaml"
    path.write_text(TEXT.replace(old, new, 1))
    return path


def line_of(path: Path, fragment: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if fragment in ln)


def test_telescopic_shorter_than_its_inner_section(tmp_path: Path) -> None:
    path = write(tmp_path, "        length: 0.7", "        length: 0.3")
    with pytest.raises(ModelError) as err:
        rodgen.load(path)
    assert str(err.value) == (f"{path}: line {line_of(path, 'length: 0.3')}, link 'fore', segment 'fore_tele'.length: "
                              f"the length 0.3 is shorter than the inner section (length L_in = 0.45), which would "
                              f"reach behind the segment's start")


def test_telescopic_limits_and_overlap(tmp_path: Path) -> None:
    path = write(tmp_path, "        damping: c_ext", "        damping: c_ext\n        limits: [0.2, 0.9]")
    with pytest.raises(ModelError, match=r"segment 'fore_tele'.limits: the lower limit 0.2 is shorter than the "
                                         r"inner section"):
        rodgen.load(path)
    path = write(tmp_path, "        damping: c_ext", "        damping: c_ext\n        limits: [0.5, 1.2]")
    with pytest.raises(ModelError, match=r"the upper limit 1.2 the sections no longer overlap \(outer L_out \+ "
                                         r"inner L_in = 0.95\)"):
        rodgen.load(path)
    # the sections of the example fit from 0.45 to 0.95
    rodgen.load(write(tmp_path, "        damping: c_ext", "        damping: c_ext\n        limits: [0.45, 0.95]"))


def test_parameters_at_run_time(build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(ARM), build_dir=build_dir)
    y0 = robot.initial_state()
    with pytest.raises(ModelError, match=r"link 'upper', segment 'upper_rod'.rods\[0\].mass: must be positive, "
                                         r"got m1 = -1 \(with p: m1 = -1\)"):
        robot.simulate(y0, 0.1, 1e-3, p={"m1": -1.0})
    p = robot.parameter_vector(L_in=0.9)
    with pytest.raises(ModelError, match=r"segment 'fore_tele'.length: the length 0.7 is shorter than the inner "
                                         r"section \(0.9\) \(with p: L_in = 0.9\)"):
        robot.simulate(y0, 0.1, 1e-3, p=p)
    with pytest.raises(ModelError, match=r"link 'upper'.joint.damping: must not be negative"):
        robot.simulate(y0, 0.1, 1e-3, p={"c_joint": -0.1})
    # values that keep every sign rule run, and change the motion
    heavy = robot.simulate(y0, 0.2, 1e-3, p={"m_tip": 3.0})
    light = robot.simulate(y0, 0.2, 1e-3)
    assert heavy.ok and not np.allclose(heavy.q[-1], light.q[-1])
    vm = rodgen.load(ARM).validate()
    check_parameter_values(vm, {"m1": 3.0, "L1": 0.2})
    with pytest.raises(ModelError, match=r"segment 'upper_rod'.length: must be positive, got L1 = -0.2 "
                                         r"\(with --param: L1 = -0.2\)"):
        check_parameter_values(vm, {"L1": -0.2}, what="--param")


def test_cli_param_checks_and_exit_status(capsys: pytest.CaptureFixture[str], build_dir: Path) -> None:
    common = [str(ARM), "--t-end", "0.01", "--build-dir", str(build_dir)]
    assert main(["simulate", *common, "--param", "m_tip=-0.3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rodgen: error: ") and "masses[0].mass: must be positive, got m_tip = -0.3 (with --param: " \
                                                   "m_tip = -0.3)" in err
    assert main(["simulate", *common, "--param", "m_tipp=0.3"]) == 2
    assert "--param m_tipp: the model has no such parameter (did you mean 'm_tip'?)" in capsys.readouterr().err
    assert main(["simulate", *common, "--set", "th_uper=0.3"]) == 2
    assert "--set th_uper: not a coordinate (did you mean 'th_upper'?)" in capsys.readouterr().err


def test_misspelt_names_and_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "    parent: upper", "    parnet: upper")
    with pytest.raises(ModelError) as err:
        rodgen.load(path)
    assert f"line {line_of(path, 'parnet')}, link 'fore'.parnet: unknown field 'parnet' (did you mean 'parent'?)" \
        in str(err.value)
    path = write(tmp_path, "{damping: c_joint}", "{damping: c_jiont}")
    with pytest.raises(ModelError) as err:
        rodgen.load(path)
    assert f"line {line_of(path, 'c_jiont')}, link 'upper'.joint.damping: parameter 'c_jiont' is used but never " \
           f"defined (did you mean 'c_joint'?)" in str(err.value)
    path = write(tmp_path, "  m1: 2.0", "  m1: -2.0")
    with pytest.raises(ModelError) as err:
        rodgen.load(path)
    assert f"line {line_of(path, 'rod: {mass: m1}')}, link 'upper', segment 'upper_rod'.rods[0].mass: must be " \
           f"positive" in str(err.value)
    path = write(tmp_path, "inner: {length: L_in, mass: m_in}", "inner: {length: L_in, mass: -1}")
    with pytest.raises(ModelError) as err:
        rodgen.load(path)
    assert f"line {line_of(path, 'mass: -1')}, link 'fore', segment 'fore_tele'.rods[1].mass" in str(err.value)
