"""The spatial model vocabulary: trees of rigid bodies in 3D, joints about any axis.

A :class:`SpatialModel` is a tree of :class:`SpatialLink` objects, each with
its own body frame. A link is attached to a point of its parent (``at``: the
end of the parent's last segment by default, which is the parent's frame when
it has no segments), moved by a fixed transform ``xyz`` + ``rpy`` (the URDF
convention: translation, then the fixed-axis roll-pitch-yaw rotation
``R = Rz(yaw) Ry(pitch) Rx(roll)``), then by its joint:

* ``"revolute"``: a rotation by the coordinate (plus ``offset``) about the unit
  ``axis`` (link frame);
* ``"prismatic"``: a translation by the coordinate along ``axis``;
* ``"fixed"``: no coordinate (the link is welded to its parent);
* ``"two_angle"``: Borisov's spatial link, two coordinates (phi, psi): the link
  frame is ``Rz(phi) Ry(-psi)``, so its x axis (the link axis) points along
  ``(cos psi cos phi, cos psi sin phi, sin psi)``. With ``angles="absolute"``
  both angles are measured in the ground frame (Borisov's convention; the
  parent must then be None, another absolute two-angle link, attached
  without ``rpy``, or a link that only translates: prismatic and fixed joints
  without ``rpy`` from the ground, Borisov's free base point); with ``angles="relative"`` in the parent's frame (a
  universal joint).
* ``"free"``: a floating base (the root link only), Pinocchio's free flyer:
  seven configuration coordinates ``q = [x y z qx qy qz qw]`` (the link
  frame's origin in the ground frame and its orientation as a unit
  quaternion) and six velocities ``v = [vx vy vz wx wy wz]``, the link's
  spatial velocity in its own frame (linear, angular); nq = nv + 1. The
  coordinates are named ``<link>_x``, ..., ``<link>_qw`` and the velocities
  ``<link>_vx``, ..., ``<link>_wz``; the joint has no input, no offset, no
  ``xyz``/``rpy`` (its coordinates place the link).
* ``"spherical"``: a ball joint (Pinocchio's ``JointModelSpherical``): the
  link frame turns by a unit quaternion ``[qx qy qz qw]`` (coordinates
  ``<link>_qx`` ... ``<link>_qw``, nq = 4) about the joint frame's origin;
  velocities ``<link>_wx, _wy, _wz``, its angular velocity in its own frame
  (nv = 3).
* ``"planar"``: a planar joint (Pinocchio's ``JointModelPlanar``): the link
  frame moves in the joint frame's xy plane, coordinates ``<link>_x``,
  ``<link>_y``, ``<link>_theta`` (the rotation about z); velocities
  ``<link>_vx, _vy, _wz``, the link's velocity in its own frame, so nq = nv = 3
  but the velocities are not the coordinates' rates.

Free, spherical and planar joints have no inputs, springs or limits; their
velocities are listed by :meth:`ValidSpatialModel.velocities`.

A link carries rigid bodies (:class:`Body`: mass, centre of mass and the full
inertia tensor about it, URDF order ``ixx, ixy, ixz, iyy, iyz, izz``) in its
frame, and the planar vocabulary's segments (:class:`~rodgen.model.core.Segment`,
rigid, variable-length or telescopic, with their point masses and rods) along
its link axis ``along`` (default the frame's x axis). A variable segment is a
prismatic coordinate along the link axis driven by a longitudinal force, as in
the planar model; a rod has the given ``inertia`` about both axes normal to
the link axis and none about it. Segment points lie on the link axis: a
point's ``lateral`` offset must be 0 here (use a :class:`Body` off the axis).

Markers (:class:`SpatialMarker`) are frames on a link: a point (along a
segment, plus ``xyz`` in the link frame) and an orientation ``rpy``.

Every numeric field takes a number, a parameter name or an expression, as in
the planar model. :meth:`SpatialModel.validate` returns an immutable
:class:`ValidSpatialModel`. This module uses no SymPy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterator, Mapping, Optional, Sequence

from .core import (
    Contact,
    Coordinate,
    Force,
    ForceBuilder,
    Friction,
    FrictionBlock,
    Input,
    Limit,
    Loop,
    Parameter,
    PointMass,
    Rod,
    Segment,
    Spring,
    telescopic,
)
from .expr import Expression, Value, parse
from .valid import Bounds, ValidContact, ValidForce, ValidFriction, ValidLoop, ValidSegment, ValidSpring

#: Joint types of a spatial link.
JOINT_TYPES = ("revolute", "prismatic", "fixed", "two_angle", "free", "spherical", "planar")
#: Suffixes of a free joint's configuration coordinates and velocities (``<link>_x``, ``<link>_vx``, ...).
FREE_COORDINATES = ("x", "y", "z", "qx", "qy", "qz", "qw")
FREE_VELOCITIES = ("vx", "vy", "vz", "wx", "wy", "wz")
#: Joints whose velocities are not the rates of their coordinates: suffixes of (coordinates, velocities) and
#: the default initial configuration.
LIE_JOINTS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[float, ...]]] = {
    "free": (FREE_COORDINATES, FREE_VELOCITIES, (0.0,) * 6 + (1.0,)),
    "spherical": (("qx", "qy", "qz", "qw"), ("wx", "wy", "wz"), (0.0, 0.0, 0.0, 1.0)),
    "planar": (("x", "y", "theta"), ("vx", "vy", "wz"), (0.0, 0.0, 0.0)),
}
#: Angle conventions of a two-angle link.
TWO_ANGLE_CONVENTIONS = ("absolute", "relative")

Vec3 = tuple[Value, Value, Value]


def default_joint_coordinate(link_name: str) -> str:
    """Name of a revolute or prismatic joint's coordinate when the model gives none."""
    return "q_" + link_name


def default_joint_input(link_name: str, joint_type: str) -> str:
    """Name of a joint's input when the model gives none: ``tau_<link>`` (revolute), ``F_<link>`` (prismatic)."""
    return ("F_" if joint_type == "prismatic" else "tau_") + link_name


def free_coordinates(link_name: str, joint: str = "free") -> tuple[str, ...]:
    """The configuration coordinates of a free joint (position, then the unit quaternion (x, y, z, w)), a
    spherical joint (the quaternion) or a planar joint (x, y, theta)."""
    return tuple(f"{link_name}_{s}" for s in LIE_JOINTS[joint][0])


def free_velocities(link_name: str, joint: str = "free") -> tuple[str, ...]:
    """The velocities of a free joint (the link's linear, then angular velocity, in its own frame), a
    spherical joint (angular velocity) or a planar joint (vx, vy, wz), all in the link's frame."""
    return tuple(f"{link_name}_{s}" for s in LIE_JOINTS[joint][1])


def default_two_angle_coordinates(link_name: str) -> tuple[str, str]:
    return ("phi_" + link_name, "psi_" + link_name)


@dataclass
class Body:
    """A rigid body fixed in a link frame.

    ``com`` is its centre of mass in the link frame; ``inertia`` the inertia
    tensor about the centre of mass as ``(ixx, ixy, ixz, iyy, iyz, izz)``
    (URDF order) or a 3x3 nested sequence, in axes rotated by ``rpy`` from the
    link frame (the URDF ``<inertial><origin rpy>``).
    """

    mass: Value
    com: Vec3 = (0.0, 0.0, 0.0)
    inertia: Any = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)
    name: Optional[str] = None


@dataclass
class SpatialJoint:
    """The joint of a spatial link (see the module docstring for the types).

    ``coordinate`` names the coordinate (default ``q_<link>``; a two-angle link
    takes ``coordinates=(phi, psi)``, default ``phi_<link>``, ``psi_<link>``).
    ``input`` names its input (default ``tau_<link>`` for a revolute joint,
    ``F_<link>`` for a prismatic one; a two-angle link has two (``input`` a pair),
    ``tau_phi_<link>`` and ``tau_psi_<link>``, the generalized forces on its
    two angles) unless ``actuated=False``. ``limits``, ``effort`` and
    ``velocity`` are kept with the model (``limits`` give limit blocks as in
    the planar model; ``effort`` and ``velocity`` are recorded only).
    ``friction`` is dry friction with stiction on a one-coordinate joint
    (:class:`~rodgen.model.core.Friction`, or a mapping ``{static, kinetic}``).
    """

    type: str = "revolute"
    axis: Vec3 = (0.0, 0.0, 1.0)
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)
    coordinate: Optional[str] = None
    coordinates: Optional[tuple[str, str]] = None
    angles: str = "relative"
    offset: Value = 0.0
    initial: Any = 0.0
    input: Any = None
    actuated: bool = True
    spring: Optional[Spring] = None
    damping: Optional[Value] = None
    limits: Optional[tuple[Optional[Value], Optional[Value]]] = None
    effort: Optional[Value] = None
    velocity: Optional[Value] = None
    friction: Any = None


@dataclass
class SpatialMarker:
    """A named frame on a link: the point ``fraction*length + offset`` along ``segment`` (or ``offset``
    along the link axis from the link frame's origin when ``segment`` is None) plus ``xyz`` (link frame),
    its axes rotated by ``rpy`` from the link frame."""

    name: str
    segment: Optional[str] = None
    fraction: Value = 0.0
    offset: Value = 0.0
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)


@dataclass
class SpatialLink:
    """A link of a spatial model: a body frame moved by ``joint`` relative to its parent (or the ground)."""

    name: str
    parent: Optional[str] = None
    at: str = "end"
    joint: SpatialJoint = field(default_factory=SpatialJoint)
    along: Vec3 = (1.0, 0.0, 0.0)
    bodies: list[Body] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    markers: list[SpatialMarker] = field(default_factory=list)

    # -- builder helpers -------------------------------------------------
    def body(self, mass: Value, com: Vec3 = (0.0, 0.0, 0.0), inertia: Any = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0), *,
             rpy: Vec3 = (0.0, 0.0, 0.0), name: Optional[str] = None) -> Body:
        """Add a rigid body (mass, centre of mass, inertia about it) and return it."""
        b = Body(mass, com, inertia, rpy, name)
        self.bodies.append(b)
        return b

    def rigid(self, name: str, length: Value, *, masses: Sequence[PointMass] = (),
              rod: Rod | None = None, rods: Sequence[Rod] = ()) -> Segment:
        """Append a rigid segment along the link axis and return it."""
        seg = Segment(name=name, length=length, variable=False, masses=list(masses),
                      rods=list(rods) + ([rod] if rod is not None else []))
        self.segments.append(seg)
        return seg

    def variable(self, name: str, length: Value, *, masses: Sequence[PointMass] = (),
                 rods: Sequence[Rod] = (), coordinate: str | None = None, force: str | None = None,
                 actuated: bool = True, spring: Spring | None = None, damping: Value | None = None,
                 limits: tuple[Optional[Value], Optional[Value]] | None = None) -> Segment:
        """Append a variable-length segment (a prismatic coordinate along the link axis) and return it."""
        seg = Segment(name=name, length=length, variable=True, masses=list(masses), rods=list(rods),
                      coordinate=coordinate, force=force, actuated=actuated, spring=spring, damping=damping,
                      limits=limits)
        self.segments.append(seg)
        return seg

    def telescopic(self, name: str, **kw: Any) -> Segment:
        """Append a telescopic segment (see :func:`rodgen.model.telescopic`) and return it."""
        seg = telescopic(name, **kw)
        self.segments.append(seg)
        return seg

    def marker(self, name: str, segment: str | None = None, fraction: Value = 0.0, offset: Value = 0.0, *,
               xyz: Vec3 = (0.0, 0.0, 0.0), rpy: Vec3 = (0.0, 0.0, 0.0)) -> SpatialMarker:
        """Add a marker frame and return it."""
        mk = SpatialMarker(name, segment, fraction, offset, xyz, rpy)
        self.markers.append(mk)
        return mk


@dataclass
class SpatialGround:
    """The ground plane ``n·r = height``: ``normal`` (any length, pointing up, away from the ground; made a
    unit vector by the symbolic stage) and ``height`` (the plane's distance from the origin along ``n``).

    Contacts and compliant ground contacts are measured in the ground's axes ``(t1, t2, n)``: ``t1`` is the
    world x axis projected onto the plane (the world y axis when the normal is along x), ``t2 = n × t1``;
    for the default ``normal = (0, 0, 1)`` they are the world axes. The planar ground line
    (:class:`~rodgen.model.core.Ground`, slope ``s``) is the plane whose normal is ``(-sin s, cos s, 0)``.
    """

    normal: Vec3 = (0.0, 0.0, 1.0)
    height: Value = 0.0


@dataclass
class SpatialModel(ForceBuilder):
    """A spatial (3D) tree of links on a fixed base; see the module docstring.

    ``gravity`` is a 3-vector (default ``(0, 0, -9.81)``). ``couplings`` map a
    dependent coordinate to an expression of the others (e.g. a URDF mimic
    joint), as in the planar :class:`~rodgen.model.core.Model`. ``ground`` is
    the ground plane (:class:`SpatialGround`, default ``z = 0``). ``forces``
    are force elements (:class:`~rodgen.model.core.Force`, the planar
    vocabulary with three components; the builder methods ``point_force``,
    ``spring_damper``, ``ground_contact``, ``viscous_friction``,
    ``coulomb_friction``; docs/forces-3d.md);
    ``contacts`` are point contacts at named frames against the ground plane and ``loops`` closures
    between two frames (docs/contacts-3d.md).
    """

    name: str
    links: list[SpatialLink] = field(default_factory=list)
    parameters: list[Parameter] = field(default_factory=list)
    gravity: Vec3 = (0.0, 0.0, -9.81)
    couplings: dict[str, Value] = field(default_factory=dict)
    doc: str = ""
    source: Optional[str] = None
    ground: SpatialGround = field(default_factory=SpatialGround)
    forces: list[Force] = field(default_factory=list)
    contacts: list[Contact] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)

    # -- builder API -----------------------------------------------------
    def parameter(self, name: str, value: float, unit: str = "", doc: str = "") -> str:
        """Declare a parameter and return its name (for use in expressions)."""
        self.parameters.append(Parameter(name, value, unit, doc))
        return name

    def link(self, name: str, parent: Optional[str] = None, *, joint: str = "revolute",
             axis: Vec3 = (0.0, 0.0, 1.0), xyz: Vec3 = (0.0, 0.0, 0.0), rpy: Vec3 = (0.0, 0.0, 0.0),
             at: str = "end", along: Vec3 = (1.0, 0.0, 0.0), coordinate: Optional[str] = None,
             initial: Value = 0.0, offset: Value = 0.0, input: Optional[str] = None, actuated: bool = True,
             spring: Optional[Spring] = None, damping: Optional[Value] = None,
             limits: Optional[tuple[Optional[Value], Optional[Value]]] = None,
             effort: Optional[Value] = None, velocity: Optional[Value] = None,
             friction: Optional[Friction] = None) -> SpatialLink:
        """Add a link with a revolute, prismatic, fixed, free, spherical or planar joint and return it.

        ``xyz``/``rpy`` place the joint frame relative to the attachment point ``at`` of the parent
        (``parent=None``: the ground frame); ``axis`` is the joint axis in the link frame.
        """
        jt = SpatialJoint(joint, axis, xyz, rpy, coordinate=coordinate, offset=offset, initial=initial,
                          input=input, actuated=actuated, spring=spring, damping=damping, limits=limits,
                          effort=effort, velocity=velocity, friction=friction)
        lk = SpatialLink(name=name, parent=parent, at=at, joint=jt, along=along)
        self.links.append(lk)
        return lk

    def fixed(self, name: str, parent: Optional[str] = None, *, xyz: Vec3 = (0.0, 0.0, 0.0),
              rpy: Vec3 = (0.0, 0.0, 0.0), at: str = "end", along: Vec3 = (1.0, 0.0, 0.0)) -> SpatialLink:
        """Add a link welded to its parent (a fixed joint) and return it."""
        return self.link(name, parent, joint="fixed", xyz=xyz, rpy=rpy, at=at, along=along)

    def two_angle_link(self, name: str, parent: Optional[str] = None, *, angles: str = "absolute",
                       coordinates: Optional[tuple[str, str]] = None, initial: tuple[Value, Value] = (0.0, 0.0),
                       xyz: Vec3 = (0.0, 0.0, 0.0), at: str = "end", actuated: bool = True,
                       inputs: Optional[tuple[str, str]] = None) -> SpatialLink:
        """Add Borisov's two-angle link (phi, psi; link axis x) and return it; add segments to it.

        ``angles="absolute"`` (Borisov): the angles are measured in the ground frame; the parent must be
        None, an absolute two-angle link or a link that only translates (prismatic and fixed joints without
        rpy from the ground: a free base point). ``angles="relative"``: in the parent's frame.
        """
        jt = SpatialJoint("two_angle", xyz=xyz, coordinates=coordinates, angles=angles, initial=initial,
                          actuated=actuated, input=inputs)
        lk = SpatialLink(name=name, parent=parent, at=at, joint=jt)
        self.links.append(lk)
        return lk

    def couple(self, coordinate: str, expression: Value) -> str:
        """Make ``coordinate`` a function of the other coordinates (see ``Model.couple``); return its name."""
        self.couplings[coordinate] = expression
        return coordinate

    def contact(self, name: str, frame: Optional[str] = None, friction: Value = 1.0, rows: int = 3,
                sole: Optional[tuple[float, float, float, float]] = None) -> Contact:
        """Declare a point contact at the origin of the named frame ``frame`` (default: the frame named
        ``name``; a marker, a link (its joint frame), a body or a segment's end ``<segment>.end``) against
        the ground plane, with Coulomb coefficient ``friction``; ``rows=6``: a flat foot (the frame's
        orientation is held too) whose ``sole`` ``(x_min, x_max, y_min, y_max)`` (in the frame's two
        tangential axes) bounds its centre of pressure in the hybrid simulation; return it."""
        c = Contact(name, frame, friction, None if rows == 3 else rows, sole)
        self.contacts.append(c)
        return c

    def loop(self, name: str, a: str, b: str, rows: int = 3) -> Loop:
        """Declare a loop closure between the frames ``a`` and ``b``: their origins coincide (``rows=3``)
        or their origins and orientations (``rows=6``); return it."""
        lp = Loop(name, a, b, rows)
        self.loops.append(lp)
        return lp

    # -- queries -------------------------------------------------------------
    def link_named(self, name: str) -> SpatialLink:
        for lk in self.links:
            if lk.name == name:
                return lk
        raise KeyError(name)

    def children(self, name: Optional[str]) -> list[SpatialLink]:
        return [lk for lk in self.links if lk.parent == name]

    def coordinates(self) -> list[Coordinate]:
        return self.validate().coordinates()

    def inputs(self) -> list[Input]:
        return self.validate().inputs()

    def parameter_values(self) -> dict[str, float]:
        return {p.name: float(p.value) for p in self.parameters}

    def validate(self) -> "ValidSpatialModel":
        """Check the model and return its :class:`ValidSpatialModel` (a ModelError names the place)."""
        return validate_spatial(self)


# ---------------------------------------------------------------------------
# the validated spatial model
# ---------------------------------------------------------------------------

Vec3E = tuple[Expression, Expression, Expression]


@dataclass(frozen=True)
class ValidBody:
    """A rigid body: ``inertia`` about the centre of mass, ``(ixx, ixy, ixz, iyy, iyz, izz)`` in axes rotated
    by ``rpy`` from the link frame."""

    mass: Expression
    com: Vec3E
    inertia: tuple[Expression, Expression, Expression, Expression, Expression, Expression]
    rpy: Vec3E
    name: Optional[str] = None


@dataclass(frozen=True)
class ValidSpatialJoint:
    """A joint with every default resolved. ``coordinates`` has one name (revolute, prismatic), two
    (two_angle) or none (fixed); ``inputs`` the matching input names (empty when not actuated);
    ``initial`` one expression per coordinate; ``axis`` is a unit vector (revolute, prismatic)."""

    type: str
    axis: Vec3E
    xyz: Vec3E
    rpy: Vec3E
    coordinates: tuple[str, ...]
    inputs: tuple[str, ...]
    initial: tuple[Expression, ...]
    offset: Expression
    angles: str = "relative"
    spring: Optional[ValidSpring] = None
    damping: Optional[Expression] = None
    limits: Bounds = None
    effort: Optional[Expression] = None
    velocity: Optional[Expression] = None
    #: the velocity names when they are not the coordinates' rates (a free joint: six of them)
    velocities: tuple[str, ...] = ()
    friction: Optional[ValidFriction] = None


@dataclass(frozen=True)
class ValidSpatialMarker:
    name: str
    segment: Optional[str]
    fraction: Expression
    offset: Expression
    xyz: Vec3E
    rpy: Vec3E


@dataclass(frozen=True)
class ValidSpatialLink:
    name: str
    parent: Optional[str]
    at: str
    joint: ValidSpatialJoint
    along: Vec3E
    bodies: tuple[ValidBody, ...] = ()
    segments: tuple[ValidSegment, ...] = ()
    markers: tuple[ValidSpatialMarker, ...] = ()


@dataclass(frozen=True)
class ValidSpatialGround:
    """The ground plane ``n·r = height`` (``normal`` not yet made a unit vector; never the zero vector)."""

    normal: Vec3E = field(default_factory=lambda: (parse("0"), parse("0"), parse("1")))
    height: Expression = field(default_factory=lambda: parse("0"))


@dataclass(frozen=True)
class ValidSpatialModel:
    """A checked spatial model; ``links`` in tree order (parents first). ``contacts`` name frames
    (:meth:`frame_names`), ``loops`` two frames and their rows (3 or 6); ``forces`` are its force elements
    (:class:`~rodgen.model.valid.ValidForce`, vectors of three components)."""

    name: str
    links: tuple[ValidSpatialLink, ...]
    parameters: tuple[Any, ...]
    gravity: Vec3E
    couplings: Mapping[str, Expression] = field(default_factory=lambda: MappingProxyType({}))
    doc: str = ""
    source: Optional[str] = None
    base: str = "fixed"
    ground: ValidSpatialGround = field(default_factory=ValidSpatialGround)
    contacts: tuple[ValidContact, ...] = ()
    loops: tuple[ValidLoop, ...] = ()
    forces: tuple[ValidForce, ...] = ()

    spatial = True

    def __hash__(self) -> int:
        return hash((self.name, self.links, self.parameters, tuple(self.couplings.items())))

    def link_named(self, name: str) -> ValidSpatialLink:
        for lk in self.links:
            if lk.name == name:
                return lk
        raise KeyError(name)

    def children(self, name: Optional[str]) -> list[ValidSpatialLink]:
        return [lk for lk in self.links if lk.parent == name]

    def iter_segments(self) -> Iterator[tuple[ValidSpatialLink, ValidSegment]]:
        for lk in self.links:
            for sg in lk.segments:
                yield lk, sg

    def coordinates(self) -> list[Coordinate]:
        """Per link (tree order): its joint's coordinates, then the lengths of its variable segments."""
        out: list[Coordinate] = []
        for lk in self.links:
            kind = "position" if lk.joint.type == "prismatic" else "angle"
            for nm, x0 in zip(lk.joint.coordinates, lk.joint.initial):
                out.append(Coordinate(nm, "base" if lk.joint.type in LIE_JOINTS else kind, lk.name, None, x0))
            for sg in lk.segments:
                if sg.extension is not None:
                    out.append(Coordinate(sg.extension.coordinate, "length", lk.name, sg.name, sg.length))
        return out

    def independent_coordinates(self) -> list[Coordinate]:
        return [c for c in self.coordinates() if c.name not in self.couplings]

    def velocities(self) -> list[tuple[str, Optional[str]]]:
        """The nv velocities, in order: ``(name, coordinate)``, where ``coordinate`` is the coordinate
        whose rate the velocity is, or None for a free joint's velocities (they are not the rates of
        its quaternion coordinates: see the module docstring)."""
        out: list[tuple[str, Optional[str]]] = []
        for c in self.coordinates():
            lk = self.link_named(c.link) if c.link is not None else None
            if lk is not None and lk.joint.type in LIE_JOINTS:
                if c.name == lk.joint.coordinates[0]:
                    out.extend((v, None) for v in lk.joint.velocities)
                continue
            out.append((c.name + "'", c.name))
        return out

    @property
    def floating(self) -> bool:
        """True when a link has a free joint (then nq != nv)."""
        return any(lk.joint.type == "free" for lk in self.links)

    @property
    def lie(self) -> bool:
        """True when a link has a free, spherical or planar joint (velocities that are not the coordinates'
        rates)."""
        return any(lk.joint.type in LIE_JOINTS for lk in self.links)

    def inputs(self) -> list[Input]:
        """Per link: its joint's inputs, then the forces of its variable segments."""
        out: list[Input] = []
        for lk in self.links:
            kind = "force" if lk.joint.type == "prismatic" else "torque"
            for nm in lk.joint.inputs:
                out.append(Input(nm, kind, lk.name, None))
            for sg in lk.segments:
                if sg.extension is not None and sg.extension.force is not None:
                    out.append(Input(sg.extension.force, "force", lk.name, sg.name))
        return out

    def limits(self) -> list[Limit]:
        out: list[Limit] = []

        def add(bounds: Bounds, coord: str, link: str, segment: Optional[str]) -> None:
            for side, bound in zip(("lower", "upper"), bounds or ()):
                if bound is not None:
                    out.append(Limit(f"{coord}_{side}", coord, side, bound, link, segment))

        for lk in self.links:
            if len(lk.joint.coordinates) == 1:
                add(lk.joint.limits, lk.joint.coordinates[0], lk.name, None)
            for sg in lk.segments:
                if sg.extension is not None:
                    add(sg.extension.limits, sg.extension.coordinate, lk.name, sg.name)
        return out

    def frictions(self) -> list[FrictionBlock]:
        """The dry-friction blocks in order: per link, its joint's, then those of its variable segments."""
        out: list[FrictionBlock] = []
        for lk in self.links:
            if lk.joint.friction is not None:
                f = lk.joint.friction
                c = lk.joint.coordinates[0]
                out.append(FrictionBlock(f"{c}_friction", c, f.static, f.kinetic, lk.name))
            for sg in lk.segments:
                if sg.extension is not None and sg.extension.friction is not None:
                    f, c = sg.extension.friction, sg.extension.coordinate
                    out.append(FrictionBlock(f"{c}_friction", c, f.static, f.kinetic, lk.name, sg.name))
        return out

    def frame_names(self) -> dict[str, str]:
        """Every named frame of the model (a contact's or loop's place) -> the link it moves with: per link
        its name and ``<link>.joint`` (the joint frame), its named bodies, ``<segment>.end`` and the named
        points of its segments, its markers."""
        out: dict[str, str] = {}
        for lk in self.links:
            out[lk.name] = out[f"{lk.name}.joint"] = lk.name
            for b in lk.bodies:
                if b.name is not None:
                    out[b.name] = lk.name
            for sg in lk.segments:
                out[f"{sg.name}.end"] = lk.name
                for nm in [pm.name for pm in sg.masses] + [rd.name for rd in sg.rods]:
                    if nm is not None:
                        out[nm] = lk.name
            for mk in lk.markers:
                out[mk.name] = lk.name
        return out

    def markers(self) -> dict[str, tuple[ValidSpatialLink, ValidSpatialMarker]]:
        return {mk.name: (lk, mk) for lk in self.links for mk in lk.markers}

    def point_links(self) -> dict[str, str]:
        """Every named frame a force element may act at, with the name of its link: the frames of
        :meth:`frame_names` but a link's bare name (a force names ``<link>.joint``); the names of
        ``Equations.frames``."""
        links = {lk.name for lk in self.links}
        return {nm: lk for nm, lk in self.frame_names().items() if nm not in links or nm.endswith(".joint")}

    def parameter_values(self) -> dict[str, float]:
        return {p.name: p.value for p in self.parameters}

    def value(self, v: Expression) -> float:
        return v.evaluate(self.parameter_values())

    def validate(self) -> "ValidSpatialModel":
        return self


def validate_spatial(model: SpatialModel) -> ValidSpatialModel:
    """Check a SpatialModel and return its ValidSpatialModel (see :mod:`rodgen.model.spatial_validate`)."""
    from .spatial_validate import validate_spatial_model
    return validate_spatial_model(model)


__all__ = ["SpatialModel", "SpatialLink", "SpatialJoint", "SpatialMarker", "Body", "JOINT_TYPES",
           "TWO_ANGLE_CONVENTIONS", "ValidSpatialModel", "ValidSpatialLink", "ValidSpatialJoint",
           "ValidSpatialMarker", "ValidBody", "default_joint_coordinate", "default_joint_input",
           "FREE_COORDINATES", "FREE_VELOCITIES", "LIE_JOINTS", "free_coordinates", "free_velocities",
           "default_two_angle_coordinates"]
