"""Batched simulation in C (sys.simulate_batch): every trajectory against its own one-by-one simulate().

The reference path is ``simulate()`` called once per trajectory (a Simulation object per run, driven
chunk by chunk from Python); the batch runs the same integrator on N trajectories from one C call over
threads. Equality is exact (the same floating-point operations in the same order), for 1 thread, 2
threads and more threads than trajectories, so the results cannot depend on how trajectories are shared
out. Energy conservation of the unforced batch is an independent check of the numbers themselves.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from rodgen.runtime import PD, ComputedTorque, Reference
from rodgen.runtime.result import Status

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
THREADS = (1, 2, 50)

PD_C = r"""
#include "rodgen_runtime.h"
/* PD toward params[0..nq) with gains params[nq], params[nq+1] on every input; state[0] counts calls. */
int pd_batch(void *context, double t, const double *y, double *u)
{
    const rodgen_controller *c = (const rodgen_controller *)context;
    const rodgen_model *m = c->model;
    const int n = m->nq, nu = m->nu;
    double B[n * nu];
    int i, j;
    (void)t;
    c->state[0] += 1.0;
    m->input_map(y, c->p, B);
    for (j = 0; j < nu; ++j) {
        double be = 0.0, bed = 0.0;
        for (i = 0; i < n; ++i) {
            be += B[i * nu + j] * (c->params[i] - y[i]);
            bed -= B[i * nu + j] * y[n + i];
        }
        u[j] = c->params[n] * be + c->params[n + 1] * bed;
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def pendulum(build_dir: Path) -> rodgen.runtime.CompiledModel:
    return rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)


def _starts(sys_: rodgen.runtime.CompiledModel, n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.tile(sys_.initial_state(), (n, 1))
    y += 0.3 * rng.standard_normal(y.shape)
    return y


def _params(sys_: rodgen.runtime.CompiledModel, n: int) -> np.ndarray:
    p = np.tile(sys_.parameter_vector({}), (n, 1))
    names = list(sys_.parameters)
    p[:, names.index("m2")] *= np.linspace(0.5, 2.0, n)
    p[:, names.index("L1")] *= np.linspace(0.8, 1.3, n)
    return p


def _same(batch: rodgen.runtime.BatchResult, i: int, one: rodgen.runtime.SimulationResult) -> None:
    k = int(batch.rows[i])
    assert k == len(one.t)
    assert np.array_equal(batch.t[i, :k], one.t)
    assert np.array_equal(batch.q[i, :k], one.q)
    assert np.array_equal(batch.qd[i, :k], one.qd)
    assert np.array_equal(batch.u[i, :k], one.u)
    assert batch.status[i] is one.status
    assert int(batch.steps[i]) == int(one.extra["steps"])
    assert int(batch.evaluations[i]) == int(one.extra["evaluations"])
    assert np.isnan(batch.q[i, k:]).all()


@pytest.mark.parametrize("threads", THREADS)
def test_stacked_states_equal_one_by_one_bit_for_bit(pendulum, threads) -> None:
    y0s = _starts(pendulum, 7)
    res = pendulum.simulate_batch(y0s, 0.5, 1e-3, store_every=7, threads=threads)
    assert res.q.shape[:2] == (7, 500 // 7 + 2)
    for i in range(7):
        _same(res, i, pendulum.simulate(y0s[i], 0.5, 1e-3, store_every=7))
    # an independent check of the numbers: the unforced double pendulum keeps its energy (RK4, dt = 1 ms)
    for i in range(7):
        k = int(res.rows[i])
        T, V = pendulum.energy(res.q[i, :k], res.qd[i, :k])
        assert np.ptp(T + V) < 1e-6 * max(1.0, float(np.abs(T + V).max()))


@pytest.mark.parametrize("threads", THREADS)
def test_stacked_parameters_and_inputs_equal_one_by_one(pendulum, threads) -> None:
    n = 5
    p = _params(pendulum, n)
    y0 = pendulum.initial_state()
    u = np.column_stack([np.linspace(-1, 1, n), np.linspace(2, 0, n)])
    res = pendulum.simulate_batch(y0, 0.4, 2e-3, p=p, u=u, threads=threads)
    finals = set()
    for i in range(n):
        _same(res, i, pendulum.simulate(y0, 0.4, 2e-3, p=p[i], u=u[i]))
        finals.add(res.q[i, res.rows[i] - 1].tobytes())
    assert len(finals) == n   # the parameter sets and inputs were really used


@pytest.mark.parametrize("threads", THREADS)
def test_final_only_and_dopri5_and_controllers(pendulum, threads, tmp_path, build_dir) -> None:
    y0s = _starts(pendulum, 4, seed=5)
    q_ref = pendulum.initial_state()[:2]
    fin = pendulum.simulate_batch(y0s, 0.3, 1e-3, store="final", threads=threads)
    assert fin.q.shape == (4, 2) and fin.t.shape == (4,)
    for i in range(4):
        one = pendulum.simulate(y0s[i], 0.3, 1e-3)
        assert np.array_equal(fin.q[i], one.q[-1]) and np.array_equal(fin.qd[i], one.qd[-1])
        assert fin.t[i] == one.t[-1] == 0.3
    d5 = pendulum.simulate_batch(y0s, 0.3, method="dopri5", rtol=1e-9, atol=1e-12, threads=threads)
    for i in range(4):
        _same(d5, i, pendulum.simulate(y0s[i], 0.3, method="dopri5", rtol=1e-9, atol=1e-12))
    pd = PD(Reference.hold(q_ref), [30.0, 20.0], [5.0, 3.0])
    ff = np.array([[0.1, 0.0], [0.0, 0.2], [0.3, 0.3], [0.0, 0.0]])
    res = pendulum.simulate_batch(y0s, 0.3, 1e-3, controller=pd, u=ff, threads=threads)
    for i in range(4):
        _same(res, i, pendulum.simulate(y0s[i], 0.3, 1e-3, controller=pd, u=ff[i]))
    ct = ComputedTorque(Reference.hold(q_ref), 25.0, 10.0)
    res = pendulum.simulate_batch(y0s, 0.3, 1e-3, controller=ct, threads=threads)
    for i in range(4):
        _same(res, i, pendulum.simulate(y0s[i], 0.3, 1e-3, controller=ct))
    src = tmp_path / "pd_batch.c"
    src.write_text(PD_C)
    ctrl = rodgen.CController(src, "pd_batch", params=np.r_[q_ref, 30.0, 5.0], state=[0.0], build_dir=build_dir)
    res = pendulum.simulate_batch(y0s, 0.3, 1e-3, controller=ctrl, threads=threads)
    for i in range(4):
        one = pendulum.simulate(y0s[i], 0.3, 1e-3, controller=ctrl)
        _same(res, i, one)
        # each trajectory has its own memory: 4 calls per RK4 step and one per stored row
        assert res.extra["controller_state"][i, 0] == one.extra["controller_state"][0] == 4 * 300 + 301
    assert np.nanmax(np.abs(res.u)) > 1.0


@pytest.mark.parametrize("threads", THREADS)
def test_a_failing_trajectory_has_its_own_status(pendulum, threads) -> None:
    n = 6
    p = _params(pendulum, n)
    p[2, list(pendulum.parameters).index("m2")] = np.nan
    p[4, list(pendulum.parameters).index("m1")] = -5.0     # m1 + m2 < 0: an indefinite mass matrix
    y0s = _starts(pendulum, n)
    res = pendulum.simulate_batch(y0s, 0.2, 1e-3, p=p, threads=threads)
    assert res.status[2] is Status.NONFINITE and res.rows[2] == 0 and np.isnan(res.q[2]).all()
    assert "trajectory 2" in res.messages[2] and "NaN" in res.messages[2]
    assert res.status[4] is Status.SINGULAR_MASS and "trajectory 4" in res.messages[4]
    for i in (0, 1, 3, 5):
        assert res.status[i] is Status.SUCCESS
        _same(res, i, pendulum.simulate(y0s[i], 0.2, 1e-3, p=p[i]))
    assert res.ok.tolist() == [True, True, False, True, False, True]


def test_bad_arguments_name_the_problem(pendulum) -> None:
    y0s = _starts(pendulum, 3)
    with pytest.raises(ValueError, match="'y0s' has shape \\(3, 3\\)"):
        pendulum.simulate_batch(y0s[:, :3], 0.1, 1e-3)
    with pytest.raises(ValueError, match="'p' has shape \\(3, 4\\)"):
        pendulum.simulate_batch(y0s, 0.1, 1e-3, p=np.ones((3, 4)))
    with pytest.raises(ValueError, match="'y0s' has 3, 'p' has 2"):
        pendulum.simulate_batch(y0s, 0.1, 1e-3, p=_params(pendulum, 2))
    with pytest.raises(ValueError, match="'u' has shape \\(3, 3\\)"):
        pendulum.simulate_batch(y0s, 0.1, 1e-3, u=np.ones((3, 3)))
    with pytest.raises(TypeError, match="Python callable"):
        pendulum.simulate_batch(y0s, 0.1, 1e-3, u=lambda t, q, qd: np.zeros(2))
    with pytest.raises(TypeError, match="Python callables"):
        pendulum.simulate_batch(y0s, 0.1, 1e-3, controller=lambda t, y: np.zeros(2))
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        pendulum.simulate_batch(y0s, 0.1, 1e-3, threads=0)
    with pytest.raises(ValueError, match="store must be 'all' or 'final'"):
        pendulum.simulate_batch(y0s, 0.1, 1e-3, store="last")
    with pytest.raises(ValueError, match="RK4 needs a positive step dt"):
        pendulum.simulate_batch(y0s, 0.1)
