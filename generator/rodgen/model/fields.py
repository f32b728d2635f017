"""What each field of a model file means: the documentation of the loaders' key sets, as data.

Every mapping a model file holds is read by the loader (``loader.py`` for planar files, ``spatial_io.py``
for ``spatial: true`` files) against a set of allowed keys. :data:`SECTIONS` pairs each of these sets with
a one-line description of every key in it; the model-file reference of the documentation
(docs/reference/model-file.md) is rendered from it by docs/_ext/rodgen_reference.py, and
tests/test_docs.py checks that every allowed key has a description and every description an allowed
key. A new key is added to its loader's set and described here.

Plain data: no SymPy, nothing is read or validated here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Mapping

from . import loader, spatial_io
from .core import FORCE_FIELDS, FORCE_TYPES


@dataclass(frozen=True)
class Section:
    """One kind of mapping in a model file.

    name : a short identifier (``"link"``, ``"spatial.joint"``), the anchor of the rendered reference.
    path : where the mapping stands in a file (``links[]``: an entry of the list ``links``).
    doc : what the mapping is.
    keys : the loader's set of allowed keys for it (the set the loader checks, not a copy).
    fields : key -> description; the word "required" in a description marks a key the loader requires.
    """

    name: str
    path: str
    doc: str
    keys: AbstractSet[str]
    fields: Mapping[str, str]


_EXPR = "a number, a parameter or an expression of parameters"

_PLANAR: tuple[Section, ...] = (
    Section("model", "(top level)", "A planar model file: a tree of links in the vertical plane.", loader._MODEL_KEYS, {
        "name": "required; a C identifier, the prefix of the generated code (`exo5` -> `exo5_forward_dynamics`)",
        "doc": "free text, kept with the model",
        "base": "`fixed` (default: root links hinge to the ground) or `floating` (the base point's x, y are "
                "coordinates, first in q)",
        "base_coordinates": "floating base: the names of the base coordinates (default `[x, y]`)",
        "base_initial": "floating base: the initial base position (default `[0, 0]`)",
        "gravity": "the gravity vector `[gx, gy]`, " + _EXPR + " each (default `[0, -9.81]`)",
        "parameters": "a mapping name -> value or name -> {value, unit, doc}; its order is the order of `p` in C",
        "links": "required; the list of links (a tree; parents may be listed in any order)",
        "couplings": "a mapping dependent coordinate -> expression of independent coordinates and parameters",
        "ground": "the ground line of contacts and ground-contact forces",
        "contacts": "a list of point feet that can touch the ground (constraint blocks of 2 rows)",
        "loops": "a list of loop closures: marker b coincides with marker a (2 rows each)",
        "forces": "a list of force elements acting at points (entering as J^T F)",
    }),
    Section("parameter", "parameters.<name>", "A parameter in its long form (the short form is `name: value`).",
            loader._PARAM_KEYS, {
                "value": "required; the default value, a finite number",
                "unit": "the unit, free text (printed in the C header)",
                "doc": "what it is, free text (printed in the C header)",
            }),
    Section("link", "links[]", "A rigid link: a hinge, then a straight sequence of segments.", loader._LINK_KEYS, {
        "name": "required; unique in the model",
        "parent": "the parent link; omit (or null) for a link hinged to the ground or the base",
        "at": "where on the parent: `end` (default), `start`, a parent segment (its end) or a parent marker",
        "origin": "`[x, y]`, the hinge of a root link (relative to the base point if floating)",
        "angle": "`absolute` (from the +x axis, counter-clockwise) or `relative` (from the parent's axis)",
        "coordinate": "the angle's name (default `phi_<link>` absolute, `th_<link>` relative)",
        "offset": "a constant added to the angle, " + _EXPR,
        "initial": "the initial angle (the default state of simulations)",
        "joint": "the hinge's torque input, spring, damping and dry friction",
        "segments": "required; the segments from the hinge outwards",
        "markers": "named points for plots, children, contacts, loops and force elements",
        "limits": "`[lower, upper]` bounds of the angle (null for no bound on a side): limit constraint blocks",
    }),
    Section("elastic", "links[] with type: elastic", "An elastic rod (Leontiev's discrete model): expanded into a "
            "chain of rigid segments on sprung hinges.", loader._ELASTIC_KEYS, {
                "name": "required; the links made are `<name>_0`, `<name>_1` ... `<name>_n`, the marker `<name>_tip`",
                "type": "`elastic`",
                "parent": "the parent link; omit for a rod clamped to the ground at `origin`",
                "at": "where on the parent, as for a rigid link",
                "origin": "`[x, y]`, the root of a rod without parent",
                "angle": "`absolute` or `relative`, as for a rigid link",
                "coordinate": "the root angle's name (an unclamped rod)",
                "offset": "a constant added to the root angle",
                "initial": "the root angle (clamped: the fixed angle to the parent)",
                "joint": "the root hinge of an unclamped rod (`clamped: false`), as for a rigid link",
                "clamped": "true (default): the root is fixed to the parent at `initial`",
                "length": "required; the rod's length L",
                "EJ": "the bending stiffness",
                "mass": "the rod's mass (or `mass_per_length`)",
                "mass_per_length": "the rod's mass per length (or `mass`)",
                "rule": "the discretisation rule: `Cp`, `E`, `B`, `G`, `R`, `Ch` or `M` (or explicit hinges)",
                "n": "the number of elastic hinges of the rule",
                "positions": "explicit hinges instead of a rule: positions x_i/L",
                "stiffnesses": "explicit hinges instead of a rule: stiffnesses C_i",
                "damping": "viscous damping of every hinge",
                "elements": "split the rod into k equal elements, each discretised by the rule",
                "tip_mass": "a point mass at the free end",
            }),
    Section("joint", "links[].joint", "A link's hinge.", loader._JOINT_KEYS, {
        "torque": "the input's name (default `tau_<link>`); it acts on the relative joint angle",
        "actuated": "false: no torque input (default false on a floating base's root links)",
        "spring": "a linear spring on the joint angle (child angle - parent angle - offset)",
        "damping": "a viscous damping coefficient on the joint angle's rate",
        "friction": "dry friction with stiction on the joint (N m)",
    }),
    Section("segment", "links[].segments[]", "A rigid or variable-length segment.", loader._SEG_KEYS, {
        "name": "required; unique in the model",
        "type": "`rigid` (default), `variable` or `telescopic` (see the telescopic segment)",
        "length": "required; rigid: the length; variable: the initial length",
        "masses": "point masses at `fraction*length + offset` from the segment's start",
        "rod": "one rigid rod (a uniform body along the segment)",
        "rods": "a list of rods",
        "coordinate": "variable: the length's name (default `l_<segment>`)",
        "force": "variable: the longitudinal force input's name (default `F_<segment>`)",
        "actuated": "variable: false for no force input",
        "spring": "variable: a linear spring on the length",
        "damping": "variable: a viscous damping coefficient on the length's rate",
        "limits": "variable: `[lower, upper]` bounds of the length (limit constraint blocks)",
        "friction": "variable: dry friction with stiction on the length (N)",
    }),
    Section("telescopic", "links[].segments[] with type: telescopic", "A telescopic segment: an outer sleeve at "
            "the proximal end, an inner tube that slides out with the length.", loader._TELE_KEYS, {
                "name": "required; unique in the model",
                "type": "`telescopic`",
                "length": "required; the initial length (a coordinate)",
                "outer": "required; the outer sleeve, a uniform rod fixed at the proximal end",
                "inner": "required; the inner tube, a uniform rod fixed to the distal end",
                "coordinate": "the length's name (default `l_<segment>`)",
                "force": "the longitudinal force input's name (default `F_<segment>`)",
                "actuated": "false for no force input",
                "spring": "a linear spring on the length",
                "damping": "a viscous damping coefficient on the length's rate",
                "masses": "point masses, as on a variable segment",
                "limits": "`[lower, upper]` bounds of the length",
                "friction": "dry friction with stiction on the length (N)",
            }),
    Section("section", "segments[].outer, segments[].inner", "A section of a telescopic segment.",
            loader._SECTION_KEYS, {
                "length": "required; the section's length",
                "mass": "required; the section's mass (a uniform rod)",
            }),
    Section("mass", "segments[].masses[]", "A point mass on a segment (it slides as a variable length changes).",
            loader._MASS_KEYS, {
                "mass": "required; the mass, " + _EXPR,
                "fraction": "the position as a fraction of the segment's length (default 0)",
                "offset": "a distance added to `fraction*length` (default 0)",
                "lateral": "a distance to the left of the link axis (default 0)",
                "name": "a name, also a point of plots, force elements and the C header",
            }),
    Section("rod", "segments[].rod, segments[].rods[]", "A rigid uniform body on a segment.", loader._ROD_KEYS, {
        "mass": "required; the rod's mass",
        "length": "the rod's length (default: the segment's; needed on a variable segment unless `inertia`)",
        "inertia": "the central moment of inertia (default m length^2 / 12)",
        "fraction": "the centre's position as a fraction of the segment's length (default 0.5)",
        "offset": "a distance added to the centre's position (default 0)",
        "lateral": "a distance to the left of the link axis (default 0)",
        "name": "a name, also a point of plots and force elements",
    }),
    Section("marker", "links[].markers[]", "A named point of a link.", loader._MARKER_KEYS, {
        "name": "required; unique among markers",
        "segment": "the segment it is on (default: the link's first)",
        "fraction": "the position as a fraction of the segment's length (default 0)",
        "offset": "a distance added along the segment (default 0)",
        "lateral": "a distance to the left of the link axis (default 0)",
    }),
    Section("spring", "joint.spring, segments[].spring", "A linear spring.", loader._SPRING_KEYS, {
        "stiffness": "required; the stiffness (N m/rad on an angle, N/m on a length)",
        "rest": "the rest value of the coordinate (default 0)",
    }),
    Section("friction", "joint.friction, segments[].friction", "Dry friction with stiction (a constraint block "
            "held while the coordinate sticks).", loader._FRICTION_KEYS, {
                "static": "required; the static limit of the force, >= 0",
                "kinetic": "the force while slipping, 0 <= kinetic <= static (default: static)",
            }),
    Section("ground", "ground", "The ground line.", loader._GROUND_KEYS, {
        "slope": "the angle of the line from +x, radians (default 0); a walker going down towards +x has "
                 "`slope: -gamma`",
        "height": "the line passes through (0, height) (default 0)",
    }),
    Section("contact", "contacts[]", "A point foot that can touch the ground: 2 rows (along the ground, the "
            "gap).", loader._CONTACT_KEYS, {
                "name": "required; unique among contacts, loops and limits",
                "marker": "the marker that touches (default: the contact's name)",
                "friction": "the Coulomb friction coefficient (default 1)",
            }),
    Section("loop", "loops[]", "A loop closure: 2 rows r_b - r_a = 0, always held.", loader._LOOP_KEYS, {
        "name": "required; unique among contacts, loops and limits",
        "a": "required; the first marker",
        "b": "required; the marker that coincides with `a`",
    }),
)

_FORCE_COMMON = {
    "name": "required; the element's name",
    "type": "required; one of " + ", ".join(f"`{t}`" for t in FORCE_TYPES),
    "at": "required; the point: a marker, a point mass or rod by name, `<link>.joint` or `<segment>.end`",
}
_FORCE_DOCS = {
    "point_force": {
        "frame": "`world` (default) or `link` (x along the point's link, y to its left)",
        "force": "`[fx, fy]`, expressions of parameters, coordinates, their rates `<coordinate>_dot` and the "
                 "time `t`",
        "inputs": "`true` (two new inputs `<name>_x`, `<name>_y`) or `[Fx, Fy]` to name them, instead of `force`",
    },
    "viscous": {
        "coefficient": "isotropic: F = -c v",
        "along": "the coefficient along the axis of the point's link",
        "across": "the coefficient normal to the link's axis",
    },
    "coulomb": {
        "coefficient": "isotropic: F = -mu N v / sqrt(v.v + v_s^2)",
        "along": "the coefficient along the link's axis: -N mu_a tanh(v_a/v_s)",
        "across": "the coefficient across the link's axis",
        "normal": "required; the normal load N",
        "velocity_scale": "v_s of the smooth law (default 0.01 m/s)",
    },
    "ground_contact": {
        "stiffness": "required; k > 0: normal force k delta^n (1 + c delta') while positive, delta = -gap",
        "exponent": "n >= 1 (default 1.5)",
        "damping": "c, Hunt-Crossley, s/m (default 0)",
        "friction": "mu of the regularised friction -mu F_n tanh(v_t/v_s) (default 0)",
        "velocity_scale": "v_s of the friction law (default 0.01 m/s)",
    },
    "spring_damper": {
        "b": "required; the second point: the force on `at` is (k (L - L0) + c L') along the unit vector from `at` "
             "to `b`, `b` gets the opposite force",
        "stiffness": "required; k, N/m",
        "damping": "c, N s/m (default 0)",
        "rest_length": "L0, m (default 0)",
    },
}
_FORCES = tuple(
    Section(f"force.{kind}", f"forces[] with type: {kind}", f"A force element of type `{kind}`.",
            frozenset({"name", "type", "at", *FORCE_FIELDS[kind]}), {**_FORCE_COMMON, **_FORCE_DOCS[kind]})
    for kind in FORCE_TYPES)

_SPATIAL: tuple[Section, ...] = (
    Section("spatial.model", "(top level) with spatial: true", "A spatial model file: a tree of links in three "
            "dimensions.", spatial_io._MODEL_KEYS, {
                "name": "required; a C identifier, the prefix of the generated code",
                "doc": "free text, kept with the model",
                "spatial": "`true`: marks a spatial model (planar files leave it out)",
                "gravity": "a 3-vector (default `[0, 0, -9.81]`)",
                "ground": "the ground plane `n·r = height`: a mapping {normal, height} (default z = 0)",
                "parameters": "as in a planar file",
                "links": "required; the list of spatial links (a tree)",
                "couplings": "dependent coordinate -> expression, as in a planar file",
                "contacts": "point contacts at named frames (see below)",
                "loops": "loop closures between two frames (see below)",
                "forces": "force elements, as in a planar file with 3-vectors (`force: [fx, fy, fz]`); see "
                          "docs/forces-3d.md",
            }),
    Section("spatial.ground", "ground (spatial)", "The ground plane that contacts and compliant ground contacts "
            "are measured against.", spatial_io._GROUND_KEYS, {
                "normal": "a 3-vector pointing up, away from the ground, any length but not zero (default "
                          "`[0, 0, 1]`); " + _EXPR + " each",
                "height": "the plane's distance from the origin along the unit normal, " + _EXPR + " (default 0)",
            }),
    Section("spatial.link", "links[] (spatial)", "A spatial link: a body frame placed on its parent and moved "
            "by its joint.", spatial_io._LINK_KEYS, {
                "name": "required; unique in the model",
                "parent": "the parent link; none: placed in the ground frame",
                "at": "where on the parent: `end` (default), `start`, a parent segment or marker",
                "joint": "the joint that moves the link frame",
                "along": "the link axis of its segments (default `[1, 0, 0]`)",
                "bodies": "rigid bodies with a full inertia tensor",
                "segments": "segments along the link axis, the planar segment schema",
                "markers": "named frames of the link",
            }),
    Section("spatial.joint", "links[].joint (spatial)", "A spatial joint.", spatial_io._JOINT_KEYS, {
        "type": "`revolute` (default), `prismatic`, `fixed` or `two_angle`",
        "axis": "the unit axis in the link frame",
        "xyz": "the fixed translation from the attachment point",
        "rpy": "the fixed rotation (URDF: roll, pitch, yaw about fixed axes)",
        "coordinate": "the coordinate's name (default `q_<link>`)",
        "coordinates": "two-angle link: `[phi, psi]` names",
        "angles": "two-angle link: `absolute` (Borisov's, in the ground frame) or `relative`",
        "offset": "a constant added to the coordinate",
        "initial": "the initial coordinate (two-angle: `[phi, psi]`)",
        "input": "the input's name (default `tau_<link>` or `F_<link>`; two-angle: a pair)",
        "actuated": "false for no input",
        "spring": "a linear spring on the coordinate",
        "damping": "a viscous damping coefficient",
        "limits": "`[lower, upper]`, kept with the model",
        "effort": "the largest input (URDF `<limit effort>`), kept with the model",
        "velocity": "the largest rate (URDF `<limit velocity>`), kept with the model",
        "friction": "`{static, kinetic}`: dry friction with stiction on a one-coordinate joint (N m or N)",
    }),
    Section("spatial.contact", "contacts[] (spatial)", "A point contact at a named frame against the ground "
            "plane: 3 rows (two tangential, the gap); see docs/contacts-3d.md.", spatial_io._CONTACT_KEYS, {
                "name": "required; unique among contacts, loops, limits and frictions",
                "frame": "the frame whose origin touches the ground (default: the frame named `name`)",
                "friction": "the Coulomb friction coefficient, >= 0 (default 1)",
                "rows": "3 (a point, default) or 6 (a flat foot: the frame's orientation is held too, its force "
                        "[f_t1, f_t2, f_n, m_t1, m_t2, m_n] in the ground's axes)",
                "sole": "a flat foot's sole `[x_min, x_max, y_min, y_max]` (m): the rectangle in the frame's two "
                        "tangential axes its centre of pressure must stay in; the hybrid simulation stops with a "
                        "`tip` event when it leaves it (default: none, no tipping test)",
            }),
    Section("spatial.loop", "loops[] (spatial)", "A loop closure between two frames, always held.",
            spatial_io._LOOP_KEYS, {
                "name": "required; unique among contacts, loops, limits and frictions",
                "a": "required; the first frame",
                "b": "required; the second frame, on another link",
                "rows": "3 (the origins coincide, default) or 6 (the orientations too)",
            }),
    Section("spatial.body", "links[].bodies[]", "A rigid body (URDF's `<inertial>`).", spatial_io._BODY_KEYS, {
        "mass": "required; the mass",
        "com": "the centre of mass in the link frame (default `[0, 0, 0]`)",
        "inertia": "the inertia about the centre: `[ixx, ixy, ixz, iyy, iyz, izz]` or a 3x3 matrix",
        "rpy": "the rotation of the inertia's axes from the link frame",
        "name": "a name, also a named frame",
    }),
    Section("spatial.marker", "links[].markers[] (spatial)", "A named frame: a point along a segment plus "
            "`xyz`, turned by `rpy`.", spatial_io._MARKER_KEYS, {
                "name": "required; unique among markers",
                "segment": "the segment it is on (default: the link frame)",
                "fraction": "the position as a fraction of the segment's length",
                "offset": "a distance added along the segment",
                "xyz": "a translation in the link frame",
                "rpy": "the frame's rotation",
            }),
)

#: Every kind of mapping a model file holds, with its allowed keys and what each means.
SECTIONS: tuple[Section, ...] = _PLANAR + _FORCES + _SPATIAL


def undocumented() -> list[str]:
    """``section.key`` of every allowed key without a description and every description of a key the loader
    does not allow (empty when the documentation matches the loaders)."""
    out = []
    for s in SECTIONS:
        out += [f"{s.name}.{k}: allowed but not described" for k in sorted(set(s.keys) - set(s.fields))]
        out += [f"{s.name}.{k}: described but not allowed" for k in sorted(set(s.fields) - set(s.keys))]
    return out


__all__ = ["Section", "SECTIONS", "undocumented"]
