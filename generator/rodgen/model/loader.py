"""Model files (YAML) -> Model.

The schema is documented field by field in :mod:`rodgen.model.fields` (rendered into
docs/reference/model-file.md) and in prose in docs/planar.md and docs/spatial.md. Loading is
strict: unknown keys, wrong types, duplicate keys and invalid values raise
:class:`ModelError` naming the file, the link, the segment and the field.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Union

import yaml

from ..errors import ModelError
from .core import (
    FORCE_FIELDS,
    FORCE_TYPES,
    Contact,
    Force,
    Friction,
    Ground,
    Joint,
    Link,
    Loop,
    Marker,
    Model,
    Parameter,
    PointMass,
    Rod,
    Segment,
    Spring,
    telescopic,
)
from .elastic import elastic
from .suggest import did_you_mean

PathLike = Union[str, "os.PathLike[str]"]

_MODEL_KEYS = {"name", "doc", "base", "base_coordinates", "base_initial", "gravity", "parameters", "links",
               "couplings", "ground", "contacts", "loops", "forces"}
_LINK_KEYS = {"name", "parent", "at", "origin", "angle", "coordinate", "offset", "initial", "joint", "segments",
              "markers", "limits"}
_SEG_KEYS = {"name", "type", "length", "masses", "rod", "rods", "coordinate", "force", "actuated", "spring",
             "damping", "limits", "friction"}
_TELE_KEYS = {"name", "type", "length", "outer", "inner", "coordinate", "force", "actuated", "spring", "damping",
              "masses", "limits", "friction"}
_ELASTIC_KEYS = {"name", "type", "parent", "at", "origin", "angle", "coordinate", "offset", "initial", "joint",
                 "clamped", "length", "EJ", "mass", "mass_per_length", "rule", "n", "positions", "stiffnesses",
                 "damping", "elements", "tip_mass"}
_GROUND_KEYS = {"slope", "height"}
_CONTACT_KEYS = {"name", "marker", "friction"}
_LOOP_KEYS = {"name", "a", "b"}
_JOINT_KEYS = {"torque", "actuated", "spring", "damping", "friction"}
_FRICTION_KEYS = {"static", "kinetic"}
_MASS_KEYS = {"mass", "fraction", "offset", "lateral", "name"}
_ROD_KEYS = {"mass", "length", "inertia", "fraction", "offset", "lateral", "name"}
_MARKER_KEYS = {"name", "segment", "fraction", "offset", "lateral"}
_SPRING_KEYS = {"stiffness", "rest"}
_PARAM_KEYS = {"value", "unit", "doc"}
_SECTION_KEYS = {"length", "mass"}        # the outer and inner sections of a telescopic segment
SEGMENT_TYPES = ("rigid", "variable", "telescopic")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys."""


class _Map(dict):
    """A mapping read from YAML that knows its lines: ``line`` (where it starts, 1-based) and
    ``lines[key]`` (where each key stands)."""

    line: int = 0
    lines: dict[Any, int]


class _Seq(list):
    """A list read from YAML that knows the line of each item (``lines``)."""

    lines: list[int]


# messages name the YAML types as Python's: "expected a number, got list"
_Map.__name__ = _Map.__qualname__ = "dict"
_Seq.__name__ = _Seq.__qualname__ = "list"


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    mapping = _Map()
    mapping.line = node.start_mark.line + 1
    mapping.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        mapping[key] = loader.construct_object(value_node, deep=deep)
        try:
            mapping.lines[key] = key_node.start_mark.line + 1
        except TypeError:       # an unhashable key: the model reader refuses it later
            pass
    return mapping


def _construct_sequence(loader: _StrictLoader, node: yaml.SequenceNode, deep: bool = False) -> list:
    seq = _Seq(loader.construct_object(child, deep=deep) for child in node.value)
    seq.lines = [child.start_mark.line + 1 for child in node.value]
    return seq


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)

#: Most values (scalars, lists, mappings) a model file may hold once its aliases (``*name``) are expanded:
#: far above any real model (the largest example holds a few hundred), far below what exhausts memory (nine
#: nested aliases of nine items each stand for 9**9 values in a file of a few hundred bytes).
MAX_VALUES = 100_000


def _expanded_size(root: yaml.Node, src: str) -> int:
    """The number of values the document ``root`` holds with every alias expanded; raises ModelError when it
    exceeds MAX_VALUES or an alias stands inside its own anchor (a structure that contains itself)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ModelError("an alias (*name) stands inside the value of its own anchor (&name): a value "
                             "that contains itself", source=src, where=f"line {node.start_mark.line + 1}")
        open_nodes.add(key)
        n = 1
        if isinstance(node, yaml.SequenceNode):
            n += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            n += sum(size(k) + size(v) for k, v in node.value)
        open_nodes.discard(key)
        if n > MAX_VALUES:
            raise ModelError(f"the file holds more than {MAX_VALUES} values once its aliases (*name) are expanded "
                             f"(nested aliases that multiply); write the values out or use fewer aliases",
                             source=src, where=f"line {node.start_mark.line + 1}")
        sizes[key] = n
        return n

    return size(root)


def _read_yaml(text: str, src: str) -> Any:
    """The document of ``text``: composed, checked for alias expansion (:data:`MAX_VALUES`), constructed."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, src)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load(path: PathLike) -> Any:
    """Load and validate a model file: YAML (a planar :class:`Model`, or a
    :class:`~rodgen.model.spatial.SpatialModel` with ``spatial: true``) or URDF (a file ending in
    ``.urdf``: :func:`rodgen.model.urdf.from_urdf`). Raises ModelError naming the file and place."""
    src = os.fspath(path)
    if src.lower().endswith(".urdf"):
        from .urdf import from_urdf
        return from_urdf(src)
    try:
        with open(src, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ModelError(f"cannot read the model file: {exc.strerror}", source=src) from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})", source=src) from None
    try:
        data = _read_yaml(text, src)
    except ModelError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ModelError(f"not valid YAML: {problem}", source=src, where=where) from None
    except RecursionError:
        raise ModelError("not a model file: YAML nested too deeply", source=src) from None
    except ValueError as exc:  # a scalar YAML resolves but Python cannot convert (an integer of 5000 digits)
        raise ModelError(f"a value in the file cannot be read: {str(exc).split(';')[0]}", source=src) from None
    return load_dict(data, source=src)


def load_dict(data: Any, *, source: Optional[str] = None) -> Any:
    """Build and validate a Model from a mapping with the model-file schema (a SpatialModel with
    ``spatial: true``, :mod:`rodgen.model.spatial_io`).

    An error names the place (link, segment, field) and, for a mapping read from a YAML file, the line
    where the field stands (``line 14, link 'upper', segment 'upper_rod'.rods[0].mass: ...``), also for
    the checks of validation.
    """
    from .spatial_io import is_spatial, load_spatial_dict
    if is_spatial(data):
        return load_spatial_dict(data, source=source)
    b = _Reader(source)
    try:
        model = b.model(data)
        model.validate()
    except ModelError as exc:
        raise b.located(exc) from None
    return model


class _Reader:
    def __init__(self, source: Optional[str]) -> None:
        self.src = source
        #: line (1-based) of every place read, by the name errors give it ("link 'a', segment 'b'.length")
        self.lines: dict[str, int] = {}

    def err(self, msg: str, where: str) -> ModelError:
        return ModelError(msg, source=self.src, where=where)

    def note(self, obj: Any, where: str) -> None:
        """Remember the lines of a mapping read from YAML: of the mapping and of each of its fields."""
        if isinstance(obj, _Map):
            self.lines.setdefault(where, obj.line)
            for k, line in obj.lines.items():
                self.lines.setdefault(f"{where}.{k}", line)

    def alias(self, where: str, same: str) -> None:
        """Place ``where`` (as validation names it) stands at the lines of ``same`` (as the file names it)."""
        for key, line in list(self.lines.items()):
            if key == same or key.startswith(same + "."):
                self.lines.setdefault(where + key[len(same):], line)

    def line_of(self, where: Optional[str]) -> Optional[int]:
        """The line of ``where``, or of the nearest enclosing place that was read from the file."""
        while where:
            if where in self.lines:
                return self.lines[where]
            cut = max(where.rfind("."), where.rfind("["), where.rfind(", "))
            if cut <= 0:
                return None
            where = where[:cut]
        return None

    def located(self, exc: ModelError) -> ModelError:
        """``exc`` with the line of its place in front of the place (when known)."""
        line = self.line_of(exc.where)
        if line is None or (exc.where or "").startswith("line "):
            return exc
        return ModelError(exc.detail, source=exc.source, where=f"line {line}, {exc.where}")

    def mapping(self, obj: Any, where: str, keys: set[str], required: tuple[str, ...] = ()) -> Mapping[str, Any]:
        if not isinstance(obj, dict):
            raise self.err(f"expected a mapping, got {type(obj).__name__}", where)
        self.note(obj, where)
        extra = [k for k in obj if k not in keys]
        if extra:
            field = f"{where}.{extra[0]}"
            raise self.err(f"unknown field {extra[0]!r}{did_you_mean(extra[0], keys)} "
                           f"(allowed: {', '.join(sorted(keys))})", field if field in self.lines else where)
        for k in required:
            if k not in obj:
                raise self.err(f"missing field {k!r}", where)
        return obj

    def seq(self, obj: Any, where: str) -> list:
        if obj is None:
            return []
        if not isinstance(obj, list):
            raise self.err(f"expected a list, got {type(obj).__name__}", where)
        return obj

    def string(self, obj: Any, where: str) -> str:
        if not isinstance(obj, str):
            raise self.err(f"expected a name (string), got {type(obj).__name__} {obj!r}", where)
        return obj

    def text(self, obj: Any, where: str) -> str:
        """A free text (``doc``, a parameter's ``unit``): a string; null or absent is empty."""
        if obj is None:
            return ""
        if not isinstance(obj, str):
            raise self.err(f"expected text (a string), got {type(obj).__name__}; quote it (\"...\") if it is "
                           f"meant as text", where)
        return obj

    def boolean(self, obj: Any, where: str) -> bool:
        if not isinstance(obj, bool):
            raise self.err(f"expected true or false, got {obj!r}", where)
        return obj

    def model(self, data: Any) -> Model:
        d = self.mapping(data, "model", _MODEL_KEYS, ("name", "links"))
        for key, line in getattr(d, "lines", {}).items():     # top-level fields are named by their key
            self.lines.setdefault(str(key), line)
        model = Model(name=self.string(d["name"], "name"), source=self.src)
        model.doc = self.text(d.get("doc"), "doc")
        if "base" in d:
            model.base = self.string(d["base"], "base")
        if "base_coordinates" in d:
            bc = self.seq(d["base_coordinates"], "base_coordinates")
            model.base_coordinates = tuple(self.string(x, "base_coordinates") for x in bc)  # type: ignore
        if "base_initial" in d:
            model.base_initial = self.pair(d["base_initial"], "base_initial", "[x, y]")
        if "gravity" in d:
            g = self.seq(d["gravity"], "gravity")
            if len(g) != 2:
                raise self.err(f"gravity must be [gx, gy], got {len(g)} components", "gravity")
            model.gravity = (g[0], g[1])
        self.parameters(d.get("parameters"), model)
        links = self.seq(d["links"], "links")
        for i, ld in enumerate(links):
            if isinstance(ld, dict) and "type" in ld:
                self.elastic_link(model, ld, i)
            else:
                model.links.append(self.link(ld, i))
        self.couplings(d.get("couplings"), model)
        if d.get("ground") is not None:
            gd = self.mapping(d["ground"], "ground", _GROUND_KEYS)
            model.ground = Ground(slope=gd.get("slope", 0.0), height=gd.get("height", 0.0))
        for i, cd in enumerate(self.seq(d.get("contacts"), "contacts")):
            name = cd.get("name") if isinstance(cd, dict) else None
            cw = f"contact {name!r}" if isinstance(name, str) else f"contacts[{i}]"
            c = self.mapping(cd, cw, _CONTACT_KEYS, ("name",))
            model.contacts.append(Contact(name=self.string(c["name"], f"{cw}.name"),
                                          marker=None if c.get("marker") is None else
                                          self.string(c["marker"], f"{cw}.marker"),
                                          friction=c.get("friction", 1.0)))
        for i, ld in enumerate(self.seq(d.get("loops"), "loops")):
            name = ld.get("name") if isinstance(ld, dict) else None
            lw = f"loop {name!r}" if isinstance(name, str) else f"loops[{i}]"
            lp = self.mapping(ld, lw, _LOOP_KEYS, ("name", "a", "b"))
            model.loops.append(Loop(self.string(lp["name"], f"{lw}.name"), self.string(lp["a"], f"{lw}.a"),
                                    self.string(lp["b"], f"{lw}.b")))
        for i, fd in enumerate(self.seq(d.get("forces"), "forces")):
            model.forces.append(self.force(fd, i))
        return model

    def couplings(self, value: Any, model: Any) -> None:
        """The ``couplings`` mapping (coordinate: expression) into ``model.couplings``; shared by the
        planar and spatial readers."""
        couplings = value or {}
        if not isinstance(couplings, dict):
            raise self.err("expected a mapping coordinate: expression", "couplings")
        self.note(couplings, "couplings")
        for name, expr in couplings.items():
            model.couplings[self.string(name, "couplings")] = expr

    def parameters(self, params: Any, model: Any) -> None:
        """The ``parameters`` mapping (name: value, or name: {value, unit, doc}) into ``model.parameters``."""
        params = params or {}
        if not isinstance(params, dict):
            raise self.err("expected a mapping name: value", "parameters")
        self.note(params, "parameters")
        for name, spec in params.items():
            where = f"parameters.{name}"
            if isinstance(spec, dict):
                s = self.mapping(spec, where, _PARAM_KEYS, ("value",))
                value, unit, doc = s["value"], self.text(s.get("unit"), f"{where}.unit"), \
                    self.text(s.get("doc"), f"{where}.doc")
            else:
                value, unit, doc = spec, "", ""
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.err(f"a parameter's value must be a number, got {value!r}", where)
            try:
                value = float(value)
            except OverflowError:
                raise self.err("a parameter's value must be a finite number, got an integer too large for a "
                               "double", where) from None
            model.parameters.append(Parameter(name, value, unit, doc))

    def force(self, fd: Any, i: int, dim: int = 2) -> Force:
        """One force element of ``forces:`` (``dim`` 3 in a spatial model: ``force: [fx, fy, fz]``)."""
        name = fd.get("name") if isinstance(fd, dict) else None
        fw = f"force {name!r}" if isinstance(name, str) else f"forces[{i}]"
        if not isinstance(fd, dict):
            raise self.err(f"expected a mapping, got {type(fd).__name__}", fw)
        kind = fd.get("type")
        if kind not in FORCE_TYPES:
            raise self.err(f"type must be one of {', '.join(FORCE_TYPES)}, got {kind!r}", f"{fw}.type")
        d = self.mapping(fd, fw, {"name", "type", "at", *FORCE_FIELDS[kind]}, ("name", "type", "at"))
        f = Force(name=self.string(d["name"], f"{fw}.name"), type=kind, at=self.string(d["at"], f"{fw}.at"))
        for key in FORCE_FIELDS[kind]:
            if key not in d:
                continue
            v = d[key]
            if key == "frame":
                v = self.string(v, f"{fw}.frame")
            elif key == "force":
                v = (self.pair(v, f"{fw}.force", "[fx, fy]") if dim == 2
                     else tuple(self.seq(v, f"{fw}.force")))
            elif key == "b":
                v = self.string(v, f"{fw}.b")
            elif key == "inputs" and v is not True:
                v = tuple(self.string(x, f"{fw}.inputs") for x in self.pair(v, f"{fw}.inputs", "true or [Fx, Fy]"))
            setattr(f, key, v)
        return f

    def pair(self, obj: Any, where: str, shape: str) -> tuple[Any, Any]:
        o = self.seq(obj, where)
        if len(o) != 2:
            raise self.err(f"expected {shape}, got {len(o)} values", where)
        return (o[0], o[1])

    def link(self, ld: Any, i: int) -> Link:
        name = ld.get("name") if isinstance(ld, dict) else None
        lw = f"link {name!r}" if isinstance(name, str) else f"links[{i}]"
        d = self.mapping(ld, lw, _LINK_KEYS, ("name", "segments"))
        lk = Link(name=self.string(d["name"], f"{lw}.name"))
        if d.get("parent") is not None:
            lk.parent = self.string(d["parent"], f"{lw}.parent")
        if "at" in d:
            lk.at = self.string(d["at"], f"{lw}.at")
        if "origin" in d:
            o = self.seq(d["origin"], f"{lw}.origin")
            if len(o) != 2:
                raise self.err("origin must be [x, y]", f"{lw}.origin")
            lk.origin = (o[0], o[1])
        if "angle" in d:
            lk.angle = self.string(d["angle"], f"{lw}.angle")
        if "coordinate" in d:
            lk.coordinate = self.string(d["coordinate"], f"{lw}.coordinate")
        for fld in ("offset", "initial"):
            if fld in d:
                setattr(lk, fld, d[fld])
        if d.get("limits") is not None:
            lk.limits = self.pair(d["limits"], f"{lw}.limits", "[lower, upper]")
        if "joint" in d:
            lk.joint = self.joint(d["joint"], f"{lw}.joint")
        segs = self.seq(d["segments"], f"{lw}.segments")
        for j, sd in enumerate(segs):
            lk.segments.append(self.segment(sd, lw, j))
        for k, md in enumerate(self.seq(d.get("markers"), f"{lw}.markers")):
            mw = f"{lw}.markers[{k}]"
            m = self.mapping(md, mw, _MARKER_KEYS, ("name",))
            lk.markers.append(Marker(name=self.string(m["name"], f"{mw}.name"),
                                     segment=None if m.get("segment") is None else
                                     self.string(m["segment"], f"{mw}.segment"),
                                     fraction=m.get("fraction", 0.0), offset=m.get("offset", 0.0),
                                     lateral=m.get("lateral", 0.0)))
        return lk

    def elastic_link(self, model: Model, ld: Mapping[str, Any], i: int) -> None:
        """A link entry with ``type: elastic``: expanded into its chain of links (rodgen.model.elastic)."""
        name = ld.get("name")
        lw = f"link {name!r}" if isinstance(name, str) else f"links[{i}]"
        if ld["type"] != "elastic":
            raise self.err(f"a link's type must be 'elastic' (or leave it out for a rigid chain of segments), "
                           f"got {ld['type']!r}", f"{lw}.type")
        d = self.mapping(ld, lw, _ELASTIC_KEYS, ("name", "length"))
        kw: dict[str, Any] = {}
        for key in ("parent", "at", "angle", "coordinate"):
            if d.get(key) is not None:
                kw[key] = self.string(d[key], f"{lw}.{key}")
        for key in ("length", "EJ", "mass", "mass_per_length", "offset", "initial", "damping", "tip_mass"):
            if key in d:
                kw[key] = d[key]
        if "origin" in d:
            kw["origin"] = self.pair(d["origin"], f"{lw}.origin", "[x, y]")
        if "clamped" in d:
            kw["clamped"] = self.boolean(d["clamped"], f"{lw}.clamped")
        if "rule" in d:
            rule = d["rule"]
            if rule is not None and not isinstance(rule, str):
                raise self.err(f"expected a rule name (Cp, E, B, G, R, Ch, M) or null, got {rule!r}", f"{lw}.rule")
            kw["rule"] = rule
        elif "positions" in d or "stiffnesses" in d:
            kw["rule"] = None
        for key in ("n", "elements"):
            if key in d:
                v = d[key]
                if isinstance(v, bool) or not isinstance(v, int):
                    raise self.err(f"{key} must be a whole number, got {v!r}", f"{lw}.{key}")
                kw[key] = v
        for key in ("positions", "stiffnesses"):
            if key in d:
                kw[key] = self.seq(d[key], f"{lw}.{key}")
        if "joint" in d:
            kw["joint"] = self.joint(d["joint"], f"{lw}.joint")
        elastic(model, self.string(d["name"], f"{lw}.name"), **kw)

    def joint(self, jv: Any, where: str) -> Joint:
        """A link's (or an elastic link's root) ``joint`` mapping: torque input, actuated, spring, damping."""
        jd = self.mapping(jv, where, _JOINT_KEYS)
        jt = Joint()
        if "torque" in jd:
            jt.torque = self.string(jd["torque"], f"{where}.torque")
        if "actuated" in jd:
            jt.actuated = self.boolean(jd["actuated"], f"{where}.actuated")
        jt.spring = self.spring(jd.get("spring"), f"{where}.spring")
        jt.damping = jd.get("damping")
        jt.friction = self.friction(jd.get("friction"), f"{where}.friction")
        return jt

    def friction(self, fv: Any, where: str) -> Optional[Friction]:
        """A ``friction: {static: ..., kinetic: ...}`` mapping (dry friction with stiction)."""
        if fv is None:
            return None
        fd = self.mapping(fv, where, _FRICTION_KEYS, ("static",))
        return Friction(static=fd["static"], kinetic=fd.get("kinetic"))

    def spring(self, sd: Any, where: str) -> Optional[Spring]:
        if sd is None:
            return None
        s = self.mapping(sd, where, _SPRING_KEYS, ("stiffness",))
        return Spring(stiffness=s["stiffness"], rest=s.get("rest", 0.0))

    def segment(self, sd: Any, lw: str, j: int) -> Segment:
        name = sd.get("name") if isinstance(sd, dict) else None
        sw = f"{lw}, segment {name!r}" if isinstance(name, str) else f"{lw}.segments[{j}]"
        if not isinstance(sd, dict):
            raise self.err(f"expected a mapping, got {type(sd).__name__}", sw)
        kind = sd.get("type", "rigid")
        if kind not in SEGMENT_TYPES:
            raise self.err(f"type must be one of {', '.join(SEGMENT_TYPES)}, got {kind!r}", f"{sw}.type")
        common: dict[str, Any] = {}
        if kind == "telescopic":
            d = self.mapping(sd, sw, _TELE_KEYS, ("name", "length", "outer", "inner"))
            o = self.mapping(d["outer"], f"{sw}.outer", _SECTION_KEYS, ("length", "mass"))
            n = self.mapping(d["inner"], f"{sw}.inner", _SECTION_KEYS, ("length", "mass"))
            self._variable_options(d, sw, common)
            seg = telescopic(self.string(d["name"], f"{sw}.name"), length=d["length"],
                             outer_length=o["length"], outer_mass=o["mass"],
                             inner_length=n["length"], inner_mass=n["mass"], **common)
            self.alias(f"{sw}.rods[0]", f"{sw}.outer")     # validation names the sections as rods
            self.alias(f"{sw}.rods[1]", f"{sw}.inner")
            self._masses(d, sw, seg)
            return seg
        d = self.mapping(sd, sw, _SEG_KEYS, ("name", "length"))
        seg = Segment(name=self.string(d["name"], f"{sw}.name"), length=d["length"], variable=(kind == "variable"))
        if kind == "variable":
            self._variable_options(d, sw, common)
            for key, v in common.items():
                setattr(seg, key, v)
        else:
            for fld in ("coordinate", "force", "actuated", "spring", "damping", "limits", "friction"):
                if fld in d:
                    raise self.err(f"{fld!r} applies to variable segments only (add 'type: variable')",
                                   f"{sw}.{fld}")
        self._masses(d, sw, seg)
        rods = self.seq(d.get("rods"), f"{sw}.rods")
        if "rod" in d:
            rods = [d["rod"]] + rods
        for k, rdd in enumerate(rods):
            rw = f"{sw}.rods[{k}]"
            r = self.mapping(rdd, rw, _ROD_KEYS, ("mass",))
            seg.rods.append(Rod(mass=r["mass"], length=r.get("length"), inertia=r.get("inertia"),
                                fraction=r.get("fraction", 0.5), offset=r.get("offset", 0.0),
                                lateral=r.get("lateral", 0.0),
                                name=None if r.get("name") is None else self.string(r["name"], f"{rw}.name")))
        return seg

    def _masses(self, d: Mapping[str, Any], sw: str, seg: Segment) -> None:
        for k, md in enumerate(self.seq(d.get("masses"), f"{sw}.masses")):
            mw = f"{sw}.masses[{k}]"
            m = self.mapping(md, mw, _MASS_KEYS, ("mass",))
            seg.masses.append(PointMass(mass=m["mass"], fraction=m.get("fraction", 0.0),
                                        offset=m.get("offset", 0.0), lateral=m.get("lateral", 0.0),
                                        name=None if m.get("name") is None else
                                        self.string(m["name"], f"{mw}.name")))

    def _variable_options(self, d: Mapping[str, Any], sw: str, out: dict[str, Any]) -> None:
        if "coordinate" in d:
            out["coordinate"] = self.string(d["coordinate"], f"{sw}.coordinate")
        if "force" in d:
            out["force"] = self.string(d["force"], f"{sw}.force")
        if "actuated" in d:
            out["actuated"] = self.boolean(d["actuated"], f"{sw}.actuated")
        if "spring" in d:
            out["spring"] = self.spring(d["spring"], f"{sw}.spring")
        if "damping" in d:
            out["damping"] = d["damping"]
        if d.get("limits") is not None:
            out["limits"] = self.pair(d["limits"], f"{sw}.limits", "[lower, upper]")
        if d.get("friction") is not None:
            out["friction"] = self.friction(d["friction"], f"{sw}.friction")
