"""Point forces that are expressions of the time t.

A free block driven along x by F0 sin(w t) at rest from the origin moves as
x(t) = F0 / (m w^2) (w t - sin(w t)) (integrate m x'' = F0 sin(w t) twice): the
closed form every integrator (RK4, DOPRI5, the batch, the mixed problem in C) must
reproduce, and the same force given through two input slots and an input law u(t)
must give the same motion. The hybrid simulation holds the block on the ground by a
sticking contact, whose tangential reaction is then -F0 sin(w t). The RHS Jacobian of
a force that depends on t and on the state is checked against central differences of
the compiled right-hand side at two times.
"""
from __future__ import annotations

import numpy as np
import pytest

import rodgen
from rodgen.errors import ModelError
from rodgen.model.loader import load_dict
from rodgen.runtime.trajectory import MixedProblem

M, F0, W = 2.0, 3.0, 5.0


def block(name: str, force=None, *, inputs: bool = False, gravity: float = 0.0,
          contact: bool = False) -> rodgen.Model:
    m = rodgen.Model(name, base="floating", gravity=(0, "-g"))
    for nm, v in (("m", M), ("F0", F0), ("w", W), ("g", gravity), ("k", 4.0)):
        m.parameter(nm, v)
    lk = m.link("b")
    lk.rigid("s", 0.1, rod=rodgen.Rod(mass="m", name="cm"))
    if inputs:
        m.point_force("drive", "cm", inputs=True)
    else:
        m.point_force("drive", "cm", force or ("F0*sin(w*t)", 0))
    if contact:
        lk.marker("sole", "s", 0.5)          # where the rod's mass is
        m.contact("foot", "sole", friction=10.0)
    return m


def x_closed(t: np.ndarray) -> np.ndarray:
    return F0 / (M * W ** 2) * (W * t - np.sin(W * t))


@pytest.fixture(scope="module")
def driven() -> rodgen.CompiledModel:
    return rodgen.build(block("t_block"))


@pytest.fixture(scope="module")
def by_input() -> rodgen.CompiledModel:
    return rodgen.build(block("t_block_u", inputs=True))


def test_bias_and_element_forces_take_the_time(driven):
    q, qd = np.zeros(3), np.zeros(3)
    for t in (0.0, 0.3, 1.7):
        np.testing.assert_allclose(driven.bias(q, qd, t=t), [-F0 * np.sin(W * t), 0, 0], atol=1e-14)
        np.testing.assert_allclose(driven.forward_dynamics(q, qd, t=t)[0], F0 * np.sin(W * t) / M, rtol=1e-13)
        np.testing.assert_allclose(driven.contact_forces(q, qd, t=t)["drive"], [F0 * np.sin(W * t), 0], atol=1e-14)
        np.testing.assert_allclose(driven.inverse_dynamics(q, qd, np.zeros(3), t=t), [-F0 * np.sin(W * t), 0, 0],
                                   atol=1e-14)
    # the default time is 0, where the force vanishes; a time per row of a batch
    assert np.all(driven.bias(q, qd) == 0)
    tt = np.array([0.1, 0.2, 0.3])
    qdd = driven.forward_dynamics(np.zeros((3, 3)), np.zeros((3, 3)), t=tt)
    np.testing.assert_allclose(qdd[:, 0], F0 * np.sin(W * tt) / M, rtol=1e-13)
    np.testing.assert_allclose(driven.rhs(tt, np.zeros((3, 6)))[:, 3], F0 * np.sin(W * tt) / M, rtol=1e-13)
    with pytest.raises(ValueError, match="'t'"):
        driven.bias(q, qd, t=np.zeros((2, 2)))


@pytest.mark.parametrize("method, dt, tol", [("rk4", 1e-3, 1e-10), ("dopri5", None, 1e-7)])
def test_block_follows_the_closed_form(driven, method, dt, tol):
    res = driven.simulate(np.zeros(6), 2.0, dt, method=method, rtol=1e-10, atol=1e-12)
    assert res.ok
    np.testing.assert_allclose(res.q[:, 0], x_closed(res.t), atol=tol)
    np.testing.assert_allclose(res.q[:, 1:], 0, atol=1e-12)
    np.testing.assert_allclose(res.element_forces["drive"][:, 0], F0 * np.sin(W * res.t), atol=1e-12)


def test_same_force_through_an_input_slot(driven, by_input):
    res = driven.simulate(np.zeros(6), 2.0, 1e-3)
    law = by_input.simulate(np.zeros(6), 2.0, 1e-3, u=lambda t, q, qd: [F0 * np.sin(W * t), 0.0])
    np.testing.assert_allclose(law.q, res.q, atol=1e-13)
    assert by_input.inputs == ["drive_x", "drive_y"]


def test_batch_and_a_later_start_time(driven):
    y0 = np.zeros((2, 6))
    b = driven.simulate_batch(y0, 2.0, 1e-3, threads=2)
    one = driven.simulate(np.zeros(6), 2.0, 1e-3)
    n = int(b.rows[0])
    np.testing.assert_array_equal(b.q[0, :n], one.q)
    np.testing.assert_allclose(b.q[1, :n, 0], x_closed(b.t[1, :n]), atol=1e-10)
    # from rest at t0 = 1: x'' = F0 sin(w t) / m integrated twice from t0
    t0 = 1.0
    late = driven.simulate(np.zeros(6), 2.0, 1e-3, t0=t0)
    t = late.t
    x = F0 / M * (-(np.sin(W * t) - np.sin(W * t0)) / W ** 2 + np.cos(W * t0) * (t - t0) / W)
    np.testing.assert_allclose(late.q[:, 0], x, atol=1e-10)


def test_mixed_problem_in_c_passes_the_stage_time(driven):
    prob = MixedProblem(driven, {"y": 0.0, "phi_b": 0.0})
    res = prob.simulate(np.zeros(2), 2.0, dt=1e-3, method="rk4")
    np.testing.assert_allclose(res.q[:, 0], x_closed(res.t), atol=1e-10)
    qdd, tau = prob.solve(np.zeros(3), np.zeros(3), np.zeros(2), t=0.3)
    np.testing.assert_allclose(qdd[0, 0], F0 * np.sin(W * 0.3) / M, rtol=1e-13)


def test_hybrid_contact_holds_the_block_against_the_force():
    sys = rodgen.build(block("t_block_c", gravity=9.81, contact=True))
    res = sys.simulate(sys.initial_state(), 1.0, 1e-3, contacts=["foot"])
    assert res.ok
    lam_t = res.lam[:, 0]          # tangential ground reaction on the block
    np.testing.assert_allclose(lam_t, -F0 * np.sin(W * res.t), atol=1e-9)
    np.testing.assert_allclose(res.lam[:, 1], M * 9.81, rtol=1e-9)
    qdd, lam = sys.constrained_dynamics(np.zeros(3), np.zeros(3), active=["foot"], t=0.4)
    np.testing.assert_allclose(lam[0], -F0 * np.sin(W * 0.4), atol=1e-12)


def test_jacobian_of_a_time_and_state_dependent_force_is_exact():
    sys = rodgen.build(block("t_block_j", ("F0*sin(w*t)*cos(phi_b) - k*x", "F0*cos(w*t)*x_dot*y")))
    assert sys.has_jacobian
    rng = np.random.default_rng(4)
    y = rng.normal(size=6)
    eps = 1e-6
    Js = []
    for t in (0.2, 0.9):
        J = sys.rhs_jacobian(y[:3], y[3:], t=t)
        fd = np.empty((6, 6))
        for k in range(6):
            d = np.zeros(6)
            d[k] = eps
            fd[:, k] = (sys.rhs(t, y + d) - sys.rhs(t, y - d)) / (2 * eps)
        np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-7)
        Js.append(J)
    assert not np.allclose(Js[0], Js[1])        # the Jacobian depends on the time
    f = sys.ode()
    np.testing.assert_allclose(f.jac(0.9, y), Js[1], rtol=1e-14)
    np.testing.assert_allclose(f(0.9, y), sys.rhs(0.9, y), rtol=1e-14)


def test_yaml_force_of_time():
    d = {"name": "t_yaml", "gravity": [0, 0], "base": "floating", "parameters": {"F0": F0, "w": W},
         "links": [{"name": "b", "segments": [{"name": "s", "length": 0.1, "rod": {"mass": M, "name": "cm"}}]}],
         "forces": [{"name": "drive", "type": "point_force", "at": "cm", "force": ["F0*sin(w*t)", 0]}]}
    sys = rodgen.build(load_dict(d, source="t.yaml"))
    res = sys.simulate(np.zeros(6), 1.0, 1e-3)
    np.testing.assert_allclose(res.q[:, 0], x_closed(res.t), atol=1e-10)
    eqs = rodgen.derive(load_dict(d, source="t.yaml"))
    assert eqs.t in eqs.F.free_symbols


def test_numeric_model_takes_the_time():
    from rodgen.symbolic.numeric import lambdify_equations
    num = lambdify_equations(rodgen.derive(block("t_block_n")))
    np.testing.assert_allclose(num.bias(np.zeros(3), np.zeros(3), t=0.3), [-F0 * np.sin(1.5), 0, 0], atol=1e-14)
    np.testing.assert_allclose(num.rhs(0.3, np.zeros(6))[3], F0 * np.sin(1.5) / M, rtol=1e-13)


def test_a_parameter_named_t_in_a_force_expression_is_refused():
    d = {"name": "bad", "gravity": [0, 0], "parameters": {"t": 1.0},
         "links": [{"name": "a", "segments": [{"name": "s", "length": 1.0, "rod": {"mass": 1.0, "name": "cm"}}]}],
         "forces": [{"name": "f", "type": "point_force", "at": "cm", "force": ["sin(t)", 0]}]}
    with pytest.raises(ModelError) as exc:
        load_dict(d, source="bad.yaml")
    assert "force 'f'.force[0]" in str(exc.value) and "'t' is the time" in str(exc.value)
    d["parameters"] = {"c": 1.0}
    d["forces"][0]["force"] = ["sin(tau)", 0]
    with pytest.raises(ModelError, match="nor the time t"):
        load_dict(d, source="bad.yaml")


def test_contact_inverse_dynamics_at_a_time():
    from rodgen.runtime.contact import contact_inverse_dynamics
    sys = rodgen.build(block("t_block_c", gravity=9.81, contact=True))
    q, z = sys.initial_state()[:3], np.zeros(3)
    r = contact_inverse_dynamics(sys, q, z, z, ["foot"], t=0.4)
    # at rest and held, the ground takes the drive and the weight: lambda = [-F0 sin(w t), m g]
    np.testing.assert_allclose(r.lam, [-F0 * np.sin(W * 0.4), M * 9.81], atol=1e-9)


def test_latex_names_the_time_in_the_force_column():
    tex = rodgen.derive(block("t_block_tex")).latex()
    assert r"+ F(q,\dot{q},t)" in tex and r"\sin{\left(t w \right)}" in tex
