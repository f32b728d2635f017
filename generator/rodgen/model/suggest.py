""""Did you mean ...?": the closest valid name for a misspelt one, for error messages."""
from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'parent'?)`` for the closest of ``choices`` to ``word``, or an empty string."""
    if not isinstance(word, str):
        return ""
    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:     # a difference of case only
        lower = {c.lower(): c for c in choices}
        if word.lower() in lower:
            close = [lower[word.lower()]]
    return f" (did you mean {close[0]!r}?)" if close else ""


__all__ = ["did_you_mean"]
