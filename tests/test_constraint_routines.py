"""The code stage lowers constraint rows: position, Jacobian, bias J̇q̇ and friction, and the block table.

The constraint rows are made by hand here (a contact, a loop and a limit on a
double pendulum's tip and elbow), the generated C is compiled strictly into a
shared library and called through ctypes, and its numbers are compared with
the SymPy matrices (lambdify) and, independently of them, with finite
differences of the generated position routine. Coupled models: the reduction
projects the rows, checked against rows differentiated in the independent
coordinates directly.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy as sp

import rodgen
from conftest import EXAMPLES
from rodgen.codegen import generate, lower
from rodgen.errors import CodegenError
from rodgen.symbolic.coupling import reduce_couplings
from rodgen.symbolic.equations import ConstraintEquations, Equations
from rodgen.symbolic.matrix import derive_matrix

CC = shutil.which("gcc") or shutil.which("cc")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
#: generated C against lambdify of the same SymPy expressions: rounding only
RTOL_SAME = 1e-12
#: central differences with step 1e-5 (first derivative) and 1e-4 (second): truncation and rounding
TOL_FD_JAC = 1e-7
TOL_FD_BIAS = 1e-5

SLOPE, HEIGHT = 0.3, 0.1          # the ground of the contact
FIXED = (0.4, -1.2)               # the point the loop holds the tip to
LOWER = -1.0                      # the elbow limit


def rows_of(name: str, kind: str, position: sp.Matrix, q: list[sp.Symbol], qd: list[sp.Symbol],
            friction: Any = None) -> ConstraintEquations:
    """A block from its position rows: J = dc/dq, b = d(J qd)/dq qd."""
    J = position.jacobian(q)
    b = (J * sp.Matrix(qd)).jacobian(q) * sp.Matrix(qd)
    return ConstraintEquations(name, kind, position, J, b, friction)


def with_constraints(eqs: Equations) -> Equations:
    """The double pendulum's equations with a contact at the tip, a loop tip-to-point and an elbow limit."""
    tip = eqs.expanded().points["lower_rod.end"]
    s = sp.Float(SLOPE)
    t, nrm = sp.Matrix([sp.cos(s), sp.sin(s)]), sp.Matrix([-sp.sin(s), sp.cos(s)])
    contact = sp.Matrix([t.dot(tip), nrm.dot(tip) - HEIGHT * sp.cos(s)])
    loop = tip - sp.Matrix(FIXED)
    limit = sp.Matrix([eqs.q[1] - LOWER])
    m2 = eqs.params[2]
    eqs.constraints = [rows_of("foot", "contact", contact, eqs.q, eqs.qd, friction=m2 / 2),
                       rows_of("tip", "loop", loop, eqs.q, eqs.qd),
                       rows_of("elbow", "limit", limit, eqs.q, eqs.qd)]
    return eqs


def compile_shared(files: Any, folder: Path) -> ctypes.CDLL:
    files.write(folder)
    lib = folder / f"lib{files.spec.prefix}.so"
    cmd = [CC, *STRICT, "-O1", "-shared", "-fPIC", files.spec.source, "rodgen_linalg.c", "-o", str(lib), "-lm"]
    res = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return ctypes.CDLL(str(lib))


def call(lib: ctypes.CDLL, name: str, out_len: int, *args: np.ndarray) -> np.ndarray:
    out = np.zeros(out_len)
    ptr = ctypes.POINTER(ctypes.c_double)
    arrays = [np.ascontiguousarray(a, dtype=float) for a in args]
    getattr(lib, name)(*[a.ctypes.data_as(ptr) for a in arrays], out.ctypes.data_as(ptr))
    return out


def test_block_table_and_signatures() -> None:
    eqs = with_constraints(rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"), method="recursive"))
    spec = lower(eqs)
    assert (spec.nconstraints, spec.nrows) == (3, 5)
    assert [(b.name, b.kind, b.macro, b.code, b.row, b.nrows) for b in spec.constraints] == [
        ("foot", "contact", "RODGEN_CONTACT", 0, 0, 2), ("tip", "loop", "RODGEN_LOOP", 1, 2, 2),
        ("elbow", "limit", "RODGEN_LIMIT", 2, 4, 1)]
    sig = {r.name: (r.static, r.signature) for r in spec.routines if r.name.startswith("constraint_")}
    assert sig == {
        "constraint_position": (False, "const double *q, const double *p, double *c"),
        "constraint_jacobian": (False, "const double *q, const double *p, double *J"),
        "constraint_bias": (False, "const double *q, const double *qd, const double *p, double *b"),
        "constraint_friction": (False, "const double *p, double *mu"),
        # with the RHS Jacobian: the partials of the KKT system (docs/derivatives.md)
        "constraint_partials": (False, "double t, const double *q, const double *qd, const double *qdd, "
                                       "const double *u, const double *lam, const double *p, double *dg, double *dk"),
    }
    # a model without constraints gets none of them
    plain = lower(rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"), method="recursive"))
    assert plain.nconstraints == 0 and not [r for r in plain.routines if r.name.startswith("constraint_")]


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("method", ["recursive", "matrix"])
def test_generated_rows_match_sympy_and_finite_differences(tmp_path: Path, method: str) -> None:
    eqs = with_constraints(rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"), method=method))
    files = generate(eqs)
    lib = compile_shared(files, tmp_path)
    pre = files.spec.prefix
    n, nrows = len(eqs.q), files.spec.nrows
    ex = eqs.expanded()
    pos = sp.Matrix.vstack(*[c.position for c in ex.constraints])
    jac = sp.Matrix.vstack(*[c.jacobian for c in ex.constraints])
    bias = sp.Matrix.vstack(*[c.bias for c in ex.constraints])
    f_pos = sp.lambdify([eqs.q, eqs.params], pos, "numpy")
    f_jac = sp.lambdify([eqs.q, eqs.params], jac, "numpy")
    f_bias = sp.lambdify([eqs.q, eqs.qd, eqs.params], bias, "numpy")
    p = np.array([float(eqs.param_values[s]) for s in eqs.params])
    rng = np.random.default_rng(2024)
    for _ in range(5):
        q, qd = rng.uniform(-2, 2, n), rng.uniform(-3, 3, n)
        c = call(lib, f"{pre}_constraint_position", nrows, q, p)
        J = call(lib, f"{pre}_constraint_jacobian", nrows * n, q, p).reshape(nrows, n)
        b = call(lib, f"{pre}_constraint_bias", nrows, q, qd, p)
        np.testing.assert_allclose(c, np.asarray(f_pos(q, p), float).ravel(), rtol=RTOL_SAME, atol=1e-14)
        np.testing.assert_allclose(J, np.asarray(f_jac(q, p), float), rtol=RTOL_SAME, atol=1e-14)
        np.testing.assert_allclose(b, np.asarray(f_bias(q, qd, p), float).ravel(), rtol=RTOL_SAME, atol=1e-13)
        # independent of the SymPy rows: J = dc/dq and b = d2/dt2 c(q + qd t) at t = 0
        h = 1e-5
        fd_J = np.stack([(call(lib, f"{pre}_constraint_position", nrows, q + h * e, p)
                          - call(lib, f"{pre}_constraint_position", nrows, q - h * e, p)) / (2 * h)
                         for e in np.eye(n)], axis=1)
        np.testing.assert_allclose(J, fd_J, atol=TOL_FD_JAC)
        h = 1e-4
        fd_b = (call(lib, f"{pre}_constraint_position", nrows, q + h * qd, p) - 2 * c
                + call(lib, f"{pre}_constraint_position", nrows, q - h * qd, p)) / h ** 2
        np.testing.assert_allclose(b, fd_b, atol=TOL_FD_BIAS * max(1.0, np.abs(b).max()))
    # the rows mean what the contract says: the loop row is tip - fixed point, the limit q1 - lower
    q = rng.uniform(-2, 2, n)
    c = call(lib, f"{pre}_constraint_position", nrows, q, p)
    L1, L2 = p[3], p[4]
    tip = np.array([L1 * np.cos(q[0]) + L2 * np.cos(q[0] + q[1]), L1 * np.sin(q[0]) + L2 * np.sin(q[0] + q[1])])
    np.testing.assert_allclose(c[2:4], tip - np.array(FIXED), rtol=1e-14, atol=1e-14)
    assert c[4] == pytest.approx(q[1] - LOWER, abs=1e-15)
    tangent, normal = np.array([np.cos(SLOPE), np.sin(SLOPE)]), np.array([-np.sin(SLOPE), np.cos(SLOPE)])
    np.testing.assert_allclose(c[:2], [tangent @ tip, normal @ tip - HEIGHT * np.cos(SLOPE)], atol=1e-14)
    mu = call(lib, f"{pre}_constraint_friction", 3, p)
    np.testing.assert_array_equal(mu, [p[2] / 2, 0.0, 0.0])


def test_malformed_blocks_are_refused_with_their_name() -> None:
    eqs = with_constraints(rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"), method="matrix"))
    good = list(eqs.constraints)
    c = good[1]
    cases = [
        (ConstraintEquations("tip", "hinge", c.position, c.jacobian, c.bias), "kind 'hinge'"),
        (ConstraintEquations("tip", "limit", c.position, c.jacobian, c.bias), "a limit block has 1 row"),
        (ConstraintEquations("tip", "loop", c.position, c.jacobian[:, :1], c.bias), "jacobian has shape"),
        (ConstraintEquations("tip top", "loop", c.position, c.jacobian, c.bias), "not a valid name"),
        (ConstraintEquations("foot", "loop", c.position, c.jacobian, c.bias), "two constraint blocks"),
    ]
    for bad, message in cases:
        eqs.constraints = [good[0], bad]
        with pytest.raises(CodegenError, match=message):
            lower(eqs)
    eqs.constraints = [ConstraintEquations("tip", "loop", c.position + sp.Matrix(eqs.qd[:2]), c.jacobian, c.bias)]
    with pytest.raises(CodegenError, match="constraint_position"):
        lower(eqs)


def test_coupled_rows_are_projected_onto_the_independent_coordinates() -> None:
    """solar_panel couples th2 = -2 th1, th3 = 2 th1: rows in the full coordinates, reduced by the chain
    rule, equal rows differentiated in the independent coordinate directly."""
    model = rodgen.load(EXAMPLES / "solar_panel.yaml")
    full = derive_matrix(model.validate())
    tip_name = list(full.points)[-1]
    tip = full.points[tip_name]
    full.constraints = [rows_of("tip", "loop", tip - sp.Matrix([1.0, 0.5]), full.q, full.qd),
                        rows_of("stop", "limit", sp.Matrix([full.q[1] + 3]), full.q, full.qd)]
    reduced = reduce_couplings(full)
    assert len(reduced.q) < len(full.q)
    q, qd = reduced.q, reduced.qd
    direct = [rows_of("tip", "loop", reduced.points[tip_name] - sp.Matrix([1.0, 0.5]), q, qd),
              rows_of("stop", "limit", sp.Matrix([reduced.couplings.get(full.q[1], full.q[1]) + 3]), q, qd)]
    args = list(q) + list(qd) + list(reduced.params)
    rng = np.random.default_rng(5)
    for got, want in zip(reduced.constraints, direct):
        assert (got.name, got.kind, got.jacobian.shape) == (want.name, want.kind, want.jacobian.shape)
        for field in ("position", "jacobian", "bias"):
            fg = sp.lambdify(args, getattr(got, field), "numpy")
            fw = sp.lambdify(args, getattr(want, field), "numpy")
            for _ in range(3):
                x = list(rng.uniform(-1, 1, len(q) * 2)) + [float(reduced.param_values[s]) for s in reduced.params]
                np.testing.assert_allclose(np.asarray(fg(*x), float), np.asarray(fw(*x), float), rtol=1e-12,
                                           atol=1e-12, err_msg=f"{got.name}.{field}")
    # and the code stage lowers the projected rows of the coupled model
    reduced.articulated_reason = "the model couples coordinates"
    spec = lower(reduced)
    assert spec.nrows == 3 and spec.forward == "cholesky"


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("name", ["fourbar", "compass_gait", "exo5_walk"])
def test_model_files_with_contacts_and_loops(tmp_path: Path, name: str) -> None:
    """Rows the symbolic stage derives from a model file's contacts, loops and limits, lowered and compiled:
    the C equals the SymPy rows, and its Jacobian equals central differences of its positions."""
    eqs = rodgen.derive(rodgen.load(EXAMPLES / f"{name}.yaml"), method="recursive")
    assert eqs.constraints
    files = generate(eqs)
    spec = files.spec
    assert [(b.name, b.kind) for b in spec.constraints] == [(c.name, c.kind) for c in eqs.constraints]
    lib = compile_shared(files, tmp_path)
    n, nrows, pre = spec.nq, spec.nrows, spec.prefix
    ex = eqs.expanded()
    pos = sp.lambdify([eqs.q, eqs.params], sp.Matrix.vstack(*[c.position for c in ex.constraints]), "numpy")
    bias = sp.lambdify([eqs.q, eqs.qd, eqs.params], sp.Matrix.vstack(*[c.bias for c in ex.constraints]), "numpy")
    p = np.array([float(eqs.param_values[s]) for s in eqs.params])
    rng = np.random.default_rng(99)
    for _ in range(3):
        q = np.array([float(v) for v in dict(spec.meta)["INITIAL_Q"].strip("()").split(",") if v.strip()])
        q = q + 0.1 * rng.normal(size=n)
        qd = rng.normal(size=n)
        c = call(lib, f"{pre}_constraint_position", nrows, q, p)
        np.testing.assert_allclose(c, np.asarray(pos(q, p), float).ravel(), rtol=RTOL_SAME, atol=1e-14)
        b = call(lib, f"{pre}_constraint_bias", nrows, q, qd, p)
        np.testing.assert_allclose(b, np.asarray(bias(q, qd, p), float).ravel(), rtol=RTOL_SAME, atol=1e-13)
        J = call(lib, f"{pre}_constraint_jacobian", nrows * n, q, p).reshape(nrows, n)
        h = 1e-5
        fd_J = np.stack([(call(lib, f"{pre}_constraint_position", nrows, q + h * e, p)
                          - call(lib, f"{pre}_constraint_position", nrows, q - h * e, p)) / (2 * h)
                         for e in np.eye(n)], axis=1)
        np.testing.assert_allclose(J, fd_J, atol=TOL_FD_JAC)
    mu = call(lib, f"{pre}_constraint_friction", spec.nconstraints, p)
    want = [float(sp.sympify(c.friction).xreplace(eqs.param_values)) if c.kind == "contact" and c.friction is not None
            else 0.0 for c in eqs.constraints]
    np.testing.assert_allclose(mu, want, rtol=1e-15)
