"""rodgen: equations of motion of rod and link mechanisms, compiled to C.

Pipeline: model (``load``/``Model``) -> symbolic (``derive``) -> code
(``generate``) -> build (``build``) -> runtime (the compiled model).
"""
from __future__ import annotations

from .errors import BuildError, CodegenError, DerivationError, ModelError, RodgenError
from .model import Joint, Link, Marker, Model, Parameter, PointMass, Rod, Segment, Spring, load, telescopic
from .symbolic import Equations, Method, derive

__version__ = "0.1.0"

__all__ = ["load", "derive", "Model", "Link", "Segment", "PointMass", "Rod", "Joint", "Marker", "Parameter",
           "Spring", "telescopic", "Equations", "Method", "ModelError", "DerivationError", "CodegenError",
           "BuildError", "RodgenError", "__version__"]


def __getattr__(name: str) -> object:
    # later stages are imported lazily so that `import rodgen` stays light
    if name in ("build", "generate"):
        from . import build as _b
        return getattr(_b, name)
    if name == "examples":
        import importlib
        return importlib.import_module(".examples", __name__)
    raise AttributeError(f"module 'rodgen' has no attribute {name!r}")
