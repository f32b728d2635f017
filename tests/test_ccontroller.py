"""Controllers written in C (rodgen.CController) inside the compiled smooth and hybrid simulations.

The references are independent implementations of the same law: the runtime's built-in PD input law
(rodgen_simulate.c) and a NumPy callable on the slow path; for the walking controller, its Python
reference in examples/exo5_walk.py (numpy, the compiled model's constrained dynamics) against the C port.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import rodgen
from rodgen.runtime import PD, Reference
from rodgen.runtime.result import Status

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

PD_C = r"""
#include "rodgen_runtime.h"
/* Collocated PD toward a fixed posture: params = [q_ref (nq), kp (nu), kd (nu)]; state[0] counts calls. */
int pd_hold(void *context, double t, const double *y, double *u)
{
    const rodgen_controller *c = (const rodgen_controller *)context;
    const rodgen_model *m = c->model;
    const int n = m->nq, nu = m->nu;
    double B[n * nu];
    int i, j;
    (void)t;
    if (c->nparams != n + 2 * nu || c->nstate != 1) {
        return 1;
    }
    c->state[0] += 1.0;
    m->input_map(y, c->p, B);
    for (j = 0; j < nu; ++j) {
        double be = 0.0, bed = 0.0;
        for (i = 0; i < n; ++i) {
            be += B[i * nu + j] * (c->params[i] - y[i]);
            bed += B[i * nu + j] * (0.0 - y[n + i]);
        }
        u[j] = 0.0 + c->params[n + j] * be + c->params[n + nu + j] * bed;
    }
    return 0;
}

/* Fails after a given time: params = [t_fail]. */
int fails_later(void *context, double t, const double *y, double *u)
{
    const rodgen_controller *c = (const rodgen_controller *)context;
    int j;
    (void)y;
    for (j = 0; j < c->model->nu; ++j) {
        u[j] = 0.0;
    }
    return t > c->params[0] ? 7 : 0;
}
"""


@pytest.fixture(scope="module")
def pd_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ctrl") / "pd_hold.c"
    path.write_text(PD_C)
    return path


@pytest.fixture(scope="module")
def pendulum(build_dir: Path) -> rodgen.runtime.CompiledModel:
    return rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)


def _pd_params(q_ref: np.ndarray, kp: np.ndarray, kd: np.ndarray) -> np.ndarray:
    return np.concatenate([q_ref, kp, kd])


def test_c_pd_matches_the_builtin_law_and_a_python_callable(pendulum, pd_source, build_dir) -> None:
    sys_ = pendulum
    q_ref = sys_.initial_state()[:sys_.nq]
    kp, kd = np.array([30.0, 20.0]), np.array([5.0, 3.0])
    y0 = np.concatenate([q_ref + np.array([0.4, -0.3]), [0.2, 0.1]])
    ctrl = rodgen.CController(pd_source, "pd_hold", params=_pd_params(q_ref, kp, kd), state=[0.0],
                              build_dir=build_dir)
    res_c = sys_.simulate(y0, 2.0, 1e-3, controller=ctrl)
    res_pd = sys_.simulate(y0, 2.0, 1e-3, controller=PD(Reference.hold(q_ref), kp, kd))

    def numpy_pd(t, q, qd):
        B = sys_.input_map(q)
        return kp * (B.T @ (q_ref - q)) + kd * (B.T @ (-qd))
    res_py = sys_.simulate(y0, 2.0, 1e-3, u=numpy_pd)
    assert res_c.status is Status.SUCCESS
    for ref in (res_pd, res_py):
        np.testing.assert_allclose(res_c.q, ref.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(res_c.qd, ref.qd, rtol=0, atol=1e-12)
        np.testing.assert_allclose(res_c.u, ref.u, rtol=0, atol=1e-10)
    # the controller moved the pendulum (a law that did nothing would also agree with a wrong reference)
    assert np.abs(res_c.u).max() > 1.0
    # its memory: one call per RK4 stage and per stored state, counted again from 0 in every run
    calls = res_c.extra["controller_state"][0]
    assert calls >= 4 * 2000
    again = sys_.simulate(y0, 2.0, 1e-3, u=ctrl)        # u= takes it too
    assert again.extra["controller_state"][0] == calls
    np.testing.assert_array_equal(again.q, res_c.q)


def test_c_pd_with_dopri5(pendulum, pd_source, build_dir) -> None:
    sys_ = pendulum
    q_ref = sys_.initial_state()[:sys_.nq]
    kp, kd = np.array([30.0, 20.0]), np.array([5.0, 3.0])
    y0 = np.concatenate([q_ref + 0.2, [0.0, 0.0]])
    ctrl = rodgen.CController(pd_source, "pd_hold", params=_pd_params(q_ref, kp, kd), state=[0.0],
                              build_dir=build_dir)
    a = sys_.simulate(y0, 1.0, method="dopri5", rtol=1e-9, atol=1e-12, controller=ctrl)
    b = sys_.simulate(y0, 1.0, method="dopri5", rtol=1e-9, atol=1e-12, controller=PD(Reference.hold(q_ref), kp, kd))
    np.testing.assert_allclose(a.t, b.t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)


def test_c_pd_in_the_hybrid_simulation(build_dir, pd_source) -> None:
    """Both feet of the walker held on the ground, the posture held by PD: C and the built-in law agree."""
    robot = rodgen.build(rodgen.load(EXAMPLES / "exo5_walk.yaml"), build_dir=build_dir)
    q0 = robot.initial_state()[:robot.nq]
    nu = robot.nu
    kp, kd = np.full(nu, 300.0), np.full(nu, 30.0)
    y0 = np.concatenate([q0, np.zeros(robot.nq)])
    both = [b.name for b in robot.constraints]
    ctrl = rodgen.CController(pd_source, "pd_hold", params=_pd_params(q0, kp, kd), state=[0.0],
                              build_dir=build_dir)
    kw = dict(contacts=both, on_slip="continue")
    a = robot.simulate(y0, 0.5, 1e-3, controller=ctrl, **kw)
    b = robot.simulate(y0, 0.5, 1e-3, controller=PD(Reference.hold(q0), kp, kd), **kw)
    assert a.status is Status.SUCCESS, a.message
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.lam, b.lam, rtol=0, atol=1e-9)
    assert np.abs(a.u).max() > 1.0
    assert [e["t"] for e in a.events] == [e["t"] for e in b.events]


def test_failing_c_controller_stops_the_run_naming_it(pendulum, pd_source, build_dir) -> None:
    ctrl = rodgen.CController(pd_source, "fails_later", params=[0.25], build_dir=build_dir)
    res = pendulum.simulate(pendulum.initial_state(), 1.0, 1e-3, controller=ctrl)
    assert res.status is Status.FAILED
    assert "fails_later" in res.message and "pd_hold.c" in res.message
    assert 0.24 <= res.t[-1] <= 0.25


def test_c_controller_called_from_python(pendulum, pd_source, build_dir) -> None:
    sys_ = pendulum
    q_ref, kp, kd = np.array([0.3, -0.2]), np.array([30.0, 20.0]), np.array([5.0, 3.0])
    ctrl = rodgen.CController(pd_source, "pd_hold", params=_pd_params(q_ref, kp, kd), state=[0.0],
                              build_dir=build_dir)
    y = np.array([0.1, 0.4, -0.7, 0.2])
    B = sys_.input_map(y[:2])
    expect = kp * (B.T @ (q_ref - y[:2])) + kd * (B.T @ -y[2:])
    np.testing.assert_allclose(ctrl.evaluate(sys_, 0.0, y), expect, rtol=1e-14, atol=1e-12)
    law = ctrl.function(sys_)
    np.testing.assert_allclose(law(0.0, y), law(0.0, y), rtol=0, atol=0)
    with pytest.raises(ValueError, match="state has 1 entries, got 2"):
        ctrl.function(sys_, state=[0.0, 0.0])
    failing = rodgen.CController(pd_source, "fails_later", params=[0.25], build_dir=build_dir)
    assert np.all(failing.evaluate(sys_, 0.1, y) == 0.0)
    with pytest.raises(rodgen.RodgenError, match=r"'fails_later' \(.*pd_hold.c\) returned status 7"):
        failing.evaluate(sys_, 0.5, y)


def test_missing_symbol_names_file_and_symbol(pd_source, build_dir) -> None:
    with pytest.raises(rodgen.BuildError) as err:
        rodgen.CController(pd_source, "pd_hodl", build_dir=build_dir)
    msg = str(err.value)
    assert "pd_hold.c" in msg and "'pd_hodl'" in msg


def test_compile_error_names_the_file(tmp_path, build_dir) -> None:
    bad = tmp_path / "broken_law.c"
    bad.write_text("int broken(void *context, double t, const double *y, double *u)\n{ return nope; }\n")
    with pytest.raises(rodgen.BuildError) as err:
        rodgen.CController(bad, "broken", build_dir=build_dir)
    msg = str(err.value)
    assert "broken_law.c" in msg and "nope" in msg       # the file and the compiler's diagnostic
    with pytest.raises(rodgen.BuildError, match="does not exist"):
        rodgen.CController(tmp_path / "absent.c", "f", build_dir=build_dir)
    with pytest.raises(rodgen.BuildError, match="absent.so"):
        rodgen.CController(tmp_path / "absent.so", "f")


def test_prebuilt_library_and_bad_arguments(pd_source, build_dir, pendulum) -> None:
    compiled = rodgen.CController(pd_source, "pd_hold", build_dir=build_dir)
    again = rodgen.CController(compiled.library, "pd_hold", params=[0.0] * 6, state=[0.0])
    assert again.source is None and again.address == compiled.address
    with pytest.raises(ValueError, match="identifier"):
        rodgen.CController(pd_source, "pd hold", build_dir=build_dir)
    with pytest.raises(ValueError, match="inf or NaN"):
        rodgen.CController(compiled.library, "pd_hold", params=[np.nan])
    with pytest.raises(ValueError, match="not both"):
        pendulum.simulate(pendulum.initial_state(), 0.1, 1e-3, u=again, controller=again)


@pytest.fixture(scope="module")
def walker(build_dir):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import exo5_walk
    finally:
        sys.path.remove(str(EXAMPLES))
    return exo5_walk


def test_walking_controller_in_c_walks_like_the_python_reference(walker, build_dir) -> None:
    _, res_c, strikes_c = walker.walk(4, controller="c", build_dir=str(build_dir))
    _, res_py, strikes_py = walker.walk(4, controller="python", build_dir=str(build_dir))
    assert res_c.status is Status.SUCCESS and res_py.status is Status.SUCCESS
    assert len(strikes_c) >= 4 and len(strikes_c) == len(strikes_py)
    assert [(e["kind"], e["block"]) for e in res_c.events] == [(e["kind"], e["block"]) for e in res_py.events]
    np.testing.assert_allclose([e["t"] for e in res_c.events], [e["t"] for e in res_py.events], rtol=0,
                               atol=1e-9)
    np.testing.assert_allclose(res_c.q[-1], res_py.q[-1], rtol=0, atol=1e-8)
    np.testing.assert_allclose(res_c.qd[-1], res_py.qd[-1], rtol=0, atol=1e-7)
    np.testing.assert_allclose(res_c.u, res_py.u, rtol=0, atol=1e-6 * (1 + np.abs(res_py.u).max()))
    # it walks: the hip moves forwards by about a metre a second
    assert res_c.q[-1, 0] - res_c.q[0, 0] > 0.8 * 0.4 * 4 * 0.9


def test_ctypes_context_has_the_layout_of_the_c_struct(tmp_path) -> None:
    """The Python mirror of rodgen_controller (from the contract) has the C compiler's sizes and offsets."""
    import shutil
    import subprocess

    from rodgen.codegen.runtime import runtime_sources
    from rodgen.runtime.ccontroller import ControllerContext
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    for name, text in runtime_sources().items():
        (tmp_path / name).write_text(text)
    fields = [f[0] for f in ControllerContext._fields_]
    prog = ('#include <stdio.h>\n#include <stddef.h>\n#include "rodgen_runtime.h"\nint main(void) {\n'
            '    printf("%zu", sizeof(rodgen_controller));\n'
            + "".join(f'    printf(" %zu", offsetof(rodgen_controller, {f}));\n' for f in fields)
            + "    return 0;\n}\n")
    (tmp_path / "layout.c").write_text(prog)
    subprocess.run(["gcc", "-std=c99", "-I.", "layout.c", "-o", "layout"], cwd=tmp_path, check=True)
    out = [int(x) for x in subprocess.run(["./layout"], cwd=tmp_path, capture_output=True, text=True,
                                          check=True).stdout.split()]
    import ctypes
    assert out == [ctypes.sizeof(ControllerContext)] + [getattr(ControllerContext, f).offset for f in fields]
