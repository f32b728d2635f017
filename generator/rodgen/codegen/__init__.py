"""Code stage: Equations -> routine spec -> C header and C source (with the C runtime beside them).

    spec = lower(equations)            # straight-line code per routine, no names from the model
    files = render(spec)               # GeneratedFiles: {"exo5.h": ..., "exo5.c": ..., "rodgen_runtime.h": ...}
    files.write("out/")

or in one step ``generate(model_or_equations, out_dir)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from ..errors import CodegenError
from ..model.core import Model
from ..model.valid import AnyModel, ValidModel
from ..symbolic.equations import Equations
from .lower import lower
from .options import CodegenOptions, ForwardAlgorithm, prefix_of
from .printer import SlotPrinter, c_double
from .render import GeneratedFiles, environment, render, template_digest, template_root
from .spec import Argument, ConstraintBlock, ModelSpec, Part, Routine, Section, Slot, Statement, comment_text
from .straight import straight_line


def generate(source: Union[AnyModel, Equations], out_dir: Union[str, Path, None] = None, *,
             method: Optional[str] = None, options: Optional[CodegenOptions] = None) -> GeneratedFiles:
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
    eqs = equations_of(source, method=method)
    files = render(lower(eqs, options=options))
    if out_dir is not None:
        files.write(out_dir)
    return files


#: Derivation method of the code stage when none is given: the recursive method emits small
#: assignments, so generated code grows like n or n^2 ("matrix" stays ``rodgen.derive``'s default,
#: for readable equations).
DEFAULT_METHOD = "recursive"


def equations_of(source: Union[AnyModel, Equations], *, method: Optional[str] = None) -> Equations:
    """The Equations of a Model or ValidModel (derived, by :data:`DEFAULT_METHOD` unless ``method`` is given) or the
    Equations themselves."""
    if isinstance(source, Equations):
        if method is not None and str(getattr(method, "value", method)) != str(source.method):
            raise CodegenError(f"method={method!r} was given with Equations derived by {source.method!r}; "
                               f"pass the Model to derive it again")
        return source
    if isinstance(source, (Model, ValidModel)):
        from ..symbolic import derive
        return derive(source, method=DEFAULT_METHOD if method is None else method)
    raise TypeError(f"expected a rodgen.Model or rodgen.Equations, got {type(source).__name__}")


__all__ = ["generate", "lower", "render", "equations_of", "CodegenOptions", "ForwardAlgorithm", "DEFAULT_METHOD",
           "GeneratedFiles", "ModelSpec", "ConstraintBlock", "Routine", "Part", "Section", "Statement", "Argument",
           "Slot", "SlotPrinter", "c_double", "comment_text", "prefix_of", "straight_line", "environment",
           "template_digest", "template_root"]
