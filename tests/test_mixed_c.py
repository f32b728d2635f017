"""Mixed problems in C (rodgen_mixed.c): some coordinates prescribed in time, the others free.

Checked against the compiled inverse dynamics along the same motion (a separately generated routine),
against the Python MixedProblem (scipy's DOP853 at tight tolerances), and against closed forms for a
pendulum on a prescribed moving pivot.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import rodgen
from rodgen.contract import StatusCode
from rodgen.runtime.compiled import DynamicsError
from rodgen.runtime.result import Status
from rodgen.runtime.trajectory import MixedProblem

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
SEED = 4402


@pytest.fixture(scope="module")
def pendulum2(build_dir: "os.PathLike[str]") -> rodgen.CompiledModel:
    return rodgen.build(rodgen.load(os.path.join(EXAMPLES, "double_pendulum.yaml")), build_dir=build_dir)


@pytest.fixture(scope="module")
def pendulum2_lagrange(build_dir: "os.PathLike[str]") -> rodgen.CompiledModel:
    """The same model derived by Lagrange's equations (the default build is recursive): a second source
    of the inverse dynamics."""
    return rodgen.build(rodgen.load(os.path.join(EXAMPLES, "double_pendulum.yaml")), build_dir=build_dir,
                        method="lagrange")


@pytest.fixture(scope="module")
def moving(build_dir: "os.PathLike[str]") -> rodgen.CompiledModel:
    """A point mass m on a massless rod L hung from a pivot moved along x, y (the floating base)."""
    model = rodgen.Model("moving_pendulum_c", base="floating")
    model.parameter("g", 9.81)
    model.parameter("m", 1.3)
    model.parameter("L", 0.8)
    model.gravity = (0.0, "-g")
    lk = model.link("arm", initial=-1.2, joint=rodgen.Joint(actuated=False))
    lk.rigid("arm_s", "L", masses=[rodgen.PointMass("m", fraction=1, name="bob")])
    return rodgen.build(model, build_dir=build_dir)


def slew(a: float, w: float) -> tuple:
    return (lambda t: a * np.sin(w * t), lambda t: a * w * np.cos(w * t), lambda t: -a * w * w * np.sin(w * t))


@pytest.mark.parametrize("prescribed", ["th_upper", "th_lower"])
def test_mixed_forces_equal_inverse_dynamics_along_the_motion(pendulum2: rodgen.CompiledModel,
                                                              pendulum2_lagrange: rodgen.CompiledModel,
                                                              prescribed: str) -> None:
    u = np.array([0.7, -0.4])
    mp = MixedProblem(pendulum2, {prescribed: slew(0.4, 3.0)}, u=u)
    assert mp.compiled
    res = mp.simulate([0.6, -0.5], 1.5, dt=2e-3)
    assert res.status == Status.SUCCESS and res.q.shape == (751, 2)
    k = pendulum2.coordinates.index(prescribed)
    np.testing.assert_allclose(res.q[:, k], 0.4 * np.sin(3.0 * res.t), rtol=0, atol=1e-14)
    # Q = M qdd + bias by the inverse dynamics of the Lagrange derivation; B u is what the inputs give
    ref = pendulum2_lagrange
    assert ref.method == "lagrange" and pendulum2.method != "lagrange"
    Q = ref.inverse_dynamics(res.q, res.qd, res.qdd)
    Bu = np.einsum("nij,j->ni", ref.input_map(res.q), u)
    free = 1 - k
    np.testing.assert_allclose(Q[:, free] - Bu[:, free], 0.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.extra["compensating"][:, 0], Q[:, k] - Bu[:, k], rtol=0, atol=1e-9)
    assert np.max(np.abs(res.extra["compensating"])) > 1.0   # a real force, not a vanishing one

    # one-state solve at random states, in C and by the NumPy path of the same split
    rng = np.random.default_rng(SEED)
    q, qd, a = rng.standard_normal((20, 2)), rng.standard_normal((20, 2)), rng.standard_normal((20, 1))
    qdd, tau = mp.solve(q, qd, a)
    Q = ref.inverse_dynamics(q, qd, qdd)
    Bu = np.einsum("nij,j->ni", ref.input_map(q), u)
    np.testing.assert_allclose(qdd[:, k], a[:, 0], rtol=0, atol=0)
    np.testing.assert_allclose(Q[:, free] - Bu[:, free], 0.0, rtol=0, atol=1e-9, err_msg=f"seed {SEED}")
    np.testing.assert_allclose(tau[:, 0], Q[:, k] - Bu[:, k], rtol=0, atol=1e-9, err_msg=f"seed {SEED}")


def test_compiled_mixed_simulation_agrees_with_scipy(pendulum2: rodgen.CompiledModel) -> None:
    mp = MixedProblem(pendulum2, {"th_upper": slew(0.5, 2.0)})
    c = mp.simulate([0.5, 0.0], 2.0, dt=1e-3)
    s = mp.simulate([0.5, 0.0], 2.0, dt=1e-3, method="DOP853", rtol=1e-11, atol=1e-12)
    assert c.ok and s.ok and c.t.shape == s.t.shape
    np.testing.assert_allclose(c.t, s.t, rtol=0, atol=1e-12)
    # RK4 at h = 1e-3: global error ~ h^4 |y^(5)| T ~ 1e-10 here
    for field in ("q", "qd", "qdd"):
        np.testing.assert_allclose(getattr(c, field), getattr(s, field), rtol=0, atol=1e-6, err_msg=field)
    np.testing.assert_allclose(c.extra["compensating"], s.extra["compensating"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(c.kinetic, s.kinetic, rtol=0, atol=1e-6)
    # substeps: the same RK4 steps, every second one returned
    c2 = mp.simulate([0.5, 0.0], 2.0, dt=2e-3, substeps=2)
    np.testing.assert_allclose(c2.q, c.q[::2], rtol=0, atol=1e-13)
    np.testing.assert_allclose(c2.extra["compensating"], c.extra["compensating"][::2], rtol=0, atol=1e-12)


def test_pendulum_on_a_moving_pivot_closed_forms(moving: rodgen.CompiledModel) -> None:
    g, m, L = 9.81, 1.3, 0.8
    A, W = 0.1, 5.0
    x = slew(A, W)
    y = (lambda t: 0.5 * A * np.cos(1.5 * W * t), lambda t: -0.75 * A * W * np.sin(1.5 * W * t),
         lambda t: -1.125 * A * W * W * np.cos(1.5 * W * t))
    res = MixedProblem(moving, {"x": x, "y": y}).simulate([-1.2, 0.3], 2.0, dt=1e-3)
    assert res.ok
    i = moving.coordinates.index(moving.coordinates[-1])   # the arm angle
    phi, w, a = res.q[:, i], res.qd[:, i], res.qdd[:, i]
    xdd, ydd = x[2](res.t), y[2](res.t)
    # bob at pivot + L (cos phi, sin phi): L phi'' = -(g + ydd) cos phi + xdd sin phi
    np.testing.assert_allclose(a, (-(g + ydd) * np.cos(phi) + xdd * np.sin(phi)) / L, rtol=0, atol=1e-9)
    Fx = m * (xdd - L * np.sin(phi) * a - L * np.cos(phi) * w ** 2)
    Fy = m * (ydd + L * np.cos(phi) * a - L * np.sin(phi) * w ** 2 + g)
    np.testing.assert_allclose(res.extra["compensating"], np.column_stack([Fx, Fy]), rtol=0, atol=1e-9)

    # a constant pivot acceleration: the pendulum hangs still at the angle of the apparent gravity
    acc = 2.0
    phi_eq = np.arctan2(-g, -acc)
    still = MixedProblem(moving, {"x": (lambda t: 0.5 * acc * t ** 2, lambda t: acc * t, lambda t: acc + 0 * t),
                                  "y": 0.0}).simulate([phi_eq, 0.0], 1.0, dt=1e-2)
    np.testing.assert_allclose(still.q[:, i], phi_eq, rtol=0, atol=1e-12)
    np.testing.assert_allclose(still.extra["compensating"], np.tile([m * acc, m * g], (len(still.t), 1)),
                               rtol=1e-12, atol=1e-12)


def test_mixed_bad_input(pendulum2: rodgen.CompiledModel) -> None:
    with pytest.raises(ValueError, match="prescribed: unknown coordinate 'th_middle'"):
        MixedProblem(pendulum2, {"th_middle": 0.0})
    with pytest.raises(ValueError, match="every coordinate is prescribed"):
        MixedProblem(pendulum2, {"th_upper": 0.0, "th_lower": 0.0})
    bad = MixedProblem(pendulum2, {"th_upper": (lambda t: np.where(t > 0.5, np.nan, t), lambda t: 1.0 + 0 * t,
                                                lambda t: 0 * t)})
    with pytest.raises(ValueError, match=r"prescribed motion of 'th_upper': q is nan at t = 0\.50"):
        bad.simulate([0.0, 0.0], 1.0, dt=0.01)
    mp = MixedProblem(pendulum2, {"th_upper": 0.2})
    with pytest.raises(ValueError, match=r"y0: expected 2 finite values \[q_free, qd_free\] of the free coordinates "
                                         r"\(th_lower\)"):
        mp.simulate([0.0, 0.0, 0.0], 1.0, dt=0.01)
    with pytest.raises(ValueError, match="needs a compiled model"):
        MixedProblem(rodgen.load(os.path.join(EXAMPLES, "double_pendulum.yaml")),
                     {"th_upper": 0.2}).simulate([0.0, 0.0], 0.1, dt=0.01, method="rk4")
    # a massless free link: M_ff is singular
    light = MixedProblem(pendulum2, {"th_upper": 0.2}, p=pendulum2.parameter_vector(m2=0.0))
    with pytest.raises(DynamicsError, match="mass matrix of the free coordinates is not positive definite"):
        light.solve([0.2, 0.1], [0.0, 0.0], [0.0])
    assert light.simulate([0.1, 0.0], 0.1, dt=0.01).status == Status.SINGULAR_MASS

    # the C reports bad arguments with status codes
    rt, table, p = pendulum2.runtime, pendulum2.table, pendulum2.parameter_vector()
    times = rt.mixed_grid(0.0, 0.1, 0.01)
    assert len(times) == 21 and times[-1] == 0.1 and rt.mixed_grid(0.0, 0.1, -1.0) is None
    values = np.zeros(3 * len(times))
    out = (np.empty(11), np.empty(44), np.empty(22), np.empty(11))

    def run(pres: list, vals: np.ndarray, tt: np.ndarray = times, y0: np.ndarray = np.zeros(2)) -> int:
        return rt.mixed_simulate(table, np.array(pres, dtype=np.intc), tt, vals, 0, None, None, None, None, p,
                                 0.0, 0.1, 0.01, y0, *out, np.empty(22))[0]
    assert run([0], values) == StatusCode.OK
    assert run([2], values) == StatusCode.ERR_OPTIONS                   # not a coordinate
    assert run([0], values, tt=times[::-1].copy()) == StatusCode.ERR_OPTIONS   # times not increasing
    assert run([0], np.where(np.arange(values.size) == 7, np.inf, values)) == StatusCode.ERR_NONFINITE_INPUT
    status = np.zeros(1, dtype=np.intc)
    for pres in ([0, 0], [5]):
        rt.mixed_accelerations(table, np.array(pres, dtype=np.intc), 1, np.zeros(2), np.zeros(2),
                               np.zeros(len(pres)), None, p, np.empty(2), np.empty(len(pres)), status)
        assert status[0] == StatusCode.ERR_OPTIONS


def test_mixed_repeated_prescribed_index_is_an_error(moving: rodgen.CompiledModel) -> None:
    rt, status = moving.runtime, np.zeros(1, dtype=np.intc)
    for pres, expected in (([0, 0], StatusCode.ERR_OPTIONS), ([0, 1], StatusCode.OK), ([1, 0], StatusCode.OK)):
        qdd, tau = np.empty(3), np.empty(2)
        rt.mixed_accelerations(moving.table, np.array(pres, dtype=np.intc), 1, np.array([0.0, 0.0, -1.0]),
                               np.zeros(3), np.array([0.0, 0.0]), None, moving.parameter_vector(), qdd, tau, status)
        assert status[0] == expected, pres
    # last call, pres [y, x]: pivot held still, bob released at rest at phi = -1 (phi'' = -g cos(phi) / L):
    # the pivot force is m g sin(phi) (cos(phi), sin(phi)), given in the order of pres
    m, g, phi = 1.3, 9.81, -1.0
    assert qdd[2] == pytest.approx(-g * np.cos(phi) / 0.8, rel=1e-13)
    np.testing.assert_allclose(tau, [m * g * np.sin(phi) ** 2, m * g * np.sin(phi) * np.cos(phi)], rtol=1e-13)


MIXED_C = r"""
#include <math.h>
#include <stdio.h>
#include "{prefix}.h"
#include "rodgen_runtime.h"

#define STEPS 500
int main(void)
{{
    const rodgen_model *m = {prefix}_model();
    int pres[1] = {{0}};
    double times[2 * STEPS + 1], values[(2 * STEPS + 1) * 3];
    double t_out[STEPS + 1], y_out[(STEPS + 1) * 2 * {M}_NQ], qdd_out[(STEPS + 1) * {M}_NQ];
    double tau_out[STEPS + 1], y0[2] = {{0.5, 0.0}};
    rodgen_mixed mx;
    long i, n = 0, k = rodgen_mixed_grid(0.0, 0.5, 1e-3, NULL);
    int status;
    if (k != STEPS) {{
        return 2;
    }}
    rodgen_mixed_grid(0.0, 0.5, 1e-3, times);
    for (i = 0; i < 2 * STEPS + 1; ++i) {{
        values[3 * i] = 0.3 * sin(2.0 * times[i]);
        values[3 * i + 1] = 0.6 * cos(2.0 * times[i]);
        values[3 * i + 2] = -1.2 * sin(2.0 * times[i]);
    }}
    mx.npres = 1;
    mx.pres = pres;
    mx.n = 2 * STEPS + 1;
    mx.times = times;
    mx.values = values;
    status = rodgen_mixed_simulate(m, &mx, NULL, m->default_p, 0.0, 0.5, 1e-3, y0, STEPS + 1, t_out, y_out,
                                   qdd_out, tau_out, NULL, &n);
    printf("%d %ld %.17g\n", status, n, t_out[n - 1]);
    for (i = 0; i < 2 * {M}_NQ; ++i) {{
        printf("%.17g\n", y_out[(n - 1) * 2 * {M}_NQ + i]);
    }}
    printf("%.17g\n", tau_out[n - 1]);
    return status;
}}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_mixed_simulation_from_c_alone(tmp_path: "os.PathLike[str]", pendulum2: rodgen.CompiledModel) -> None:
    """The generated files and the runtime's C, built with the strict flags, run a mixed problem that
    agrees with the Python MixedProblem (scipy's DOP853)."""
    from pathlib import Path
    out = Path(tmp_path)
    files = rodgen.generate(rodgen.load(os.path.join(EXAMPLES, "double_pendulum.yaml")), out)
    (out / "mixed.c").write_text(MIXED_C.format(prefix=files.spec.prefix, M=files.spec.macro))
    cmd = ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "mixed.c",
           *sorted(n for n in files.files if n.endswith(".c")), "-o", "mixed", "-lm"]
    res = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    run = subprocess.run([str(out / "mixed")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    head, *rest = run.stdout.strip().split("\n")
    assert head.split()[:2] == ["0", "501"] and float(head.split()[2]) == 0.5
    y_c = np.array([float(x) for x in rest])
    ref = MixedProblem(pendulum2, {"th_upper": slew(0.3, 2.0)}).simulate([0.5, 0.0], 0.5, dt=0.5, method="DOP853",
                                                                         rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y_c[:4], np.r_[ref.q[-1], ref.qd[-1]], rtol=0, atol=1e-8)
    np.testing.assert_allclose(y_c[4], ref.extra["compensating"][-1, 0], rtol=0, atol=1e-8)
