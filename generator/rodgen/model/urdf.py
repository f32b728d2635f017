"""URDF files: reading and checking (the model stage: no SymPy).

:func:`read_urdf` reads a URDF file into a :class:`UrdfRobot`, a plain and
frozen description of what the file says: links with their inertials, joints
with origins, axes, limits, dynamics and mimic relations, in tree order
(parents before children). It refuses, with a :class:`~rodgen.errors.ModelError`
naming the file, the line and the element, everything rodgen cannot represent
or that is wrong:

- XML that is not well formed, a root element other than ``<robot>``, DOCTYPE
  entity declarations;
- a ``planar`` joint whose axis is not ``0 0 1``, a ``floating`` joint other
  than one joining a massless root link (a ``world``) to the robot's base (which
  makes the base float, see :func:`from_urdf`), an unknown joint type, a joint
  whose parent or child is not a link of the file, a link that is the child of
  two joints (a kinematic loop), a cycle, several roots;
- malformed numbers (``xyz="0 0"``, ``value="1x"``, NaN, infinities), a negative
  mass, an inertia tensor that is not positive semi-definite, an axis of zero
  length, a ``<limit>`` missing on a revolute or prismatic joint (as the URDF
  specification and urdfdom require), a lower limit above the upper one;
- a mimic joint that names an unknown or fixed joint, or a chain of mimics
  that closes on itself;
- a link without ``<inertial>`` that moves and carries a moving joint (almost
  always an omission; write ``<inertial>`` with ``mass value="0"`` to say the
  link is massless on purpose), and a mass matrix that is singular because a
  joint moves no mass (checked numerically at a few configurations, see
  :func:`check_mass_matrix`).

Visual and collision elements, materials, transmissions, ``<gazebo>`` and any
other element are ignored, as are ``<calibration>`` and ``<safety_controller>``
of a joint.

Why the standard library and not a URDF package: the reader must refuse bad
files with a message naming the line and element, and the packages tried
accept them (yourdfpy 0.0.60 loads an unknown joint type such as ``hinge`` and
a joint whose child link does not exist, and reports a malformed number as a
bare ``could not convert string to float``, without file or element); URDF is
a small format; and rodgen keeps no dependency for it (yourdfpy would bring
trimesh and lxml for meshes rodgen ignores). The file is read with
:mod:`xml.parsers.expat`, which reports the line of every element.

Conventions (those of the URDF specification and of urdfdom / Pinocchio): an
``origin``'s ``rpy`` is the rotation ``Rz(yaw) Ry(pitch) Rx(roll)`` about the
fixed axes; a joint's placement is that of its child link's frame in the parent
link's frame at zero displacement; the axis is given in the joint (child) frame
and normalised here; the inertia is about the centre of mass, in the frame of
the inertial's origin.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Optional, Sequence, Union
from xml.parsers import expat

import numpy as np

from ..errors import ModelError

if TYPE_CHECKING:
    from .spatial import SpatialModel

PathLike = Union[str, "os.PathLike[str]"]

#: Joint types rodgen represents (``continuous``: a revolute joint without position limits).
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
#: Joint types of the URDF specification rodgen cannot represent yet.
UNSUPPORTED_JOINT_TYPES: tuple[str, ...] = ()
#: Joint types that move.
MOVING = ("revolute", "continuous", "prismatic")

Vec3 = tuple[float, float, float]


# -- the XML, with lines --------------------------------------------------------------------------------

@dataclass
class _Node:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list["_Node"] = field(default_factory=list)

    def all(self, tag: str) -> list["_Node"]:
        return [c for c in self.children if c.tag == tag]


def _parse_xml(data: bytes, src: str) -> _Node:
    parser = expat.ParserCreate()
    stack: list[_Node] = []
    root: list[_Node] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        node = _Node(tag, dict(attrs), parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    def entity(*args: object) -> None:
        raise ModelError("entity declarations are not accepted in a URDF file", source=src,
                         where=f"line {parser.CurrentLineNumber}")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.EntityDeclHandler = entity
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise ModelError(f"not well-formed XML: {expat.ErrorString(exc.code)}", source=src,
                         where=f"line {exc.lineno}, column {exc.offset + 1}") from None
    if not root:
        raise ModelError("no XML element in the file", source=src)
    return root[0]


# -- what the file says ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class UrdfInertial:
    """A link's ``<inertial>``: ``mass``, the centre of mass ``com`` in the link frame and the inertia
    tensor ``inertia`` (3x3, row-major tuples) about the centre of mass in the *link* frame (the
    ``rpy`` of the inertial's origin already applied)."""

    mass: float
    com: Vec3
    inertia: tuple[Vec3, Vec3, Vec3]
    #: as the file writes them: ``(ixx, ixy, ixz, iyy, iyz, izz)`` in axes rotated by ``rpy``
    moments: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class UrdfLink:
    """A ``<link>``: its name, its inertial (None when the file gives none) and the line it stands on."""

    name: str
    inertial: Optional[UrdfInertial]
    line: int = 0


@dataclass(frozen=True)
class UrdfLimit:
    """A joint's ``<limit>``: position bounds (None where the file gives none: continuous joints), effort
    and velocity bounds (None when absent)."""

    lower: Optional[float]
    upper: Optional[float]
    effort: Optional[float]
    velocity: Optional[float]


@dataclass(frozen=True)
class UrdfMimic:
    """``<mimic>``: this joint's displacement is ``multiplier * q[joint] + offset``."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class UrdfJoint:
    """A ``<joint>``: placement of the child frame in the parent frame (``xyz``, ``rpy``), the unit
    ``axis`` in the joint frame, the limit, dynamics (damping, friction) and mimic relation."""

    name: str
    type: str
    parent: str
    child: str
    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)
    axis: Vec3 = (1.0, 0.0, 0.0)
    limit: Optional[UrdfLimit] = None
    mimic: Optional[UrdfMimic] = None
    damping: float = 0.0
    friction: float = 0.0
    line: int = 0

    @property
    def moving(self) -> bool:
        return self.type in MOVING

    @property
    def rotation(self) -> np.ndarray:
        """The rotation of the origin (3x3)."""
        return rpy_matrix(self.rpy)


@dataclass(frozen=True)
class UrdfRobot:
    """A URDF file as read and checked: ``links`` and ``joints`` in tree order (a joint after the
    joint that moves its parent link), ``root`` the link no joint moves.

    ``mimics`` maps every mimic joint to (independent joint, multiplier, offset), chains of mimics
    resolved to the joint at their end.
    """

    name: str
    root: str
    links: tuple[UrdfLink, ...]
    joints: tuple[UrdfJoint, ...]
    source: Optional[str] = None
    #: the file joined the world to ``root`` by a ``floating`` joint (see :func:`read_urdf`): the root floats
    floating: bool = False

    def link(self, name: str) -> UrdfLink:
        for lk in self.links:
            if lk.name == name:
                return lk
        raise KeyError(name)

    def joint(self, name: str) -> UrdfJoint:
        for jt in self.joints:
            if jt.name == name:
                return jt
        raise KeyError(name)

    @property
    def mimics(self) -> dict[str, tuple[str, float, float]]:
        return _resolve_mimics(self.joints, self.source)

    def coordinates(self) -> list[str]:
        """The names of the independent moving joints, in tree order (the coordinates)."""
        mim = self.mimics
        return [j.name for j in self.joints if j.moving and j.name not in mim]

    def displacements(self, q: Union[Sequence[float], np.ndarray]) -> dict[str, float]:
        """The displacement of every moving joint for the coordinates ``q`` (mimics applied)."""
        names = self.coordinates()
        qv = np.asarray(q, dtype=float).reshape(-1)
        if qv.size != len(names):
            raise ValueError(f"expected {len(names)} coordinates ({', '.join(names)}), got {qv.size}")
        out = dict(zip(names, (float(x) for x in qv)))
        for name, (src, mult, off) in self.mimics.items():
            out[name] = mult * out[src] + off
        return out

    def placements(self, q: Union[Sequence[float], np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Forward kinematics: (rotation, position) of every link frame in the root frame."""
        disp = self.displacements(q)
        out: dict[str, tuple[np.ndarray, np.ndarray]] = {self.root: (np.eye(3), np.zeros(3))}
        for j in self.joints:
            R0, p0 = out[j.parent]
            R = R0 @ j.rotation
            p = p0 + R0 @ np.asarray(j.xyz)
            if j.moving:
                a = np.asarray(j.axis)
                if j.type == "prismatic":
                    p = p + R @ a * disp[j.name]
                else:
                    R = R @ axis_angle(a, disp[j.name])
            out[j.child] = (R, p)
        return out

    def mass_matrix(self, q: Union[Sequence[float], np.ndarray]) -> np.ndarray:
        """The joint-space mass matrix at ``q`` (for the model's own checks), mimic joints folded in.

        The composite-rigid-body algorithm in world coordinates (spatial vectors about the root's origin):
        each moving joint's motion ``S = (a, p × a)`` (revolute; ``(0, a)`` prismatic), each link's spatial
        inertia added into the nearest moving joint above it and the subtrees summed leaf to root, then
        ``M[i, j] = S_iᵀ I_j S_j`` for every joint i at or above j: O(n · depth) arithmetic, n array
        operations."""
        names = self.coordinates()
        index = {n: k for k, n in enumerate(names)}
        mim = self.mimics
        place = self.placements(q)
        n = len(names)
        motions, cols, up = [], [], []
        carrier: dict[str, int] = {self.root: -1}   # the row of the nearest moving joint above each link
        for j in self.joints:
            row = carrier[j.parent]
            if j.moving:
                Rj, pj = place[j.child]
                src, mult = (mim[j.name][0], mim[j.name][1]) if j.name in mim else (j.name, 1.0)
                a = mult * (Rj @ np.asarray(j.axis, dtype=float))
                motions.append(np.concatenate([np.zeros(3), a]) if j.type == "prismatic" else
                               np.concatenate([a, np.cross(pj, a)]))
                cols.append(index[src])
                up.append(row)
                row = len(motions) - 1
            carrier[j.child] = row
        M = np.zeros((n, n))
        if not motions:
            return M
        m = len(motions)
        S = np.array(motions)
        composite = np.zeros((m, 6, 6))
        for lk in self.links:
            row = carrier.get(lk.name, -1)
            if lk.inertial is None or row < 0:
                continue
            R, p = place[lk.name]
            c = p + R @ np.asarray(lk.inertial.com)
            mass = lk.inertial.mass
            cx = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
            inertia = np.empty((6, 6))
            inertia[:3, :3] = R @ np.asarray(lk.inertial.inertia) @ R.T - mass * cx @ cx
            inertia[:3, 3:] = mass * cx
            inertia[3:, :3] = -mass * cx
            inertia[3:, 3:] = mass * np.eye(3)
            composite[row] += inertia
        for row in range(m - 1, -1, -1):  # tree order: a joint's subtree comes after it
            if up[row] >= 0:
                composite[up[row]] += composite[row]
        F = np.einsum("kij,kj->ki", composite, S)
        Mj = np.zeros((m, m))
        chain = [[] for _ in range(m)]  # type: list[list[int]]
        for row in range(m):
            chain[row] = (chain[up[row]] if up[row] >= 0 else []) + [row]
            r = np.array(chain[row])
            values = S[r] @ F[row]
            Mj[r, row] = values
            Mj[row, r] = values
        C = np.array(cols)
        if np.array_equal(C, np.arange(m)):
            return Mj
        np.add.at(M, (C[:, None], C[None, :]), Mj)
        return M


def rpy_matrix(rpy: Iterable[float]) -> np.ndarray:
    """The rotation of URDF's ``rpy``: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def axis_angle(axis: Iterable[float], angle: float) -> np.ndarray:
    """The rotation by ``angle`` about the unit ``axis`` (Rodrigues)."""
    a = np.asarray(list(axis), dtype=float)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


# -- reading --------------------------------------------------------------------------------------------

class _Reader:
    def __init__(self, src: str) -> None:
        self.src = src

    def err(self, msg: str, node: _Node, what: str) -> ModelError:
        return ModelError(msg, source=self.src, where=f"line {node.line}, {what}")

    def numbers(self, node: _Node, attr: str, count: int, what: str, default: Optional[tuple[float, ...]] = None,
                ) -> tuple[float, ...]:
        text = node.attrs.get(attr)
        if text is None:
            if default is None:
                raise self.err(f"<{node.tag}> has no attribute {attr!r}", node, what)
            return default
        parts = text.split()
        if len(parts) != count:
            raise self.err(f"<{node.tag} {attr}=\"{text}\">: expected {count} number"
                           f"{'s' if count > 1 else ''}, got {len(parts)}", node, what)
        out = []
        for part in parts:
            try:
                v = float(part)
            except ValueError:
                raise self.err(f"<{node.tag} {attr}=\"{text}\">: {part!r} is not a number", node, what) from None
            if not math.isfinite(v):
                raise self.err(f"<{node.tag} {attr}=\"{text}\">: {part!r} is not a finite number", node, what)
            out.append(v)
        return tuple(out)

    def number(self, node: _Node, attr: str, what: str, default: Optional[float] = None) -> float:
        return self.numbers(node, attr, 1, what, None if default is None else (default,))[0]

    def optional(self, node: _Node, attr: str, what: str) -> Optional[float]:
        return self.number(node, attr, what) if attr in node.attrs else None

    def one(self, node: _Node, tag: str, what: str, required: bool = False) -> Optional[_Node]:
        found = node.all(tag)
        if len(found) > 1:
            raise self.err(f"more than one <{tag}>", found[1], what)
        if not found:
            if required:
                raise self.err(f"<{node.tag}> has no <{tag}>", node, what)
            return None
        return found[0]

    def name(self, node: _Node, what: str) -> str:
        nm = node.attrs.get("name")
        if nm is None or not nm.strip():
            raise self.err(f"<{node.tag}> has no name", node, what)
        return nm

    def origin(self, node: _Node, what: str) -> tuple[Vec3, Vec3]:
        o = self.one(node, "origin", what)
        if o is None:
            return (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        xyz = self.numbers(o, "xyz", 3, what, (0.0, 0.0, 0.0))
        rpy = self.numbers(o, "rpy", 3, what, (0.0, 0.0, 0.0))
        return xyz, rpy  # type: ignore[return-value]

    def link(self, node: _Node) -> UrdfLink:
        name = self.name(node, "link")
        what = f"link {name!r}"
        inn = self.one(node, "inertial", what)
        if inn is None:
            return UrdfLink(name, None, node.line)
        iw = f"{what}, <inertial>"
        xyz, rpy = self.origin(inn, iw)
        mnode = self.one(inn, "mass", iw, required=True)
        assert mnode is not None
        mass = self.number(mnode, "value", iw)
        if mass < 0:
            raise self.err(f"the mass must not be negative, got {mass}", mnode, iw)
        inode = self.one(inn, "inertia", iw, required=True)
        assert inode is not None
        ixx, ixy, ixz, iyy, iyz, izz = (self.number(inode, k, iw)
                                        for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        I_in = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        scale = max(1.0, float(np.abs(I_in).max()))
        if np.linalg.eigvalsh(I_in).min() < -1e-9 * scale:
            raise self.err(f"the inertia tensor is not positive semi-definite (eigenvalues "
                           f"{', '.join(f'{e:.6g}' for e in np.linalg.eigvalsh(I_in))})", inode, iw)
        R = rpy_matrix(rpy)
        I_link = R @ I_in @ R.T
        I_link = (I_link + I_link.T) / 2
        inertia = tuple(tuple(float(v) for v in row) for row in I_link)
        return UrdfLink(name, UrdfInertial(mass, xyz, inertia, (ixx, ixy, ixz, iyy, iyz, izz), rpy),  # type: ignore
                        node.line)

    def joint(self, node: _Node, links: Mapping[str, UrdfLink]) -> UrdfJoint:
        name = self.name(node, "joint")
        what = f"joint {name!r}"
        jtype = node.attrs.get("type")
        if jtype is None:
            raise self.err("<joint> has no type", node, what)
        if jtype in UNSUPPORTED_JOINT_TYPES:
            raise self.err(f"joint type {jtype!r} cannot be represented by rodgen (supported: "
                           f"{', '.join(JOINT_TYPES)})", node, what)
        if jtype not in JOINT_TYPES:
            raise self.err(f"unknown joint type {jtype!r} (supported: {', '.join(JOINT_TYPES)})", node, what)
        ends = []
        for tag in ("parent", "child"):
            e = self.one(node, tag, what, required=True)
            assert e is not None
            ln = e.attrs.get("link")
            if ln is None:
                raise self.err(f"<{tag}> has no link", e, what)
            if ln not in links:
                raise self.err(f"the {tag} link {ln!r} is not a link of the file", e, what)
            ends.append(ln)
        parent, child = ends
        if parent == child:
            raise self.err(f"the joint connects link {parent!r} to itself (a cycle)", node, what)
        xyz, rpy = self.origin(node, what)
        axis: Vec3 = (1.0, 0.0, 0.0)
        anode = self.one(node, "axis", what)
        if anode is not None and jtype != "fixed":
            a = np.asarray(self.numbers(anode, "xyz", 3, what, (1.0, 0.0, 0.0)))
            norm = float(np.linalg.norm(a))
            if norm < 1e-12:
                raise self.err("the axis has zero length", anode, what)
            axis = tuple(float(v) for v in a / norm)  # type: ignore[assignment]
        if jtype == "planar" and (anode is None or max(abs(axis[0]), abs(axis[1]), abs(axis[2] - 1.0)) > 1e-12):
            raise self.err(f"a planar joint moves its child in the plane normal to its axis; rodgen's planar joint "
                           f"(x, y, theta in the joint frame's xy plane, as Pinocchio's) needs <axis xyz=\"0 0 1\">"
                           f" (rotate the joint's <origin> instead), got {axis}", anode or node, what)
        limit = None
        lnode = self.one(node, "limit", what)
        if lnode is not None and jtype in MOVING:
            lower = self.optional(lnode, "lower", what)
            upper = self.optional(lnode, "upper", what)
            if jtype == "continuous":
                lower = upper = None
            else:   # the specification's defaults
                lower = 0.0 if lower is None else lower
                upper = 0.0 if upper is None else upper
                if lower > upper:
                    raise self.err(f"the lower limit {lower} is above the upper limit {upper}", lnode, what)
            limit = UrdfLimit(lower, upper, self.optional(lnode, "effort", what),
                              self.optional(lnode, "velocity", what))
        elif jtype in ("revolute", "prismatic"):
            raise self.err(f"a {jtype} joint needs a <limit> (use type 'continuous' for a revolute joint "
                           f"without limits)", node, what)
        mimic = None
        mnode = self.one(node, "mimic", what)
        if mnode is not None and jtype in MOVING:
            src = mnode.attrs.get("joint")
            if not src:
                raise self.err("<mimic> names no joint", mnode, what)
            mimic = UrdfMimic(src, self.number(mnode, "multiplier", what, 1.0),
                              self.number(mnode, "offset", what, 0.0))
        damping = friction = 0.0
        dnode = self.one(node, "dynamics", what)
        if dnode is not None:
            damping = self.number(dnode, "damping", what, 0.0)
            friction = self.number(dnode, "friction", what, 0.0)
        return UrdfJoint(name, jtype, parent, child, xyz, rpy, axis, limit, mimic, damping, friction,  # type: ignore
                         node.line)

    def robot(self, root: _Node) -> UrdfRobot:
        if root.tag != "robot":
            raise self.err(f"the root element is <{root.tag}>, expected <robot>", root, "robot")
        rname = root.attrs.get("name", "")
        links: dict[str, UrdfLink] = {}
        for node in root.all("link"):
            lk = self.link(node)
            if lk.name in links:
                raise self.err(f"a second link named {lk.name!r} (the first is on line {links[lk.name].line})",
                               node, f"link {lk.name!r}")
            links[lk.name] = lk
        if not links:
            raise self.err("the robot has no <link>", root, "robot")
        joints: dict[str, UrdfJoint] = {}
        parent_of: dict[str, UrdfJoint] = {}
        for node in root.all("joint"):
            jt = self.joint(node, links)
            if jt.name in joints:
                raise self.err(f"a second joint named {jt.name!r} (the first is on line {joints[jt.name].line})",
                               node, f"joint {jt.name!r}")
            if jt.child in parent_of:
                first = parent_of[jt.child]
                raise self.err(f"link {jt.child!r} is the child of both joint {first.name!r} and joint "
                               f"{jt.name!r}: a kinematic loop, which a URDF tree cannot hold", node,
                               f"joint {jt.name!r}")
            joints[jt.name] = jt
            parent_of[jt.child] = jt
        roots = [n for n in links if n not in parent_of]
        if len(roots) > 1:
            raise ModelError(f"several root links ({', '.join(repr(r) for r in roots)}): a URDF robot is one "
                             f"tree; connect them with joints", source=self.src, where="robot")
        if not roots:
            raise ModelError(f"the joints form a cycle: {self.cycle(next(iter(links)), parent_of)}",
                             source=self.src, where="robot")
        order = self.tree_order(roots[0], joints, parent_of)
        robot = UrdfRobot(rname, roots[0], tuple(links[n] for n in [roots[0]] + [j.child for j in order]),
                          tuple(order), self.src)
        _resolve_mimics(robot.joints, self.src)
        return robot

    def cycle(self, start: str, parent_of: Mapping[str, UrdfJoint]) -> str:
        seen: list[str] = []
        cur = start
        while cur not in seen:
            seen.append(cur)
            cur = parent_of[cur].parent
        ring = seen[seen.index(cur):]
        ring.reverse()
        return " -> ".join(f"{lk!r} (joint {parent_of[lk].name!r})" for lk in ring) + f" -> {ring[0]!r}"

    def tree_order(self, root: str, joints: Mapping[str, UrdfJoint],
                   parent_of: Mapping[str, UrdfJoint]) -> list[UrdfJoint]:
        children: dict[str, list[UrdfJoint]] = {}
        for jt in joints.values():
            children.setdefault(jt.parent, []).append(jt)
        # depth-first from the root, children in file order
        order: list[UrdfJoint] = []
        stack = list(reversed(children.get(root, [])))
        while stack:
            jt = stack.pop()
            order.append(jt)
            stack.extend(reversed(children.get(jt.child, [])))
        if len(order) != len(joints):
            reached = {j.name for j in order}
            rest = [j for j in joints.values() if j.name not in reached]
            raise ModelError(f"the joints form a cycle: {self.cycle(rest[0].child, parent_of)}", source=self.src,
                             where=f"line {rest[0].line}, joint {rest[0].name!r}")
        return order


def _resolve_mimics(joints: Sequence[UrdfJoint], src: Optional[str]) -> dict[str, tuple[str, float, float]]:
    byname = {j.name: j for j in joints}
    out: dict[str, tuple[str, float, float]] = {}
    for j in joints:
        if j.mimic is None:
            continue
        what = f"line {j.line}, joint {j.name!r}"
        mult, off = 1.0, 0.0
        cur = j
        seen = [j.name]
        while cur.mimic is not None:
            m = cur.mimic
            target = byname.get(m.joint)
            if target is None:
                raise ModelError(f"<mimic joint={m.joint!r}> names no joint of the file", source=src, where=what)
            if not target.moving:
                raise ModelError(f"<mimic joint={m.joint!r}> names a fixed joint", source=src, where=what)
            if target.name in seen:
                raise ModelError(f"the mimic joints form a cycle: {' -> '.join(seen + [target.name])}", source=src,
                                 where=what)
            # q_cur = m.multiplier * q_target + m.offset, and q_j = mult * q_cur + off
            off = mult * m.offset + off
            mult = mult * m.multiplier
            seen.append(target.name)
            cur = target
        out[j.name] = (cur.name, mult, off)
    return out


def _floating_root(robot: UrdfRobot) -> UrdfRobot:
    """A file whose root link (a massless ``world``) holds the robot by a ``floating`` joint: the robot
    without that link and joint, its base the root, ``floating`` set (a free joint in the spatial model).
    A floating joint anywhere else is refused, naming it."""
    floating = [j for j in robot.joints if j.type == "floating"]
    if not floating:
        return robot
    src = robot.source
    j = floating[0]
    where = f"line {j.line}, joint {j.name!r}"
    if len(floating) > 1 or j.parent != robot.root:
        bad = floating[1] if j.parent == robot.root else j
        raise ModelError(f"a floating joint joins the world (the root link {robot.root!r}) to the robot's base; "
                         f"joint {bad.name!r} joins {bad.parent!r} and {bad.child!r}", source=src,
                         where=f"line {bad.line}, joint {bad.name!r}")
    if any(abs(x) > 0 for x in (*j.xyz, *j.rpy)):
        raise ModelError("the origin of a floating joint must be the identity (the free joint's coordinates place "
                         "the base in the world)", source=src, where=where)
    root = robot.link(robot.root)
    if root.inertial is not None and root.inertial.mass > 0:
        raise ModelError(f"the root link {robot.root!r} holds the robot by a floating joint and has mass "
                         f"{root.inertial.mass:g}: it would be welded to the ground; move its <inertial> to the "
                         f"base {j.child!r}", source=src, where=where)
    others = [k.name for k in robot.joints if k.parent == robot.root and k is not j]
    if others:
        raise ModelError(f"the root link {robot.root!r} holds the robot by the floating joint {j.name!r} and also "
                         f"the joints {', '.join(map(repr, others))}", source=src, where=where)
    return UrdfRobot(robot.name, j.child, tuple(lk for lk in robot.links if lk.name != robot.root),
                     tuple(k for k in robot.joints if k is not j), src, floating=True)


def read_urdf(path: PathLike, *, check: bool = True) -> UrdfRobot:
    """Read and check a URDF file (see the module's documentation for what is refused).

    ``check=False`` skips the checks of the masses (inertial on moving links, a singular mass matrix),
    for files that are only looked at.
    """
    src = os.fspath(path)
    try:
        with open(src, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ModelError(f"cannot read the URDF file: {exc.strerror}", source=src) from None
    return read_urdf_bytes(data, source=src, check=check)


def read_urdf_bytes(data: Union[bytes, str], *, source: Optional[str] = None, check: bool = True) -> UrdfRobot:
    """Read and check URDF text (``source`` names it in errors)."""
    src = source or "<urdf>"
    raw = data.encode("utf-8") if isinstance(data, str) else data
    reader = _Reader(src)
    robot = reader.robot(_parse_xml(raw, src))
    robot = _floating_root(robot)
    if check:
        check_masses(robot)
    return robot


def moving_bodies(robot: UrdfRobot) -> dict[str, str]:
    """For every link, the moving joint that carries it (the nearest moving joint on the way to the
    root), or "" for links welded to the root."""
    out = {robot.root: ""}
    for j in robot.joints:
        out[j.child] = j.name if j.moving else out[j.parent]
    return out


def check_masses(robot: UrdfRobot, samples: int = 3, seed: int = 0) -> None:
    """Refuse a link without ``<inertial>`` that moves and carries a moving joint, and a mass matrix
    that is singular (at the zero configuration and at ``samples`` random ones within the limits):
    the message names the joint that moves no mass."""
    carrier = moving_bodies(robot)
    links = {lk.name: lk for lk in robot.links}
    joints = {j.name: j for j in robot.joints}
    for j in robot.joints:
        if not j.moving:
            continue
        lk = links[j.parent]
        if lk.inertial is None and carrier[lk.name]:
            raise ModelError(f"link {lk.name!r} has no <inertial>, moves with joint {carrier[lk.name]!r} and "
                             f"carries the moving joint {j.name!r}; give it an <inertial> (mass value=\"0\" "
                             f"if it is massless on purpose)", source=robot.source,
                             where=f"line {lk.line}, link {lk.name!r}")
    names = robot.coordinates()
    if not names:
        return
    rng = np.random.default_rng(seed)
    lo: list[float] = []
    hi: list[float] = []
    for n in names:
        lim = joints[n].limit
        if lim is not None and lim.lower is not None and lim.upper is not None and lim.lower < lim.upper:
            lo.append(lim.lower)
            hi.append(lim.upper)
        else:           # no range: a turn either way
            lo.append(-math.pi)
            hi.append(math.pi)
    configurations = [np.zeros(len(names))] + [rng.uniform(lo, hi) for _ in range(samples)]
    for q in configurations:
        M = robot.mass_matrix(q)
        scale = max(float(np.abs(M).max()), 1e-300)
        # the first leading block that is not positive definite: its last coordinate adds no inertia of its own
        k = _first_small_pivot(M, 1e-12 * scale)
        if k is not None:
            j = joints[names[k]]
            massless = not any(lk.inertial is not None and lk.inertial.mass > 0 for lk in robot.links
                               if _below(robot, lk.name, j.child))
            why = ("no link at or below its child link has mass" if massless else
                   "the masses it moves do not resist its motion")
            raise ModelError(f"the mass matrix is singular: joint {j.name!r} moves no inertia ({why}); "
                             f"give the links below it mass or make it fixed", source=robot.source,
                             where=f"line {j.line}, joint {j.name!r}")


def _first_small_pivot(M: np.ndarray, tol: float) -> Optional[int]:
    """The first k whose pivot in ``M = L D Lᵀ`` (the Schur complement of the leading k×k block, i.e.
    what coordinate k adds to the inertia of those before it) is at most ``tol``; None if there is none.

    One Cholesky factorisation (LAPACK) when M is positive definite, rank-one updates up to the failing
    pivot otherwise: O(n³) arithmetic once, not one eigenvalue problem per leading block."""
    try:
        pivots = np.diag(np.linalg.cholesky(M)) ** 2
    except np.linalg.LinAlgError:
        pass
    else:
        small = np.flatnonzero(pivots <= tol)
        return int(small[0]) if small.size else None
    A = np.array(M, dtype=float)
    for k in range(A.shape[0]):
        d = A[k, k]
        if not d > tol:
            return k
        col = A[k + 1:, k] / d
        A[k + 1:, k + 1:] -= np.outer(col, A[k, k + 1:])
    return None  # pragma: no cover - LAPACK refused a matrix whose pivots are all above tol


def _below(robot: UrdfRobot, link: str, top: str) -> bool:
    """Whether ``link`` is ``top`` or a descendant of it."""
    parent = {j.child: j.parent for j in robot.joints}
    cur: Optional[str] = link
    while cur is not None:
        if cur == top:
            return True
        cur = parent.get(cur)
    return False


# -- names ----------------------------------------------------------------------------------------------

_BAD = re.compile(r"[^A-Za-z0-9_]")


def identifier(name: str, taken: set[str], prefix: str) -> str:
    """A rodgen name (letters, digits, underscores, starting with a letter) for a URDF name, unique
    among ``taken`` (which it joins)."""
    from .core import check_name
    base = _BAD.sub("_", name)
    if not base or not base[0].isalpha():
        base = prefix + "_" + base
    base = base[:60]
    out = base
    k = 2
    while True:
        try:
            check_name(out, "name")
            ok = out not in taken
        except ModelError:
            ok = False
            if out == base:
                base = prefix + "_" + base
                out = base[:60]
                continue
        if ok:
            break
        out = f"{base[:56]}_{k}"
        k += 1
    taken.add(out)
    return out


# -- onto the spatial model -----------------------------------------------------------------------------

def matrix_rpy(R: np.ndarray) -> Vec3:
    """URDF's ``rpy`` of a rotation matrix (the inverse of :func:`rpy_matrix`; pitch in [-pi/2, pi/2])."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if abs(math.cos(pitch)) < 1e-12:      # gimbal lock: yaw absorbs the whole rotation about z
        return (0.0, pitch, math.atan2(-R[0, 1], R[1, 1]))
    return (math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0]))


def _angle(x: float) -> Union[float, str]:
    """An rpy angle as the model keeps it: a multiple of pi/2 written exactly (``pi/2``, ``-pi``) when the
    file gives it to double precision, so that the derivation sees exact zeros and ones in the rotation
    (cos(1.5707963267948966) is 6e-17, not 0) and the generated code has no terms multiplied by them."""
    k = round(x / (math.pi / 2))
    if k == 0 or abs(x - k * math.pi / 2) > 4 * math.ulp(max(abs(x), 1.0)):
        return _number(x)
    return {1: "pi/2", -1: "-pi/2", 2: "pi", -2: "-pi"}.get(k, f"{k}*pi/2")


def _rpy(v: Iterable[float]) -> tuple[Union[float, str], ...]:
    return tuple(_angle(x) for x in v)


def _number(x: float) -> float:
    """A number as the model keeps it: -0.0 and rounding noise of exact zeros left out."""
    return 0.0 if x == 0 else float(x)


def to_spatial_model(robot: UrdfRobot, *, name: Optional[str] = None, gravity: Vec3 = (0.0, 0.0, -9.81),
                     lock: Optional[Mapping[str, float]] = None, mimic: bool = True,
                     damping: bool = False, floating: bool = False) -> "SpatialModel":
    """The :class:`~rodgen.model.spatial.SpatialModel` of a URDF robot (see :func:`from_urdf`)."""
    from .spatial import SpatialModel
    src = robot.source
    lock = dict(lock or {})
    for jn in lock:
        try:
            jt = robot.joint(jn)
        except KeyError:
            raise ModelError(f"lock: {jn!r} is not a joint of the file (moving joints: "
                             f"{', '.join(j.name for j in robot.joints if j.moving)})", source=src,
                             where="lock") from None
        if not jt.moving:
            raise ModelError(f"lock: joint {jn!r} is fixed already", source=src, where="lock")
        if jn in robot.mimics and mimic:
            raise ModelError(f"lock: joint {jn!r} mimics {robot.mimics[jn][0]!r}; lock that joint instead",
                             source=src, where="lock")
    mimics = robot.mimics if mimic else {}
    held = dict(lock)
    for jn, (master, mult, off) in mimics.items():
        if master in lock:
            held[jn] = mult * lock[master] + off
    taken: set[str] = set()
    link_id = {lk.name: identifier(lk.name, taken, "link") for lk in robot.links}
    taken = set()
    coord_id = {j.name: identifier(j.name, taken, "q") for j in robot.joints if j.moving and j.name not in held}
    model = SpatialModel(identifier(name or robot.name or "robot", set(), "robot"), gravity=gravity, source=src)
    model.doc = (f"Read from the URDF file {os.path.basename(src)} (robot {robot.name!r})." if src else
                 f"Read from URDF (robot {robot.name!r}).")
    if floating or robot.floating:
        root = model.link(link_id[robot.root], joint="free")
        inertial = robot.link(robot.root).inertial
        if inertial is not None:
            root.body(inertial.mass, inertial.com, inertial.moments, rpy=_rpy(inertial.rpy))  # type: ignore
    else:
        model.fixed(link_id[robot.root])
    for j in robot.joints:
        parent = link_id[j.parent]
        child = link_id[j.child]
        if j.type == "planar":    # x, y, theta in the joint frame's xy plane (see rodgen.model.spatial)
            lk = model.link(child, parent, joint="planar", xyz=j.xyz, rpy=_rpy(j.rpy))  # type: ignore[arg-type]
        elif not j.moving or j.name in held:
            R = j.rotation
            p = np.asarray(j.xyz, dtype=float)
            if j.name in held:
                value = held[j.name]
                if j.type == "prismatic":
                    p = p + R @ np.asarray(j.axis) * value
                else:
                    R = R @ axis_angle(j.axis, value)
            lk = model.fixed(child, parent, xyz=tuple(_number(v) for v in p),  # type: ignore[arg-type]
                             rpy=_rpy(matrix_rpy(R) if j.name in held else j.rpy))  # type: ignore[arg-type]
        else:
            jtype = "prismatic" if j.type == "prismatic" else "revolute"
            coord = coord_id[j.name]
            limits = None
            effort = velocity = None
            if j.limit is not None:
                # a limit without a range (lower = upper, also when both are left out and default to 0, as
                # in many files that give only effort and velocity) bounds nothing: no position limits
                if j.limit.lower is not None and j.limit.upper is not None and j.limit.lower < j.limit.upper:
                    limits = (j.limit.lower, j.limit.upper)
                effort, velocity = j.limit.effort, j.limit.velocity
            coupled = j.name in mimics
            lk = model.link(child, parent, joint=jtype, axis=j.axis, xyz=j.xyz, rpy=_rpy(j.rpy),  # type: ignore
                            coordinate=coord,
                            input=None if coupled else ("F_" if jtype == "prismatic" else "tau_") + coord,
                            actuated=not coupled, limits=limits, effort=effort, velocity=velocity,
                            damping=j.damping if damping and j.damping else None)
            if coupled:
                master, mult, off = mimics[j.name]
                expr = coord_id[master] if mult == 1.0 else f"{mult!r}*{coord_id[master]}"
                if off:
                    expr += f" + {off!r}" if off > 0 else f" - {-off!r}"
                model.couple(coord, expr)
        inertial = robot.link(j.child).inertial
        if inertial is not None:
            lk.body(inertial.mass, inertial.com, inertial.moments, rpy=_rpy(inertial.rpy))  # type: ignore
    return model


def from_urdf(path: PathLike, *, name: Optional[str] = None, gravity: Vec3 = (0.0, 0.0, -9.81),
              lock: Optional[Mapping[str, float]] = None, mimic: bool = True, damping: bool = False,
              floating: bool = False) -> "SpatialModel":
    """Read a URDF file into a :class:`~rodgen.model.spatial.SpatialModel` (fixed base at the root link).

    Every URDF link becomes a spatial link of the same name (characters other than letters, digits and
    ``_`` replaced by ``_``) carrying its ``<inertial>`` as a :class:`~rodgen.model.spatial.Body`; its
    frame is the named frame ``<link>.joint`` of the compiled model (``robot.frames(q)``,
    ``robot.points(q)``). The root link is welded to the ground. A revolute or
    prismatic joint becomes the joint of its child link with the coordinate named as the joint, an input
    ``tau_<joint>`` (revolute) or ``F_<joint>`` (prismatic), its limits (``continuous``, or a ``<limit>``
    whose lower and upper bounds are equal or left out: none), effort and velocity; a fixed joint a fixed
    link.

    Parameters
    ----------
    lock : joints held at a value, name -> displacement (rad or m): they become fixed joints (e.g. the
        fingers of a gripper); joints that mimic a locked joint are held with it.
    mimic : ``True`` (default): a ``<mimic>`` joint is coupled to the joint it follows
        (``q = multiplier*q_other + offset``, a coupling as ``Model.couple``) and has no input;
        ``False``: it is an independent joint (as Pinocchio's ``buildModelFromUrdf(..., mimic=False)``).
    damping : take the joints' ``<dynamics damping>`` as viscous joint damping (default: ignored, as
        Pinocchio's dynamics algorithms do); ``friction`` is always ignored.
    floating : the root link floats: a free joint between the ground and the root link (Pinocchio's
        ``JointModelFreeFlyer``; coordinates ``<root>_x ... <root>_qw``, velocities ``<root>_vx ...
        <root>_wz``, see docs/floating-base.md), carrying the root link's ``<inertial>``. A file whose
        massless root link (a ``world``) holds the base by a ``floating`` joint floats the same way, without
        the option (the world link and the floating joint are left out).
    """
    robot = read_urdf(path)
    model = to_spatial_model(robot, name=name, gravity=gravity, lock=lock, mimic=mimic, damping=damping,
                             floating=floating)
    try:
        model.validate()
    except ModelError as exc:   # the spatial model's checks, told in the file's terms
        raise _in_file(exc, robot) from None
    return model


def _in_file(exc: ModelError, robot: UrdfRobot) -> ModelError:
    """A ModelError of the spatial model's validation, placed at the URDF element it comes from."""
    where = exc.where or ""
    taken: set[str] = set()
    ids = {identifier(lk.name, taken, "link"): lk for lk in robot.links}
    m = re.match(r"link '([^']*)'(.*)", where)
    if m is None or m.group(1) not in ids:
        return exc
    lk = ids[m.group(1)]
    rest = m.group(2)
    if rest.startswith(".bodies"):
        place = f"line {lk.line}, link {lk.name!r}, <inertial>"
    elif rest.startswith(".joint"):
        joint = next((j for j in robot.joints if j.child == lk.name), None)
        place = (f"line {joint.line}, joint {joint.name!r}" if joint is not None else
                 f"line {lk.line}, link {lk.name!r}")
    else:
        place = f"line {lk.line}, link {lk.name!r}"
    return ModelError(exc.detail, source=exc.source or robot.source, where=place)
