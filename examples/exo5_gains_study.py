"""A parameter study on Dask: the exoskeleton holding its posture, PD gain against the wearer's torso mass.

The five-link exoskeleton of exo5.yaml starts at rest in its initial posture and a PD law on all nine
inputs (joint torques and the longitudinal forces of the variable-length thighs and shanks) holds it
against gravity for ``--t-end`` seconds: u = kp B^T (q0 - q) - kd B^T qd. With no gravity compensation
the posture sags until the PD law carries the weight: the tracking error falls like 1/kp and grows with
the torso mass; the peak torque grows with the weight and, through the overshoot of the first instants,
with the gain. Too small a gain lets the legs fold and the run stops (blank cells).

The study is a grid of ``kp`` (log-spaced) by ``m_torso``: ``rodgen.sweep`` runs it in chunks of
trajectories on Dask workers (one ``simulate_batch`` per chunk; the torso masses of one gain share a
chunk) and computes the summaries on the workers: the RMS tracking error over time and coordinates (a
function of this script, sent to the workers by value), and the peak joint torque and peak
longitudinal force. Writes OUT_DIR/exo5_gains_study.png (two heat maps) and exo5_gains_study.csv.

    python examples/exo5_gains_study.py [OUT_DIR] [--t-end 2] [--workers 2] [--scheduler tcp://HOST:8786]
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen.runtime import PD, Reference
from rodgen.runtime.plot import new_figure

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "exo5.yaml")


def tracking(res: Any, q_ref: np.ndarray) -> dict[str, np.ndarray]:
    """Summary of a chunk (runs on a worker): RMS of q - q_ref over time and coordinates, the peak
    |torque| of the joints and |force| of the variable-length segments; NaN rows (a run that stopped)
    are left out."""
    err = res.q - q_ref
    rms = np.sqrt(np.nanmean(err.reshape(len(res), -1) ** 2, axis=1))
    torque = [i for i, name in enumerate(res.inputs) if name.startswith("tau_")]
    force = [i for i, name in enumerate(res.inputs) if name.startswith("F_")]
    u = np.abs(res.u)
    return {"rms_error": rms, "peak_torque": np.nanmax(u[:, :, torque], axis=(1, 2)),
            "peak_force": np.nanmax(u[:, :, force], axis=(1, 2))}


def run(out_dir: str, *, t_end: float = 2.0, dt: float = 1e-3,
        kp: Sequence[float] = tuple(np.geomspace(5e3, 1e5, 9)),
        m_torso: Sequence[float] = tuple(np.linspace(40.0, 120.0, 17)), kd: float = 100.0,
        scheduler: Any = None, workers: Optional[int] = None, progress: Optional[bool] = None,
        build_dir: Optional[str] = None) -> Any:
    """Run the study; write the figure and the CSV; return the DataFrame of summaries."""
    model = rodgen.load(MODEL)
    q0 = np.array([c.initial.evaluate(model.validate().parameter_values())
                   for c in model.validate().independent_coordinates()])
    hold = PD(Reference.hold(q0), kp=kp[0], kd=kd)
    os.makedirs(out_dir, exist_ok=True)
    df = rodgen.sweep(model, {"kp": list(kp), "m_torso": list(m_torso)}, t_end=t_end, dt=dt, controller=hold,
                      summary=[functools.partial(tracking, q_ref=q0)], chunk=100, scheduler=scheduler,
                      workers=workers, progress=progress, output=os.path.join(out_dir, "exo5_gains_study.csv"),
                      build_dir=build_dir)
    fig = new_figure(11.0, 4.5)
    axes = fig.subplots(1, 2)
    for ax, (col, label, scale) in zip(axes, (("rms_error", "RMS tracking error [mrad, mm]", 1e3),
                                              ("peak_torque", "peak joint torque [N m]", 1.0))):
        table = df.pivot(index="m_torso", columns="kp", values=col)
        z = np.where(df.pivot(index="m_torso", columns="kp", values="status").to_numpy() == 0,
                     table.to_numpy() * scale, np.nan)
        mesh = ax.pcolormesh(table.columns.to_numpy(), table.index.to_numpy(), z, shading="nearest",
                             cmap="viridis")
        ax.set_xscale("log")
        ax.set_xlabel("kp")
        ax.set_ylabel("torso mass [kg]")
        ax.set_title(label)
        fig.colorbar(mesh, ax=ax)
    fig.suptitle(f"exo5 holding its posture for {t_end:g} s: PD gain kp (kd = {kd:g}) vs torso mass "
                 f"({len(df)} runs, {int(df.attrs['failed'])} stopped)")
    fig.savefig(os.path.join(out_dir, "exo5_gains_study.png"), dpi=110)
    return df


def main(argv: Optional[Sequence[str]] = None) -> Any:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "out"))
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--workers", type=int, default=None, help="worker processes of the LocalCluster")
    ap.add_argument("--scheduler", default=None, help="tcp://HOST:PORT of a running Dask scheduler")
    args = ap.parse_args(argv)
    df = run(args.out_dir, t_end=args.t_end, scheduler=args.scheduler, workers=args.workers)
    best = df[df.status == 0].sort_values("rms_error").iloc[0]
    print(f"{len(df)} runs, {int(df.attrs['failed'])} stopped early; smallest RMS error "
          f"{best.rms_error:.3g} at kp = {best.kp:.4g}, m_torso = {best.m_torso:g} kg")
    print(f"wrote {os.path.join(args.out_dir, 'exo5_gains_study.png')}")
    return df


if __name__ == "__main__":
    main(sys.argv[1:])
