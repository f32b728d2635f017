"""Code stage: Equations -> routine spec -> C header and C source (with the C runtime beside them).

    spec = lower(equations)            # straight-line code per routine, no names from the model
    files = render(spec)               # GeneratedFiles: {"exo5.h": ..., "exo5.c": ..., "rodgen_runtime.h": ...}
    files.write("out/")

or in one step ``generate(model_or_equations, out_dir)``.
"""
from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from ..errors import CodegenError
from ..model.valid import MODEL_TYPES, AnyModel
from .options import DEFAULT_METHOD, CodegenOptions, ForwardAlgorithm, prefix_of
from .spec import Argument, ConstraintBlock, ModelSpec, Part, Routine, Section, Slot, Statement, comment_text

if TYPE_CHECKING:  # pragma: no cover
    from ..symbolic.equations import Equations
    from .lower import lower
    from .printer import SlotPrinter, c_double
    from .render import GeneratedFiles, environment, render, template_digest, template_root
    from .straight import straight_line

# The modules that print SymPy and the Jinja rendering are imported on first use: the options (what
# finding a cached build needs) import neither, the runtime's files (what compiling the runtime needs) no SymPy.
_LAZY = {"lower": ".lower", "SlotPrinter": ".printer", "c_double": ".printer", "straight_line": ".straight",
         "render": ".render", "GeneratedFiles": ".render", "environment": ".render", "template_digest": ".render",
         "template_root": ".render"}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """``rodgen.codegen.lower`` and ``.render`` name functions, as they did when they were imported eagerly:
    importing the submodules of the same names later (which sets them on the package) keeps the functions."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("lower", "render") and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def generate(source: Union[AnyModel, "Equations"], out_dir: Union[str, Path, None] = None, *,
             method: Optional[str] = None, options: Optional[CodegenOptions] = None) -> "GeneratedFiles":
    """Generate the C header and C source of a model, with the files of rodgen's C runtime.

    Parameters
    ----------
    source : a Model (validated and derived here with ``method``), a ValidModel, or its Equations.
    out_dir : if given, the files are written there.
    method : derivation method when ``source`` is a Model (default: :data:`DEFAULT_METHOD`,
        the recursive method, whose code grows like n or n^2).
    options : CodegenOptions.

    Returns
    -------
    GeneratedFiles : file name -> text, and the spec.
    """
    from .lower import lower
    from .render import render
    eqs = equations_of(source, method=method)
    files = render(lower(eqs, options=options))
    if out_dir is not None:
        files.write(out_dir)
    return files


def equations_of(source: Union[AnyModel, "Equations"], *, method: Optional[str] = None) -> "Equations":
    """The Equations of a Model or ValidModel (derived, by :data:`DEFAULT_METHOD` unless ``method`` is given; those
    ``rodgen.derive`` returned for the same model and method if they are still held, see
    :func:`rodgen.symbolic.derived`) or the Equations themselves."""
    from ..symbolic.equations import Equations
    if isinstance(source, Equations):
        if method is not None and str(getattr(method, "value", method)) != str(source.method):
            raise CodegenError(f"method={method!r} was given with Equations derived by {source.method!r}; "
                               f"pass the Model to derive it again")
        return source
    if isinstance(source, MODEL_TYPES):
        from ..symbolic import derive, derived
        how = DEFAULT_METHOD if method is None else method
        return derived(source, how) or derive(source, method=how)
    raise TypeError(f"expected a rodgen.Model or rodgen.Equations, got {type(source).__name__}")


__all__ = ["generate", "lower", "render", "equations_of", "CodegenOptions", "ForwardAlgorithm", "DEFAULT_METHOD",
           "GeneratedFiles", "ModelSpec", "ConstraintBlock", "Routine", "Part", "Section", "Statement", "Argument",
           "Slot", "SlotPrinter", "c_double", "comment_text", "prefix_of", "straight_line", "environment",
           "template_digest", "template_root"]
