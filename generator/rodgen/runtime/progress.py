"""A small progress bar for long loops (simulations, sweeps, builds).

Uses ``tqdm`` when it is installed, otherwise prints a plain line to stderr
at most a few times per second. Disabled automatically when stderr is not a
terminal, unless ``enable=True``.
"""
from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, Iterable, Iterator, Optional, TextIO, TypeVar

T = TypeVar("T")


class Progress:
    """``with Progress(total=n, desc="simulating") as bar: ... bar.update(k)``."""

    def __init__(self, total: Optional[float] = None, desc: str = "", *, enable: Optional[bool] = None,
                 stream: Optional[TextIO] = None, unit: str = "it", min_interval: float = 0.25) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enable is None:
            enable = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enable
        self.total = total
        self.desc = desc
        self.unit = unit
        self.n = 0.0
        self.min_interval = min_interval
        self._start = time.monotonic()
        self._last = 0.0
        self._tqdm: Any = None
        if enable and stream is None:
            try:
                from tqdm import tqdm  # type: ignore[import-untyped]
                self._tqdm = tqdm(total=total, desc=desc, unit=unit, file=self.stream)
            except ImportError:
                self._tqdm = None

    def update(self, n: float = 1) -> None:
        self.n += n
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.update(n)
            return
        now = time.monotonic()
        if now - self._last >= self.min_interval or (self.total is not None and self.n >= self.total):
            self._last = now
            self._print()

    def _print(self, end: str = "") -> None:
        el = time.monotonic() - self._start
        if self.total:
            frac = min(1.0, self.n / self.total)
            bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
            text = f"\r{self.desc} [{bar}] {100 * frac:5.1f}% {el:6.1f}s"
        else:
            text = f"\r{self.desc} {self.n:g} {self.unit} {el:6.1f}s"
        self.stream.write(text + end)
        self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.close()
        else:
            self._print(end="\n")
        self.enabled = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, et: Optional[type], ev: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.close()


def track(iterable: Iterable[T], total: Optional[int] = None, desc: str = "", *,
          enable: Optional[bool] = None, stream: Optional[TextIO] = None) -> Iterator[T]:
    """Iterate over ``iterable`` with a :class:`Progress` bar."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with Progress(total, desc, enable=enable, stream=stream) as bar:
        for item in iterable:
            yield item
            bar.update(1)


__all__ = ["Progress", "track"]
