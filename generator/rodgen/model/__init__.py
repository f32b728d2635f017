"""Model stage: the vocabulary of rod/link mechanisms, model files, validation (no SymPy here)."""
from .core import (
                   Contact,
                   Coordinate,
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
from .expr import Expression, ExpressionError, parse
from .loader import load, load_dict

__all__ = ["Contact", "Ground", "Limit", "Loop", "Coordinate", "Input", "Joint", "Link", "Marker", "Model", "Parameter",
           "PointMass", "Rod", "Segment", "Spring", "check_name", "telescopic", "Expression", "ExpressionError",
           "parse", "load", "load_dict", "dump", "to_dict"]
