"""Lowering: Equations -> ModelSpec, the routines and tables the templates render.

:func:`lower` reads the symbolic stage's result and assembles the spec; it
derives nothing. Each routine is one entry below: the output expressions of
the :class:`~rodgen.symbolic.equations.Equations` field it prints, handed to
:func:`~rodgen.codegen.routine.build_routine` (straight-line code, common
subexpressions, printing, splitting). The forward dynamics is the symbolic
stage's articulated-body recursion (``Equations.articulated``) or the mass
matrix and a Cholesky solve, as ``CodegenOptions.forward`` chooses.
"""
from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import fields, replace
from typing import Callable, Optional, Sequence

import sympy as sp

from .. import contract
from ..errors import CodegenError, ModelError
from ..model.core import check_name
from ..symbolic.equations import Equations, ForwardDynamics
from . import spec as spec_module
from .options import CodegenOptions, ForwardAlgorithm, prefix_of
from .routine import Group, build_routine, output
from .slots import slots_of
from .spec import Argument, ConstraintBlock, ModelSpec, Routine, comment_text
from .straight import straight_line  # noqa: F401  (re-exported: rodgen.codegen.lower.straight_line)

#: Kinds of constraint block: (C constant of rodgen_model.h, its value, rows per block).
#: kind -> (C macro, code, the row counts the runtime runs): a contact's 2 (plane) or 3 (space) rows, its
#: tangential rows first and its normal row last, a loop's 2 (plane), 3 or 6 (space: origins, orientations),
#: a limit's and a dry friction's 1 (rows on coordinates). The rows of a block come from its equations.
_BLOCK_ROWS = {"contact": (2, 3, 6), "loop": (2, 3, 6), "limit": (1,), "friction": (1,)}
CONSTRAINT_KINDS = {k.label: (f"RODGEN_{k.name}", k.value, _BLOCK_ROWS[k.label]) for k in contract.BLOCK_KINDS}


def lower(eqs: Equations, *, options: CodegenOptions | None = None, version: str | None = None) -> ModelSpec:
    """Lower equations of motion to the routine spec the templates render.

    Parameters
    ----------
    eqs : the Equations of a model (``rodgen.derive``).
    options : CodegenOptions; defaults if None.
    version : the rodgen version written into the files (default: the installed one).
    """
    options = options or CodegenOptions()
    if version is None:
        from .. import __version__ as version  # type: ignore[no-redef]
    assert version is not None
    model = eqs.model
    spatial = bool(getattr(model, "spatial", False))
    if spatial:   # 3D points: the frames routines below; the table's 2D points stay empty
        full, eqs = eqs, copy.copy(eqs)
        eqs.points = {}
    prefix = prefix_of(model.name)
    macro = prefix.upper()
    n, m, npar, npts = len(eqs.q), len(eqs.u), len(eqs.params), len(eqs.points)
    nv = len(eqs.qd)
    if n == 0:
        raise CodegenError(f"model {model.name!r} has no coordinates; there is nothing to generate")
    _check_shapes(eqs)
    lie = eqs.configuration_rate is not None     # velocities that are not the coordinates' rates
    blocks = constraint_blocks(eqs)
    slots = slots_of(eqs, macro)
    g = _Groups(eqs, macro)
    jacobian = options.wants_jacobian(n)
    forward, forward_note, fd = forward_choice(eqs, options)

    r = dynamics_routines(eqs, prefix, g, options)
    r += forward_routines(eqs, prefix, g, options, fd, need_mass_force=fd is None)
    forward_ops = (_find(r, "articulated").ops if fd is not None
                   else _find(r, "mass_force").ops + cholesky_ops(nv))
    trig: dict[sp.Expr, sp.Symbol] = {}
    if jacobian:
        factor = _qdd_from_factor(eqs, r, forward_ops)
        trig = _shared_trig(eqs, options) if factor else {}
        r += jacobian_routines(eqs, prefix, g, options, qdd_from_factor=factor, trig=trig)
    r += constraint_routines(eqs, prefix, g, options, blocks)
    if jacobian and blocks and (nv == n or eqs.inverse_dynamics_derivatives() is not None):
        r.append(constraint_partials_routine(eqs, prefix, g, options))
    r += force_routines(eqs, prefix, g, options)
    if spatial:
        r += frame_routines(full, prefix, g, options)
    if options.regressor:
        r += regressor_routines(eqs, prefix, g, options)
    if options.parameter_derivatives:
        r.append(parameter_partials_routine(eqs, prefix, g, options))
    if lie:
        r += configuration_routines(eqs, prefix, g, options)

    nrows = sum(b.nrows for b in blocks)
    meta: tuple[tuple[str, str], ...] = (
        ("NAME", repr(model.name)), ("PREFIX", repr(prefix)), ("VERSION", repr(version)),
        ("METHOD", repr(str(eqs.method))),
        ("NQ", repr(n)), *((("NV", repr(nv)),) if nv != n else ()), ("NU", repr(m)), ("NP", repr(npar)),
        ("NPOINTS", repr(npts)),
        ("COORDINATES", repr(tuple(str(s) for s in eqs.q))), ("INPUTS", repr(tuple(str(s) for s in eqs.u))),
        ("PARAMETERS", repr(tuple(str(s) for s in eqs.params))),
        ("PARAMETER_VALUES", repr(tuple(float(eqs.param_values[s]) for s in eqs.params))),
        ("INITIAL_Q", repr(slots.initial_q)),
        ("POINTS", repr(tuple(str(nm) for nm in eqs.points))),
        ("HAS_JACOBIAN", repr(jacobian)), ("FORWARD", repr(forward)),
    )
    if spatial:
        meta += (("FRAMES", repr(tuple(full.frames))),)
    if jacobian and any(rt.name in ("inverse_dynamics_derivatives", "inverse_dynamics_vectors", "inverse_dynamics_rest")
                        for rt in r):
        derivatives = eqs.inverse_dynamics_derivatives()
        assert derivatives is not None
        meta += (("VELOCITY_PARENTS", repr(derivatives.parents)),)
        nodes = any(rt.name == "inverse_dynamics_rest" for rt in r)
        if nodes or any(rt.name == "inverse_dynamics_vectors" for rt in r):
            assert derivatives.pairs is not None
            meta += (("PAIR_ANCESTORS", repr(derivatives.pairs.ancestors)),)
        if nodes:
            L = derivatives.nodes
            assert L is not None
            meta += (("NODE_LOOP", repr({"kind": L.kind, "parent": L.parent, "coordinate": L.coordinate,
                                         "velocity": L.velocity, "constants": L.constants,
                                         "sums": len(L.C)})),)
    if trig:
        index = {c: i for i, c in enumerate(eqs.q)}
        meta += (("SHARED_TRIG", repr(tuple((type(a).__name__, index[a.args[0]]) for a in trig))),)
    if options.regressor and eqs.regressor is not None:
        meta += (("THETA", repr(tuple(eqs.regressor.names))),)
    if eqs.forces:
        meta += (("NFORCES", repr(len(eqs.forces))), ("FORCES", repr(tuple(f.name for f in eqs.forces))),
                 ("FORCE_TYPES", repr(tuple(f.type for f in eqs.forces))))
    if blocks:
        meta += (("NCONSTRAINTS", repr(len(blocks))), ("NROWS", repr(nrows)),
                 ("CONSTRAINTS", repr(tuple((b.name, b.kind, b.row, b.nrows) for b in blocks))))
    spec = ModelSpec(model.name, prefix, macro, version, str(eqs.method), comment_text(model.doc),
                     "", n, m, npar, npts, slots.coordinates, slots.inputs, slots.parameters, slots.points,
                     tuple(r), meta, jacobian, forward, forward_ops,
                     comment_text(forward_note, 200), len(blocks), nrows, blocks, options.real,
                     len(eqs.forces), nv, tuple(eqs.lie_joints))
    digest = hashlib.sha256(_canonical(spec).encode()).hexdigest()[:16]
    return replace(spec, content_hash=digest, meta=meta + (("CONTENT_HASH", repr(digest)),))


# ---------------------------------------------------------------------------
# the routines, one entry per symbolic result
# ---------------------------------------------------------------------------

class _Groups:
    """The input argument groups of a model's routines, and the C names of the sizes."""

    def __init__(self, eqs: Equations, macro: str) -> None:
        self.NQ, self.NU, NP, self.NPTS = f"{macro}_NQ", f"{macro}_NU", f"{macro}_NP", f"{macro}_NPOINTS"
        self.t = Group(Argument("t", "", "time (of the force elements' expressions)", scalar=True), [eqs.t])
        self.q = Group(Argument("q", self.NQ, "coordinates"), eqs.q)
        #: the velocity size: NQ unless the model has free joints (nv != nq)
        self.NV = self.NQ if len(eqs.qd) == len(eqs.q) else f"{macro}_NV"
        self.qd = Group(Argument("qd", self.NV, "coordinate rates"), eqs.qd)
        self.qdd = Group(Argument("qdd", self.NV, "coordinate accelerations"), eqs.qdd)
        self.u = Group(Argument("u", self.NU, "inputs"), eqs.u)
        self.p = Group(Argument("p", NP, "parameters"), eqs.params)


#: Mirrored entries of a symmetric matrix from which the upper triangle is copied in a loop, not entry by
#: entry (hundreds of copies through the output pointer cost the C compiler more than the whole matrix).
MIRROR_LOOP_MIN = 6


def _mass_items(M: sp.Matrix) -> tuple[list[tuple[str, sp.Expr]], list[tuple[str, ...]]]:
    """The lower triangle of a symmetric matrix as outputs, the upper one as copies (one loop when long)."""
    n = M.shape[0]
    lower_tri = [(i, j) for i in range(n) for j in range(i + 1)]
    items = [(f"M[{i * n + j}]", M[i, j]) for i, j in lower_tri]
    if n * (n - 1) // 2 >= MIRROR_LOOP_MIN:
        return items, [(f"M[j*{n} + i]", f"M[i*{n} + j]", f"for (int i = 1; i < {n}; ++i) for (int j = 0; j < i; ++j)")]
    return items, [(f"M[{j * n + i}]", f"M[{i * n + j}]") for i, j in lower_tri if i != j]


def dynamics_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> list[Routine]:
    """mass_matrix, bias, gravity, input_map, inverse_dynamics (``Equations.inverse_dynamics()``: Newton-Euler
    where the method gives it, else M qdd + bias), energy, points: those ``CodegenOptions.routines`` asks for."""
    n, m = len(eqs.qd), len(eqs.u)   # velocity-sized: nv
    M, bias, B, a = eqs.M, eqs.bias, eqs.B, eqs.assignments
    NQ, NU = g.NV, g.NU
    m_items, m_copies = _mass_items(M)
    wants = _wanted(eqs, options)
    out = [build_routine(
        "mass_matrix", f"{prefix}_mass_matrix", "Mass matrix M(q), symmetric positive definite.",
        (f"M: {NQ} x {NQ}, row-major.",), [g.q, g.p, output("M", f"{NQ}*{NQ}", "mass matrix, row-major")],
        [("M", f"mass matrix, row-major {n}x{n}, lower triangle", m_items)],
        [("M", "upper triangle by symmetry", m_copies)], a, options)]
    if wants("bias"):
        out.append(build_routine(
            "bias", f"{prefix}_bias", "Bias forces h + G + K + D, as in M(q) qdd + bias = B(q) u.",
            ("velocity terms + gravity + springs + dampers - force elements.",),
            [g.t, g.q, g.qd, g.p, output("h", NQ, "bias forces")],
            [("h", "bias forces h + G + K + D", [(f"h[{i}]", bias[i]) for i in range(n)])], [], a, options))
    if wants("gravity"):
        out.append(build_routine(
            "gravity", f"{prefix}_gravity", "Gravity forces G(q) (part of the bias).", (),
            [g.q, g.p, output("g", NQ, "gravity forces")],
            [("g", "gravity forces G", [(f"g[{i}]", eqs.G[i]) for i in range(n)])], [], a, options))
    out.append(build_routine(
        "input_map", f"{prefix}_input_map", "Input map B(q): generalized forces = B u.",
        (f"B: {NQ} x {NU}, row-major.",), [g.q, g.p, output("B", f"{NQ}*{NU}", "input map, row-major")],
        [("B", f"input map, row-major {n}x{m}", [(f"B[{i * m + j}]", B[i, j]) for i in range(n)
                                                  for j in range(m)])], [], a, options))
    if wants("inverse_dynamics"):
        if eqs.inverse is None:
            inverse = [_row_times(M, i, eqs.qdd) + bias[i] for i in range(n)]
            inverse_assignments: list[tuple[sp.Symbol, sp.Expr]] = []
        else:
            column, inverse_assignments = eqs.inverse_dynamics()
            inverse = list(column)
        out.append(build_routine(
            "inverse_dynamics", f"{prefix}_inverse_dynamics",
            "Inverse dynamics: generalized forces Q = M(q) qdd + bias(q, qd).",
            ("Q equals B(q) u for the inputs u that produce the accelerations qdd.",),
            [g.t, g.q, g.qd, g.qdd, g.p, output("Q", NQ, "generalized forces")],
            [("Q", "generalized forces M qdd + bias",
              [(f"Q[{i}]", inverse[i]) for i in range(n)])], [], a + inverse_assignments, options))
    if wants("energy"):
        out.append(build_routine(
            "energy", f"{prefix}_energy", "Kinetic and potential energy: e[0] = T, e[1] = V.",
            ("V holds gravity and springs.",), [g.q, g.qd, g.p, output("e", "2", "kinetic, potential energy")],
            [("e", "kinetic and potential energy", [("e[0]", eqs.T), ("e[1]", eqs.V)])], [], a, options))
    if wants("points"):
        points = list(eqs.points.values())
        out.append(build_routine(
            "points", f"{prefix}_points", "Positions of the marker points: r[2*i] = x, r[2*i+1] = y.",
            (), [g.q, g.p, output("r", f"2*{g.NPTS}", "point positions")],
            [("r", "marker points x, y", [(f"r[{2 * i + c}]", v[c]) for i, v in enumerate(points)
                                          for c in range(2)])], [], a, options))
    return out


def _wanted(eqs: Equations, options: CodegenOptions) -> Callable[[str], bool]:
    """Whether a table routine of ``eqs`` is generated (``CodegenOptions.routines``)."""
    constrained = bool(eqs.constraints)
    return lambda name: options.wants_routine(name, constrained=constrained)


def frame_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> list[Routine]:
    """``frames`` and ``frame_jacobians`` of a spatial model (exported functions beside the table, found by
    name: ``<prefix>_nframes()`` and ``<prefix>_frame_list()`` give their number and names)."""
    n = len(eqs.qd)
    frames = list(eqs.frames.values())
    jac = [eqs.frame_jacobians[nm] for nm in eqs.frames]
    nf = len(frames)
    return [
        build_routine(
            "frames", f"{prefix}_frames",
            "Frames of the named points in the ground frame: r[12*i .. 12*i+2] = position, "
            "r[12*i+3 .. 12*i+11] = rotation matrix, row-major.",
            (f"{nf} frames; names from {prefix}_frame_list().",),
            [g.q, g.p, output("r", str(12 * nf), "frame positions and rotations")],
            [("r", "positions and rotations", [(f"r[{12 * i + c}]", (pos[c] if c < 3 else rot[(c - 3) // 3,
                                                                                            (c - 3) % 3]))
                                                for i, (pos, rot) in enumerate(frames) for c in range(12)])],
            [], eqs.assignments, options),
        build_routine(
            "frame_jacobians", f"{prefix}_frame_jacobians",
            "Jacobians of the frames: rows 6*i .. 6*i+2 the velocity of frame i's origin, rows 6*i+3 .. 6*i+5 "
            "its angular velocity (ground frame), times qd.",
            (f"J: {6 * nf} x {n}, row-major.",),
            [g.q, g.p, output("J", str(6 * nf * n), "frame Jacobians, row-major")],
            [("J", "frame Jacobians", [(f"J[{(6 * i + r) * n + j}]", jc[r, j])
                                       for i, jc in enumerate(jac) for r in range(6) for j in range(n)])],
            [], eqs.assignments, options),
    ]


def regressor_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> list[Routine]:
    """``regressor``: Y (nq x ntheta, row-major) with ``M qdd + h + G = Y theta`` (``Equations.regressor``),
    exported beside the table: ``<prefix>_ntheta()`` and ``<prefix>_theta_list()`` give theta's count and
    names. Y does not depend on theta; theta's symbols that its code still names take their defaults."""
    reg = eqs.regressor
    if reg is None:
        raise CodegenError(f"model {eqs.model.name!r}: CodegenOptions(regressor=True) needs the equations' "
                           "regressor (rodgen.build attaches it; for generate: "
                           "rodgen.symbolic.regressor.attach_regressor(equations, model))")
    n, k = len(eqs.q), len(reg.names)
    known = set(eqs.q) | set(eqs.qd) | set(eqs.qdd) | set(eqs.params)
    fixed = {s: sp.Float(v) for s, v in zip(reg.theta, reg.values)}
    assignments = [(s, e.xreplace(fixed)) for s, e in reg.assignments]
    rows = [[sp.sympify(e).xreplace(fixed) for e in row] for row in reg.Y]
    defined = {s for s, _ in assignments}
    free = ({f for row in rows for e in row for f in e.free_symbols}
            | {f for _, e in assignments for f in e.free_symbols})
    stray = sorted(str(f) for f in free - known - defined)
    if stray:
        raise CodegenError(f"model {eqs.model.name!r}: the regressor names symbols the model does not have: "
                           f"{', '.join(stray[:5])}")
    return [build_routine(
        "regressor", f"{prefix}_regressor",
        "Identification regressor: M(q) qdd + h(q, qd) + G(q) = Y(q, qd, qdd) theta.",
        (f"Y: {n} x {k}, row-major; theta's names from {prefix}_theta_list().",),
        [g.t, g.q, g.qd, g.qdd, g.p, output("Y", str(n * k), "regressor, row-major")],
        [("Y", "regressor", [(f"Y[{i * k + j}]", rows[i][j]) for i in range(n) for j in range(k)])],
        [], assignments, options)]


def configuration_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> list[Routine]:
    """``configuration_rate`` (dq/dt from q and qd: ``Equations.configuration_rate``), for the RHS of a model
    whose velocities are not its coordinates' rates (free, spherical and planar joints)."""
    rate = eqs.configuration_rate
    assert rate is not None
    return [build_routine(
        "configuration_rate", f"{prefix}_configuration_rate",
        "Configuration derivative dq/dt from the velocities (used by rhs).",
        ("A free joint: position rate R v, quaternion rate 1/2 q (0, w); a spherical joint: 1/2 q (0, w); a "
         "planar joint: Rz(theta) (vx, vy), wz; every other coordinate: its rate.",),
        [g.q, g.qd, output("dq", g.NQ, "configuration derivative")],
        [("dq", "dq/dt", [(f"dq[{i}]", rate[i]) for i in range(len(eqs.q))])], [], [], options, static=True)]


def forward_choice(eqs: Equations, options: CodegenOptions) -> tuple[str, str, Optional[ForwardDynamics]]:
    """(algorithm, reason, articulated-body forward dynamics or None) for ``<prefix>_forward_dynamics``.

    Reads ``Equations.articulated`` (and ``articulated_reason``), which the symbolic stage fills.
    """
    want = ForwardAlgorithm(options.forward)
    if want is ForwardAlgorithm.CHOLESKY:
        return want.value, "chosen by CodegenOptions(forward='cholesky')", None
    fd = eqs.articulated
    if fd is None:
        if want is ForwardAlgorithm.ABA:
            raise CodegenError(f"model {eqs.model.name!r}: the articulated-body algorithm does not apply "
                               f"({eqs.articulated_reason}); use CodegenOptions(forward='auto') or 'cholesky'")
        return ForwardAlgorithm.CHOLESKY.value, eqs.articulated_reason, None
    return ForwardAlgorithm.ABA.value, "", fd


def _mass_force_io(eqs: Equations, g: _Groups) -> tuple[list[Group], list[tuple[str, str, list[tuple[str, sp.Expr]]]]]:
    """The arguments and outputs of a routine giving M's lower triangle and f = B u - bias (``mass_force``,
    ``jacobian_terms``)."""
    n, NQ = len(eqs.qd), g.NV
    m_items, _ = _mass_items(eqs.M)
    f = [(f"f[{i}]", _row_times(eqs.B, i, eqs.u) - eqs.bias[i]) for i in range(n)]
    return ([g.t, g.q, g.qd, g.u, g.p, output("M", f"{NQ}*{NQ}", "mass matrix"), output("f", NQ, "B u - bias")],
            [("M", "mass matrix, lower triangle", m_items), ("f", "B u - bias", f)])


def forward_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions,
                     fd: Optional[ForwardDynamics], *, need_mass_force: bool) -> list[Routine]:
    """The static helpers of ``<prefix>_forward_dynamics`` (its body is in the template):
    ``mass_force`` (M and B u - bias, for the Cholesky path) and
    ``articulated`` (the articulated-body recursion)."""
    n = len(eqs.qd)
    NQ = g.NV
    out: list[Routine] = []
    if need_mass_force:
        groups, outputs = _mass_force_io(eqs, g)
        out.append(build_routine(
            "mass_force", f"{prefix}_mass_force", "M(q) and f = B u - bias (used by forward_dynamics).", (),
            groups, outputs, [], eqs.assignments, options, static=True))
    if fd is not None:
        out.append(build_routine(
            "articulated", f"{prefix}_articulated",
            "Forward dynamics by the articulated-body algorithm (used by forward_dynamics).",
            (("dinv holds 1/D_i, the inverse articulated inertias along the joints: the result is valid where "
              "each is positive and finite."),),
            [g.t, g.q, g.qd, g.u, g.p, output("qdd", NQ, "coordinate accelerations"),
             output("dinv", NQ, "inverse articulated inertias 1/D_i")],
            [("qdd", "accelerations", [(f"qdd[{i}]", fd.qdd[i]) for i in range(n)]),
             ("dinv", "inverse articulated inertias", [(f"dinv[{i}]", d) for i, d in enumerate(fd.inverse_pivots)])],
            [], fd.assignments, options, static=True))
    return out


def _qdd_from_factor(eqs: Equations, routines: Sequence[Routine], forward_ops: int) -> bool:
    """Whether the RHS Jacobian of the derivative of the recursive Newton-Euler algorithm takes qdd from the
    factor of M (:func:`~rodgen.codegen.spec.qdd_from_factor_pays`, from the operations of the routines so far)."""
    names = {r.name: r for r in routines}
    d = eqs.inverse_dynamics_derivatives()
    if d is None or "bias" not in names or "input_map" not in names:
        return False
    pairs = sum(len(a) for a in spec_module.ancestors_of(tuple(d.parents)))
    return spec_module.qdd_from_factor_pays(names["bias"].ops, len(eqs.qd), len(eqs.u), pairs, forward_ops)


def _derivative_form(eqs: Equations, options: CodegenOptions) -> str:
    """How the RHS Jacobian's derivative is printed: ``"nodes"`` (the per-joint loop and the pairs' loop),
    ``"pairs"`` (straight-line per-velocity vectors and the pairs' loop), ``"straight"`` (the derivative of the
    recursive Newton-Euler algorithm as straight-line code) or ``"tangent"`` (no such derivative: the tangent of
    the inverse dynamics, once per column)."""
    d = eqs.inverse_dynamics_derivatives()
    if d is None:
        return "tangent"
    if d.pairs is not None and d.node_count >= options.node_loop_min and d.nodes is not None:
        return "nodes"
    if d.pairs is not None and d.pairs.count >= options.pair_loop_min:
        return "pairs"
    return "straight"


def _shared_trig(eqs: Equations, options: CodegenOptions) -> dict[sp.Expr, sp.Symbol]:
    """The sines and cosines of the coordinates that the straight-line derivative of the recursive Newton-Euler
    algorithm reads from ``jacobian_terms`` (meta ``SHARED_TRIG``), each with the symbol standing for it
    (``rodgen_sc<k>``), in the coordinates' order, the sine first; none where the derivative is a loop."""
    if _derivative_form(eqs, options) != "straight":
        return {}
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None
    coordinates = list(eqs.q)
    found: set[sp.Expr] = set()
    coords = set(coordinates)
    for ex in [e for _, e in d.assignments] + list(d.dq) + list(d.dv):
        found |= {a for a in sp.sympify(ex).atoms(sp.sin, sp.cos) if a.args[0] in coords}
    order = {s: i for i, s in enumerate(coordinates)}
    atoms = sorted(found, key=lambda a: (order[a.args[0]], 0 if isinstance(a, sp.sin) else 1))
    return {a: sp.Symbol(f"rodgen_sc{k}", real=True) for k, a in enumerate(atoms)}


def jacobian_terms_routine(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions,
                           trig: dict[sp.Expr, sp.Symbol]) -> Routine:
    """``<prefix>_jacobian_terms``: M (lower triangle; the upper one too where the factor is not straight-line
    code, whose loops read whole rows), f = B u - bias and the sines and cosines ``trig`` that the derivative
    reads, in one routine: the trigonometric atoms and the subexpressions of M and the bias computed once."""
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None
    groups, outputs = _mass_force_io(eqs, g)
    if trig:
        outputs.append(("sc", "sines and cosines of the coordinates", [(f"sc[{k}]", a) for k, a in enumerate(trig)]))
        groups.append(output("sc", str(len(trig)), "sines and cosines of the coordinates"))
    copies = [] if spec_module.ltdl_straight(tuple(d.parents)) else [("M", "upper triangle by symmetry",
                                                                      _mass_items(eqs.M)[1])]
    return build_routine(
        "jacobian_terms", f"{prefix}_jacobian_terms",
        "M(q), f = B u - bias and the coordinates' sines and cosines (used by rhs_jacobian).", (),
        groups, outputs, copies, eqs.assignments, options, static=True)


def jacobian_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions, *,
                      qdd_from_factor: bool = False, trig: Optional[dict[sp.Expr, sp.Symbol]] = None
                      ) -> list[Routine]:
    """``inverse_dynamics_partials`` and ``inverse_dynamics_tangent``, used by ``<prefix>_rhs_jacobian``.

    g(q, qd) = M(q) a + bias(q, qd) - B(q) u with a and u held fixed; at a = qdd,
    d qdd / d x = -M^-1 dg/dx. The symbolic stage gives the tangent of g along a direction
    (``Equations.inverse_dynamics_tangent``): the partials routine evaluates its local partials once
    per point into ``pd``, the tangent routine gives dg for one direction ``dx`` = [dq, dqd] from
    them; the C of rhs_jacobian calls it once per unit direction and solves the 2n columns together with
    M's Cholesky factor. Both are as long as the inverse dynamics (O(nq) for a chain), not nq times it.

    With ``qdd_from_factor`` (:func:`_qdd_from_factor`) the list starts with ``jacobian_terms``, and the
    straight-line derivative reads the sines and cosines ``trig`` (:func:`_shared_trig`) from it (argument
    ``sc``).
    """
    n = len(eqs.qd)
    NQ = g.NV
    inputs = [g.t, g.q, g.qd, g.qdd, g.u, g.p]
    d = eqs.inverse_dynamics_derivatives()
    trig = trig or {}
    head = [jacobian_terms_routine(eqs, prefix, g, options, trig)] if qdd_from_factor else []
    form = _derivative_form(eqs, options)
    if form == "nodes":
        return head + node_loop_routines(eqs, prefix, g, options)
    if form == "pairs":
        assert d is not None and d.pairs is not None
        # the O(n) per-velocity vectors as straight-line code into vec, the pairs' dot products as the loop of
        # <prefix>_inverse_dynamics_derivatives (templates/c/jacobian.c.jinja, from the meta PAIR_ANCESTORS)
        lp = d.pairs
        width = len(lp.vectors[0])
        assert width == 48, width     # the layout templates/c/jacobian.c.jinja reads
        # the pairs' loop leaves out F_y's linear half, zero by the symbolic stage (rnea_derivatives.FY_LINEAR)
        entries = [(f"dg[{i * 2 * n + j}]", lp.dq[i, j] if j < n else lp.dv[i, j - n])
                   for i in range(n) for j in range(2 * n)]
        vec = [(f"vec[{j * width + r}]", x) for j in range(n) for r, x in enumerate(lp.vectors[j])]
        return head + [build_routine(
            "inverse_dynamics_vectors", f"{prefix}_inverse_dynamics_vectors",
            "The per-velocity vectors of the derivative of the recursive Newton-Euler algorithm, and dg without "
            "the products of the pairs on one branch (used by inverse_dynamics_derivatives).",
            ("vec: per velocity, six each of J, dA/dq, dV/dq, dA/dv, F_q, F_v, F_a, F_y.",),
            inputs + [output("dg", f"2*{NQ}*{NQ}", "d g/d q (tangent space) and d g/d qd without the pairs' "
                                                      "products, row by row"),
                      output("vec", f"{width}*{NQ}", "per-velocity vectors")],
            [("dg", "d(M a + bias - B u)/d[q, qd] without the pairs' products", entries),
             ("vec", "per-velocity vectors", vec)], [], d.assignments, options, static=True)]
    if form == "straight":
        assert d is not None
        # with trig, the coordinates' sines and cosines are read from jacobian_terms' sc
        entries = [(f"dg[{i * 2 * n + j}]", (d.dq[i, j] if j < n else d.dv[i, j - n]).xreplace(trig))
                   for i in range(n) for j in range(2 * n)]
        sc = [Group(Argument("sc", str(len(trig)), "sines and cosines of the coordinates (jacobian_terms)"),
                    list(trig.values()))] if trig else []
        return head + [build_routine(
            "inverse_dynamics_derivatives", f"{prefix}_inverse_dynamics_derivatives",
            "dg = d(M a + bias - B u)/d[q, qd] at fixed a and u, row-major nv x 2 nv (used by rhs_jacobian).",
            ("By differentiating the recursive Newton-Euler algorithm: entries off a branch of the tree are 0.",),
            inputs + sc + [output("dg", f"2*{NQ}*{NQ}", "d g/d q (tangent space) and d g/d qd, row by row")],
            [("dg", "d(M a + bias - B u)/d[q, qd]", entries)], [],
            [(v, e.xreplace(trig)) for v, e in d.assignments] if trig else d.assignments, options, static=True)]
    tc = eqs.inverse_dynamics_tangent()
    npd = max(len(tc.partials), 1)      # C99 has no zero-size arrays
    pd = Group(Argument("pd", str(npd), "local partials of the inverse dynamics at the point"), tc.partials)
    dx = Group(Argument("dx", f"2*{NQ}" if g.NV == g.NQ else f"{g.NQ} + {g.NV}", "direction [dq, dqd]"),
               tc.seeds)
    partials = build_routine(
        "inverse_dynamics_partials", f"{prefix}_inverse_dynamics_partials",
        "Local partials of g = M a + bias - B u at one point (used by rhs_jacobian).", (),
        inputs + [output("pd", str(npd), "local partials")],
        [("pd", f"{len(tc.partials)} local partials", [(f"pd[{i}]", s) for i, s in enumerate(tc.partials)])],
        [], tc.primal, options, static=True)
    tangent = build_routine(
        "inverse_dynamics_tangent", f"{prefix}_inverse_dynamics_tangent",
        "dg = d(M a + bias - B u)/d[q, qd] times dx at fixed a and u (used by rhs_jacobian).", (),
        inputs + [pd, dx, output("dg", NQ, "directional derivative")],
        [("dg", "d(M a + bias - B u)/d[q, qd] dx", [(f"dg[{i}]", tc.outputs[i]) for i in range(n)])],
        [], tc.tangent, options, static=True)
    return [partials, tangent]


def node_loop_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> list[Routine]:
    """The derivative of the recursive Newton-Euler algorithm as a loop over the nodes (``rnea_loop.NodeLoop``):
    ``inverse_dynamics_rest`` (the springs', dampers', force elements' and input map's part of dg, every other
    entry zero) and, per kind of node k, ``node_forward<k>`` and ``node_backward<k>``, which
    templates/c/jacobian.c.jinja calls in its loops over the nodes (tables from the meta ``NODE_LOOP``)."""
    d = eqs.inverse_dynamics_derivatives()
    assert d is not None and d.nodes is not None
    L, n, NQ = d.nodes, len(eqs.qd), g.NV
    STATE, VECTORS, SUMS = len(L.P), len(L.V), len(L.C)   # 24, 24 (the layout jacobian.c.jinja reads), 28
    assert (STATE, VECTORS) == (24, 24)
    one = replace(options, max_statements=10 ** 9)      # a step is one function: it runs in a loop
    entries = [(f"dg[{i * 2 * n + j}]", L.dq[i, j] if j < n else L.dv[i, j - n])
               for i in range(n) for j in range(2 * n)]
    out = [build_routine(
        "inverse_dynamics_rest", f"{prefix}_inverse_dynamics_rest",
        "The springs', dampers', force elements' and input map's part of dg (used by inverse_dynamics_derivatives).",
        (), [g.t, g.q, g.qd, g.qdd, g.u, g.p, output("dg", f"2*{NQ}*{NQ}", "their part of d g/d[q, qd]")],
        [("dg", "d(K + D - F - B u)/d[q, qd]", entries)], [], d.assignments, options, static=True)]

    def arg(name: str, length: int, doc: str, symbols: Sequence[sp.Basic]) -> Group:
        return Group(Argument(name, str(length), doc), symbols)

    def restricted(groups: list[Group]) -> list[Group]:
        """The forward step's arrays restrict: the loop hands each its own (a root's P, the only one that could
        meet its S, is never read), so the step's stores need not wait for its loads and the next node starts
        sooner (a 36-link chain's forward loop 3.6 -> 2.9 us; the backward step's, measured, lose ~0.2 us by it)."""
        return [gr if gr.arg.scalar else Group(replace(gr.arg, restrict=True), gr.symbols) for gr in groups]

    def scalar(name: str, doc: str, symbol: sp.Basic) -> Group:
        return Group(Argument(name, "", doc, scalar=True), [symbol])

    for k, kind in enumerate(L.kinds):
        fa, fo = kind.forward
        out.append(build_routine(
            f"node_forward{k}", f"{prefix}_node_forward{k}",
            f"The forward step of a node of kind {k} (used by inverse_dynamics_derivatives).", (),
            restricted([arg("P", STATE, "the parent's state: rotation, origin, velocity, acceleration", L.P),
                        arg("K", len(L.K), "the node's constants", L.K),
                        scalar("x", "the node's coordinate", L.x), scalar("xd", "its rate", L.xd),
                        scalar("xdd", "its acceleration", L.xdd), g.p,
                        output("S", str(STATE), "the node's state"),
                        output("V", str(VECTORS), "J, dA/dq, dV/dq, dA/dv"),
                        output("C", str(SUMS), "the bodies' m, h, inertia, B_w, p, f")]),
            [("S", "state", [(f"S[{r}]", x) for r, x in enumerate(fo[:STATE])]),
             ("V", "the column's vectors", [(f"V[{r}]", x) for r, x in enumerate(fo[STATE:STATE + VECTORS])]),
             ("C", "the bodies' sums", [(f"C[{r}]", x) for r, x in enumerate(fo[STATE + VECTORS:])])],
            [], fa, one, static=True))
        ba, bo = kind.backward
        out.append(build_routine(
            f"node_backward{k}", f"{prefix}_node_backward{k}",
            f"The backward step of a node of kind {k} (used by inverse_dynamics_derivatives).", (),
            [arg("C", SUMS, "the subtree's m, h, inertia, B_w, p, f", L.C),
             arg("V", VECTORS, "J, dA/dq, dV/dq, dA/dv", L.V), g.p,
             output("F", str(VECTORS), "F_q, F_v, F_a, F_y"), output("D", "2", "the diagonal entries")],
            [("F", "F_q, F_v, F_a, F_y", [(f"F[{r}]", x) for r, x in enumerate(bo[:VECTORS])]),
             ("D", "J.F_q, J.F_v", [(f"D[{r}]", x) for r, x in enumerate(bo[VECTORS:])])],
            [], ba, one, static=True))
    return out


def constraint_partials_routine(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> Routine:
    """``<prefix>_constraint_partials``: the symbolic stage's ``Equations.constraint_partials()``, the
    derivatives of g = M qdd + bias - B u - J^T lam and k = J qdd + Jdot qd by [q, qd] at fixed qdd, u
    and lam, from which the runtime's C solves the derivatives of the constrained dynamics and the impact
    map (generated with the RHS Jacobian)."""
    n = len(eqs.qd)
    NQ = g.NV
    assignments, lam, dg, dk = eqs.constraint_partials()
    nrows = len(lam)
    w = 2 * n
    return build_routine(
        "constraint_partials", f"{prefix}_constraint_partials",
        "Partials of the constrained dynamics' KKT system by [q, qd] at fixed qdd, u and lam.",
        (f"dg: {n} x {w} = d(M qdd + bias - B u - J^T lam)/d[q, qd]; dk: {nrows} x {w} = "
         f"d(J qdd + Jdot qd)/d[q, qd]; row-major.",),
        [g.t, g.q, g.qd, g.qdd, g.u, Group(Argument("lam", str(nrows), "constraint forces lambda"), lam), g.p,
         output("dg", f"2*{NQ}*{NQ}", "d g/d[q, qd], row-major"),
         output("dk", f"2*{nrows}*{NQ}", "d k/d[q, qd], row-major")],
        [("dg", "d(M qdd + bias - B u - J^T lam)/d[q, qd]",
          [(f"dg[{i * w + j}]", dg[i][j]) for i in range(n) for j in range(w)]),
         ("dk", "d(J qdd + Jdot qd)/d[q, qd]",
          [(f"dk[{i * w + j}]", dk[i][j]) for i in range(nrows) for j in range(w)])],
        [], assignments, options)


def parameter_partials_routine(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> Routine:
    """``<prefix>_parameter_partials``: d(M qdd + bias - B u)/dp at fixed q, qd, qdd and u
    (``Equations.parameter_partials()``); generated on request
    (``CodegenOptions(parameter_derivatives=True)``)."""

    n, npar = len(eqs.qd), len(eqs.params)
    NQ = g.NQ
    assignments, dg = eqs.parameter_partials()
    return build_routine(
        "parameter_partials", f"{prefix}_parameter_partials",
        "Partial derivative of M qdd + bias - B u by the parameters at fixed q, qd, qdd and u.",
        (f"dg: {n} x {npar} = d(M qdd + bias - B u)/dp, row-major; d qdd/dp = -M^-1 dg at the forward "
         f"dynamics' qdd.",),
        [g.t, g.q, g.qd, g.qdd, g.u, g.p, output("dg", f"{NQ}*{max(npar, 1)}", "d g/dp, row-major")],
        [("dg", "d(M qdd + bias - B u)/dp", [(f"dg[{i * npar + k}]", dg[i][k]) for i in range(n)
                                              for k in range(npar)])],
        [], assignments, options)


def constraint_blocks(eqs: Equations) -> tuple[ConstraintBlock, ...]:
    """The block table of ``eqs.constraints``, checked against the contract of ``rodgen_model.h``."""
    n = len(eqs.qd)     # J's columns: the velocities (nq but with free, spherical or planar joints)
    blocks: list[ConstraintBlock] = []
    row = 0
    seen: set[str] = set()
    for k, c in enumerate(eqs.constraints):
        where = f"model {eqs.model.name!r}, constraint {k} ({c.name!r})"
        try:
            check_name(c.name, "constraint name")
        except ModelError as exc:
            raise CodegenError(f"{where}: {exc.detail}") from None
        if c.name in seen:
            raise CodegenError(f"{where}: two constraint blocks are named {c.name!r}")
        seen.add(c.name)
        if c.kind not in CONSTRAINT_KINDS:
            raise CodegenError(f"{where}: kind {c.kind!r} is not one of {', '.join(CONSTRAINT_KINDS)}")
        macro, code, allowed = CONSTRAINT_KINDS[c.kind]
        rows = c.position.shape[0] if c.position.shape[0] in allowed else allowed[0]
        for field_name, shape in (("position", (rows, 1)), ("jacobian", (rows, n)), ("bias", (rows, 1))):
            got = tuple(getattr(c, field_name).shape)
            if got != shape:
                raise CodegenError(f"{where}: {field_name} has shape {got}; a {c.kind} block has {rows} "
                                   f"row(s) and the model {n} velocities, so {shape} was expected")
        blocks.append(ConstraintBlock(c.name, c.kind, macro, code, row, rows, c.sole))
        row += rows
    return tuple(blocks)


def constraint_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions,
                        blocks: Sequence[ConstraintBlock]) -> list[Routine]:
    """constraint_position, constraint_jacobian, constraint_bias, constraint_friction (none without blocks),
    kinetic_friction (with dry-friction blocks), constrained_terms (when wanted)."""
    if not blocks:
        return []
    n, nrows, nblocks = len(eqs.qd), sum(b.nrows for b in blocks), len(blocks)   # J: nrows x nv
    NQ, a = g.NV, eqs.assignments
    pos = [ex for c in eqs.constraints for ex in c.position]
    jac = [c.jacobian[i, j] for c in eqs.constraints for i in range(c.nrows) for j in range(n)]
    bias = [ex for c in eqs.constraints for ex in c.bias]
    mu = [c.friction if c.kind in ("contact", "friction") and c.friction is not None else sp.Integer(0)
          for c in eqs.constraints]
    kinetic = [c.kinetic if c.kind == "friction" and c.kinetic is not None else sp.Integer(0)
               for c in eqs.constraints]
    layout = f"blocks in the order of the constraint table ({nblocks} block(s), {nrows} row(s))"
    return [
        build_routine(
            "constraint_position", f"{prefix}_constraint_position",
            "Constraint rows c(q): contacts (tangential position, gap), loops (b - a), limits.", (layout,),
            [g.q, g.p, output("c", str(nrows), "constraint rows")],
            [("c", "constraint rows", [(f"c[{i}]", ex) for i, ex in enumerate(pos)])], [], a, options),
        build_routine(
            "constraint_jacobian", f"{prefix}_constraint_jacobian",
            "Constraint Jacobian J(q) = dc/dq.", (f"J: {nrows} x {NQ}, row-major.",),
            [g.q, g.p, output("J", f"{nrows}*{NQ}", "constraint Jacobian, row-major")],
            [("J", f"constraint Jacobian, row-major {nrows}x{n}", [(f"J[{i}]", ex) for i, ex in enumerate(jac)])],
            [], a, options),
        build_routine(
            "constraint_bias", f"{prefix}_constraint_bias",
            "Constraint bias b(q, qd) = Jdot qd: c'' = J qdd + b.", (),
            [g.q, g.qd, g.p, output("b", str(nrows), "constraint bias")],
            [("b", "constraint bias Jdot qd", [(f"b[{i}]", ex) for i, ex in enumerate(bias)])], [], a, options),
        build_routine(
            "constraint_friction", f"{prefix}_constraint_friction",
            "Coulomb friction coefficient of each constraint block (0 for loops and limits; the static "
            "limit of a dry-friction block).", (),
            [g.p, output("mu", str(nblocks), "friction coefficients")],
            [("mu", "friction coefficients", [(f"mu[{i}]", ex) for i, ex in enumerate(mu)])], [], a, options),
    ] + ([build_routine(
            "kinetic_friction", f"{prefix}_kinetic_friction",
            "Kinetic friction limit of each dry-friction block (0 for the other blocks).", (),
            [g.p, output("mu_k", str(nblocks), "kinetic friction limits")],
            [("mu_k", "kinetic friction limits", [(f"mu_k[{i}]", ex) for i, ex in enumerate(kinetic)])], [], a,
            options)] if any(c.kind == "friction" for c in eqs.constraints) else []) \
        + ([constrained_terms_routine(eqs, prefix, g, options)] + constrained_solve_routine(eqs, prefix, g, options)
           if options.wants_constrained_terms(n) else [])   # n: the size of M


def constrained_terms_routine(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> Routine:
    """``<prefix>_constrained_terms``: the symbolic stage's ``Equations.constrained_terms()``
    with J, Jdot qd and c, in one routine so that they share their subexpressions."""
    n = len(eqs.qd)     # velocity-sized (nv)
    nrows = sum(c.nrows for c in eqs.constraints)
    NQ = g.NV
    ct = eqs.constrained_terms()
    pos = ct.position
    jac = [row[j] for row in ct.jacobian for j in range(n)]
    s_low = [(i, j) for i in range(nrows) for j in range(i + 1)]
    order = " ".join(str(k) for k in ct.order)
    return build_routine(
        "constrained_terms", f"{prefix}_constrained_terms",
        "All constraint rows at once: pivots of M, free accelerations, J, c, J qd, J qdd0 + Jdot qd, M^-1 J^T, "
        "J M^-1 J^T.",
        (f"M is factorised as P M P^T = L D L^T with the coordinates in the order {order}; d holds D.",
         "The other outputs are valid when every d[i] > 0 (M positive definite).",
         f"J, A: {nrows} x {NQ}, row-major (A row i = M^-1 J_i^T); S: {nrows} x {nrows} = J M^-1 J^T."),
        [g.t, g.q, g.qd, g.u, g.p, output("d", NQ, "pivots of M"), output("qdd0", NQ, "M^-1 (B u - bias)"),
         output("J", f"{nrows}*{NQ}", "constraint Jacobian, row-major"),
         output("c", str(nrows), "constraint rows"), output("v", str(nrows), "J qd"),
         output("a0", str(nrows), "J qdd0 + Jdot qd"), output("A", f"{nrows}*{NQ}", "M^-1 J^T, transposed"),
         output("S", f"{nrows}*{nrows}", "J M^-1 J^T, row-major")],
        [("d", "pivots D of P M P^T = L D L^T", [(f"d[{i}]", ex) for i, ex in enumerate(ct.pivots)]),
         ("qdd0", "free accelerations M^-1 (B u - bias)", [(f"qdd0[{i}]", ex) for i, ex in enumerate(ct.qdd_free)]),
         ("J", "constraint Jacobian", [(f"J[{i}]", ex) for i, ex in enumerate(jac)]),
         ("c", "constraint rows", [(f"c[{i}]", ex) for i, ex in enumerate(pos)]),
         ("v", "constraint velocities J qd", [(f"v[{i}]", ex) for i, ex in enumerate(ct.velocity)]),
         ("a0", "free constraint accelerations J qdd0 + Jdot qd",
          [(f"a0[{i}]", ex) for i, ex in enumerate(ct.free_acceleration)]),
         ("A", "M^-1 J^T, row i for constraint row i",
          [(f"A[{i * n + j}]", ct.response[i][j]) for i in range(nrows) for j in range(n)]),
         ("S", "J M^-1 J^T, lower triangle", [(f"S[{i * nrows + j}]", ct.delassus[i][j]) for i, j in s_low])],
        [("S", "upper triangle by symmetry", [(f"S[{j * nrows + i}]", f"S[{i * nrows + j}]")
                                              for i, j in s_low if i != j])],
        ct.assignments, options)


def constrained_solve_routine(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> list[Routine]:
    """``<prefix>_constrained_solve``: the symbolic stage's ``Equations.constrained_solve()``, qdd and
    lambda for the rows held, in one routine; before it, a static routine per contact mode
    (``Equations.constrained_solve_modes()``) that the public one calls when ``k`` holds exactly that mode's
    blocks. With them ``<prefix>_constrained_response`` (and its routine per mode), the change of qdd and
    lambda with the inputs from the factors the solve stores in ``f``, where every solve has its
    ``InputResponse`` and its factors fit ``f`` ((nq + nv)^2 doubles); without it ``f`` is not written."""
    nrows = sum(c.nrows for c in eqs.constraints)
    NQ = g.NV     # velocity-sized (nv)
    NF = f"({g.NQ} + {g.NV})*({g.NQ} + {g.NV})"
    nf = (len(eqs.q) + len(eqs.qd)) ** 2
    cs, modes = eqs.constrained_solve_modes()
    solves = [cs] + [solve for _, solve in modes]
    respond = _wanted(eqs, options)("constrained_response") and all(
        s.response is not None and len(s.response.carried) <= nf for s in solves)
    start = [0]
    for c in eqs.constraints:
        start.append(start[-1] + c.nrows)
    f_doc = ("the factors constrained_response reads (NULL: not stored)" if respond
             else "not written (no constrained_response)")

    def build(name: str, c_name: str, summary: str, doc: tuple[str, ...], solve, static: bool,  # type: ignore[no-untyped-def]
              dispatch: tuple[tuple[str, str], ...] = ()) -> Routine:
        stored = [(f"f[{i}]", x) for i, x in enumerate(solve.response.carried)] if respond else []
        r = build_routine(
            name, c_name, summary, doc,
            [g.t, g.q, g.qd, g.u, g.p,
             Group(Argument("k", str(4 * nrows), "per row: held (1 or 0), 1 - held, 2 alpha, beta^2"), solve.gains),
             Group(Argument("target", str(nrows), "c_target of each row"), solve.targets),
             output("d", NQ, "pivots of M"), output("qdd", NQ, "coordinate accelerations"),
             output("lam", str(nrows), "constraint forces"),
             output("s", str(2 * nrows), "pivots and diagonal of J M^-1 J^T"), output("f", NF, f_doc)],
            [("d", "pivots D of P M P^T = L D L^T", [(f"d[{i}]", ex) for i, ex in enumerate(solve.pivots)]),
             ("s", "pivots and diagonal of J M^-1 J^T",
              [(f"s[{i}]", ex) for i, ex in enumerate(solve.s_pivots)]
              + [(f"s[{nrows + i}]", ex) for i, ex in enumerate(solve.s_diag)]),
             ("lam", "constraint forces lambda", [(f"lam[{i}]", ex) for i, ex in enumerate(solve.lam)]),
             ("qdd", "coordinate accelerations", [(f"qdd[{i}]", ex) for i, ex in enumerate(solve.qdd)])]
            + ([("f", "the factors of the input response", stored)] if stored else []),
            [], solve.assignments, options, static=static, optional=("f",))
        if dispatch:
            r = replace(r, dispatch=dispatch, unused=tuple(a for a in r.unused if a != "k"))
        return r

    def response(name: str, c_name: str, summary: str, doc: tuple[str, ...], solve, static: bool,  # type: ignore[no-untyped-def]
                 dispatch: tuple[tuple[str, str], ...] = ()) -> Routine:
        res = solve.response
        r = build_routine(
            name, c_name, summary, doc,
            [g.p, Group(Argument("k", str(4 * nrows), "the gains of the constrained_solve call"), solve.gains),
             Group(Argument("du", g.NU, "input change"), res.du),
             Group(Argument("f", NF, "the factors that constrained_solve call stored"), res.carried),
             output("qdd", NQ, "change of the coordinate accelerations"),
             output("lam", str(nrows), "change of the constraint forces")],
            [("lam", "change of lambda", [(f"lam[{i}]", ex) for i, ex in enumerate(res.lam)]),
             ("qdd", "change of the accelerations", [(f"qdd[{i}]", ex) for i, ex in enumerate(res.qdd)])],
            [], res.assignments, options, static=static)
        if dispatch:
            r = replace(r, dispatch=dispatch, unused=tuple(a for a in r.unused if a != "k"))
        return r

    out: list[Routine] = []
    responses: list[Routine] = []
    dispatch: list[tuple[str, str]] = []
    rdispatch: list[tuple[str, str]] = []
    for j, (held, solve) in enumerate(modes):
        rows = {r for b in held for r in range(start[b], start[b + 1])}
        names = ", ".join(eqs.constraints[b].name for b in held)
        c_name = f"{prefix}_constrained_solve_mode{j}"
        out.append(build(f"constrained_solve_mode{j}", c_name,
                         f"constrained_solve with exactly the blocks {comment_text(names, 200)} held.",
                         ("k[4i], k[4i+1] are not read: the rows of these blocks are held, the others not.",),
                         solve, True))
        # the rows not held first: a call holding more rows (both feet) leaves at the first test
        cond = " && ".join([f"k[{4 * r}] == 0 && k[{4 * r + 1}] == 1" for r in range(nrows) if r not in rows]
                           + [f"k[{4 * r}] == 1 && k[{4 * r + 1}] == 0" for r in sorted(rows)])
        dispatch.append((cond, c_name))
        if respond:
            rc_name = f"{prefix}_constrained_response_mode{j}"
            responses.append(response(f"constrained_response_mode{j}", rc_name,
                                      f"constrained_response of constrained_solve_mode{j} (the blocks "
                                      f"{comment_text(names, 200)} held).",
                                      ("k[4i], k[4i+1] are not read.",), solve, True))
            rdispatch.append((cond, rc_name))
    out.append(build(
        "constrained_solve", f"{prefix}_constrained_solve",
        "Constrained dynamics for the rows held: qdd, lambda (range space, one backward substitution).",
        (f"Row i ({nrows} row(s)) is held when k[4i] = 1, k[4i+1] = 0 (not held: 0, 1; lambda_i = 0), by "
         "J qdd = -Jdot qd - k[4i+2] J qd - k[4i+3] (c - target[i]).",
         "d: pivots of P M P^T = L D L^T; s: the pivots of J M^-1 J^T = L D L^T over the rows held (rows in "
         "order; 1 for a row not held), then its diagonal (0 for a row not held). qdd and lambda are valid "
         "when every d[i] > 0 and the pivots of the rows held pass the caller's singularity test.")
        + (("A call holding exactly the rows of one block (the others not held) runs that block's "
            "routine, without the rows not held.",) if dispatch else ())
        + ((f"f: the {max(len(s.response.carried) for s in solves if s.response)} factors (at most) that "
            "constrained_response reads.",) if respond else ()),
        cs, False, tuple(dispatch)))
    if respond:
        out += responses
        out.append(response(
            "constrained_response", f"{prefix}_constrained_response",
            "The change of qdd and lambda of a constrained_solve call when its inputs change by du.",
            ("k and f: that call's gains and stored factors (the same state, rows held, gains and targets).",
             "qdd and lambda are affine in u: its results at u + du are that call's plus these.")
            + (("A call holding exactly the rows of one block runs that block's routine.",) if rdispatch else ()),
            cs, False, tuple(rdispatch)))
    return out


def force_routines(eqs: Equations, prefix: str, g: _Groups, options: CodegenOptions) -> list[Routine]:
    """element_forces: the force of each force element on its point (none without force elements, or when
    ``CodegenOptions.routines`` leaves it out); d = 2 components in a planar model, 3 in a spatial one
    (``contract.FDIM``)."""
    if not eqs.forces or not _wanted(eqs, options)("element_forces"):
        return []
    d = 3 if getattr(eqs.model, "spatial", False) else 2
    for f in eqs.forces:
        if tuple(f.force.shape) != (d, 1):
            raise CodegenError(f"model {eqs.model.name!r}, force {f.name!r}: the force has shape "
                               f"{tuple(f.force.shape)}; expected ({d}, 1)")
    k = len(eqs.forces)
    items = [(f"f[{d * i + c}]", f.force[c]) for i, f in enumerate(eqs.forces) for c in range(d)]
    names = ", ".join(f.name for f in eqs.forces)
    if d == 2:
        doc, outdoc = "f[2*i] = x, f[2*i+1] = y.", "element forces x, y"
    else:
        doc, outdoc = "f[3*i] = x, f[3*i+1] = y, f[3*i+2] = z.", "element forces x, y, z"
    return [build_routine(
        "element_forces", f"{prefix}_element_forces",
        f"Force of each force element on its point, ground frame: {doc}",
        (f"elements in model order: {comment_text(names, 400)}.",),
        [g.t, g.q, g.qd, g.u, g.p, output("f", str(d * k), outdoc)],
        [("f", "element forces, ground frame", items)], [], eqs.assignments, options)]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _row_times(A: sp.Matrix, i: int, x: Sequence[sp.Basic]) -> sp.Expr:
    """Row i of A times the vector x: the sum a matrix product forms, without SymPy's matrix machinery."""
    return sp.Add(*[A[i, j] * xj for j, xj in enumerate(x) if A[i, j] != 0])


def _find(routines: Sequence[Routine], name: str) -> Routine:
    return next(r for r in routines if r.name == name)


def cholesky_ops(n: int) -> int:
    """Operations (+, -, *, /, sqrt) of the dense Cholesky factorisation of an n x n matrix and the two
    triangular solves, as the C loops of ``<prefix>_cholesky`` and ``<prefix>_cholesky_solve`` run them."""
    factor = sum(2 * k + (n - 1 - k) * (2 * k + 1) + 1 for k in range(n))   # dot products, divisions, sqrt
    return factor + 2 * n * n


def _check_shapes(eqs: Equations) -> None:
    n, m = len(eqs.qd), len(eqs.u)
    expect = {"M": (n, n), "h": (n, 1), "G": (n, 1), "K": (n, 1), "D": (n, 1), "B": (n, m)}
    for nm, shape in expect.items():
        mat = getattr(eqs, nm)
        got = tuple(mat.shape)
        if got != shape and not (nm == "B" and m == 0 and got[0] == n):
            raise CodegenError(f"Equations.{nm} has shape {got}; expected {shape} for {n} coordinates "
                               f"and {m} inputs")
    for nm, v in eqs.points.items():
        if tuple(v.shape) not in ((2, 1), (1, 2)):
            raise CodegenError(f"point {nm!r} has shape {tuple(v.shape)}; expected (2, 1)")


def _canonical(spec: ModelSpec) -> str:
    def enc(o: object) -> object:
        if hasattr(o, "__dataclass_fields__"):
            return {f.name: enc(getattr(o, f.name)) for f in fields(o)}  # type: ignore[arg-type]
        if isinstance(o, (tuple, list)):
            return [enc(x) for x in o]
        return o
    return json.dumps(enc(spec), sort_keys=True, separators=(",", ":"))
