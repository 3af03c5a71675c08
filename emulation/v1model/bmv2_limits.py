"""What p4c's BMv2 back end (``p4c-bm2-ss`` 1.2.4.8) refuses, reported by the embedded target.

The embedded target runs some programs that the real p4c would not compile for BMv2. So
that a program checked here also compiles with p4c, :func:`check_bmv2_limits` reports these
limits with p4c's own words and diagnostic names, at ``file:line:col``:

* a non-constant shift amount wider than 8 bits, or a constant one over 256
  (``[--Werror=overlimit]``, p4c ``LowerExpressions::shift``);
* a header whose fields do not total a multiple of 8 bits (``[--Werror=target-error]``);
* ``last``, ``next`` and ``lastIndex`` of a header stack outside a parser
  (``[--Werror=type-error]``; P4_16 allows them only in parsers, the target anywhere);
* ``priority=`` on an entry of a table with ``const entries``: p4c 1.2.4.8 predates it
  (``[--Werror=invalid]``);
* ``resubmit(data)``, ``recirculate(data)``, ``clone3(...)``: the back end no longer knows them
  (``[--Werror=unknown]``; the ``*_preserving_field_list`` forms replace them);
* ``if`` and ``switch`` in the deparser (``[--Werror=unsupported]``: "IfStatement: not supported
  within a deparser on this target");
* ``for`` loops (``[--Werror=unsupported]``: "BMV2 does not support loops");
* a method call (extern function or method, ``setValid`` ...), ``exit``, or a ``return``
  followed by one, executed conditionally inside an action: p4c 1.2.4 predicates an ``if``
  in an action into ``?:`` assignments and refuses anything else there
  (``midend/predication.h``: "Conditional execution in actions unsupported on this target",
  ``[--Werror=target-error]``; action and function calls count after inlining, as in p4c);
* a ``switch`` inside an action ("switch statements not supported in actions on this target");
* an instance of an extern the back end has no conversion for, such as v1model's deprecated
  ``Checksum16`` (``[--Werror=unknown]``: "Checksum16: unknown extern instance";
  ``backends/bmv2/common/extern.cpp``, the converters ``simpleSwitch.cpp`` registers);
* in the checksum controls anything but calls of ``verify_checksum``/``update_checksum`` (and
  their ``_with_payload`` forms), and a computation in their data list (``simpleSwitch.cpp``
  convertChecksum: "Only calls to ... allowed", "Computations are not supported in ...");
* ``clone(I2E, ...)``/``clone_preserving_field_list(I2E, ...)`` and
  ``resubmit_preserving_field_list`` outside ingress, their E2E forms and
  ``recirculate_preserving_field_list`` outside egress (``[--Werror=target-error]``);
* ``a ? b : c ? d : e`` without parentheses around the inner ``?:``: p4c's grammar
  (``p4parser.ypp``: ``%precedence QUESTION`` below ``%precedence COLON``) groups it as
  ``(a ? b : c) ? d : e``, and refuses it when ``c`` is not of ``b``'s type (the usual case,
  ``[--Werror=type-error]`` at the first operand); the embedded target reads it the C way,
  ``a ? b : (c ? d : e)``, so it is refused here in every case and must be parenthesized;
* a negative constant as a ``select`` case of a signed (``int<W>``) key: p4c 1.2.4.8 accepts
  it but writes the value as ``"-0x01"`` in the BMv2 JSON, and BMv2 1.15.5 aborts loading it
  (``bytecontainer.h: Assertion hexstring[idx] != '-'``, the golden record of
  ``tests/p4/parser_counter.p4``); selecting on the key's bits (``(bit<W>)key``, ``0xFF``) works.

(A table applied at more than one place in a control is refused by the compiler itself.)

It reads the program's syntax tree after the compiler has run (every expression then carries
its type in ``.type``), so it costs nothing per packet. Programs meant only for the embedded
target skip it: ``allow_target_extensions=True`` in :mod:`emulation.v1model.load`,
``--allow-target-extensions`` on the command line.
"""
from __future__ import annotations

import linecache
import os
from dataclasses import fields, is_dataclass
from typing import Iterator

from emulation.p4 import nodes as A
from emulation.p4.errors import Loc, P4Error
from emulation.p4.preprocess import INCLUDE_DIR
from emulation.p4.types import Bits, InfInt, StackT

MAX_SHIFT_WIDTH = 8     # p4c BMV2::LowerExpressions::maxShiftWidth
# deprecated v1model functions that take a field list as data; p4c 1.2.4.8's BMv2 back end
# refuses them, naming the replacement
_REMOVED_EXTERN_FUNCTIONS = {"resubmit": "resubmit_preserving_field_list",
                             "recirculate": "recirculate_preserving_field_list",
                             "clone3": "clone_preserving_field_list"}


class BMv2LimitError(P4Error):
    """One or more constructs p4c's BMv2 back end refuses; ``errors`` lists each of them."""

    def __init__(self, errors: list[P4Error]):
        super().__init__(errors[0].message, errors[0].loc)
        self.errors = errors

    def __str__(self) -> str:
        lines = [str(e) for e in self.errors]
        lines.append("(p4c's BMv2 back end, or BMv2 loading its output, refuses these; "
                     "--allow-target-extensions runs the program on the embedded target anyway)")
        return "\n".join(lines)


def enforce_bmv2_limits(program: A.Program) -> None:
    """Raise :class:`BMv2LimitError` if the compiled ``program`` exceeds a BMv2 limit."""
    errors = check_bmv2_limits(program)
    if errors:
        raise BMv2LimitError(errors)


def check_bmv2_limits(program: A.Program) -> list[P4Error]:
    """The BMv2 back-end limits ``program`` exceeds, in source order (empty when none)."""
    user = [d for d in program.decls if not _from_include_dir(d)]
    typedefs = {d.name: d for d in program.decls if isinstance(d, (A.TypedefDecl, A.SerEnumDecl))}
    found: list[P4Error] = []
    deparser = _deparser_name(program)
    top_callables = {d.name: d for d in program.decls if isinstance(d, (A.ActionDecl, A.FunctionDecl))}
    roles = _main_roles(program)
    for d in user:
        if isinstance(d, A.ControlDecl) and d.name == deparser:
            found.extend(_deparser_statements(d.body))
        if isinstance(d, A.ControlDecl) and roles.get(d.name) in ("verify", "compute"):
            found.extend(_checksum_control(d.body, roles[d.name] == "verify"))
        if isinstance(d, A.ControlDecl) and roles.get(d.name) in ("ingress", "egress"):
            found.extend(_pipeline_only_calls(d, roles[d.name]))
        if isinstance(d, A.Instantiation) or isinstance(d, (A.ControlDecl, A.ParserDecl)):
            for x in ([d] if isinstance(d, A.Instantiation) else d.locals):
                if isinstance(x, A.Instantiation) and _type_name(x.type) in _UNCONVERTED_EXTERNS:
                    found.append(_err(x, "unknown", f"{_type_name(x.type)}: unknown extern instance (p4c's "
                                                    f"BMv2 back end has no conversion for it)"))
        if isinstance(d, A.ControlDecl):
            local = dict(top_callables)
            local.update({x.name: x for x in d.locals if isinstance(x, (A.ActionDecl, A.FunctionDecl))})
            for x in d.locals:
                if isinstance(x, A.ActionDecl):
                    found.extend(_conditional_in_action(x, local))
        elif isinstance(d, A.ActionDecl):
            found.extend(_conditional_in_action(d, top_callables))
        if isinstance(d, A.HeaderDecl):
            found.extend(_header_width(d, typedefs))
        for node, in_parser in _walk(d, isinstance(d, A.ParserDecl)):
            found.extend(_check_node(node, in_parser))
    return sorted(found, key=lambda e: (e.loc.file, e.loc.line, e.loc.col))


# ------------------------------------------------------------------ the checks
def _check_node(n: object, in_parser: bool) -> list[P4Error]:
    if isinstance(n, A.Binary) and n.op in ("<<", ">>"):
        return _shift(n)
    if isinstance(n, A.Member) and n.name in ("last", "next", "lastIndex") and not in_parser \
            and isinstance(getattr(n.obj, "type", None), StackT):
        what = "'lastIndex'" if n.name == "lastIndex" else "'last', and 'next'"
        return [_err(n, "type-error", f"{show(n)}: {what} for stacks can only be used in a parser")]
    if isinstance(n, A.TableDecl) and n.const_entries:
        # p4c stops at the first such entry of a table
        for e in n.entries or ():
            if e.priority is not None:
                return [_err(e.keyset if getattr(e.keyset, "loc", None) else e, "invalid",
                             "Entry: Table with 'const' entries cannot have priorities")]
    if isinstance(n, A.Call) and isinstance(n.func, A.Path) and n.func.name in _REMOVED_EXTERN_FUNCTIONS:
        name = n.func.name
        return [_err(n, "unknown", f"{name}: unknown extern function (p4c's BMv2 back end no longer "
                                   f"supports it; use {_REMOVED_EXTERN_FUNCTIONS[name]})")]
    if isinstance(n, (A.For, A.ForRange)):
        return [_err(n, "unsupported", "BMV2 does not support loops")]
    if isinstance(n, A.ActionDecl):
        # p4c's BMv2 back end turns an action into a list of primitives: no switch there
        return [_err(x, "unsupported", "SwitchStatement: switch statements not supported in actions on this target")
                for x, _ in _walk(n.body, False) if isinstance(x, A.Switch)][:1]
    if isinstance(n, A.Transition) and n.select:
        return _negative_select_cases(n)
    if isinstance(n, A.Cond) and isinstance(n.f, A.Cond) and _char_before(n.f.loc) == ":":
        return [_err(n, "type-error", f"'?:': p4c groups {show(n.c)} ? {show(n.t)} : {show(n.f.c)} ? ... as "
                                      f"({show(n.c)} ? {show(n.t)} : {show(n.f.c)}) ? ...; put the inner ?: "
                                      f"in parentheses")]
    return []


_PREDICATION = "Conditional execution in actions unsupported on this target"


def _const_bool(e: object):
    """The value of a condition made of boolean literals, !, && and || (else None)."""
    if isinstance(e, A.BoolLit):
        return e.value
    if isinstance(e, A.Unary) and e.op == "!":
        v = _const_bool(e.e)
        return None if v is None else not v
    if isinstance(e, A.Binary) and e.op in ("&&", "||"):
        a, b = _const_bool(e.l), _const_bool(e.r)
        if a is None or b is None:
            return None
        return (a and b) if e.op == "&&" else (a or b)
    return None


def _conditional_in_action(action: A.ActionDecl, callables: dict) -> list[P4Error]:
    """What p4c's Predication pass refuses in ``action``: the first statement other than an
    assignment that runs under an ``if`` (p4c stops at one error per action here too)."""
    found: list[P4Error] = []

    def stmts(body: object, cond: bool, depth: int) -> bool:
        """Walk statements (``cond``: they run under an ``if``); True when a ``return`` under
        an ``if`` was met, which makes what follows conditional (p4c's RemoveReturns guards
        it with the return flag)."""
        items = body.stmts if isinstance(body, A.Block) else [body]
        returned = False
        for st in items:
            if found:
                break
            now = cond or returned
            if isinstance(st, A.Block):
                returned = stmts(st, now, depth) or returned
            elif isinstance(st, A.If) and _const_bool(st.cond) is not None:
                # p4c folds a constant condition first: only the branch taken remains
                taken = st.then if _const_bool(st.cond) else st.orelse
                if taken is not None:
                    returned = stmts(taken, now, depth) or returned
            elif isinstance(st, A.If):
                r1 = stmts(st.then, True, depth)
                r2 = stmts(st.orelse, True, depth) if st.orelse is not None else False
                returned = returned or r1 or r2
            elif isinstance(st, A.Exit) and now:
                found.append(_err(st, "target-error", f"exit: {_PREDICATION}"))
            elif isinstance(st, A.Return):
                return returned or now
            elif isinstance(st, A.CallStmt):
                callee = st.call.func if isinstance(st.call, A.Call) else None
                inner = callables.get(callee.name) if isinstance(callee, A.Path) else None
                if inner is not None and depth < 16:
                    # action and function calls are inlined by p4c's front end (a return in
                    # the callee ends the callee only)
                    stmts(inner.body, now, depth + 1)
                elif now:
                    found.append(_err(st.call, "target-error", f"{show(callee)}: {_PREDICATION}"))
        return returned

    stmts(action.body, False, 0)
    return found[:1]


def _negative_select_cases(t: A.Transition) -> list[P4Error]:
    signed = [isinstance(getattr(k, "type", None), Bits) and k.type.signed for k in t.select]
    out = []
    for case in t.cases:
        ks = case.keyset
        items = ks.items if isinstance(ks, A.KsTuple) else [ks]
        for is_signed, it in zip(signed, items):
            for v in ((it.value, it.mask) if isinstance(it, A.KsMask) else
                      (it.lo, it.hi) if isinstance(it, A.KsRange) else (it,)):
                negative = (isinstance(v, A.Unary) and v.op == "-" and isinstance(v.e, A.IntLit) and v.e.value) \
                    or (isinstance(v, A.IntLit) and v.value < 0)
                if is_signed and negative:
                    out.append(_err(v, "target-error",
                                    f"select case {show(v)}: p4c writes a negative case value as a signed "
                                    f"hex string, which BMv2 cannot load (simple_switch aborts); select on "
                                    f"the key's bits instead, as in select((bit<W>)key) {{ 0xFF: ... }}"))
    return out


def _char_before(loc: Loc | None) -> str:
    """The last non-blank source character before ``loc`` (earlier lines included), or ""."""
    if loc is None or not loc.file:
        return ""
    line, col = loc.line, loc.col - 1
    while line >= 1:
        text = linecache.getline(loc.file, line)[:col] if col >= 0 else linecache.getline(loc.file, line)
        text = text.split("//", 1)[0].rstrip()
        if text:
            return text[-1]
        line, col = line - 1, -1
    return ""


def _shift(n: A.Binary) -> list[P4Error]:
    rt = getattr(n.r, "type", None)
    if isinstance(rt, InfInt) and isinstance(n.r, A.IntLit) and n.r.value > 1 << MAX_SHIFT_WIDTH:
        return [_err(n, "overlimit", f"{show(n)}: shift amount limited to {1 << MAX_SHIFT_WIDTH} on this target")]
    if isinstance(rt, Bits) and rt.width > MAX_SHIFT_WIDTH and not _is_literal(n.r):
        return [_err(n, "overlimit", f"{show(n)}: shift amount limited to {MAX_SHIFT_WIDTH} bits on this target")]
    return []


def _header_width(d: A.HeaderDecl, typedefs: dict) -> list[P4Error]:
    total = 0
    for f in d.fields:
        w = _type_width(f.type, typedefs)
        if w is None:
            return []       # a width only the compiler knows (a constant expression): no verdict
        total += w
    if total % 8:
        return [_err(_NameAt(_name_loc(d)), "target-error", f"header {d.name}: Found header with fields totaling {total} bits.  "
                                        f"BMv2 target only supports headers with fields totaling a multiple "
                                        f"of 8 bits.")]
    return []


# v1model externs p4c-bm2-ss has no converter for (simpleSwitch.cpp registers counter,
# direct_counter, meter, direct_meter, register, action_profile, action_selector)
_UNCONVERTED_EXTERNS = {"Checksum16"}
_MAIN_ROLES = ("parser", "verify", "ingress", "egress", "compute", "deparser")


def _type_name(t: object) -> str:
    if isinstance(t, A.TSpecialized):
        t = t.base
    return t.name if isinstance(t, A.TName) else ""


def _main_roles(program: A.Program) -> dict[str, str]:
    """Control/parser type name -> its V1Switch role (``ingress``, ``verify`` ...)."""
    for d in program.decls:
        if isinstance(d, A.Instantiation) and d.name == "main" and len(d.args) == 6:
            out = {}
            for role, a in zip(_MAIN_ROLES, d.args):
                a = a.value if isinstance(a, A.Arg) else a
                if isinstance(a, A.CtorCall):
                    out.setdefault(a.tname, role)
            return out
    return {}


_CHECKSUM_CALLS = {True: ("verify_checksum", "verify_checksum_with_payload"),
                   False: ("update_checksum", "update_checksum_with_payload")}


def _stmt_text(st: object) -> str:
    if isinstance(st, A.CallStmt) and isinstance(st.call, A.Call):
        return show(st.call.func)
    if isinstance(st, A.Assign):
        return f"{show(st.lhs)} = {show(st.rhs)}"
    return {A.If: "IfStatement", A.Switch: "SwitchStatement", A.Exit: "exit", A.Return: "return"}.get(
        type(st), type(st).__name__)


def _checksum_control(body: A.Block, verify: bool) -> list[P4Error]:
    """p4c's BMv2 back end turns a checksum control into a list of checksum objects: only
    calls of the two checksum functions, with a data list of fields and constants."""
    names = _CHECKSUM_CALLS[verify]
    out: list[P4Error] = []
    for st in body.stmts if isinstance(body, A.Block) else [body]:
        if isinstance(st, A.Block):
            out.extend(_checksum_control(st, verify))
            continue
        if isinstance(st, A.Empty):
            continue
        call = st.call if isinstance(st, A.CallStmt) else None
        if isinstance(call, A.Call) and isinstance(call.func, A.Path) and call.func.name in names:
            if len(call.args) >= 2:
                data = call.args[1].value if isinstance(call.args[1], A.Arg) else call.args[1]
                bad = _computation(data)
                if bad is not None:
                    out.append(_err(bad, "unsupported", f"{show(bad)}: Computations are not supported in "
                                                        f"{names[0]}"))
            continue
        out.append(_err(st.call if isinstance(st, A.CallStmt) else st, "unsupported",
                        f"{_stmt_text(st)}: Only calls to {names[0]} or {names[1]} allowed"))
    return out


def _computation(e: object) -> object | None:
    """The first part of a checksum data list that is not a field, a constant, a list or a
    struct expression (p4c's EnsureExpressionIsSimple), or None."""
    if isinstance(e, (A.ListExpr, A.StructExpr)):
        for it in e.items:
            it = it[1] if isinstance(it, tuple) else it
            bad = _computation(it)
            if bad is not None:
                return bad
        return None
    if isinstance(e, (A.Path, A.Member, A.IntLit, A.TypeMember)):
        return None
    if isinstance(e, A.Index):
        return None
    if isinstance(e, A.Cast) and _is_literal(e):
        return None            # folded to a constant by p4c
    return e


def _pipeline_only_calls(control: A.ControlDecl, role: str) -> list[P4Error]:
    """clone/resubmit/recirculate where simple_switch cannot run them (simpleSwitch.cpp)."""
    out: list[P4Error] = []
    for n, _ in _walk([control.locals, control.body], False):
        if not (isinstance(n, A.Call) and isinstance(n.func, A.Path)):
            continue
        name = n.func.name
        args = [a.value if isinstance(a, A.Arg) else a for a in n.args]
        kind = None
        if name in ("clone", "clone_preserving_field_list") and args:
            ct = args[0]
            kind = ct.name if isinstance(ct, A.TypeMember) else None
        if kind == "I2E" and role != "ingress":
            out.append(_err(n, "target-error", f"'{name}(I2E, ...) not invoked in ingress {name}"))
        elif kind == "E2E" and role != "egress":
            out.append(_err(n, "target-error", f"'{name}(E2E, ...) not invoked in egress {name}"))
        elif name == "resubmit_preserving_field_list" and role != "ingress":
            out.append(_err(n, "target-error", f"'resubmit' can only be invoked in ingress {name}"))
        elif name == "recirculate_preserving_field_list" and role != "egress":
            # (sic: p4c words the egress-only recirculate like resubmit)
            out.append(_err(n, "target-error", f"'resubmit' can only be invoked in egress {name}"))
    return out


def _deparser_name(program: A.Program) -> str | None:
    """The control type given as the sixth (deparser) argument of ``V1Switch(...) main``."""
    for d in program.decls:
        if isinstance(d, A.Instantiation) and d.name == "main" and len(d.args) == 6:
            a = d.args[5]
            a = a.value if isinstance(a, A.Arg) else a
            if isinstance(a, A.CtorCall):
                return a.tname
    return None


def _deparser_statements(body: A.Block) -> list[P4Error]:
    """BMv2 deparsers only emit: p4c refuses an ``if`` or a ``switch`` there."""
    out = []
    for n, _ in _walk(body, False):
        kind = {A.If: "IfStatement", A.Switch: "SwitchStatement"}.get(type(n))
        if kind:
            out.append(_err(n, "unsupported", f"{kind}: not supported within a deparser on this target"))
    return out


# ------------------------------------------------------------------ helpers
def _err(node: object, kind: str, message: str) -> P4Error:
    loc = getattr(node, "loc", None) or Loc("<unknown>", 0, 0)
    return P4Error(f"[--Werror={kind}] error: {message}", loc)


class _NameAt:
    def __init__(self, loc: Loc):
        self.loc = loc


def _name_loc(d: A.Decl) -> Loc:
    """Where the declared name is (p4c points there, not at the keyword before it)."""
    loc = d.loc
    text = linecache.getline(loc.file, loc.line)
    i = text.find(d.name, max(loc.col - 1, 0))
    return Loc(loc.file, loc.line, i + 1) if i >= 0 else loc


def _from_include_dir(d: object) -> bool:
    loc = getattr(d, "loc", None)
    if loc is None or not loc.file or loc.file.startswith("<"):
        return False
    return os.path.dirname(os.path.abspath(loc.file)) == os.path.abspath(INCLUDE_DIR)


def _is_literal(e: object) -> bool:
    while isinstance(e, A.Cast):
        e = e.e
    # a call of a function that returns one constant: p4c inlines it and propagates the value
    return isinstance(e, A.IntLit) or getattr(e, "const_value", None) is not None


def _type_width(t: object, typedefs: dict, depth: int = 0) -> int | None:
    if isinstance(t, A.TBit):
        return t.width if isinstance(t.width, int) else (t.width.value if isinstance(t.width, A.IntLit) else None)
    if isinstance(t, A.TVarBit):
        return t.width if isinstance(t.width, int) else (t.width.value if isinstance(t.width, A.IntLit) else None)
    if isinstance(t, A.TBool):
        return 1
    if isinstance(t, A.TName) and depth < 16:
        d = typedefs.get(t.name)
        if d is not None:
            return _type_width(d.type, typedefs, depth + 1)
    return None


def _walk(node: object, in_parser: bool) -> Iterator[tuple[object, bool]]:
    """Every syntax-tree node under ``node`` (itself included), with whether it is in a parser."""
    stack = [(node, in_parser)]
    while stack:
        n, p = stack.pop()
        if isinstance(n, list):
            stack.extend((x, p) for x in reversed(n))
            continue
        if isinstance(n, tuple):
            stack.extend((x, p) for x in reversed(n))
            continue
        if not is_dataclass(n) or isinstance(n, type):
            continue
        yield n, p
        inner = p or isinstance(n, A.ParserDecl)
        if isinstance(n, (A.ControlDecl, A.ActionDecl, A.FunctionDecl)):
            inner = False
        for f in reversed(fields(n)):
            if f.name in ("loc", "type"):
                continue
            v = getattr(n, f.name)
            if isinstance(v, (list, tuple)) or (is_dataclass(v) and not isinstance(v, type)):
                stack.append((v, inner))
            elif isinstance(v, dict) and f.name == "props":
                stack.extend((x, inner) for x in v.values())


def show(e: object) -> str:
    """An expression as p4c prints it in a message (``hdr.sa.bitmap >> sm.egress_rid``)."""
    if isinstance(e, A.Path):
        return ("." if e.top else "") + e.name
    if isinstance(e, A.Member):
        return f"{show(e.obj)}.{e.name}"
    if isinstance(e, A.TypeMember):
        return f"{e.tname}.{e.name}"
    if isinstance(e, A.Index):
        return f"{show(e.obj)}[{show(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{show(e.obj)}[{show(e.hi)}:{show(e.lo)}]"
    if isinstance(e, A.IntLit):
        return (f"{e.width}{'s' if e.signed else 'w'}" if e.width is not None else "") + str(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Binary):
        return f"{show(e.l)} {e.op} {show(e.r)}"
    if isinstance(e, A.Unary):
        return f"{e.op}{show(e.e)}"
    if isinstance(e, A.Cast):
        return f"({_show_type(e.to)}){show(e.e)}"
    if isinstance(e, A.Call):
        return f"{show(e.func)}({', '.join(show(a.value) if isinstance(a, A.Arg) else show(a) for a in e.args)})"
    if isinstance(e, A.Cond):
        return f"{show(e.c)} ? {show(e.t)} : {show(e.f)}"
    return "..."


def _show_type(t: object) -> str:
    if isinstance(t, A.TBit):
        w = t.width if isinstance(t.width, int) else show(t.width)
        return f"{'int' if t.signed else 'bit'}<{w}>"
    if isinstance(t, A.TName):
        return t.name
    if isinstance(t, A.TBool):
        return "bool"
    return "..."
