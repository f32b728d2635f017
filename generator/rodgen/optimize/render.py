"""The rendering step of a trajectory optimisation problem: its expressions printed as C.

Takes the :class:`~rodgen.optimize.derive.ProblemEquations` and prints the routines the collocation's C
(``rodgen_collocation.c``) calls (``rodopt_integrand``, ``rodopt_terminal``, ``rodopt_path``,
``rodopt_path_jacobian``, ``rodopt_boundary``, ``rodopt_boundary_jacobian``, the patterns
``rodopt_path_structure`` and ``rodopt_boundary_structure``, and for the exact Hessian
``rodopt_hessian_point``, ``rodopt_hessian_terminal``, ``rodopt_boundary_hessian`` with its pattern
``rodopt_boundary_hessian_structure``, and the derivatives by the free parameters ``rodopt_integrand_p``,
``rodopt_terminal_p``, ``rodopt_path_p``, ``rodopt_boundary_p`` with their list ``rodopt_free_parameters``)
through the code stage's printer, with common subexpressions shared within each routine. Derives nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import sympy as sp

from ..codegen.printer import SlotPrinter
from ..codegen.render import environment
from .derive import ProblemEquations


@dataclass(frozen=True)
class _Routine:
    name: str
    args: str
    unused: tuple[str, ...]
    temps: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]
    guard: str
    check: str


def _routine(eqs: ProblemEquations, name: str, args: str, params: Sequence[str],
             outputs: Sequence[tuple[str, sp.Expr]], *, guard: str = "", check: str = "1") -> _Routine:
    """One routine: the outputs' expressions with their common subexpressions as temporaries."""
    slots: dict[Any, str] = {z: f"z[{i}]" for i, z in enumerate(eqs.z)}
    slots.update({w: f"z[{len(eqs.z) + r}]" for r, w in enumerate(eqs.w)})
    slots.update({p: f"p[{i}]" for i, p in enumerate(eqs.p)})
    slots[eqs.T] = "T"
    slots.update({z: f"ze[{i}]" for i, z in enumerate(eqs.ze)})
    slots.update({m: f"mu[{i}]" for i, m in enumerate(eqs.mu)})
    slots.update({lk: f"lam[{k}]" for k, lk in enumerate(eqs.lam)})
    slots.update({b: f"bl[{k}]" for k, b in enumerate(eqs.bl)})
    if eqs.sL is not None:
        slots[eqs.sL] = "sL"
    if eqs.t is not None:
        slots[eqs.t] = "t"
    exprs = [e for _, e in outputs]
    temps: list[tuple[str, str]] = []
    texts: list[str] = []
    if exprs:
        replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("rodopt_t"), optimizations=None)
        printer = SlotPrinter(slots, routine=name)
        for k, (sym, expr) in enumerate(replacements):
            temps.append((f"t{k}", printer.doprint(expr)))
            slots[sym] = f"t{k}"
        texts = [printer.doprint(e) for e in reduced]
    used: set[Any] = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    groups = {"t": {eqs.t} - {None}, "z": set(eqs.z) | set(eqs.w), "p": set(eqs.p), "T": {eqs.T},
              "sL": {eqs.sL} - {None}, "mu": set(eqs.mu), "lam": set(eqs.lam), "ze": set(eqs.ze),
              "bl": set(eqs.bl)}
    unused = tuple(a for a in params if (not (used & groups[a]) if a in groups else not outputs))
    return _Routine(name, args, unused, tuple(temps), tuple((t, x) for (t, _), x in zip(outputs, texts)),
                    guard, check)


def render_problem(eqs: ProblemEquations, *, name: str, model: str, version: str) -> str:
    """The C source of the problem's routines."""
    integrand = _routine(eqs, "rodopt_integrand",
                         "double t, const double *z, const double *p, double *L, double *grad", ("t", "z", "p"),
                         [("*L", eqs.integrand)] + [(f"grad[{i}]", g) for i, g in enumerate(eqs.integrand_gradient)],
                         guard="if (grad) ", check="isfinite(*L)")
    terminal = _routine(eqs, "rodopt_terminal",
                        "const double *z, double T, const double *p, double *phi, double *grad", ("z", "T", "p"),
                        [("*phi", eqs.terminal)] + [(f"grad[{i}]", g) for i, g in enumerate(eqs.terminal_gradient)],
                        guard="if (grad) ", check="isfinite(*phi)")
    path = _routine(eqs, "rodopt_path", "double t, const double *z, const double *p, double *c",
                    ("t", "z", "p", "c"), [(f"c[{k}]", g) for k, g in enumerate(eqs.path)],
                    check=" && ".join(f"isfinite(c[{k}])" for k in range(len(eqs.path))) or "1")
    jac = _routine(eqs, "rodopt_path_jacobian", "double t, const double *z, const double *p, double *v",
                   ("t", "z", "p", "v"), [(f"v[{n}]", d) for n, (_, _, d) in enumerate(eqs.path_jacobian)])
    exact = (3 if eqs.forward else 2) if eqs.differences else int(eqs.point_hessian is not None
                                                                    and eqs.terminal_hessian is not None)
    hp = _routine(eqs, "rodopt_hessian_point", "double t, const double *z, const double *p, double sL, "
                  "const double *mu, const double *lam, double *H", ("t", "z", "p", "sL", "mu", "lam", "H"),
                  [(f"H[{k}]", e) for k, e in enumerate(eqs.point_hessian or ())])
    ht = _routine(eqs, "rodopt_hessian_terminal", "const double *z, double T, const double *p, double *H",
                  ("z", "T", "p", "H"), [(f"H[{k}]", e) for k, e in enumerate(eqs.terminal_hessian or ())])
    bd = _routine(eqs, "rodopt_boundary", "const double *z, const double *ze, double T, const double *p, double *c",
                  ("z", "ze", "T", "p", "c"), [(f"c[{k}]", b) for k, b in enumerate(eqs.boundary)],
                  check=" && ".join(f"isfinite(c[{k}])" for k in range(len(eqs.boundary))) or "1")
    bj = _routine(eqs, "rodopt_boundary_jacobian",
                  "const double *z, const double *ze, double T, const double *p, double *v",
                  ("z", "ze", "T", "p", "v"), [(f"v[{n}]", d) for n, (_, _, d) in enumerate(eqs.boundary_jacobian)])
    bh = _routine(eqs, "rodopt_boundary_hessian",
                  "const double *z, const double *ze, double T, const double *p, const double *bl, double *H",
                  ("z", "ze", "T", "p", "bl", "H"),
                  [(f"H[{n}]", d) for n, (_, _, d) in enumerate(eqs.boundary_hessian)])
    ip = _routine(eqs, "rodopt_integrand_p", "double t, const double *z, const double *p, double *g",
                  ("t", "z", "p", "g"), [(f"g[{k}]", e) for k, e in enumerate(eqs.integrand_pgradient)])
    tp = _routine(eqs, "rodopt_terminal_p", "const double *z, double T, const double *p, double *g",
                  ("z", "T", "p", "g"), [(f"g[{k}]", e) for k, e in enumerate(eqs.terminal_pgradient)])
    pp = _routine(eqs, "rodopt_path_p", "double t, const double *z, const double *p, double *v",
                  ("t", "z", "p", "v"), [(f"v[{k}]", e) for k, e in enumerate(eqs.path_pjacobian)])
    bp = _routine(eqs, "rodopt_boundary_p", "const double *z, const double *ze, double T, const double *p, double *v",
                  ("z", "ze", "T", "p", "v"), [(f"v[{k}]", e) for k, e in enumerate(eqs.boundary_pjacobian)])
    return environment().get_template("c/optimize_problem.c.jinja").render(
        name=name, model=model, version=version, npath=len(eqs.path), exact=int(exact),
        structure=[(k, i) for k, i, _ in eqs.path_jacobian], nboundary=len(eqs.boundary),
        boundary_structure=[(k, i) for k, i, _ in eqs.boundary_jacobian],
        boundary_hessian_structure=[(r, c) for r, c, _ in eqs.boundary_hessian],
        free=list(eqs.free), routines=[integrand, terminal, path, jac, hp, ht, bd, bj, bh, ip, tp, pp, bp])


__all__ = ["render_problem"]
