"""The wheel ships the templates: install it into a fresh environment and build a model from elsewhere.

The environment is created with ``--system-site-packages`` and also sees the
site-packages of the running environment (through a .pth file), so the
dependencies are found without a network; rodgen itself comes from the wheel.
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import rodgen
from conftest import EXAMPLES, REPO

SCRIPT = r"""
import sys
from pathlib import Path
import rodgen, rodgen.toolchain
from rodgen.codegen import template_root
venv = Path(sys.prefix).resolve()
assert Path(rodgen.__file__).resolve().is_relative_to(venv), rodgen.__file__
assert str(venv) in str(template_root()), template_root()  # not the repository's templates/
s = rodgen.build(rodgen.load(sys.argv[1]))
from rodgen.toolchain.cache import default_build_dir
assert s.path.resolve().is_relative_to(default_build_dir().resolve()), s.path  # the user cache, not the cwd
print("OK", s.name, s.nq, float(s.mass_matrix(s.initial_state()[: s.nq])[0, 0]))
from rodgen.toolchain.key import generator_digest
print("DIGEST", generator_digest())
assert "templates" not in vars(rodgen)
"""


def check_wheel_contents(wheel: Path) -> None:
    """The wheel carries the typing marker, the license, the templates and the version of rodgen/_version.py."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = f"rodgen-{rodgen.__version__}.dist-info"
        meta = Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
    assert wheel.name.startswith(f"rodgen-{rodgen.__version__}-"), wheel.name
    assert meta["Version"] == rodgen.__version__
    assert meta["License-Expression"] == "MIT"
    assert "rodgen/py.typed" in names
    assert "rodgen/csrc/rodgen_model.h" in names  # the C contract, for the runtime's C parts
    assert f"{dist_info}/licenses/LICENSE" in names
    templates = {f"rodgen/templates/{t.relative_to(REPO / 'templates').as_posix()}"
                 for t in (REPO / "templates").rglob("*.jinja")}
    assert templates and templates <= names, sorted(templates - names)
    # every C source, header and Cython include beside the package's modules (the runtime, the FMU wrapper,
    # the collocation) is compiled at run time from the installed package
    sources = {f"rodgen/{f.relative_to(REPO / 'generator' / 'rodgen').as_posix()}"
               for ext in ("*.c", "*.h", "*.pxi") for f in (REPO / "generator" / "rodgen").rglob(ext)}
    assert sources and sources <= names, sorted(sources - names)


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stdout}\n{res.stderr}"
    return res.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_wheel_installs_and_builds_from_another_folder(tmp_path: Path) -> None:
    # a copy of what the wheel is made from, so that setuptools' own build/ stays out of the repository
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.so", "*.o")
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "generator", "templates"):
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        elif path.is_file():
            shutil.copy2(path, src / name)
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-w", str(wheels),
         "-q"], cwd=tmp_path)
    (wheel,) = wheels.glob("rodgen-*.whl")
    check_wheel_contents(wheel)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], cwd=tmp_path)
    py = venv / "bin" / "python"
    purelib = Path(run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       cwd=tmp_path).strip())
    # the running environment's packages (sympy, numpy, cython, ...) without its own rodgen
    deps = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
    (purelib / "_rodgen_test_deps.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    # --ignore-installed: the .pth also shows a rodgen installed in the running environment (as in CI)
    run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "-q", str(wheel)],
        cwd=tmp_path)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = run([str(py), "-c", SCRIPT, str(EXAMPLES / "double_pendulum.yaml")], cwd=work, env=env)
    assert out.startswith("OK double_pendulum 2 ")
    # the installed package keys its builds as the source checkout does (templates included), so a cache
    # entry made by one is found by the other
    from rodgen.toolchain.key import generator_digest
    assert out.split("DIGEST ")[1].split()[0] == generator_digest()
    assert not (work / "build").exists()
    # the command line of the installed package
    out = run([str(venv / "bin" / "rodgen"), "generate", str(EXAMPLES / "pendulum_vl.yaml"), "-o", "gen"],
              cwd=work, env=env)
    assert (work / "gen" / "pendulum_vl.h").is_file()
