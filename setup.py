"""Build hook for setuptools.

All metadata lives in pyproject.toml. The package maps the top-level
``templates/`` folder into ``rodgen.templates`` (see ``[tool.setuptools]``),
so the Jinja templates ship inside the wheel; nothing else is needed here.
"""
from setuptools import setup

setup()
