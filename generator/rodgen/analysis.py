"""Modal analysis of a model or a compiled model: the entry point ``rodgen.modes``.

A compiled model is analysed from its exact RHS Jacobian
(:mod:`rodgen.runtime.linear`). A :class:`~rodgen.model.core.Model` is derived
(recursive method) and evaluated through the straight-line code of its
equations (:class:`rodgen.symbolic.numeric.ChainModel`), with the exact
stiffness from their forward-mode derivative; nothing is compiled, so this
is the quick path for a parameter study of an elastic link.
"""
from __future__ import annotations

from typing import Any, Optional

from .runtime.linear import ArrayLike, Modes
from .runtime.linear import modes as _modes


def modes(obj: Any, q0: Optional[ArrayLike] = None, **kwargs: Any) -> Modes:
    """Natural frequencies (rad/s and Hz) and mode shapes about the equilibrium ``q0``.

    ``obj`` is a Model (or ValidModel), or a compiled model; the keywords are those of
    :func:`rodgen.runtime.linear.modes` (``u0``, ``p``, ``count``, ``tol``).
    """
    from .model.core import Model
    from .model.valid import ValidModel
    if isinstance(obj, (Model, ValidModel)):
        from .symbolic import derive
        from .symbolic.numeric import ChainModel
        obj = ChainModel(derive(obj, method="recursive"))
    return _modes(obj, q0, **kwargs)


__all__ = ["modes", "Modes"]
