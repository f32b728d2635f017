"""Floating-base forward dynamics against ``pinocchio.aba``: solo12 and Talos with a free-flyer root.

rodgen reads the robot files of example-robot-data with ``rodgen.from_urdf(path, floating=True)``; Pinocchio
reads the same files with ``buildModelFromUrdf(path, JointModelFreeFlyer())``. One state from Python, in the
same run, each a median of repeated runs interleaved rodgen/Pinocchio: ``CompiledModel.forward_dynamics(q, v,
u)`` against ``pinocchio.aba`` (target: rodgen at most half of Pinocchio's time); the accelerations agree to
about 1e-13 (reported). Also per state in the compiled batch kernel.

Constrained forward dynamics of solo12 with its four feet held (point contacts, 3 rows each, the URDF's joint
limits dropped): ``CompiledModel.constrained_dynamics(q, v, u, active=feet)`` (the generated
``constrained_solve``) against ``pinocchio.constraintDynamics`` with four ``RigidConstraintModel`` of type
``CONTACT_3D`` in ``LOCAL_WORLD_ALIGNED`` (no Baumgarte correction in either, proximal settings of one
iteration at 1e-12), both from Python, interleaved in the same run (target: rodgen at most half of
Pinocchio's time); the accelerations and contact forces agree (reported).

Writes ``results/floating.json``.

    python benchmarks/bench_floating.py [--repeat 7]
"""
from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402

from common import machine, median_time, write_json  # noqa: E402

ROBOTS = {"solo12": "solo_description/robots/solo12.urdf", "talos": "talos_data/robots/talos_reduced.urdf"}
TARGETS = {"ratio_rodgen_over_pinocchio": 0.5}


def robot_file(relative: str) -> str:
    dist = importlib.metadata.distribution("example-robot-data")
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("robots/" + relative):
            return str(dist.locate_file(f))
    raise SystemExit(f"{relative} is not among the files of example-robot-data")


def main() -> None:
    import pinocchio as pin
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rows = []
    for name, relative in ROBOTS.items():
        path = robot_file(relative)
        robot = rodgen.build(rodgen.from_urdf(path, floating=True))
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        data = pm.createData()
        qi = list(range(7)) + [pm.idx_qs[pm.getJointId(c)] for c in robot.coordinates[7:]]
        vi = list(range(6)) + [pm.idx_vs[pm.getJointId(c)] for c in robot.coordinates[7:]]
        rng = np.random.default_rng(0)
        pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        pv, ptau = rng.normal(size=pm.nv), np.zeros(pm.nv)
        ptau[6:] = rng.normal(size=pm.nv - 6)
        q, v, u = pq[qi], pv[vi], ptau[vi][6:]
        agree = float(np.abs(robot.forward_dynamics(q, v, u) - pin.aba(pm, data, pq, pv, ptau)[vi]).max())
        t_rod, t_pin = [], []
        for _ in range(args.repeat):
            t_rod.append(median_time(lambda: robot.forward_dynamics(q, v, u), number=20000, repeat=1))
            t_pin.append(median_time(lambda: pin.aba(pm, data, pq, pv, ptau), number=20000, repeat=1))
        one_rod, one_pin = statistics.median(t_rod), statistics.median(t_pin)
        n = 100_000
        Q = np.ascontiguousarray(np.tile(q, (n, 1)))
        V = np.ascontiguousarray(np.tile(v, (n, 1)) + rng.normal(scale=0.1, size=(n, robot.nv)))
        U = np.ascontiguousarray(np.tile(u, (n, 1)))
        out = np.empty((n, robot.nv))
        t_batch = median_time(lambda: robot.forward_dynamics(Q, V, U, out=out), number=1, repeat=args.repeat) / n
        row = {"model": name, "urdf": Path(path).name, "nq": robot.nq, "nv": robot.nv, "forward": robot.forward,
               "python_one_state_us": one_rod * 1e6, "pinocchio_aba_us": one_pin * 1e6,
               "ratio_rodgen_over_pinocchio": one_rod / one_pin, "c_batch_per_state_us": t_batch * 1e6,
               "max_abs_difference_qdd": agree, "targets": TARGETS}
        row["targets_met"] = {k: row[k] <= t for k, t in TARGETS.items()}
        rows.append(row)
        print(f"{name}: nq={robot.nq} nv={robot.nv} ({robot.forward}) | one state: rodgen {one_rod * 1e6:.2f} us, "
              f"pinocchio.aba {one_pin * 1e6:.2f} us, ratio {one_rod / one_pin:.2f} | batch {t_batch * 1e6:.3f} "
              f"us/state | |qdd - pin| {agree:.1e} | targets met {row['targets_met']}")
    write_json("floating", {"machine": machine(), "rows": rows, "constrained": constrained(args.repeat),
                            "note": "medians; one-state timings interleaved rodgen/Pinocchio in the same run"})


FEET = ("FL", "FR", "HL", "HR")


def constrained(repeat: int) -> dict:
    """solo12 with four feet held: rodgen's constrained dynamics against pinocchio.constraintDynamics."""
    import pinocchio as pin
    path = robot_file(ROBOTS["solo12"])
    model = rodgen.from_urdf(path, floating=True)
    model.name = "solo12_feet"
    for lk in model.links:
        lk.joint.limits = None
    for leg in FEET:
        model.contact(leg, f"{leg}_FOOT", friction=1.0)
    robot = rodgen.build(model)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    data = pm.createData()
    cms = pin.StdVec_RigidConstraintModel()
    for leg in FEET:
        f = pm.frames[pm.getFrameId(f"{leg}_FOOT")]
        cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, f.parentJoint, f.placement,
                                            pin.ReferenceFrame.LOCAL_WORLD_ALIGNED))
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    pin.initConstraintDynamics(pm, data, cms, cds)
    prox = pin.ProximalSettings(1e-12, 1e-12, 1)
    qi = list(range(7)) + [pm.idx_qs[pm.getJointId(c)] for c in robot.coordinates[7:]]
    vi = list(range(6)) + [pm.idx_vs[pm.getJointId(c)] for c in robot.coordinates[7:]]
    rng = np.random.default_rng(1)
    pq = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    pv, ptau = rng.normal(size=pm.nv), np.zeros(pm.nv)
    ptau[6:] = rng.normal(size=pm.nv - 6)
    q, v, u = pq[qi], pv[vi], ptau[vi][6:]
    feet = list(FEET)
    qdd, lam = robot.constrained_dynamics(q, v, u, active=feet)
    a_pin = pin.constraintDynamics(pm, data, pq, pv, ptau, cms, cds, prox)
    agree_qdd = float(np.abs(qdd - a_pin[vi]).max())
    agree_lam = float(min(np.abs(lam - data.lambda_c).max(), np.abs(lam + data.lambda_c).max()))
    t_rod, t_pin = [], []
    for _ in range(repeat):
        t_rod.append(median_time(lambda: robot.constrained_dynamics(q, v, u, active=feet), number=20000, repeat=1))
        t_pin.append(median_time(lambda: pin.constraintDynamics(pm, data, pq, pv, ptau, cms, cds, prox),
                                 number=20000, repeat=1))
    one_rod, one_pin = statistics.median(t_rod), statistics.median(t_pin)
    targets = {"ratio_rodgen_over_pinocchio": 0.5}
    row = {"model": "solo12, four feet held (12 rows)", "nq": robot.nq, "nv": robot.nv, "nrows": robot.nrows,
           "rodgen_constrained_dynamics_us": one_rod * 1e6, "pinocchio_constraintDynamics_us": one_pin * 1e6,
           "ratio_rodgen_over_pinocchio": one_rod / one_pin, "max_abs_difference_qdd": agree_qdd,
           "max_abs_difference_lambda": agree_lam, "targets": targets}
    row["targets_met"] = {k: row[k] <= t for k, t in targets.items()}
    print(f"solo12, four feet held: rodgen constrained_dynamics {one_rod * 1e6:.2f} us, "
          f"pinocchio.constraintDynamics {one_pin * 1e6:.2f} us, ratio {one_rod / one_pin:.2f} | "
          f"|qdd - pin| {agree_qdd:.1e}, |lambda - pin| {agree_lam:.1e} | targets met {row['targets_met']}")
    return row


if __name__ == "__main__":
    main()
