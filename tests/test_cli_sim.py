"""The ``simulate`` and ``equations`` subcommands: files are written and hold what they should."""
from __future__ import annotations

import argparse
import csv
import os
from typing import Sequence

import numpy as np
import pytest
from PIL import Image

from rodgen.cli_sim import add_equations_parser, add_simulate_parser

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")


def run(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="rodgen")
    sub = ap.add_subparsers(dest="command")
    add_simulate_parser(sub)
    add_equations_parser(sub)
    args = ap.parse_args(list(argv))
    return int(args.func(args))


@pytest.mark.parametrize("compiled", [False, True])
def test_simulate_writes_plot_animation_and_csv(tmp_path: "os.PathLike[str]", build_dir: "os.PathLike[str]",
                                                compiled: bool, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path)
    png, gif, csv_path = (os.path.join(d, f) for f in ("r.png", "r.gif", "r.csv"))
    argv = [os.path.join(EXAMPLES, "double_pendulum.yaml"), "--t-end", "1", "--dt", "0.01", "--plot", png,
            "--animate", gif, "--csv", csv_path, "--set", "th_lower_dot=1.5", "--param", "m2=1.2"]
    argv += ["--build-dir", str(build_dir)] if compiled else ["--no-compile"]
    assert run(["simulate", *argv]) == 0
    with Image.open(png) as im:  # angles, angular rates, torques and energy: 10 in by 4 * 2.0 + 0.4 in at 100 dpi
        assert im.format == "PNG" and im.size == (1000, 840)
    with Image.open(gif) as im:
        assert im.format == "GIF" and im.n_frames == 26      # 1 s at 25 frames per second, both ends
    with open(csv_path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["t", "th_upper", "th_lower", "th_upper_dot", "th_lower_dot", "tau_upper", "tau_lower",
                       "kinetic", "potential"]
    data = np.array(rows[1:], dtype=float)
    assert data.shape == (101, 9)
    np.testing.assert_allclose(data[0, 1:5], [-1.0, 0.5, 0.0, 1.5])     # the model's initial angles, --set
    # no inputs, no dampers: the energy is conserved to the integrator's tolerance (rtol 1e-8)
    E = data[:, 7] + data[:, 8]
    assert np.abs(E - E[0]).max() < 1e-6 * max(1.0, np.abs(E).max())
    # the kinetic energy at t = 0 from the uniform-rod closed form, with m2 overridden to 1.2:
    # only the lower rod turns: T = 1/2 (m2 L2^2 / 3) w^2
    np.testing.assert_allclose(data[0, 7], 0.5 * 1.2 * 0.7**2 / 3 * 1.5**2, rtol=1e-12)
    out = capsys.readouterr().out
    assert "status success" in out


def test_simulate_rejects_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    """Values that do not fit the model: one line on stderr and exit status 2, as every rodgen error."""
    from rodgen.cli import main
    model = os.path.join(EXAMPLES, "double_pendulum.yaml")
    for extra, message in ((["--param", "zz=1"], "--param zz: the model has no such parameter"),
                           (["--set", "phi=1"], "--set phi: not a coordinate"),
                           (["--substeps", "0"], "--substeps must be at least 1")):
        assert main(["simulate", model, "--no-compile", "--t-end", "0.1", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("rodgen: error: " + message) and err.count("\n") == 1, err


def test_equations_text_and_latex(tmp_path: "os.PathLike[str]", capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["equations", os.path.join(EXAMPLES, "pendulum_vl.yaml")]) == 0
    text = capsys.readouterr().out
    # the variable-length pendulum: M = diag(m l^2, m), h = (2 m l l' phi', -m l phi'^2)
    assert "[0,0] l_rod**2*m" in text and "[1,1] m" in text
    assert "coordinates q: phi_rod, l_rod" in text
    out = os.path.join(str(tmp_path), "eq.tex")
    assert run(["equations", os.path.join(EXAMPLES, "solar_panel.yaml"), "--latex", "-o", out]) == 0
    with open(out) as fh:
        tex = fh.read()
    assert tex.startswith("\\begin{align*}") and "q_{1}" in tex


def test_simulate_param_of_a_spatial_model(tmp_path: "os.PathLike[str]", build_dir: "os.PathLike[str]") -> None:
    """--param on a spatial model: the run is that of the model with the changed value as its default."""
    import rodgen
    csv_path = os.path.join(str(tmp_path), "r.csv")
    arm = os.path.join(EXAMPLES, "spatial", "arm3.yaml")
    assert run(["simulate", arm, "--t-end", "0.1", "--dt", "1e-3", "--param", "m_load=1.7", "--set",
                "q_shoulder=0.8", "--csv", csv_path, "--build-dir", str(build_dir)]) == 0
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    m = rodgen.load(arm)
    next(p for p in m.parameters if p.name == "m_load").value = 1.7
    ref = rodgen.build(m, build_dir=build_dir)
    y0 = np.zeros(2 * ref.nq)
    y0[ref.coordinates.index("q_shoulder")] = 0.8
    res = ref.simulate(y0, 0.1, 1e-3)
    last = rows[-1]
    assert float(last["t"]) == pytest.approx(0.1)
    assert [float(last[c]) for c in ref.coordinates] == pytest.approx(res.q[-1].tolist(), rel=1e-9, abs=1e-12)
