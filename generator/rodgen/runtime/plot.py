"""Seeing results: time plots and stick-figure animations.

Both use matplotlib's object API with the Agg canvas (no pyplot, no global
state, no display needed); GIFs are written with matplotlib's pillow writer.
"""
from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence, Union

import numpy as np

from .result import SimulationResult

PathLike = Union[str, "os.PathLike[str]"]


def new_figure(width: float, height: float) -> Any:
    """A matplotlib Figure on the Agg canvas (no pyplot, no display), laid out with constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _as_result(result: Any) -> SimulationResult:
    if isinstance(result, SimulationResult):
        return result
    if hasattr(result, "to_result"):
        return result.to_result()  # type: ignore[no-any-return]
    raise TypeError(f"expected a SimulationResult, got {type(result).__name__}")


#: Quantities of the plot panels: (label, unit) per kind of coordinate or input.
_COORDINATE_AXES = {"angle": ("angles", "rad"), "length": ("lengths", "m")}
_RATE_AXES = {"angle": ("angular rates", "rad/s"), "length": ("length rates", "m/s")}
_INPUT_AXES = {"torque": ("torques", "N m"), "force": ("forces", "N")}


def kinds(model: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(coordinate name -> "angle" or "length", input name -> "torque" or "force") of a Model, ValidModel
    or compiled model (a base position is a length)."""
    from ..model.valid import valid_model
    from .compiled import CompiledModel
    vm = valid_model(model.model if isinstance(model, CompiledModel) else model)
    coords = {c.name: ("angle" if c.kind == "angle" else "length") for c in vm.coordinates()}
    inputs = {i.name: ("torque" if i.kind == "torque" else "force") for i in vm.inputs()}
    return coords, inputs


def _panels(res: SimulationResult, wanted: Sequence[str], model: Any) -> list[tuple[str, str, str, list[int]]]:
    """(panel, y label, unit, columns) of every axes: with the model, angles apart from lengths and
    torques apart from forces; without it, one axes per quantity with both units."""
    out: list[tuple[str, str, str, list[int]]] = []
    ckind, ikind = kinds(model) if model is not None else ({}, {})
    for pn in wanted:
        if pn == "energy":
            out.append((pn, "energy", "J", []))
            continue
        names = res.inputs if pn == "u" else res.coordinates
        table = _INPUT_AXES if pn == "u" else _COORDINATE_AXES if pn == "q" else _RATE_AXES
        kind_of = ikind if pn == "u" else ckind
        if not kind_of:
            label = {"q": "coordinates", "qd": "rates", "u": "inputs"}[pn]
            out.append((pn, label, ", ".join(unit for _, unit in table.values()), list(range(len(names)))))
            continue
        for kind, (label, unit) in table.items():
            cols = [k for k, nm in enumerate(names) if kind_of.get(nm) == kind]
            if cols:
                out.append((pn, label, unit, cols))
    return out


def plot(result: Any, path: Optional[PathLike] = None, *, title: Optional[str] = None,
         panels: Sequence[str] = ("q", "qd", "u", "energy"), dpi: int = 100, model: Any = None) -> Any:
    """Plot a result: coordinates, rates, inputs and energy against time, with units on every axis.

    Parameters
    ----------
    result : a :class:`SimulationResult` (or anything with ``to_result()``,
        e.g. :class:`~rodgen.runtime.trajectory.PrescribedForces`).
    path : if given, the figure is saved there (format from the extension).
    panels : which quantities, in order: ``"q"``, ``"qd"``, ``"u"``, ``"energy"``.
        Quantities with nothing to show (no inputs, unknown energy) are skipped.
    model : the :class:`rodgen.Model` (or ValidModel) of the result: angles [rad] are then drawn apart
        from lengths [m], angular rates apart from length rates, torques [N m] apart from forces [N];
        without it every quantity has one axes labelled with both units.

    Returns
    -------
    the matplotlib ``Figure``; the legend of each axes stands to its right.
    """
    res = _as_result(result)
    wanted = []
    for pn in panels:
        if pn not in ("q", "qd", "u", "energy"):
            raise ValueError(f"unknown panel {pn!r}; choose from q, qd, u, energy")
        if pn == "u" and res.u.shape[1] == 0:
            continue
        if pn == "energy" and not np.isfinite(res.kinetic).any():
            continue
        wanted.append(pn)
    rows = _panels(res, wanted, model)
    fig = new_figure(10.0, 2.0 * max(1, len(rows)) + 0.4)
    axes = fig.subplots(max(1, len(rows)), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (pn, label, unit, cols) in zip(axes, rows):
        if pn == "q":
            for k in cols:
                ax.plot(res.t, res.q[:, k], label=res.coordinates[k])
        elif pn == "qd":
            for k in cols:
                ax.plot(res.t, res.qd[:, k], label=f"{res.coordinates[k]}'")
        elif pn == "u":
            for k in cols:
                ax.plot(res.t, res.u[:, k], label=res.inputs[k])
        else:
            ax.plot(res.t, res.kinetic, label="kinetic")
            ax.plot(res.t, res.potential, label="potential")
            ax.plot(res.t, res.kinetic + res.potential, "k--", lw=1, label="total")
        _steady_limits(ax)
        ax.set_ylabel(f"{label} [{unit}]")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0,
                  ncol=1 if len(ax.lines) <= 8 else 2)
    axes[-1].set_xlabel("t [s]")
    head = title if title is not None else (res.model or "")
    if not res.ok:
        head += f"  [{res.status.value}: {res.message}]"
    if head:
        fig.suptitle(head)
    if path is not None:
        fig.savefig(os.fspath(path), dpi=dpi)
    return fig


def _steady_limits(ax: Any) -> None:
    """Keep an (almost) constant curve from being blown up to rounding noise by autoscaling."""
    ys = [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.lines]
    ys = [y[np.isfinite(y)] for y in ys if y.size]
    if not ys or not any(y.size for y in ys):
        return
    allv = np.concatenate(ys)
    lo, hi = float(allv.min()), float(allv.max())
    scale = max(1.0, abs(lo), abs(hi))
    if hi - lo < 1e-9 * scale:
        mid = (lo + hi) / 2
        pad = 0.1 * max(abs(mid), 1e-3)
        ax.set_ylim(mid - pad, mid + pad)
        ax.yaxis.get_major_formatter().set_useOffset(False)


# -- animation ---------------------------------------------------------------------------------

def frame_times(t: np.ndarray, fps: int, speed: float, max_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """The times of the frames of an animation of samples at ``t`` and the index of the sample each shows
    (``speed`` simulated seconds per second of GIF, at most ``max_frames`` frames, both ends included)."""
    if len(t) == 0:
        raise ValueError("the result holds no samples")
    if fps <= 0 or speed <= 0 or max_frames < 1:
        raise ValueError(f"fps and speed must be positive and max_frames at least 1, got fps={fps}, "
                         f"speed={speed}, max_frames={max_frames}")
    duration = float(t[-1] - t[0])
    nframes = max(1, min(max_frames, int(math.floor(duration / speed * fps)) + 1))
    times = t[0] + np.linspace(0.0, duration, nframes)
    idx = np.clip(np.searchsorted(t, times), 0, len(t) - 1)
    return times, idx


def _model_of(sys: Any) -> Any:
    for attr in ("model",):
        m = getattr(sys, attr, None)
        if m is not None and hasattr(m, "links"):
            return m
    eqs = getattr(sys, "equations", None)
    if eqs is not None and hasattr(eqs, "model"):
        return eqs.model
    return None


def skeleton(names: Sequence[str], model: Any = None) -> tuple[list[list[str]], dict[str, float]]:
    """Polylines (lists of point names, one per link) and mass points (name -> mass, 0 if unknown).

    With a :class:`rodgen.Model` (validated here) or its ValidModel the
    structure is read from it; otherwise from the point names
    (``<link>.joint`` opens a link, ``<segment>.end`` extends it; other points
    are drawn as masses).
    """
    have = set(names)
    lines: list[list[str]] = []
    masses: dict[str, float] = {}
    if model is not None:
        from ..model.valid import valid_model
        model = valid_model(model)
        for lk in model.links:
            line = [f"{lk.name}.joint"] + [f"{sg.name}.end" for sg in lk.segments]
            lines.append([n for n in line if n in have])
            for sg in lk.segments:
                for i, pm in enumerate(sg.masses):
                    masses[pm.name or f"{sg.name}.m{i}"] = model.value(pm.mass)
                for i, rd in enumerate(sg.rods):
                    masses[rd.name or f"{sg.name}.rod{i}"] = model.value(rd.mass)
        return lines, {k: v for k, v in masses.items() if k in have}
    for nm in names:
        if nm.endswith(".joint"):
            lines.append([nm])
        elif nm.endswith(".end") and lines:
            lines[-1].append(nm)
        elif nm != "base":
            masses[nm] = 0.0
    return lines, masses


def animate(sys: Any, result: Any, path: PathLike, *, fps: int = 25, speed: float = 1.0,
            max_frames: int = 250, p: Any = None, model: Any = None, trace: Optional[str] = None,
            dpi: int = 80, size: float = 5.0) -> int:
    """Write a GIF of the mechanism as a stick figure with its masses (in 3D for a spatial model, whose points
    have three coordinates: :func:`rodgen.runtime.plot3d.animate3d`).

    Parameters
    ----------
    sys : the model's evaluator: a compiled model, or a
        :class:`~rodgen.symbolic.numeric.NumericModel` (anything with
        ``points(q, p)`` returning name -> (N, 2)).
    result : a :class:`SimulationResult` (or anything with ``to_result()``).
    path : the output file (``.gif``).
    fps, speed : frames per second of the GIF, and simulated seconds per
        second of GIF; at most ``max_frames`` frames are drawn.
    model : the :class:`rodgen.Model`, to draw links and mass sizes exactly
        (found on ``sys`` when it carries one).
    trace : name of a point whose path is drawn.

    Returns
    -------
    the number of frames written.
    """
    from matplotlib.animation import PillowWriter
    res = _as_result(result)
    times, idx = frame_times(res.t, fps, speed, max_frames)
    nframes = len(times)
    pts = sys.points(res.q[idx], p)
    if any(np.asarray(v).shape[-1:] == (3,) for v in pts.values()):    # a spatial model: drawn in 3D
        from .plot3d import animate3d
        return animate3d(sys, res, path, fps=fps, speed=speed, max_frames=max_frames, p=p, model=model,
                         trace=trace, dpi=dpi, size=size)
    pts = {k: np.asarray(v, dtype=float).reshape(len(idx), 2) for k, v in pts.items()}
    lines, masses = skeleton(list(pts), model if model is not None else _model_of(sys))
    allxy = np.concatenate([v for v in pts.values()], axis=0)
    lo, hi = allxy.min(axis=0), allxy.max(axis=0)
    span = float(max(hi - lo)) or 1.0
    mid = (lo + hi) / 2
    fig = new_figure(size, size)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_xlim(mid[0] - 0.6 * span, mid[0] + 0.6 * span)
    ax.set_ylim(mid[1] - 0.6 * span, mid[1] + 0.6 * span)
    ax.grid(True, alpha=0.3)
    mmax = max(masses.values(), default=0.0) or 1.0
    link_artists = [ax.plot([], [], "-", lw=3, color="tab:blue", solid_capstyle="round")[0] for _ in lines]
    joint_artist = ax.plot([], [], "o", color="k", ms=4)[0]
    mass_names = list(masses)
    sizes = [30 + 170 * (masses[n] / mmax if masses[n] > 0 else 0.3) for n in mass_names]
    mass_artist = ax.scatter(np.zeros(len(mass_names)), np.zeros(len(mass_names)), s=sizes, color="tab:red",
                             zorder=3)
    trace_artist = ax.plot([], [], "-", lw=1, color="tab:gray")[0] if trace else None
    if trace and trace not in pts:
        raise ValueError(f"trace: no point {trace!r} (points: {', '.join(pts)})")
    label = ax.text(0.02, 0.96, "", transform=ax.transAxes, va="top")
    ax.set_title(res.model or "")
    writer = PillowWriter(fps=fps)
    with writer.saving(fig, os.fspath(path), dpi):
        for f in range(nframes):
            for art, line in zip(link_artists, lines):
                xy = np.array([pts[n][f] for n in line]) if line else np.zeros((0, 2))
                art.set_data(xy[:, 0], xy[:, 1])
            jn = [line[0] for line in lines if line]
            joint_artist.set_data([pts[n][f][0] for n in jn], [pts[n][f][1] for n in jn])
            if mass_names:
                mass_artist.set_offsets(np.array([pts[n][f] for n in mass_names]))
            if trace_artist is not None and trace:
                trace_artist.set_data(pts[trace][: f + 1, 0], pts[trace][: f + 1, 1])
            label.set_text(f"t = {times[f]:.2f} s")
            writer.grab_frame()
    return nframes


def mode_lines(modes: Any, link: Optional[str] = None) -> tuple[np.ndarray, np.ndarray]:
    """Mode shapes as transverse displacements along a straight link at rest.

    The markers of ``link`` (names starting with ``<link>_`` or ``<link>.``; all markers when None)
    are projected on the axis from the first of them to the farthest one: ``s`` (n,) the distance
    along that axis, ``w`` (k, n) the displacement normal to it in each mode, scaled so that the
    largest |w| of each mode is 1. Markers at the same place are kept once.
    """
    names = [nm for nm in modes.points
             if link is None or nm.startswith(f"{link}_") or nm.startswith(f"{link}.") or nm == link]
    if len(names) < 2:
        raise ValueError(f"no markers of {link!r} to plot (markers: {', '.join(modes.points)})")
    P = np.array([modes.points[nm] for nm in names], dtype=float)
    D = np.stack([modes.point_shapes[nm] for nm in names], axis=1)  # (k, n, 2)
    far = int(np.argmax(np.linalg.norm(P - P[0], axis=1)))
    axis = P[far] - P[0]
    length = float(np.linalg.norm(axis))
    if length == 0.0:
        raise ValueError(f"the markers of {link!r} coincide; nothing to plot along")
    e = axis / length
    nrm = np.array([-e[1], e[0]])
    s_all = (P - P[0]) @ e
    root = int(np.argmin(s_all))
    s_all = s_all - s_all[root]
    order = np.argsort(s_all, kind="stable")
    keep = [i for j, i in enumerate(order) if j == 0 or abs(s_all[i] - s_all[order[j - 1]]) > 1e-12 * length]
    s = s_all[keep]
    w = D[:, keep, :] @ nrm
    big = np.max(np.abs(w), axis=1, keepdims=True)
    w = np.divide(w, big, out=np.zeros_like(w), where=big > 0)
    return s, w


def plot_modes(modes: Any, path: Optional[PathLike] = None, *, link: Optional[str] = None,
               which: Sequence[int] = (0, 1, 2), title: Optional[str] = None, dpi: int = 100) -> Any:
    """Plot mode shapes (from :func:`rodgen.modes`) along a link: displacement against position.

    ``link`` selects the markers of one (elastic) link, ``which`` the modes (0 = lowest). Returns the
    matplotlib Figure; with ``path`` it is also saved (PNG, SVG or PDF by the suffix).
    """
    s, w = mode_lines(modes, link)
    fig = new_figure(6.4, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    for k in which:
        if k >= w.shape[0]:
            continue
        f = modes.hz[k]
        label = f"mode {k + 1}: {f:.4g} Hz" if np.isfinite(f) else f"mode {k + 1}: unstable"
        ax.plot(s, w[k], marker="o", markersize=3, label=label)
    ax.axhline(0.0, color="0.6", linewidth=0.8)
    ax.set_xlabel("position along the link at rest [m]")
    ax.set_ylabel("transverse displacement (max = 1)")
    ax.set_title(title or f"mode shapes{' of ' + link if link else ''}")
    ax.legend(loc="best", fontsize="small")
    if path is not None:
        fig.savefig(os.fspath(path), dpi=dpi)
    return fig


__all__ = ["plot", "animate", "skeleton", "new_figure", "kinds", "plot_modes", "mode_lines", "frame_times"]
