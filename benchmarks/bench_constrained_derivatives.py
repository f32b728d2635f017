"""Derivatives of the constrained dynamics from Python against Pinocchio's bindings, one state per call.

A fixed-base arm with its tool link held by a 3D contact, and solo12 (floating base, nq = 19, nv = 18) with
its four feet held (world-aligned rows; Pinocchio: a ``RigidConstraintModel`` CONTACT_3D in
LOCAL_WORLD_ALIGNED per held frame, on its parent joint at the frame's placement):

    robot.constrained_dynamics_derivatives(q, qd, u, held)    (rodgen: q̈, λ and their derivatives)
    vs  pinocchio.constraintDynamics + computeConstraintDynamicsDerivatives

Before timing, the largest difference of the six derivatives against Pinocchio's over the states is
printed (solo12's derivatives by q on the tangent space, as Pinocchio's).

    python benchmarks/bench_constrained_derivatives.py [--robots ur5 panda solo12] [--states 16]

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

#: robot -> (URDF, joints kept, floating base, the held links (frames of rodgen's model) with Pinocchio's frames)
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", lambda j: True, False, {"tip": ("wrist_3_link", "wrist_3_link")}),
    "panda": ("panda_description/urdf/panda.urdf", lambda j: "finger" not in j, False,
              {"tip": ("panda_link7", "panda_link7")}),
    "solo12": ("solo_description/robots/solo12.urdf", lambda j: True, True,
               {leg: (f"{leg}_FOOT", f"{leg}_FOOT") for leg in ("FL", "FR", "HL", "HR")}),
}


def _pin_state(pm: Any, rng: np.random.Generator, floating: bool) -> np.ndarray:
    if not floating:
        return rng.uniform(-1, 1, pm.nq)
    import pinocchio as pin
    lo, hi = np.full(pm.nq, -1.0), np.full(pm.nq, 1.0)
    return pin.randomConfiguration(pm, lo, hi)


def run_robot(name: str, states: int) -> dict[str, Any]:
    import pinocchio as pin
    urdf, keep, floating, held = ROBOTS[name]
    model, pm = from_urdf_pair(urdf, keep=keep, floating=floating)
    if floating:                        # the URDF's joint limits would be blocks of their own
        for lk in model.links:
            lk.joint.limits = None
    for block, (link, _) in held.items():
        model.contact(block, link)
    robot = rodgen.build(model)
    active = list(held)
    rows = np.concatenate([np.arange(b.row, b.row + b.nrows) for name_ in active
                           for b in robot.constraints if b.name == name_])
    qi, vi = coordinate_maps(list(robot.coordinates), robot.nq, robot.nv, pm)
    ui = vi[robot.nv - robot.nu:]       # the actuated velocities (a floating base's six are not)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    cm_list = []
    for _, frame_name in held.values():
        frame = pm.frames[pm.getFrameId(frame_name)]
        cm_list.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, frame.parentJoint, frame.placement,
                                                lwa))
    cms = pin.StdVec_RigidConstraintModel(cm_list)
    cds = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, cms, cds)
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(0)
    xs = []
    for _ in range(states):             # Pinocchio's state, and rodgen's taken from it
        qp, vp, tp = _pin_state(pm, rng, floating), rng.normal(size=pm.nv), np.zeros(pm.nv)
        tp[ui] = rng.normal(size=robot.nu)
        xs.append((qp[qi], vp[vi], tp[ui], qp, vp, tp))
    worst = 0.0
    for q, qd, u, qp, vp, tp in xs:
        d = pm.createData()
        c2 = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
        pin.initConstraintDynamics(pm, d, cms, c2)
        pin.constraintDynamics(pm, d, qp, vp, tp, cms, c2, prox)
        pin.computeConstraintDynamicsDerivatives(pm, d, cms, c2, prox)
        got = list(robot.constrained_dynamics_derivatives(q, qd, u, active))
        got[3:] = [x[rows] for x in got[3:]]      # the held rows (an arm's joint limits are blocks too)
        ref = (d.ddq_dq[np.ix_(vi, vi)], d.ddq_dv[np.ix_(vi, vi)], d.ddq_dtau[np.ix_(vi, ui)],
               d.dlambda_dq[:, vi], d.dlambda_dv[:, vi], d.dlambda_dtau[:, ui])
        worst = max(worst, max(float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) for a, b in zip(got, ref)))
    print(f"{name}: largest relative difference against Pinocchio {worst:.1e}")
    q, qd, u, qp, vp, tp = xs[0]

    def ours() -> None:
        robot.constrained_dynamics_derivatives(q, qd, u, active)

    def theirs() -> None:
        pin.constraintDynamics(pm, data, qp, vp, tp, cms, cds, prox)
        pin.computeConstraintDynamicsDerivatives(pm, data, cms, cds, prox)

    t_ours, t_pin = autorange(ours), autorange(theirs)
    print(f"{name}: rodgen {t_ours * 1e6:.1f} us, Pinocchio {t_pin * 1e6:.1f} us, ratio {t_ours / t_pin:.2f}")
    return {"nv": robot.nv, "held": active, "rodgen_us": t_ours * 1e6, "pinocchio_us": t_pin * 1e6,
            "ratio": t_ours / t_pin, "max_rel_difference": worst}


def main(argv: Any = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    ap.add_argument("--states", type=int, default=16)
    a = ap.parse_args(argv)
    out = {"machine": machine(), "robots": {nm: run_robot(nm, a.states) for nm in a.robots}}
    write_json("constrained_derivatives", out)
    return out


if __name__ == "__main__":
    main()
