"""Compiled functions against the symbolic Equations evaluated independently by sympy.lambdify.

Models: every example file and chains of n = 1..5 links of each link model,
derived by each fast method. States are random, from a seeded generator
(the seed is in every failure message).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy as sp

import rodgen
import rodgen.toolchain
from conftest import EXAMPLES
from rodgen.model.core import Joint, Model, PointMass, Rod, Spring
from rodgen.symbolic import available_methods

#: Both sides evaluate the same expressions in double precision; only the order
#: of operations differs (CSE, Cholesky against LAPACK), so they agree to a few ulps
#: times the condition of M.
RTOL_CROSS_BACKEND = 1e-12
#: Entries that are exactly zero on one side are compared absolutely, scaled by the largest entry.
ATOL_SCALE = 1e-12
#: inverse_dynamics(forward_dynamics(u)) = B u in double precision, up to the condition of M.
RTOL_ROUND_TRIP = 1e-10

FAST_METHODS = [m for m in available_methods() if m != "lagrange"]
EXAMPLE_FILES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))
CHAIN_KINDS = ("rigid", "variable", "telescopic")


def chain(n: int, kind: str) -> Model:
    """A chain of n links: rigid rods on relative angles with joint dampers, variable-length
    links with end masses, springs and dampers, or telescopic links, on absolute angles."""
    m = Model(f"chain_{kind}_{n}")
    m.gravity = (0.0, "-g")
    m.parameter("g", 9.81)
    m.parameter("k", 40.0)
    m.parameter("c", 0.3)
    for i in range(n):
        mi, li = m.parameter(f"m{i}", 1.0 + 0.15 * i), m.parameter(f"L{i}", 0.5 + 0.05 * i)
        parent = None if i == 0 else f"a{i - 1}"
        if kind == "rigid":
            lk = m.link(f"a{i}", parent=parent, angle="relative", joint=Joint(damping="c"))
            lk.rigid(f"s{i}", li, rod=Rod(mass=mi))
        elif kind == "variable":
            lk = m.link(f"a{i}", parent=parent, angle="absolute")
            lk.rigid(f"r{i}", li, rod=Rod(mass=mi))
            lk.variable(f"v{i}", li, masses=[PointMass(f"0.5*{mi}", fraction=1.0)],
                        spring=Spring("k", rest=li), damping="c")
        else:
            lk = m.link(f"a{i}", parent=parent, angle="absolute")
            lk.telescopic(f"t{i}", length=li, outer_length=f"0.6*{li}", outer_mass=mi,
                          inner_length=f"0.6*{li}", inner_mass=f"0.5*{mi}")
    return m


def model_of(ident: str) -> Model:
    if ident.startswith("chain_"):
        _, kind, n = ident.split("_")
        return chain(int(n), kind)
    return rodgen.load(EXAMPLES / f"{ident}.yaml")


CASES = [(ex, meth) for ex in EXAMPLE_FILES for meth in FAST_METHODS] + \
        [(f"chain_{kind}_{n}", "matrix") for kind in CHAIN_KINDS for n in range(1, 6)] + \
        [(f"chain_{kind}_{n}", meth) for kind in CHAIN_KINDS for n in (1, 3, 5)
         for meth in FAST_METHODS if meth != "matrix"]


class Reference:
    """The Equations of a model as numpy functions (sympy.lambdify), independent of the code stage.

    Intermediate assignments (recursive method) are evaluated one by one in
    their order by SymPy itself (``xreplace`` with numbers), then the
    matrices from them by lambdify; nothing is expanded.
    """

    def __init__(self, eqs: rodgen.Equations) -> None:
        e = eqs
        self.n, self.m = len(e.q), len(e.u)
        base = list(e.q) + list(e.qd) + list(e.u) + list(e.params)
        self.nbase = len(base)
        syms = base + [s for s, _ in e.assignments]

        def fn(expr: Any) -> Any:
            return sp.lambdify(syms, expr, modules="numpy", cse=False)

        self.assign = list(e.assignments)
        self.base = base
        self.M = fn(e.M)
        self.bias = fn(e.bias)
        self.G = fn(e.G)
        self.B = fn(e.B) if self.m else (lambda *a: np.zeros((self.n, 0)))
        self.T = fn(e.T)
        self.V = fn(e.V)
        self.points = {nm: fn(v) for nm, v in e.points.items()}

    def call(self, f: Any, q: np.ndarray, qd: np.ndarray, u: np.ndarray, p: np.ndarray) -> np.ndarray:
        vals = [float(v) for v in (*q, *qd, *u, *p)]
        env: dict[sp.Basic, sp.Basic] = {s: sp.Float(v, 17) for s, v in zip(self.base, vals)}
        for sym, ex in self.assign:
            env[sym] = sp.Float(float(ex.xreplace(env)), 17)
            vals.append(float(env[sym]))
        return np.array(f(*vals), dtype=float)


@lru_cache(maxsize=None)
def _compiled(ident: str, method: str, build_dir: str) -> tuple[Any, Reference]:
    model = model_of(ident)
    eqs = rodgen.derive(model, method=method)
    sys_ = rodgen.build(eqs, build_dir=build_dir)
    return sys_, Reference(eqs)


@pytest.fixture(params=CASES, ids=[f"{a}-{b}" for a, b in CASES])
def case(request: pytest.FixtureRequest, build_dir: Path) -> tuple[Any, Reference, str]:
    ident, method = request.param
    sys_, ref = _compiled(ident, method, str(build_dir))
    return sys_, ref, f"{ident}/{method}"


def random_state(rng: np.random.Generator, sys_: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random state near the model's initial state (lengths stay positive), inputs and parameters."""
    q0 = sys_.initial_state()[: sys_.nq]
    q = q0 + rng.uniform(-0.3, 0.3, sys_.nq)
    qd = rng.normal(0.0, 1.0, sys_.nq)
    u = rng.normal(0.0, 2.0, sys_.nu)
    p = np.array(list(sys_.parameters.values())) * rng.uniform(0.8, 1.25, sys_.np)
    return q, qd, u, p


def close(got: np.ndarray, want: np.ndarray, rtol: float, msg: str) -> None:
    want = np.asarray(want, dtype=float).reshape(np.shape(got))
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=ATOL_SCALE * scale, err_msg=msg)


SEEDS = (0, 1, 2)


@pytest.mark.parametrize("seed", SEEDS)
def test_terms_match_lambdify(case: tuple[Any, Reference, str], seed: int) -> None:
    sys_, ref, name = case
    rng = np.random.default_rng(seed)
    q, qd, u, p = random_state(rng, sys_)
    msg = f"{name}, seed={seed}"
    close(sys_.mass_matrix(q, p), ref.call(ref.M, q, qd, u, p), RTOL_CROSS_BACKEND, "M " + msg)
    close(sys_.bias(q, qd, p), ref.call(ref.bias, q, qd, u, p), RTOL_CROSS_BACKEND, "bias " + msg)
    close(sys_.gravity(q, p), ref.call(ref.G, q, qd, u, p), RTOL_CROSS_BACKEND, "G " + msg)
    close(sys_.input_map(q, p), ref.call(ref.B, q, qd, u, p), RTOL_CROSS_BACKEND, "B " + msg)
    T, V = sys_.energy(q, qd, p)
    close(np.array([T, V]), [ref.call(ref.T, q, qd, u, p), ref.call(ref.V, q, qd, u, p)],
          RTOL_CROSS_BACKEND, "energy " + msg)
    pts = sys_.points(q, p)
    assert list(pts) == list(ref.points)
    for nm, f in ref.points.items():
        close(pts[nm], ref.call(f, q, qd, u, p), RTOL_CROSS_BACKEND, f"point {nm} " + msg)


@pytest.mark.parametrize("seed", SEEDS)
def test_dynamics_match_lambdify(case: tuple[Any, Reference, str], seed: int) -> None:
    sys_, ref, name = case
    rng = np.random.default_rng(seed)
    q, qd, u, p = random_state(rng, sys_)
    msg = f"{name}, seed={seed}"
    M = ref.call(ref.M, q, qd, u, p)
    Bu = ref.call(ref.B, q, qd, u, p).reshape(sys_.nq, sys_.nu) @ u
    h = ref.call(ref.bias, q, qd, u, p).reshape(-1)
    want = np.linalg.solve(M, Bu - h)
    # forward dynamics goes through a factorisation on both sides: allow for the condition of M
    rtol = RTOL_CROSS_BACKEND * max(1.0, np.linalg.cond(M))
    qdd = sys_.forward_dynamics(q, qd, u, p)
    close(qdd, want, rtol, "forward_dynamics " + msg)
    qdd_ref = rng.normal(0.0, 1.0, sys_.nq)
    close(sys_.inverse_dynamics(q, qd, qdd_ref, p), M @ qdd_ref + h, RTOL_CROSS_BACKEND, "inverse_dynamics " + msg)
    close(sys_.rhs(0.0, np.concatenate([q, qd]), u, p), np.concatenate([qd, want]), rtol, "rhs " + msg)


@pytest.mark.parametrize("seed", SEEDS)
def test_inverse_of_forward_is_input_forces(case: tuple[Any, Reference, str], seed: int) -> None:
    sys_, ref, name = case
    rng = np.random.default_rng(seed)
    q, qd, u, p = random_state(rng, sys_)
    qdd = sys_.forward_dynamics(q, qd, u, p)
    Q = sys_.inverse_dynamics(q, qd, qdd, p)
    Bu = sys_.input_map(q, p) @ u
    scale = max(1.0, float(np.max(np.abs(sys_.bias(q, qd, p)))), float(np.max(np.abs(Bu), initial=0.0)))
    np.testing.assert_allclose(Q, Bu, rtol=RTOL_ROUND_TRIP, atol=RTOL_ROUND_TRIP * scale,
                               err_msg=f"{name}, seed={seed}")


def test_batch_equals_single_states(case: tuple[Any, Reference, str]) -> None:
    sys_, _, name = case
    seed = 7
    rng = np.random.default_rng(seed)
    states = [random_state(rng, sys_) for _ in range(4)]
    Q = np.array([s[0] for s in states])
    QD = np.array([s[1] for s in states])
    U = np.array([s[2] for s in states])
    P = np.array([s[3] for s in states])
    qdd = sys_.forward_dynamics(Q, QD, U, P)
    M = sys_.mass_matrix(Q, P)
    T, V = sys_.energy(Q, QD, P)
    for i, (q, qd, u, p) in enumerate(states):
        msg = f"{name}, seed={seed}, row {i}"
        np.testing.assert_array_equal(qdd[i], sys_.forward_dynamics(q, qd, u, p), err_msg=msg)
        np.testing.assert_array_equal(M[i], sys_.mass_matrix(q, p), err_msg=msg)
        assert (T[i], V[i]) == sys_.energy(q, qd, p), msg
    # one parameter row is used for every state
    qdd_default = sys_.forward_dynamics(Q, QD, U)
    for i in range(len(states)):
        np.testing.assert_array_equal(qdd_default[i], sys_.forward_dynamics(Q[i], QD[i], U[i]))
