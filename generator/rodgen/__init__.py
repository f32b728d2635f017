"""rodgen: equations of motion of rod and link mechanisms, compiled to C.

Pipeline: model (``load``/``Model``) -> symbolic (``derive``) -> code
(``generate``) -> toolchain (``build``) -> runtime (the compiled model).
"""
import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING

from ._version import __version__
from .errors import BuildError, CodegenError, DerivationError, ModelError, RodgenError
from .model import (
    Body,
    Contact,
    Force,
    Friction,
    Ground,
    Joint,
    Limit,
    Link,
    Loop,
    Marker,
    Model,
    Parameter,
    PointMass,
    Rod,
    Segment,
    SpatialJoint,
    SpatialLink,
    SpatialMarker,
    SpatialModel,
    Spring,
    ValidModel,
    dump,
    elastic,
    load,
    telescopic,
)

if _TYPE_CHECKING:  # pragma: no cover
    from .codegen import generate
    from .fmu import export_fmu
    from .model.urdf import from_urdf
    from .symbolic import Equations, Method, derive
    from .toolchain import build

__all__ = ["load", "dump", "derive", "generate", "build", "Model", "Link", "Segment", "PointMass", "Rod", "Joint",
           "Marker", "Parameter", "Spring", "telescopic", "elastic", "modes", "linearize",
           "Ground", "Contact", "Force", "Friction", "Loop", "Limit", "ValidModel",
           "SpatialModel", "SpatialLink", "SpatialJoint", "SpatialMarker", "Body",
           "Equations", "Method",
           "ModelError", "DerivationError",
           "CodegenError", "BuildError", "RodgenError", "DynamicsError", "plot", "animate", "prescribed_forces",
           "MixedProblem", "SimulationResult", "PD", "ComputedTorque", "InputTable", "Reference", "Integrator",
           "CController", "examples", "sweep", "export_fmu", "__version__", "from_urdf"]

# Later stages are imported on first use so that `import rodgen` stays light: the symbolic stage (SymPy)
# only when something is derived, so a model found in the build cache loads without SymPy.
# `rodgen.build` is the toolchain stage's entry point (rodgen.toolchain.build).
_LAZY = {
    "derive": (".symbolic", "derive"),
    "Equations": (".symbolic", "Equations"),
    "Method": (".symbolic", "Method"),
    "symbolic": (".symbolic", None),
    "build": (".toolchain", "build"),
    "toolchain": (".toolchain", None),
    "generate": (".codegen", "generate"),
    "from_urdf": (".model.urdf", "from_urdf"),
    "examples": (".examples", None),
    "modes": (".analysis", "modes"),
    "linearize": (".runtime.linear", "linearize"),
    "plot": (".runtime.plot", "plot"),
    "animate": (".runtime.plot", "animate"),
    "prescribed_forces": (".runtime.trajectory", "prescribed_forces"),
    "MixedProblem": (".runtime.trajectory", "MixedProblem"),
    "SimulationResult": (".runtime.result", "SimulationResult"),
    "DynamicsError": (".runtime", "DynamicsError"),
    "PD": (".runtime", "PD"),
    "CController": (".runtime", "CController"),
    "ComputedTorque": (".runtime", "ComputedTorque"),
    "InputTable": (".runtime", "InputTable"),
    "Reference": (".runtime", "Reference"),
    "Integrator": (".runtime", "Integrator"),
    "sweep": (".runtime.study", "sweep"),
    "export_fmu": (".fmu", "export_fmu"),
    "fmu": (".fmu", None),
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'rodgen' has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = _importlib.import_module(module, __name__)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value
