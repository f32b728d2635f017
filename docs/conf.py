"""Sphinx configuration of rodgen's documentation (MyST Markdown pages).

Build: python -m sphinx -W --keep-going -b html docs build/docs   (needs the `docs` extra)
A new page: add docs/<page>.md and its name to a toctree of docs/index.md.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent / "generator"))     # document the tree's rodgen, also without an install

from rodgen import __version__  # noqa: E402

project = "rodgen"
author = "the rodgen authors"
copyright = "the rodgen authors, MIT license"
release = version = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "rodgen_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3          # links to #section-anchors of the pages
suppress_warnings = ["myst.header"]   # pages start at a level-2 heading after an included title now and then

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
napoleon_google_docstring = False
napoleon_numpy_docstring = True

html_theme = "furo"
html_title = f"rodgen {release}"
# the docstrings write "name : what it is" (numpy style with the description on the name's line): no type
# cross-references from that text
napoleon_preprocess_types = False
napoleon_use_param = False
