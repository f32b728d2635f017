"""Seeing spatial mechanisms: 3D stick figures of one configuration and GIF animations of a result.

The conventions of :mod:`rodgen.runtime.plot`: matplotlib's object API on the Agg canvas (no pyplot, no
display), GIFs through matplotlib's pillow writer, the same timing of frames (``fps``, ``speed``,
``max_frames``, both ends of the run included), links drawn as blue sticks, joints as black dots, mass points
as red dots sized by their mass, an optional trace of one point, axes in metres with equal scales.

Everything works on arrays: the points are a mapping name -> (3,) (one configuration) or name -> (N, 3)
(N frames), the links a list of polylines (lists of point names). :func:`plot_configuration` and
:func:`animate3d` take a model's evaluator (anything with ``points(q, p)``, as the compiled model) and read
the polylines from the model (:func:`skeleton3d`).
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from .plot import _as_result, _model_of, frame_times, new_figure

PathLike = Union[str, "os.PathLike[str]"]

Lines = Sequence[Sequence[str]]


def skeleton3d(names: Sequence[str], model: Any = None) -> tuple[list[list[str]], dict[str, float]]:
    """Polylines (lists of point names) and mass points (name -> mass) of a mechanism's points.

    A spatial model (:class:`~rodgen.model.spatial.SpatialModel` or its validated form) is drawn as a tree
    of sticks: from the parent's frame ``<parent>.joint`` (through the attachment point when the link
    hangs at a segment's end or a marker) to the link's frame ``<link>.joint``, and along the link's
    segments (``<link>.joint``, ``<segment>.end``, ...); its named bodies, point masses and rods are the mass
    points. Otherwise the planar convention of :func:`rodgen.runtime.plot.skeleton` applies
    (``<link>.joint`` opens a polyline, ``<segment>.end`` extends it, other points are masses).
    """
    from .plot import skeleton
    if model is None:
        return skeleton(names, None)
    from ..model.valid import valid_model
    vm: Any = valid_model(model)
    if not getattr(vm, "spatial", False):
        return skeleton(names, vm)
    have = set(names)
    lines: list[list[str]] = []
    masses: dict[str, float] = {}
    by_name = {lk.name: lk for lk in vm.links}
    for lk in vm.links:
        frame = f"{lk.name}.joint"
        if lk.parent is not None:
            up = by_name[lk.parent]
            line = [f"{up.name}.joint"]
            if lk.at == "end" and up.segments:
                line.append(f"{up.segments[-1].name}.end")
            elif lk.at not in ("end", "start"):
                line.append(lk.at if lk.at in have else f"{lk.at}.end")
            lines.append(line + [frame])
        if lk.segments:
            lines.append([frame] + [f"{sg.name}.end" for sg in lk.segments])
        for b in lk.bodies:
            if b.name:
                masses[b.name] = vm.value(b.mass)
        for sg in lk.segments:
            for item in list(sg.masses) + list(sg.rods):
                if item.name:
                    masses[item.name] = vm.value(item.mass)
    lines = [[n for n in line if n in have] for line in lines]
    return [line for line in lines if len(line) > 1], {k: v for k, v in masses.items() if k in have}


def _axis(vertical: str) -> str:
    if vertical not in ("x", "y", "z"):
        raise ValueError(f"vertical must be 'x', 'y' or 'z', got {vertical!r}")
    return vertical


def up_axis(model: Any) -> str:
    """The axis a picture of ``model`` draws upwards: the one along which its gravity mostly points (down),
    ``"z"`` when the model is unknown, planar or weightless."""
    g = getattr(model, "gravity", None)
    value = getattr(model, "value", None)
    if not isinstance(g, (tuple, list)) or len(g) != 3 or value is None:
        return "z"
    try:
        vec = np.array([float(value(x)) for x in g])
    except (TypeError, ValueError, KeyError):
        return "z"
    if not np.all(np.isfinite(vec)) or not np.any(vec):
        return "z"
    return "xyz"[int(np.argmax(np.abs(vec)))]


def _bounds(points: Mapping[str, np.ndarray]) -> tuple[np.ndarray, float]:
    allp = np.concatenate([np.asarray(v, dtype=float).reshape(-1, 3) for v in points.values()], axis=0)
    allp = allp[np.isfinite(allp).all(axis=1)]
    if allp.size == 0:
        return np.zeros(3), 1.0
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    span = float(max(hi - lo)) or 1.0
    return (lo + hi) / 2, span


def _axes3d(fig: Any, mid: np.ndarray, span: float, title: str) -> Any:
    ax = fig.add_subplot(1, 1, 1, projection="3d")
    for k, name in enumerate("xyz"):
        getattr(ax, f"set_{name}lim")(mid[k] - 0.6 * span, mid[k] + 0.6 * span)
        getattr(ax, f"set_{name}label")(f"{name} [m]")
    ax.set_box_aspect((1.0, 1.0, 1.0))
    if title:
        ax.set_title(title)
    return ax


def _check(points: Mapping[str, np.ndarray], lines: Lines, masses: Mapping[str, float], frames: int
           ) -> dict[str, np.ndarray]:
    out = {}
    for k, v in points.items():
        a = np.asarray(v, dtype=float)
        if a.shape[-1:] != (3,):
            raise ValueError(f"point {k!r}: expected 3 coordinates (x, y, z), got shape {a.shape}")
        out[k] = a.reshape(frames, 3)
    for line in lines:
        for n in line:
            if n not in out:
                raise ValueError(f"the stick figure names the point {n!r}, which is not among the points "
                                 f"({', '.join(out)})")
    for n in masses:
        if n not in out:
            raise ValueError(f"mass point {n!r} is not among the points ({', '.join(out)})")
    return out


class _Figure3D:
    """The artists of a stick figure in 3D, updated frame by frame."""

    def __init__(self, ax: Any, lines: Lines, masses: Mapping[str, float], trace: Optional[str]) -> None:
        self.ax = ax
        self.lines = [list(line) for line in lines]
        self.sticks = [ax.plot([], [], [], "-", lw=3, color="tab:blue", solid_capstyle="round")[0]
                       for _ in self.lines]
        self.joint_names = list(dict.fromkeys(n for line in self.lines for n in line))
        self.joints = ax.plot([], [], [], "o", color="k", ms=4, linestyle="none")[0]
        self.mass_names = list(masses)
        mmax = max(masses.values(), default=0.0) or 1.0
        self.mass_points = ax.plot([], [], [], "o", color="tab:red", linestyle="none", zorder=3)[0]
        self.mass_sizes = [4 + 8 * (masses[n] / mmax if masses[n] > 0 else 0.3) for n in self.mass_names]
        if self.mass_names:
            self.mass_points.set_markersize(float(np.mean(self.mass_sizes)))
        self.trace_name = trace
        self.trace = ax.plot([], [], [], "-", lw=1, color="tab:gray")[0] if trace else None

    def draw(self, pts: Mapping[str, np.ndarray], f: int) -> None:
        for art, line in zip(self.sticks, self.lines):
            xyz = np.array([pts[n][f] for n in line]).reshape(-1, 3)
            art.set_data_3d(xyz[:, 0], xyz[:, 1], xyz[:, 2])
        xyz = np.array([pts[n][f] for n in self.joint_names]).reshape(-1, 3)
        self.joints.set_data_3d(xyz[:, 0], xyz[:, 1], xyz[:, 2])
        xyz = np.array([pts[n][f] for n in self.mass_names]).reshape(-1, 3)
        self.mass_points.set_data_3d(xyz[:, 0], xyz[:, 1], xyz[:, 2])
        if self.trace is not None and self.trace_name is not None:
            path = pts[self.trace_name][: f + 1]
            self.trace.set_data_3d(path[:, 0], path[:, 1], path[:, 2])


def draw_configuration(points: Mapping[str, Any], lines: Lines, path: Optional[PathLike] = None, *,
                       masses: Optional[Mapping[str, float]] = None, title: str = "", dpi: int = 100,
                       size: float = 5.0, elev: float = 20.0, azim: float = -60.0, vertical: str = "z") -> Any:
    """A 3D stick figure of one configuration: ``points`` name -> (x, y, z), ``lines`` polylines of point
    names (one per link or per joint-to-joint stick), ``masses`` name -> mass of the points drawn as masses;
    ``vertical``: the axis drawn upwards (``"x"``, ``"y"`` or ``"z"``).

    Returns the matplotlib Figure (its 3D axes: ``fig.axes[0]``; the sticks are its first ``len(lines)``
    lines); with ``path`` it is also saved (the format from the suffix).
    """
    masses = dict(masses or {})
    pts = _check(points, lines, masses, 1)
    mid, span = _bounds(pts)
    fig = new_figure(size, size)
    ax = _axes3d(fig, mid, span, title)
    ax.view_init(elev=elev, azim=azim, vertical_axis=_axis(vertical))
    _Figure3D(ax, lines, masses, None).draw(pts, 0)
    if path is not None:
        fig.savefig(os.fspath(path), dpi=dpi)
    return fig


def animate_points(points: Mapping[str, Any], lines: Lines, path: PathLike, *, times: Optional[Any] = None,
                   masses: Optional[Mapping[str, float]] = None, fps: int = 25, trace: Optional[str] = None,
                   title: str = "", dpi: int = 80, size: float = 5.0, elev: float = 20.0,
                   azim: float = -60.0, vertical: str = "z") -> int:
    """A GIF of a 3D stick figure: ``points`` name -> (N, 3), one frame per row, ``times`` (N,) shown in a
    corner, ``vertical`` the axis drawn upwards. Returns the number of frames written (N)."""
    from matplotlib.animation import PillowWriter
    masses = dict(masses or {})
    first = next(iter(points.values()), None)
    if first is None:
        raise ValueError("no points to animate")
    nframes = int(np.asarray(first).reshape(-1, 3).shape[0])
    pts = _check(points, lines, masses, nframes)
    if trace is not None and trace not in pts:
        raise ValueError(f"trace: no point {trace!r} (points: {', '.join(pts)})")
    mid, span = _bounds(pts)
    fig = new_figure(size, size)
    ax = _axes3d(fig, mid, span, title)
    ax.view_init(elev=elev, azim=azim, vertical_axis=_axis(vertical))
    figure = _Figure3D(ax, lines, masses, trace)
    label = ax.text2D(0.02, 0.96, "", transform=ax.transAxes, va="top")
    writer = PillowWriter(fps=fps)
    with writer.saving(fig, os.fspath(path), dpi):
        for f in range(nframes):
            figure.draw(pts, f)
            if times is not None:
                label.set_text(f"t = {float(times[f]):.2f} s")
            writer.grab_frame()
    return nframes


def plot_configuration(sys: Any, q: Any, path: Optional[PathLike] = None, *, p: Any = None, model: Any = None,
                       title: Optional[str] = None, dpi: int = 100, size: float = 5.0) -> Any:
    """A 3D stick figure of the mechanism at the coordinates ``q``; ``sys`` is the model's evaluator (a
    compiled model: anything with ``points(q, p)`` returning name -> (3,)). Returns the Figure."""
    pts = {k: np.asarray(v, dtype=float).reshape(3) for k, v in sys.points(np.asarray(q, dtype=float), p).items()}
    vm = model if model is not None else _model_of(sys)
    lines, masses = skeleton3d(list(pts), vm)
    name = title if title is not None else str(getattr(sys, "name", "") or "")
    return draw_configuration(pts, lines, path, masses=masses, title=name, dpi=dpi, size=size, vertical=up_axis(vm))


def animate3d(sys: Any, result: Any, path: PathLike, *, fps: int = 25, speed: float = 1.0, max_frames: int = 250,
              p: Any = None, model: Any = None, trace: Optional[str] = None, dpi: int = 80,
              size: float = 5.0) -> int:
    """Write a GIF of a spatial mechanism's motion (the arguments of :func:`rodgen.runtime.plot.animate`).

    Returns the number of frames written.
    """
    res = _as_result(result)
    times, idx = frame_times(res.t, fps, speed, max_frames)
    pts = sys.points(res.q[idx], p)
    pts = {k: np.asarray(v, dtype=float).reshape(len(idx), 3) for k, v in pts.items()}
    vm = model if model is not None else _model_of(sys)
    lines, masses = skeleton3d(list(pts), vm)
    return animate_points(pts, lines, path, times=times, masses=masses, fps=fps, trace=trace, vertical=up_axis(vm),
                          title=res.model or "", dpi=dpi, size=size)


__all__ = ["draw_configuration", "animate_points", "plot_configuration", "animate3d", "skeleton3d", "frame_times",
           "up_axis"]
