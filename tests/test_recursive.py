"""The recursive method agrees with the matrix method and with Lagrange's equations, and stays small.

The recursive equations are evaluated *without* expanding them: their
assignments run in order as straight-line code (what the code stage does), so
these tests also check that every intermediate is defined before it is used.
The matrix and Lagrange equations are evaluated with ``lambdify``.
"""
from __future__ import annotations

import glob
import os
from typing import Callable

import numpy as np
import pytest
import sympy as sp

import rodgen
from rodgen.examples import LINK_MODELS, chain, vl_chain
from rodgen.symbolic.recursive import ForwardDynamics

EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "examples", "*.yaml")))
#: both sides evaluate different but exact expressions in double precision
RTOL_METHODS = 1e-10
#: Lagrange's equations of 4- and 5-link chains take minutes to derive: marked slow, run with ``-m slow``
SLOW = pytest.mark.slow
QUANTITIES = ("M", "h", "G", "K", "D", "B", "T", "V")


def evaluator(eqs: rodgen.Equations) -> Callable[[np.ndarray, np.ndarray, np.ndarray], dict[str, np.ndarray]]:
    """f(q, qd, p) -> {"M": ..., "h": ..., ...}; assignments are evaluated in order, never substituted."""
    args = [*eqs.q, *eqs.qd, *eqs.params]
    safe = {s: sp.Symbol(f"a{i}") for i, s in enumerate(args)}
    assigns = [(s, e.xreplace(safe)) for s, e in eqs.assignments]
    outs = [getattr(eqs, nm) for nm in QUANTITIES]
    outs = [o.xreplace(safe) if isinstance(o, sp.Basic) else sp.sympify(o).xreplace(safe) for o in outs]
    fn = sp.lambdify([safe[s] for s in args], outs, modules="numpy", cse=lambda ex: (assigns, ex))

    def call(q: np.ndarray, qd: np.ndarray, p: np.ndarray) -> dict[str, np.ndarray]:
        vals = fn(*q, *qd, *p)
        return {nm: np.asarray(v, dtype=float) for nm, v in zip(QUANTITIES, vals)}
    return call


def random_state(eqs: rodgen.Equations, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Angles anywhere, lengths positive, rates of order one."""
    q = rng.uniform(-np.pi, np.pi, eqs.n)
    for i, c in enumerate(eqs.coordinates):
        if c.kind == "length":
            q[i] = rng.uniform(0.3, 1.5)
    return q, rng.normal(size=eqs.n)


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0), 1e-300)
    return float(np.abs(a - b).max(initial=0.0) / scale)


_CACHE: dict[tuple[str, str], tuple[rodgen.Equations, Callable[..., dict[str, np.ndarray]]]] = {}


def derived(model_factory: Callable[[], rodgen.Model], method: str) -> tuple[rodgen.Equations, Callable[
        ..., dict[str, np.ndarray]]]:
    """Equations of a model and their evaluator, derived once per (model name, method) in this session."""
    model = model_factory()
    key = (model.name, method)
    if key not in _CACHE:
        eqs = rodgen.derive(model, method=method)
        _CACHE[key] = (eqs, evaluator(eqs))
    return _CACHE[key]


def assert_same_equations(model_factory: Callable[[], rodgen.Model], reference: str, seed: int,
                          states: int = 4) -> None:
    rec, f_rec = derived(model_factory, "recursive")
    ref, f_ref = derived(model_factory, reference)
    assert rec.method == "recursive"
    assert [str(s) for s in rec.q] == [str(s) for s in ref.q]
    assert [str(s) for s in rec.u] == [str(s) for s in ref.u]
    p = np.array([rec.param_values[s] for s in rec.params])
    rng = np.random.default_rng(seed)
    for _ in range(states):
        q, qd = random_state(rec, rng)
        a, b = f_rec(q, qd, p), f_ref(q, qd, p)
        for nm in QUANTITIES:
            err = rel_err(a[nm], b[nm])
            assert err < RTOL_METHODS, (f"{nm} of 'recursive' and {reference!r} differ by {err:.2e} "
                                        f"(seed {seed}, q={q.tolist()}, qd={qd.tolist()})")


@pytest.mark.parametrize("reference", ["matrix", "lagrange"])
@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_recursive_equals_reference_on_examples(path: str, reference: str) -> None:
    assert_same_equations(lambda: rodgen.load(path), reference, seed=20260)


@pytest.mark.parametrize("angle", ["relative", "absolute"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("link_model", LINK_MODELS)
def test_recursive_equals_matrix_on_chains(link_model: str, n: int, angle: str) -> None:
    assert_same_equations(lambda: chain(n, link_model, angle=angle), "matrix", seed=100 * n + 7)


@pytest.mark.parametrize("n", [1, 2, 3, pytest.param(4, marks=SLOW), pytest.param(5, marks=SLOW)])
@pytest.mark.parametrize("link_model", LINK_MODELS)
def test_recursive_equals_lagrange_on_chains(link_model: str, n: int) -> None:
    assert_same_equations(lambda: chain(n, link_model, angle="absolute" if n % 2 else "relative"),
                          "lagrange", seed=200 * n + 11, states=2)


def test_vl_chain_matches_lagrange() -> None:
    assert_same_equations(lambda: vl_chain(3), "lagrange", seed=31)


def test_floating_base_chain() -> None:
    """A free-flying two-link chain (base coordinates x, y first), recursive against matrix."""
    def model() -> rodgen.Model:
        m = chain(2, "rod_two_variable")
        m.name, m.base = "floating_chain2", "floating"
        return m
    assert_same_equations(model, "matrix", seed=5)


def test_vl_chain_layout() -> None:
    """Coordinates, inputs and parameters as benchmarks and the Pinocchio comparison expect them."""
    m = vl_chain(3)
    assert [c.name for c in m.coordinates()] == ["th1", "l1", "th2", "l2", "th3", "l3"]
    assert [u.name for u in m.inputs()] == ["tau1", "F1", "tau2", "F2", "tau3", "F3"]
    vals = m.parameter_values()
    assert vals["g"] == 9.81 and vals["m2"] == pytest.approx(1.2) and vals["J3"] == 0.01


def ops(eqs: rodgen.Equations) -> int:
    return int(sum(sp.count_ops(e) for _, e in eqs.assignments)
               + sum(sp.count_ops(x) for mat in (eqs.M, eqs.h, eqs.G) for x in mat))


def test_derivation_grows_polynomially_not_like_n4() -> None:
    """Operation count of vl_chain(20) vs vl_chain(10): about 4 for n^2 growth, 16 for n^4."""
    small, large = ops(rodgen.derive(vl_chain(10), method="recursive")), \
        ops(rodgen.derive(vl_chain(20), method="recursive"))
    ratio = large / small
    assert ratio < 5.0, f"operation count grew by {ratio:.2f} from n=10 to n=20 ({small} -> {large})"


def test_assignments_stay_small() -> None:
    """No intermediate is an expanded expression: each one is a few operations."""
    eqs = rodgen.derive(vl_chain(12), method="recursive")
    worst = max(sp.count_ops(e) for _, e in eqs.assignments)
    assert worst <= 40, f"an intermediate has {worst} operations"
    names = [str(s) for s, _ in eqs.assignments]
    assert len(names) == len(set(names))


# -- forward dynamics by the articulated-body algorithm --------------------------------------------
def aba_evaluator(fd: ForwardDynamics) -> Callable[..., np.ndarray]:
    args = [*fd.q, *fd.qd, *fd.u, *fd.params]
    safe = {s: sp.Symbol(f"a{i}") for i, s in enumerate(args)}
    assigns = [(s, e.xreplace(safe)) for s, e in fd.assignments]
    fn = sp.lambdify([safe[s] for s in args], fd.qdd.xreplace(safe), modules="numpy",
                     cse=lambda ex: (assigns, ex))
    return lambda q, qd, u, p: np.asarray(fn(*q, *qd, *u, *p), dtype=float).ravel()


ABA_MODELS = [m for m in LINK_MODELS if m not in ("point_masses", "joint_masses")]


def assert_aba_solves_equations(model_factory: Callable[[], rodgen.Model], seed: int) -> None:
    from rodgen.symbolic.recursive import forward_dynamics
    fd = forward_dynamics(model_factory())
    eqs, f = derived(model_factory, "matrix")
    g = aba_evaluator(fd)
    p = np.array([eqs.param_values[s] for s in eqs.params])
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, qd = random_state(eqs, rng)
        u = rng.normal(size=len(eqs.u))
        v = f(q, qd, p)
        expected = np.linalg.solve(v["M"], v["B"] @ u - (v["h"] + v["G"] + v["K"] + v["D"]).ravel())
        err = rel_err(g(q, qd, u, p), expected)
        assert err < RTOL_METHODS, f"ABA qdd differs from M^-1 (B u - bias) by {err:.2e} (seed {seed}, q={q})"


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_articulated_body_forward_dynamics_on_examples(path: str) -> None:
    from rodgen.symbolic.recursive import forward_dynamics
    try:
        forward_dynamics(rodgen.load(path))
    except rodgen.DerivationError as exc:
        pytest.skip(f"not a model for the articulated-body algorithm: {exc}")
    assert_aba_solves_equations(lambda: rodgen.load(path), seed=77)


@pytest.mark.parametrize("angle", ["relative", "absolute"])
@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("link_model", ABA_MODELS)  # the matrix-method reference is shared with the tests above
def test_articulated_body_forward_dynamics_on_chains(link_model: str, n: int, angle: str) -> None:
    assert_aba_solves_equations(lambda: chain(n, link_model, angle=angle), seed=300 + n)


def test_articulated_body_refuses_dependent_joints() -> None:
    from rodgen.symbolic.recursive import forward_dynamics
    with pytest.raises(rodgen.DerivationError, match="one joint per coordinate"):
        forward_dynamics(chain(2, "point_masses"))


def test_articulated_body_operation_count_grows_linearly() -> None:
    """ABA is O(n): the count roughly doubles from n=10 to n=20 (n^2 would give 4)."""
    from rodgen.symbolic.recursive import forward_dynamics

    def count(n: int) -> int:
        fd = forward_dynamics(vl_chain(n))
        return int(sum(sp.count_ops(e) for _, e in fd.assignments) + sum(sp.count_ops(x) for x in fd.qdd))
    small, large = count(10), count(20)
    assert large / small < 2.5, f"ABA operation count grew by {large / small:.2f} from n=10 to n=20"


def test_coordinate_that_moves_no_mass_is_refused_as_by_the_matrix_method() -> None:
    """The recursion keeps structural zeros exact, so derive() can name the coordinate that moves nothing."""
    model = rodgen.Model(name="dangling")
    lk = model.link("a")
    lk.rigid("r", 1.0, rod=rodgen.Rod(mass=1.0))
    lk.variable("v", 0.5)
    with pytest.raises(rodgen.ModelError, match="coordinate 'l_v' .* moves no mass"):
        rodgen.derive(model, method="recursive")


def _inverse_evaluator(eqs: rodgen.Equations) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """f(q, qd, qdd, p) -> (Equations.inverse_dynamics(), M qdd + bias) (assignments evaluated in order)."""
    args = [*eqs.q, *eqs.qd, *eqs.qdd, *eqs.params]
    safe = {s: sp.Symbol(f"a{i}") for i, s in enumerate(args)}
    assigns = [(s, e.xreplace(safe)) for s, e in eqs.assignments + eqs.inverse_assignments]
    assert eqs.inverse is not None
    direct = eqs.M * sp.Matrix(eqs.qdd) + eqs.bias
    fn = sp.lambdify([safe[s] for s in args], [eqs.inverse_dynamics()[0].xreplace(safe), direct.xreplace(safe)],
                     modules="numpy", cse=lambda ex: (assigns, ex))

    def call(q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = fn(*q, *qd, *qdd, *p)
        return np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    return call


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_newton_euler_inverse_dynamics_equals_m_qdd_plus_bias(path: str) -> None:
    """Equations.inverse_dynamics() (Newton-Euler with accelerations and gravity, O(n), plus the rest of the
    bias) is M qdd + bias, M from the composite-body recursion and the bias from the velocity-only Newton-Euler
    pass, the composite gravity and the force elements (checked against the matrix and Lagrange methods
    above), at random states and accelerations."""
    rec, _ = derived(lambda: rodgen.load(path), "recursive")
    if rec.inverse is None:
        assert rec.couplings, "only coupled models go without the Newton-Euler inverse dynamics"
        pytest.skip("coupled coordinates: the code stage prints M qdd + bias")
    # the accelerations appear in the inverse dynamics' own assignments only
    assert not set(rec.qdd) & set().union(*(ex.free_symbols for _, ex in rec.assignments))
    inverse = _inverse_evaluator(rec)
    p = np.array([rec.param_values[s] for s in rec.params])
    rng = np.random.default_rng(4242)
    for _ in range(4):
        q, qd = random_state(rec, rng)
        qdd = rng.normal(size=rec.n)
        got, expected = inverse(q, qd, qdd, p)
        err = rel_err(got, expected)
        assert err < RTOL_METHODS, f"Newton-Euler inverse dynamics differs from M qdd + bias by {err:.2e}"
