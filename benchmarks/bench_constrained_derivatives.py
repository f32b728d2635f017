"""Derivatives of the constrained dynamics from Python against Pinocchio's bindings, one state per call.

A fixed-base arm with its tool link held by a 3D contact (world-aligned rows; Pinocchio: a
``RigidConstraintModel`` CONTACT_3D in LOCAL_WORLD_ALIGNED on the last joint):

    robot.constrained_dynamics_derivatives(q, qd, u, ["tip"])    (rodgen: q̈, λ and their derivatives)
    vs  pinocchio.constraintDynamics + computeConstraintDynamicsDerivatives

Before timing, the largest difference of the six derivatives against Pinocchio's over the states is
printed. solo12 with its four feet held needs contacts on a floating base (nq != nv), which the
derivatives do not take yet, so the arms are timed.

    python benchmarks/bench_constrained_derivatives.py [--robots ur5 panda] [--states 16]

Writes ``results/constrained_derivatives.json``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_derivatives import coordinate_maps, from_urdf_pair  # noqa: E402

import rodgen  # noqa: E402

from common import autorange, machine, write_json  # noqa: E402

#: robot -> (URDF, joints kept, the held link (a frame of rodgen's model), its joint in Pinocchio)
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", lambda j: True, "wrist_3_link", "wrist_3_joint"),
    "panda": ("panda_description/urdf/panda.urdf", lambda j: "finger" not in j, "panda_link7", "panda_joint7"),
}


def run_robot(name: str, states: int) -> dict[str, Any]:
    import pinocchio as pin
    urdf, keep, link, joint = ROBOTS[name]
    model, pm = from_urdf_pair(urdf, keep=keep)
    model.contact("tip", link)
    robot = rodgen.build(model)
    blk = next(b for b in robot.constraints if b.name == "tip")
    tip = slice(blk.row, blk.row + blk.nrows)
    qi, vi = coordinate_maps(list(robot.coordinates), robot.nq, robot.nv, pm)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    cms = pin.StdVec_RigidConstraintModel([pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm,
                                                                    pm.getJointId(joint), pin.SE3.Identity(),
                                                                    lwa)])
    cds = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, cms, cds)
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(0)
    xs = [(rng.uniform(-1, 1, robot.nq), rng.normal(size=robot.nv), rng.normal(size=robot.nu))
          for _ in range(states)]
    worst = 0.0
    for q, qd, u in xs:
        qp, vp, tp = np.empty(pm.nq), np.empty(pm.nv), np.zeros(pm.nv)
        qp[qi], vp[vi] = q, qd
        tp[vi] = u
        d = pm.createData()
        c2 = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
        pin.initConstraintDynamics(pm, d, cms, c2)
        pin.constraintDynamics(pm, d, qp, vp, tp, cms, c2, prox)
        pin.computeConstraintDynamicsDerivatives(pm, d, cms, c2, prox)
        got = list(robot.constrained_dynamics_derivatives(q, qd, u, ["tip"]))
        got[3:] = [d[tip] for d in got[3:]]      # the tip's rows (the URDF's joint limits are blocks too)
        ref = (d.ddq_dq[np.ix_(vi, vi)], d.ddq_dv[np.ix_(vi, vi)], d.ddq_dtau[np.ix_(vi, vi)],
               d.dlambda_dq[:, vi], d.dlambda_dv[:, vi], d.dlambda_dtau[:, vi])
        worst = max(worst, max(float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) for a, b in zip(got, ref)))
    print(f"{name}: largest relative difference against Pinocchio {worst:.1e}")
    q, qd, u = xs[0]
    qp, vp, tp = np.empty(pm.nq), np.empty(pm.nv), np.zeros(pm.nv)
    qp[qi], vp[vi] = q, qd
    tp[vi] = u

    def ours() -> None:
        robot.constrained_dynamics_derivatives(q, qd, u, ["tip"])

    def theirs() -> None:
        pin.constraintDynamics(pm, data, qp, vp, tp, cms, cds, prox)
        pin.computeConstraintDynamicsDerivatives(pm, data, cms, cds, prox)

    t_ours, t_pin = autorange(ours), autorange(theirs)
    print(f"{name}: rodgen {t_ours * 1e6:.1f} us, Pinocchio {t_pin * 1e6:.1f} us, ratio {t_ours / t_pin:.2f}")
    return {"nv": robot.nv, "rodgen_us": t_ours * 1e6, "pinocchio_us": t_pin * 1e6, "ratio": t_ours / t_pin,
            "max_rel_difference": worst}


def main(argv: Any = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    ap.add_argument("--states", type=int, default=16)
    a = ap.parse_args(argv)
    out = {"machine": machine(), "robots": {nm: run_robot(nm, a.states) for nm in a.robots},
           "note": "solo12 with four feet held needs contacts on a floating base (nq != nv): not yet"}
    write_json("constrained_derivatives", out)
    return out


if __name__ == "__main__":
    main()
