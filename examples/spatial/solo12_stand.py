"""solo12 dropped onto the ground: impacts at touch-down, feet sticking, standing under a joint PD law.

The quadruped solo12 of example-robot-data is read from its URDF with a floating base
(``rodgen.from_urdf(..., floating=True)``: q = [x y z qx qy qz qw, 12 joints], v = the base's velocity in
its own frame and the 12 joint rates, Pinocchio's free flyer). Each foot gets a rigid point contact against
the ground (3 rows, λ = [fx fy fz] in the ground's axes, Coulomb friction μ = 1). The robot starts in its
standing posture, level, with the feet 10 cm above the ground, and falls. The hybrid simulator (RK4 on the
constrained dynamics, the quaternion renormalised after every step) locates the touch-down from the feet's
height, applies the plastic impact (the feet stick; the kinetic energy can only drop), would release a foot
whose normal force pulls (lift-off) and stops if a foot would have to slide: rigid 3-row contacts stick or
lift off, they do not slide yet (a tilted landing, ``--tilt``, can push a foot out of its friction cone and
end the run there). The 12 joints hold the standing posture with the compiled PD law (``rodgen.PD`` toward
``Reference.hold``; the base is not actuated).

    python examples/spatial/solo12_stand.py [OUT_DIR] [--t-end 2] [--drop 0.1] [--tilt ROLL PITCH]

Prints the events, the base height and the ground reactions at rest against the weight, and writes
OUT_DIR/solo12_stand.png: the base height, each foot's normal force and their sum against the weight.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from typing import Any, Optional, Sequence

import numpy as np

import rodgen
from rodgen.runtime.result import SimulationResult

HERE = os.path.dirname(os.path.abspath(__file__))
FEET = ("FL", "FR", "HL", "HR")
#: the standing posture of example-robot-data's solo12 (hip abduction, hip flexion, knee per leg)
POSTURE = {"FL": (0.0, 0.8, -1.6), "FR": (0.0, 0.8, -1.6), "HL": (0.0, -0.8, 1.6), "HR": (0.0, -0.8, 1.6)}
KP, KD = 20.0, 0.5          # joint PD gains, N m/rad and N m s/rad


def solo12_urdf() -> str:
    """solo12's URDF in the installed example-robot-data package (found through its file list)."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit("example-robot-data is not installed: pip install example-robot-data") from None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("robots/solo_description/robots/solo12.urdf"):
            return str(dist.locate_file(f))
    raise SystemExit("solo12.urdf is not among the files of example-robot-data")


def solo12_model(friction: float = 1.0) -> rodgen.SpatialModel:
    """solo12 with a free-flyer base and a point contact at each foot. The URDF's joint limits are dropped
    (standing never reaches them; as limit blocks they would add 24 rows to every constrained solve)."""
    model = rodgen.from_urdf(solo12_urdf(), floating=True)
    model.name = "solo12_stand"
    for lk in model.links:
        lk.joint.limits = None
    for leg in FEET:
        model.contact(leg, f"{leg}_FOOT", friction=friction)
    return model


def initial_state(robot: Any, drop: float, tilt: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """The standing posture, the base rolled and pitched by ``tilt`` (rad), the lowest foot ``drop`` above
    the ground, at rest."""
    q = robot.initial_state()[:robot.nq].copy()
    for leg, angles in POSTURE.items():
        for joint, a in zip(("HAA", "HFE", "KFE"), angles):
            q[robot.coordinates.index(f"{leg}_{joint}")] = a
    roll, pitch = tilt
    qx = np.array([np.sin(roll / 2), 0.0, 0.0, np.cos(roll / 2)])
    qy = np.array([0.0, np.sin(pitch / 2), 0.0, np.cos(pitch / 2)])
    x, y, z, w = qx                          # qx ⊗ qy, quaternions as (x, y, z, w)
    a, b, c, d = qy
    q[3:7] = [w * a + d * x + y * c - z * b, w * b + d * y + z * a - x * c, w * c + d * z + x * b - y * a,
              w * d - x * a - y * b - z * c]
    q[2] = 0.0
    q[2] = drop - robot.constraint_position(q)[2::3].min()      # the rows [x, y, height] of each foot
    return np.concatenate([q, np.zeros(robot.nv)])


def run(out_dir: Optional[str], *, t_end: float = 2.0, drop: float = 0.1, tilt: tuple[float, float] = (0.0, 0.0),
        dt: float = 1e-3) -> tuple[SimulationResult, dict[str, Any]]:
    robot = rodgen.build(solo12_model())
    y0 = initial_state(robot, drop, tilt)
    law = rodgen.PD(rodgen.Reference.hold(y0[:robot.nq]), kp=KP, kd=KD)
    res = robot.simulate(y0, t_end, dt, contacts=(), controller=law)
    if not res.ok:
        raise RuntimeError(f"{res.message} (events: {res.events})")
    mass = float(robot.mass_matrix(y0[:robot.nq])[0, 0])          # the base's linear block: the total mass
    g = 9.81
    normal = res.lam[:, 2::3]                                      # fz of each foot
    info = {"mass": mass, "weight": mass * g, "sum_end": float(normal[-1].sum()),
            "normal_end": normal[-1].tolist(), "height_end": float(res.q[-1, 2]),
            "touchdowns": [(e["t"], e["block"], e["energy_loss"]) for e in res.events if e["kind"] == "touchdown"],
            "liftoffs": [(e["t"], e["block"]) for e in res.events if e["kind"] == "liftoff"],
            "events": len(res.events)}
    if out_dir is not None:
        from rodgen.runtime.plot import new_figure
        os.makedirs(out_dir, exist_ok=True)
        fig = new_figure(9.0, 6.5)
        ax = fig.subplots(2, 1, sharex=True)
        ax[0].plot(res.t, res.q[:, 2], color="tab:green")
        ax[0].set_ylabel("base height [m]")
        for i, leg in enumerate(FEET):
            ax[1].plot(res.t, normal[:, i], lw=1.0, label=leg)
        ax[1].plot(res.t, normal.sum(axis=1), "k", lw=1.2, label="sum")
        ax[1].axhline(mass * g, color="k", ls="--", lw=0.8, label="weight")
        ax[1].set_ylim(-1.0, 2.5 * mass * g)
        ax[1].set_ylabel("normal force [N]")
        ax[1].set_xlabel("t [s]")
        for a in ax:
            a.grid(True, alpha=0.3)
        ax[1].legend(fontsize="small", ncol=3)
        fig.suptitle(f"solo12 dropped from {drop:g} m: {len(info['touchdowns'])} touch-downs, "
                     f"{normal[-1].sum():.3f} N on the feet, weight {mass * g:.3f} N")
        fig.savefig(os.path.join(out_dir, "solo12_stand.png"), dpi=90)
    return res, info


def main(argv: Optional[Sequence[str]] = None) -> tuple[SimulationResult, dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, os.pardir, "out"))
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--drop", type=float, default=0.1, help="initial height of the lowest foot [m]")
    ap.add_argument("--tilt", type=float, nargs=2, default=(0.0, 0.0), metavar=("ROLL", "PITCH"),
                    help="initial roll and pitch of the base [rad]")
    a = ap.parse_args(argv)
    res, info = run(a.out_dir, t_end=a.t_end, drop=a.drop, tilt=tuple(a.tilt))
    impacts: dict[float, tuple[list[str], float]] = {}
    for t, block, loss in info["touchdowns"]:      # the feet touching at one time share one impact
        impacts.setdefault(t, ([], loss))[0].append(block)
    for t, (blocks, loss) in impacts.items():
        print(f"t = {t:.4f} s: touch-down of {', '.join(blocks)} (one impact), {loss:.4f} J of kinetic energy lost")
    for t, block in info["liftoffs"]:
        print(f"t = {t:.4f} s: lift-off of {block}")
    print(f"at t = {res.t[-1]:g} s: base height {info['height_end']:.4f} m, normal forces "
          f"{', '.join(f'{x:.3f}' for x in info['normal_end'])} N, sum {info['sum_end']:.6f} N against a "
          f"weight of {info['weight']:.6f} N")
    if a.out_dir:
        print(f"wrote {os.path.join(a.out_dir, 'solo12_stand.png')}")
    return res, info


if __name__ == "__main__":
    main(sys.argv[1:])
