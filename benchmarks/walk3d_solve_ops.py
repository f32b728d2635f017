"""Where the 3D biped's constrained solve spends its operations, by part, as the code stage counts them.

    python benchmarks/walk3d_solve_ops.py      # about 30 s; writes benchmarks/results/walk3d_solve_ops.json

examples/spatial/biped12.yaml's ``constrained_solve`` (both soles held: the masked solve with every row
held, and the left sole alone: its mode's solve) lowered by the code stage with the default options, the
operation count after CSE (``Routine.ops``). Each part is measured as the difference to the same solve with
that part set to zero and carried through (the code stage then drops what only it used):

* ``Jdot qd``: the soles' bias J̇ q̇ (from the recursion's accelerations; it shares their world rotation with J q̇);
* ``rhs``: the whole right-hand side of the held rows (J̇ q̇, J q̇, c - target and their gains);
* ``unconstrained``: what is left with λ = 0 (M, the bias, P M Pᵀ = L D Lᵀ, the free accelerations);
* the rest: the rows' Jacobians, V = L⁻¹ P Jᵀ, J M⁻¹ Jᵀ and its factorisation, λ, the backward substitution;
* ``input response``: the operations of the mode's ``constrained_response`` (q̈ and λ moved to other inputs on
  the solve's factors), beside the solve's total.

It also checks the structure the solve relies on: each sole's V = L⁻¹ P Jᵀ has nonzeros only in its own
leg's and the pelvis's entries (the tree's leaves first), so the two soles meet only in the pelvis's 6.
"""
from __future__ import annotations

import importlib
import json
import re
from dataclasses import replace
from pathlib import Path

import sympy as sp

import rodgen
from rodgen.codegen.options import ELECTIVE_ROUTINES, CodegenOptions
from rodgen.symbolic import derive
from rodgen.symbolic.constraints import _Factored, _specialise

HERE = Path(__file__).resolve().parent
lower = importlib.import_module("rodgen.codegen.lower")


def main() -> None:
    eqs = derive(rodgen.load(HERE.parent / "examples" / "spatial" / "biped12.yaml"), "recursive")
    groups = lower._Groups(eqs, "BIPED12")

    def ops(e, solve, name: str = "constrained_solve") -> int:  # type: ignore[no-untyped-def]
        """The operations of the routine ``name`` for ``solve``; the solve's parts are counted without the
        input response (its stored factors would keep alive what a part set to zero drops)."""
        object.__setattr__(e, "constrained_solve_modes", lambda: (solve, []))
        options = CodegenOptions() if name == "constrained_response" else CodegenOptions(
            routines=[r for r in ELECTIVE_ROUTINES if r != "constrained_response"])
        routines = lower.constrained_solve_routine(e, "b", groups, options)
        return int(next(r for r in routines if r.name == name).ops)

    def solves(e):  # type: ignore[no-untyped-def]
        cs, modes = type(e).constrained_solve_modes(e)
        nr = len(cs.targets)
        both = _specialise(cs, {**{cs.gains[4 * r]: sp.Integer(1) for r in range(nr)},
                                **{cs.gains[4 * r + 1]: sp.Integer(0) for r in range(nr)}})
        return {"both soles": both, "left sole": modes[0][1]}

    def zeroed(solve, pattern: str):  # type: ignore[no-untyped-def]
        return _specialise(solve, {s: sp.Integer(0) for s, _ in solve.assignments if re.match(pattern, str(s))})

    no_bias = replace(eqs, constraints=[replace(c, bias=sp.zeros(*c.bias.shape)) for c in eqs.constraints])
    out: dict[str, dict[str, int]] = {}
    base, nb = solves(eqs), solves(no_bias)
    for mode, solve in base.items():
        total = ops(eqs, solve)
        rhs = total - ops(eqs, zeroed(solve, r"_cfd_b\d+$"))
        free = zeroed(solve, r"_cfd_(b|lam|w|s|ds|es|ls|rs)\d+$")
        nr = len(solve.lam)
        free = replace(free, lam=[sp.Integer(0)] * nr, s_pivots=[sp.Integer(0)] * nr, s_diag=[sp.Integer(0)] * nr)
        unconstrained = ops(eqs, free)
        out[mode] = {"total": total, "Jdot qd": total - ops(no_bias, nb[mode]), "rhs": rhs,
                     "unconstrained": unconstrained, "rest": total - rhs - unconstrained,
                     "input response": ops(eqs, solve, "constrained_response")}
    fa = _Factored(eqs)
    legs = {"left": set(), "right": set()}  # elimination indices of each sole's V
    for r, row in enumerate(fa.rows):
        v, _ = fa.forward([row[j] for j in range(fa.n)], f"j{r}_")
        legs["left" if r < 6 else "right"].update(i for i in range(fa.n) if v[i] != 0)
    shared = sorted(legs["left"] & legs["right"])
    pelvis = sorted(fa.order.index(j) for j in range(6))   # the free joint's 6 velocities come first
    print(f"{'mode':12} {'total':>7} {'Jdot qd':>8} {'rhs':>7} {'uncon.':>7} {'rest':>7} {'response':>9}")
    for mode, d in out.items():
        print(f"{mode:12} {d['total']:7d} {d['Jdot qd']:8d} {d['rhs']:7d} {d['unconstrained']:7d} {d['rest']:7d} "
              f"{d['input response']:9d}")
    print("the soles' V share only the pelvis's entries:", shared == pelvis)
    res = {"ops": out, "soles_share_only_pelvis": shared == pelvis}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "walk3d_solve_ops.json").write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
