"""Model stage: the vocabulary of rod/link mechanisms, model files, validation (no SymPy here).

Two types: the mutable :class:`Model` that users build, load and dump, and the immutable
:class:`ValidModel` that ``Model.validate()`` returns and the later stages read (see
:mod:`rodgen.model.valid`).
"""
from typing import TYPE_CHECKING as _TYPE_CHECKING

from .core import (
                   Contact,
                   Coordinate,
                   Force,
                   Friction,
                   FrictionBlock,
                   Ground,
                   Input,
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
                   Spring,
                   check_name,
                   telescopic,
)
from .dump import dump, to_dict
from .elastic import elastic, rule_table
from .expr import Expression, ExpressionError, parse
from .loader import load, load_dict
from .spatial import (
                   Body,
                   SpatialJoint,
                   SpatialLink,
                   SpatialMarker,
                   SpatialModel,
                   ValidBody,
                   ValidSpatialJoint,
                   ValidSpatialLink,
                   ValidSpatialMarker,
                   ValidSpatialModel,
)
from .valid import (
                   AnyModel,
                   Extension,
                   ValidContact,
                   ValidForce,
                   ValidGround,
                   ValidJoint,
                   ValidLink,
                   ValidLoop,
                   ValidMarker,
                   ValidModel,
                   ValidParameter,
                   ValidPointMass,
                   ValidRod,
                   ValidSegment,
                   ValidSpring,
                   valid_model,
)

__all__ = ["Contact", "Force", "Friction", "FrictionBlock", "ValidForce", "Ground", "Limit", "Loop", "Coordinate",
           "Input", "Joint", "Link",
           "Marker", "Model", "Parameter", "PointMass", "Rod", "Segment", "Spring", "check_name", "telescopic",
           "elastic", "rule_table", "Expression",
           "ExpressionError", "parse", "load", "load_dict", "dump", "to_dict",
           "ValidModel", "ValidLink", "ValidSegment", "Extension", "ValidJoint", "ValidMarker", "ValidPointMass",
           "ValidRod", "ValidSpring", "ValidParameter", "ValidGround", "ValidContact", "ValidLoop", "AnyModel",
           "valid_model", "SpatialModel", "SpatialLink", "SpatialJoint", "SpatialMarker", "Body",
           "ValidSpatialModel", "ValidSpatialLink", "ValidSpatialJoint", "ValidSpatialMarker", "ValidBody",
           "from_urdf", "read_urdf"]

if _TYPE_CHECKING:  # pragma: no cover
    from .urdf import from_urdf, read_urdf


def __getattr__(name: str) -> object:
    # the URDF reader (it uses NumPy) is imported on first use, so that `import rodgen` stays light
    if name in ("from_urdf", "read_urdf"):
        from . import urdf
        return getattr(urdf, name)
    raise AttributeError(f"module 'rodgen.model' has no attribute {name!r}")
