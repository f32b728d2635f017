"""The model vocabulary: links, segments, masses, joints, parameters, contacts, loops, limits.

A :class:`Model` is a tree of :class:`Link` objects. Each link hangs off the
ground (or the floating base) at a support point, or off a point of its parent
link. A link is a straight sequence of :class:`Segment` objects along its
axis; a segment is *rigid* (fixed length) or *variable* (its length is a
generalized coordinate driven by a longitudinal force). Segments carry point
masses (:class:`PointMass`) and rigid rods (:class:`Rod`).

Positions along a segment are given by ``fraction`` (of the segment's current
length) plus ``offset`` (a constant distance from the segment's proximal end)
and ``lateral`` (a constant distance to the left of the link axis). On a
variable segment a mass at ``fraction=0.5`` therefore slides as the segment
changes length, while one at ``offset=0.1`` stays put.

Every numeric field accepts a number, a parameter name, or an arithmetic
expression of parameters (see :mod:`rodgen.model.expr`).

These classes are the *mutable* model that users build and edit (builder
methods, ``rodgen.load``, ``rodgen.dump``); optional names stay None until
they are needed. :meth:`Model.validate` checks the model and returns a new,
immutable :class:`~rodgen.model.valid.ValidModel` (frozen dataclasses and
tuples, every default resolved, every numeric field an
:class:`~rodgen.model.expr.Expression`), which is what the later stages
read; it never changes the Model. ``rodgen.derive``, ``generate`` and
``build`` validate a Model on the way in, each time, so an edited model is
never used with stale values.

This module uses no SymPy.
"""
from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from ..errors import ModelError
from .expr import CONSTANTS, FUNCTIONS, Expression, ExpressionError, Value, as_expression

if TYPE_CHECKING:
    from .valid import ValidModel

ANGLE_CONVENTIONS = ("absolute", "relative")
BASES = ("fixed", "floating")

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "_Bool _Complex _Imaginary NULL main".split())
_CYTHON_KEYWORDS = frozenset("cdef cpdef cimport ctypedef DEF IF ELIF ELSE include gil nogil public readonly "
                             "extern api inline object".split())
#: Names with a meaning in expressions; no model name may take them. (User names never reach
#: generated code as identifiers: inputs are array slots and names appear in comments only.)
RESERVED = frozenset(set(FUNCTIONS) | set(CONSTANTS))


def check_name(name: object, what: str, where: str | None = None, source: str | None = None) -> str:
    """Return ``name`` if it is a safe identifier for C, Cython and Python, else raise ModelError."""
    if not isinstance(name, str):
        raise ModelError(f"{what} must be a string, got {type(name).__name__} {name!r}", source=source, where=where)
    if not _IDENT.match(name):
        raise ModelError(
            f"{what} {name!r} is not a valid name: use letters, digits and underscores, starting with a letter",
            source=source, where=where)
    if len(name) > 64:
        raise ModelError(f"{what} {name!r} is longer than 64 characters", source=source, where=where)
    if keyword.iskeyword(name) or name in _C_KEYWORDS or name in _CYTHON_KEYWORDS:
        raise ModelError(f"{what} {name!r} is a keyword of C, Cython or Python; choose another name",
                         source=source, where=where)
    if name in RESERVED:
        raise ModelError(f"{what} {name!r} is reserved by rodgen; choose another name", source=source, where=where)
    return name


def default_angle_coordinate(link_name: str, angle: str) -> str:
    """Name of a link's angle coordinate when the model gives none."""
    return ("phi_" if angle == "absolute" else "th_") + link_name


def default_length_coordinate(segment_name: str) -> str:
    """Name of a variable segment's length coordinate when the model gives none."""
    return "l_" + segment_name


def default_torque(link_name: str) -> str:
    """Name of a joint's torque input when the model gives none."""
    return "tau_" + link_name


def default_force(segment_name: str) -> str:
    """Name of a variable segment's force input when the model gives none."""
    return "F_" + segment_name


@dataclass
class Parameter:
    """A named model parameter with its default value."""

    name: str
    value: float
    unit: str = ""
    doc: str = ""


@dataclass
class Spring:
    """A linear spring: generalized force ``-stiffness*(x - rest)`` on a joint angle or a length."""

    stiffness: Value
    rest: Value = 0.0


@dataclass
class PointMass:
    """A point mass on a segment, at ``fraction*length + offset`` from its proximal end."""

    mass: Value
    fraction: Value = 0.0
    offset: Value = 0.0
    lateral: Value = 0.0
    name: Optional[str] = None


@dataclass
class Rod:
    """A rigid weighty body lying along the link axis.

    Its centre of mass sits at ``fraction*length + offset`` of the segment
    (default: the middle of the segment); ``inertia`` is the central moment
    of inertia about the axis normal to the plane (default
    ``mass*length**2/12``, a uniform thin rod of the given ``length``, which
    itself defaults to the segment's length for a rigid segment).
    """

    mass: Value
    length: Optional[Value] = None
    inertia: Optional[Value] = None
    fraction: Value = 0.5
    offset: Value = 0.0
    lateral: Value = 0.0
    name: Optional[str] = None


@dataclass
class Segment:
    """A straight piece of a link.

    ``variable=False``: a rigid segment of fixed ``length``.
    ``variable=True``: ``length`` is the nominal (initial) value of the length
    coordinate ``coordinate`` (default ``l_<name>``), driven by the input
    ``force`` (default ``F_<name>``) unless ``actuated=False``, with an
    optional ``spring`` and ``damping`` along it. ``limits=(lower, upper)``
    bounds the length (either side may be None); see :class:`Limit`.

    ``kind`` records how the segment was made: ``"rigid"`` (the default; with
    ``variable=True`` validation reads it as ``"variable"``), ``"variable"``
    or ``"telescopic"`` (:func:`telescopic`, which also sets
    ``variable=True``). In the validated model
    (:class:`~rodgen.model.valid.ValidSegment`) ``kind`` is the only truth.
    """

    name: str
    length: Value
    variable: bool = False
    masses: list[PointMass] = field(default_factory=list)
    rods: list[Rod] = field(default_factory=list)
    coordinate: Optional[str] = None
    force: Optional[str] = None
    actuated: bool = True
    spring: Optional[Spring] = None
    damping: Optional[Value] = None
    kind: str = "rigid"
    limits: Optional[tuple[Optional[Value], Optional[Value]]] = None
    friction: Optional[Friction] = None

    def __post_init__(self) -> None:
        if self.variable and self.kind == "rigid":
            self.kind = "variable"


def telescopic(name: str, *, length: Value, outer_length: Value, outer_mass: Value,
               inner_length: Value, inner_mass: Value, **options: object) -> Segment:
    """A telescopic segment: two uniform rigid sections sliding inside each other.

    Definition used by rodgen: the segment's length ``l`` (a coordinate) runs
    from its proximal end to its distal end. The *outer* section (a uniform
    rod of ``outer_length`` and ``outer_mass``) is fixed to the proximal end,
    its centre at ``outer_length/2``. The *inner* section (a uniform rod of
    ``inner_length`` and ``inner_mass``) is fixed to the distal end, its
    centre at ``l - inner_length/2``: it slides out with the extension, so
    the segment's centre of mass and central inertia depend on ``l``. Each
    section has the central inertia ``m*L**2/12`` of a thin uniform rod.
    """
    outer = Rod(mass=outer_mass, length=outer_length, fraction=0.0,
                offset=_half(outer_length), name=f"{name}_outer")
    inner = Rod(mass=inner_mass, length=inner_length, fraction=1.0,
                offset=_neg_half(inner_length), name=f"{name}_inner")
    seg = Segment(name=name, length=length, variable=True, rods=[outer, inner], kind="telescopic")
    for key, value in options.items():
        if key not in _TELESCOPIC_OPTIONS:
            raise TypeError(f"telescopic() got an unexpected keyword argument {key!r} "
                            f"(options: {', '.join(_TELESCOPIC_OPTIONS)})")
        setattr(seg, key, value)
    return seg


#: The options of a telescopic segment besides its sections (those of a variable segment).
_TELESCOPIC_OPTIONS = ("coordinate", "force", "actuated", "spring", "damping", "limits", "masses", "friction")


def _half(v: Value, sign: str = "") -> Value:
    """Half of a section's length (``sign`` "-": minus half): a number for a number, an expression for an
    expression; any other value (a bool, a list, an integer beyond a double) is handed on as it is, for
    validation to refuse at the section's length."""
    if isinstance(v, str):
        return f"{sign}({v})/2"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    try:
        return -v / 2 if sign else v / 2
    except OverflowError:
        return v


def _neg_half(v: Value) -> Value:
    return _half(v, "-")


@dataclass
class Friction:
    """Dry (Coulomb) friction with stiction on a coordinate (a joint angle or a segment's length).

    While the coordinate's rate is zero it sticks: a constraint force (torque at a joint, force along a
    length) up to ``static`` holds it; once the force needed exceeds ``static`` it slips, and while it
    moves the friction is ``kinetic`` against the motion (``0 <= kinetic <= static``; ``kinetic``
    defaults to ``static``). It sticks again when its rate reaches zero with the force needed to hold it
    below ``static``. The hybrid simulation runs stick and slip as phases with located events
    (docs/simulation.md, "Dry friction with stiction").
    """

    static: Value
    kinetic: Optional[Value] = None


@dataclass
class Joint:
    """The joint at a link's proximal end (a revolute hinge in the plane).

    ``actuated=None`` (the default) means: a torque input ``torque`` (default
    ``tau_<link>``), except at a link hinged to a *floating* base, where a
    torque would push against nothing (the base carries no mass); such a
    joint gets an input only when ``actuated=True`` or a ``torque`` name is
    given. The validated joint (:class:`~rodgen.model.valid.ValidJoint`)
    holds the resolved input name, or None for a joint without input.
    """

    torque: Optional[str] = None
    actuated: Optional[bool] = None
    spring: Optional[Spring] = None
    damping: Optional[Value] = None
    friction: Optional[Friction] = None


@dataclass
class Marker:
    """A named point on a link, for plots, animation and attaching children.

    ``segment=None`` measures from the link's proximal joint along the whole
    link (``fraction`` then refers to nothing and must be 0).
    """

    name: str
    segment: Optional[str] = None
    fraction: Value = 0.0
    offset: Value = 0.0
    lateral: Value = 0.0


@dataclass
class Link:
    """A link: a chain of segments along one axis, hinged at its proximal end.

    Parameters
    ----------
    parent : name of the parent link, or None for a link hinged to the ground
        (or to the floating base) at ``origin``.
    at : where on the parent the hinge is: ``"end"`` (distal end, default),
        ``"start"`` (the parent's own hinge), the name of a parent segment
        (its distal end) or of a parent marker.
    angle : ``"absolute"`` (measured from the +x axis, counter-clockwise, as in
        Borisov's thesis) or ``"relative"`` (from the parent's axis).
    coordinate : name of the angle coordinate (default ``phi_<name>`` for
        absolute, ``th_<name>`` for relative angles).
    offset : a constant added to the angle (relative links: the angle between
        the axes at coordinate 0).
    initial : initial value of the angle coordinate (default state).
    limits : ``(lower, upper)`` bounds of the angle coordinate (either may be
        None for no bound on that side); see :class:`Limit`.
    """

    name: str
    segments: list[Segment] = field(default_factory=list)
    parent: Optional[str] = None
    at: str = "end"
    origin: tuple[Value, Value] = (0.0, 0.0)
    angle: str = "absolute"
    coordinate: Optional[str] = None
    offset: Value = 0.0
    initial: Value = 0.0
    joint: Joint = field(default_factory=Joint)
    markers: list[Marker] = field(default_factory=list)
    limits: Optional[tuple[Optional[Value], Optional[Value]]] = None

    # -- builder helpers -------------------------------------------------
    def rigid(self, name: str, length: Value, *, masses: Sequence[PointMass] = (),
              rod: Rod | None = None, rods: Sequence[Rod] = ()) -> Segment:
        """Append a rigid segment and return it."""
        seg = Segment(name=name, length=length, variable=False, masses=list(masses),
                      rods=list(rods) + ([rod] if rod is not None else []))
        self.segments.append(seg)
        return seg

    def variable(self, name: str, length: Value, *, masses: Sequence[PointMass] = (),
                 rods: Sequence[Rod] = (), coordinate: str | None = None, force: str | None = None,
                 actuated: bool = True, spring: Spring | None = None, damping: Value | None = None,
                 limits: tuple[Optional[Value], Optional[Value]] | None = None,
                 friction: Friction | None = None) -> Segment:
        """Append a variable-length segment (``length`` is its initial value) and return it."""
        seg = Segment(name=name, length=length, variable=True, masses=list(masses), rods=list(rods),
                      coordinate=coordinate, force=force, actuated=actuated, spring=spring, damping=damping,
                      limits=limits, friction=friction)
        self.segments.append(seg)
        return seg

    def telescopic(self, name: str, **kw: Any) -> Segment:
        """Append a telescopic segment (see :func:`rodgen.model.telescopic`) and return it."""
        seg = telescopic(name, **kw)
        self.segments.append(seg)
        return seg

    def marker(self, name: str, segment: str | None = None, fraction: Value = 0.0, offset: Value = 0.0,
               lateral: Value = 0.0) -> Marker:
        mk = Marker(name, segment, fraction, offset, lateral)
        self.markers.append(mk)
        return mk


@dataclass(frozen=True)
class Coordinate:
    """A generalized coordinate: ``kind`` is ``"angle"``, ``"length"`` or ``"base"``."""

    name: str
    kind: str
    link: Optional[str]
    segment: Optional[str]
    initial: Expression


@dataclass(frozen=True)
class Input:
    """An input: ``kind`` is ``"torque"`` (joint of ``link``) or ``"force"`` (along ``segment``)."""

    name: str
    kind: str
    link: str
    segment: Optional[str]


@dataclass
class Ground:
    """The ground line: through ``(0, height)`` at angle ``slope`` (radians) from +x, counter-clockwise.

    Tangent ``t = (cos slope, sin slope)``, normal ``n = (-sin slope, cos slope)``
    (pointing up, away from the ground). Contacts are measured in this frame
    (docs/ARCHITECTURE.md, "Constraints"). A walker going down a slope of
    angle gamma in the +x direction has ``slope = -gamma``.
    """

    slope: Value = 0.0
    height: Value = 0.0


@dataclass
class Contact:
    """A point foot: the marker ``marker`` (default: ``name``) can touch the ground.

    When active the point sticks (two rows: tangential position, gap); the
    normal force must stay >= 0 and the tangential one within ``friction``
    times the normal force (Coulomb coefficient, an expression of parameters).
    ``rows``: None (a point: 2 rows in a planar model, 3 in a spatial one) or, in a spatial model, 6 (a
    flat foot: the frame's orientation is held too). ``sole``: a flat foot's sole, the rectangle
    ``(x_min, x_max, y_min, y_max)`` in the frame's two tangential axes (metres) its centre of pressure
    must stay in (the hybrid simulation stops with a ``"tip"`` event when it leaves it); None: no limit.
    """

    name: str
    marker: Optional[str] = None
    friction: Value = 1.0
    rows: Optional[int] = None
    sole: Optional[tuple[float, float, float, float]] = None


@dataclass
class Loop:
    """A loop closure: the markers ``a`` and ``b`` (on different links) coincide (two rows: r_b - r_a).

    In a spatial model ``a`` and ``b`` name frames and ``rows`` is 3 (the origins coincide) or 6 (the
    orientations too); ``None`` is the dimension's default (2 in a plane, 3 in space).
    """

    name: str
    a: str
    b: str
    rows: Optional[int] = None


#: The types of force element (see :class:`Force`).
FORCE_TYPES = ("point_force", "viscous", "coulomb", "ground_contact", "spring_damper")
#: The frames a point force may be given in.
FORCE_FRAMES = ("world", "link")


@dataclass
class Force:
    """A force element acting at a point (a marker or a mass point): it enters the equations as Jᵀ F.

    ``type`` selects the law (every coefficient is an expression of parameters, per element):

    ``"point_force"``
        an external force ``[fx, fy]`` given in the ``frame`` ``"world"`` or ``"link"`` (the
        point's link: x along its axis, y to its left). Either ``force`` gives the two components
        as expressions of the coordinates, their rates (``<coordinate>_dot``), the time ``t`` and the
        parameters, or ``inputs`` names two new inputs (slots of u, after the joint and segment inputs;
        ``inputs=True`` names them ``<name>_x`` and ``<name>_y``).
    ``"viscous"``
        viscous friction of the point on the plane: ``F = -(c_along v_a e_a + c_across v_c e_c)``
        with ``e_a`` along the point's link axis, ``e_c`` across it; ``coefficient`` sets both
        (isotropic: ``F = -c v``).
    ``"coulomb"``
        regularised Coulomb friction under the normal load ``normal``: anisotropic (``along``,
        ``across``) ``F_a = -mu_a N tanh(v_a / v_s)``, ``F_c = -mu_c N tanh(v_c / v_s)``; isotropic
        (``coefficient``) ``F = -mu N v / sqrt(|v|^2 + v_s^2)`` (rotation invariant and smooth at
        rest); ``velocity_scale`` is ``v_s`` (> 0, default 0.01).
    ``"ground_contact"``
        compliant contact with the model's ground line (Hunt–Crossley): penetration ``d`` (minus
        the gap), normal force ``stiffness * d**exponent * (1 + damping * d')`` while ``d > 0``
        and that is positive, else 0 (never pulls); tangential force ``-friction * N *
        tanh(v_t / velocity_scale)``.
    ``"spring_damper"``
        a linear spring and damper between the point ``at`` and the point ``b``: the force on ``at`` is
        ``(stiffness * (L - rest_length) + damping * L') e``, ``e`` the unit vector from ``at`` to ``b``,
        ``L`` their distance (``rest_length`` defaults to 0); ``b`` gets the opposite force.

    In a spatial model a vector has three components (``force=(fx, fy, fz)``) and the laws act in the
    ground plane (see docs/forces-3d.md).
    """

    name: str
    type: str
    at: str
    frame: str = "world"
    force: Optional[Sequence[Value]] = None
    inputs: Any = None
    coefficient: Optional[Value] = None
    along: Optional[Value] = None
    across: Optional[Value] = None
    normal: Optional[Value] = None
    velocity_scale: Optional[Value] = None
    stiffness: Optional[Value] = None
    exponent: Optional[Value] = None
    damping: Optional[Value] = None
    friction: Optional[Value] = None
    b: Optional[str] = None
    rest_length: Optional[Value] = None


#: The fields of :class:`Force` each type takes (besides name, type, at).
FORCE_FIELDS: dict[str, tuple[str, ...]] = {
    "point_force": ("frame", "force", "inputs"),
    "viscous": ("coefficient", "along", "across"),
    "coulomb": ("coefficient", "along", "across", "normal", "velocity_scale"),
    "ground_contact": ("stiffness", "exponent", "damping", "friction", "velocity_scale"),
    "spring_damper": ("b", "stiffness", "damping", "rest_length"),
}


@dataclass(frozen=True)
class FrictionBlock:
    """Dry friction with stiction on one coordinate (a block of one row: the coordinate itself).

    ``name`` is ``<coordinate>_friction``; ``static`` and ``kinetic`` the validated limits; ``link`` and
    ``segment`` say where it was declared (``segment`` for the length of a variable segment).
    """

    name: str
    coordinate: str
    static: Expression
    kinetic: Expression
    link: str
    segment: Optional[str] = None


@dataclass(frozen=True)
class Limit:
    """One side of a coordinate limit (a block of one row: ``q - bound`` or ``bound - q``, >= 0 inside).

    ``name`` is ``<coordinate>_lower`` or ``<coordinate>_upper``; ``side`` is
    ``"lower"`` or ``"upper"``; ``link`` and ``segment`` say where the limit
    was declared (``segment`` for the length of a variable segment).
    """

    name: str
    coordinate: str
    side: str
    bound: Expression
    link: str
    segment: Optional[str] = None


class ForceBuilder:
    """The builder methods of force elements, shared by the planar :class:`Model` and the spatial
    :class:`~rodgen.model.spatial.SpatialModel` (both keep their elements in ``forces``)."""

    forces: list[Force]

    def force(self, name: str, type: str, at: str, **fields: Any) -> Force:
        """Add a force element (see :class:`Force` for the types and their fields) and return it."""
        allowed = FORCE_FIELDS.get(type, ())
        for key in fields:
            if key not in allowed:
                raise TypeError(f"force type {type!r} takes no field {key!r}"
                                + (f" (fields: {', '.join(allowed)})" if allowed else
                                   f" (types: {', '.join(FORCE_TYPES)})"))
        f = Force(name, type, at, **fields)
        self.forces.append(f)
        return f

    def point_force(self, name: str, at: str, force: Optional[Sequence[Value]] = None, *,
                    frame: str = "world", inputs: Any = None) -> Force:
        """An external force at a point: ``force=(fx, fy)`` (spatial: ``(fx, fy, fz)``) expressions (of q,
        rates, the time ``t``, point states ``x_<point>`` ... and the parameters), or ``inputs=True`` (new
        inputs ``<name>_x``, ``<name>_y``) or ``inputs=("Fx", "Fy")`` (planar models); ``frame`` ``"world"``
        or ``"link"``."""
        return self.force(name, "point_force", at, frame=frame, force=force, inputs=inputs)

    def viscous_friction(self, name: str, at: str, coefficient: Optional[Value] = None, *,
                         along: Optional[Value] = None, across: Optional[Value] = None) -> Force:
        """Viscous friction of a point on the plane: isotropic ``coefficient`` or ``along``/``across``
        its link axis."""
        return self.force(name, "viscous", at, coefficient=coefficient, along=along, across=across)

    def coulomb_friction(self, name: str, at: str, coefficient: Optional[Value] = None, *, normal: Value,
                         along: Optional[Value] = None, across: Optional[Value] = None,
                         velocity_scale: Optional[Value] = None) -> Force:
        """Regularised Coulomb friction of a point on the plane under the normal load ``normal``."""
        return self.force(name, "coulomb", at, coefficient=coefficient, along=along, across=across, normal=normal,
                          velocity_scale=velocity_scale)

    def ground_contact(self, name: str, at: str, *, stiffness: Value, exponent: Optional[Value] = None,
                       damping: Optional[Value] = None, friction: Optional[Value] = None,
                       velocity_scale: Optional[Value] = None) -> Force:
        """Compliant (Hunt–Crossley) contact of a point with the ground line (plane), with regularised friction."""
        return self.force(name, "ground_contact", at, stiffness=stiffness, exponent=exponent, damping=damping,
                          friction=friction, velocity_scale=velocity_scale)

    def spring_damper(self, name: str, a: str, b: str, *, stiffness: Value, damping: Optional[Value] = None,
                      rest_length: Optional[Value] = None) -> Force:
        """A linear spring and damper between the points ``a`` and ``b`` (its force along the line between
        them)."""
        return self.force(name, "spring_damper", a, b=b, stiffness=stiffness, damping=damping,
                          rest_length=rest_length)


@dataclass
class Model(ForceBuilder):
    """A planar rod/link mechanism.

    ``base="fixed"``: root links are hinged to the ground at their ``origin``
    (single support). ``base="floating"``: the base point has two extra
    coordinates (``base_coordinates``, default ``x``, ``y``), placed first in
    q, and root links are hinged at base + ``origin`` (flight phase).

    The base orientation of a floating model is the absolute angle of its
    root link (a root link's angle is measured from +x whatever its ``angle``
    convention), so a floating model with a root link covers every phase of
    a walker: flight (free), single support (a contact held) and double
    support (two contacts held). ``base_initial`` gives the initial base
    position. Joints on a floating base get no torque input unless they opt in
    (see :class:`Joint`).

    ``ground``, ``contacts``, ``loops`` and the ``limits`` of links and
    variable segments declare the model's constraint blocks (see
    :meth:`contact`, :meth:`loop`, :meth:`limits` and docs/ARCHITECTURE.md).

    ``couplings`` maps a *dependent* coordinate to an expression of the
    independent coordinates and the parameters (a kinematic coupling such as a
    cable or gear transmission: ``{"th2": "-2*th1"}``). The symbolic stage
    eliminates the dependent coordinates; see :meth:`couple`.

    A Model is mutable and never changed by rodgen: :meth:`validate` returns
    a separate immutable :class:`~rodgen.model.valid.ValidModel`, and the
    later stages validate a Model each time they are given one.
    """

    name: str
    links: list[Link] = field(default_factory=list)
    parameters: list[Parameter] = field(default_factory=list)
    gravity: tuple[Value, Value] = (0.0, -9.81)
    base: str = "fixed"
    base_coordinates: tuple[str, str] = ("x", "y")
    doc: str = ""
    couplings: dict[str, Value] = field(default_factory=dict)
    ground: Ground = field(default_factory=Ground)
    contacts: list[Contact] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    forces: list[Force] = field(default_factory=list)
    base_initial: tuple[Value, Value] = (0.0, 0.0)
    source: Optional[str] = None

    # -- builder API -----------------------------------------------------
    def parameter(self, name: str, value: float, unit: str = "", doc: str = "") -> str:
        """Declare a parameter and return its name (for use in expressions)."""
        self.parameters.append(Parameter(name, value, unit, doc))
        return name

    def link(self, name: str, *, parent: str | None = None, at: str = "end", angle: str = "absolute",
             origin: tuple[Value, Value] = (0.0, 0.0), coordinate: str | None = None, offset: Value = 0.0,
             initial: Value = 0.0, joint: Joint | None = None,
             limits: tuple[Optional[Value], Optional[Value]] | None = None) -> Link:
        """Add a link and return it; add segments with its ``rigid``/``variable``/``telescopic`` methods."""
        lk = Link(name=name, parent=parent, at=at, angle=angle, origin=origin, coordinate=coordinate,
                  offset=offset, initial=initial, joint=joint or Joint(), limits=limits)
        self.links.append(lk)
        return lk

    def elastic(self, name: str, **kw: Any) -> list[Link]:
        """Add an elastic link (a chain of rigid segments on sprung hinges) and return its links.

        See :func:`rodgen.model.elastic.elastic` for the fields and rules, e.g.
        ``model.elastic("arm", length=1.0, EJ=2.0, mass=0.5, rule="G", n=4)``.
        """
        from .elastic import elastic
        return elastic(self, name, **kw)

    def couple(self, coordinate: str, expression: Value) -> str:
        """Make ``coordinate`` a function of the other coordinates and return its name.

        ``expression`` may use coordinates that are not themselves coupled,
        parameters, numbers and the functions of :mod:`rodgen.model.expr`,
        e.g. ``model.couple("th2", "-2*th1")``. The equations are then
        written in the remaining (independent) coordinates only: the mass
        matrix and all forces are projected with the Jacobian of the
        coupling (virtual work), and the inputs keep their names.
        """
        self.couplings[coordinate] = expression
        return coordinate

    def contact(self, name: str, marker: str | None = None, friction: Value = 1.0) -> Contact:
        """Declare a point contact at a marker (default: the marker named ``name``) and return it."""
        c = Contact(name, marker, friction)
        self.contacts.append(c)
        return c

    def loop(self, name: str, a: str, b: str) -> Loop:
        """Declare a loop closure: markers ``a`` and ``b`` coincide; return it."""
        lp = Loop(name, a, b)
        self.loops.append(lp)
        return lp

    # -- queries -------------------------------------------------------------
    def link_named(self, name: str) -> Link:
        for lk in self.links:
            if lk.name == name:
                return lk
        raise KeyError(name)

    def children(self, name: str | None) -> list[Link]:
        return [lk for lk in self.links if lk.parent == name]

    def coordinates(self) -> list[Coordinate]:
        """Generalized coordinates in order: base (x, y) if floating; then per link (tree order) its
        angle followed by the lengths of its variable segments (validates the model)."""
        return self.validate().coordinates()

    def independent_coordinates(self) -> list[Coordinate]:
        """The coordinates that are not coupled (all of them if the model declares no couplings)."""
        return self.validate().independent_coordinates()

    def inputs(self) -> list[Input]:
        """Inputs in order: per link, its joint torque then the forces of its variable segments
        (validates the model)."""
        return self.validate().inputs()

    def frictions(self) -> list[FrictionBlock]:
        """The dry-friction blocks in order: per link, its joint's, then those of its variable segments."""
        return self.validate().frictions()

    def limits(self) -> list[Limit]:
        """The limit blocks in order: per link, its angle's lower then upper bound, then those of the
        lengths of its variable segments (sides without a bound are left out; validates the model)."""
        return self.validate().limits()

    def markers(self) -> dict[str, tuple[Link, Marker]]:
        """Every marker by name, with its link."""
        return {mk.name: (lk, mk) for lk in self.links for mk in lk.markers}

    def parameter_values(self) -> dict[str, float]:
        return {p.name: float(p.value) for p in self.parameters}

    def value(self, v: Value) -> float:
        """Numeric value of a field with the default parameter values."""
        return as_expression(v).evaluate(self.parameter_values())

    def iter_segments(self) -> Iterator[tuple[Link, Segment]]:
        for lk in self.links:
            for sg in lk.segments:
                yield lk, sg

    # -- validation --------------------------------------------------------
    def validate(self) -> "ValidModel":
        """Check the model and return its :class:`~rodgen.model.valid.ValidModel`, a new immutable value
        with every default resolved. Raises ModelError naming the place. The Model is not changed, and
        nothing is cached: each call reads the model as it is now."""
        from .validate import validate_model
        return validate_model(self)


def is_finite_number(x: object) -> bool:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an int beyond the range of a double
        return False


__all__ = ["Parameter", "Spring", "PointMass", "Rod", "Segment", "Joint", "Marker", "Link", "Model",
           "Ground", "Contact", "Loop", "Limit", "Friction", "FrictionBlock", "Force", "ForceBuilder", "FORCE_TYPES",
           "FORCE_FRAMES", "FORCE_FIELDS",
           "Coordinate", "Input", "telescopic", "check_name", "Value", "Expression", "ExpressionError",
           "ANGLE_CONVENTIONS", "BASES", "RESERVED"]
