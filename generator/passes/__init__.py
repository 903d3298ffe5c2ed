"""Small pure passes over the scalar IR, listed in order in :data:`PIPELINE`."""

from mechgen.generator.passes.cse import common_subexpressions
from mechgen.generator.passes.dead_code import remove_dead_code
from mechgen.generator.passes.opcount import count_ops

__all__ = ["common_subexpressions", "remove_dead_code", "count_ops"]
