"""Vectorised lanes: K isomorphic statement groups become one numpy operation.

Aggregation programs repeat the same statements once per *lane*: lane ``k`` reads and writes
register array ``R_k`` at one shared index and field ``f_k`` of one header, with the same
operations (``p4src/bench_reg64.p4``, ``p4src/saatp.p4``).  :meth:`LanesMixin.stmts_with_lanes`
finds such runs in a statement list (same statement shapes, lanes differing only in the register
instance and in a field name of one parent) and emits one numpy statement per lane statement
over a *register bank* (a 2-D array whose rows back the K registers, created through
:meth:`ArchHooks.lane_bank_lines`) and a *payload vector* (the K header fields gathered into
an int64 array, scattered back at the end).  Anything outside the supported subset keeps the
scalar code.

Semantics are those of the scalar code: values are held canonically in int64 (``bit<W>`` in
``[0, 2^W)``, ``int<W>`` sign-extended), every operation wraps like the scalar code, and the
vector path runs only when the shared register index is in bounds; otherwise the scalar
statements run (BMv2: an out-of-bounds read leaves the destination unchanged, so lanes would
depend on each other).  After the group the scalar locals hold lane K-1's values, as they
would after the scalar code.  Every numpy call costs about half a microsecond at K = 256, so
operations are saved where the result is provably the same: an int64 interval is kept for each
vector expression and a wrap is left out when the value is already in its type's range, and the
branchless select ``(x & ~(0 - o)) | (y & (0 - o))`` with ``o`` in {0, 1} (SA-ATP's saturating
add) becomes one ``np.where``.  Switch: ``SAATP_P4_VECTORIZE=0`` (or ``Compiler(vectorize=False)``);
``SAATP_P4_LANES_DEBUG=1`` prints why a candidate group stayed scalar.

Supported lane bodies: straight-line assignments to locals and lane fields, register-like
``read``/``write`` (:meth:`ArchHooks.lane_array`) at one shared, lane-invariant index, the
operators ``+ - * & | ^ |+| |-| ~``, unary ``-``, shifts by constants, lane-invariant operands
of any kind (without calls), and reductions ``x = x | e`` (also ``&``, ``^``) into a
lane-invariant ``x`` read nowhere else in the group.  Locals must be written in a lane before
they are read there (no value carried from lane to lane).  Values up to 32 bits; registers of
one size and cell type, declared in the control.  Only inside controls (not parsers, not
top-level actions).
"""
from __future__ import annotations

import ast
import dataclasses
import os
import re
import symtable
import sys
import textwrap
from typing import Any

from .. import nodes as A
from ..types import Bits, HeaderT, InfInt, StructT
from .header_classes import lane_header_dtype
from .source_writer import Out
from .symbols import InstSym, Var

MIN_LANES = 4          # fewer lanes are not worth a numpy call
MAX_PERIOD = 12        # statements per lane that the detector tries
MAX_WIDTH = 32         # lane values up to bit<32>/int<32> (int64 arithmetic stays exact)
_PACK = {(8, False): ("B", "u1"), (16, False): ("H", "u2"), (32, False): ("I", "u4"),
         (8, True): ("b", "i1"), (16, True): ("h", "i2"), (32, True): ("i", "i4")}
_REDUCE = {"|": "np.bitwise_or", "&": "np.bitwise_and", "^": "np.bitwise_xor"}


def vectorize_default() -> bool:
    """Vectorisation is on unless ``SAATP_P4_VECTORIZE`` is ``0``/``false``/``no``/``off``."""
    return os.environ.get("SAATP_P4_VECTORIZE", "1").strip().lower() not in ("0", "false", "no", "off")


def _block_names(body: str) -> tuple[set[str], set[str]] | None:
    """(names used, names assigned) by the statements ``body`` as a function body, or None if
    the statements cannot move into a function of their own (``return``, ``nonlocal`` ...)."""
    if not body.strip():
        return set(), set()
    src = "def _f():\n" + textwrap.indent(body, "    ") + "\n"
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None
    fdef = tree.body[0]
    for node in ast.walk(fdef):
        if node is not fdef and isinstance(node, (ast.Return, ast.Nonlocal, ast.Global, ast.Yield, ast.YieldFrom,
                                                  ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef)):
            return None
    table = symtable.symtable(src, "<lanes>", "exec").get_children()[0]
    used = {sym.get_name() for sym in table.get_symbols()}
    assigned = {sym.get_name() for sym in table.get_symbols() if sym.is_assigned()}
    return used, assigned


class _NoLanes(Exception):
    """The candidate group is outside the vectorisable subset: keep the scalar code."""


def _chain(e: Any) -> str | None:
    if isinstance(e, A.Path):
        return ("." if e.top else "") + e.name
    if isinstance(e, A.Member):
        c = _chain(e.obj)
        return None if c is None else f"{c}.{e.name}"
    return None


def _skeleton(x: Any, slots: list, nodes: list | None = None) -> str:
    """A key for the shape of ``x`` with every name chain (``a``, ``hdr.p.v0``, a call's object)
    replaced by a slot; the chains are appended to ``slots`` (and the nodes to ``nodes``)."""
    if isinstance(x, A.Call) and isinstance(x.func, A.Member) and _chain(x.func.obj) is not None:
        slots.append(_chain(x.func.obj))
        if nodes is not None:
            nodes.append(x.func.obj)
        return (f"(call {x.func.name} {_skeleton(x.args, slots, nodes)} "
                f"{_skeleton(x.type_args, slots, nodes)})")
    if isinstance(x, (A.Path, A.Member)):
        c = _chain(x)
        if c is not None:
            slots.append(c)
            if nodes is not None:
                nodes.append(x)
            return "$"
    if isinstance(x, A.Node):
        parts = [type(x).__name__]
        for f in dataclasses.fields(x):
            if f.name not in ("loc", "type"):
                parts.append(_skeleton(getattr(x, f.name), slots, nodes))
        return "(" + " ".join(parts) + ")"
    if isinstance(x, (list, tuple)):
        return "[" + " ".join(_skeleton(i, slots, nodes) for i in x) + "]"
    return repr(x)


def _find_runs(keys: list, p: int) -> list[tuple[int, int]]:
    """(period, lanes) of the runs of repeated windows starting at ``p``, longest first."""
    runs = []
    n = len(keys)
    for period in range(1, MAX_PERIOD + 1):
        if p + period * MIN_LANES > n:
            break
        w = keys[p:p + period]
        k = 1
        while keys[p + k * period:p + (k + 1) * period] == w:
            k += 1
        if k >= MIN_LANES:
            runs.append((period, k))
    runs.sort(key=lambda r: -r[0] * r[1])
    return runs


class LanesMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def stmts_with_lanes(self, body: list, scope, out: Out, fn) -> bool:
        """Compile ``body``, vectorising lane groups; False if vectorisation is off here (the
        caller then compiles the statements one by one)."""
        if not self.vectorize or self._lane_banks is None or len(body) < MIN_LANES:
            return False
        keys = [_skeleton(s, []) for s in body]
        p = 0
        while p < len(body):
            for period, k in _find_runs(keys, p):
                rest = body[p + period * k:] if body is self._lane_top_body else None
                if self._lane_group(body[p:p + period * k], period, k, scope, out, fn, rest):
                    p += period * k
                    break
            else:
                self.stmt(body[p], scope, out, fn)
                p += 1
        return True

    # ---------------------------------------------------------------- one group
    def _lane_group(self, group: list, period: int, k: int, scope, out: Out, fn, rest: list | None = None) -> bool:
        """``rest``: the statements after the group when the group is in the top-level body of an
        action (else None): a local of the action that none of them names is dead after the
        group, so the vector code does not hand it lane K-1's value."""
        lanes = [group[i * period:(i + 1) * period] for i in range(k)]
        slots, nodes = [], []
        _skeleton(lanes[0], slots, nodes)
        per_lane = [slots]
        for lane in lanes[1:]:
            s: list = []
            _skeleton(lane, s)
            per_lane.append(s)
        varying = {id(nodes[j]): [pl[j] for pl in per_lane] for j in range(len(slots))
                   if any(pl[j] != slots[j] for pl in per_lane)}
        if not varying:
            return False
        saved = (self._stmt_out, self._cur_fn, self._lv_roots, self.cur_loc)
        banks, nbank_lines = dict(self._lane_banks), len(self._lane_bank_lines)
        ok = False
        try:
            self._stmt_out, self._cur_fn, self._lv_roots = Out(), fn, []
            gen = _LaneGen(self, scope, varying, k)
            gen.body(lanes[0])
            if self._stmt_out.lines:
                raise _NoLanes("hoisted code")
            if rest is not None:
                named = {n.name for n in _walk(rest) if isinstance(n, A.Path)}
                for key, (_py, _ty, var, _node) in gen.vec_locals.items():
                    if (key not in named and var.direction not in ("out", "inout")
                            and var.py not in self._lane_cells):
                        gen.dead.add(key)
            ok = True
        except _NoLanes as e:
            _debug(f"lanes: {k} x {period} statements kept scalar: {e}")
        except Exception as e:  # noqa: BLE001 -- anything unexpected: the scalar code that follows reports real errors
            _debug(f"lanes: {k} x {period} statements kept scalar: {type(e).__name__}: {e}")
        finally:
            self._stmt_out, self._cur_fn, self._lv_roots, self.cur_loc = saved
        if not ok:
            self._lane_banks.clear()
            self._lane_banks.update(banks)
            del self._lane_bank_lines[nbank_lines:]
            return False
        # the scalar statements are always compiled: they type-check the group (errors are
        # reported as without vectorisation) and run when the shared index is out of bounds
        scalar = Out()
        scalar.ind = out.ind + 1
        before = self._function_locals(scope)
        for s in group:
            self.stmt(s, scope, scalar, fn)
        self._lanes_used = True
        guard = gen.guard_lines()
        vec = gen.lines()
        if guard is None:
            for line in vec:
                out(line)
            return True
        pre, cond = guard
        for line in pre:
            out(line)
        with out.block(f"if {cond}:"):
            for line in vec:
                out(line)
        out("else:")
        self._scalar_fallback(scalar, before, self._function_locals(scope), out)
        return True

    def _function_locals(self, scope) -> set[str]:
        """Python names of the P4 variables and parameters in ``scope`` that are locals of the
        function being generated (not the control's closure cells)."""
        names = set()
        s = scope
        while s is not None:
            for v in s.syms.values():
                if isinstance(v, Var) and v.py not in self._lane_cells:
                    names.add(v.py)
            s = s.parent
        return names

    def _scalar_fallback(self, scalar: Out, before: set[str], after: set[str], out: Out) -> None:
        """The else branch of a lane group: a call of its scalar code, compiled as a function of
        its own beside the control's actions.  Inline, the K unrolled lanes would make the
        function holding the group carry thousands of locals and closure cells, which CPython
        sets up and clears on *every* call (COPY_FREE_VARS, the frame's locals), vector path
        included: at K = 1024 that cost 20-50 us per call.  The function gets the enclosing
        function's locals it uses as arguments and returns those it assigns; the control's
        cells it assigns are ``nonlocal`` in it.  (Code that may ``return`` stays inline.)"""
        body = textwrap.dedent("\n".join(scalar.lines))
        names = _block_names(body)
        if names is None:
            out.lines.extend(scalar.lines)
            return
        used, assigned = names
        args = sorted(n for n in used if n in before)
        rets = sorted(n for n in assigned if n in before or n in after)
        cells = sorted(n for n in assigned if n in self._lane_cells)
        name = self.fresh("lanes_scalar")
        fb = Out()
        fb.ind = self._lane_fb_indent
        with fb.block(f"def {name}({', '.join(args)}):"):
            if cells:
                fb(f"nonlocal {', '.join(cells)}")
            fb.lines.extend("    " * fb.ind + ln if ln else ln for ln in body.splitlines())
            if rets:
                fb(f"return ({', '.join(rets)},)")
        self._lane_fallbacks.append(fb)
        call = f"{name}({', '.join(args)})"
        out.ind += 1
        out(f"({', '.join(rets)},) = {call}" if rets else call)
        out.ind -= 1

    def lane_bank(self, insts: tuple) -> tuple[str, str]:
        """(bank variable, row selector) for the register-like instances ``insts``, making a
        bank for them on first use; _NoLanes if some of them already belong to another bank."""
        banks = self._lane_banks
        rows = []
        for b, members in banks.items():
            if members == insts:
                return b, ":"
        owner = None
        for inst in insts:
            for b, members in banks.items():
                if inst in members:
                    if owner not in (None, b):
                        raise _NoLanes("registers split over banks")
                    owner = b
                    rows.append(members.index(inst))
        if owner is not None:
            if len(rows) != len(insts):
                raise _NoLanes("registers partly banked")
            return owner, f"[{', '.join(map(str, rows))}]"
        name = self.fresh("bank")
        banks[name] = insts
        self._lane_bank_lines.extend(self.hooks.lane_bank_lines(self, name, list(insts)))
        return name, ":"


_READ_COPY = re.compile(r"(\w+) = (\w+\[:, \w+\])\.copy\(\)")
_OPS = r"(?:[-+^&|*]|>>|<<)"


def _without_needless_copies(lines: list[str]) -> list[str]:
    """Drop the ``.copy()`` of a register read ``x = bank[:, i].copy()`` where the view cannot
    be seen changed: ``x`` is used only as an operand of arithmetic (a fresh array) before the
    group writes ``bank[:, i]`` again, and not at all after that write (nor after the group).
    Saves one array copy per read (SA-ATP's add: read, add, write back)."""
    out = list(lines)
    for r, line in enumerate(out):
        m = _READ_COPY.fullmatch(line)
        if m is None:
            continue
        x, sel = m.groups()
        bank = sel.split("[", 1)[0] + "["          # any write to the bank ends the view's life
        w = next((j for j in range(r + 1, len(out)) if out[j].startswith(bank) and " = " in out[j]), len(out))
        word = re.compile(rf"\b{x}\b")
        if any(word.search(ln) for ln in out[w + 1:]) or (w < len(out) and word.search(out[w].split(" = ", 1)[1])):
            continue
        consumed = re.compile(rf"\({x} {_OPS} |{_OPS} {x}\)")
        if all(len(word.findall(ln)) == len(consumed.findall(ln)) for ln in out[r + 1:w]):
            out[r] = f"{x} = {sel}"
    return out


class _LaneGen:
    """Numpy code for the statements of lane 0, where ``varying`` marks the name chains that
    change from lane to lane (id(node) -> the chain in each lane)."""

    def __init__(self, comp, scope, varying: dict, k: int):
        self.c, self.scope, self.varying, self.k = comp, scope, varying, k
        self.out: list[str] = []
        self.vec_locals: dict[str, tuple[str, Bits, Var, Any]] = {}   # name -> (py, ty, var, node)
        self.fields: dict[tuple, dict] = {}     # lane chains -> {py, ty, parent, names, dirty}
        self.index: tuple | None = None      # (node key, code, type, size)
        self.index_py = comp.fresh("li")
        self.assigned_chains: set[str] = set()
        self.read_chains: set[str] = set()
        self.reductions: list[tuple[str, list[str]]] = []
        self.reduction_targets: set[str] = set()
        self.parent_chains: set[str] = set()     # objects holding lane fields (not read as values)
        # what is known of the values of vector codes (each entry made when its code is made,
        # a local's when it is assigned): the int64 interval, and for a code that is 0 or all
        # ones in each lane, the code of a 0/1 vector that is 1 where it is all ones
        self.ranges: dict[str, tuple[int, int]] = {}
        self.selectors: dict[str, str] = {}
        self.dead: set[str] = set()          # locals nothing reads after the group
        self.counts: dict[str, str] = {}     # vector name -> the name holding its count_nonzero

    # ------------------------------------------------------------ output
    def guard_lines(self):
        if self.index is None:
            return None
        _, code, ty, size = self.index
        lo = f"0 <= {self.index_py} < " if ty.signed else f"{self.index_py} < "
        return [f"{self.index_py} = {code}"], f"{lo}{size}"

    def lines(self) -> list[str]:
        tail = []
        # the locals first: a local's vector may be a view of a lane header's array, which the
        # field writes below change in place
        for key, (py, _ty, _var, node) in self.vec_locals.items():
            if key in self.dead:
                continue
            _, _, assign = self.c.lvalue(node, self.scope)
            tail.extend(assign(f"int({py}[-1])"))
        for f in self.fields.values():
            if f["dirty"] and f.get("span") is not None:
                lo, hi = f["span"]
                tail.append(f"{f['parent']}._a[{lo}:{hi}] = {f['py']}")
            elif f["dirty"]:
                targets = ", ".join(f"{f['parent']}.{n}" for n in f["names"])
                tail.append(f"{targets}, = {f['py']}.tolist()")
        return _without_needless_copies(self.out + tail)

    def _const(self, v: int) -> str:
        """A 0-d int64 array holding ``v``, defined once per control beside its register banks.
        numpy 2 combines an array with a Python int about 270 ns slower than with a 0-d array
        of the same dtype (it works out the int's weak promotion on every call), a third of an
        operation over 256 lanes; the result's dtype (int64) is the same either way."""
        name = f"_lk_{v:x}" if v >= 0 else f"_lk_m{-v:x}"
        line = f"{name} = np.array({v}, dtype=np.int64)"
        if line not in self.c._lane_bank_lines:
            self.c._lane_bank_lines.append(line)
        return name

    def _literal(self, code: str, node, t) -> str:
        """``code``, or the 0-d array of its value when ``node`` is a constant (an operand of a
        vector operation)."""
        v = self.c.const_eval(node, self.scope)
        if isinstance(v, int) and not isinstance(v, bool) and isinstance(t, Bits):
            return self._const(_canonical(v, t))
        return code

    def count_nonzero(self, code: str) -> str:
        """``np.count_nonzero(code)``; for a named vector, computed once until it is assigned
        again (SA-ATP's overflow flags are counted by the saturating select and by the OR)."""
        if not code.isidentifier():
            return f"np.count_nonzero({code})"
        name = self.counts.get(code)
        if name is None:
            name = self.counts[code] = self.c.fresh("nz")
            self.out.append(f"{name} = np.count_nonzero({code})")
        return name

    # ------------------------------------------------------------ checks
    def _bits(self, t) -> Bits:
        if not isinstance(t, Bits) or t.width > MAX_WIDTH:
            raise _NoLanes(f"lane type {t}")
        return t

    def _invariant(self, e) -> bool:
        """No lane-varying chain and no vector local in ``e``."""
        slots, nodes = [], []
        _skeleton(e, slots, nodes)
        for n, s in zip(nodes, slots):
            if id(n) in self.varying or s in self.vec_locals:
                return False
        return True

    def _check_inv_reads(self, e):
        slots: list = []
        _skeleton(e, slots)
        for s in slots:
            for a in self.assigned_chains | self.reduction_targets:
                if _overlap(s, a):
                    raise _NoLanes(f"{s} is written in the lane body")
            self.read_chains.add(s)

    def _scalar(self, e, want=None):
        if any(isinstance(n, A.Call) for n in _walk(e)):
            raise _NoLanes("call in a lane-invariant expression")
        self._check_inv_reads(e)
        return self.c.expr(e, self.scope, want)

    # ------------------------------------------------------------ statements
    def body(self, stmts: list) -> None:
        for s in stmts:
            self.c.cur_loc = s.loc
            if isinstance(s, A.Assign):
                self.assign(s.lhs, s.rhs)
            elif isinstance(s, A.CallStmt):
                self.call(s.call)
            elif isinstance(s, A.Empty):
                pass
            else:
                raise _NoLanes(f"statement {type(s).__name__}")

    def _target(self, lhs):
        """('local', name, ty) or ('field', key, ty) for an assignable lane value."""
        if id(lhs) in self.varying:
            key = self._field(lhs)
            return "field", key, self.fields[key]["ty"]
        if isinstance(lhs, A.Path):
            s = self.scope.lookup(lhs.name)
            if (isinstance(s, Var) and not s.readonly and lhs.name not in self.read_chains
                    and lhs.name not in self.reduction_targets):
                return "local", lhs.name, self._bits(s.ty)
        raise _NoLanes("assignment target")

    def _store(self, target, code: str, lhs) -> None:
        kind, key, ty = target
        if kind == "field":
            f = self.fields[key]
            for ch in key:
                if any(_overlap(ch, r) for r in self.read_chains | self.reduction_targets) or \
                        any(p == ch or p.startswith(ch + ".") for p in self.parent_chains):
                    raise _NoLanes(f"{ch} is read as a lane-invariant value")
                self.assigned_chains.add(ch)
            self.out.append(f"{f['py']} = {code}")
            self.counts.pop(f["py"], None)
            f["dirty"] = True
        else:
            ent = self.vec_locals.get(key)
            if any(p == key or p.startswith(key + ".") for p in self.parent_chains):
                raise _NoLanes(f"{key} holds lane fields")
            if ent is None:
                s = self.scope.lookup(key)
                ent = (self.c.fresh("lv_" + key), ty, s, lhs)
                self.vec_locals[key] = ent
                self.assigned_chains.add(key)
            self.out.append(f"{ent[0]} = {code}")
            self.counts.pop(ent[0], None)
            self.ranges[ent[0]] = self._range(code, ty)
            self.selectors.pop(ent[0], None)    # only expressions carry selectors (never stale)

    def assign(self, lhs, rhs) -> None:
        ch = _chain(lhs)
        if (id(lhs) not in self.varying and ch is not None and ch not in self.vec_locals
                and isinstance(rhs, A.Binary) and rhs.op in _REDUCE and _chain(rhs.l) == ch
                and id(rhs.l) not in self.varying and not self._invariant(rhs.r)):
            return self.reduce(lhs, rhs)
        target = self._target(lhs)
        code, ty = self.vexpr(rhs, target[2])
        if ty != target[2]:
            raise _NoLanes("type mismatch")
        if self._invariant(rhs):        # the same value in every lane
            code = f"np.full({self.k}, {code}, dtype=np.int64)"
        self._store(target, code, lhs)

    def reduce(self, lhs, rhs) -> None:
        ch = _chain(lhs)
        if any(_overlap(ch, x) for x in self.read_chains | self.reduction_targets | self.assigned_chains
               | self.parent_chains):
            raise _NoLanes("reduction target read in the lane body")
        lc, lt, assign = self.c.lvalue(lhs, self.scope)
        lt = self._bits(lt)
        code, ty = self.vexpr(rhs.r, lt)
        if ty != lt:
            raise _NoLanes("type mismatch")
        self.reduction_targets.add(ch)
        lo, hi = self._range(code, ty)
        if rhs.op == "|" and 0 <= lo and hi <= 1:
            # an OR of flags (SA-ATP's overflow bits): count_nonzero is 3x cheaper than a reduce
            red = f"(1 if {self.count_nonzero(code)} else 0)"
        else:
            red = f"int({_REDUCE[rhs.op]}.reduce({code}))"
        self.out.extend(assign(f"({lc} {rhs.op} {red})"))

    def call(self, call: A.Call) -> None:
        if not isinstance(call.func, A.Member) or id(call.func.obj) not in self.varying:
            raise _NoLanes("call of a lane-invariant function")
        insts = []
        for ch in self.varying[id(call.func.obj)]:
            if "." in ch:
                raise _NoLanes("extern is not a plain instance name")
            s = self.scope.lookup(ch)
            if not isinstance(s, InstSym) or s.kind != "extern" or self.c.glob.syms.get(ch) is s:
                raise _NoLanes("not a local extern instance")
            insts.append(s)
        if len({s.py for s in insts}) != len(insts):
            raise _NoLanes("an extern repeats")
        descs = [self.c.hooks.lane_array(s.ty, call.func.name) for s in insts]
        if descs[0] is None or any(d != descs[0] for d in descs):
            raise _NoLanes("not an array access of one kind")
        kind, idx_pos, val_pos, elem, size = descs[0]
        elem = self._bits(elem)
        args = [a.value for a in call.args]
        if len(args) != 2:
            raise _NoLanes("arguments")
        idx = args[idx_pos]
        if not self._invariant(idx):
            raise _NoLanes("lane-varying index")
        islots: list = []
        key = (_skeleton(idx, islots), tuple(islots))
        if self.index is None:
            ic, it = self._scalar(idx, Bits(32))
            if not isinstance(it, Bits):
                raise _NoLanes("index type")
            self.index = (key, ic, it, size)
        elif self.index[0] != key or self.index[3] != size:
            raise _NoLanes("different indices or sizes")
        else:
            self._check_inv_reads(idx)
        bank, rows = self.c.lane_bank(tuple(s.py for s in insts))
        sel = f"{bank}[{rows}, {self.index_py}]" if rows != ":" else f"{bank}[:, {self.index_py}]"
        if kind == "read":
            target = self._target(args[val_pos])
            if target[2] != elem:
                raise _NoLanes("register and destination types differ")
            self._store(target, f"{sel}.copy()" if rows == ":" else sel, args[val_pos])
        elif kind == "write":
            code, ty = self.vexpr(args[val_pos], elem)
            if ty != elem:
                raise _NoLanes("value type")
            self.out.append(f"{sel} = {code}")
        else:
            raise _NoLanes("array access kind")

    # ------------------------------------------------------------ expressions
    def _field(self, node) -> tuple:
        chains = tuple(self.varying[id(node)])
        f = self.fields.get(chains)
        if f is not None:
            return chains
        if not isinstance(node, A.Member):
            raise _NoLanes("lane value is not a field")
        parents = {ch.rsplit(".", 1)[0] for ch in chains}
        names = [ch.rsplit(".", 1)[1] for ch in chains]
        if len(parents) != 1 or len(set(names)) != len(names):
            raise _NoLanes("lane fields of different parents")
        for other in self.fields:
            if set(other) & set(chains):
                raise _NoLanes("overlapping lane field families")
        if any(isinstance(n, A.Call) for n in _walk(node.obj)):
            raise _NoLanes("call in a field's parent")
        for ch in _chains_in(node.obj):
            if any(ch == a or ch.startswith(a + ".") for a in self.assigned_chains | self.reduction_targets):
                raise _NoLanes(f"{ch} is written in the lane body")
            self.parent_chains.add(ch)
        pc, pt = self.c.expr(node.obj, self.scope)
        if not isinstance(pt, (HeaderT, StructT)):
            raise _NoLanes("parent is not a header or struct")
        pys, ty = [], None
        for n in names:
            fl = pt.field(n)
            if fl is None:
                raise _NoLanes("no such field")
            t = self._bits(fl[2])
            if ty is not None and t != ty:
                raise _NoLanes("lane fields of different types")
            ty = t
            pys.append(fl[1])
        ppy = self.c.fresh("lp")
        fpy = self.c.fresh("lf")
        self.out.append(f"{ppy} = {pc}")
        span = _lane_span(pt, pys)
        if span is not None:        # a lane header: its fields are already an int64 array
            lo, hi = span
            # a view: vector code never writes an array in place; the header's array is written
            # only by the tail (lines()), after the locals' values are taken from the vectors
            self.out.append(f"{fpy} = {ppy}._a[{lo}:{hi}]")
            self.fields[chains] = {"py": fpy, "ty": ty, "parent": ppy, "names": pys, "dirty": False,
                                   "span": span}
            return chains
        vals = ", ".join(f"{ppy}.{n}" for n in pys)
        code = _PACK.get((ty.width, ty.signed))
        if code is not None:        # struct packs the K ints faster than numpy converts a tuple
            self.c._uses_struct = True
            self.out.append(f"{fpy} = np.frombuffer(_struct.pack('={len(pys)}{code[0]}', {vals}), "
                            f"'{code[1]}').astype(np.int64)")
        else:
            self.out.append(f"{fpy} = np.array(({vals},), dtype=np.int64)")
        self.fields[chains] = {"py": fpy, "ty": ty, "parent": ppy, "names": pys, "dirty": False}
        return chains

    def vexpr(self, e, want) -> tuple[str, Any]:
        """(code, type) of ``e``: an int64 array when it depends on a lane, else scalar code."""
        if self._invariant(e):
            c, t = self._scalar(e, want)
            if isinstance(t, InfInt) and isinstance(want, Bits):
                c, t = self.c.unify_int(c, t, want, e)
            v = self.c.const_eval(e, self.scope)
            if isinstance(v, int) and isinstance(t, Bits) and not isinstance(v, bool):
                v = _canonical(v, t)
                self.ranges[c] = (v, v)
            else:
                self.ranges.pop(c, None)
            self.selectors.pop(c, None)
            return c, t
        if id(e) in self.varying:
            key = self._field(e)
            f = self.fields[key]
            self.ranges.pop(f["py"], None)      # lane fields hold any value of their type
            return f["py"], f["ty"]
        if isinstance(e, A.Path):
            ent = self.vec_locals.get(e.name)
            if ent is None:
                raise _NoLanes("local read before its lane assignment")
            return ent[0], ent[1]
        if isinstance(e, A.Unary):
            c, t = self.vexpr(e.e, want)
            t = self._bits(t)
            if e.op == "+":
                return c, t
            lo, hi = self._range(c, t)
            if e.op == "-":
                return self._wrap(f"-{c}", t, (-hi, -lo)), t
            if e.op == "~":
                if t.signed:
                    return self._note(f"(~{c})", (~hi, ~lo)), t
                return self._note(f"({c} ^ {self._const(t.mask)})", (t.mask - hi, t.mask - lo)), t
            raise _NoLanes(f"operator {e.op}")
        if isinstance(e, A.Binary):
            return self._binary(e, want)
        raise _NoLanes(f"expression {type(e).__name__}")

    def _range(self, code: str, t) -> tuple[int, int]:
        """The known int64 interval of ``code`` (its type's range when nothing more is known)."""
        r = self.ranges.get(code)
        return r if r is not None else _type_range(t)

    def _note(self, code: str, rng: tuple[int, int], selector: str | None = None) -> str:
        self.ranges[code] = rng
        if selector is None:
            self.selectors.pop(code, None)
        else:
            self.selectors[code] = selector
        return code

    def _wrap(self, code: str, t: Bits, rng: tuple[int, int] | None = None) -> str:
        """``code`` reduced to ``t``'s range, like the scalar code; no operation when ``rng``
        (its interval) is already inside that range."""
        tr = _type_range(t)
        if rng is not None and tr[0] <= rng[0] and rng[1] <= tr[1]:
            return self._note(f"({code})", rng)
        if t.signed:
            h = self._const(1 << (t.width - 1))
            return self._note(f"((({code}) & {self._const(t.mask)} ^ {h}) - {h})", tr)
        return self._note(f"(({code}) & {self._const(t.mask)})", tr)

    def _mux(self, e: A.Binary, want):
        """``(x & ~m) | (y & m)`` (either operand order) where ``m`` is 0 or all ones in each
        lane -- the branchless select of ``p4src/saatp.p4``'s saturating add -- as one
        ``np.where``; None if ``e`` is not that."""
        l, r = e.l, e.r
        if not (isinstance(l, A.Binary) and l.op == "&" and isinstance(r, A.Binary) and r.op == "&"):
            return None
        for a, b in ((l, r), (r, l)):
            for x, notm in ((a.l, a.r), (a.r, a.l)):
                if not (isinstance(notm, A.Unary) and notm.op == "~"):
                    continue
                for y, m in ((b.l, b.r), (b.r, b.l)):
                    mc, mt = self.vexpr(m, want)
                    sel = self.selectors.get(mc)
                    if sel is None or not isinstance(mt, Bits) or mt.signed:
                        continue
                    nc, nt = self.vexpr(notm.e, want)
                    if nc != mc or nt != mt:
                        continue
                    xc, xt = self.vexpr(x, mt)
                    yc, yt = self.vexpr(y, mt)
                    if xt != mt or yt != mt:
                        continue
                    (xl, xh), (yl, yh) = self._range(xc, mt), self._range(yc, mt)
                    # in a lane where m is all ones, x & ~m = 0 and y & m = y; where m = 0, x.
                    # (looked up again: the operands' codes were noted since)
                    sel = self.selectors.get(mc)
                    if sel is None or xl < 0 or yl < 0:
                        continue
                    code = f"np.where({sel}, {yc}, {xc})"
                    if sel.isidentifier():
                        # lanes rarely select y (SA-ATP: only a saturating lane), so y is computed
                        # only when some lane does: one count instead of y's operations and a where
                        code = f"({code} if {self.count_nonzero(sel)} else {xc})"
                    return self._note(code, (min(xl, yl), max(xh, yh))), mt
        return None

    def _binary(self, e: A.Binary, want):
        op = e.op
        if op in ("<<", ">>"):
            lc, lt = self.vexpr(e.l, want)
            lt = self._bits(lt)
            if not self._invariant(e.r):
                raise _NoLanes("lane-varying shift amount")
            v = self.c.const_eval(e.r, self.scope)
            if not isinstance(v, int) or v < 0:
                raise _NoLanes("shift by a non-constant")
            self._scalar(e.r)       # type check and read tracking
            lo, hi = self._range(lc, lt)
            if op == "<<":
                if v >= lt.width:
                    return self._note(f"({lc} * {self._const(0)})", (0, 0)), lt
                return self._wrap(f"{lc} << {self._const(v)}", lt, (lo << v, hi << v)), lt
            if v >= lt.width:
                if lt.signed:
                    w1 = lt.width - 1
                    return self._note(f"({lc} >> {self._const(w1)})", (lo >> w1, hi >> w1)), lt
                return self._note(f"({lc} * {self._const(0)})", (0, 0)), lt
            return self._note(f"({lc} >> {self._const(v)})", (lo >> v, hi >> v)), lt
        if op not in ("+", "-", "*", "&", "|", "^", "|+|", "|-|"):
            raise _NoLanes(f"operator {op}")
        if op == "|":
            mux = self._mux(e, want)
            if mux is not None:
                return mux
        linv, rinv = self._invariant(e.l), self._invariant(e.r)
        if linv and not rinv:
            rc, rt = self.vexpr(e.r, want)
            lc, lt = self.vexpr(e.l, rt)
        else:
            lc, lt = self.vexpr(e.l, want)
            rc, rt = self.vexpr(e.r, lt if isinstance(lt, Bits) else want)
        if isinstance(lt, InfInt) and isinstance(rt, Bits):
            lc, lt = self.c.unify_int(lc, lt, rt, e.l)
        if isinstance(rt, InfInt) and isinstance(lt, Bits):
            rc, rt = self.c.unify_int(rc, rt, lt, e.r)
        t = self._bits(lt)
        if rt != t:
            raise _NoLanes("operand types differ")
        (l0, l1), (r0, r1) = self._range(lc, t), self._range(rc, t)
        if linv:
            lc = self._literal(lc, e.l, t)
        if rinv:
            rc = self._literal(rc, e.r, t)
        if op in ("+", "-", "*"):
            if op == "+":
                rng = (l0 + r0, l1 + r1)
            elif op == "-":
                rng = (l0 - r1, l1 - r0)
            else:
                ps = (l0 * r0, l0 * r1, l1 * r0, l1 * r1)
                rng = (min(ps), max(ps))
            code = self._wrap(f"{lc} {op} {rc}", t, rng)
            if op == "-" and not t.signed and l0 == l1 == 0 and 0 <= r0 and r1 <= 1:
                self.selectors[code] = rc       # 0 - o with o in {0, 1}: 0 or all ones
            return code, t
        if op in ("&", "|", "^"):
            code = f"({lc} {op} {rc})"
            if l0 < 0 or r0 < 0:
                return self._note(code, _type_range(t)), t
            if op == "&":
                return self._note(code, (0, min(l1, r1))), t
            return self._note(code, (0, (1 << max(l1, r1).bit_length()) - 1)), t
        lo, hi = (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask)
        raw = f"{lc} + {rc}" if op == "|+|" else f"{lc} - {rc}"
        # np.minimum/np.maximum: np.clip's Python wrapper costs twice as much over 256 lanes
        return self._note(f"np.minimum(np.maximum({raw}, {self._const(lo)}), {self._const(hi)})", (lo, hi)), t


def _type_range(t) -> tuple[int, int]:
    """The values a lane of type ``t`` holds (int64's range for a type that is not ``Bits``)."""
    if isinstance(t, Bits):
        return (-(1 << (t.width - 1)), (1 << (t.width - 1)) - 1) if t.signed else (0, t.mask)
    return (-(1 << 63), (1 << 63) - 1)


def _canonical(v: int, t: Bits) -> int:
    """``v`` as the lanes hold a ``t`` value (``bit<W>`` in [0, 2^W), ``int<W>`` sign-extended)."""
    v &= t.mask
    if t.signed and v >> (t.width - 1):
        v -= 1 << t.width
    return v


def _lane_span(pt, pys: list) -> tuple[int, int] | None:
    """``(lo, hi)`` when ``pys`` are fields lo..hi-1, in order, of a lane header (its fields are
    one array, see ``header_classes.lane_header_dtype``), else None."""
    if lane_header_dtype(pt) is None:     # lanes only run when vectorising, so it is an array
        return None
    order = [p for _, p, _ in pt.fields]
    try:
        lo = order.index(pys[0])
    except ValueError:
        return None
    if order[lo:lo + len(pys)] != list(pys):
        return None
    return lo, lo + len(pys)


def _debug(msg: str) -> None:
    if os.environ.get("SAATP_P4_LANES_DEBUG"):
        print(msg, file=sys.stderr)


def _overlap(a: str, b: str) -> bool:
    """Do name chains ``a`` and ``b`` name overlapping storage (equal, or one inside the other)?"""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _chains_in(e) -> list[str]:
    slots: list = []
    _skeleton(e, slots)
    return slots


def _walk(x):
    if isinstance(x, A.Node):
        yield x
        for f in dataclasses.fields(x):
            if f.name not in ("loc", "type"):
                yield from _walk(getattr(x, f.name))
    elif isinstance(x, (list, tuple)):
        for i in x:
            yield from _walk(i)
