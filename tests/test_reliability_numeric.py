"""Numbers that were silently wrong or crashed on unusual but valid input: parameter overrides of spatial and
URDF models (against a model rebuilt with the changed value), constants far from 1 in the generated C
(against SymPy's own evaluation), exactly singular configurations (the singular-M status), the length checks
of the Cython Simulation, and the rows of simulate_batch against simulate."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rodgen
from rodgen.errors import ModelError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


# -------------------------------------------------------------------------------------------------------------
# parameter overrides of spatial and URDF models
# -------------------------------------------------------------------------------------------------------------


def _arm3(**defaults: float) -> rodgen.SpatialModel:
    m = rodgen.load(EXAMPLES / "spatial" / "arm3.yaml")
    for p in m.parameters:
        if p.name in defaults:
            p.value = defaults.pop(p.name)
    assert not defaults
    return m


def test_spatial_parameter_override_equals_a_rebuilt_model(build_dir: Path) -> None:
    arm = rodgen.build(_arm3(), build_dir=build_dir)
    heavy = rodgen.build(_arm3(m_load=1.7, l_fore=0.5), build_dir=build_dir)
    y0 = np.array([0.3, 0.8, -0.6, 0.1, -0.2, 0.4])
    p = {"m_load": 1.7, "l_fore": 0.5}
    # the defaults given explicitly give the defaults' run, the changed values the rebuilt model's run
    same = arm.simulate(y0, 0.2, 1e-3, p=dict(arm.parameters))
    base = arm.simulate(y0, 0.2, 1e-3)
    assert np.array_equal(same.q, base.q)
    over = arm.simulate(y0, 0.2, 1e-3, p=p)
    ref = heavy.simulate(y0, 0.2, 1e-3)
    assert np.allclose(over.q, ref.q, rtol=1e-12, atol=1e-12)
    assert np.abs(over.q[-1] - base.q[-1]).max() > 1e-3            # the override changed the motion
    q, qd = y0[:3], y0[3:]
    assert np.allclose(arm.forward_dynamics(q, qd, p=p), heavy.forward_dynamics(q, qd), rtol=1e-12, atol=1e-12)


def test_spatial_parameter_override_keeps_the_sign_rules(build_dir: Path) -> None:
    arm = rodgen.build(_arm3(), build_dir=build_dir)
    with pytest.raises(ModelError, match=r"link 'base'.*bodies\[0\]\.mass.*m_base = -1"):
        arm.simulate(np.zeros(6), 0.01, 1e-3, p={"m_base": -1.0})
    with pytest.raises(ModelError, match=r"fore_tube.*length.*l_fore = 0"):
        arm.simulate(np.zeros(6), 0.01, 1e-3, p={"l_fore": 0.0})


def test_urdf_model_takes_its_empty_parameter_vector(build_dir: Path) -> None:
    from _robots import robot_file
    robot = rodgen.build(rodgen.from_urdf(robot_file(
        "double_pendulum_description/urdf/double_pendulum_continuous.urdf")), build_dir=build_dir)
    y0 = np.array([0.4, -0.3, 0.0, 0.0])
    a = robot.simulate(y0, 0.05, 1e-3, p={})
    b = robot.simulate(y0, 0.05, 1e-3)
    assert np.array_equal(a.q, b.q)



# -------------------------------------------------------------------------------------------------------------
# constants far from 1 in the generated C
# -------------------------------------------------------------------------------------------------------------


def _far(mass: float, offset: float) -> rodgen.Model:
    m = rodgen.Model("far", gravity=(0.0, -9.81))
    a = m.link("A")
    a.rigid("a1", 1.0, rod=rodgen.Rod(mass, offset=offset))
    b = m.link("B", parent="A")
    b.rigid("b1", 0.5, masses=[rodgen.PointMass(0.3, fraction=1.0)])
    return m


@pytest.mark.parametrize("mass, offset", [(2.0, 1e20), (2.0, 3.0 * 2.0 ** 64), (1e-300, 1e300), (2.0, 1e-200)])
def test_constants_far_from_one_match_sympy(build_dir: Path, mass: float, offset: float) -> None:
    """Integers of 2**64 and more were printed as overflowing C integer literals (a wrong bias, silently);
    1e-200 squared raised OverflowError in the printer. The compiled M, bias and accelerations of the
    recursive method equal the Lagrange equations evaluated by SymPy (30 digits, then rounded)."""
    import sympy as sp
    model = _far(mass, offset)
    eq = rodgen.derive(model, method="lagrange")
    robot = rodgen.build(model, build_dir=build_dir)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd = rng.uniform(-2, 2, 2), rng.normal(size=2)
        subs = {**dict(zip(eq.q, q)), **dict(zip(eq.qd, qd))}
        M = np.array(eq.M.subs(subs).evalf(30).tolist(), dtype=float)
        bias = np.array((eq.h + eq.G).subs(subs).evalf(30).tolist(), dtype=float).ravel()
        qdd = np.array((-eq.M.subs(subs).evalf(30).LUsolve((eq.h + eq.G).subs(subs).evalf(30))).tolist(),
                       dtype=float).ravel()
        assert sp.Matrix(M).is_symmetric()
        # M[0, 0] ~ mass * offset**2 beside terms of order 1: compare entries to the matrix's scale
        assert np.allclose(robot.mass_matrix(q), M, rtol=1e-9, atol=1e-9 * np.abs(M).max())
        assert np.allclose(robot.bias(q, qd), bias, rtol=1e-9, atol=1e-9 * np.abs(bias).max())
        # each acceleration to its own scale (qdd[0] ~ 1/offset is tiny beside qdd[1])
        assert np.allclose(robot.forward_dynamics(q, qd), qdd, rtol=1e-6, atol=0)
        tau = M @ qdd + bias
        assert np.allclose(robot.inverse_dynamics(q, qd, qdd), tau, rtol=1e-6, atol=1e-9 * np.abs(bias).max())


def test_constant_beyond_the_double_range_is_a_codegen_error() -> None:
    from rodgen.errors import CodegenError
    with pytest.raises(CodegenError, match=r"constant \d\.\d+e\+616 is beyond the range of a double.*routine"):
        rodgen.generate(_far(2.0, 1e308))


# -------------------------------------------------------------------------------------------------------------
# exactly singular configurations
# -------------------------------------------------------------------------------------------------------------


def _fold() -> rodgen.Model:
    """A massless upper link and a lower link with its mass at the end, both 1 m: folded back (q_B = pi) the
    mass sits on the upper joint, which then moves nothing: M = [[0, 0], [0, 2]]."""
    m = rodgen.Model("fold", gravity=(0.0, -9.81))
    m.link("A", angle="relative").rigid("a1", 1.0)
    m.link("B", parent="A", angle="relative").rigid("b1", 1.0, masses=[rodgen.PointMass(2.0, fraction=1.0)])
    return m


@pytest.mark.parametrize("forward", ["aba", "cholesky"])
def test_exactly_singular_configuration_has_the_singular_status(build_dir: Path, forward: str) -> None:
    from rodgen.codegen import CodegenOptions
    from rodgen.runtime.compiled import DynamicsError
    from rodgen.runtime.result import Status
    robot = rodgen.build(_fold(), build_dir=build_dir, codegen=CodegenOptions(forward=forward))
    q = np.array([0.4, np.pi])
    M = robot.mass_matrix(q)
    assert abs(M[0, 0]) < 1e-15 and M[1, 1] == pytest.approx(2.0)        # singular to the rounding error
    with pytest.raises(DynamicsError, match="not positive definite"):
        robot.forward_dynamics(q, np.zeros(2))
    res = robot.simulate(np.r_[q, 0.0, 0.0], 0.01, 1e-3)
    assert res.status == Status.SINGULAR_MASS
    # away from the fold (M well conditioned) the accelerations are those of M qdd = -bias
    for qb in (3.0, np.pi - 1e-3, 1.0):
        q = np.array([0.4, qb])
        qd = np.array([0.3, -0.2])
        ref = np.linalg.solve(robot.mass_matrix(q), -robot.bias(q, qd))
        assert np.allclose(robot.forward_dynamics(q, qd), ref, rtol=1e-9, atol=1e-9)
    assert robot.simulate(np.array([0.4, 3.0, 0.0, 0.0]), 0.01, 1e-3).status == Status.SUCCESS


# -------------------------------------------------------------------------------------------------------------
# the Cython Simulation checks the lengths of what the C reads
# -------------------------------------------------------------------------------------------------------------


def _simulation(robot: "rodgen.runtime.CompiledModel", kind: str, **arrays: object) -> object:
    """A Simulation (RK4, 1 ms) of ``robot`` with the input law ``kind`` and the given arrays (others None)."""
    from rodgen.contract import constant
    rt = robot._runtime
    a = {"u": None, "times": None, "values": None, "kp": None, "kd": None,
         "p": np.array(list(robot.parameters.values())), "y0": np.array([0.3, -0.2, 0.0, 0.0])}
    a.update(arrays)
    return rt.Simulation(robot._m, constant("RK4"), 0.0, 0.01, 1e-3, 0.0, 0.0, 0.0, 0.0, 0, 1,
                         constant(f"INPUT_{kind}"), a["u"], a["times"], a["values"], a["kp"], a["kd"], None,
                         a["p"], a["y0"])


def test_simulation_refuses_short_arrays(build_dir: Path) -> None:
    robot = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)
    nq, nu = robot.nq, robot.nu
    assert (nq, nu) == (2, 2)
    z = np.zeros
    cases = [
        ("CONSTANT", {"u": z(1)}, r"u must hold nu = 2 values"),
        ("TABLE", {"times": z(0), "values": z(0)}, r"times must hold at least one"),
        ("TABLE", {"times": np.arange(3.0), "values": z(5)}, r"values must hold len\(times\) \* nu = 6 values, got 5"),
        ("PD", {"times": np.arange(2.0), "values": z(11), "kp": z(2), "kd": z(2)},
         r"values must hold len\(times\) \* \(nq \+ 2 nv\) = 12 values, got 11"),
        ("PD", {"times": np.arange(2.0), "values": z(12), "kp": z(1), "kd": z(2)}, r"kp must hold nu = 2 values"),
        ("PD", {"times": np.arange(2.0), "values": z(12), "kp": z(2), "kd": None}, r"kd must hold nu = 2 values"),
        ("COMPUTED_TORQUE", {"times": np.arange(2.0), "values": z(12), "kp": z(2), "kd": z(1)},
         r"kd must hold nv = 2 values, got 1"),
        ("CONSTANT", {"y0": z(3)}, r"y0 must hold nq \+ nv = 4 values, got 3"),
        ("CONSTANT", {"p": z(len(robot.parameters) - 1)}, rf"p must hold np = {len(robot.parameters)} values"),
    ]
    for kind, arrays, message in cases:
        with pytest.raises(ValueError, match=message):
            _simulation(robot, kind, **arrays)
    # the same law with the lengths it needs runs, and gives what CompiledModel.simulate gives
    sim = _simulation(robot, "TABLE", times=np.array([0.0, 1.0]), values=np.array([0.5, -0.5, 1.5, 0.5]))
    with pytest.raises(ValueError, match=r"y must hold 2 \* nq = 4 values, got 2"):
        sim.input_at(0.0, z(2))
    status, u = sim.input_at(0.5, z(4))
    assert status == 0 and u == pytest.approx([1.0, 0.0])
    t_out, y_out, u_out = z(20), z(20 * 2 * nq), z(20 * nu)
    status, rows = sim.run(t_out, y_out, u_out)
    ref = robot.simulate(np.array([0.3, -0.2, 0.0, 0.0]), 0.01, 1e-3,
                         u=lambda t, y: np.array([0.5 + t, -0.5 + t]))
    assert rows == len(ref.t) and np.allclose(y_out[:rows * 2 * nq].reshape(rows, 2 * nq)[:, :nq], ref.q,
                                              rtol=1e-12, atol=1e-12)


# -------------------------------------------------------------------------------------------------------------
# simulate_batch stores the rows simulate stores
# -------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t_end, dt, store_every", [(0.5, 1e-3, 1), (0.5, 1e-3, 3), (0.5, 1e-3, 500),
                                                     (0.01, 3e-3, 1), (0.3, 0.1, 1), (1.0, 0.1, 4)])
def test_batch_rows_equal_simulate_rows(build_dir: Path, t_end: float, dt: float, store_every: int) -> None:
    """0.5 s at 1 ms is 500 steps: 501 rows (the start and every step), not 502 with a NaN row at the end;
    the grid ends at t_end (a short last step where dt does not divide the span)."""
    robot = rodgen.build(rodgen.load(EXAMPLES / "double_pendulum.yaml"), build_dir=build_dir)
    y0 = np.array([0.3, -0.2, 0.0, 0.0])
    one = robot.simulate(y0, t_end, dt, store_every=store_every)
    batch = robot.simulate_batch(np.stack([y0, y0]), t_end, dt, store_every=store_every, threads=1)
    steps = int(np.ceil(t_end / dt - 1e-9))
    assert len(one.t) == 1 + -(-steps // store_every)
    assert batch.t.shape == (2, len(one.t)) and list(batch.rows) == [len(one.t)] * 2
    assert not np.isnan(batch.t).any() and batch.t[0, -1] == one.t[-1] == t_end
    assert np.array_equal(batch.q[0], one.q) and np.array_equal(batch.t[1], one.t)
