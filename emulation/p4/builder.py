"""lark parse tree -> P4_16 AST (:mod:`.nodes`): the :class:`Builder` transformer.

It also checks what the grammar alone cannot (literal widths, annotation bodies, ...) and
raises :class:`~emulation.p4.errors.P4Error` with the source location.
"""
from __future__ import annotations

import copy
import re
from typing import Optional, Self

from lark import Token, Transformer, v_args

from .errors import Loc, P4Error
from .nodes import (Node, TBit, TVarBit, TInfInt, TBool, TError, TString, TVoid, TDontCare, TName,
                    TSpecialized, TStack, TTuple, IntLit, BoolLit, StrLit, Path, Member,
                    TypeMember, Index, Slice, Call, Arg, CtorCall, Unary, Binary, Cond, Cast,
                    ListExpr, StructExpr, InvalidExpr, KsMask, KsRange, KsDefault, KsTuple, Assign,
                    CallStmt, If, Block, Exit, Return, Empty, For, ForRange, Break, Continue,
                    SwitchCase, Switch, Param, ConstDecl, VarDecl, Instantiation, Field,
                    HeaderDecl, StructDecl, EnumDecl, SerEnumDecl, TypedefDecl, ErrorDecl,
                    MatchKindDecl, FunctionDecl, Method, ExternDecl, ExternFunction, PackageDecl,
                    BlockTypeDecl, SelectCase, Transition, ParserState, ValueSetDecl, ParserDecl,
                    ActionDecl, KeyElem, ActionRef, Entry, TableDecl, ControlDecl, Program)


def _int_literal(text: str) -> tuple[int, Optional[int], bool]:
    """Value, width (None if infinite precision) and signedness of an integer literal."""
    t = text.replace("_", "")
    width, signed = None, False
    for sep in ("w", "s"):
        if sep in t and t[0].isdigit() and not t.lower().startswith(("0x", "0b", "0o", "0d")):
            w, _, rest = t.partition(sep)
            width, signed, t = int(w), sep == "s", rest
            break
    low = t.lower()
    if low.startswith("0x"):
        v = int(low[2:], 16)
    elif low.startswith("0b"):
        v = int(low[2:], 2)
    elif low.startswith("0o"):
        v = int(low[2:], 8)
    elif low.startswith("0d"):
        v = int(low[2:], 10)
    else:
        v = int(low, 10)
    return v, width, signed


_ANNS_END = " end"      # key of the annotations dict: where the last annotation ends
_SKIP = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)     # blanks and comments


class NameAt(str):
    """A name (a ``str``) that remembers where it is written."""
    loc: Loc

    def __new__(cls, text: str, loc: Loc) -> Self:
        s = super().__new__(cls, text)
        s.loc = loc
        return s

    def __reduce__(self):
        return NameAt, (str(self), self.loc)


class Builder(Transformer):
    """lark tree -> AST.  ``src`` maps token positions to source locations."""

    def __init__(self, src):
        super().__init__(visit_tokens=False)
        self.src = src

    # -- helpers
    def _loc(self, x) -> Loc:
        if isinstance(x, Token):
            return self.src.loc(x.line, x.column)
        if isinstance(x, Node):
            return x.loc
        meta = getattr(x, "meta", None)
        if meta is not None and not getattr(meta, "empty", True):
            return self.src.loc(meta.line, meta.column)
        return Loc(self.src.filename, 0, 0)

    def _mloc(self, meta, children=()) -> Loc:
        if children and isinstance(children[0], dict) and _ANNS_END in children[0]:
            # a declaration starts after its annotations, where p4c points (the keyword or name
            # line, also when the annotations stand on lines of their own)
            loc = self._after(children[0][_ANNS_END])
            if loc is not None:
                return loc
        if meta is not None and not getattr(meta, "empty", True):
            return self.src.loc(meta.line, meta.column)
        for c in children:
            if isinstance(c, Token):
                return self.src.loc(c.line, c.column)
            if isinstance(c, Node) and c.loc is not None:
                return c.loc
        return Loc(self.src.filename, 0, 0)

    def _after(self, pos: int) -> Loc | None:
        """The location of the first token at or after offset ``pos`` of the expanded text."""
        m = _SKIP.match(self.src.text, pos)
        p = m.end()
        if p >= len(self.src.text):
            return None
        text = self.src.text
        line = text.count("\n", 0, p) + 1
        return self.src.loc(line, p - (text.rfind("\n", 0, p) + 1) + 1)

    def _word_loc(self, meta, pattern: str) -> Loc | None:
        """Where group 1 of ``pattern`` first matches inside the text of rule ``meta`` (when on
        the rule's first line): p4c points at declared names, the rule starts at a keyword."""
        if meta is None or getattr(meta, "empty", True):
            return None
        text = self.src.text[meta.start_pos:meta.end_pos]
        m = re.search(pattern, text)
        if m is None or "\n" in text[:m.start(1)]:
            return None
        return self.src.loc(meta.line, meta.column + m.start(1))

    @staticmethod
    def _split(children):
        """Separate annotations (dict) from the other children (tokens and nodes)."""
        anns: dict = {}
        rest = []
        for c in children:
            if isinstance(c, dict) and c.get("__anns__"):
                anns.update({k: v for k, v in c.items() if k not in ("__anns__", _ANNS_END)})
            else:
                rest.append(c)
        return anns, rest

    def _tok_texts(self, body) -> str:
        return " ".join(t.value for t in body)

    # -- annotations and names
    def anns(self, children):
        d = {"__anns__": True, _ANNS_END: max(t.end_pos for t in children)}
        for t in children:
            name, body = t.value
            d[name] = body
        return d

    @v_args(meta=True)
    def name(self, meta, c):
        if c:
            return str(c[0])
        return self.src.text[meta.start_pos:meta.end_pos]   # a contextual keyword used as a name

    nontype_name = name

    def r_angle(self, c):
        return None

    # -- types
    @v_args(meta=True)
    def type_name(self, meta, c):
        return TName(loc=self._mloc(meta, c), name=str(c[0]))

    @v_args(meta=True)
    def dot_type_name(self, meta, c):
        return TName(loc=self._mloc(meta, c), name=str(c[0]))

    @v_args(meta=True)
    def specialized_type(self, meta, c):
        return TSpecialized(loc=self._mloc(meta, c), base=c[0], args=c[2])

    @v_args(meta=True)
    def stack_type(self, meta, c):
        return TStack(loc=self._mloc(meta, c), elem=c[0], size=c[1])

    @v_args(meta=True)
    def tuple_type(self, meta, c):
        return TTuple(loc=self._mloc(meta, c), args=c[1])

    def type_args(self, c):
        return list(c)

    @v_args(meta=True)
    def bool_type(self, meta, c):
        return TBool(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def error_type(self, meta, c):
        return TError(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def string_type(self, meta, c):
        return TString(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def int_inf_type(self, meta, c):
        return TInfInt(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def bit1_type(self, meta, c):
        return TBit(loc=self._mloc(meta, c), width=1)

    def _width(self, c):
        w = [x for x in c[1:] if x is not None and not (isinstance(x, Token) and x.value in "<>()")]
        w = w[0]
        if isinstance(w, Token):
            return _int_literal(w.value)[0]
        return w

    @v_args(meta=True)
    def bit_type(self, meta, c):
        return TBit(loc=self._mloc(meta, c), width=self._width(c))

    @v_args(meta=True)
    def int_type(self, meta, c):
        return TBit(loc=self._mloc(meta, c), width=self._width(c), signed=True)

    @v_args(meta=True)
    def varbit_type(self, meta, c):
        return TVarBit(loc=self._mloc(meta, c), width=self._width(c))

    @v_args(meta=True)
    def dontcare_type(self, meta, c):
        return TDontCare(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def void_type(self, meta, c):
        return TVoid(loc=self._mloc(meta, c))

    def type_params(self, c):
        return [str(x) for x in c if isinstance(x, Token) and x.type == "TYPE_IDENTIFIER"]

    # -- params
    def direction(self, c):
        return str(c[0])

    @v_args(meta=True)
    def param(self, meta, c):
        anns, rest = self._split(c)
        d = ""
        if isinstance(rest[0], str) and rest[0] in ("in", "out", "inout"):
            d = rest.pop(0)
        elif rest[0] is None:
            rest.pop(0)
        t, n = rest[0], rest[1]
        default = rest[2] if len(rest) > 2 else None
        p = Param(loc=self._mloc(meta, c), name=n, annotations=anns, direction=d, type=t, default=default)
        p.name_loc = self._word_loc(meta, r"\b(" + re.escape(n) + r")\s*(?:=|$)")
        return p

    def params(self, c):
        ps = [p for p in c if p is not None]
        seen = set()
        for p in ps:
            if p.name in seen:   # p4c: "Duplicates declaration", at the second parameter's name
                raise P4Error(f"{p.name}: duplicate parameter name", getattr(p, "name_loc", None) or p.loc)
            seen.add(p.name)
        return ps

    def ctor_params(self, c):
        return c[0]

    # -- declarations
    @v_args(meta=True)
    def const_decl(self, meta, c):
        anns, rest = self._split(c)
        return ConstDecl(loc=self._mloc(meta, c), name=rest[1], annotations=anns, type=rest[0], value=rest[2])

    @v_args(meta=True)
    def var_decl(self, meta, c):
        anns, rest = self._split(c)
        return VarDecl(loc=self._mloc(meta, c), name=rest[1], annotations=anns, type=rest[0],
                       init=rest[2] if len(rest) > 2 else None)

    @v_args(meta=True)
    def instantiation(self, meta, c):
        anns, rest = self._split(c)
        if len(rest) > 3 and rest[3] is not None:
            raise P4Error("instantiations with an initializer block (abstract methods) are not supported",
                          self._mloc(meta, c))
        return Instantiation(loc=self._mloc(meta, c), name=rest[2], annotations=anns, type=rest[0],
                             args=rest[1] or [])

    def _fields_decl(self, cls, meta, c):
        anns, rest = self._split(c)
        name = str(rest[0])
        fields = [x for x in rest[1:] if isinstance(x, Field)]
        return cls(loc=self._mloc(meta, c), name=name, annotations=anns, fields=fields)

    @v_args(meta=True)
    def header_decl(self, meta, c):
        return self._fields_decl(HeaderDecl, meta, c)

    @v_args(meta=True)
    def struct_decl(self, meta, c):
        return self._fields_decl(StructDecl, meta, c)

    @v_args(meta=True)
    def union_decl(self, meta, c):
        d = self._fields_decl(StructDecl, meta, c)
        d.union = True
        return d

    @v_args(meta=True)
    def field(self, meta, c):
        anns, rest = self._split(c)
        return Field(loc=self._mloc(meta, c), name=rest[1], annotations=anns, type=rest[0])

    @v_args(meta=True)
    def enum_decl(self, meta, c):
        anns, rest = self._split(c)
        members = [x for x in rest[1:] if isinstance(x, str) and not isinstance(x, Token)]
        self._unique_members(meta, members, f"enum {rest[0]}")
        return EnumDecl(loc=self._mloc(meta, c), name=str(rest[0]), annotations=anns, members=members)

    @v_args(meta=True)
    def senum_decl(self, meta, c):
        anns, rest = self._split(c)
        return SerEnumDecl(loc=self._mloc(meta, c), name=str(rest[1]), annotations=anns, type=rest[0],
                           members=[x for x in rest[2:] if isinstance(x, tuple)])

    def senum_member(self, c):
        anns, rest = self._split(c)
        return (rest[0], rest[1])

    @v_args(meta=True)
    def typedef_decl(self, meta, c):
        anns, rest = self._split(c)
        return TypedefDecl(loc=self._mloc(meta, c), name=rest[1], annotations=anns, type=rest[0])

    @v_args(meta=True)
    def newtype_decl(self, meta, c):
        anns, rest = self._split(c)
        return TypedefDecl(loc=self._mloc(meta, c), name=rest[1], annotations=anns, type=rest[0], newtype=True)

    @v_args(meta=True)
    def error_decl(self, meta, c):
        members = [x for x in c if isinstance(x, str) and not isinstance(x, Token)]
        self._unique_members(meta, members, "error")
        return ErrorDecl(loc=self._mloc(meta, c), members=members)

    def _unique_members(self, meta, members: list, what: str) -> None:
        """The names of an error or enum declaration are distinct (p4c: "Duplicates
        declaration", at the second one)."""
        seen = set()
        for m in members:
            if m in seen:
                text = self.src.text[meta.start_pos:meta.end_pos]
                hits = [h.start() for h in re.finditer(r"\b" + re.escape(m) + r"\b", text)]
                pos = hits[1] if len(hits) > 1 else 0
                nl = text.rfind("\n", 0, pos)
                line = meta.line + text.count("\n", 0, pos)
                col = pos - nl if nl >= 0 else meta.column + pos
                raise P4Error(f"{m}: duplicate member of {what}", self.src.loc(line, col))
            seen.add(m)

    @v_args(meta=True)
    def match_kind_decl(self, meta, c):
        members = [x for x in c if isinstance(x, str) and not isinstance(x, Token)]
        self._unique_members(meta, members, "match_kind")
        return MatchKindDecl(loc=self._mloc(meta, c), members=members)

    @v_args(meta=True)
    def function_decl(self, meta, c):
        anns, rest = self._split(c)
        rest = [x for x in rest if x is not None]
        ret = rest[0]
        if isinstance(ret, Token):
            ret = TVoid(loc=self._loc(ret))
        name = rest[1]
        tps = rest[2] if len(rest) == 5 else []
        return FunctionDecl(loc=self._mloc(meta, c), name=name, annotations=anns, ret=ret, type_params=tps,
                            params=rest[-2], body=rest[-1])

    @v_args(meta=True)
    def extern_object(self, meta, c):
        anns, rest = self._split(c)
        rest = [x for x in rest if x is not None]
        name = str(rest[0])
        tps = rest[1] if len(rest) > 1 and isinstance(rest[1], list) else []
        methods = [m for m in rest if isinstance(m, Method)]
        return ExternDecl(loc=self._mloc(meta, c), name=name, annotations=anns, type_params=tps, methods=methods)

    @v_args(meta=True)
    def extern_function(self, meta, c):
        anns, rest = self._split(c)
        rest = [x for x in rest if x is not None]
        ret = rest[0]
        if isinstance(ret, Token):
            ret = TVoid(loc=self._loc(ret))
        tps = rest[2] if len(rest) == 4 else []
        return ExternFunction(loc=self._mloc(meta, c), name=rest[1], annotations=anns, ret=ret,
                              type_params=tps, params=rest[-1])

    def _method(self, meta, c, abstract=False):
        anns, rest = self._split(c)
        rest = [x for x in rest if x is not None]
        ret = rest[0]
        if isinstance(ret, Token):
            ret = TVoid(loc=self._loc(ret))
        tps = rest[2] if len(rest) == 4 else []
        return Method(loc=self._mloc(meta, c), name=rest[1], annotations=anns, ret=ret, type_params=tps,
                      params=rest[-1], abstract=abstract)

    @v_args(meta=True)
    def method(self, meta, c):
        return self._method(meta, c)

    @v_args(meta=True)
    def abstract_method(self, meta, c):
        return self._method(meta, c, True)

    @v_args(meta=True)
    def ctor(self, meta, c):
        anns, rest = self._split(c)
        return Method(loc=self._mloc(meta, c), name=str(rest[0]), annotations=anns, params=rest[1], is_ctor=True)

    @v_args(meta=True)
    def package_decl(self, meta, c):
        anns, rest = self._split(c)
        rest = [x for x in rest if x is not None]
        tps = rest[1] if len(rest) == 3 else []
        return PackageDecl(loc=self._mloc(meta, c), name=str(rest[0]), annotations=anns, type_params=tps,
                           params=rest[-1])

    def _block_type(self, kind, meta, c):
        anns, rest = self._split(c)
        rest = [x for x in rest if x is not None]
        tps = rest[1] if len(rest) == 3 else []
        return BlockTypeDecl(loc=self._mloc(meta, c), name=str(rest[0]), annotations=anns, kind=kind,
                             type_params=tps, params=rest[-1])

    @v_args(meta=True)
    def parser_type_decl(self, meta, c):
        return self._block_type("parser", meta, c)

    @v_args(meta=True)
    def control_type_decl(self, meta, c):
        return self._block_type("control", meta, c)

    @v_args(meta=True)
    def parser_decl(self, meta, c):
        anns, rest = self._split(c)
        name = str(rest[0])
        rest = rest[1:]
        tps = []
        if rest and isinstance(rest[0], list) and all(isinstance(x, str) for x in rest[0]) and rest[0] and \
                not isinstance(rest[0][0], Param):
            tps = rest.pop(0)
        elif rest and rest[0] is None:
            rest.pop(0)
        params = rest.pop(0)
        ctor = []
        if rest and isinstance(rest[0], list):
            ctor = rest.pop(0)
        elif rest and rest[0] is None:
            rest.pop(0)
        states = [x for x in rest if isinstance(x, ParserState)]
        locs = [x for x in rest if isinstance(x, Node) and not isinstance(x, ParserState)]
        return ParserDecl(loc=self._mloc(meta, c), name=name, annotations=anns, type_params=tps, params=params,
                          ctor_params=ctor, locals=locs, states=states)

    @v_args(meta=True)
    def value_set_decl(self, meta, c):
        anns, rest = self._split(c)
        rest = [x for x in rest if x is not None and not (isinstance(x, Token) and x.type == "TA_LT")]
        return ValueSetDecl(loc=self._mloc(meta, c), name=rest[-1], annotations=anns, type=rest[0], size=rest[1])

    @v_args(meta=True)
    def parser_state(self, meta, c):
        anns, rest = self._split(c)
        name = rest[0]
        trans = rest[-1] if len(rest) > 1 and isinstance(rest[-1], Transition) else None
        stmts = [x for x in rest[1:len(rest) - (trans is not None)] if x is not None]
        if trans is None:
            # no transition statement: the state goes to reject (P4_16 spec 1.2.5, 13.5)
            trans = Transition(loc=self._mloc(meta, c), state="reject", implicit=True)
        return ParserState(loc=self._mloc(meta, c), name=name, annotations=anns, stmts=stmts, transition=trans,
                           name_loc=self._word_loc(meta, r"\bstate\s+(" + re.escape(name) + r")\b"))

    @v_args(meta=True)
    def transition_direct(self, meta, c):
        return Transition(loc=self._mloc(meta, c), state=c[0])

    @v_args(meta=True)
    def transition_select(self, meta, c):
        return Transition(loc=self._mloc(meta, c), select=c[0], cases=[x for x in c[1:] if isinstance(x, SelectCase)])

    @v_args(meta=True)
    def select_case(self, meta, c):
        return SelectCase(loc=self._mloc(meta, c), keyset=c[0], state=c[1])

    @v_args(meta=True)
    def tuple_keyset(self, meta, c):
        return KsTuple(loc=self._mloc(meta, c), items=list(c))

    @v_args(meta=True)
    def ks_mask(self, meta, c):
        return KsMask(loc=self._mloc(meta, c), value=c[0], mask=c[1])

    @v_args(meta=True)
    def ks_range(self, meta, c):
        return KsRange(loc=self._mloc(meta, c), lo=c[0], hi=c[1])

    @v_args(meta=True)
    def ks_default(self, meta, c):
        return KsDefault(loc=self._mloc(meta, c))

    ks_dontcare = ks_default

    @v_args(meta=True)
    def control_decl(self, meta, c):
        anns, rest = self._split(c)
        name = str(rest[0])
        rest = rest[1:]
        tps = []
        if rest and rest[0] is None:
            rest.pop(0)
        elif rest and isinstance(rest[0], list) and rest[0] and isinstance(rest[0][0], str):
            tps = rest.pop(0)
        params = rest.pop(0)
        ctor = []
        if rest and rest[0] is None:
            rest.pop(0)
        elif rest and isinstance(rest[0], list):
            ctor = rest.pop(0)
        body = rest[-1]
        locs = [x for x in rest[:-1] if isinstance(x, Node)]
        return ControlDecl(loc=self._mloc(meta, c), name=name, annotations=anns, type_params=tps, params=params,
                           ctor_params=ctor, locals=locs, body=body)

    @v_args(meta=True)
    def action_decl(self, meta, c):
        anns, rest = self._split(c)
        return ActionDecl(loc=self._mloc(meta, c), name=rest[0], annotations=anns, params=rest[1], body=rest[2])

    @v_args(meta=True)
    def table_decl(self, meta, c):
        anns, rest = self._split(c)
        t = TableDecl(loc=self._mloc(meta, c), name=rest[0], annotations=anns)
        t.name_loc = self._word_loc(meta, r"\btable\s+(" + re.escape(rest[0]) + r")\b") or t.loc
        for kind, val, is_const, loc, *prop_anns in rest[1:]:
            if prop_anns and prop_anns[0]:
                t.prop_annotations[kind] = prop_anns[0]
            if kind == "key":
                t.keys, t.key_loc = val, loc
                t.key_after_entries = t.entries is not None
            elif kind == "actions":
                t.actions = val
            elif kind == "entries":
                t.entries = val
                t.const_entries = is_const
            else:
                t.props[kind] = (val, is_const, loc)
        return t

    @v_args(meta=True)
    def key_prop(self, meta, c):
        anns, rest = self._split(c)
        return ("key", [x for x in rest if isinstance(x, KeyElem)], False, self._mloc(meta, c))

    @v_args(meta=True)
    def actions_prop(self, meta, c):
        anns, rest = self._split(c)
        return ("actions", [x for x in rest if isinstance(x, ActionRef)], False, self._mloc(meta, c))

    @v_args(meta=True)
    def entries_prop(self, meta, c):
        anns, rest = self._split(c)
        is_const = any(isinstance(x, Token) and x.type == "CONST" for x in rest)
        return ("entries", [x for x in rest if isinstance(x, Entry)], is_const, self._mloc(meta, c))

    @v_args(meta=True)
    def simple_prop(self, meta, c):
        anns, rest = self._split(c)
        is_const = False
        if isinstance(rest[0], Token) and rest[0].type == "CONST":
            is_const = True
            rest = rest[1:]
        elif rest[0] is None:
            rest = rest[1:]
        return (rest[0], rest[1], is_const, self._mloc(meta, c), anns)

    @v_args(meta=True)
    def key_elem(self, meta, c):
        anns, rest = self._split(c)
        return KeyElem(loc=self._mloc(meta, c), expr=rest[0], match_kind=rest[1], annotations=anns)

    @v_args(meta=True)
    def action_name(self, meta, c):
        return NameAt(c[0], self._mloc(meta, c))

    dot_action_name = action_name

    @v_args(meta=True)
    def action_ref(self, meta, c):
        anns, rest = self._split(c)
        args = rest[1] if len(rest) > 1 else None
        if len(rest) > 1 and args is None:
            args = []
        return ActionRef(loc=self._mloc(meta, c), name=rest[0], args=args, annotations=anns)

    def entry_priority(self, c):
        return ("prio", c[-1])

    def _entry(self, meta, c, has_args):
        anns, rest = self._split(c)
        prio = None
        if rest and rest[0] is None:
            rest = rest[1:]
        if rest and isinstance(rest[0], tuple) and rest[0][0] == "prio":
            prio = rest[0][1]
            rest = rest[1:]
        ks, aname = rest[0], rest[1]
        args = (rest[2] or []) if has_args else []
        return Entry(loc=self._mloc(meta, c), keyset=ks, priority=prio,
                     action=ActionRef(loc=getattr(aname, "loc", None) or self._mloc(meta, c), name=aname,
                                      args=args), annotations=anns)

    @v_args(meta=True)
    def entry(self, meta, c):
        return self._entry(meta, c, True)

    @v_args(meta=True)
    def entry_noargs(self, meta, c):
        return self._entry(meta, c, False)

    # -- statements
    @v_args(meta=True)
    def block(self, meta, c):
        return Block(loc=self._mloc(meta, c), stmts=[x for x in c if x is not None])

    @v_args(meta=True)
    def assignment(self, meta, c):
        return Assign(loc=self._mloc(meta, c), lhs=c[0], rhs=c[1])

    def _compound(self, meta, c):
        """``a op= b`` is ``a = a op b`` (P4_16 spec 1.2.5, 11.1); ``a`` is written once in the
        source and read from the same l-value (a copy of its syntax tree)."""
        lhs, op, rhs = c[0], str(c[1])[:-1], c[2]
        read = copy.deepcopy(lhs)
        return Assign(loc=self._mloc(meta, c), lhs=lhs, rhs=Binary(loc=self._loc(c[1]), op=op, l=read, r=rhs),
                      compound=op)

    @v_args(meta=True)
    def compound_assignment(self, meta, c):
        return self._compound(meta, c)

    @v_args(meta=True)
    def for_compound_assign(self, meta, c):
        return self._compound(meta, c)

    @v_args(meta=True)
    def call_stmt(self, meta, c):
        e = c[0]
        if not isinstance(e, Call):
            raise P4Error("syntax error: expected a call or an assignment as a statement", self._mloc(meta, c))
        return CallStmt(loc=self._mloc(meta, c), call=e)

    @v_args(meta=True)
    def if_stmt(self, meta, c):
        return If(loc=self._mloc(meta, c), cond=c[0], then=c[1], orelse=c[2] if len(c) > 2 else None)

    @v_args(meta=True)
    def exit_stmt(self, meta, c):
        return Exit(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def return_stmt(self, meta, c):
        return Return(loc=self._mloc(meta, c), value=c[0] if c else None)

    @v_args(meta=True)
    def empty_stmt(self, meta, c):
        return Empty(loc=self._mloc(meta, c))

    def empty_decl(self, c):
        return None

    @v_args(meta=True)
    def for_stmt(self, meta, c):
        inits, rest = c[0], c[1:]
        cond = rest[0] if len(rest) == 3 else None
        return For(loc=self._mloc(meta, c), inits=inits or [], cond=cond, updates=rest[-2] or [], body=rest[-1])

    @v_args(meta=True)
    def for_in_stmt(self, meta, c):
        rest = [x for x in c if not (isinstance(x, Token) and x.type == "IN")]
        return ForRange(loc=self._mloc(meta, c), type=rest[0], name=rest[1], lo=rest[2], hi=rest[3], body=rest[4])

    def for_inits(self, c):
        return [x for x in c if x is not None]

    for_updates = for_inits

    @v_args(meta=True)
    def for_var(self, meta, c):
        return VarDecl(loc=self._mloc(meta, c), name=c[1], type=c[0], init=c[2])

    @v_args(meta=True)
    def for_assign(self, meta, c):
        return Assign(loc=self._mloc(meta, c), lhs=c[0], rhs=c[1])

    @v_args(meta=True)
    def for_call(self, meta, c):
        return self.call_stmt(c) if False else self._call_stmt(meta, c)

    def _call_stmt(self, meta, c):
        e = c[0]
        if not isinstance(e, Call):
            raise P4Error("syntax error: expected a call or an assignment", self._mloc(meta, c))
        return CallStmt(loc=self._mloc(meta, c), call=e)

    @v_args(meta=True)
    def break_stmt(self, meta, c):
        return Break(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def continue_stmt(self, meta, c):
        return Continue(loc=self._mloc(meta, c))

    @v_args(meta=True)
    def switch_stmt(self, meta, c):
        return Switch(loc=self._mloc(meta, c), expr=c[0], cases=list(c[1:]))

    @v_args(meta=True)
    def switch_case(self, meta, c):
        return SwitchCase(loc=self._mloc(meta, c), label=c[0], body=c[1])

    @v_args(meta=True)
    def switch_fallthrough(self, meta, c):
        return SwitchCase(loc=self._mloc(meta, c), label=c[0], body=None)

    def switch_label(self, c):
        return c[0]

    def default_label(self, c):
        return "default"

    # -- expressions
    def expr_list(self, c):
        return [x for x in c if x is not None]

    @v_args(meta=True)
    def args(self, meta, c):
        out = []
        for x in c:
            if x is None:
                continue
            if isinstance(x, Arg):
                out.append(x)
            else:
                out.append(Arg(loc=x.loc, value=x))
        return out

    @v_args(meta=True)
    def named_arg(self, meta, c):
        return Arg(loc=self._mloc(meta, c), value=c[1], name=c[0])

    @v_args(meta=True)
    def dontcare_arg(self, meta, c):
        return Arg(loc=self._mloc(meta, c), value=None)

    @v_args(meta=True)
    def cond(self, meta, c):
        return Cond(loc=self._mloc(meta, c), c=c[0], t=c[1], f=c[2])

    def _bin(op):
        @v_args(meta=True)
        def f(self, meta, c):
            return Binary(loc=c[0].loc, op=op, l=c[0], r=c[-1])
        return f

    lor = _bin("||")
    land = _bin("&&")
    eq = _bin("==")
    ne = _bin("!=")
    le = _bin("<=")
    ge = _bin(">=")
    lt = _bin("<")
    gt = _bin(">")
    bor = _bin("|")
    bxor = _bin("^")
    band = _bin("&")
    shl = _bin("<<")
    add = _bin("+")
    sub = _bin("-")
    sat_add = _bin("|+|")
    sat_sub = _bin("|-|")
    concat = _bin("++")
    mul = _bin("*")
    div = _bin("/")
    mod = _bin("%")

    @v_args(meta=True)
    def shr(self, meta, c):
        return Binary(loc=c[0].loc, op=">>", l=c[0], r=c[-1])

    def _un(op):
        @v_args(meta=True)
        def f(self, meta, c):
            return Unary(loc=self._mloc(meta, c), op=op, e=c[-1])
        return f

    lnot = _un("!")
    bnot = _un("~")
    neg = _un("-")
    pos = _un("+")

    @v_args(meta=True)
    def cast(self, meta, c):
        return Cast(loc=self._mloc(meta, c), to=c[0], e=c[1])

    @v_args(meta=True)
    def member(self, meta, c):
        return Member(loc=c[0].loc, obj=c[0], name=c[1])

    @v_args(meta=True)
    def index(self, meta, c):
        return Index(loc=c[0].loc, obj=c[0], index=c[1])

    @v_args(meta=True)
    def slice(self, meta, c):
        return Slice(loc=c[0].loc, obj=c[0], hi=c[1], lo=c[2])

    @v_args(meta=True)
    def call(self, meta, c):
        return Call(loc=c[0].loc, func=c[0], args=c[1] or [])

    @v_args(meta=True)
    def generic_call(self, meta, c):
        return Call(loc=c[0].loc, func=c[0], type_args=c[2], args=c[-1] or [])

    @v_args(meta=True)
    def int_lit(self, meta, c):
        v, w, s = _int_literal(c[0].value)
        if w is not None:
            if w <= 0 and not (w == 0 and not s):
                raise P4Error(f"invalid width {w} in literal {c[0].value}", self._loc(c[0]))
            if s and w < 1:
                raise P4Error(f"invalid width {w} in literal {c[0].value}", self._loc(c[0]))
        return IntLit(loc=self._loc(c[0]), value=v, width=w, signed=s)

    @v_args(meta=True)
    def true_lit(self, meta, c):
        return BoolLit(loc=self._mloc(meta, c), value=True)

    @v_args(meta=True)
    def false_lit(self, meta, c):
        return BoolLit(loc=self._mloc(meta, c), value=False)

    @v_args(meta=True)
    def string_lit(self, meta, c):
        s = c[0].value[1:-1]
        s = s.encode().decode("unicode_escape") if "\\" in s else s
        return StrLit(loc=self._loc(c[0]), value=s)

    @v_args(meta=True)
    def path(self, meta, c):
        return Path(loc=self._mloc(meta, c), name=c[0])

    @v_args(meta=True)
    def dot_path(self, meta, c):
        return Path(loc=self._mloc(meta, c), name=c[-1], top=True)

    @v_args(meta=True)
    def error_member(self, meta, c):
        return TypeMember(loc=self._mloc(meta, c), tname="error", name=c[-1])

    @v_args(meta=True)
    def type_member(self, meta, c):
        return TypeMember(loc=self._loc(c[0]), tname=str(c[0]), name=c[1])

    @v_args(meta=True)
    def ctor_call(self, meta, c):
        return CtorCall(loc=self._loc(c[0]), tname=str(c[0]), args=c[1] or [])

    @v_args(meta=True)
    def generic_ctor_call(self, meta, c):
        return CtorCall(loc=self._loc(c[0]), tname=str(c[0]), type_args=c[2], args=c[-1] or [])

    @v_args(meta=True)
    def list_expr(self, meta, c):
        return ListExpr(loc=self._mloc(meta, c), items=c[0] if c else [])

    @v_args(meta=True)
    def struct_expr(self, meta, c):
        items = [x for x in c[0] if x != "..."]
        return StructExpr(loc=self._mloc(meta, c), items=items, rest=len(items) != len(c[0]))

    def rest_init(self, c):
        return "..."

    @v_args(meta=True)
    def struct_expr_rest(self, meta, c):
        return StructExpr(loc=self._mloc(meta, c), items=c[0] if c and c[0] else [], rest=True)

    def named_inits(self, c):
        return list(c)

    def named_init(self, c):
        return (c[0], c[1])

    @v_args(meta=True)
    def invalid_expr(self, meta, c):
        return InvalidExpr(loc=self._mloc(meta, c))

    def start(self, c):
        return Program(decls=[d for d in c if d is not None])
