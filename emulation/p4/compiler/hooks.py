"""The seam between the front end and an architecture: :class:`ArchHooks`.

The compiler knows no architecture.  Extern objects, extern methods and extern functions are
lowered by an :class:`ArchHooks` implementation that the architecture hands to
:class:`~emulation.p4.compiler.core.Compiler` (v1model: ``emulation/v1model/arch.py``).
An architecture imports ``Compiler`` from ``core`` and everything else it needs from here.
"""
from __future__ import annotations

from typing import Any, Optional

from .. import nodes as A
from ..types import ExternT, Ty
from .source_writer import Out
from .symbols import InstSym, Scope

# what an architecture sees of the compiler: the hooks it implements and the types they take
__all__ = ["ArchHooks", "InstSym", "Out", "Scope"]


class ArchHooks:
    """Architecture-specific lowering (implemented by the v1model architecture).

    Each method gets ``comp``, the :class:`~emulation.p4.compiler.core.Compiler` at work (for
    its ``expr``/``err``/``fresh``/... helpers), and writes generated lines to ``out``.
    """

    prelude: tuple = ()     # lines placed at the start of the generated build()

    def extern_instance(self, comp: Any, inst: InstSym, ctor_args: list, out: Out, scope: Scope) -> None:
        raise NotImplementedError

    def extern_method(self, comp: Any, inst_code: str, ety: ExternT, method: str, call: A.Call,
                      scope: Scope, out: Out, as_expr: bool) -> Optional[tuple[str, Ty]]:
        raise NotImplementedError

    def lane_array(self, ety: ExternT, method: str) -> Optional[tuple]:
        """For vectorised lanes: if ``method`` of an instance of ``ety`` reads or writes one cell of
        an array of bit<W>/int<W> (v1model: ``register.read/write``), return
        ``(kind, index argument position, value argument position, cell type, size)`` with kind
        "read" (the value argument is the destination) or "write"; else None."""
        return None

    def lane_bank_lines(self, comp: Any, bank: str, insts: list[str]) -> list[str]:
        """Lines, run once when the instance is built, that make ``bank`` a 2-D numpy int64 array
        whose rows are the cells of the instances ``insts`` (python names), so that the generated
        code and the control plane both keep working on them."""
        raise NotImplementedError

    def extern_function(self, comp: Any, name: str, call: A.Call, scope: Scope, out: Out,
                        as_expr: bool) -> Optional[tuple[str, Ty]]:
        raise NotImplementedError
