"""Runtime stage: the Python face of a compiled model (no symbolic work here)."""
from __future__ import annotations

from .compiled import STATUS_MESSAGES, CompiledModel, DynamicsError

__all__ = ["CompiledModel", "DynamicsError", "STATUS_MESSAGES"]
