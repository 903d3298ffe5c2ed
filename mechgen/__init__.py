"""mechgen: a symbolic generator of flat scalar kernels for the dynamics of mechanisms.

    >>> import mechgen
    >>> arm = mechgen.load("ur5_arm")                       # a bundled mechanism (C backend)
    >>> folder = mechgen.generate("my_arm.toml", out="out")  # your own spec -> out/<name>/
    >>> mine = mechgen.load(folder)                          # a folder path loads too

``mechgen.generator`` (spec -> model -> algorithms -> IR -> passes -> printers) needs SymPy and
is imported only when :func:`generate` is called; ``mechgen.runtime`` (loading and calling the
generated kernels) needs numpy and cffi only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mechgen.generator import __version__
from mechgen.runtime import KernelStatusError, Mechanism, load

__all__ = ["load", "Mechanism", "generate", "KernelStatusError", "__version__"]


def generate(source: Any, out: str | Path = "generated", *, cse: bool = True,
             progress: bool = False) -> Path:
    """Generate the kernels of one mechanism into ``out/<name>/`` and return that folder.

    ``source`` is a spec file (TOML, serial, URDF-based or parallel), a
    :class:`mechgen.generator.families.serial.spec.ChainBuilder`, a built ``Chain`` or ``Platform``, or a
    parallel spec as a dict (the TOML's tables). ``progress`` prints one line per kernel on
    stderr.
    """
    from mechgen.generator.build import generate as _generate
    return _generate(source, Path(out), cse=cse, progress=progress)
