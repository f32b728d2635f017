"""Bad input gives a ModelError that names the file, the place and the problem."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import rodgen
from rodgen import ModelError
from rodgen.model.expr import ExpressionError, parse

GOOD = """\
name: arm
parameters:
  m: 1.0
  L: 0.5
links:
  - name: upper
    segments:
      - {name: upper_rod, length: L, rod: {mass: m}}
  - name: fore
    parent: upper
    segments:
      - {name: fore_var, type: variable, length: L, masses: [{mass: m, fraction: 1}]}
"""


def _load(tmp_path: Path, text: str) -> rodgen.Model:
    f = tmp_path / "arm.yaml"
    f.write_text(textwrap.dedent(text))
    return rodgen.load(f)


def _expect(tmp_path: Path, text: str, *fragments: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        _load(tmp_path, text)
    msg = str(info.value)
    assert "arm.yaml" in msg, msg
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return info.value


def test_good_model_loads(tmp_path: Path) -> None:
    m = _load(tmp_path, GOOD)
    assert [c.name for c in m.coordinates()] == ["phi_upper", "phi_fore", "l_fore_var"]
    assert [i.name for i in m.inputs()] == ["tau_upper", "tau_fore", "F_fore_var"]


def test_unknown_parent(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("parent: upper", "parent: uper"), "link 'fore'.parent", "unknown parent 'uper'")


def test_cycle(tmp_path: Path) -> None:
    text = GOOD.replace("  - name: upper\n", "  - name: upper\n    parent: fore\n")
    _expect(tmp_path, text, "cycle", "upper")


def test_duplicate_link(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("name: fore\n", "name: upper\n"), "duplicate link name 'upper'")


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("  L: 0.5\n", "  L: 0.5\n  L: 0.6\n"), "duplicate key 'L'", "line 5")


def test_nonpositive_mass(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("rod: {mass: m}", "rod: {mass: -m}"),
            "link 'upper', segment 'upper_rod'.rods[0].mass", "must be positive")


def test_nonpositive_length(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("length: L, rod", "length: L - 1, rod"),
            "segment 'upper_rod'.length", "must be positive", "-0.5")


def test_undefined_parameter(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("fraction: 1", "fraction: alpha"), "masses[0].fraction",
            "parameter 'alpha' is used but never defined")


def test_expression_not_arithmetic(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("length: L, rod", "length: \"__import__('os').getcwd()\", rod"),
            "segment 'upper_rod'.length", "not allowed")
    _expect(tmp_path, GOOD.replace("length: L, rod", "length: L.real, rod"), "not plain arithmetic")


def test_wrong_type(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("length: L, rod", "length: [1, 2], rod"), "upper_rod'.length",
            "expected a number or an arithmetic expression, got list")
    _expect(tmp_path, GOOD.replace("  m: 1.0", "  m: heavy"), "parameters.m", "must be a number")


def test_unknown_field(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("type: variable,", "type: variable, lenght: 2,"), "segment 'fore_var'",
            "unknown field 'lenght'")


def test_bad_names(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("name: arm", "name: \"arm; rm -rf\""), "model name", "not a valid name")
    _expect(tmp_path, GOOD.replace("name: upper\n", "name: int\n").replace("parent: upper", "parent: int"),
            "keyword")
    _expect(tmp_path, GOOD.replace("name: fore\n", "name: 2fore\n"), "not a valid name")
    _expect(tmp_path, GOOD.replace("  m: 1.0", "  \"m */\": 1.0"), "not a valid name")


def test_name_clash_between_kinds(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("  L: 0.5", "  L: 0.5\n  phi_upper: 1.0"), "coordinate 'phi_upper'",
            "same name")


def test_unknown_attachment(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD.replace("parent: upper", "parent: upper\n    at: elbow"),
            "link 'fore'.at", "unknown attachment point 'elbow'")


def test_invalid_yaml(tmp_path: Path) -> None:
    _expect(tmp_path, GOOD + "  - [unclosed\n", "not valid YAML", "line")


def test_massless_coordinate(tmp_path: Path) -> None:
    text = GOOD.replace("masses: [{mass: m, fraction: 1}]", "masses: []")
    model = _load(tmp_path, text)
    with pytest.raises(ModelError) as info:
        rodgen.derive(model)
    msg = str(info.value)
    assert "arm.yaml" in msg and "link 'fore'" in msg and "'phi_fore'" in msg and "moves no mass" in msg


def test_missing_file() -> None:
    with pytest.raises(ModelError, match="no_such.yaml: cannot read"):
        rodgen.load("no_such.yaml")


def test_builder_api_errors() -> None:
    m = rodgen.Model("b")
    lk = m.link("a", angle="sideways")
    lk.rigid("s", 1.0, masses=[rodgen.PointMass(1.0, fraction=1)])
    with pytest.raises(ModelError, match=r"link 'a'.angle: angle must be 'absolute' or 'relative'"):
        m.validate()


@pytest.mark.parametrize("text", ["a.b", "a[0]", "lambda: 1", "'s'", "a if b else c", "f(x)", "sqrt(x, y)",
                                  "a < b", "(1).__class__", "sin(x=1)", ""])
def test_expression_parser_refuses(text: str) -> None:
    with pytest.raises(ExpressionError):
        parse(text)


def test_expression_parser_accepts_arithmetic() -> None:
    ex = parse("sqrt(I/m) + 2**-1*pi - l0/2")
    assert ex.names == ("I", "l0", "m")
    assert abs(ex.evaluate({"I": 4.0, "m": 1.0, "l0": 1.0}) - (2.0 + 0.5 * 3.141592653589793 - 0.5)) < 1e-15


# -- aliases that multiply, free text fields --------------------------------------------------------------

LAUGHS = "name: x\nparameters:\n" + "".join(
    f"  p{i}: {{value: 1, doc: &a{i} [" + ", ".join([f"*a{i - 1}" if i else "lol"] * 9) + "]}\n" for i in range(9)
) + "links: [{name: l, segments: [{name: s, length: 1, masses: [{mass: 1}]}]}]\n"


def test_nested_aliases_are_refused_quickly_and_with_bounded_memory(tmp_path: Path) -> None:
    """Nine nested aliases of nine items (a file of about 600 bytes that stands for 9**9 values) is refused
    before it is expanded; run in a child process with 1 GB of address space, so an unbounded expansion fails
    the test instead of the machine."""
    import subprocess
    import sys
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS)
    assert len(LAUGHS) < 1000
    code = textwrap.dedent(f"""\
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        import rodgen
        try:
            rodgen.load({str(path)!r})
        except rodgen.ModelError as exc:
            print(exc)
            sys.exit(0)
        sys.exit(3)
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    msg = out.stdout.strip()
    assert msg.startswith(f"{path}: line ") and "aliases" in msg, msg
    assert len(msg) < 400


def test_aliases_within_the_bound_still_load(tmp_path: Path) -> None:
    """A file that shares a value through an alias loads as if it were written out."""
    text = GOOD.replace("rod: {mass: m}}", "rod: {mass: m}, masses: [&pm {mass: m, fraction: 1}]}") \
        .replace("masses: [{mass: m, fraction: 1}]", "masses: [*pm]")
    assert "*pm" in text
    model = _load(tmp_path, text)
    assert model.links[0].segments[0].masses == model.links[1].segments[0].masses == [
        rodgen.model.core.PointMass(mass="m", fraction=1)]


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="line 2: an alias .* contains itself"):
        _load(tmp_path, "name: x\nlinks: &l [*l]\n")


TEXT_FIELDS = [
    ("doc: {v}\n", 1, "doc"),
    ("parameters:\n  m: {{value: 1, unit: {v}}}\n", 2, "parameters.m.unit"),
    ("parameters:\n  m: {{value: 1, doc: {v}}}\n", 2, "parameters.m.doc"),
]


@pytest.mark.parametrize("spatial", [False, True])
@pytest.mark.parametrize("value, type_name", [("12", "int"), ("1.5", "float"), ("true", "bool"), ("[kg]", "list"),
                                              ("{a: 1}", "dict"), ("2020-01-01", "date")])
@pytest.mark.parametrize("field, line, where", TEXT_FIELDS)
def test_free_text_fields_must_be_strings(tmp_path: Path, spatial: bool, value: str, type_name: str, field: str,
                                          line: int, where: str) -> None:
    head = "name: x\n" + ("spatial: true\n" if spatial else "")
    body = ("links: [{name: l, joint: {type: revolute, axis: [0, 0, 1]}, bodies: [{mass: 1, "
            "inertia: [1, 1, 1, 0, 0, 0]}]}]\n" if spatial else
            "links: [{name: l, segments: [{name: s, length: 1, masses: [{mass: 1}]}]}]\n")
    f = tmp_path / "m.yaml"
    f.write_text(head + field.format(v=value) + body)
    with pytest.raises(ModelError) as info:
        rodgen.load(f)
    assert str(info.value) == (f"{f}: line {line + (2 if spatial else 1)}, {where}: expected text (a string), "
                               f"got {type_name}; quote it (\"...\") if it is meant as text")


def test_free_text_fields_of_the_builder_must_be_strings() -> None:
    m = rodgen.Model("x")
    m.parameter("a", 1.0, unit=3)  # type: ignore[arg-type]
    with pytest.raises(ModelError, match=r"parameters\.a\.unit: expected text \(a string\), got int"):
        m.validate()
    m = rodgen.Model("x", doc=["d"])  # type: ignore[arg-type]
    with pytest.raises(ModelError, match=r"doc: expected text \(a string\), got list"):
        m.validate()


@pytest.mark.parametrize("value, message", [
    (10 ** 400, "an integer too large for a double"),
    (True, "expected a number or an arithmetic expression, got bool True"),
    ([1], "expected a number or an arithmetic expression, got list [1]"),
])
def test_a_telescopic_section_of_any_value_is_a_model_error(value: object, message: str) -> None:
    """The builder halves a section's length for its centre: a huge integer raised OverflowError there (found
    by tests/test_fuzz.py); any value that is not a number or an expression now reaches validation, which
    names the section."""
    m = rodgen.Model("x")
    m.link("a").telescopic("t", length=1.0, outer_length=value, outer_mass=1.0, inner_length=0.5, inner_mass=1.0)
    with pytest.raises(ModelError) as info:
        m.validate()
    assert str(info.value) == f"link 'a', segment 't'.rods[0].length: {message}"


def test_gravity_of_the_builder_that_is_not_a_pair_is_a_model_error() -> None:
    """Found by tests/test_fuzz.py: gravity=None gave a raw TypeError (len of None) in validation."""
    m = rodgen.Model("x", gravity=None)  # type: ignore[arg-type]
    m.link("a").rigid("s", 1.0, masses=[rodgen.model.core.PointMass(1.0, 1.0)])
    with pytest.raises(ModelError, match=r"^gravity: gravity must have two components \[gx, gy\], got NoneType$"):
        m.validate()
