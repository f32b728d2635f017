"""Identification of inertial parameters from the regressor (NumPy only).

The inverse dynamics is linear in the inertial parameters: ``τ = Y(q, q̇, q̈) θ``
(:mod:`rodgen.symbolic.regressor` gives Y and θ). Not every column of Y is independent: the
*base parameters* are the identifiable combinations. :func:`base_parameters` finds them numerically
by a QR decomposition with column pivoting of Y stacked over random states: the first ``r`` pivoted
columns are independent, and every other column is a fixed combination of them,
``Y_d = Y_b β``, so ``Y θ = Y_b (θ_b + β θ_d)``. :func:`least_squares` fits the base parameters to
measured torques.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np
import scipy.linalg

RegressorFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class BaseParameters:
    """The identifiable combinations of the inertial parameters.

    independent : indices of the base columns of Y (in θ's order).
    dependent : indices of the other columns.
    beta : ``(len(independent), len(dependent))``: ``Y[:, dependent] = Y[:, independent] @ beta``.
    names : θ's names, when given.
    """

    independent: list[int]
    dependent: list[int]
    beta: np.ndarray
    names: Optional[list[str]] = None

    @property
    def count(self) -> int:
        return len(self.independent)

    def of(self, theta: Sequence[float]) -> np.ndarray:
        """The base parameters of a full θ: ``θ_b + β θ_d``."""
        th = np.asarray(theta, dtype=float)
        return th[self.independent] + self.beta @ th[self.dependent]

    def describe(self) -> list[str]:
        """Each base parameter as text, e.g. ``upper.m + 1.0*lower.m``."""
        names = self.names or [f"theta{k}" for k in range(len(self.independent) + len(self.dependent))]
        out = []
        for i, k in enumerate(self.independent):
            terms = [names[k]] + [f"{self.beta[i, j]:+.6g}*{names[d]}" for j, d in enumerate(self.dependent)
                                  if abs(self.beta[i, j]) > 1e-12]
            out.append(" ".join(terms))
        return out


def _regressor_of(source: Any) -> tuple[RegressorFn, Optional[int], Optional[list[str]]]:
    """(Y, nq, θ names) of a compiled model built with the regressor, or (source, None, None) for a function."""
    if hasattr(source, "theta_names") and hasattr(source, "regressor"):
        if not source.theta_names:
            raise TypeError(f"{source.name!r} was built without the regressor: "
                            "rodgen.build(model, codegen=CodegenOptions(regressor=True))")
        return source.regressor, int(source.nq), list(source.theta_names)
    return source, None, None


def stacked(Y: Any, states: Sequence[tuple[Any, Any, Any]]) -> np.ndarray:
    """Y at each ``(q, qd, qdd)`` of ``states``, stacked row-wise (``Y`` a function or a compiled model)."""
    Y = _regressor_of(Y)[0]
    return np.vstack([Y(np.asarray(q, float), np.asarray(qd, float), np.asarray(qdd, float))
                      for q, qd, qdd in states])


def base_parameters(Y: Any, nq: Optional[int] = None, *, samples: int = 50, seed: int = 0, rtol: float = 1e-8,
                    names: Optional[list[str]] = None, scale: float = 1.0) -> BaseParameters:
    """The base parameters of a regressor ``Y(q, qd, qdd)`` (nq coordinates), from ``samples`` random
    states (normal with standard deviation ``scale``) and a QR decomposition with column pivoting;
    a diagonal entry of R below ``rtol`` times the largest ends the independent columns.

    ``Y`` may be a compiled model built with ``CodegenOptions(regressor=True)``
    (``base_parameters(robot)``): its generated regressor, its nq and its ``theta_names``."""
    Y, nq_of, names_of = _regressor_of(Y)
    nq = nq if nq is not None else nq_of
    names = names if names is not None else names_of
    if nq is None:
        raise TypeError("base_parameters(Y, nq): give the number of coordinates with a regressor function")
    rng = np.random.default_rng(seed)
    W = stacked(Y, [tuple(scale * rng.standard_normal((3, nq))) for _ in range(samples)])
    _, R, piv = scipy.linalg.qr(W, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > rtol * d[0])) if d.size and d[0] > 0 else 0
    indep, dep = [int(k) for k in piv[:r]], [int(k) for k in piv[r:]]
    beta = scipy.linalg.solve_triangular(R[:r, :r], R[:r, r:]) if dep else np.zeros((r, 0))
    return BaseParameters(indep, dep, np.asarray(beta), names)


def least_squares(Y: Any, states: Sequence[tuple[Any, Any, Any]], torques: Sequence[Any],
                  base: BaseParameters) -> np.ndarray:
    """The base parameters that fit the measured ``torques`` (one per state) in the least-squares sense
    (``Y`` a regressor function or a compiled model built with the regressor)."""
    W = stacked(Y, states)[:, base.independent]
    tau = np.concatenate([np.asarray(t, dtype=float).ravel() for t in torques])
    return np.linalg.lstsq(W, tau, rcond=None)[0]


__all__ = ["BaseParameters", "base_parameters", "least_squares", "stacked"]
