"""Runtime stage: the Python face of a compiled model (no symbolic work here)."""
from __future__ import annotations

from .balance import EnergyBalance, energy_balance
from .batch import BatchResult
from .ccontroller import CController
from .compiled import STATUS_MESSAGES, CompiledModel, DynamicsError
from .contact import ContactInverseDynamics, ContactInverseDynamicsError, contact_inverse_dynamics
from .control import PD, ComputedTorque, InputTable, Reference
from .integrate import Integrator

__all__ = ["contact_inverse_dynamics", "ContactInverseDynamics", "ContactInverseDynamicsError", "CompiledModel",
           "DynamicsError", "STATUS_MESSAGES", "InputTable", "Reference", "PD", "ComputedTorque", "Integrator",
           "EnergyBalance", "energy_balance", "CController", "BatchResult"]
