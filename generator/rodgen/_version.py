"""The version of rodgen, defined here only: pyproject.toml reads it (``dynamic = ["version"]``)."""

__version__ = "0.1.0"
