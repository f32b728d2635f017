"""The derivative of the dynamics by the model's parameters, for sensitivities of simulations in p.

With g(q, qd, a, u, p) = M(q, p) a + bias(q, qd, p) - B(q, p) u (the inverse dynamics of
:meth:`Equations.inverse_dynamics` less the inputs), the forward dynamics a = qdd solves g = 0, so at
a = qdd (the implicit function theorem)

    ∂qdd/∂p = -M⁻¹ ∂g/∂p   (a and u held fixed in ∂g/∂p).

:func:`parameter_partials` gives ∂g/∂p as straight-line code by forward-mode derivatives through the
chain of the inverse dynamics (:func:`rodgen.symbolic.derivative.forward_derivatives`): its size grows
like the number of parameters times the inverse dynamics. The runtime solves with M.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import sympy as sp

from .derivative import forward_derivatives

if TYPE_CHECKING:
    from .equations import Equations


def parameter_partials(eqs: "Equations") -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[list[sp.Expr]]]:
    """(assignments, dg): dg[i][k] = ∂g_i/∂p_k (nv rows, one column per parameter in the order of
    ``eqs.params``) of g = M a + bias - B u, in the symbols q, qd, the ``qdd`` symbols (a), u, the
    parameters and the time, through ``assignments``."""
    n = len(eqs.qd)
    bu = eqs.B * sp.Matrix(eqs.u) if eqs.u else sp.zeros(n, 1)
    inverse, extra = eqs.inverse_dynamics()
    g = inverse - bu
    return forward_derivatives(eqs.assignments + extra, list(g), list(eqs.params), prefix="_pp")
