"""Shared fixtures: one build folder per test session, compiled models shared between tests."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build cache shared by the whole session (models compile once)."""
    return tmp_path_factory.mktemp("rodgen-build")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden generated files under tests/golden/ (see tests/test_golden.py)")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """Whether the run was asked to rewrite the golden files (``pytest --update-golden``)."""
    return bool(request.config.getoption("--update-golden"))
