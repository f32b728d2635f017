"""vl_chain(n) against an independent Pinocchio model of the same chain.

Pinocchio's model is built by hand from the definition of ``vl_chain`` (see
rodgen.examples): per link a revolute joint about z followed by a prismatic
joint along the link's x axis, a body of mass 1.0 + 0.1 i and rotational
inertia 0.01 at the prismatic joint's frame (the link end P_i), the next
link's revolute joint at P_i, gravity 9.81 along -y. Its articulated-body
algorithm (``pin.aba``) gives qdd; rodgen's recursive equations are solved
numerically (``numpy.linalg.solve``), and the compiled model when the build
stage is present.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_recursive import evaluator

import rodgen
from rodgen.examples import vl_chain

pin = pytest.importorskip("pinocchio")

#: the two sides are independent double-precision computations of the same qdd; M is well conditioned
RTOL_QDD = 1e-10
G = 9.81


def pinocchio_chain(n: int) -> "pin.Model":
    model = pin.Model()
    model.gravity.linear = np.array([0.0, -G, 0.0])
    parent = 0
    for i in range(1, n + 1):
        rev = model.addJoint(parent, pin.JointModelRZ(), pin.SE3.Identity(), f"th{i}")
        pri = model.addJoint(rev, pin.JointModelPX(), pin.SE3.Identity(), f"l{i}")
        inertia = pin.Inertia(1.0 + 0.1 * i, np.zeros(3), np.diag([0.01, 0.01, 0.01]))
        model.appendBodyToJoint(pri, inertia, pin.SE3.Identity())
        parent = pri
    return model


def random_state(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = np.empty(2 * n)
    q[0::2] = rng.uniform(-np.pi, np.pi, n)
    q[1::2] = rng.uniform(0.3, 1.5, n)
    return q, rng.normal(size=2 * n), rng.normal(size=2 * n) * 5.0


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(a).max(), np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("n", list(range(1, 13)))
def test_symbolic_qdd_matches_pinocchio_aba(n: int) -> None:
    eqs = rodgen.derive(vl_chain(n), method="recursive")
    f = evaluator(eqs)
    p = np.array([eqs.param_values[s] for s in eqs.params])
    pm = pinocchio_chain(n)
    data = pm.createData()
    seed = 4200 + n
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, qd, u = random_state(n, rng)
        val = f(q, qd, p)
        bias = (val["h"] + val["G"] + val["K"] + val["D"]).ravel()
        qdd = np.linalg.solve(val["M"], val["B"] @ u - bias)
        expected = pin.aba(pm, data, q, qd, u)     # vl_chain's inputs act directly on its coordinates
        err = rel_err(qdd, expected)
        assert err < RTOL_QDD, f"n={n}: qdd differs from pin.aba by {err:.2e} (seed {seed}, q={q.tolist()})"
        # the mass matrices too (CRBA fills the upper triangle only)
        Mp = pin.crba(pm, data, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert rel_err(val["M"], Mp) < RTOL_QDD, f"n={n}: M differs from pin.crba (seed {seed})"


@pytest.mark.parametrize("n", [1, 2, 5, 12])
def test_articulated_body_qdd_matches_pinocchio_aba(n: int) -> None:
    from test_recursive import aba_evaluator

    from rodgen.symbolic.recursive import forward_dynamics
    fd = forward_dynamics(vl_chain(n))
    f = aba_evaluator(fd)
    p = np.array([fd.param_values[s] for s in fd.params])
    pm = pinocchio_chain(n)
    data = pm.createData()
    seed = 6100 + n
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, qd, u = random_state(n, rng)
        err = rel_err(f(q, qd, u, p), pin.aba(pm, data, q, qd, u))
        assert err < RTOL_QDD, f"n={n}: ABA qdd differs from pin.aba by {err:.2e} (seed {seed})"


def _compiled(n: int, forward: str = "auto") -> object:
    try:
        import rodgen.toolchain as stage
        from rodgen.codegen import CodegenOptions
        build = stage.build
    except (ImportError, AttributeError) as exc:
        pytest.skip(f"the build stage is not available ({exc})")
    return build(vl_chain(n), codegen=CodegenOptions(forward=forward))


@pytest.mark.parametrize("n", [1, 2, 5, 12])
def test_compiled_forward_dynamics_matches_pinocchio_aba(n: int) -> None:
    """Both generated algorithms (articulated-body, the default here, and mass matrix + Cholesky) against
    pin.aba, one state at a time (the runtime's one-state path) and as a batch (the batch kernel)."""
    aba, chol = _compiled(n, "aba"), _compiled(n, "cholesky")
    assert aba.forward == "aba" and chol.forward == "cholesky"  # type: ignore[attr-defined]
    pm = pinocchio_chain(n)
    data = pm.createData()
    seed = 5300 + n
    rng = np.random.default_rng(seed)
    states = [random_state(n, rng) for _ in range(3)]
    expected = np.array([pin.aba(pm, data, q, qd, u) for q, qd, u in states])
    Q, QD, U = (np.array([s[k] for s in states]) for k in range(3))
    for sysm in (aba, chol):
        kind = sysm.forward  # type: ignore[attr-defined]
        for (q, qd, u), want in zip(states, expected):
            qdd = np.asarray(sysm.forward_dynamics(q, qd, u))  # type: ignore[attr-defined]
            err = rel_err(qdd, want)
            assert err < RTOL_QDD, f"n={n} ({kind}): compiled qdd differs from pin.aba by {err:.2e} (seed {seed})"
            dy = np.asarray(sysm.rhs(0.0, np.concatenate([q, qd]), u))  # type: ignore[attr-defined]
            assert rel_err(dy[2 * n:], want) < RTOL_QDD, f"n={n} ({kind}): rhs differs from pin.aba (seed {seed})"
        batch = np.asarray(sysm.forward_dynamics(Q, QD, U))  # type: ignore[attr-defined]
        err = rel_err(batch, expected)
        assert err < RTOL_QDD, f"n={n} ({kind}): batch qdd differs from pin.aba by {err:.2e} (seed {seed})"
    for q, qd, u in states:
        a = aba.forward_dynamics(q, qd, u)  # type: ignore[attr-defined]
        c = chol.forward_dynamics(q, qd, u)  # type: ignore[attr-defined]
        assert rel_err(a, c) < RTOL_QDD, f"n={n}: the articulated-body and Cholesky paths differ (seed {seed})"
