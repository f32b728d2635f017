"""The solve per contact mode of ``<prefix>_constrained_solve`` (a static routine for each block held alone,
chosen by the ``k`` mask) against the masked solve over every row and against
NumPy's KKT solve on the equations derived by Lagrange's method (tests/_constrained.py).

The masked path is reached with the same held rows by a ``k`` the dispatch does not take: off = 1e-300 on
a held row instead of 0 (S'_rr = S_rr + 1e-300, the same number).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from _constrained import ConstrainedNumeric, kkt_solve

import rodgen
from rodgen.symbolic.constraints import MODE_BLOCKS_MAX

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def walk(build_dir: Path):  # type: ignore[no-untyped-def]
    model = rodgen.load(EXAMPLES / "exo5_walk.yaml")
    return rodgen.build(model, build_dir=build_dir), ConstrainedNumeric(rodgen.derive(model, method="lagrange"))


def _solve(sys, q, qd, u, k, target):  # type: ignore[no-untyped-def]
    nq, nr = sys.nq, sys.nrows
    out = {name: np.zeros((1, w)) for name, w in (("d", nq), ("qdd", nq), ("lam", nr), ("s", 2 * nr),
                                                  ("f", (2 * nq) ** 2))}
    p = np.asarray(sys.parameter_vector(), float)
    sys._m.constrained_solve(1, np.zeros(1), q[None], qd[None], u[None], p[None], k[None], target[None],
                             *out.values())
    return {name: v[0] for name, v in out.items()}


def test_modes_match_the_masked_solve_and_the_kkt_reference(walk) -> None:  # type: ignore[no-untyped-def]
    """Each mode (one foot, the other) and the masked path (both feet; one row of a foot)
    at random states with gains and targets that differ row by row: qdd, lambda, the pivots and the
    diagonal of J M^-1 J^T (rows held; 0 in the others) equal the masked solve's, and qdd, lambda solve the
    KKT system."""
    sys, ref = walk
    nq, nr = sys.nq, sys.nrows
    rng = np.random.default_rng(21)
    q0 = sys.initial_state()[:nq]
    for _ in range(3):
        q, qd, u = q0 + 0.1 * rng.normal(size=nq), rng.normal(size=nq), rng.normal(size=len(sys.inputs)) * 5.0
        M, h, B = ref.mass_matrix(q), ref.bias(q, qd), ref.input_map(q)
        J, Jb, c = ref.constraint_jacobian(q), ref.constraint_bias(q, qd), ref.constraint_position(q)
        S = J @ np.linalg.solve(M, J.T)
        for rows in (ref.rows(("foot_a",)), ref.rows(("foot_b",)), ref.rows(("foot_a", "foot_b")),
                     ref.rows(("foot_a",))[:1]):
            held = np.isin(np.arange(nr), rows).astype(float)
            gains = rng.uniform(0.0, 50.0, size=(nr, 2))
            k = np.column_stack([held, 1.0 - held, gains]).reshape(-1)
            target = rng.normal(size=nr) * 0.01
            got = _solve(sys, q, qd, u, k, target)
            nudged = k.copy()
            nudged[4 * np.asarray(rows) + 1] = 1e-300
            masked = _solve(sys, q, qd, u, nudged, target)
            for name in ("d", "qdd", "lam", "s"):
                np.testing.assert_allclose(got[name], masked[name], rtol=1e-12, atol=1e-12 * np.abs(masked[name]).max())
            assert np.all(got["lam"][held == 0] == 0.0) and np.all(got["s"][:nr][held == 0] == 1.0)
            np.testing.assert_allclose(got["s"][nr:], held * np.diag(S), rtol=1e-10)
            assert np.all(got["s"][nr:][held == 0] == 0.0)
            rhs = Jb + gains[:, 0] * (J @ qd) + gains[:, 1] * (c - target)
            want_qdd, want_lam = kkt_solve(M, h, B @ u, J[rows], rhs[rows])
            np.testing.assert_allclose(got["qdd"], want_qdd, rtol=1e-9, atol=1e-9 * np.abs(want_qdd).max())
            np.testing.assert_allclose(got["lam"][rows], want_lam, rtol=1e-9, atol=1e-9 * np.abs(want_lam).max())


def test_the_modes_drop_the_rows_not_held() -> None:
    """The symbolic stage specialises each block of a 2-block model held alone; in a single-foot
    mode the other foot's forces and diagonal of J M^-1 J^T are 0, the solve needs fewer assignments than the
    masked one and none of the other foot's forward substitutions."""
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "exo5_walk.yaml"))
    assert 2 <= len(eqs.constraints) <= MODE_BLOCKS_MAX
    cs, modes = eqs.constrained_solve_modes()
    assert [held for held, _ in modes] == [(0,), (1,)]
    nr = [c.nrows for c in eqs.constraints]
    for held, solve in modes:
        other = range(nr[0], sum(nr)) if held == (0,) else range(nr[0])
        assert all(solve.lam[r] == 0 for r in other)
        assert all(solve.s_pivots[r] == 1 for r in other) and all(solve.s_diag[r] == 0 for r in other)
        assert len(solve.assignments) < len(cs.assignments)
        on = {cs.gains[4 * r] for r in range(sum(nr))} | {cs.gains[4 * r + 1] for r in range(sum(nr))}
        assert not any(on & sp.sympify(ex).free_symbols for _, ex in solve.assignments)
        # what the outputs need: no forward substitution of the rows not held (symbols _cfd_j<r>_...)
        defs = {sym: sp.sympify(ex) for sym, ex in solve.assignments}
        need, todo = set(), [x for xs in (solve.pivots, solve.qdd, solve.lam, solve.s_pivots, solve.s_diag)
                             for ex in xs for x in sp.sympify(ex).free_symbols]
        while todo:
            x = todo.pop()
            if x not in need and x in defs:
                need.add(x)
                todo.extend(defs[x].free_symbols)
        assert not any(x.name.startswith(f"_cfd_j{r}_") for x in need for r in other)
        assert any(x.name.startswith(f"_cfd_j{r}_") for x in need for r in range(sum(nr)) if r not in other)


def test_the_input_response_is_the_change_of_a_second_solve(walk) -> None:  # type: ignore[no-untyped-def]
    """``<prefix>_constrained_response`` from the factors a ``constrained_solve`` call stored, for each mode
    (one foot, the other) and the masked path (both feet, one row, none): qdd and lambda of that call plus the
    response to du equal those of a second full solve at u + du (qdd and lambda are affine in u)."""
    sys, _ = walk
    nq, nr = sys.nq, sys.nrows
    assert "constrained_response" in sys.routines
    p = np.asarray(sys.parameter_vector(), float)
    rng = np.random.default_rng(8)
    q0 = sys.initial_state()[:nq]
    for rows in (range(0, 2), range(2, 4), range(0, 4), range(0, 1), range(0)):
        held = np.isin(np.arange(nr), list(rows)).astype(float)
        k = np.column_stack([held, 1.0 - held, rng.uniform(0.0, 50.0, size=(nr, 2))]).reshape(-1)
        target = rng.normal(size=nr) * 0.01
        q, qd = q0 + 0.1 * rng.normal(size=nq), rng.normal(size=nq)
        u, du = rng.normal(size=len(sys.inputs)) * 5.0, rng.normal(size=len(sys.inputs)) * 5.0
        first, second = _solve(sys, q, qd, u, k, target), _solve(sys, q, qd, u + du, k, target)
        dqdd, dlam = np.zeros((1, nq)), np.zeros((1, nr))
        sys._m.constrained_response(1, p[None], k[None], du[None], first["f"][None], dqdd, dlam)
        assert np.abs(second["qdd"] - first["qdd"]).max() > 1.0     # the inputs move the accelerations
        np.testing.assert_allclose(first["qdd"] + dqdd[0], second["qdd"], rtol=0,
                                   atol=1e-11 * np.abs(second["qdd"]).max())
        np.testing.assert_allclose(first["lam"] + dlam[0], second["lam"], rtol=0,
                                   atol=1e-11 * max(np.abs(second["lam"]).max(), 1.0))
        assert np.all(dlam[0][held == 0] == 0.0)
