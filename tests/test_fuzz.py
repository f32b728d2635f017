"""Fuzzing the model stage: generated bad expressions, model files (planar and spatial YAML, URDF) and
builder calls give a result or a rodgen error, never another exception, a crash or a hang.

The expression parser must answer every text with an Expression or an
ExpressionError; an accepted expression evaluates to a float or fails with one
of the arithmetic errors its documentation names (ZeroDivisionError, ValueError,
OverflowError), and one that evaluates converts to SymPy quickly. The YAML loader (planar and
``spatial: true``) and the URDF reader must answer every file with a model or a
ModelError naming the file; a model made by builder calls with any values must
validate or raise ModelError. Each example runs under a time limit, so a hang
fails the test instead of stalling the run. The runs are derandomized (the same
examples every time); the default budget keeps the file at about 30 s, and the
``slow`` tests (``pytest -m slow tests/test_fuzz.py``) run ten times as many
examples of each kind.
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
from rodgen.model.core import Joint, PointMass, Rod, Spring
from rodgen.model.expr import MAX_LENGTH, ExpressionError, parse
from rodgen.model.spatial import SpatialModel
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
            # validation refuses it (a model's expressions must evaluate at the defaults), so it never reaches
            # SymPy, which may take long over constants outside the real domain (atan2(1, asin(2)))
            return
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
def mutated_models(draw: st.DrawFn, base: Any = None) -> Any:
    """``base`` (GOOD) with one to three places changed: a value replaced, a key removed or added, a list entry
    duplicated."""
    model = copy.deepcopy(GOOD if base is None else base)
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
        assert isinstance(model, (rodgen.Model, SpatialModel))
        model.validate()


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


# -- spatial model files -----------------------------------------------------------------------------------

GOOD_SPATIAL = yaml.safe_load((Path(__file__).resolve().parents[1] / "examples" / "spatial" / "arm3.yaml").read_text())
SPATIAL_KEYS = ["spatial", "joint", "type", "axis", "xyz", "rpy", "com", "inertia", "bodies", "along", "limits",
                "effort", "velocity", "angles", "coordinates", "input", "at", "segment", "revolute", "prismatic",
                "fixed", "two_angle"]


def test_the_unmutated_spatial_model_loads(tmp_path: Path) -> None:
    path = tmp_path / "arm3.yaml"
    path.write_text(yaml.safe_dump(GOOD_SPATIAL))
    model = rodgen.load(path)
    assert [c.name for c in model.coordinates()] == ["q_yaw", "q_shoulder", "q_elbow"]


def _spatial_file(tmp_path: Path, data: Any) -> None:
    path = tmp_path / "arm3.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    check_file(path)


@FUZZ
@given(mutated_models(GOOD_SPATIAL))
def test_fuzz_mutated_spatial_model_files(tmp_path: Path, data: Any) -> None:
    _spatial_file(tmp_path, data)


# -- builder calls -----------------------------------------------------------------------------------------

names = st.sampled_from(["a", "b", "upper", "fore", "m", "L", "phi_a", "q_a", "tau_a", "s", "t", "pi", "sin", "",
                         "1x", "x y", "a.b", "é"]) | st.text(max_size=4) | st.integers(-2, 2) | st.none()
maybe_names = st.none() | names
pairs = st.tuples(scalars, scalars) | st.lists(scalars, max_size=3) | scalars
triples = st.tuples(scalars, scalars, scalars) | st.lists(scalars, max_size=4) | scalars
numbers = st.sampled_from([0, 1, 0.5, 2.0, -1.0, "m", "L", "2*m", float("nan"), float("inf"), 1e308]) | scalars


def _masses(draw: st.DrawFn) -> list[Any]:
    return [PointMass(draw(numbers), draw(numbers), draw(numbers), draw(numbers), draw(maybe_names))
            for _ in range(draw(st.integers(0, 2)))]


def _rods(draw: st.DrawFn) -> list[Any]:
    return [Rod(draw(numbers), draw(st.none() | numbers), draw(st.none() | numbers))
            for _ in range(draw(st.integers(0, 1)))]


def _spring(draw: st.DrawFn) -> Any:
    return draw(st.none() | st.builds(Spring, numbers, numbers) | scalars)


@st.composite
def planar_programs(draw: st.DrawFn) -> rodgen.Model:
    """A Model made by a few builder calls, every argument drawn from good and bad values of any type."""
    m = rodgen.Model(draw(names), gravity=draw(st.just((0.0, -9.81)) | pairs), doc=draw(st.just("") | scalars))
    for _ in range(draw(st.integers(0, 3))):
        m.parameter(draw(names), draw(numbers), unit=draw(st.just("kg") | scalars), doc=draw(st.just("") | scalars))
    for _ in range(draw(st.integers(1, 3))):
        joint = draw(st.none() | st.builds(Joint, torque=maybe_names, actuated=st.none() | st.booleans() | scalars,
                                           spring=st.none() | st.builds(Spring, numbers, numbers) | scalars,
                                           damping=st.none() | numbers))
        lk = m.link(draw(names), parent=draw(maybe_names), at=draw(st.just("end") | names),
                    angle=draw(st.sampled_from(["absolute", "relative"]) | scalars), origin=draw(pairs),
                    coordinate=draw(maybe_names), offset=draw(numbers), initial=draw(numbers), joint=joint,
                    limits=draw(st.none() | pairs))
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.sampled_from(["rigid", "variable", "telescopic"]))
            if kind == "rigid":
                lk.rigid(draw(names), draw(numbers), masses=_masses(draw), rods=_rods(draw))
            elif kind == "variable":
                lk.variable(draw(names), draw(numbers), masses=_masses(draw), rods=_rods(draw),
                            coordinate=draw(maybe_names), force=draw(maybe_names),
                            actuated=draw(st.booleans() | scalars), spring=_spring(draw),
                            damping=draw(st.none() | numbers), limits=draw(st.none() | pairs))
            else:
                lk.telescopic(draw(names), length=draw(numbers), outer_length=draw(numbers),
                              outer_mass=draw(numbers), inner_length=draw(numbers), inner_mass=draw(numbers))
        if draw(st.booleans()):
            lk.marker(draw(names), segment=draw(maybe_names), fraction=draw(numbers), offset=draw(numbers))
    if draw(st.booleans()):
        m.couple(draw(names), draw(numbers))
    if draw(st.booleans()):
        m.contact(draw(names), draw(maybe_names), draw(numbers))
    if draw(st.booleans()):
        m.loop(draw(names), draw(names), draw(names))
    return m


@st.composite
def spatial_programs(draw: st.DrawFn) -> SpatialModel:
    """A SpatialModel made by a few builder calls, every argument drawn from good and bad values of any type."""
    m = SpatialModel(draw(names), gravity=draw(st.just((0.0, 0.0, -9.81)) | triples),
                     doc=draw(st.just("") | scalars))
    for _ in range(draw(st.integers(0, 3))):
        m.parameter(draw(names), draw(numbers), unit=draw(st.just("kg") | scalars), doc=draw(st.just("") | scalars))
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 4)) == 0:
            lk = m.two_angle_link(draw(names), draw(maybe_names),
                                  angles=draw(st.sampled_from(["absolute", "relative"]) | scalars),
                                  initial=draw(pairs), xyz=draw(triples))
        else:
            lk = m.link(draw(names), draw(maybe_names),
                        joint=draw(st.sampled_from(["revolute", "prismatic", "fixed"]) | scalars),
                        axis=draw(st.sampled_from([(0, 0, 1), (1, 0, 0), (0, 0, 0)]) | triples), xyz=draw(triples),
                        rpy=draw(triples), at=draw(st.just("end") | names), along=draw(triples),
                        coordinate=draw(maybe_names), initial=draw(numbers), offset=draw(numbers),
                        input=draw(maybe_names), actuated=draw(st.booleans() | scalars), spring=_spring(draw),
                        damping=draw(st.none() | numbers), limits=draw(st.none() | pairs),
                        effort=draw(st.none() | numbers), velocity=draw(st.none() | numbers))
        for _ in range(draw(st.integers(0, 2))):
            lk.body(draw(numbers), draw(triples), draw(st.sampled_from([(1, 1, 1, 0, 0, 0), (1, 2, 3)]) | triples
                                                       | st.lists(scalars, max_size=7)), rpy=draw(triples),
                    name=draw(maybe_names))
        if draw(st.booleans()):
            lk.rigid(draw(names), draw(numbers), masses=_masses(draw), rods=_rods(draw))
        if draw(st.booleans()):
            lk.marker(draw(names), segment=draw(maybe_names), fraction=draw(numbers), offset=draw(numbers),
                      xyz=draw(triples), rpy=draw(triples))
    if draw(st.booleans()):
        m.couple(draw(names), draw(numbers))
    return m


def check_builder(model: Any) -> None:
    with time_limit(LIMIT):
        try:
            valid = model.validate()
        except ModelError as exc:
            assert str(exc)
            return
        valid.coordinates()
        rodgen.dump(valid)


@FUZZ
@given(planar_programs())
def test_fuzz_planar_builder_calls(model: rodgen.Model) -> None:
    check_builder(model)


@FUZZ
@given(spatial_programs())
def test_fuzz_spatial_builder_calls(model: SpatialModel) -> None:
    check_builder(model)


# -- URDF text ---------------------------------------------------------------------------------------------

GOOD_URDF = textwrap.dedent("""\
    <robot name="arm">
      <link name="base"><inertial><mass value="2"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>
        </inertial></link>
      <link name="upper"><inertial><origin xyz="0 0 0.2" rpy="0 0 0"/><mass value="1.5"/>
        <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.005"/></inertial></link>
      <link name="fore"><inertial><origin xyz="0.1 0 0" rpy="0 0.3 0"/><mass value="0.8"/>
        <inertia ixx="0.01" ixy="0.001" ixz="0" iyy="0.012" iyz="0" izz="0.004"/></inertial></link>
      <link name="slider"><inertial><mass value="0.3"/>
        <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
      <link name="finger"><inertial><mass value="0.1"/>
        <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.0001"/></inertial></link>
      <link name="tool"/>
      <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
        <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 1 0"/>
        <limit lower="-1.5" upper="1.5" effort="50" velocity="2"/><dynamics damping="0.1" friction="0"/></joint>
      <joint name="elbow" type="continuous"><parent link="upper"/><child link="fore"/>
        <origin xyz="0 0 0.4" rpy="0 0 0.2"/><axis xyz="1 0 0"/></joint>
      <joint name="slide" type="prismatic"><parent link="fore"/><child link="slider"/>
        <origin xyz="0.3 0 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.1" effort="5" velocity="1"/></joint>
      <joint name="grip" type="prismatic"><parent link="slider"/><child link="finger"/>
        <axis xyz="0 1 0"/><limit lower="0" upper="0.02" effort="5" velocity="1"/>
        <mimic joint="slide" multiplier="0.5" offset="0.001"/></joint>
      <joint name="weld" type="fixed"><parent link="fore"/><child link="tool"/><origin xyz="0.35 0 0"/></joint>
    </robot>
    """)

BAD_ATTRIBUTES = ["", " ", "0", "-1", "1e400", "nan", "inf", "-inf", "1 2", "1 2 3 4", "0 0 0", "a", "1,2,3",
                  "0x10", "1e-320", "base", "upper", "fore", "shoulder", "slide", "revolute", "prismatic", "fixed",
                  "floating", "planar", "continuous", "\u00e9", "1_0", "  1   0   0  "]


@st.composite
def mutated_urdf(draw: st.DrawFn) -> str:
    """GOOD_URDF with one to three changes: an attribute's value replaced or removed, an element removed,
    duplicated or moved under another element, an attribute added, or the text cut."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(GOOD_URDF)
    for _ in range(draw(st.integers(1, 3))):
        elements = list(root.iter())
        el = draw(st.sampled_from(elements))
        action = draw(st.sampled_from(["value", "value", "value", "drop_attr", "drop", "duplicate", "move",
                                       "add_attr", "tag"]))
        parents = {c: p for p in root.iter() for c in p}
        if action == "value" and el.attrib:
            key = draw(st.sampled_from(sorted(el.attrib)))
            el.set(key, draw(st.sampled_from(BAD_ATTRIBUTES) | st.text(max_size=8)
                             | st.floats().map(repr)))
        elif action == "drop_attr" and el.attrib:
            del el.attrib[draw(st.sampled_from(sorted(el.attrib)))]
        elif action in ("drop", "duplicate", "move") and el in parents:
            parent = parents[el]
            if action == "drop":
                parent.remove(el)
            elif action == "duplicate":
                parent.append(copy.deepcopy(el))
            else:
                target = draw(st.sampled_from(elements))
                if target is not el and el not in list(target.iter()) and target is not parent:
                    parent.remove(el)
                    target.append(el)
        elif action == "add_attr":
            el.set(draw(st.sampled_from(["name", "type", "xyz", "rpy", "value", "link", "joint", "lower", "upper",
                                         "multiplier", "offset", "damping", "x"])),
                   draw(st.sampled_from(BAD_ATTRIBUTES)))
        elif action == "tag":
            el.tag = draw(st.sampled_from(["link", "joint", "inertial", "origin", "mass", "inertia", "axis",
                                           "limit", "mimic", "parent", "child", "robot", "visual", "gazebo"]))
    text = ET.tostring(root, encoding="unicode")
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


def test_the_unmutated_urdf_loads(tmp_path: Path) -> None:
    path = tmp_path / "arm.urdf"
    path.write_text(GOOD_URDF)
    model = rodgen.load(path)
    assert [c.name for c in model.validate().independent_coordinates()] == ["shoulder", "elbow", "slide"]


def check_urdf(path: Path) -> None:
    with time_limit(LIMIT):
        try:
            model = rodgen.from_urdf(path)
        except ModelError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            return
        assert isinstance(model, SpatialModel)
        model.validate()


@FUZZ
@given(mutated_urdf())
def test_fuzz_mutated_urdf_files(tmp_path: Path, text: str) -> None:
    path = tmp_path / "arm.urdf"
    path.write_text(text, encoding="utf-8")
    check_urdf(path)


@settings(FUZZ, max_examples=100)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode)
       | st.lists(st.sampled_from(["<robot name='r'>", "</robot>", "<link name='a'/>", "<link name='b'>", "</link>",
                                   "<joint name='j' type='revolute'>", "</joint>", "<parent link='a'/>",
                                   "<child link='b'/>", "<axis xyz='0 0 1'/>", "<inertial>", "</inertial>",
                                   "<mass value='1'/>", "<!DOCTYPE r [<!ENTITY e 'x'>]>", "&e;", "<?xml?>",
                                   "<![CDATA[x]]>", "<!-- c -->"]), max_size=30).map(lambda x: "".join(x).encode()))
def test_fuzz_arbitrary_urdf_files(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "junk.urdf"
    path.write_bytes(raw)
    check_urdf(path)


# -- the larger budget ---------------------------------------------------------------------------------------

SLOW = settings(FUZZ, max_examples=3000)


@pytest.mark.slow
@SLOW
@given(arithmetic | token_soup | any_text)
def test_fuzz_expressions_long(text: str) -> None:
    check_expression(text)


@pytest.mark.slow
@SLOW
@given(mutated_models())
def test_fuzz_mutated_model_files_long(tmp_path: Path, data: Any) -> None:
    path = tmp_path / "arm.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    check_file(path)


@pytest.mark.slow
@SLOW
@given(mutated_models(GOOD_SPATIAL))
def test_fuzz_mutated_spatial_model_files_long(tmp_path: Path, data: Any) -> None:
    _spatial_file(tmp_path, data)


@pytest.mark.slow
@SLOW
@given(planar_programs() | spatial_programs())
def test_fuzz_builder_calls_long(model: Any) -> None:
    check_builder(model)


@pytest.mark.slow
@SLOW
@given(mutated_urdf())
def test_fuzz_mutated_urdf_files_long(tmp_path: Path, text: str) -> None:
    path = tmp_path / "arm.urdf"
    path.write_text(text, encoding="utf-8")
    check_urdf(path)


def test_atan2_of_two_zeros_is_zero_in_every_stage() -> None:
    """Found by the slow fuzz run: Python's math and C give atan2(0, 0) = 0, SymPy nan, and atan2(0, nan) a raw
    TypeError in SymPy; the conversion now agrees with the evaluation validation uses."""
    import math
    ex = parse("atan2(0, atan2(0, 0)) + atan2(0, 0)")
    assert ex.evaluate({}) == math.atan2(0.0, 0.0) == 0.0
    assert to_sympy(ex, {}) == 0
