"""The protocol every family of mechanisms follows (think Pinocchio's Model/Data split).

A family is a model type (what the front end builds from a spec: a ``Chain``, a ``Platform``)
together with what the generator needs to know of it, and nothing else reaches into it:

    builders     the kernel builders, model -> ir.Kernel, in the order of the generated files
    manifest     the family's manifest fields (coordinates, parameters and their defaults,
                 gravity, bodies, points, legs ...), which the runtime reads
    summary      one line for ``mechgen report``
    optional     model -> more builders the spec asked for (e.g. the serial regressor)
    forms_apart  whether a kernel's candidate forms (pipeline.choice) are built in work items
                 of their own, side by side (build.py), or one after the other in one item,
                 where the second reuses what the first put in SymPy's cache

``model.with_prefixed_parameters()`` gives the model whose parameter symbols are the generated
code's names, and ``model.name`` names the files. build.py has one path for every family; a
new family is a module defining its ``Family`` and one line in ``generator/families``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from mechgen.generator.ir import Kernel


@dataclass(frozen=True)
class Family:
    name: str                                   # the manifest's "family"
    model_type: type
    builders: tuple[Callable[[Any], Kernel], ...]
    manifest: Callable[[Any], dict]
    summary: Callable[[Any], str]
    optional: Callable[[Any], tuple] = lambda model: ()   # builders a spec opts into
    forms_apart: bool = True

    def builders_for(self, model: Any) -> tuple[Callable[[Any], Kernel], ...]:
        """The builders, then the optional ones this model asks for."""
        return tuple(self.builders) + tuple(self.optional(model))

    def coded(self, model: Any) -> Any:
        """The model with its parameters named as in generated code (``p_<name>``)."""
        return model.with_prefixed_parameters()
