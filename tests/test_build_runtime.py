"""CompiledModel: argument checks and their messages, batches, out= arrays, ode(), failures."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import rodgen
import rodgen.toolchain
from conftest import EXAMPLES
from rodgen.model.core import Joint, Model, PointMass
from rodgen.runtime import CompiledModel, DynamicsError


@pytest.fixture(scope="session")
def exo5(build_dir: Path) -> CompiledModel:
    return rodgen.build(rodgen.load(EXAMPLES / "exo5.yaml"), build_dir=build_dir, method="recursive")


@pytest.fixture(scope="session")
def pendulum(build_dir: Path) -> CompiledModel:
    """A point mass m on a massless rod of length l: closed form m l^2 phidd = tau - m g l cos(phi)."""
    m = Model("simple_pendulum")
    m.gravity = (0.0, "-g")
    m.parameter("g", 9.81)
    m.parameter("m", 2.0)
    m.parameter("l", 0.75)
    lk = m.link("arm")
    lk.rigid("rod", "l", masses=[PointMass("m", fraction=1.0)])
    return rodgen.build(m, build_dir=build_dir)


def test_metadata(exo5: CompiledModel) -> None:
    assert (exo5.name, exo5.nq, exo5.nu, exo5.np) == ("exo5", 9, 9, 11)
    assert exo5.coordinates[0] == "phi_stance_shank" and exo5.coordinates[1] == "l_stance_shank_l"
    assert list(exo5.parameters)[:3] == ["g", "m_shank", "m_thigh"]
    assert exo5.parameters["m_torso"] == 30.0
    assert exo5.header.is_file() and exo5.header.name == "exo5.h"
    assert exo5.initial_state()[0] == 1.45


def test_closed_form_pendulum(pendulum: CompiledModel) -> None:
    g, m, l = 9.81, 2.0, 0.75
    seed = 3
    rng = np.random.default_rng(seed)
    for _ in range(5):
        phi, phid, tau = rng.uniform(-3, 3), rng.normal(), rng.normal()
        want = (tau - m * g * l * np.cos(phi)) / (m * l * l)
        got = pendulum.forward_dynamics([phi], [phid], [tau])
        np.testing.assert_allclose(got, [want], rtol=1e-13, err_msg=f"seed={seed}")
        T, V = pendulum.energy([phi], [phid])
        np.testing.assert_allclose([T, V], [0.5 * m * l * l * phid ** 2, m * g * l * np.sin(phi)], rtol=1e-13)
        pts = pendulum.points([phi])
        np.testing.assert_allclose(pts["rod.end"], [l * np.cos(phi), l * np.sin(phi)], rtol=1e-13, atol=1e-15)


def test_wrong_lengths_give_clear_messages(exo5: CompiledModel) -> None:
    q = exo5.initial_state()[:9]
    with pytest.raises(ValueError) as err:
        exo5.mass_matrix(q, p=np.ones(7))
    assert str(err.value) == ("Input 'p' has length 7; the model 'exo5' expects 11 parameters (in the order of "
                              ".parameters: g, m_shank, m_thigh, m_torso, b_shank, b_thigh, l_shank0, l_thigh0, "
                              "h_torso, c_torso, I_torso).")
    with pytest.raises(ValueError, match=r"^Input 'q' has length 8; the model 'exo5' expects 9 coordinates "
                                         r"\(in the order of .coordinates: phi_stance_shank, l_stance_shank_l, "):
        exo5.forward_dynamics(q[:8], q, np.zeros(9))
    with pytest.raises(ValueError, match=r"^Input 'u' has length 3; the model 'exo5' expects 9 inputs"):
        exo5.forward_dynamics(q, q, np.zeros(3))
    with pytest.raises(ValueError, match=r"^Input 'y' has length 9; the model 'exo5' expects 18 state entries"):
        exo5.rhs(0.0, q)
    with pytest.raises(ValueError, match=r"^Input 'qd' has shape \(4, 8\); the model 'exo5' expects rows of 9"):
        exo5.bias(np.zeros((4, 9)), np.zeros((4, 8)))
    with pytest.raises(ValueError, match=r"^Stacked inputs must have the same number of rows: 'q' has 4, 'qd' has 3"):
        exo5.bias(np.zeros((4, 9)), np.zeros((3, 9)))
    with pytest.raises(ValueError, match=r"^Output 'out' must be a writable C-contiguous float64 array of shape "
                                         r"\(9, 9\); got shape \(9, 8\)"):
        exo5.mass_matrix(q, out=np.empty((9, 8)))
    with pytest.raises(KeyError, match="the model 'exo5' has no parameter 'm_leg'"):
        exo5.parameter_vector(m_leg=3.0)


def test_out_arrays_and_fresh_results(exo5: CompiledModel) -> None:
    q = exo5.initial_state()[:9]
    out = np.empty((9, 9))
    res = exo5.mass_matrix(q, out=out)
    assert res is out
    a, b = exo5.mass_matrix(q), exo5.mass_matrix(q)
    assert a is not b and not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, out)
    batch_out = np.empty((2, 9))
    assert exo5.forward_dynamics(np.stack([q, q]), np.zeros((2, 9)), out=batch_out) is batch_out
    # one state into out=: the one-state path writes the batched kernel's numbers into the caller's array
    qd = np.linspace(-0.5, 0.7, 9)
    u = np.linspace(1.0, -2.0, 9)
    for name, args, shape in [("forward_dynamics", (q, qd, u), (9,)), ("bias", (q, qd), (9,)),
                              ("inverse_dynamics", (q, qd, u), (9,)), ("rhs", (0.0, np.r_[q, qd], u), (18,))]:
        f = getattr(exo5, name)
        row = f(*[np.stack([a, a]) if isinstance(a, np.ndarray) else a for a in args])[1]
        o = np.full(shape, np.nan)
        assert f(*args, out=o) is o, name
        np.testing.assert_allclose(o, row, rtol=1e-13, atol=1e-12, err_msg=name)
    with pytest.raises(ValueError, match=r"^Output 'out' must be a writable C-contiguous float64 array of shape "
                                         r"\(9,\); got shape \(9,\), dtype float32"):
        exo5.forward_dynamics(q, qd, out=np.empty(9, dtype=np.float32))
    with pytest.raises(ValueError, match=r"not C-contiguous"):
        exo5.mass_matrix(q, out=np.empty((9, 9), order="F"))


def test_rhs_jacobian_one_state_out_closed_form(pendulum: CompiledModel) -> None:
    """One state into out=: d phidd/d phi = g sin(phi) / l for the point mass on a rod, written in place."""
    g, l = 9.81, 0.75
    for phi in (0.3, -1.1):
        out = np.full((2, 2), np.nan)
        assert pendulum.rhs_jacobian([phi], [0.4], out=out) is out
        np.testing.assert_allclose(out, [[0.0, 1.0], [g * np.sin(phi) / l, 0.0]], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=r"^Output 'out' must be a writable C-contiguous float64 array of shape "
                                         r"\(2, 2\); got shape \(2, 3\)"):
        pendulum.rhs_jacobian([0.3], [0.4], out=np.empty((2, 3)))
    frozen = np.empty((2, 2))
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        pendulum.rhs_jacobian([0.3], [0.4], out=frozen)


def test_parameters_by_name_and_per_row(exo5: CompiledModel) -> None:
    q = exo5.initial_state()[:9]
    heavy = exo5.parameter_vector(m_torso=60.0)
    np.testing.assert_array_equal(exo5.gravity(q, {"m_torso": 60.0}), exo5.gravity(q, heavy))
    P = np.stack([exo5.parameter_vector(), heavy])
    G = exo5.gravity(np.stack([q, q]), P)
    np.testing.assert_array_equal(G[0], exo5.gravity(q))
    np.testing.assert_array_equal(G[1], exo5.gravity(q, heavy))
    # a sweep: one state, many parameter rows
    G2 = exo5.gravity(q, P)
    np.testing.assert_array_equal(G2, G)


def test_failures_raise_dynamics_error(exo5: CompiledModel) -> None:
    q = exo5.initial_state()[:9]
    bad = q.copy()
    bad[2] = np.nan
    with pytest.raises(DynamicsError, match="forward_dynamics of the model 'exo5' failed: the state, the inputs "
                                            "or the parameters hold inf or NaN") as err:
        exo5.forward_dynamics(bad, np.zeros(9))
    assert err.value.status == 1
    Q = np.stack([q, bad, q])
    with pytest.raises(DynamicsError, match="at row 1 of 3"):
        exo5.forward_dynamics(Q, np.zeros((3, 9)))
    res = exo5.forward_dynamics(Q, np.zeros((3, 9)), check=False)
    assert np.isnan(res[1]).all() and np.isfinite(res[[0, 2]]).all()
    # a model whose masses are all zero has a singular mass matrix
    with pytest.raises(DynamicsError, match="the mass matrix is not positive definite"):
        exo5.forward_dynamics(q, np.zeros(9), p=np.zeros(11))


def test_ode_conserves_energy_without_input(exo5: CompiledModel) -> None:
    """No dampers or inputs in exo5: T + V is constant along solutions (to the integrator's tolerance)."""
    y0 = exo5.initial_state()
    y0[9:] = np.linspace(-0.5, 0.5, 9)
    rtol = 1e-10
    sol = solve_ivp(exo5.ode(), (0.0, 0.5), y0, rtol=rtol, atol=1e-12, method="DOP853")
    assert sol.success
    E = [sum(exo5.energy(y[:9], y[9:])) for y in sol.y.T]
    # the energy error of an rtol-accurate solution is a small multiple of rtol times the energy scale
    scale = max(abs(e) for e in E) + max(exo5.energy(y0[:9], y0[9:])[0], 1.0)
    assert max(abs(e - E[0]) for e in E) < 1e3 * rtol * scale


def test_ode_with_input_function(pendulum: CompiledModel) -> None:
    """u(t, y) = m g l cos(phi) holds the pendulum: it moves at constant rate."""
    g, m, l = 9.81, 2.0, 0.75
    f = pendulum.ode(u=lambda t, y: [m * g * l * np.cos(y[0])])
    sol = solve_ivp(f, (0, 1.0), [0.2, 0.5], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sol.y[1], 0.5, rtol=1e-9)
    np.testing.assert_allclose(sol.y[0, -1], 0.2 + 0.5 * sol.t[-1], rtol=1e-9)
    const = pendulum.ode(u=[0.0], p={"g": 0.0})
    np.testing.assert_array_equal(const(0.0, np.array([0.1, 0.3])), [0.3, 0.0])
    with pytest.raises(ValueError, match="Input 'u' has length 2; the model 'simple_pendulum' expects 1 inputs"):
        pendulum.ode(u=[0.0, 1.0])


def test_rhs_batch(pendulum: CompiledModel) -> None:
    Y = np.array([[0.0, 1.0], [0.5, -1.0]])
    dY = pendulum.rhs(np.array([0.0, 1.0]), Y, np.zeros((2, 1)))
    for i in range(2):
        np.testing.assert_array_equal(dY[i], pendulum.rhs(0.0, Y[i]))


def test_module_kernels_check_buffers(pendulum: CompiledModel) -> None:
    """The Cython kernels refuse wrong buffers even when called directly."""
    mod: Any = pendulum._m
    with pytest.raises(ValueError, match="kernel argument 'M' holds 2 items; expected 1 rows of 1"):
        mod.mass_matrix(1, np.zeros(1), np.zeros(3), np.zeros(2))
    with pytest.raises(TypeError, match="kernel argument 'q' must hold float64 items"):
        mod.mass_matrix(1, np.zeros(1, dtype=np.float32), np.zeros(3), np.zeros(1))


def test_passive_model_without_inputs_or_parameters(build_dir: Path) -> None:
    m = Model("passive_arm")
    lk = m.link("arm", joint=Joint(actuated=False))
    lk.rigid("rod", 1.0, masses=[PointMass(2.0, fraction=1.0)])
    s = rodgen.build(m, build_dir=build_dir)
    assert (s.nu, s.np) == (0, 0)
    np.testing.assert_allclose(s.forward_dynamics([0.0], [0.0]), [-9.81], rtol=1e-14)
    assert s.input_map([0.0]).shape == (1, 0)
