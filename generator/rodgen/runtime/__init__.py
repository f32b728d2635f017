"""Runtime stage: the Python face of a compiled model (no symbolic work here)."""
from __future__ import annotations

from .compiled import STATUS_MESSAGES, CompiledModel, DynamicsError
from .control import PD, ComputedTorque, InputTable, Reference
from .integrate import Integrator

__all__ = ["CompiledModel", "DynamicsError", "STATUS_MESSAGES", "InputTable", "Reference", "PD", "ComputedTorque",
           "Integrator"]
