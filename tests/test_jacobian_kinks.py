"""The exact RHS Jacobian through large force expressions with kinks: abs, sign, max, min, Piecewise.

A force expression of more than LARGE_EXPRESSION nodes is split into single operations before it is
differentiated (rodgen.symbolic.derivative); its pieces must be real symbols, or SymPy writes the
derivative of abs() with complex parts the C printer cannot print. Reference: central differences of
the compiled forward dynamics (a different routine from the differentiated inverse dynamics), at states
away from the kinks.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sympy as sp
from test_jacobian import central_differences

import rodgen
from conftest import EXAMPLES
from rodgen.codegen import CodegenOptions
from rodgen.symbolic.convert import to_sympy
from rodgen.symbolic.derivative import LARGE_EXPRESSION, partial

RTOL_FD = 1e-6

#: abs() only: 50+ nodes (this broke the exact Jacobian with "PrintMethodNotImplementedError: im").
ABS_ONLY = ("-2*abs(th_upper_dot)*th_upper_dot - 0.5*abs(th_lower_dot - th_upper_dot)*(th_lower_dot - th_upper_dot)"
            " + 0.3*abs(sin(th_upper) + cos(th_lower))*th_lower_dot + 0.1*abs(th_upper*th_lower - 0.2)*sin(th_lower)"
            " + 0.2*abs(th_upper_dot*th_lower_dot + 1) - 0.05*abs(th_upper + 2*th_lower)*th_upper_dot*th_lower_dot",
            "0.4*abs(th_upper - th_lower)*th_upper_dot + 0.2*abs(cos(th_upper)*sin(th_lower) - 0.1)*th_lower_dot"
            " - 0.3*abs(th_upper_dot + 2*th_lower_dot)")
#: Every kinked function of the expression language.
MIXED = ("-2*abs(th_upper_dot)*th_upper_dot - 0.5*abs(th_lower_dot - th_upper_dot)*(th_lower_dot - th_upper_dot)"
         " + 0.3*abs(sin(th_upper) + cos(th_lower))*th_lower_dot"
         " + 0.1*sign(th_upper*th_lower - 0.2)*sin(th_lower)*th_upper_dot + 0.2*max(th_upper_dot*th_lower_dot, 0.1)"
         " - 0.05*abs(th_upper + 2*th_lower)*th_upper_dot*th_lower_dot",
         "0.4*abs(th_upper - th_lower)*th_upper_dot + 0.2*min(cos(th_upper)*sin(th_lower), 0.1*th_lower_dot)"
         " - 0.3*abs(th_upper_dot + 2*th_lower_dot)*sign(th_lower_dot)")


def kinked_model(force: tuple[str, str], *, contact: bool) -> rodgen.Model:
    m = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    m.name = f"kinks_{'mixed' if 'sign' in force[0] else 'abs'}{'_contact' if contact else ''}"
    m.point_force("drag", "lower_rod.end", force=force)
    if contact:   # Hunt-Crossley: a Piecewise (in contact / not) in the same generalized force
        m.ground = rodgen.Ground(slope=0.0, height=-1.05)   # the tip 0.13 m into it at the initial posture
        m.ground_contact("foot", "lower_rod.end", stiffness=200.0, exponent=1.5, damping=0.5, friction=0.4,
                         velocity_scale=0.1)
    return m


def node_count(text: str) -> int:
    from rodgen.model.expr import as_expression
    expr = as_expression(text)
    names = {n: sp.Symbol(n, real=True) for n in expr.names}
    return sum(1 for _ in sp.preorder_traversal(to_sympy(expr, names)))


def states(sys_: Any, rng: np.random.Generator, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for _ in range(count):
        y = sys_.initial_state()
        y[:2] += 0.1 * rng.standard_normal(2)
        y[2:] = rng.uniform(0.3, 1.5, 2) * rng.choice([-1.0, 1.0], 2)
        out.append((y, rng.standard_normal(sys_.nu)))
    return out


def test_the_expressions_are_large() -> None:
    assert node_count(ABS_ONLY[0]) > LARGE_EXPRESSION and node_count(MIXED[0]) > LARGE_EXPRESSION
    assert node_count(ABS_ONLY[0]) >= 50 and node_count(MIXED[0]) >= 50


@pytest.mark.parametrize("method", ["matrix", "recursive"])
@pytest.mark.parametrize("force,contact", [(ABS_ONLY, False), (MIXED, False), (MIXED, True)],
                         ids=["abs", "mixed", "mixed_contact"])
def test_exact_jacobian_through_kinks(build_dir: Any, force: tuple[str, str], contact: bool, method: str) -> None:
    sys_ = rodgen.build(kinked_model(force, contact=contact), build_dir=build_dir, method=method,
                        codegen=CodegenOptions(jacobian=True))
    assert sys_.has_jacobian
    rng = np.random.default_rng(5)
    for y, u in states(sys_, rng, 3):
        J = sys_.rhs_jacobian(y[: sys_.nq], y[sys_.nq:], u)
        F = central_differences(sys_, y, u)
        assert np.abs(J - F).max() <= RTOL_FD * np.abs(F).max()
        if contact:   # in contact: the Piecewise's active branch is differentiated
            assert np.abs(sys_.element_forces(y[: sys_.nq], y[sys_.nq:], u)[1]).max() > 1.0
        # the kinks matter: the derivative is not that of the force with the kinked parts frozen
        assert np.abs(J[2:, 2:]).max() > 0.1


def test_sign_max_min_in_the_expression_language() -> None:
    """The model stage (Python floats) and the symbolic stage agree: sign(0) = 0, max and min of two."""
    from rodgen.model.expr import as_expression
    text = "sign(-2) + max(1, 3) - min(2, -1) + sign(0) + 10*sign(x)"
    expr = as_expression(text)
    assert expr.evaluate({"x": 0.5}) == -1 + 3 + 1 + 0 + 10
    x = sp.Symbol("x", real=True)
    assert to_sympy(expr, {"x": x}).subs(x, sp.Rational(1, 2)) == 13


def test_values_at_the_kinks() -> None:
    """The documented derivative at a kink: abs'(0) = sign(0) = 0, sign' = 0, Max/Min split 1/2, 1/2."""
    x, y = sp.symbols("x y", real=True)
    assert partial(sp.Abs(x), x).subs(x, 0) == 0
    assert partial(sp.Abs(x), x).subs(x, -2) == -1
    assert partial(sp.sign(x), x) == 0
    assert partial(sp.Max(x, y), x).subs({x: 1, y: 1}) == sp.Rational(1, 2)
    assert partial(sp.Max(x, y), x).subs({x: 2, y: 1}) == 1
    assert partial(sp.Min(x, y), x).subs({x: 2, y: 1}) == 0
    assert partial(sp.Min(x, y), y).subs({x: 2, y: 1}) == 1
    pw = sp.Piecewise((x**2, x > 0), (0, True))
    assert partial(pw, x).subs(x, 3) == 6 and partial(pw, x).subs(x, -3) == 0


# NumPy evaluates both branches of the contact's Piecewise: the branch out of contact takes a fractional
# power of a negative penetration (nan, discarded by the select)
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_full_symbolic_derivative_agrees_through_the_kinks(build_dir: Any) -> None:
    """The full symbolic Jacobian (every variable carried at once, evaluated in NumPy) equals the compiled
    tangent Jacobian to round-off for the model with every kink and a contact."""
    from test_jacobian_large import symbolic_reference

    from rodgen.symbolic import derive
    model = kinked_model(MIXED, contact=True)
    eqs = derive(model, "recursive")
    sys_ = rodgen.build(model, build_dir=build_dir, method="recursive", codegen=CodegenOptions(jacobian=True))
    for y, u in states(sys_, np.random.default_rng(8), 2):
        q, qd = y[: sys_.nq], y[sys_.nq:]
        J = sys_.rhs_jacobian(q, qd, u)
        S = symbolic_reference(eqs, sys_, q, qd, u)
        assert np.abs(J - S).max() <= 1e-9 * np.abs(S).max()


def test_partial_of_one_operation_is_sympys() -> None:
    """partial() takes sums and products of symbols and numbers (the operations of a split chain) without
    SymPy's Derivative: the very expression sp.diff gives (the same tree, so the same generated C)."""
    seed = 7
    rng = np.random.default_rng(seed)
    syms = [sp.Symbol(f"s{k}", real=True) for k in range(6)]
    numbers = [sp.Integer(2), sp.Integer(-1), sp.Integer(-3), sp.Rational(1, 2), sp.Float(0.25), sp.Float(-1.5)]
    checked = 0
    for _ in range(200):
        picked = [syms[k] for k in rng.choice(6, size=int(rng.integers(1, 5)), replace=False)]
        extra = [numbers[int(rng.integers(len(numbers)))]] if rng.random() < 0.6 else []
        for op in (sp.Add, sp.Mul):
            expr = op(*picked, *extra)
            if not (expr.is_Add or expr.is_Mul):
                continue
            for s in syms:
                got, want = partial(expr, s), sp.diff(expr, s)
                assert sp.srepr(got) == sp.srepr(want), f"seed {seed}: d({expr})/d{s}: {got} against {want}"
                checked += 1
    assert checked > 1000


def test_folded_forward_derivatives_are_sympys() -> None:
    """forward_derivatives(fold=True) (the contact laws' derivative in the RHS Jacobian) gives SymPy's derivative
    of the expanded expressions, in fewer derivative assignments than carrying every variable through every
    operation: gait2d's contact law at two points of a leg, split into single operations."""
    from rodgen.symbolic.derivative import forward_derivatives, split_large_expressions
    q = sp.symbols("q0:3", real=True)
    qd = sp.symbols("qd0:3", real=True)
    kc, cc, mu, vs, a, b = sp.symbols("kc cc mu vs a b", positive=True)
    theta = [q[1], q[1] + q[2]]
    y = [q[0] + a * sp.cos(theta[0]), q[0] + a * sp.cos(theta[0]) + b * sp.cos(theta[1])]
    Jy = [[sp.diff(yy, qi) for qi in q] for yy in y]
    out = []
    for yy, row in zip(y, Jy):
        vy = sum(c * r for c, r in zip(row, qd))
        vx = -vy / 3 + qd[1]
        fy = (kc * ((sp.Abs(yy) - yy) / 2) ** 3 - yy) * (1 - cc * vy)
        fx = -mu * fy * sp.tanh(vx / (2 * vs))
        out += [fy * r + fx * qd[2] for r in row]
    chain, outs = split_large_expressions([], [sum(out[i::3]) for i in range(3)], "s_")
    plain, jac_plain = forward_derivatives(chain, outs, list(q) + list(qd), prefix="p_")
    folded, jac = forward_derivatives(chain, outs, list(q) + list(qd), prefix="f_", fold=True)
    assert len(folded) < 0.9 * len(plain)     # 161 against 189
    rng = np.random.default_rng(3)
    for trial in range(5):
        vals = dict(zip(list(q) + list(qd), rng.uniform(-1.0, 1.0, 6)))
        vals.update({kc: 5e7, cc: 0.85, mu: 1.0, vs: 0.01, a: 0.44, b: 0.44})
        vals[q[0]] = rng.uniform(0.8, 0.9)      # the lower point 0 to 8 cm into the ground, the upper above it
        env = dict(vals)
        for s, e in folded:
            env[s] = e.xreplace(env)
        got = np.array([[float(sp.sympify(x).xreplace(env)) for x in row] for row in jac])
        ref = np.array([[float(sp.diff(sum(out[i::3]), v).xreplace(vals)) for v in list(q) + list(qd)]
                        for i in range(3)])
        # both sides evaluate in SymPy's floats: the same numbers up to the rounding of a few operations
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-9 * np.abs(ref).max(),
                                   err_msg=f"seed 3, trial {trial}")
