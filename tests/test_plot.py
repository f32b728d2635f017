"""Results, CSV, plots, animations and the progress bar."""
from __future__ import annotations

import csv
import io
import os

import numpy as np
import pytest
from PIL import Image

import rodgen
from rodgen.runtime.plot import animate, plot, skeleton
from rodgen.runtime.progress import Progress, track
from rodgen.runtime.result import SimulationResult, Status
from rodgen.runtime.trajectory import as_evaluator, prescribed_forces

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def solar_result(n: int = 51) -> tuple[object, SimulationResult]:
    ev = as_evaluator(rodgen.load(os.path.join(EXAMPLES, "solar_panel.yaml")))
    t = np.linspace(0.0, 1.0, n)
    return ev, prescribed_forces(ev, t, np.pi / 2 * t).to_result()


def test_csv_has_the_documented_columns_and_round_trips(tmp_path: "os.PathLike[str]") -> None:
    _, res = solar_result()
    path = os.path.join(str(tmp_path), "r.csv")
    res.to_csv(path)
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["t", "q1", "q1_dot", "M_1", "kinetic", "potential"]
    assert len(rows) == 52
    back = SimulationResult.from_csv(path, coordinates=["q1"], inputs=["M_1"])
    for name in ("t", "q", "qd", "u", "kinetic", "potential"):
        np.testing.assert_array_equal(getattr(back, name), getattr(res, name))


def test_result_checks_shapes() -> None:
    with pytest.raises(ValueError, match=r"expected \(3, 2\) and \(3, 2\) for the coordinates a, b"):
        SimulationResult(t=np.zeros(3), q=np.zeros((3, 1)), qd=np.zeros((3, 1)), u=np.zeros((3, 0)),
                         kinetic=0.0, potential=0.0, coordinates=["a", "b"], inputs=[])
    r = SimulationResult(t=np.zeros(2), q=np.zeros((2, 1)), qd=np.zeros((2, 1)), u=[], kinetic=0.0,
                         potential=0.0, coordinates=["a"], inputs=[], status="nonfinite", message="t = 0.1")
    assert r.status is Status.NONFINITE and not r.ok and r.u.shape == (2, 0)


def test_plot_writes_an_image_with_one_panel_per_quantity(tmp_path: "os.PathLike[str]") -> None:
    _, res = solar_result()
    path = os.path.join(str(tmp_path), "p.png")
    fig = plot(res, path)
    assert len(fig.axes) == 4
    assert [ax.get_ylabel() for ax in fig.axes] == ["coordinates [rad, m]", "rates [rad/s, m/s]",
                                                    "inputs [N m, N]", "energy [J]"]
    with Image.open(path) as im:
        # four panels: 10 in wide, 4 * 2.0 + 0.4 in high, at the default 100 dpi
        assert im.format == "PNG" and im.size == (1000, 840)
    bare = SimulationResult(t=res.t, q=res.q, qd=res.qd, u=np.zeros((len(res.t), 0)),
                            kinetic=np.full(len(res.t), np.nan), potential=np.nan, coordinates=res.coordinates,
                            inputs=[])
    assert len(plot(bare).axes) == 2
    with pytest.raises(ValueError, match="unknown panel 'x'"):
        plot(res, panels=("x",))


def test_animation_writes_a_gif_with_the_expected_frames(tmp_path: "os.PathLike[str]") -> None:
    ev, res = solar_result()
    path = os.path.join(str(tmp_path), "a.gif")
    n = animate(ev, res, path, fps=10, trace="tube3.end")
    assert n == 11                      # 1 s at 10 frames per second, both ends included
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == n


def test_skeleton_from_model_and_from_names() -> None:
    model = rodgen.load(os.path.join(EXAMPLES, "solar_panel.yaml"))
    ev = as_evaluator(model)
    names = list(ev.points([0.1]))
    lines, masses = skeleton(names, model)
    assert lines == [["link1.joint", "tube1.end"], ["link2.joint", "tube2.end"], ["link3.joint", "tube3.end"]]
    assert masses == {"cm1": 0.8143, "cm2": 0.8143, "cm3": 0.8143}
    lines2, masses2 = skeleton(names)
    assert lines2 == lines and set(masses2) == set(masses)


def test_progress_plain_fallback_writes_to_the_stream() -> None:
    buf = io.StringIO()
    with Progress(total=4, desc="sim", enable=True, stream=buf, min_interval=0.0) as bar:
        for _ in range(4):
            bar.update()
    assert "sim [" in buf.getvalue() and "100.0%" in buf.getvalue()
    quiet = io.StringIO()
    assert list(track(range(3), stream=quiet)) == [0, 1, 2]
    assert quiet.getvalue() == ""       # not a terminal: silent unless enable=True


def test_plot_separates_angles_lengths_torques_forces(tmp_path: "os.PathLike[str]") -> None:
    """With the model, every axes holds one kind of quantity with its unit, and the legends stand beside
    the axes, not on them."""
    model = rodgen.load(os.path.join(EXAMPLES, "telescopic_arm.yaml"))
    names = ["th_upper", "th_fore", "l_fore_tele"]
    t = np.linspace(0, 1, 11)
    res = SimulationResult(t=t, q=np.zeros((11, 3)), qd=np.zeros((11, 3)), u=np.ones((11, 3)), kinetic=0.0,
                           potential=1.0, coordinates=names, inputs=["tau_upper", "tau_fore", "F_fore_tele"])
    fig = plot(res, os.path.join(str(tmp_path), "arm.png"), model=model)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == ["angles [rad]", "lengths [m]", "angular rates [rad/s]", "length rates [m/s]",
                      "torques [N m]", "forces [N]", "energy [J]"]
    assert [[ln.get_label() for ln in ax.lines] for ax in fig.axes[:2]] == [["th_upper", "th_fore"],
                                                                          ["l_fore_tele"]]
    assert [ln.get_label() for ln in fig.axes[5].lines] == ["F_fore_tele"]
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend().get_window_extent(renderer)
        assert legend.x0 >= ax.get_window_extent(renderer).x1          # beside the axes, covering nothing


def test_animation_axes_have_units(tmp_path: "os.PathLike[str]", monkeypatch: pytest.MonkeyPatch) -> None:
    ev, res = solar_result()
    seen = []
    import rodgen.runtime.plot as plot_module
    real = plot_module.new_figure

    def spy(*args: float) -> object:
        fig = real(*args)
        seen.append(fig)
        return fig
    monkeypatch.setattr(plot_module, "new_figure", spy)
    animate(ev, res, os.path.join(str(tmp_path), "a.gif"), fps=2)
    ax = seen[0].axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x [m]", "y [m]")
