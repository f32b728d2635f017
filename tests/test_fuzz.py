"""Fuzzing the model stage: generated bad expressions and bad model files give an error, never a crash or a hang.

The expression parser must answer every text with an Expression or an
ExpressionError; an accepted expression evaluates to a float or fails with one
of the arithmetic errors its documentation names (ZeroDivisionError, ValueError,
OverflowError), and converts to SymPy quickly. The YAML loader must answer every
file with a Model or a ModelError. Each example runs under a time limit, so a
hang fails the test instead of stalling the run. The runs are derandomized
(the same examples every time) and bounded to a few seconds each.
"""
from __future__ import annotations

import contextlib
import copy
import signal
import sys
import textwrap
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest
import sympy as sp
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rodgen
from rodgen import ModelError
from rodgen.model.expr import MAX_LENGTH, ExpressionError, parse
from rodgen.symbolic.convert import to_sympy

FUZZ = settings(max_examples=300, derandomize=True, database=None, deadline=timedelta(seconds=3),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
#: seconds one example may take before it counts as a hang
LIMIT = 10.0


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in the main thread if the block takes longer than ``seconds`` (POSIX; elsewhere no limit)."""
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- expressions -------------------------------------------------------------------------------------------

TOKENS = ["0", "1", "2", "9", "0.5", "1e308", "1e-300", "99", "12345678901234567890", "p", "q", "pi", "+", "-",
          "*", "/", "**", "**", "(", "(", ")", ")", ",", "sqrt(", "sin(", "atan2(", "log(", "exp(", "abs(", "acos(",
          " ", "x.y", "[0]", "'s'", "lambda x: x", "1j", "True", "None", "==", "__import__(", "\x00", "é", "%", "//",
          "@", "if", "not", ";", "\n", "{", "}", "...", "f(", "sqrt(x=1)"]

leaf = st.sampled_from(["0", "1", "2", "3", "0.5", "1e-9", "1e300", "99", "p", "q", "pi"])


def _compose(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binop = st.tuples(children, st.sampled_from(["+", "-", "*", "/", "**"]), children).map(
        lambda t: f"({t[0]}){t[1]}({t[2]})")
    unary = st.tuples(st.sampled_from(["-", "+"]), children).map(lambda t: f"{t[0]}({t[1]})")
    call1 = st.tuples(st.sampled_from(["sqrt", "sin", "cos", "tan", "exp", "log", "asin", "acos", "atan", "abs"]),
                      children).map(lambda t: f"{t[0]}({t[1]})")
    call2 = st.tuples(children, children).map(lambda t: f"atan2({t[0]}, {t[1]})")
    return binop | unary | call1 | call2


#: well-formed arithmetic (tests sizes, powers, domains), token soup (tests the refusals), any text
arithmetic = st.recursive(leaf, _compose, max_leaves=40)
token_soup = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)
any_text = st.text(max_size=MAX_LENGTH + 20)


def check_expression(text: str) -> None:
    with time_limit(LIMIT):
        try:
            ex = parse(text)
        except ExpressionError as exc:
            assert str(exc)
            return
        try:
            value = ex.evaluate({n: 1.5 for n in ex.names})
            assert isinstance(value, float)
        except (ZeroDivisionError, ValueError, OverflowError):
            pass
        to_sympy(ex, {n: sp.Symbol(n) for n in ex.names})


@FUZZ
@given(arithmetic)
def test_fuzz_arithmetic_expressions(text: str) -> None:
    check_expression(text)


@FUZZ
@given(token_soup)
def test_fuzz_token_soup_expressions(text: str) -> None:
    check_expression(text)


@settings(FUZZ, max_examples=200)
@given(any_text)
def test_fuzz_any_text_expressions(text: str) -> None:
    check_expression(text)


@pytest.mark.parametrize("text", [
    "2**2**2**2**99",                       # a tower: would take forever in exact arithmetic
    "(1/2)**2**99", "(2*p)**2**99", "p**2**99", "sqrt(2)**2**99",
    "(((1.0000001)**100)**100)**100",       # exact rationals of 10^8 bits
    "(1/3)**900**9", "10**1000", "2**(1/0)", "2**1e400",
    "(" * 300 + "1" + ")" * 300,            # deeper than Python's parser allows
    "(" * 150 + "1" + ")" * 150,
    "-" * 400 + "1",                        # nests without parentheses
    "sqrt(" * 70 + "1" + ")" * 70,
    "+".join(["p"] * 200),
    "9" * MAX_LENGTH, "9" * (MAX_LENGTH + 1), "1" + "e" * 10,
    "p\x00", "__import__('os')", "().__class__", "p if q else 1", "[p][0]", "{}", "...", "f'{p}'",
])
def test_pathological_expressions_are_refused_or_harmless(text: str) -> None:
    check_expression(text)


@pytest.mark.parametrize("text, fragment", [
    ("2**2**2**2**99", "exponent '2**99'"),
    ("(1/2)**2**99", "too large"),
    ("(((1.0000001)**100)**100)**100", "too large"),
    ("-" * 400 + "1", "nested too deeply"),
    ("(" * 300 + "1" + ")" * 300, "longer than 500 characters"),
    ("(" * 201 + "1" + ")" * 201, "too many nested parentheses"),
    ("p\x00", "null bytes"),
])
def test_pathological_expressions_name_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(ExpressionError, match=None) as info:
        parse(text)
    assert fragment in str(info.value)


def test_sizes_within_the_bounds_still_work() -> None:
    """Exact values at the edge of the bounds: 3**100 and (1/2)**100 are computed, and exactly."""
    assert to_sympy(parse("3**100"), {}) == sp.Integer(515377520732011331036461129765621272702107522001)
    assert to_sympy(parse("(1/2)**100"), {}) == sp.Rational(1, 2 ** 100)
    p = sp.Symbol("p")
    assert to_sympy(parse("p**100 + 2**-3"), {"p": p}) == p ** 100 + sp.Rational(1, 8)
    assert parse("(-8)**(1/3)").names == ()
    with pytest.raises(ValueError, match="not a real number"):
        parse("(-8)**(1/3)").evaluate({})


# -- model files -------------------------------------------------------------------------------------------

GOOD = yaml.safe_load(textwrap.dedent("""\
    name: arm
    gravity: [0, -9.81]
    parameters:
      m: {value: 1.0, unit: kg}
      L: 0.5
      k: 10
    links:
      - name: upper
        origin: [0, 0]
        initial: pi/4
        joint: {actuated: true, spring: {stiffness: k, rest: 0.1}, damping: 0.2}
        segments:
          - {name: upper_rod, length: L, rod: {mass: m}, masses: [{mass: 0.5*m, fraction: 1}]}
        markers:
          - {name: elbow, segment: upper_rod, fraction: 1}
      - name: fore
        parent: upper
        angle: relative
        segments:
          - name: fore_var
            type: variable
            length: L
            force: F
            spring: {stiffness: k}
            masses: [{mass: m, fraction: 1}]
          - name: tele
            type: telescopic
            length: L
            outer: {length: L/2, mass: m}
            inner: {length: L/2, mass: m/2}
"""))

KEYS = sorted({"name", "parent", "at", "origin", "angle", "coordinate", "offset", "initial", "joint", "segments",
               "markers", "type", "length", "masses", "rod", "rods", "force", "actuated", "spring", "damping",
               "outer", "inner", "mass", "fraction", "lateral", "inertia", "stiffness", "rest", "value", "unit",
               "doc", "base", "base_coordinates", "gravity", "parameters", "links", "couplings", "torque", "segment"})

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=10 ** 300, max_value=10 ** 400)
           | st.floats() | st.text(max_size=12) | arithmetic | token_soup
           | st.sampled_from(["rigid", "variable", "telescopic", "absolute", "relative", "upper", "fore", "m", "L",
                              "upper_rod", "floating", "fixed", "phi_upper", "l_fore_var"]))
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3)
                      | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6) | st.integers(), c, max_size=3),
                      max_leaves=6)


@st.composite
def mutated_models(draw: st.DrawFn) -> Any:
    """GOOD with one to three places changed: a value replaced, a key removed or added, a list entry duplicated."""
    model = copy.deepcopy(GOOD)
    for _ in range(draw(st.integers(1, 3))):
        node = model
        while True:  # walk down to a container
            children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            containers = [k for k, v in children if isinstance(v, (dict, list)) and v]
            if not containers or draw(st.integers(0, 3)) == 0:
                break
            node = node[draw(st.sampled_from(containers))]
        keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
        action = draw(st.sampled_from(["replace", "replace", "delete", "add", "duplicate"]))
        if action == "add" or not keys:
            if isinstance(node, dict):
                node[draw(st.sampled_from(KEYS) | st.text(max_size=6))] = draw(values)
            else:
                node.append(draw(values))
            continue
        key = draw(st.sampled_from(keys))
        if action == "replace":
            node[key] = draw(values)
        elif action == "delete":
            del node[key]
        elif isinstance(node, list):
            node.append(copy.deepcopy(node[key]))
    return model


def check_file(path: Path) -> None:
    with time_limit(LIMIT):
        try:
            model = rodgen.load(path)
        except ModelError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            return
        assert isinstance(model, rodgen.Model)


def test_the_unmutated_model_loads(tmp_path: Path) -> None:
    path = tmp_path / "arm.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    model = rodgen.load(path)
    assert [c.name for c in model.coordinates()] == ["phi_upper", "th_fore", "l_fore_var", "l_tele"]


@FUZZ
@given(mutated_models())
def test_fuzz_mutated_model_files(tmp_path: Path, data: Any) -> None:
    path = tmp_path / "arm.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    check_file(path)


@settings(FUZZ, max_examples=150)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_fuzz_arbitrary_files(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "junk.yaml"
    path.write_bytes(raw)
    check_file(path)


@pytest.mark.parametrize("raw", [
    b"\xff\xfe\x00name: x",                                 # not UTF-8
    b"[" * 5000, b"{a: " * 3000,                            # deeper than the YAML reader's recursion
    b"name: x\nparameters: {m: 1" + b"0" * 5000 + b"}\nlinks: []",   # an integer Python refuses to read
    b"name: x\nparameters: {m: 1" + b"0" * 400 + b"}\nlinks: []",    # an integer beyond a double
    b"name: &a x\nlinks: &l [*l]",                          # a list that contains itself
    b"name: x\nlinks: [{name: a, segments: [{name: s, length: '(-8)**(1/3)'}]}]",
    b"name: x\nlinks: [{name: a, segments: [{name: s, length: '2**2**2**2**99'}]}]",
    b"!!python/object/apply:os.system [ls]",
])
def test_pathological_files_give_model_errors(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(raw)
    with time_limit(LIMIT), pytest.raises(ModelError):
        rodgen.load(path)
