"""The FMU's own step loop against rodgen: 10 s of exo5 through FMPy's Co-Simulation and through
robot.simulate, the same RK4 step (1 ms), measured in the same run.

    python benchmarks/bench_fmu.py [--repeat 5]

Three ways, each the median of ``--repeat`` runs, each integrating 10 s with RK4 at 1 ms:

* **rodgen**: ``robot.simulate(y0, 10, 1e-3)`` (the whole run in C, every step stored);
* **FMU, 1 ms exchange**: FMPy's ``FMU2Slave.doStep`` every 1 ms from Python, reading the states
  after each step (10 000 calls through ctypes: the importer's loop, not the FMU's, dominates);
* **FMU, 10 ms exchange**: ``doStep`` every 10 ms with ``fmu.max_step = 1 ms`` (ten RK4 steps inside
  each call, the FMU's own loop), reading the states after each step;
* **FMI 3.0 FMU, 10 ms exchange**: the same through the FMI 3.0 FMU of the model (``FMU3Slave``): the
  same core under the other version's layer.

Writes benchmarks/results/fmu.json with the times and the ratios to rodgen.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rodgen  # noqa: E402

from common import missing, write_json  # noqa: E402

#: The issue's target: the FMU run within this factor of robot.simulate per simulated second.
TARGET_RATIO = 1.5


def median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--t-end", type=float, default=10.0)
    args = ap.parse_args()
    why = missing("fmpy")
    if why:
        print(why)
        return
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    from fmpy.fmi3 import FMU3Slave

    robot = rodgen.build(rodgen.load(HERE.parent / "examples" / "exo5.yaml"))
    tmp = Path(tempfile.mkdtemp(prefix="rodgen-bench-fmu-"))
    try:
        path = rodgen.export_fmu(robot, tmp / "exo5.fmu")
        path3 = rodgen.export_fmu(robot, tmp / "exo5_3.fmu", fmi_version="3.0")
        md3 = read_model_description(str(path3))
        unzipped3 = extract(str(path3))
        md = read_model_description(str(path))
        vr = {v.name: v.valueReference for v in md.modelVariables}
        states = [vr[f"{w}.{c}"] for w in ("q", "qd") for c in robot.coordinates]
        unzipped = extract(str(path))
        dt, t_end = 1e-3, args.t_end

        def fmu_run(step: float) -> None:
            fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=md.coSimulation.modelIdentifier,
                            instanceName="bench")
            fmu.instantiate()
            fmu.setupExperiment(startTime=0.0)
            fmu.enterInitializationMode()
            fmu.setReal([vr["fmu.max_step"]], [dt])
            fmu.exitInitializationMode()
            n = int(round(t_end / step))
            for k in range(n):
                fmu.doStep(currentCommunicationPoint=k * step, communicationStepSize=step)
                fmu.getReal(states)
            fmu.terminate()
            fmu.freeInstance()

        def fmu3_run(step: float) -> None:
            fmu = FMU3Slave(guid=md3.guid, unzipDirectory=unzipped3,
                            modelIdentifier=md3.coSimulation.modelIdentifier, instanceName="bench")
            fmu.instantiate()
            fmu.enterInitializationMode(startTime=0.0)
            fmu.setFloat64([vr["fmu.max_step"]], [dt])
            fmu.exitInitializationMode()
            n = int(round(t_end / step))
            for k in range(n):
                fmu.doStep(currentCommunicationPoint=k * step, communicationStepSize=step)
                fmu.getFloat64(states)
            fmu.terminate()
            fmu.freeInstance()

        y0 = robot.initial_state()
        ref = median(lambda: robot.simulate(y0, t_end, dt), args.repeat)
        fmu_1 = median(lambda: fmu_run(dt), args.repeat)
        fmu_10 = median(lambda: fmu_run(10 * dt), args.repeat)
        fmu3_10 = median(lambda: fmu3_run(10 * dt), args.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = {"rodgen": ref, "fmu_exchange_1ms": fmu_1, "fmu_exchange_10ms": fmu_10, "fmu3_exchange_10ms": fmu3_10}
    print(f"10 s of exo5, RK4 at 1 ms ({args.repeat} runs, median):")
    for name, t in rows.items():
        print(f"  {name:20s} {t * 1e3:9.1f} ms   {t / ref:6.2f} x rodgen")
    ok = fmu_10 / ref <= TARGET_RATIO
    print(f"target (FMU's own loop, 10 ms exchange, within {TARGET_RATIO} x): {'met' if ok else 'NOT met'}")
    write_json("fmu", {"t_end": t_end, "dt": dt, "seconds": rows,
                       "ratio": {k: v / ref for k, v in rows.items()}, "target_ratio": TARGET_RATIO,
                       "target_met": ok})


if __name__ == "__main__":
    main()
