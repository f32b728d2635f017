"""Elastic links: a bending rod as a chain of rigid segments on elastic hinges.

This follows the discrete elastic-rod models of Leontiev (SEEDS.md §3.1). A
uniform Euler–Bernoulli rod (length ``L``, bending stiffness ``EJ``, mass
``m``) is replaced by ``n`` elastic hinges at ``x_1 < x_2 < ... < x_n`` (from
the root) with rotational springs ``C_i``. The piece from hinge i to the next
(the last one to the tip) is a rigid uniform rod of mass ``m l_i / L`` and
central inertia ``m l_i**3 / (12 L)``; the piece before the first hinge is
fixed to the root (the clamp, or the link's own joint).

Every rule is a quadrature on the rod. With ``lambda_i = 1 - x_i/L`` and
``a_i = EJ / (L C_i)``, a model reproduces the static bending functionals of
the rod when (SEEDS.md §3.1, "defining system (3)")

    sum_i a_i lambda_i**(s-1) = 1/s,   s = 1, 2, ..., N

i.e. when (a_i, lambda_i) are the weights and nodes of a quadrature on [0, 1]
exact for polynomials of degree N-1. The rules (:func:`rule_table`):

=========  ==========================================================  =========================
rule       hinges x_i/L and stiffnesses C_i L/EJ                        exact for s = 1..N
=========  ==========================================================  =========================
``Cp``     n = 1: x = 0, C L/EJ = 3                                     s = 3 only
``E``      x_i = (i-1)/n, C L/EJ = n (equal segments)                   s = 1
``B``      E_n with C_1 L/EJ = 6 n**2 / (3n - 1) (Banerjee–Kane)        s = 3
``G``      n-point Gauss–Legendre nodes/weights on [0, 1]               N = 2n
``R``      n-point Gauss–Radau, node fixed at lambda = 1 (x = 0)        N = 2n - 1
``Ch``     Chebyshev equal-weight quadrature, C L/EJ = n;               N = n + 1
           real nodes exist for n = 1..7 and 9 only
``M``      n = 3: x/L = (0, 1/3, 5/6), C L/EJ = (10, 2, 2.5);          N = 4 (M_3), 6 (M_6)
           n = 6: Table 2 of the seed (see ``_M6``)
=========  ==========================================================  =========================

Cp, E_n, B_n, G_n, Ch_n and R_n are given in SEEDS.md by their definitions;
the numbers are computed here from those definitions: Gauss nodes and
weights by :func:`numpy.polynomial.legendre.leggauss`; Radau nodes as the
roots of (P_{n-1} + P_n)/(1 + t) on [-1, 1] with the weights 2/n**2 at the
fixed node and (1 - t_i) / (n P_{n-1}(t_i))**2 elsewhere (Abramowitz &
Stegun 25.4.31), reflected so the fixed node is the root; Chebyshev nodes
as the roots of the monic polynomial whose power sums are n times the
moments of the uniform measure on [-1, 1] (Newton's identities). M_3 and
M_6 are the parameter sets of SEEDS.md §3.1 (M_3 inferred there: it solves
s = 1..4 exactly; M_6 solves s = 1..6 to the printed digits).

The models serve as finite elements (SEEDS.md §3.1: they meet the end-matching
conditions): ``elements=k`` splits the rod into k equal parts, each discretised
by the rule, so that the fixed-n rules (M, Ch) and short Gauss rules reach any
accuracy (the seed's "2 x M_3" is ``rule="M", n=3, elements=2``).

The expansion is a macro of the model stage: :func:`elastic` appends plain
links (rigid segments with uniform rods, relative-angle joints with springs)
to a :class:`~rodgen.model.core.Model`, so the symbolic, code and build
stages see nothing new. This module uses no SymPy.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from ..errors import ModelError
from .core import Joint, Link, Marker, Model, PointMass, Rod, Segment, Spring, Value, is_finite_number
from .expr import ExpressionError, as_expression

#: Rule names accepted by :func:`rule_table` and ``type: elastic``.
RULES = ("Cp", "E", "B", "G", "R", "Ch", "M")

#: M_6 of SEEDS.md §3.1, Table 2: hinge positions x_i/L and stiffnesses C_i L/EJ.
_M6 = ((0.0, 0.180, 0.395, 0.577, 0.665, 0.918), (18.2284, 3.8080, 7.0007, 6.4562, 5.4630, 4.9566))
#: M_3 of SEEDS.md §3.1 (inferred there; solves s = 1..4 exactly).
_M3 = ((0.0, 1.0 / 3.0, 5.0 / 6.0), (10.0, 2.0, 2.5))

#: The n for which Chebyshev equal-weight quadrature has real nodes (Bernstein: n = 1..7 and 9).
_CHEBYSHEV_N = (1, 2, 3, 4, 5, 6, 7, 9)

#: Rule -> the s for which sum a_i lambda_i**(s-1) = 1/s holds (n given); used by the docs and tests.
def exact_powers(rule: str, n: int) -> tuple[int, ...]:
    """The powers s of the defining system that rule ``rule`` with ``n`` hinges satisfies."""
    return {"Cp": (3,), "E": (1,), "B": (3,), "G": tuple(range(1, 2 * n + 1)),
            "R": tuple(range(1, 2 * n)), "Ch": tuple(range(1, n + 2)),
            "M": tuple(range(1, 5 if n == 3 else 7))}[rule]


def _not_available(rule: str, n: int, why: str) -> ValueError:
    return ValueError(f"rule {rule}_{n} is not available: {why}")


def rule_table(rule: str, n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Hinge positions ``x_i/L`` (increasing from the root) and stiffnesses ``C_i L/EJ`` of a rule.

    Raises ValueError for an unknown rule or an ``n`` for which the rule does not exist.
    """
    import numpy as np  # imported here so that `import rodgen` stays light

    t: Any
    lam: Any
    a: Any

    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r} (rules: {', '.join(RULES)})")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if n > 200:
        raise ValueError(f"n = {n} hinges is more than rodgen supports for an elastic link (200)")
    if rule == "Cp":
        if n != 1:
            raise _not_available(rule, n, "Cp has one hinge (n = 1)")
        return (0.0,), (3.0,)
    if rule in ("E", "B"):
        xs = tuple(i / n for i in range(n))
        cs = [float(n)] * n
        if rule == "B":
            cs[0] = 6.0 * n * n / (3.0 * n - 1.0)
        return xs, tuple(cs)
    if rule == "G":
        t, w = np.polynomial.legendre.leggauss(n)
        lam, a = (t + 1.0) / 2.0, w / 2.0
    elif rule == "R":
        if n == 1:
            lam, a = np.array([1.0]), np.array([1.0])
        else:
            leg = np.polynomial.legendre
            c = np.zeros(n + 1)
            c[n - 1] = c[n] = 1.0
            roots = np.sort(leg.legroots(c).real)
            free = roots[1:]  # roots[0] is t = -1, the fixed node
            pn1 = leg.legval(free, np.eye(n)[n - 1])
            w = np.concatenate(([2.0 / n ** 2], (1.0 - free) / (n * pn1) ** 2))
            t = np.concatenate(([-1.0], free))
            lam, a = (1.0 - t) / 2.0, w / 2.0  # t = -1 -> lambda = 1 (the root)
    elif rule == "Ch":
        if n not in _CHEBYSHEV_N:
            raise _not_available(rule, n, "Chebyshev equal-weight quadrature has complex nodes for n = 8 and "
                                          f"n >= 10 (it exists for n = {', '.join(map(str, _CHEBYSHEV_N))})")
        # power sums of the nodes on [-1, 1]: p_k = n/(k+1) for even k, 0 for odd k
        p = [0.0] + [n / (k + 1.0) if k % 2 == 0 else 0.0 for k in range(1, n + 1)]
        e = [1.0]
        for k in range(1, n + 1):
            e.append(sum((-1) ** (i - 1) * e[k - i] * p[i] for i in range(1, k + 1)) / k)
        coeffs = [(-1) ** k * e[k] for k in range(n + 1)]
        t = np.roots(coeffs)
        if np.max(np.abs(t.imag)) > 1e-8:  # pragma: no cover - guarded by _CHEBYSHEV_N
            raise _not_available(rule, n, "the nodes are complex")
        t = t.real
        lam, a = (t + 1.0) / 2.0, np.full(n, 1.0 / n)
    else:  # "M"
        if n == 3:
            return _M3
        if n == 6:
            return _M6
        raise _not_available(rule, n, "the optimised models exist for n = 3 (M_3) and n = 6 (M_6)")
    order = np.argsort(-lam)  # increasing x = 1 - lambda
    return (tuple(float(max(0.0, 1.0 - lam[i])) for i in order), tuple(float(1.0 / a[i]) for i in order))


def _num(v: Value) -> bool:
    return is_finite_number(v)


def _times(v: Value, c: float) -> Value:
    """``v * c`` as a number when ``v`` is one, else as an expression string."""
    if _num(v):
        return float(v) * c  # type: ignore[arg-type]
    return f"({as_expression(v).text})*{c!r}"


def elastic(model: Model, name: str, *, length: Value, EJ: Optional[Value] = None, mass: Optional[Value] = None,
            mass_per_length: Optional[Value] = None, rule: Optional[str] = "G", n: Optional[int] = None,
            positions: Optional[Sequence[float]] = None, stiffnesses: Optional[Sequence[Value]] = None,
            parent: Optional[str] = None, at: str = "end", origin: tuple[Value, Value] = (0.0, 0.0),
            angle: Optional[str] = None, coordinate: Optional[str] = None, offset: Value = 0.0,
            initial: Value = 0.0, clamped: bool = True, joint: Optional[Joint] = None,
            damping: Optional[Value] = None, elements: int = 1, tip_mass: Optional[Value] = None) -> list[Link]:
    """Append an elastic link to ``model`` as a chain of rigid segments on sprung hinges; return its links.

    Parameters
    ----------
    name : the elastic link's name; the links made are ``<name>_0`` (the piece from the root to the
        first hinge, present when the first hinge lies inside the rod), ``<name>_1`` ... ``<name>_n``
        (the segment after hinge i, relative angle ``th_<name>_i`` with a spring ``C_i`` at rest 0,
        no input) and a marker ``<name>_tip`` at the free end.
    length, EJ : the rod's length L and bending stiffness (numbers or expressions of parameters).
    mass, mass_per_length : the rod's total mass, or its mass per unit length (one of them).
    rule, n : the discretisation rule (``Cp``, ``E``, ``B``, ``G``, ``R``, ``Ch``, ``M``; see the
        module docstring) and the number of hinges.
    positions, stiffnesses : instead of a rule (``rule=None``): the hinge positions as fractions x_i/L
        (increasing, in [0, 1)) and the spring stiffnesses C_i (numbers or expressions, N m/rad).
    parent, at, origin, angle, offset : where the root is, as for :meth:`Model.link`; ``angle``
        defaults to ``"relative"`` on a parent link and ``"absolute"`` on the ground (a clamp on a
        parent link must be relative to it).
    initial : the root's angle (the clamp direction when ``clamped``).
    clamped : True (default): the root is fixed to the parent (or the ground) at angle ``initial``;
        False: the root turns in a joint ``joint`` (coordinate ``coordinate``, default ``phi_<name>_0``
        or ``th_<name>_0``), which needs a rule whose first hinge lies inside the rod (G, Ch, or
        explicit positions with positions[0] > 0).
    damping : viscous damping of every elastic hinge (N m s/rad), optional.
    tip_mass : a point mass at the free end (a tip load), optional.
    elements : split the rod into this many equal elements, each discretised by the rule (the
        seed's "2 x M_3" is ``rule="M", n=3, elements=2``): hinge positions scaled into each
        element, stiffnesses ``C_i = EJ k / L * c_i`` for element length L/k; n*k hinges in all.

    Raises ModelError naming the link and field for an unknown rule, a rule that does not exist for
    ``n``, a non-positive L, EJ or mass, or inconsistent positions/stiffnesses.
    """
    src = model.source
    lw = f"link {name!r}"

    def err(msg: str, fld: str) -> ModelError:
        return ModelError(msg, source=src, where=f"{lw}.{fld}")

    def positive(v: Value, fld: str) -> float:
        if isinstance(v, bool) or not (isinstance(v, (int, float, str))):
            raise err(f"expected a number or an expression, got {v!r}", fld)
        try:
            val = model.value(v)
        except (ExpressionError, ZeroDivisionError, ValueError, OverflowError) as exc:
            raise err(f"cannot be evaluated: {exc}", fld) from None
        if not (val > 0 and math.isfinite(val)):
            raise err(f"must be positive, got {val:g}", fld)
        return val

    if not isinstance(name, str):
        raise ModelError(f"an elastic link's name must be a string, got {name!r}", source=src, where="links")
    positive(length, "length")
    if (mass is None) == (mass_per_length is None):
        raise err("give exactly one of 'mass' (total) and 'mass_per_length'", "mass")
    if mass is not None:
        positive(mass, "mass")
        m_total: Value = mass
    else:
        positive(mass_per_length, "mass_per_length")  # type: ignore[arg-type]
        m_total = (float(mass_per_length) * float(length) if _num(mass_per_length) and _num(length)  # type: ignore
                   else f"({as_expression(mass_per_length).text})*({as_expression(length).text})")  # type: ignore

    explicit = positions is not None or stiffnesses is not None
    if explicit:
        if rule is not None and rule != "explicit":
            raise err("give either a rule or explicit positions and stiffnesses (set rule to null)", "rule")
        if positions is None or stiffnesses is None:
            raise err("explicit hinges need both 'positions' and 'stiffnesses'",
                      "positions" if positions is None else "stiffnesses")
        if not isinstance(positions, (list, tuple)) or not positions:
            raise err(f"expected a non-empty list of fractions x_i/L, got {positions!r}", "positions")
        if not isinstance(stiffnesses, (list, tuple)) or len(stiffnesses) != len(positions):
            raise err(f"expected a list of {len(positions)} stiffnesses (one per position), got {stiffnesses!r}",
                      "stiffnesses")
        xs: list[float] = []
        for i, x in enumerate(positions):
            if not _num(x) or not 0.0 <= x < 1.0 or (xs and x <= xs[-1]):
                raise err(f"positions must be increasing numbers in [0, 1) (fractions of the length), "
                          f"got {x!r} at index {i}", f"positions[{i}]")
            xs.append(float(x))
        for i, c in enumerate(stiffnesses):
            positive(c, f"stiffnesses[{i}]")
        cs_values: list[Value] = list(stiffnesses)
        if n is not None and n != len(xs):
            raise err(f"n = {n!r} does not match the {len(xs)} positions given", "n")
        if elements != 1:
            raise err("elements applies to a rule; give the positions of every hinge instead", "elements")
    else:
        if rule is None:
            raise err("give a rule (Cp, E, B, G, R, Ch, M) or explicit positions and stiffnesses", "rule")
        if n is None:
            n = 1 if rule == "Cp" else None
        if n is None:
            raise err(f"rule {rule} needs the number of hinges n", "n")
        if EJ is None:
            raise err("a rule needs the bending stiffness EJ", "EJ")
        positive(EJ, "EJ")
        try:
            xs_t, cl = rule_table(rule, n)
        except ValueError as exc:
            raise err(str(exc), "rule" if str(exc).startswith("unknown rule") else "n") from None
        if isinstance(elements, bool) or not isinstance(elements, int) or not 1 <= elements <= 200:
            raise err(f"elements must be a whole number from 1 to 200, got {elements!r}", "elements")
        if n * elements > 200:
            raise err(f"{n} hinges in each of {elements} elements is more than rodgen supports for an elastic "
                      f"link (200 hinges)", "elements")
        k = elements
        xs = [(e + x) / k for e in range(k) for x in xs_t]
        cl = tuple(c * k for _ in range(k) for c in cl)
        if _num(EJ) and _num(length):
            cs_values = [float(EJ) / float(length) * c for c in cl]  # type: ignore[arg-type]
        else:
            ratio = f"({as_expression(EJ).text})/({as_expression(length).text})"
            cs_values = [f"{ratio}*{c!r}" for c in cl]
    if explicit and EJ is not None:
        positive(EJ, "EJ")
    if tip_mass is not None:
        positive(tip_mass, "tip_mass")
    if not isinstance(clamped, bool):
        raise err(f"clamped must be true or false, got {clamped!r}", "clamped")
    if angle is None:
        angle = "absolute" if parent is None else "relative"
    if clamped and parent is not None and angle != "relative":
        raise err("a rod clamped to a parent link turns with it: its root angle must be 'relative'", "angle")
    root_piece = xs[0] > 0.0
    if not clamped and not root_piece:
        raise err("the first elastic hinge is at the root, where an unclamped link would also turn in its "
                  "joint (a massless hub between the joint and the spring); clamp the elastic link to a rigid "
                  "hub link (parent: hub, clamped: true) or use a rule whose first hinge lies inside the rod "
                  "(G, Ch)", "clamped")
    if joint is not None and clamped:
        raise err("a clamped elastic link has no joint at its root; set clamped: false to give it one", "joint")
    names = {lk.name for lk in model.links}
    made = [f"{name}_{i}" for i in range(0 if root_piece else 1, len(xs) + 1)]
    for nm in made:
        if nm in names:
            raise err(f"the link {nm!r} it expands into already exists in the model", "name")

    links: list[Link] = []
    bounds = xs + [1.0]
    prev: Optional[str] = None
    if root_piece:
        frac = xs[0]
        lk = Link(name=f"{name}_0", parent=parent, at=at, origin=origin, angle=angle, coordinate=coordinate,
                  offset=offset, initial=initial, joint=joint or Joint(actuated=False if clamped else None))
        lk.segments.append(Segment(name=f"{name}_s0", length=_times(length, frac),
                                   rods=[Rod(mass=_times(m_total, frac), name=f"{name}_rod0")]))
        links.append(lk)
        prev = lk.name
        if clamped:
            coord = coordinate or ("phi_" if angle == "absolute" else "th_") + lk.name
            model.couplings[coord] = initial
    for i, (x, c) in enumerate(zip(xs, cs_values), start=1):
        frac = bounds[i] - x
        if prev is None:  # the first hinge is at the clamp: it joins the rod to the parent
            lk = Link(name=f"{name}_{i}", parent=parent, at=at, origin=origin, angle=angle, coordinate=coordinate,
                      offset=offset, initial=initial,
                      joint=Joint(actuated=False, spring=Spring(c, rest=initial), damping=damping))
        else:
            lk = Link(name=f"{name}_{i}", parent=prev, at="end", angle="relative",
                      joint=Joint(actuated=False, spring=Spring(c), damping=damping))
        lk.segments.append(Segment(name=f"{name}_s{i}", length=_times(length, frac),
                                   rods=[Rod(mass=_times(m_total, frac), name=f"{name}_rod{i}")]))
        links.append(lk)
        prev = lk.name
    links[-1].markers.append(Marker(name=f"{name}_tip", segment=f"{name}_s{len(xs)}", fraction=1.0))
    if tip_mass is not None:
        links[-1].segments[0].masses.append(PointMass(mass=tip_mass, fraction=1.0, name=f"{name}_tip_mass"))
    model.links.extend(links)
    return links


def hinge_table(rule: str, n: int) -> list[tuple[float, float]]:
    """``[(x_i/L, C_i L/EJ), ...]`` of a rule, for printing (see :func:`rule_table`)."""
    xs, cs = rule_table(rule, n)
    return list(zip(xs, cs))


__all__ = ["RULES", "rule_table", "hinge_table", "exact_powers", "elastic"]
