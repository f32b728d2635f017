"""Exception classes, one per pipeline stage boundary."""
from __future__ import annotations


class RodgenError(Exception):
    """Base class of every error rodgen raises on purpose."""


class ModelError(RodgenError, ValueError):
    """A model (file or builder) is invalid.

    The message names the place: file, link, segment and field where known.
    """

    def __init__(self, message: str, *, source: str | None = None, where: str | None = None) -> None:
        self.source = source
        self.where = where
        self.detail = message
        prefix = ""
        if source:
            prefix += f"{source}: "
        if where:
            prefix += f"{where}: "
        super().__init__(prefix + message)


class DerivationError(RodgenError):
    """The symbolic stage cannot derive the equations of a (valid) model."""


class CodegenError(RodgenError):
    """The code stage cannot lower or render the equations."""


class BuildError(RodgenError):
    """Compiling or importing a generated module failed.

    Attributes
    ----------
    command : list of str or None
        The command that failed.
    returncode : int or None
        Its exit status.
    log : str
        The tail of the compiler's output.
    folder : str or None
        The build folder in which it ran.
    """

    def __init__(self, message: str, *, command: list[str] | None = None, returncode: int | None = None,
                 log: str = "", folder: str | None = None) -> None:
        self.command = command
        self.returncode = returncode
        self.log = log
        self.folder = folder
        text = message
        if command:
            text += "\ncommand: " + " ".join(command)
        if returncode is not None:
            text += f"\nexit status: {returncode}"
        if folder:
            text += f"\nbuild folder: {folder}"
        if log:
            text += "\ncompiler output (tail):\n" + log[-4000:]
        super().__init__(text)
