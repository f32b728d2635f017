"""One state from Python: constrained dynamics against forward dynamics of the same compiled model.

    python benchmarks/bench_python_calls.py [--rounds 51] [--calls 2000]

For examples/exo5_walk.yaml (11 coordinates) with both feet held and examples/fourbar.yaml (a closed loop),
times ``CompiledModel.constrained_dynamics(q, qd, u, active)`` and the anchor
``CompiledModel.forward_dynamics(q, qd, u)`` from Python on 1-D float64 arrays, interleaved round by round in
one process (each round ``calls`` calls of each); the time of a call is the median over the rounds, the
ratio the median of the per-round ratios. The constrained call does more in C (the constrained solve: about
1.7 times the forward dynamics in instructions, benchmarks/README.md "Constrained dynamics"), so the target is
a ratio of about 3 or less: the Python around the one C call costs about what the forward dynamics' costs.

Writes benchmarks/results/python_calls.json.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import rodgen  # noqa: E402

from common import write_json  # noqa: E402

EXAMPLES = HERE.parent / "examples"

#: (label, model file, active blocks)
CASES = (
    ("exo5_walk double support", "exo5_walk.yaml", ("foot_a", "foot_b")),
    ("fourbar closed loop", "fourbar.yaml", ()),
)


def per_call(f: Callable[[], Any], calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t) / calls


def measure(label: str, file: str, active: tuple[str, ...], rounds: int, calls: int) -> dict[str, Any]:
    robot = rodgen.build(rodgen.load(EXAMPLES / file))
    q = np.ascontiguousarray(robot.initial_state()[:robot.nq])
    qd, u = np.zeros(robot.nq), np.zeros(robot.nu)
    act = list(active)

    def cfd() -> Any:
        return robot.constrained_dynamics(q, qd, u, act)

    def fd() -> Any:
        return robot.forward_dynamics(q, qd, u)

    cfd(), fd()
    tc, tf = [], []
    for _ in range(rounds):
        tc.append(per_call(cfd, calls))
        tf.append(per_call(fd, calls))
    ratios = [c / f for c, f in zip(tc, tf)]
    out = {"case": label, "model": file, "active": act, "nq": robot.nq,
           "constrained_dynamics_us": statistics.median(tc) * 1e6, "forward_dynamics_us": statistics.median(tf) * 1e6,
           "ratio": statistics.median(ratios), "rounds": rounds, "calls": calls}
    print(f"{label:28s} constrained_dynamics {out['constrained_dynamics_us']:6.2f} us   forward_dynamics "
          f"{out['forward_dynamics_us']:6.2f} us   ratio {out['ratio']:.2f}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=51, help="interleaved rounds (default 51)")
    ap.add_argument("--calls", type=int, default=2000, help="calls of each per round (default 2000)")
    args = ap.parse_args()
    cases = [measure(label, file, active, args.rounds, args.calls) for label, file, active in CASES]
    write_json("python_calls", {"cases": cases, "target_ratio": 3.0})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
