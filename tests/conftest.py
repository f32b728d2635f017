"""Shared fixtures: one build folder per test session, compiled models shared between tests."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build cache shared by the whole session (models compile once). Under pytest-xdist (``-n 2``) the
    workers share one folder of the run, next to their own temporary folders: a model another worker has
    built is reused, and two workers building the same one at once compile it once (the cache's lock)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent          # <run>/popen-gw0 -> <run>, the same for every worker of the run
    folder = base / "rodgen-build"
    folder.mkdir(exist_ok=True)
    return folder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden generated files under tests/golden/ (see tests/test_golden.py)")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """Whether the run was asked to rewrite the golden files (``pytest --update-golden``)."""
    return bool(request.config.getoption("--update-golden"))


# The tests run over every example file derive each example by several methods; for the two largest examples
# (the 8-link snake with friction, 11 coordinates, and the flexible arm) that is minutes of SymPy, so those
# cases are slow. What they check on them is checked in the default run on smaller models with the same
# features: force elements in tests/test_forces.py (the methods agree, the exact Jacobian) and elastic links in
# tests/test_elastic.py.
_LARGE_EXAMPLES = ("snake", "flexible_arm")
_EXAMPLE_WIDE = ("test_jacobian_matches_central_differences", "test_recursive_equals_reference_on_examples",
                 "test_terms_match_lambdify", "test_matrix_equals_lagrange_on_examples",
                 "test_newton_euler_inverse_dynamics_equals_m_qdd_plus_bias")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = getattr(item, "originalname", item.name)
        params = item.name[len(name):]
        if name in _EXAMPLE_WIDE and any(ex in params for ex in _LARGE_EXAMPLES):
            item.add_marker(pytest.mark.slow)
