"""The slot tables of a model: which coordinate, input, parameter and point lives in which array slot.

They go into the header's comment, its index macros (``<MACRO>_Q_<COORDINATE>``,
``<MACRO>_U_<INPUT>``, ``<MACRO>_P_<PARAMETER>``, ``<MACRO>_POINT_<POINT>``: the
names upper-cased, a point's dot as an underscore) and its ``<MACRO>_DEFAULT_PARAMETERS``
and ``<MACRO>_INITIAL_Q`` initialisers; every name and doc is sanitised for comments.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import CodegenError
from ..symbolic.equations import Equations
from .printer import c_double
from .spec import Slot, comment_text


@dataclass(frozen=True)
class Slots:
    """The slot tables of one model, and the initial coordinates as numbers."""

    coordinates: tuple[Slot, ...]
    inputs: tuple[Slot, ...]
    parameters: tuple[Slot, ...]
    points: tuple[Slot, ...]
    initial_q: tuple[float, ...]


#: The index macros of each slot table: ``<MACRO>_<TAG>_<NAME>``.
MACRO_TAGS = {"coordinates": "Q", "inputs": "U", "parameters": "P", "points": "POINT"}


def slot_macro(macro: str, group: str, name: str) -> str:
    """The index macro of ``name`` in a slot table: ``slot_macro("EXO5", "coordinates", "phi_torso")`` is
    ``EXO5_Q_PHI_TORSO``."""
    return f"{macro}_{MACRO_TAGS[group]}_{name.replace('.', '_').upper()}"


def _with_macros(macro: str, group: str, names: list[str], slots: list[Slot], model: str) -> tuple[Slot, ...]:
    seen: dict[str, str] = {}
    out = []
    for name, slot in zip(names, slots):
        m = slot_macro(macro, group, name)
        if m in seen:
            raise CodegenError(f"model {model!r}: {group} {seen[m]!r} and {name!r} give the same C macro {m}; "
                               f"rename one of them")
        seen[m] = name
        out.append(replace(slot, macro=m))
    return tuple(out)


def slots_of(eqs: Equations, macro: str = "") -> Slots:
    """The slot tables of ``eqs`` (a parameter without a default value is an error); with ``macro`` (the
    model's upper-case prefix) every slot gets its index macro, and two names with the same macro are an
    error."""
    model = eqs.model
    pvals = {str(s): v for s, v in eqs.param_values.items()}
    units = {par.name: par for par in getattr(model, "parameters", [])}
    coords, inits = [], []
    for i, s in enumerate(eqs.q):
        c = eqs.coordinates[i] if i < len(eqs.coordinates) else None
        init = _initial_value(c, pvals)
        inits.append(init)
        coords.append(Slot(i, comment_text(s), _coordinate_doc(c), c_double(init), f"q[{i}]"))
    inputs = []
    for j, s in enumerate(eqs.u):
        inp = eqs.inputs[j] if j < len(eqs.inputs) else None
        inputs.append(Slot(j, comment_text(s), _input_doc(inp), "", f"u[{j}]"))
    params = []
    for k, s in enumerate(eqs.params):
        if s not in eqs.param_values:
            raise CodegenError(f"parameter {str(s)!r} has no default value")
        par = units.get(str(s))
        unit = f"[{comment_text(par.unit, 20)}]" if par is not None and par.unit else ""
        pdoc = comment_text(par.doc, 60) if par is not None and par.doc else ""
        params.append(Slot(k, comment_text(s), " ".join(x for x in (unit, pdoc) if x),
                           c_double(eqs.param_values[s]), f"p[{k}]"))
    points = tuple(Slot(i, comment_text(nm, 60), "", "", f"r[{2 * i}], r[{2 * i + 1}]")
                   for i, nm in enumerate(eqs.points))
    if macro:
        name = eqs.model.name
        return Slots(_with_macros(macro, "coordinates", [str(s) for s in eqs.q], coords, name),
                     _with_macros(macro, "inputs", [str(s) for s in eqs.u], inputs, name),
                     _with_macros(macro, "parameters", [str(s) for s in eqs.params], params, name),
                     _with_macros(macro, "points", [str(nm) for nm in eqs.points], list(points), name),
                     tuple(inits))
    return Slots(tuple(coords), tuple(inputs), tuple(params), points, tuple(inits))


def _coordinate_doc(c: object) -> str:
    if c is None:
        return ""
    kind, link, seg = getattr(c, "kind", ""), getattr(c, "link", None), getattr(c, "segment", None)
    if kind == "angle":
        return comment_text(f"angle of link {link}")
    if kind == "length":
        return comment_text(f"length of segment {seg} (link {link})")
    if kind == "base":
        return "base position"
    return comment_text(kind)


def _input_doc(inp: object) -> str:
    if inp is None:
        return ""
    kind, link, seg = getattr(inp, "kind", ""), getattr(inp, "link", None), getattr(inp, "segment", None)
    if kind == "torque":
        return comment_text(f"torque at the joint of link {link}")
    if kind == "force":
        return comment_text(f"force along segment {seg} (link {link})")
    return comment_text(kind)


def _initial_value(c: object, pvals: dict[str, float]) -> float:
    init = getattr(c, "initial", None)
    if init is None:
        return 0.0
    try:
        if hasattr(init, "evaluate"):
            return float(init.evaluate(pvals))
        return float(init)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError, AssertionError, KeyError):
        # an initial value that does not evaluate is the model stage's business, not ours
        return 0.0
