"""The validated model: an immutable value that the later stages take.

:func:`rodgen.model.validate.validate_model` (``Model.validate()``) checks a
mutable :class:`~rodgen.model.core.Model` and returns a :class:`ValidModel`;
it never changes the Model. The two types split the work:

- :class:`~rodgen.model.core.Model` is what users write: dataclasses with
  lists, builder methods, optional names, numbers or parameter names or
  expression text in numeric fields. It is validated as a whole each time it
  is handed to a later stage, so changing it and deriving again always uses
  the new values.
- :class:`ValidModel` is what the symbolic stage, the code stage, the
  toolchain and the runtime read: frozen dataclasses and tuples, links in
  tree order (parents before children), every default resolved (coordinate,
  torque and force names, whether a joint is actuated, a contact's marker, a
  rod's length and inertia), every numeric field an
  :class:`~rodgen.model.expr.Expression` whose names are parameters of the
  model. A field that is None here means "absent", never "not resolved
  yet": no torque (the joint has no input), no spring, no bound, no length
  coordinate (a rigid segment).

A segment's ``kind`` (``"rigid"``, ``"variable"``, ``"telescopic"``) is its
single truth: ``variable`` is derived from it, and ``extension`` (the length
coordinate with its input, spring, damping and limits) is present exactly
when the segment is not rigid.

The public entry points (``rodgen.derive``, ``rodgen.generate``,
``rodgen.build``, the runtime helpers) take either type and validate a Model
on the way in (:func:`valid_model`).

This module uses no SymPy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterator, Mapping, Optional, Union

from .core import Coordinate, FrictionBlock, Input, Limit, Model
from .expr import Expression

#: The kinds of segment; every kind but ``"rigid"`` has a length coordinate.
SEGMENT_KINDS = ("rigid", "variable", "telescopic")

Bounds = Optional[tuple[Optional[Expression], Optional[Expression]]]


@dataclass(frozen=True)
class ValidParameter:
    """A parameter with its default value (a finite float)."""

    name: str
    value: float
    unit: str = ""
    doc: str = ""


@dataclass(frozen=True)
class ValidSpring:
    """Generalized force ``-stiffness*(x - rest)``."""

    stiffness: Expression
    rest: Expression


@dataclass(frozen=True)
class ValidPointMass:
    """A point mass at ``fraction*length + offset`` along its segment, ``lateral`` to the left.

    ``name`` is the point's own name or None (the model gave none; it then has no point of its own).
    """

    mass: Expression
    fraction: Expression
    offset: Expression
    lateral: Expression
    name: Optional[str] = None


@dataclass(frozen=True)
class ValidRod:
    """A rigid rod: centre of mass at ``fraction*length + offset`` of its segment; ``length`` and the
    central ``inertia`` resolved (defaults: the segment's length, ``mass*length**2/12``)."""

    mass: Expression
    length: Expression
    inertia: Expression
    fraction: Expression
    offset: Expression
    lateral: Expression
    name: Optional[str] = None


@dataclass(frozen=True)
class ValidFriction:
    """Dry friction with stiction on a coordinate: ``0 <= kinetic <= static`` (forces or torques)."""

    static: Expression
    kinetic: Expression


@dataclass(frozen=True)
class Extension:
    """The length coordinate of a variable or telescopic segment.

    ``force`` is the name of its input, None when the segment is not actuated.
    """

    coordinate: str
    force: Optional[str]
    spring: Optional[ValidSpring]
    damping: Optional[Expression]
    limits: Bounds
    friction: Optional[ValidFriction] = None


@dataclass(frozen=True)
class ValidSegment:
    """A segment; ``kind`` is its single truth, ``extension`` is present exactly when it is not rigid.

    ``length`` is the fixed length of a rigid segment and the initial value of the length coordinate
    otherwise.
    """

    name: str
    kind: str
    length: Expression
    masses: tuple[ValidPointMass, ...] = ()
    rods: tuple[ValidRod, ...] = ()
    extension: Optional[Extension] = None

    def __post_init__(self) -> None:
        if self.kind not in SEGMENT_KINDS:
            raise ValueError(f"segment {self.name!r}: kind must be one of {', '.join(SEGMENT_KINDS)}")
        if (self.kind != "rigid") != (self.extension is not None):
            raise ValueError(f"segment {self.name!r}: a {self.kind} segment "
                             + ("has no length coordinate" if self.kind == "rigid" else "needs a length coordinate"))

    @property
    def variable(self) -> bool:
        """True unless the segment is rigid (its length is then a coordinate)."""
        return self.kind != "rigid"


@dataclass(frozen=True)
class ValidJoint:
    """A link's proximal hinge. ``torque`` is the name of its input, None when it is not actuated."""

    torque: Optional[str] = None
    spring: Optional[ValidSpring] = None
    damping: Optional[Expression] = None
    friction: Optional[ValidFriction] = None

    @property
    def actuated(self) -> bool:
        return self.torque is not None


@dataclass(frozen=True)
class ValidMarker:
    """A named point: ``fraction``/``offset`` along ``segment`` (or along the link from its hinge
    when ``segment`` is None), ``lateral`` to the left."""

    name: str
    segment: Optional[str]
    fraction: Expression
    offset: Expression
    lateral: Expression


@dataclass(frozen=True)
class ValidLink:
    """A link: ``coordinate`` is its angle coordinate; ``parent`` None for a link on the ground or base
    (hinged at ``origin``), else ``at`` names the point of the parent (``"end"``, ``"start"``, a segment,
    a marker)."""

    name: str
    segments: tuple[ValidSegment, ...]
    parent: Optional[str]
    at: str
    origin: tuple[Expression, Expression]
    angle: str
    coordinate: str
    offset: Expression
    initial: Expression
    joint: ValidJoint
    markers: tuple[ValidMarker, ...] = ()
    limits: Bounds = None


@dataclass(frozen=True)
class ValidGround:
    """The ground line through ``(0, height)`` at angle ``slope`` from +x."""

    slope: Expression
    height: Expression


@dataclass(frozen=True)
class ValidContact:
    """A point foot at the marker ``marker`` with Coulomb coefficient ``friction`` (in a spatial model
    ``marker`` names any frame of the model: a marker, a link's joint frame, a body, a segment's end).
    ``rows``: 2 (planar), 3 (a spatial point) or 6 (a spatial flat foot: the frame's orientation held too);
    ``sole`` a flat foot's sole ``(x_min, x_max, y_min, y_max)`` in the frame's tangential axes, or None."""

    name: str
    marker: str
    friction: Expression
    rows: int = 2
    sole: Optional[tuple[float, float, float, float]] = None


@dataclass(frozen=True)
class ValidLoop:
    """Markers ``a`` and ``b`` coincide (frames in a spatial model); ``rows`` 2 in a plane, 3 (origins) or 6
    (origins and orientations) in space."""

    name: str
    a: str
    b: str
    rows: int = 2


@dataclass(frozen=True)
class ValidForce:
    """A force element (see :class:`~rodgen.model.core.Force`), every default resolved.

    ``point`` is the point it acts at (a marker or a mass point, a key of ``Equations.points``) and
    ``link`` the link that point belongs to (whose axis sets the ``"link"`` frame and the along/across
    directions). Fields a type does not use are None:

    - ``point_force``: ``frame``; either ``force`` (two expressions of the coordinates, their rates
      ``<coordinate>_dot``, the time ``t`` and the parameters) or ``inputs`` (the names of its two inputs);
    - ``viscous``: ``along``, ``across`` (equal for an isotropic element, ``isotropic`` True);
    - ``coulomb``: ``along``, ``across``, ``isotropic``, ``normal``, ``velocity_scale``;
    - ``ground_contact``: ``stiffness``, ``exponent``, ``damping``, ``friction``, ``velocity_scale``;
    - ``spring_damper``: ``b`` (the second point), ``stiffness``, ``damping``, ``rest_length``.

    In a spatial model ``force`` has three expressions (and ``link`` is the link of the point's frame).
    """

    name: str
    type: str
    point: str
    link: str
    frame: str = "world"
    force: Optional[tuple[Expression, ...]] = None
    inputs: Optional[tuple[str, str]] = None
    along: Optional[Expression] = None
    across: Optional[Expression] = None
    isotropic: bool = False
    normal: Optional[Expression] = None
    velocity_scale: Optional[Expression] = None
    stiffness: Optional[Expression] = None
    exponent: Optional[Expression] = None
    damping: Optional[Expression] = None
    friction: Optional[Expression] = None
    b: Optional[str] = None
    rest_length: Optional[Expression] = None


@dataclass(frozen=True)
class ValidModel:
    """A checked model with every default resolved (see the module docstring); made by
    :meth:`Model.validate <rodgen.model.core.Model.validate>`, read by every later stage.

    ``links`` are in tree order (parents before children, otherwise as declared). ``couplings``
    maps each dependent coordinate to its Expression (a read-only mapping). ``base_coordinates``
    and ``base_initial`` are meaningful for a floating base only.
    """

    name: str
    links: tuple[ValidLink, ...]
    parameters: tuple[ValidParameter, ...]
    gravity: tuple[Expression, Expression]
    base: str
    base_coordinates: tuple[str, str]
    base_initial: tuple[Expression, Expression]
    ground: ValidGround
    contacts: tuple[ValidContact, ...] = ()
    loops: tuple[ValidLoop, ...] = ()
    forces: tuple[ValidForce, ...] = ()
    couplings: Mapping[str, Expression] = field(default_factory=lambda: MappingProxyType({}))
    doc: str = ""
    source: Optional[str] = None

    def __hash__(self) -> int:  # the couplings mapping is not hashable itself
        return hash((self.name, self.links, self.parameters, tuple(self.couplings.items())))

    # -- queries -----------------------------------------------------------
    def link_named(self, name: str) -> ValidLink:
        for lk in self.links:
            if lk.name == name:
                return lk
        raise KeyError(name)

    def children(self, name: Optional[str]) -> list[ValidLink]:
        return [lk for lk in self.links if lk.parent == name]

    def iter_segments(self) -> Iterator[tuple[ValidLink, ValidSegment]]:
        for lk in self.links:
            for sg in lk.segments:
                yield lk, sg

    def coordinates(self) -> list[Coordinate]:
        """Generalized coordinates in order: base (x, y) if floating; then per link (tree order) its
        angle followed by the lengths of its variable segments."""
        out: list[Coordinate] = []
        if self.base == "floating":
            for nm, x0 in zip(self.base_coordinates, self.base_initial):
                out.append(Coordinate(nm, "base", None, None, x0))
        for lk in self.links:
            out.append(Coordinate(lk.coordinate, "angle", lk.name, None, lk.initial))
            for sg in lk.segments:
                if sg.extension is not None:
                    out.append(Coordinate(sg.extension.coordinate, "length", lk.name, sg.name, sg.length))
        return out

    def independent_coordinates(self) -> list[Coordinate]:
        """The coordinates that are not coupled (all of them if the model declares no couplings)."""
        return [c for c in self.coordinates() if c.name not in self.couplings]

    def inputs(self) -> list[Input]:
        """Inputs in order: per link, its joint torque then the forces of its variable segments."""
        out: list[Input] = []
        for lk in self.links:
            if lk.joint.torque is not None:
                out.append(Input(lk.joint.torque, "torque", lk.name, None))
            for sg in lk.segments:
                if sg.extension is not None and sg.extension.force is not None:
                    out.append(Input(sg.extension.force, "force", lk.name, sg.name))
        for f in self.forces:
            for name in f.inputs or ():
                out.append(Input(name, "point_force", f.link, None))
        return out

    def frictions(self) -> list[FrictionBlock]:
        """The dry-friction blocks in order: per link, its joint's, then those of the lengths of its
        variable segments."""
        out: list[FrictionBlock] = []
        for lk in self.links:
            if lk.joint.friction is not None:
                f = lk.joint.friction
                out.append(FrictionBlock(f"{lk.coordinate}_friction", lk.coordinate, f.static, f.kinetic, lk.name))
            for sg in lk.segments:
                if sg.extension is not None and sg.extension.friction is not None:
                    f, c = sg.extension.friction, sg.extension.coordinate
                    out.append(FrictionBlock(f"{c}_friction", c, f.static, f.kinetic, lk.name, sg.name))
        return out

    def limits(self) -> list[Limit]:
        """The limit blocks in order: per link, its angle's lower then upper bound, then those of the
        lengths of its variable segments (sides without a bound are left out)."""
        out: list[Limit] = []

        def add(bounds: Bounds, coord: str, link: str, segment: Optional[str]) -> None:
            for side, bound in zip(("lower", "upper"), bounds or ()):
                if bound is not None:
                    out.append(Limit(f"{coord}_{side}", coord, side, bound, link, segment))

        for lk in self.links:
            add(lk.limits, lk.coordinate, lk.name, None)
            for sg in lk.segments:
                if sg.extension is not None:
                    add(sg.extension.limits, sg.extension.coordinate, lk.name, sg.name)
        return out

    def markers(self) -> dict[str, tuple[ValidLink, ValidMarker]]:
        """Every marker by name, with its link."""
        return {mk.name: (lk, mk) for lk in self.links for mk in lk.markers}

    def point_links(self) -> dict[str, str]:
        """Every named point a force element may act at, with the name of its link: markers, point masses
        and rods (their names, or ``<segment>.m<i>`` / ``<segment>.rod<i>``), ``<link>.joint`` and
        ``<segment>.end`` (the names of ``Equations.points``)."""
        return point_links(self)

    def parameter_values(self) -> dict[str, float]:
        return {p.name: p.value for p in self.parameters}

    def value(self, v: Expression) -> float:
        """Numeric value of a field with the default parameter values."""
        return v.evaluate(self.parameter_values())

    def validate(self) -> "ValidModel":
        """A ValidModel is valid: itself (so code that validates what it is given takes both types)."""
        return self


def point_links(model: ValidModel) -> dict[str, str]:
    """The named points of a model with their link (see :meth:`ValidModel.point_links`)."""
    out: dict[str, str] = {}
    for lk in model.links:
        out[f"{lk.name}.joint"] = lk.name
        for sg in lk.segments:
            out[f"{sg.name}.end"] = lk.name
            for i, pm in enumerate(sg.masses):
                out[pm.name or f"{sg.name}.m{i}"] = lk.name
            for i, rd in enumerate(sg.rods):
                out[rd.name or f"{sg.name}.rod{i}"] = lk.name
        for mk in lk.markers:
            out[mk.name] = lk.name
    return out


AnyModel = Union[Model, ValidModel]

from .spatial import SpatialModel, ValidSpatialModel  # noqa: E402  (spatial.py imports this module's types)

#: Every type of model the later stages take (planar and spatial), and the validated ones.
MODEL_TYPES = (Model, ValidModel, SpatialModel, ValidSpatialModel)
VALID_TYPES = (ValidModel, ValidSpatialModel)


def valid_model(model: object) -> ValidModel:
    """The ValidModel of ``model``: a :class:`Model` is validated (a :class:`ModelError` names the place),
    a :class:`ValidModel` is returned as it is; anything else is a TypeError."""
    if isinstance(model, ValidModel):
        return model
    if isinstance(model, Model):
        return model.validate()
    if isinstance(model, ValidSpatialModel):
        return model  # type: ignore[return-value]
    if isinstance(model, SpatialModel):
        return model.validate()  # type: ignore[return-value]
    raise TypeError(f"expected a rodgen.Model, got {type(model).__name__}")


__all__ = ["ValidModel", "ValidLink", "ValidSegment", "Extension", "ValidJoint", "ValidFriction", "ValidMarker",
           "ValidPointMass", "ValidRod", "ValidSpring", "ValidParameter", "ValidGround", "ValidContact", "ValidLoop",
           "ValidForce",
           "SEGMENT_KINDS",
           "AnyModel", "valid_model"]
