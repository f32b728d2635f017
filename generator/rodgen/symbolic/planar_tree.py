"""Planar models derived by the spatial recursions: the planar expanded tree lowered onto the spatial one.

A planar model's expanded tree (:func:`rodgen.symbolic.recursive.expanded_tree`: a revolute node per link
angle, a prismatic node per variable segment, virtual prismatic nodes for points at intermediate fractions
of variable segments, two prismatic nodes for a floating base) is the special case of the spatial tree
(:class:`rodgen.symbolic.spatial.SNode`) whose joints turn about z and slide in the x-y plane:

* a revolute node becomes a revolute ``SNode`` about ``(0, 0, 1)`` with the coordinate ``beta + s`` (the
  constant offset inside the joint angle, as the spatial tree keeps a joint's offset), no fixed rotation
  and the origin ``(px, py, 0)``;
* a prismatic node a prismatic ``SNode`` along ``(ax, ay, 0)``;
* a body ``(m, cx, cy, I)`` the rigid body of mass m at ``(cx, cy, 0)`` whose inertia about its centre is
  ``diag(0, 0, I)`` (the moments about the in-plane axes never enter planar motion).

The spatial recursions (:func:`rodgen.symbolic.spatial.derive_spatial`,
:func:`~rodgen.symbolic.spatial.spatial_forward_dynamics`) then derive M, h, G, the inverse dynamics, the
energies and the articulated-body forward dynamics. Rotations about z have the structural zeros of
``Rz`` and the in-plane vectors a zero z component, which the recursions' products fold away (they never
build products of 0), so what remains is the planar recursion's arithmetic; the out-of-plane parts of
the inertias that are still emitted feed nothing the planar outputs need and the code stage's
straight-line pass drops them. The named points stay the planar kinematics' closed forms (the 2D
``points`` routine), and the coordinates, inputs, parameters, springs and dampers are those of
:func:`rodgen.symbolic.kinematics.build_kinematics`, in the same order.

``rodgen.derive(model, method="recursive")`` takes this path for planar models, and every planar method takes
its articulated-body forward dynamics (:func:`tree_articulated`); ``method="planar"`` keeps the planar
recursion of :mod:`rodgen.symbolic.recursive` (see docs/deriving.md).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Optional

import sympy as sp

from ..errors import DerivationError
from ..model.expr import Expression
from ..model.valid import ValidForce, ValidModel
from .equations import Equations, ForwardDynamics
from .forces import LINK_FRAME_LAWS, link_frame_law
from .kinematics import Kinematics, build_kinematics
from .recursive import Node, Ref, _Emitter, _TreeBuilder, checked_articulated
from .spatial import NodeForce, SNode, SpatialKinematics, SRef, derive_spatial, spatial_forward_dynamics

_0 = sp.Integer(0)
_1 = sp.Integer(1)
_Z = [_0, _0, _1]


@dataclass
class LoweredTree:
    """The spatial expanded tree of a planar model: its nodes, and no named 3D frames (a planar model's
    points stay its 2D kinematics')."""

    nodes: list[SNode]
    frames: dict[str, SRef] = field(default_factory=dict)


def lower_node(nd: Node) -> SNode:
    """One planar tree node as a spatial one (see the module docstring)."""
    eye = [[_1, _0, _0], [_0, _1, _0], [_0, _0, _1]]
    bodies = [(m, [cx, cy, _0], [[_0, _0, _0], [_0, _0, _0], [_0, _0, inertia]])
              for m, cx, cy, inertia in nd.bodies]
    p0 = [sp.sympify(nd.p0[0]), sp.sympify(nd.p0[1]), _0]
    if nd.revolute:
        return SNode(nd.name, nd.parent, True, eye, p0, list(_Z), nd.beta + nd.coord, bodies)
    return SNode(nd.name, nd.parent, False, eye, p0, [nd.axis[0], nd.axis[1], _0], nd.coord, bodies)


def lower(model: ValidModel, k: Optional[Kinematics] = None
          ) -> tuple[SpatialKinematics, LoweredTree, Kinematics, _TreeBuilder]:
    """The spatial kinematics and expanded tree of a planar model (and its planar kinematics and tree
    builder, which knows the node of each named point). Without ``k``, the same objects for an equal model
    while it is among the last :data:`LOWERED_KEPT` lowered (a build lowers its model three times: the
    equations, the articulated-body algorithm, the inverse dynamics' derivatives); the callers only read them."""
    if k is None:
        return _lowered(model)
    return _lower(model, k)


#: The planar models whose lowered trees :func:`lower` keeps.
LOWERED_KEPT = 4


@functools.lru_cache(maxsize=LOWERED_KEPT)
def _lowered(model: ValidModel) -> tuple[SpatialKinematics, LoweredTree, Kinematics, _TreeBuilder]:
    return _lower(model, None)


def _lower(model: ValidModel, k: Optional[Kinematics]
           ) -> tuple[SpatialKinematics, LoweredTree, Kinematics, _TreeBuilder]:
    k = k or build_kinematics(model)
    builder = _TreeBuilder(model, k)
    nodes = builder.build()
    gx, gy = k.gravity
    sk = SpatialKinematics(model, list(k.q), list(k.qd), list(k.qdd), list(k.u),  # type: ignore[arg-type]
                           list(k.params), dict(k.param_values), [gx, gy, _0], generalized=list(k.generalized),
                           springs=list(k.springs), dampers=list(k.dampers), vq=list(k.q),
                           vel_of={qi: i for i, qi in enumerate(k.q)})
    return sk, LoweredTree([lower_node(nd) for nd in nodes]), k, builder


def derive_tree(model: ValidModel) -> Equations:
    """Equations of motion of a planar model by the spatial recursions over its lowered tree; the same
    fields as :func:`rodgen.symbolic.recursive.derive_recursive` (``method`` is ``"recursive"``)."""
    sk, tree, k, _ = lower(model)
    eqs = derive_spatial(model, sk, tree)  # type: ignore[arg-type]
    eqs.points = {nm: v.cartesian() for nm, v in k.points.items()}
    eqs.frames, eqs.frame_jacobians = {}, {}
    return eqs


def tree_forward_dynamics(eqs: Equations) -> ForwardDynamics:
    """The articulated-body forward dynamics of a planar model's equations by the spatial recursion over the
    lowered tree. A viscous or Coulomb force element at a point of the tree acts as a force on its node (the
    point's velocity from the node's, the law in the node's frame, which is its link's: O(1) per element);
    any other adds its generalized force Jᵀ F to the joint forces."""
    model = eqs.model
    if not isinstance(model, ValidModel):
        raise DerivationError("the planar tree path takes planar models")
    sk, tree, _, builder = lower(model)
    valid = {f.name: f for f in model.forces}
    rest = sp.zeros(len(eqs.qd), 1)
    on_nodes: list[tuple[int, NodeForce]] = []
    for el in eqs.forces:
        f = valid[el.name]
        ref = builder.point_ref(f.point) if f.type in LINK_FRAME_LAWS else None
        if ref is None or ref.node < 0:
            rest += el.generalized
        else:
            on_nodes.append((ref.node, _link_frame_force(f, ref, len(on_nodes), builder.X)))
    return spatial_forward_dynamics(model, sk, tree, rest if eqs.forces else None,  # type: ignore[arg-type]
                                    eqs.assignments, on_nodes)


def _link_frame_force(f: ValidForce, ref: Ref, j: int, X: Callable[[Expression], sp.Expr]) -> NodeForce:
    """The force of a viscous or Coulomb element at the point ``ref`` of its node, as a law of the node's
    velocity: the point's velocity ``v + w x r`` in the node's (= its link's) frame, the law along and
    across, and its moment ``r x f`` about the node's origin."""
    def law(w: list, v: list, e: _Emitter) -> tuple[list, list]:
        va = e(v[0] - w[2] * ref.y, f"e{j}_va")
        vc = e(v[1] + w[2] * ref.x, f"e{j}_vc")
        fa, fc = (e(x, f"e{j}_f{nm}") for x, nm in zip(link_frame_law(f, va, vc, X), "ac"))
        return [_0, _0, ref.x * fc - ref.y * fa], [fa, fc, _0]
    return law


def tree_articulated(eqs: Equations) -> tuple[Optional[ForwardDynamics], str]:
    """:func:`rodgen.symbolic.recursive.articulated_body` with :func:`tree_forward_dynamics`."""
    return checked_articulated(eqs, lambda: tree_forward_dynamics(eqs))


__all__ = ["LoweredTree", "lower", "lower_node", "derive_tree", "tree_forward_dynamics", "tree_articulated"]
