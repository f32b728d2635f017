"""A cache hit is found before derivation: keyed on the validated model, the method, the options, the
compiler and rodgen's own files; it loads the compiled model without SymPy."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rodgen
import rodgen.toolchain
from conftest import EXAMPLES, REPO
from rodgen.codegen import CodegenOptions
from rodgen.toolchain import BuildOptions, key

DOUBLE = EXAMPLES / "double_pendulum.yaml"


def closed_form_mass_matrix(q2: float, m1: float = 1.0, m2: float = 0.8, L1: float = 1.0,
                            L2: float = 0.7) -> np.ndarray:
    """Two uniform rods on relative angles (textbook): rod inertias about their ends m L^2/3."""
    c = math.cos(q2)
    m11 = m1 * L1**2 / 3 + m2 * (L1**2 + L2**2 / 3 + L1 * L2 * c)
    m12 = m2 * (L2**2 / 3 + L1 * L2 * c / 2)
    m22 = m2 * L2**2 / 3
    return np.array([[m11, m12], [m12, m22]])


def run_fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter with the source checkout on the path; it prints one JSON line."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "generator"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


WARM = """
import json, sys
import rodgen
robot = rodgen.build(rodgen.load({model!r}), build_dir={build_dir!r})
print(json.dumps({{"sympy": "sympy" in sys.modules, "jinja2": "jinja2" in sys.modules, "path": str(robot.path),
                   "M": robot.mass_matrix([0.3, 0.7]).tolist()}}))
"""


def test_warm_build_loads_without_sympy(tmp_path: Path) -> None:
    cold = rodgen.build(rodgen.load(DOUBLE), build_dir=tmp_path)
    warm = run_fresh(WARM.format(model=str(DOUBLE), build_dir=str(tmp_path)))
    assert warm["sympy"] is False and warm["jinja2"] is False
    assert warm["path"] == str(cold.path)
    assert np.allclose(warm["M"], closed_form_mass_matrix(0.7), rtol=1e-13, atol=1e-15)


def test_a_changed_model_misses_the_cache(tmp_path: Path) -> None:
    model = rodgen.load(DOUBLE)
    first = rodgen.build(model, build_dir=tmp_path)
    next(p for p in model.parameters if p.name == "m2").value = 1.7
    second = rodgen.build(model, build_dir=tmp_path)
    assert second.path != first.path
    assert np.allclose(second.mass_matrix([0.3, 0.7]), closed_form_mass_matrix(0.7, m2=1.7), rtol=1e-13)
    assert np.allclose(first.mass_matrix([0.3, 0.7]), closed_form_mass_matrix(0.7), rtol=1e-13)


def test_key_covers_model_method_options_and_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    vm = rodgen.load(DOUBLE).validate()
    cg, opts = CodegenOptions(), BuildOptions()
    base = key.model_key(vm, "recursive", cg, opts)
    # the same model read again (another object, another file name) has the same key
    again = rodgen.load(DOUBLE).validate()
    assert key.model_key(again, "recursive", cg, opts) == base
    changed = rodgen.load(DOUBLE)
    changed.links[1].initial = 0.25
    assert key.model_key(changed.validate(), "recursive", cg, opts) != base
    assert key.model_key(vm, "matrix", cg, opts) != base
    assert key.model_key(vm, "recursive", CodegenOptions(forward="cholesky"), opts) != base
    assert key.model_key(vm, "recursive", CodegenOptions(jacobian=False), opts) != base
    assert key.model_key(vm, "recursive", cg, BuildOptions(optimization="O2")) != base
    assert key.model_key(vm, "recursive", cg, BuildOptions(extra_cflags=("-g",))) != base
    # an edited template, printer or runtime file is another generator
    key.generator_digest.cache_clear()
    monkeypatch.setattr(key, "generator_digest", lambda: "0" * 64)
    assert key.model_key(vm, "recursive", cg, opts) != base


def test_generator_digest_covers_templates_and_csrc() -> None:
    from rodgen.codegen import template_root
    assert key.template_folder() == Path(str(template_root()))
    parts = set(key.GENERATOR_PARTS)
    assert {"model", "symbolic", "codegen", "csrc", "contract.py"} <= parts


def test_canonical_names_every_field() -> None:
    vm = rodgen.load(DOUBLE).validate()
    text = key.canonical(vm)
    for needle in ("name='double_pendulum'", "Expression(text='L2'", "ValidParameter(name='m2',value=0.8",
                   "initial=Expression(text='0.5'"):
        assert needle in text, needle
    assert "source=" not in text and str(DOUBLE) not in text


def test_index_of_a_removed_folder_rebuilds(tmp_path: Path) -> None:
    import shutil
    first = rodgen.build(rodgen.load(DOUBLE), build_dir=tmp_path)
    folder = first.folder
    shutil.rmtree(folder)
    again = rodgen.build(rodgen.load(DOUBLE), build_dir=tmp_path)
    assert again.path.is_file()
    assert np.allclose(again.mass_matrix([0.0, -0.4]), closed_form_mass_matrix(-0.4), rtol=1e-13)


def test_equations_still_build_and_share_the_folder(tmp_path: Path) -> None:
    from_model = rodgen.build(rodgen.load(DOUBLE), build_dir=tmp_path)
    from_eqs = rodgen.build(rodgen.derive(rodgen.load(DOUBLE), method="recursive"), build_dir=tmp_path)
    assert from_eqs.path == from_model.path


#: A mass no other test gives the double pendulum, so that no Equations another test holds match this test's.
M1_OWN = 1.0371


def own_model() -> rodgen.Model:
    model = rodgen.load(DOUBLE)
    next(p for p in model.parameters if p.name == "m1").value = M1_OWN
    return model


def test_build_takes_the_equations_derive_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """derive then build of the same model by the same method derives once; a changed model, another method
    or Equations no longer held derive again."""
    import gc

    from rodgen.symbolic import derived, planar_tree
    derivations: list[str] = []
    real = planar_tree.derive_tree

    def counted(vm):  # type: ignore[no-untyped-def]
        derivations.append(vm.name)
        return real(vm)

    monkeypatch.setattr(planar_tree, "derive_tree", counted)
    model = own_model()
    eqs = rodgen.derive(model, method="recursive")
    assert derivations == ["double_pendulum"]
    robot = rodgen.build(model, build_dir=tmp_path)
    assert derivations == ["double_pendulum"]
    assert derived(own_model(), "recursive") is eqs     # another object with the same content
    # the same generated sources as a build of the Equations themselves: the same folder name
    assert rodgen.build(eqs, build_dir=tmp_path / "from_eqs").path.parent.name == robot.path.parent.name
    assert np.allclose(robot.mass_matrix([0.3, 0.7]), closed_form_mass_matrix(0.7, m1=M1_OWN), rtol=1e-13)
    assert derived(model, "matrix") is None
    next(p for p in model.parameters if p.name == "m2").value = 1.7
    changed = rodgen.build(model, build_dir=tmp_path)
    assert derivations == ["double_pendulum"] * 2
    assert np.allclose(changed.mass_matrix([0.3, 0.7]), closed_form_mass_matrix(0.7, m1=M1_OWN, m2=1.7), rtol=1e-13)
    del eqs, robot   # the robot holds them for its deferred Jacobian
    gc.collect()
    assert derived(own_model(), "recursive") is None


#: Another mass of its own, for the build given its Equations.
M1_GIVEN = 1.0419


def test_build_takes_the_equations_it_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """derive(model) (the matrix method, derive's default) then build(model, equations=eqs) derives once and
    builds by the Equations' method, under the cache key of build(model, method=that method); Equations of
    another model or another method than the one asked for are refused."""
    from rodgen.symbolic import matrix, planar_tree
    derivations: list[str] = []
    for module, name in ((matrix, "derive_matrix"), (planar_tree, "derive_tree")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda vm, real=real, name=name: derivations.append(name) or real(vm))
    model = rodgen.load(DOUBLE)
    next(p for p in model.parameters if p.name == "m1").value = M1_GIVEN
    eqs = rodgen.derive(model)
    robot = rodgen.build(model, build_dir=tmp_path, equations=eqs)
    assert derivations == ["derive_matrix"] and robot.method == "matrix"
    q = np.array([0.3, 0.7])
    assert np.allclose(robot.mass_matrix(q), closed_form_mass_matrix(0.7, m1=M1_GIVEN), rtol=1e-13)
    # the deferred RHS Jacobian is built from the same Equations, and is the derivative of the RHS
    y, h = np.array([0.3, 0.7, -0.4, 0.9]), 1e-6
    fd = np.column_stack([(robot.rhs(0.0, y + h * e) - robot.rhs(0.0, y - h * e)) / (2 * h) for e in np.eye(4)])
    assert np.allclose(robot.ode().jac(0.0, y), fd, rtol=1e-6, atol=1e-8)   # central differences: O(h^2)
    assert derivations == ["derive_matrix"]
    # the same cache entry as a build by that method: found without deriving or generating
    monkeypatch.setattr("rodgen.codegen.equations_of", lambda *a, **k: pytest.fail("derived again"))
    again = rodgen.build(model, build_dir=tmp_path, method="matrix")
    assert again.folder == robot.folder and derivations == ["derive_matrix"]
    with pytest.raises(rodgen.BuildError, match="derived by 'matrix'"):
        rodgen.build(model, build_dir=tmp_path, equations=eqs, method="recursive")
    with pytest.raises(rodgen.BuildError, match="goes with the model"):
        rodgen.build(eqs, build_dir=tmp_path, equations=eqs)
    next(p for p in model.parameters if p.name == "m2").value = 1.7
    with pytest.raises(rodgen.BuildError, match="another model than 'double_pendulum'"):
        rodgen.build(model, build_dir=tmp_path, equations=eqs)


LOAD_WITHOUT_SYMPY = """
import json, sys
sys.modules["sympy"] = None          # any import of SymPy now fails
sys.modules["jinja2"] = None
from rodgen.toolchain import load_module
plant = load_module({path!r})
print(json.dumps({{"M": plant.mass_matrix([0.3, 0.7]).tolist(), "name": plant.name}}))
"""


def test_load_module_by_path_without_sympy(tmp_path: Path) -> None:
    built = rodgen.build(rodgen.load(DOUBLE), build_dir=tmp_path)
    out = run_fresh(LOAD_WITHOUT_SYMPY.format(path=str(built.path)))
    assert out["name"] == "double_pendulum"
    assert np.allclose(out["M"], closed_form_mass_matrix(0.7), rtol=1e-13)
