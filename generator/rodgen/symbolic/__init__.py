"""Symbolic stage: equations of motion of a Model, by several methods."""
from __future__ import annotations

import enum
import weakref
from typing import Optional, Union

from ..errors import ModelError
from ..model.core import Model
from ..model.valid import AnyModel, ValidModel, valid_model
from .equations import ConstraintEquations, Equations, ForceEquations, ForwardDynamics


class Method(str, enum.Enum):
    """Derivation methods. ``lagrange`` is the reference; ``matrix`` the closed-form matrix method;
    ``recursive`` the composite-body, Newton-Euler and articulated-body recursions of
    :mod:`rodgen.symbolic.spatial` over the model's expanded tree, emitted as small assignments (fast for
    long chains; a planar model's tree is lowered onto it by :mod:`rodgen.symbolic.planar_tree`); ``planar``
    the same recursions written in planar spatial algebra (:mod:`rodgen.symbolic.recursive`, planar models
    only), kept as a second derivation to test and measure the recursive method against."""

    LAGRANGE = "lagrange"
    MATRIX = "matrix"
    RECURSIVE = "recursive"
    PLANAR = "planar"


def available_methods() -> list[str]:
    return [m.value for m in Method]


#: The Equations :func:`derive` returned, by (validated model, method), while someone holds them: a build of
#: the same model by the same method takes them (:func:`derived`) instead of deriving again.
_DERIVED: "weakref.WeakValueDictionary[tuple[object, str], Equations]" = weakref.WeakValueDictionary()


def derived(model: AnyModel, method: Union[str, Method]) -> Optional[Equations]:
    """The Equations :func:`derive` returned for a model equal to ``model`` (validated; the same links,
    parameters, values and source) by ``method``, if they are still held somewhere; else None.

    ``rodgen.build(model)`` (``codegen.equations_of``) looks here before deriving, so ``eqs =
    rodgen.derive(model, method="recursive")`` followed by ``rodgen.build(model)`` derives once. Equations
    are a result: a changed model is another key (derived again), changed Equations are not seen."""
    try:
        return _DERIVED.get((valid_model(model), Method(method).value))
    except (ValueError, TypeError):   # an unknown method or an unhashable model: derive() says what is wrong
        return None


def derive(model: AnyModel, method: Union[str, Method] = "matrix") -> Equations:
    """Derive the equations of motion ``M qdd + h + G + K + D = B u`` of a model.

    A model with ``couplings`` gets equations in its independent coordinates
    only (see :mod:`rodgen.symbolic.coupling`). Whatever the method, the
    result also carries the forward dynamics by the articulated-body algorithm
    where it applies (``Equations.articulated``, else ``articulated_reason``
    says why not), which the code stage lowers. A model with contacts, loops or
    limits gets their rows in ``Equations.constraints`` (see
    :mod:`rodgen.symbolic.constraints`); a loop that is not closed at the
    initial coordinates is refused with a ModelError.

    Parameters
    ----------
    model : a :class:`rodgen.Model` (validated on the way in, each call: later changes to it are
        seen by the next call) or a :class:`~rodgen.model.valid.ValidModel`.
    method : ``"lagrange"``, ``"matrix"``, ``"recursive"`` (the spatial recursions over the expanded tree, a
        planar model's lowered to it: :mod:`rodgen.symbolic.planar_tree`) or ``"planar"`` (the planar
        recursion of :mod:`rodgen.symbolic.recursive`; planar models only). A :class:`rodgen.SpatialModel` is derived
        by the spatial recursive method (:mod:`rodgen.symbolic.spatial`), for ``"matrix"`` then substituted
        and simplified to closed form where the model is small enough (:mod:`rodgen.symbolic.closed_form`;
        else ``Equations.closed_form_reason`` says why not), or by ``"lagrange"`` (the reference, for small
        models).
    """
    from ..model.spatial import SpatialModel, ValidSpatialModel
    if not isinstance(model, (Model, ValidModel, SpatialModel, ValidSpatialModel)):
        raise TypeError(f"derive() takes a rodgen.Model, got {type(model).__name__}")
    try:
        m = Method(method)
    except ValueError:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(available_methods())}") from None
    vm = valid_model(model)
    if isinstance(vm, ValidSpatialModel):
        if m is Method.PLANAR:
            raise ValueError(f"method 'planar' derives planar models; {vm.name!r} is a spatial model (use "
                             f"'recursive')")
        from .spatial import derive_spatial_model
        eqs = derive_spatial_model(vm, m.value)
        _DERIVED[(vm, m.value)] = eqs
        return eqs
    if m is Method.LAGRANGE:
        from .lagrange import derive_lagrange
        eqs = derive_lagrange(vm)
    elif m is Method.MATRIX:
        from .matrix import derive_matrix
        eqs = derive_matrix(vm)
    elif m is Method.RECURSIVE:
        from .planar_tree import derive_tree
        eqs = derive_tree(vm)
    else:
        from .recursive import derive_recursive
        eqs = derive_recursive(vm)
        eqs.method = Method.PLANAR.value
    if vm.couplings:
        from .coupling import reduce_couplings
        eqs = reduce_couplings(eqs)
    _check_inertia(eqs)
    from .forces import apply_forces
    apply_forces(eqs)
    if m is Method.PLANAR:
        from .recursive import articulated_body
        eqs.articulated, eqs.articulated_reason = articulated_body(eqs)
    else:   # the articulated-body algorithm of the spatial recursion, over the lowered tree
        from .planar_tree import tree_articulated
        eqs.articulated, eqs.articulated_reason = tree_articulated(eqs)
    from .constraints import constraint_equations
    eqs.constraints = constraint_equations(eqs)
    _DERIVED[(vm, m.value)] = eqs
    return eqs


def _check_inertia(eqs: Equations) -> None:
    """Refuse a model in which a coordinate carries no inertia (M would be singular everywhere)."""
    for i, c in enumerate(eqs.coordinates):
        if eqs.M[i, i] == 0:
            what = {"angle": f"the angle of link {c.link!r}", "length": f"the length of segment {c.segment!r}",
                    "base": "the base position"}[c.kind]
            raise ModelError(f"coordinate {c.name!r} ({what}) moves no mass: the mass matrix is singular; "
                             f"put a mass or rod where it moves, or make the segment rigid",
                             source=eqs.model.source, where=f"link {c.link!r}" if c.link else "base")


__all__ = ["derive", "derived", "Equations", "ConstraintEquations", "ForceEquations", "ForwardDynamics", "Method",
           "available_methods"]
