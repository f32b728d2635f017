"""The top-level namespace: public names only, the stages' entry points as functions with their docs,
and a light import (no SymPy until something is derived)."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys

import rodgen
from conftest import REPO


def test_no_helpers_leak_into_rodgen() -> None:
    public = {k for k in vars(rodgen) if not k.startswith("_")}
    assert not {"annotations", "importlib", "TYPE_CHECKING"} & public
    submodules = {"errors", "model", "codegen", "symbolic", "toolchain", "runtime", "contract", "examples", "cli",
                  "cli_sim", "cli_sweep", "analysis", "fmu", "optimize", "gait"}
    assert public - submodules <= set(rodgen.__all__), public - submodules - set(rodgen.__all__)


def test_build_is_a_documented_function() -> None:
    assert inspect.isfunction(rodgen.build) and rodgen.build is rodgen.toolchain.build
    assert "cache" in (rodgen.build.__doc__ or "")
    assert inspect.signature(rodgen.build).parameters["build_dir"].default is None
    assert inspect.isfunction(rodgen.derive) and inspect.isfunction(rodgen.generate)


def test_import_is_light() -> None:
    code = "import sys, rodgen; m = rodgen.load(sys.argv[1]); print('sympy' in sys.modules, 'jinja2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code, str(REPO / "examples" / "exo5.yaml")], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "generator")), check=True)
    assert out.stdout.split() == ["False", "False"]
