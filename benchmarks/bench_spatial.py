"""Spatial models: forward dynamics of a 7-joint arm and a 12-joint chain against Pinocchio, in the same run.

Models (built with the Python builder, ``rodgen.SpatialModel``):

* ``panda``: the kinematics of the Franka Emika Panda arm (the joint origins and axes of its URDF, seven
  revolute joints about z) with inertial parameters of the magnitude of its published identified model
  (a full inertia tensor and an off-axis centre of mass per link);
* ``chain12``: a 12-joint spatial chain, revolute joints alternating about z and y, a 0.25 m offset and a
  body with a full inertia tensor per link.

Pinocchio gets the same mechanism, built from rodgen's expanded tree (one joint per node, its placement and
bodies); the accelerations agree to about 1e-12 (reported). Measured, each a median of repeated runs:

* one state from Python: ``CompiledModel.forward_dynamics(q, qd, u)`` against ``pinocchio.aba`` (target:
  rodgen at most half of Pinocchio's time);
* the C call: the batch kernel over 200,000 states, time per state (target: at most 2 us for the arm);
* the build (derive, generate, compile) into a fresh folder, wall and CPU time (the compiler's processes
  included; on a shared machine the CPU time is the cost of the build, the wall time also the waiting)
  (target: at most 5 s for the arm).

Writes ``results/spatial.json``.

    python benchmarks/bench_spatial.py [--repeat 7]
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rodgen  # noqa: E402

from common import median_time, write_json  # noqa: E402

PI2 = np.pi / 2

#: Franka Emika Panda: joint origins (xyz, rpy) from its URDF; link inertials (mass, centre of mass,
#: ixx ixy ixz iyy iyz izz) of the magnitude of the identified model.
PANDA = [
    ((0, 0, 0.333), (0, 0, 0), 4.970684, (3.875e-3, 2.081e-3, -0.1750),
     (7.0337e-1, -1.39e-4, 6.772e-3, 7.0661e-1, 1.9169e-2, 9.117e-3)),
    ((0, 0, 0), (-PI2, 0, 0), 0.646926, (-3.141e-3, -2.872e-2, 3.495e-3),
     (7.962e-3, -3.925e-3, 1.0254e-2, 2.811e-2, 7.04e-4, 2.5995e-2)),
    ((0, -0.316, 0), (PI2, 0, 0), 3.228604, (2.7518e-2, 3.9252e-2, -6.6502e-2),
     (3.7242e-2, -4.761e-3, -1.1396e-2, 3.6155e-2, -1.2805e-2, 1.083e-2)),
    ((0.0825, 0, 0), (PI2, 0, 0), 3.587895, (-5.317e-2, 1.04419e-1, 2.7454e-2),
     (2.5853e-2, 7.796e-3, -1.332e-3, 1.9552e-2, 8.641e-3, 2.8323e-2)),
    ((-0.0825, 0.384, 0), (-PI2, 0, 0), 1.225946, (-1.1953e-2, 4.1065e-2, -3.8437e-2),
     (3.5549e-2, -2.117e-3, -4.037e-3, 2.9474e-2, 2.29e-4, 8.627e-3)),
    ((0, 0, 0), (PI2, 0, 0), 1.666555, (6.0149e-2, -1.4117e-2, -1.0517e-2),
     (1.964e-3, 1.09e-4, -1.158e-3, 4.354e-3, 3.41e-4, 5.433e-3)),
    ((0.088, 0, 0), (PI2, 0, 0), 7.35522e-1, (1.0517e-2, -4.252e-3, 6.1597e-2),
     (1.2516e-2, -4.28e-4, -1.196e-3, 1.0027e-2, -7.41e-4, 4.815e-3)),
]


def panda() -> rodgen.SpatialModel:
    m = rodgen.SpatialModel("panda", doc="Franka Emika Panda kinematics, seven revolute joints")
    parent = None
    for i, (xyz, rpy, mass, com, inertia) in enumerate(PANDA, start=1):
        lk = m.link(f"link{i}", parent, axis=(0, 0, 1), xyz=xyz, rpy=rpy)
        lk.body(mass, com, inertia)
        parent = lk.name
    m.fixed("flange", parent, xyz=(0, 0, 0.107)).marker("tcp")
    return m


def chain12() -> rodgen.SpatialModel:
    m = rodgen.SpatialModel("chain12")
    parent = None
    for i in range(12):
        lk = m.link(f"c{i}", parent, axis=(0, 0, 1) if i % 2 == 0 else (0, 1, 0),
                    xyz=(0.25, 0, 0) if parent else (0, 0, 0))
        lk.body(1.0 + 0.05 * i, (0.12, 0.01, -0.02), (0.004, 1e-4, -2e-4, 0.011, 3e-4, 0.012))
        parent = lk.name
    return m


def pinocchio_model(model: rodgen.SpatialModel) -> Any:
    """The same mechanism in Pinocchio, from rodgen's expanded tree (every node a joint of q)."""
    import pinocchio as pin

    from rodgen.symbolic.spatial import SpatialTree, spatial_kinematics
    vm = model.validate()
    k = spatial_kinematics(vm)
    tree = SpatialTree(vm, k)
    pm = pin.Model()
    pm.gravity.linear = np.array([float(g) for g in k.gravity])
    ids = []

    def num(x: Any) -> float:
        return float(x.xreplace(k.param_values))

    for i, nd in enumerate(tree.nodes):
        assert nd.coord == k.q[i], "the benchmark models have one joint per coordinate"
        R0 = np.array([[num(x) for x in row] for row in nd.R0])
        p0 = np.array([num(x) for x in nd.p0])
        axis = np.array([num(x) for x in nd.axis])
        jm = pin.JointModelRevoluteUnaligned(axis) if nd.revolute else pin.JointModelPrismaticUnaligned(axis)
        jid = pm.addJoint(ids[nd.parent] if nd.parent >= 0 else 0, jm, pin.SE3(R0, p0), nd.name)
        ids.append(jid)
        for m_, c, Ic in nd.bodies:
            pm.appendBodyToJoint(jid, pin.Inertia(num(m_), np.array([num(x) for x in c]),
                                                  np.array([[num(x) for x in row] for row in Ic])),
                                 pin.SE3.Identity())
    return pm


def _cpu() -> float:
    """User + system CPU seconds of this process and its finished children (the compiler)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bench(model: rodgen.SpatialModel, repeat: int) -> dict[str, Any]:
    import pinocchio as pin
    with tempfile.TemporaryDirectory() as tmp:
        c0 = _cpu()
        t0 = time.perf_counter()
        robot = rodgen.build(model, build_dir=tmp)
        build_s = time.perf_counter() - t0
        build_cpu_s = _cpu() - c0
    pm = pinocchio_model(model)
    data = pm.createData()
    rng = np.random.default_rng(0)
    q, qd, u = rng.uniform(-1, 1, robot.nq), rng.normal(size=robot.nv), rng.normal(size=robot.nu)
    a_pin = pin.aba(pm, data, q, qd, u)
    a_rod = robot.forward_dynamics(q, qd, u)
    agree = float(np.abs(a_rod - a_pin).max())
    t_rod = median_time(lambda: robot.forward_dynamics(q, qd, u), number=20000, repeat=repeat)
    t_pin = median_time(lambda: pin.aba(pm, data, q, qd, u), number=20000, repeat=repeat)
    n = 200_000
    Q = np.ascontiguousarray(np.tile(q, (n, 1)) + rng.normal(scale=0.1, size=(n, robot.nq)))
    QD = np.ascontiguousarray(np.tile(qd, (n, 1)))
    U = np.ascontiguousarray(np.tile(u, (n, 1)))
    out = np.empty((n, robot.nv))
    t_c = median_time(lambda: robot.forward_dynamics(Q, QD, U, out=out), number=1, repeat=repeat) / n
    return {"model": model.name, "nq": robot.nq, "forward": robot.forward, "build_s": build_s,
            "build_cpu_s": build_cpu_s,
            "python_one_state_us": t_rod * 1e6, "pinocchio_aba_us": t_pin * 1e6,
            "ratio_rodgen_over_pinocchio": t_rod / t_pin, "c_per_state_us": t_c * 1e6,
            "max_abs_difference_qdd": agree}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rows = [bench(panda(), args.repeat), bench(chain12(), args.repeat)]
    targets = {"panda": {"ratio_rodgen_over_pinocchio": 0.5, "c_per_state_us": 2.0, "build_s": 5.0,
                         "build_cpu_s": 5.0},
               "chain12": {"ratio_rodgen_over_pinocchio": 0.5}}
    for r in rows:
        r["targets_met"] = {k: r[k] <= v for k, v in targets[r["model"]].items()}
        print(f"{r['model']:8s} nq={r['nq']:2d} build {r['build_s']:.2f} s (CPU {r['build_cpu_s']:.2f} s) | "
              f"one state: rodgen {r['python_one_state_us']:.2f} us, pinocchio.aba {r['pinocchio_aba_us']:.2f} us, "
              f"ratio {r['ratio_rodgen_over_pinocchio']:.2f} | C {r['c_per_state_us']:.3f} us/state | "
              f"|qdd - pin| {r['max_abs_difference_qdd']:.1e} | targets {r['targets_met']}")
    write_json("spatial", {"rows": rows})


if __name__ == "__main__":
    main()
