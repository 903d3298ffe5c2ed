"""Place each output store of a printed C kernel right after the statement that completes it.

The IR writes a kernel's outputs after its last statement (``Kernel.outputs``: expressions over
the assigned names). Printed that way, every output value stays live from its definition to the
end of the function: a mass matrix's 100-odd entries, a Jacobian's columns, the rotations of
forward kinematics, each held in a register or spilled to the stack and reloaded for the final
stores. GCC does not move the stores up by itself (x86 has no scheduling before register
allocation), so the order of the printed C decides. This pass, run on the printed body of a C
kernel after the sine-cosine passes (``mechgen.generator.emit._kernel_context``), gives each
body entry ``"stores"``: the output elements whose last name it defines, as
``{"port", "index", "expr"}``, in port and element order. Elements that read no assigned name
(constants, input elements) are returned apart: the template writes them after the body, as
before (the structural zeros of a mass matrix written first cost solo12's 5 % more, measured).

Every value is the same expression of the same operands, so the results are the same bits;
only the moment each is written changes. A kernel that fails a check afterwards still
overwrites every output with NaN (``fail:`` in templates/c/kernel.c.j2). Measured in
docs/algorithms.md §2.4.2 (solo12's Jacobians 500 -> 338 ns per call).
"""

from __future__ import annotations

from mechgen.generator.passes.sincos import defined_names, identifiers


def place_stores(body: list[dict], outputs: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the body with each entry's ``"stores"``, the stores written after the body)."""
    defined_by: dict[str, int] = {}
    for i, st in enumerate(body):
        for name in defined_names(st):
            defined_by[name] = i
    last: list[dict] = []
    after: dict[int, list[dict]] = {}
    for p in outputs:
        for index, expr in enumerate(p["elements"]):
            store = {"port": p["name"], "index": index, "expr": expr}
            at = [defined_by[n] for n in identifiers(expr) if n in defined_by]
            (after.setdefault(max(at), []) if at else last).append(store)
    return [{**st, "stores": after.get(i, [])} for i, st in enumerate(body)], last
