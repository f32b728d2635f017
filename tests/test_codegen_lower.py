"""The code stage on its own: printer, straight-line code, sanitising, splitting, the spec."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import rodgen
from conftest import EXAMPLES
from rodgen.codegen import (
    CodegenOptions,
    SlotPrinter,
    c_double,
    comment_text,
    generate,
    lower,
    prefix_of,
    render,
    straight_line,
)
from rodgen.errors import CodegenError, ModelError
from rodgen.model.core import Model, PointMass

x, y, z = sp.symbols("x y z")


def printer() -> SlotPrinter:
    return SlotPrinter({x: "q[0]", y: "q[1]", z: "p[0]"}, routine="demo", groups="q, p")


def test_numbers_print_exactly() -> None:
    for v in (0.1, 1 / 3, 9.81, 1e-300, -2.5e17, 6.02214076e23):
        assert float(c_double(v)) == v
    assert c_double(3) == "3.0"
    assert printer().doprint(sp.Float(0.1) * x) == "0.1*q[0]"
    assert printer().doprint(sp.pi * x) == "3.141592653589793*q[0]"   # M_PI is not C99
    assert printer().doprint(x / 2) == "(1.0/2.0)*q[0]"
    with pytest.raises(CodegenError, match="non-finite"):
        c_double(float("inf"))


def test_powers() -> None:
    p = printer()
    assert p.doprint(x ** 2) == "q[0]*q[0]"
    assert p.doprint(x ** 3) == "q[0]*q[0]*q[0]"
    assert p.doprint(x ** -2) == "1.0/(q[0]*q[0])"
    assert p.doprint(sp.sqrt(x)) == "sqrt(q[0])"
    assert p.doprint(1 / sp.sqrt(x)) == "1.0/sqrt(q[0])"
    assert p.doprint((x + y) ** 7) == "pow(q[0] + q[1], 7)"


def test_unknown_symbol_is_refused_with_its_name() -> None:
    m_thigh = sp.Symbol("m_thigh")
    with pytest.raises(CodegenError) as err:
        printer().doprint(x * m_thigh)
    assert str(err.value) == ("Symbol 'm_thigh' appears in the equations of routine 'demo' but in none of the "
                              "argument groups (q, p).")


def test_straight_line_prunes_and_never_expands_assignments() -> None:
    a, b, c, unused = sp.symbols("a b c unused")
    big = sp.Add(*[sp.sin(k * x) for k in range(1, 30)])
    assignments = [(a, big), (unused, sp.cos(y) ** 5), (b, a * a + y), (c, b * sp.sin(x))]
    temps, outs = straight_line(assignments, [c + a, c * z])
    syms = [s for s, _ in temps]
    assert unused not in syms
    assert syms.index(a) < syms.index(b) < syms.index(c)
    # every given assignment stays a temporary of its own: the outputs refer to them
    assert all(o.free_symbols & {a, b, c} for o in outs)
    # and the values agree with the expanded expressions
    subs = {x: 0.3, y: -1.2, z: 2.0}
    env: dict = {}
    for s, e in temps:
        env[s] = float(e.xreplace(env).xreplace(subs))
    expanded = {a: big}
    expanded[b] = expanded[a] ** 2 + y
    expanded[c] = expanded[b] * sp.sin(x)
    want = [float((expanded[c] + expanded[a]).subs(subs)), float((expanded[c] * z).subs(subs))]
    got = [float(o.xreplace(env).xreplace(subs)) for o in outs]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_a_zero_assignment_takes_the_temporaries_only_its_products_read() -> None:
    """An assignment that is 0 (a locked joint's term) is substituted; a temporary read only in products with it
    is then dead and must not be declared (gcc -Wall -Werror refuses an unused variable)."""
    zero, b, c = sp.symbols("zero b c")
    assignments = [(zero, sp.Integer(0)), (b, sp.sin(x) * sp.cos(y) + x), (c, zero * b + sp.exp(z) * y)]
    temps, outs = straight_line(assignments, [c * x, c + z])
    syms = {s for s, _ in temps}
    assert b not in syms and zero not in syms
    read = set().union(*(o.free_symbols for o in outs), *(e.free_symbols for _, e in temps))
    assert all(s in read for s, _ in temps)
    env = {s: e for s, e in temps}
    got = [float(o.xreplace(env).xreplace(env).subs({x: 0.4, y: 1.3, z: -0.7})) for o in outs]
    c_val = np.exp(-0.7) * 1.3
    np.testing.assert_allclose(got, [c_val * 0.4, c_val - 0.7], rtol=1e-14)


def test_common_subexpressions_are_found() -> None:
    e = sp.sin(x + y) * z
    temps, outs = straight_line([], [e + 1, e * 2])
    # by hand: the one repeated subexpression is z*sin(x + y); both outputs are then one operation on it
    assert len(temps) == 1
    (t, value), = temps
    assert value == z * sp.sin(x + y)
    assert outs == [t + 1, 2 * t]


def test_comment_text_cannot_break_out_of_a_comment() -> None:
    evil = "kg */ int main(void) { return 0; } /* \n#include <stdio.h>\t??/ \\ //x"
    s = comment_text(evil)
    assert "*/" not in s and "/*" not in s and "??" not in s and "\n" not in s and "//" not in s
    assert "\\" not in s and s.isascii()
    assert len(comment_text("x" * 500)) <= 120


def test_prefix_refuses_unsafe_names() -> None:
    assert prefix_of("Exo5") == "exo5"
    for bad in ("If", "x y", "a;b", "_hidden", "1abc", "name\"q", "Int"):
        with pytest.raises(CodegenError):
            prefix_of(bad)


@pytest.mark.parametrize("bad", ["my model", "a;b", "x\"y", "int", "for", "1abc", "a*/b", "m-1"])
def test_unsafe_names_never_reach_generated_code(bad: str) -> None:
    """Model, link and parameter names that are not safe identifiers are refused by the model stage."""
    for where in ("model", "link", "parameter"):
        m = Model(bad if where == "model" else "safe")
        par = bad if where == "parameter" else "m1"
        m.parameter(par, 1.0)
        lk = m.link(bad if where == "link" else "arm")
        lk.rigid("rod", 1.0, masses=[PointMass(par if where != "parameter" else 1.0, fraction=1.0)])
        with pytest.raises(ModelError):
            generate(m)


def test_names_appear_in_comments_only(tmp_path: "pytest.TempPathFactory") -> None:
    """Every identifier in the C body is an array slot, a temporary or a C/math name; the model's names
    appear only in comments and in the string literals of the model's table."""
    files = generate(rodgen.load(EXAMPLES / "exo5.yaml"), method="recursive")
    spec = files.spec
    body = re.sub(r"/\*.*?\*/", "", files.source, flags=re.S)
    body = re.sub(r'"(?:[^"\\]|\\.)*"', "", body)
    body = re.sub(r"#.*", "", body)
    idents = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", body))
    user = set(spec.meta[0][1]) and {s.name for s in spec.coordinates + spec.inputs + spec.parameters}
    allowed_prefix = (spec.prefix + "_", spec.macro + "_")
    c_words = {"const", "double", "void", "int", "static", "return", "for", "if", "sqrt", "sin", "cos", "pow",
               "fabs", "isfinite", "NAN", "q", "qd", "qdd", "u", "p", "M", "h", "g", "B", "Q", "e", "r", "f", "w",
               "b", "d", "s", "scale", "n", "i", "j", "k", "x", "y", "dy", "t", "status", "include", "math",
               "atan2", "exp", "log", "tan", "cbrt"}
    # the hand-written parts of the source (Cholesky, integrators, input laws) use the words of their templates
    from rodgen.codegen import template_root
    c_words |= {w for name in ("c/model.c.jinja", "c/table.c.jinja", "c/jacobian.c.jinja", "_macros/c.jinja")
                for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", (template_root() / name).read_text())}
    leftover = {w for w in idents if not w.startswith(allowed_prefix) and w not in c_words
                and not re.fullmatch(r"t\d+|[aer]\d+", w)}     # temporaries; the row kernels' vector sums
    assert not leftover, leftover
    assert not (user & idents - c_words), user & idents


def test_split_routines_give_the_same_numbers(build_dir: "pytest.TempPathFactory") -> None:
    """A routine cut into parts (shared temporaries in a work array) computes what the whole one does."""
    from test_build_numeric import Reference, close, random_state

    import rodgen.toolchain  # noqa: F401
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "exo5.yaml"), method="recursive")
    split = rodgen.build(eqs, build_dir=build_dir, codegen=CodegenOptions(max_statements=25))
    assert all(r.parts for r in lower(eqs, options=CodegenOptions(max_statements=25)).routines
               if r.temporaries > 30)
    ref = Reference(eqs)
    seed = 11
    q, qd, u, p = random_state(np.random.default_rng(seed), split)
    close(split.mass_matrix(q, p), ref.call(ref.M, q, qd, u, p), 1e-12, f"seed={seed}")
    close(split.bias(q, qd, p), ref.call(ref.bias, q, qd, u, p), 1e-12, f"seed={seed}")
    M = ref.call(ref.M, q, qd, u, p)
    want = np.linalg.solve(M, ref.call(ref.B, q, qd, u, p) @ u - ref.call(ref.bias, q, qd, u, p).ravel())
    close(split.forward_dynamics(q, qd, u, p), want, 1e-12 * np.linalg.cond(M), f"seed={seed}")


def test_spec_is_what_the_templates_get() -> None:
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "double_pendulum.yaml"), method="matrix")
    spec = lower(eqs)
    assert (spec.nq, spec.nu, spec.np) == (2, 2, 5)
    assert [s.name for s in spec.parameters] == ["g", "m1", "m2", "L1", "L2"]
    assert [r.name for r in spec.routines if not r.static] == [
        "mass_matrix", "bias", "gravity", "input_map", "inverse_dynamics", "energy", "points"]
    files = render(spec)
    from rodgen.codegen.runtime import runtime_sources
    assert set(files.files) == {"double_pendulum.h", "double_pendulum.c"} | set(runtime_sources())
    assert f"content hash {spec.content_hash}" in files.header
    assert "#define DOUBLE_PENDULUM_NP 5" in files.header
    assert "#define DOUBLE_PENDULUM_DEFAULT_PARAMETERS { 9.81, 1.0, 0.8, 1.0, 0.7 }" in files.header
    for text in files.files.values():
        assert not any(line != line.rstrip() for line in text.splitlines()), "trailing whitespace"


def test_changing_a_default_changes_the_content_hash() -> None:
    m1 = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    m2 = rodgen.load(EXAMPLES / "double_pendulum.yaml")
    m2.parameters[1].value = 1.5
    h1 = generate(m1).spec.content_hash
    h2 = generate(m2).spec.content_hash
    assert h1 != h2


def test_printed_c_evaluates_to_the_expression() -> None:
    """The C text of sums, products, quotients, powers and negations, evaluated as Python (the same syntax
    for these operators; C's integer division is excluded by the pattern check), equals SymPy's value."""
    import math
    import re as _re
    w = sp.Symbol("w")
    exprs = [y * x ** -2, -y / (x * z) ** 3, y / (x + z), -(x + y) * z, -sp.Rational(3, 2) * x / y, x - y * z / (x + y),
             1 / (x * y), x ** -3 * y ** 2 - z / x ** 4, sp.sqrt(x + y) / (z * x ** 2), (x + y) ** 7 / w,
             -x * y ** -1 * z ** -2 + sp.Rational(1, 3), sp.cos(x) ** 2 / (-y), x ** sp.Rational(3, 2) / y ** 3,
             sp.Mul(-1, sp.Add(x, -y, evaluate=False), evaluate=False) / z, (x - y) ** -1 * (y - z) ** -2]
    slots = {x: "q[0]", y: "q[1]", z: "p[0]", w: "p[1]"}
    pr = SlotPrinter(slots)
    values = {x: 0.7, y: 1.3, z: -2.1, w: 0.4}
    env = {"q": [values[x], values[y]], "p": [values[z], values[w]], "sqrt": math.sqrt, "cos": math.cos,
           "sin": math.sin, "pow": math.pow, "fabs": abs, "cbrt": lambda v: math.copysign(abs(v) ** (1 / 3), v)}
    for e in exprs:
        text = pr.doprint(e)
        assert not _re.search(r"(?<![\w.\[])\d+/\d+(?![\d.])", text), text
        got = eval(text, env)  # noqa: S307  (C text of our own printer, evaluated on numbers)
        assert got == pytest.approx(float(e.subs(values)), rel=1e-13), (e, text)


def test_powers_printed_as_products_keep_their_place_in_a_quotient() -> None:
    # y/x**2 once printed as y/x*x; the printed text, read as arithmetic, must have the expression's value
    import math
    x, y, z = sp.symbols("x y z", real=True)
    p = SlotPrinter({x: "x", y: "y", z: "z"})
    env = {"x": 1.7, "y": -0.3, "z": 2.9, "sqrt": math.sqrt, "pow": math.pow}
    for ex in (y / x ** 2, y * x ** sp.Rational(-3, 2), y ** 2 / x ** 3, y / (x * z) ** 2, 3 * x ** 2 / z,
               y / (x + z) ** 2):
        text = p.doprint(ex)
        assert math.isclose(eval(text, env), float(ex.subs({x: 1.7, y: -0.3, z: 2.9})), rel_tol=1e-14), text


def test_common_argument_subsets_match_sympys(monkeypatch: pytest.MonkeyPatch) -> None:
    """rodgen's match_common_args (dict-based) makes the substitutions SymPy's cse_main.match_common_args makes:
    the same generated files for a walker with force elements and contacts (sums and products of many shapes),
    and on random sums and products of shared arguments."""
    import sys

    from sympy.simplify.cse_main import match_common_args as sympys

    import rodgen.codegen.straight  # noqa: F401
    from rodgen.codegen import render
    from rodgen.codegen.lower import lower as lower_eqs
    straight = sys.modules["rodgen.codegen.straight"]
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "compass_gait.yaml"), method="recursive")
    ours = render(lower_eqs(eqs, options=CodegenOptions(jacobian=True))).files
    monkeypatch.setattr(straight, "match_common_args", sympys)
    assert render(lower_eqs(eqs, options=CodegenOptions(jacobian=True))).files == ours
    monkeypatch.undo()
    rng = np.random.default_rng(5)
    xs = sp.symbols("x0:9")
    for func in (sp.Add, sp.Mul):
        funcs = list({func(*[xs[k] for k in rng.choice(9, size=rng.integers(2, 7), replace=False)])
                      for _ in range(60)})
        a: dict = {}
        b: dict = {}
        straight.match_common_args(func, list(funcs), a)
        sympys(func, list(funcs), b)
        assert a.keys() == b.keys() and len(a) > 10
        assert [str(a[k]) for k in a] == [str(b[k]) for k in a]   # nested Unevaluated sums or products


def test_short_constrained_solves_are_not_compiled_for_size(tmp_path: Path) -> None:
    """exo5_walk's solves (1 300 to 1 700 operations) fit a level-1 instruction cache: no -Os for them."""
    files = rodgen.generate(rodgen.load(EXAMPLES / "exo5_walk.yaml"), tmp_path)
    x = files.spec.macro
    assert all(r.ops < 2000 for r in files.spec.routines if r.name.startswith("constrained_solve"))
    assert f"#define {x}_COMPACT __attribute__" in files.source
    assert not any(ln.startswith(f"{x}_COMPACT ") for ln in files.source.splitlines())


def test_the_hot_routines_carry_the_speed_attribute(tmp_path: Path) -> None:
    """The forward dynamics' and the RHS Jacobian's straight-line routines (and their parts) get GCC's
    -fexpensive-optimizations by attribute, the rest of the model not; the file still compiles without GCC's
    extensions (the macro is empty there)."""
    import subprocess

    from rodgen.codegen import CodegenOptions
    eqs = rodgen.derive(rodgen.load(EXAMPLES / "spatial" / "biped12.yaml"))
    files = rodgen.generate(eqs, tmp_path, options=CodegenOptions(jacobian=True, max_statements=1000))
    src, x, pre = files.source, files.spec.macro, files.spec.prefix
    assert f"#define {x}_SPEED __attribute__((optimize(\"expensive-optimizations\")))" in src
    for name in ("articulated", "inverse_dynamics_derivatives", "bias"):
        assert f"{x}_SPEED static void {pre}_{name}(" in src or f"{x}_SPEED void {pre}_{name}(" in src, name
        for part in files.spec.routine(name).parts:
            assert f"{x}_SPEED static void {part.c_name}(" in src, part.c_name
    assert files.spec.routine("articulated").parts      # the parts are covered
    assert f"{x}_SPEED void {pre}_mass_matrix(" not in src and f"void {pre}_mass_matrix(" in src
    assert not any(f"{x}_SPEED" in ln and "constrained_solve" in ln for ln in src.splitlines())
    # the long constrained solves (8 500 and 12 900 operations) are compiled for size, with their parts
    assert f"#define {x}_COMPACT __attribute__((optimize(\"Os\")))" in src
    for name in ("constrained_solve", "constrained_solve_mode0", "constrained_solve_mode1"):
        assert files.spec.routine(name).parts and files.spec.routine(name).ops > 8000
        assert f"{x}_COMPACT static void {pre}_{name}(" in src or f"{x}_COMPACT void {pre}_{name}(" in src, name
        for part in files.spec.routine(name).parts:
            assert f"{x}_COMPACT static void {part.c_name}(" in src, part.c_name
    compact = [ln for ln in src.splitlines() if ln.startswith(f"{x}_COMPACT ")]
    assert len(compact) == sum(1 + len(files.spec.routine(nm).parts) for nm in
                               ("constrained_solve", "constrained_solve_mode0", "constrained_solve_mode1"))
    proc = subprocess.run(["gcc", "-std=c99", "-O0", "-c", "-x", "c", "-", "-o", str(tmp_path / "o.o"),
                           f"-I{tmp_path}"], input=src, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_vector_blocks_cover_each_column_once() -> None:
    """The AVX-512 row kernels' register blocks (``ModelSpec.vector_blocks``): every column of a row in exactly one
    lane, lanes of 8 and 4 whole inside the row, at most 12 vectors of 8 a block (32 registers), the vector of 4
    and the single columns in the last block only."""
    from rodgen.codegen.spec import ModelSpec
    for columns in range(1, 200):
        blocks = ModelSpec.vector_blocks(columns)
        seen: list[int] = []
        for b, blk in enumerate(blocks):
            lanes = blk["lanes"]
            assert isinstance(lanes, list)
            assert sum(1 for w, _ in lanes if w == 8) <= 12
            if b < len(blocks) - 1:
                assert all(w == 8 for w, _ in lanes)
            for w, col in lanes:
                seen += range(col, col + w)
        assert sorted(seen) == list(range(columns)), columns
