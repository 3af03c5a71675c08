"""The compiler: one class composed of one mixin per construct, sharing the state set up in
``Compiler.__init__`` (scopes, generated-code buffers, the control-plane description).
"""
from __future__ import annotations

from .. import nodes as A
from ..errors import Loc
from ..info import ActionInfoP, ProgramInfo
from ..types import HeaderT, StructT
from .blocks import BlocksMixin
from .calls import CallsMixin
from .consteval import ConstEvalMixin
from .declarations import DeclarationsMixin
from .expressions import ExpressionsMixin
from .header_classes import HeaderClassesMixin
from .hooks import ArchHooks
from .lanes import LanesMixin, vectorize_default
from .module import ModuleMixin
from .parsers import ParsersMixin
from .source_writer import Out
from .statements import StatementsMixin
from .symbols import ActionSym, CORE_ERRORS, FnCtx, InstSym, Scope, SymbolsMixin
from .tables import TablesMixin
from .typecheck import TypeCheckMixin


class Compiler(SymbolsMixin, TypeCheckMixin, ConstEvalMixin, DeclarationsMixin, HeaderClassesMixin,
               ExpressionsMixin, CallsMixin, StatementsMixin, LanesMixin, BlocksMixin, ParsersMixin,
               TablesMixin, ModuleMixin):
    """Type-checks and lowers one program in one pass; ``build_module`` returns the
    generated Python source and the top-level blocks.  The architecture plugs in through
    ``hooks`` (an :class:`~emulation.p4.compiler.hooks.ArchHooks`).  ``vectorize`` turns the
    vectorised lanes (:mod:`~emulation.p4.compiler.lanes`) on or off; None reads
    ``SAATP_P4_VECTORIZE`` (on by default)."""

    def __init__(self, program: A.Program, hooks: ArchHooks, filename: str = "",
                 vectorize: bool | None = None):
        self.prog = program
        self.hooks = hooks
        self.glob = Scope()
        self.info = ProgramInfo(source=filename)
        self.errors_list: list[str] = list(CORE_ERRORS)
        self.match_kinds: list[str] = []
        self.classes = Out()
        self.mod = Out()            # module-level code after the classes
        self._n = 0
        self.headers: list[HeaderT] = []
        self.structs: list[StructT] = []
        self.top_actions: list[ActionSym] = []
        self.action_infos: dict[str, ActionInfoP] = {}
        self.consts_code = Out()
        self._stmt_out = Out()
        self._lv_roots: list[str] = []
        self.cur_loc: Loc | None = None
        self._loops = 0
        self._last_obj_code: dict[int, str] = {}
        self._cur_fn: FnCtx | None = None
        self._direct_insts: dict[int, InstSym] = {}
        self._factory_args: dict[str, list[str]] = {}
        self.vectorize = vectorize_default() if vectorize is None else bool(vectorize)
        self._lane_banks: dict[str, tuple] | None = None   # bank -> instances, per control
        self._lane_bank_lines: list[str] = []
        self._lanes_used = False
        self._uses_struct = False      # a header codec uses struct (header_classes)
