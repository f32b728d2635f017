"""Mixed problems with time-varying inputs on the free coordinates, in C (an InputTable, a controller
written in C) against the Python path of the same problem (its NumPy split dynamics, MixedProblem.ode,
stepped by a NumPy RK4 on the same grid); bad input as ModelError naming the coordinate or field; the
kinetic dry friction of a prescribed coordinate in the compensating force (by hand: +F_k sign(rate)).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import rodgen
from rodgen import CController, Friction, InputTable, Joint, Link, Model, ModelError, PointMass
from rodgen.runtime.trajectory import MixedProblem, prescribed_forces

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")

PD_FREE_C = r"""
#include "rodgen_runtime.h"
/* u = [0, -kp (q1 - q1_ref) - kd qd1 + a sin(w t)] on a two-coordinate model: params = [kp, kd, q1_ref, a, w] */
#include <math.h>
int pd_free(void *context, double t, const double *y, double *u)
{
    const rodgen_controller *c = (const rodgen_controller *)context;
    if (c->model->nq != 2 || c->model->nu != 2 || c->nparams != 5) {
        return 1;
    }
    u[0] = 0.0;
    u[1] = -c->params[0] * (y[1] - c->params[2]) - c->params[1] * y[3] + c->params[3] * sin(c->params[4] * t);
    return 0;
}
"""


@pytest.fixture(scope="module")
def pendulum2(build_dir):
    return rodgen.build(rodgen.load(os.path.join(EXAMPLES, "double_pendulum.yaml")), build_dir=build_dir)


def slew(a: float, w: float) -> tuple:
    return (lambda t: a * np.sin(w * t), lambda t: a * w * np.cos(w * t), lambda t: -a * w * w * np.sin(w * t))


def _python_rk4(mp: MixedProblem, y0, t_end: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Classical RK4 on the Python path's f(t, y_free) (NumPy solve of the split), grid t0 + k dt."""
    f = mp.ode()
    n = int(round(t_end / dt))
    t = np.arange(n + 1) * dt
    y = np.empty((n + 1, len(y0)))
    y[0] = y0
    for k in range(n):
        tk, yk = t[k], y[k]
        k1 = f(tk, yk)
        k2 = f(tk + dt / 2, yk + dt / 2 * k1)
        k3 = f(tk + dt / 2, yk + dt / 2 * k2)
        k4 = f(tk + dt, yk + dt * k3)
        y[k + 1] = yk + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return t, y


def test_input_table_in_c_equals_the_python_path(pendulum2) -> None:
    table = InputTable([0.0, 0.3, 0.7, 1.2], [[0.0, 0.5], [0.4, -1.5], [-0.2, 2.0], [0.0, 0.0]])
    mp = MixedProblem(pendulum2, {"th_upper": slew(0.4, 3.0)}, u=table)
    assert mp.compiled
    c = mp.simulate([0.6, -0.5], 1.5, dt=1e-3)
    assert c.ok, c.message
    t, y = _python_rk4(mp, np.array([0.6, -0.5]), 1.5, 1e-3)
    np.testing.assert_allclose(c.t, t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.q[:, 1], y[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(c.qd[:, 1], y[:, 1], rtol=0, atol=1e-9)
    # the stored inputs are the table's, and the forces the Python path's
    np.testing.assert_allclose(c.u, np.stack([table(tk) for tk in c.t]), rtol=0, atol=1e-14)
    _, _, qdd = mp.accelerations(t, y)
    np.testing.assert_allclose(c.qdd, qdd, rtol=0, atol=1e-9)
    np.testing.assert_allclose(c.extra["compensating"], mp.compensating_forces(t, c.q, c.qd, qdd), atol=1e-9)
    # the input changes the motion (a real test of the input path): zero input gives another one
    zero = MixedProblem(pendulum2, {"th_upper": slew(0.4, 3.0)}).simulate([0.6, -0.5], 1.5, dt=1e-3)
    assert np.max(np.abs(zero.q[:, 1] - c.q[:, 1])) > 1e-2


def test_c_controller_in_c_equals_the_same_law_in_python(pendulum2, tmp_path) -> None:
    src = tmp_path / "pd_free.c"
    src.write_text(PD_FREE_C)
    kp, kd, ref, a, w = 8.0, 1.5, 0.3, 2.0, 5.0
    ctl = CController(src, "pd_free", params=[kp, kd, ref, a, w], build_dir=tmp_path)
    presc = {"th_upper": slew(0.5, 2.0)}
    c = MixedProblem(pendulum2, presc, u=ctl).simulate([0.2, 0.0], 1.0, dt=1e-3)
    assert c.ok, c.message

    def law(t, yf):   # the same law on the free state (th_lower, its rate)
        return np.array([0.0, -kp * (yf[0] - ref) - kd * yf[1] + a * np.sin(w * t)])
    py = MixedProblem(pendulum2, presc, u=law)
    t, y = _python_rk4(py, np.array([0.2, 0.0]), 1.0, 1e-3)
    np.testing.assert_allclose(c.q[:, 1], y[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(c.qd[:, 1], y[:, 1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(c.u, np.stack([law(tk, yk) for tk, yk in zip(t, y)]), rtol=0, atol=1e-9)
    with pytest.raises(ModelError, match="CController runs in C"):
        MixedProblem(pendulum2, presc, u=ctl).simulate([0.2, 0.0], 0.1, dt=1e-2, method="DOP853")


@pytest.mark.parametrize("make,needle,where", [
    (lambda s: MixedProblem(s, {"th_middle": 0.0}), "unknown coordinate 'th_middle'", "prescribed['th_middle']"),
    (lambda s: MixedProblem(s, {"th_upper": 0.0, "th_lower": 0.0}), "every coordinate is prescribed",
     "prescribed"),
    (lambda s: MixedProblem(s, {"th_upper": np.zeros(3)}), "th_upper", "prescribed"),
    (lambda s: MixedProblem(s, {"th_upper": 0.1}, u=[1.0, 2.0, 3.0]), "expected 2 finite inputs", ".u"),
    (lambda s: MixedProblem(s, {"th_upper": 0.1}, u=InputTable([0, 1], [[1.0], [2.0]])), "1 inputs per row",
     ".u"),
    (lambda s: MixedProblem(s, {"th_upper": 0.1}, p=[1.0, 2.0]), "p has 2 values", ".p"),
    (lambda s: MixedProblem(s, {"th_upper": 0.1}).simulate([0.0], 1.0, dt=0.1), "y0: expected 2", "simulate"),
    (lambda s: MixedProblem(s, {"th_upper": 0.1}, u=lambda t, y: np.zeros(2)).solve([0, 0], [0, 0], [0]),
     "constant u", ".u"),
])
def test_mixed_bad_input_is_a_model_error_naming_the_place(pendulum2, make, needle, where) -> None:
    with pytest.raises(ModelError) as ei:
        make(pendulum2)
    text = str(ei.value)
    assert needle in text and where in text and "MixedProblem" in text, text


def test_sampled_reference_of_the_wrong_length_names_the_coordinate(pendulum2) -> None:
    from rodgen.runtime.trajectory import Motion
    with pytest.raises(ValueError, match="th_upper"):
        Motion([np.zeros(4)], ["th_upper"], t=np.arange(5.0))


@pytest.fixture(scope="module")
def arm(build_dir):
    """A point mass on a hinged arm with joint friction (Fs = 2, Fk = 1.5), gravity off, and a second
    free arm on it without friction."""
    model = Model(name="mixed_friction_arm", gravity=(0.0, 0.0))
    model.parameter("Fs", 2.0)
    model.parameter("Fk", 1.5)
    a = Link("hub", joint=Joint(friction=Friction(static="Fs", kinetic="Fk")))
    a.rigid("hub_s", 0.5, masses=[PointMass(1.0, fraction=1.0)])
    b = Link("tip", parent="hub", angle="relative")
    b.rigid("tip_s", 0.4, masses=[PointMass(0.3, fraction=1.0)])
    model.links += [a, b]
    return rodgen.build(model, build_dir=build_dir)


def test_kinetic_friction_of_a_prescribed_coordinate_is_in_its_force(arm) -> None:
    hub = slew(0.6, 2.0)
    mp = MixedProblem(arm, {"phi_hub": hub})
    res = mp.simulate([0.1, 0.0], 2.0, dt=1e-3)
    assert res.ok, res.message
    frictionless = arm.inverse_dynamics(res.q, res.qd, res.qdd)[:, 0]
    rate = hub[1](res.t)
    expected = frictionless + 1.5 * np.sign(rate)            # the drive also overcomes F_k against the rate
    np.testing.assert_allclose(res.extra["compensating"][:, 0], expected, rtol=0, atol=1e-9)
    # the same term in prescribed_forces (inverse dynamics along a whole motion)
    pf = prescribed_forces(arm, res.t, res.q, res.qd, res.qdd)
    np.testing.assert_allclose(pf.forces[:, 0], expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(pf.forces[:, 1], arm.inverse_dynamics(res.q, res.qd, res.qdd)[:, 1], atol=1e-12)
    # a free coordinate with friction is refused, naming it
    with pytest.raises(ModelError, match="free coordinate 'phi_hub' has dry friction"):
        MixedProblem(arm, {"th_tip": 0.0})
