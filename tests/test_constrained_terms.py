"""The fast constrained dynamics (the generated ``<prefix>_constrained_terms`` and, every row held,
``<prefix>_constrained_solve``) against an independent reference.

The reference is tests/_constrained.py: the equations derived by Lagrange's method (not the recursive
method the compiled models are generated from), lambdified by SymPy, and the KKT system solved by
NumPy. The compiled models are built twice: by default (``constrained_terms``: M factorised as
straight-line code, no factorisation at run time) and with ``CodegenOptions(constrained_terms=False)``
(the separate routines and a dense Cholesky factorisation of M at run time).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _constrained import ConstrainedNumeric, kkt_solve

import rodgen
from rodgen.codegen import CodegenOptions
from rodgen.errors import CodegenError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _models(build_dir: Path, name: str):  # type: ignore[no-untyped-def]
    model = rodgen.load(EXAMPLES / name)
    fast = rodgen.build(model, build_dir=build_dir)
    dense = rodgen.build(model, build_dir=build_dir, codegen=CodegenOptions(constrained_terms=False))
    return fast, dense, ConstrainedNumeric(rodgen.derive(model, method="lagrange"))


@pytest.fixture(scope="module")
def walk(build_dir: Path):  # type: ignore[no-untyped-def]
    return _models(build_dir, "exo5_walk.yaml")


@pytest.fixture(scope="module")
def fourbar(build_dir: Path):  # type: ignore[no-untyped-def]
    return _models(build_dir, "fourbar.yaml")


def reference(ref: ConstrainedNumeric, q, qd, u, active, alpha=0.0, beta=0.0, target=None):  # type: ignore[no-untyped-def]
    """qdd and lambda (every row, 0 for inactive ones) of the KKT system with Baumgarte's terms:
    J qdd = -Jdot qd - 2 alpha J qd - beta^2 (c - target); target: a contact's tangential row holds where
    it is, every other row 0."""
    M, h = ref.mass_matrix(q), ref.bias(q, qd)
    Bu = ref.input_map(q) @ u if ref.nu else np.zeros(ref.nq)
    rows = ref.rows(active)
    J, c = ref.constraint_jacobian(q), ref.constraint_position(q)
    if target is None:
        target = np.zeros(ref.nrows)
        for b in ref.constraints:
            if b.kind == "contact":
                target[b.row] = c[b.row]
    rhs = ref.constraint_bias(q, qd) + 2 * alpha * J @ qd + beta ** 2 * (c - target)
    qdd, lam_rows = kkt_solve(M, h, Bu, J[rows], rhs[rows])
    lam = np.zeros(ref.nrows)
    lam[rows] = lam_rows
    return qdd, lam


def _states(sys, seed: int, n: int = 4):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    q0 = sys.initial_state()[:sys.nq]
    for _ in range(n):
        yield (q0 + 0.1 * rng.normal(size=sys.nq), rng.normal(size=sys.nq),
               rng.normal(size=len(sys.inputs)) * 5.0)


def _close(a: np.ndarray, b: np.ndarray, rtol: float) -> None:
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("active", [("foot_a", "foot_b"), ("foot_a",), ("foot_b",), ()])
def test_walker_matches_the_kkt_reference(walk, active) -> None:  # type: ignore[no-untyped-def]
    fast, dense, ref = walk
    routines = fast._m.info()["routines"]
    assert routines["constrained_terms"] and routines["constrained_solve"]
    assert not dense._m.info()["routines"]["constrained_terms"] and not dense._m.info()["routines"]["constrained_solve"]
    for q, qd, u in _states(fast, seed=len(active)):
        want_qdd, want_lam = reference(ref, q, qd, u, active)
        qdd, lam = fast.constrained_dynamics(q, qd, u, active=list(active))
        _close(qdd, want_qdd, 1e-9)
        _close(lam, want_lam, 1e-9)
        # the dense path (M and a Cholesky factorisation at run time) gives the same numbers
        qdd2, lam2 = dense.constrained_dynamics(q, qd, u, active=list(active))
        _close(qdd, qdd2, 1e-11)
        _close(lam, lam2, 1e-11)
        # the held rows are held: J qdd + Jdot qd = 0
        rows = ref.rows(active)
        if rows:
            acc = ref.constraint_jacobian(q)[rows] @ qdd + ref.constraint_bias(q, qd)[rows]
            np.testing.assert_allclose(acc, 0.0, atol=1e-9 * max(1.0, float(np.max(np.abs(qdd)))))


def test_walker_drift_control_matches_the_reference(walk) -> None:  # type: ignore[no-untyped-def]
    """Baumgarte's terms (alpha, beta) at states where the feet are off their targets."""
    fast, _, ref = walk
    for q, qd, u in _states(fast, seed=7, n=3):
        for active in (("foot_a", "foot_b"), ("foot_b",)):
            want_qdd, want_lam = reference(ref, q, qd, u, active, alpha=10.0, beta=7.0)
            qdd, lam = fast.constrained_dynamics(q, qd, u, active=list(active), alpha=10.0, beta=7.0)
            _close(qdd, want_qdd, 1e-9)
            _close(lam, want_lam, 1e-9)


def test_walker_sliding_foot_matches_the_dense_path(walk) -> None:  # type: ignore[no-untyped-def]
    """A sliding contact (Coulomb force along the ground): the non-symmetric system, fast and dense."""
    fast, dense, _ = walk
    for q, qd, u in _states(fast, seed=11, n=3):
        for mode in ("slide_plus", "slide_minus"):
            active = {"foot_a": mode, "foot_b": "stick"}
            qdd, lam = fast.constrained_dynamics(q, qd, u, active=active)
            qdd2, lam2 = dense.constrained_dynamics(q, qd, u, active=active)
            _close(qdd, qdd2, 1e-11)
            _close(lam, lam2, 1e-11)
            assert lam[0] == pytest.approx((1.0 if mode == "slide_plus" else -1.0) * lam[1], rel=1e-12)


def test_fourbar_loop_matches_the_kkt_reference(fourbar) -> None:  # type: ignore[no-untyped-def]
    fast, dense, ref = fourbar
    assert fast._m.info()["routines"]["constrained_terms"]
    q = fast.initial_state()[:fast.nq]
    rng = np.random.default_rng(5)
    for _ in range(4):
        # velocities along the loop: qd in the null space of J
        J = ref.constraint_jacobian(q)
        qd = (np.eye(fast.nq) - np.linalg.pinv(J) @ J) @ rng.normal(size=fast.nq)
        u = rng.normal(size=len(fast.inputs))
        want_qdd, want_lam = reference(ref, q, qd, u, [b.name for b in ref.constraints])  # the loop
        qdd, lam = fast.constrained_dynamics(q, qd, u)   # a loop is always held
        _close(qdd, want_qdd, 1e-9)
        _close(lam, want_lam, 1e-9)
        qdd2, lam2 = dense.constrained_dynamics(q, qd, u)
        _close(qdd, qdd2, 1e-11)
        q = q + 1e-3 * qd


def test_constrained_terms_outputs(walk) -> None:  # type: ignore[no-untyped-def]
    """The routine's outputs against NumPy on the reference's M, bias, J: the pivots multiply to det M,
    qdd0 = M^-1 (B u - bias), A = M^-1 J^T, S = J M^-1 J^T, v = J qd, a0 = J qdd0 + Jdot qd."""
    fast, _, ref = walk
    nq, nr = fast.nq, fast.nrows
    for q, qd, u in _states(fast, seed=3, n=2):
        p = np.asarray(fast.parameter_vector(), float)
        out = {k: np.zeros((1, w)) for k, w in (("d", nq), ("qdd0", nq), ("J", nr * nq), ("c", nr), ("v", nr),
                                                 ("a0", nr), ("A", nr * nq), ("S", nr * nr))}
        fast._m.constrained_terms(1, np.zeros(1), q[None], qd[None], u[None], p[None], *out.values())
        M, h, B = ref.mass_matrix(q), ref.bias(q, qd), ref.input_map(q)
        J, Jb = ref.constraint_jacobian(q), ref.constraint_bias(q, qd)
        qdd0 = np.linalg.solve(M, B @ u - h)
        A = np.linalg.solve(M, J.T).T
        assert np.all(out["d"] > 0)
        assert np.prod(out["d"]) == pytest.approx(np.linalg.det(M), rel=1e-10)
        _close(out["qdd0"][0], qdd0, 1e-10)
        _close(out["J"][0].reshape(nr, nq), J, 1e-12)
        _close(out["c"][0], ref.constraint_position(q), 1e-12)
        _close(out["v"][0], J @ qd, 1e-12)
        _close(out["a0"][0], J @ qdd0 + Jb, 1e-10)
        _close(out["A"][0].reshape(nr, nq), A, 1e-10)
        _close(out["S"][0].reshape(nr, nr), J @ A.T, 1e-10)


def test_constrained_solve_outputs(walk) -> None:  # type: ignore[no-untyped-def]
    """The routine against NumPy's KKT solve on the reference's M, bias, J, for each set of held rows
    (both feet, one, none) with gains and targets that differ row by row: the pivots of M multiply to
    det M, those of the rows held to det S (S = J M^-1 J^T of those rows; a row not held has pivot 1 and
    lambda exactly 0), s ends with the diagonal of J M^-1 J^T (rows held; 0 in the others), and qdd, lambda
    solve M qdd + bias = B u + J^T lambda, J qdd = -Jdot qd - k_v J qd - k_p (c - target) on the rows held."""
    fast, _, ref = walk
    nq, nr = fast.nq, fast.nrows
    rng = np.random.default_rng(9)
    for q, qd, u in _states(fast, seed=13, n=2):
        p = np.asarray(fast.parameter_vector(), float)
        M, h, B = ref.mass_matrix(q), ref.bias(q, qd), ref.input_map(q)
        J, Jb, c = ref.constraint_jacobian(q), ref.constraint_bias(q, qd), ref.constraint_position(q)
        for active in (("foot_a", "foot_b"), ("foot_a",), ("foot_b",), ()):
            rows = ref.rows(active)
            held = np.isin(np.arange(nr), rows).astype(float)
            gains = rng.uniform(0.0, 50.0, size=(nr, 2))
            k = np.column_stack([held, 1.0 - held, gains]).reshape(-1)
            target = rng.normal(size=nr) * 0.01
            out = {name: np.zeros((1, w)) for name, w in (("d", nq), ("qdd", nq), ("lam", nr), ("s", 2 * nr),
                                                          ("f", (2 * nq) ** 2))}
            fast._m.constrained_solve(1, np.zeros(1), q[None], qd[None], u[None], p[None], k[None], target[None],
                                      *out.values())
            S = J @ np.linalg.solve(M, J.T)
            assert np.all(out["d"] > 0)
            assert np.prod(out["d"]) == pytest.approx(np.linalg.det(M), rel=1e-10)
            piv = out["s"][0, :nr]
            assert np.all(piv[held == 0] == 1.0) and np.all(piv[held == 1] > 0)
            if rows:
                assert np.prod(piv) == pytest.approx(np.linalg.det(S[np.ix_(rows, rows)]), rel=1e-9)
            _close(out["s"][0, nr:], held * np.diag(S), 1e-10)
            assert np.all(out["s"][0, nr:][held == 0] == 0.0)
            rhs = Jb + gains[:, 0] * (J @ qd) + gains[:, 1] * (c - target)
            want_qdd, want_lam = kkt_solve(M, h, B @ u, J[rows], rhs[rows])
            _close(out["qdd"][0], want_qdd, 1e-9)
            lam = out["lam"][0]
            assert np.all(lam[held == 0] == 0.0)
            if rows:
                _close(lam[rows], want_lam, 1e-9)


def test_dependent_rows_get_the_least_norm_forces(build_dir: Path) -> None:
    """The compass gait with both feet at one point: four rows of rank three. The motion is unique, the forces
    are the least-norm ones: both equal numpy's lstsq of the whole KKT system."""
    sys = rodgen.build(rodgen.load(EXAMPLES / "compass_gait.yaml"), build_dir=build_dir)
    assert sys._m.info()["routines"]["constrained_terms"]
    q = np.array(sys.initial_state()[:sys.nq], float)
    q[3] = q[2]   # the legs on top of each other
    qd, u, p = np.zeros(sys.nq), np.zeros(len(sys.inputs)), None
    qdd, lam = sys.constrained_dynamics(q, qd, u, active=["foot_a", "foot_b"])
    Mq, h = sys.mass_matrix(q, p), sys.bias(q, qd, p)
    J, b = sys.constraint_jacobian(q, p), sys.constraint_bias(q, qd, p)
    assert J.shape == (4, 4) and np.linalg.matrix_rank(J) == 3
    K = np.block([[Mq, -J.T], [J, np.zeros((4, 4))]])
    x = np.linalg.lstsq(K, np.r_[-h, -b], rcond=1e-12)[0]
    np.testing.assert_allclose(qdd, x[:4], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(lam, x[4:], rtol=1e-9, atol=1e-9)
    qdd, _ = sys.constrained_dynamics(q, qd, u, active=["foot_a"])
    assert np.all(np.isfinite(qdd))


def test_hybrid_run_is_the_same_on_both_paths(walk) -> None:  # type: ignore[no-untyped-def]
    """Half a second of double support (no events but the settle), both paths."""
    fast, dense, _ = walk
    y0 = np.asarray(fast.initial_state(), float)
    kw = dict(contacts=["foot_a", "foot_b"], on_slip="continue")
    a = fast.simulate(y0, 0.5, 1e-3, **kw)
    b = dense.simulate(y0, 0.5, 1e-3, **kw)
    assert a.status == b.status and len(a.t) == len(b.t)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.qd, b.qd, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.lam, b.lam, rtol=1e-9, atol=1e-9)


def test_option_is_checked() -> None:
    with pytest.raises(CodegenError, match="constrained_terms"):
        CodegenOptions(constrained_terms="yes")  # type: ignore[arg-type]
    assert CodegenOptions().wants_constrained_terms(11)
    assert not CodegenOptions(constrained_terms=False).wants_constrained_terms(11)


def test_compass_gait_takes_every_heel_strike_on_both_paths(build_dir: Path) -> None:
    """Ten seconds of the passive compass gait from Goswami's published gait (4 digits), as
    benchmarks/bench_walk.py runs it: every located touchdown is applied (the event functions and the
    jump test the same rows), and both paths walk the same 13 steps to the same state."""
    import sys
    sys.path.insert(0, str(EXAMPLES))
    import compass_gait as cg  # examples/compass_gait.py: the walker's section state and options
    model = rodgen.load(EXAMPLES / "compass_gait.yaml")
    runs = []
    for opt in (CodegenOptions(), CodegenOptions(constrained_terms=False)):
        robot = rodgen.build(model, build_dir=build_dir, codegen=opt)
        y0 = cg.state(robot, np.array([0.2187, -1.0918, -0.3772]))
        res = robot.simulate(y0, 10.0, 1e-3, contacts=["foot_a"], disarmed=["foot_b"], arm_gap=cg.ARM_GAP)
        assert res.message == "reached t_end = 10", res.message
        td = [e for e in res.events if e["kind"] == "touchdown"]
        assert len(td) == 13
        assert np.all(np.diff([e["t"] for e in td]) > 0.7)
        runs.append(res)
    np.testing.assert_allclose(runs[0].q[-1], runs[1].q[-1], atol=1e-7)
