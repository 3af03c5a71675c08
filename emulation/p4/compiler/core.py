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
    ``SAATP_P4_VECTORIZE`` (on by default).  ``trace`` generates calls to a tracer ``TR``
    (``RT.tracer``) at parser states, extracts, selects, tables, actions, conditions and emits."""

    def __init__(self, program: A.Program, hooks: ArchHooks, filename: str = "",
                 vectorize: bool | None = None, trace: bool = False):
        self.prog = program
        self.hooks = hooks
        self.glob = Scope()
        self.info = ProgramInfo(source=filename)
        self.errors_list: list[str] = list(CORE_ERRORS)
        self.info.error_members = self.errors_list      # filled as ``error`` declarations come
        self.info.main_annotations = next((self.ann_text(d.annotations) for d in program.decls
                                           if isinstance(d, A.Instantiation) and d.name == "main"), {})
        self.match_kinds: list[str] = []
        self.classes = Out()
        self.mod = Out()            # module-level code after the classes
        self._n = 0
        self.headers: list[HeaderT] = []
        self.structs: list[StructT] = []
        self.top_actions: list[ActionSym] = []
        self.action_infos: dict[str, ActionInfoP] = {}
        self.cp_decls: dict[tuple[str, str], A.Node] = {}    # (kind, control-plane name) -> declaration
        self.branch_path: list[tuple[int, int]] = []    # (if/switch, branch) around the code being generated
        self.consts_code = Out()
        self._stmt_out = Out()
        self._lv_roots: list[str] = []
        self.cur_loc: Loc | None = None
        self._loops = 0
        self._last_obj_code: dict[int, str] = {}
        self._cur_fn: FnCtx | None = None
        self._direct_insts: dict[int, InstSym] = {}
        self._factory_args: dict[str, list[str]] = {}
        self.blocks_compiled: set[str] = set()     # parsers/controls whose code was generated
        # trace: generate calls to the run-time tracer ``TR`` (BMv2-style per-packet lines, see
        # emulation/v1model/trace.py); off, the generated code has none.  Traced programs run the
        # plain (not vectorised) code, whose statements map one to one onto the trace.
        self.trace = bool(trace)
        self._trace_nodes = 0
        self.vectorize = False if self.trace else vectorize_default() if vectorize is None else bool(vectorize)
        self._lane_banks: dict[str, tuple] | None = None   # bank -> instances, per control
        self._lane_bank_lines: list[str] = []
        self._lane_fallbacks: list = []      # Out blocks: out-of-line scalar code of lane groups
        self._lane_cells: set[str] = set()   # the control's closure cells (for their nonlocal)
        self._lane_fb_indent = 0             # indentation of the control's actions
        self._lane_top_body: list | None = None   # the action body being compiled (lanes.py)
        self._lanes_used = False
        self._uses_struct = False      # a header codec uses struct (header_classes)
