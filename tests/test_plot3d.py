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
    assert len(joints.get_data_3d()[0]) == 4            # one dot at each point of a stick
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


def test_urdf_robot_is_drawn_and_animated_in_3d(tmp_path: "os.PathLike[str]", build_dir: "os.PathLike[str]") -> None:
    """The Panda read from URDF: one stick per joint, from the parent link's frame to the child's, at the
    places the URDF reader's own forward kinematics gives; the animation has the frames asked for."""
    import rodgen
    from _robots import robot_file
    from rodgen.model.urdf import read_urdf
    from rodgen.runtime.plot3d import animate3d, plot_configuration
    from rodgen.runtime.result import SimulationResult
    path = robot_file("panda_description/urdf/panda.urdf")
    model = rodgen.from_urdf(path, lock={"panda_finger_joint1": 0.03})
    robot = rodgen.build(model, build_dir=build_dir)
    urdf = read_urdf(path)
    q = np.array([0.3, -0.5, 0.2, -1.9, 0.1, 1.6, 0.7])
    fig = plot_configuration(robot, q, os.path.join(str(tmp_path), "panda.png"), model=model, dpi=40)
    ax = fig.axes[0]
    joints = [j for j in urdf.joints]
    sticks = ax.lines[:len(joints)]
    place = urdf.placements(np.r_[q, 0.03])
    for art, j in zip(sticks, joints):
        xyz = np.column_stack(art.get_data_3d())
        assert xyz.shape == (2, 3)
        np.testing.assert_allclose(xyz, [place[j.parent][1], place[j.child][1]], atol=1e-12, err_msg=j.name)
    assert len(ax.lines[len(joints)].get_data_3d()[0]) == len(urdf.links)     # a dot at every link frame
    t = np.linspace(0.0, 1.0, 11)
    res = SimulationResult(t=t, q=np.outer(t, q), qd=np.zeros((11, 7)), u=np.zeros((11, 7)), kinetic=0.0,
                           potential=0.0, coordinates=list(robot.coordinates), inputs=list(robot.inputs))
    gif = os.path.join(str(tmp_path), "panda.gif")
    n = rodgen.animate(robot, res, gif, fps=5, model=model, dpi=30, size=3.0)   # rodgen.animate draws 3D points in 3D
    assert n == 6
    with Image.open(gif) as im:
        assert im.n_frames == n
    assert animate3d(robot, res, gif, fps=10, max_frames=4, model=model, dpi=30, size=3.0) == 4
