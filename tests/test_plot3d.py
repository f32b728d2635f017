"""3D stick figures and animations, on arrays (headless: the Agg canvas)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from rodgen.runtime.plot3d import animate_points, draw_configuration, frame_times

#: a three-link arm in 3D: base, shoulder, elbow, wrist, and a mass at the wrist
POINTS = {"base": [0.0, 0.0, 0.0], "shoulder": [0.0, 0.0, 0.3], "elbow": [0.2, 0.1, 0.5],
          "wrist": [0.4, 0.0, 0.4], "load": [0.45, 0.0, 0.38]}
LINES = [["base", "shoulder"], ["shoulder", "elbow", "wrist"]]


def test_configuration_draws_each_stick_through_its_points(tmp_path: "os.PathLike[str]") -> None:
    path = os.path.join(str(tmp_path), "arm.png")
    fig = draw_configuration(POINTS, LINES, path, masses={"load": 2.0}, dpi=50, size=4.0)
    ax = fig.axes[0]
    assert ax.name == "3d"
    sticks = ax.lines[:len(LINES)]
    for art, line in zip(sticks, LINES):
        x, y, z = art.get_data_3d()
        assert len(x) == len(line)
        np.testing.assert_array_equal(np.column_stack([x, y, z]), [POINTS[n] for n in line])
    joints = ax.lines[len(LINES)]
    assert len(joints.get_data_3d()[0]) == 2            # one dot at the first point of each stick
    masses = ax.lines[len(LINES) + 1]
    np.testing.assert_array_equal(np.column_stack(masses.get_data_3d()), [POINTS["load"]])
    assert [ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()] == ["x [m]", "y [m]", "z [m]"]
    # equal scales: every axis spans the same length
    spans = [np.diff(lim)[0] for lim in (ax.get_xlim(), ax.get_ylim(), ax.get_zlim())]
    assert spans == pytest.approx([spans[0]] * 3)
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size == (200, 200)


def test_animation_writes_one_frame_per_row(tmp_path: "os.PathLike[str]") -> None:
    t = np.linspace(0.0, 2.0, 201)
    times, idx = frame_times(t, fps=5, speed=1.0, max_frames=250)
    assert len(times) == 11 and idx[0] == 0 and idx[-1] == 200     # 2 s at 5 frames per second, both ends
    angle = times[:, None]
    pts = {"base": np.zeros((11, 3)),
           "tip": np.column_stack([0.5 * np.cos(angle[:, 0]), 0.5 * np.sin(angle[:, 0]), np.full(11, 0.2)])}
    path = os.path.join(str(tmp_path), "spin.gif")
    n = animate_points(pts, [["base", "tip"]], path, times=times, fps=5, trace="tip", dpi=40, size=3.0)
    assert n == 11
    with Image.open(path) as im:
        assert im.format == "GIF" and im.n_frames == n


def test_bad_points_are_named() -> None:
    with pytest.raises(ValueError, match="point 'a': expected 3 coordinates"):
        draw_configuration({"a": [0.0, 1.0]}, [["a"]])
    with pytest.raises(ValueError, match="names the point 'c', which is not among the points"):
        draw_configuration({"a": [0.0, 1.0, 2.0]}, [["a", "c"]])
    with pytest.raises(ValueError, match="trace: no point 'z'"):
        animate_points({"a": np.zeros((2, 3))}, [["a"]], "never.gif", trace="z")
