"""P4Info from a compiled program's :class:`~emulation.p4.info.ProgramInfo`.

Follows what p4c's control-plane back end (``p4c-bm2-ss --p4runtime-files``) writes for
v1model programs (facts from the P4Runtime spec §"ID Allocation for P4Info Objects"
and p4c's ``control-plane/`` sources; see ``shared/design/p4runtime-notes.md``):

* ids are ``(prefix << 24) | (jenkins_one_at_a_time(name) & 0xffffff)`` with the
  8-bit prefixes of ``P4Ids.Prefix``;
* ``@id(n)`` gives the id (the prefix is added when missing; a wrong prefix or a
  duplicate id is an error), and these ids are reserved before any hashing;
* hash collisions are resolved by linear probing (+1) with the names of one symbol
  kind visited in sorted order;
* the alias is the shortest dot-separated suffix that only one symbol (of any kind)
  ends with;
* match fields, action parameters and packet metadata count 1..n in declaration
  order, skipping the ids given by ``@id``;
* controller packet metadata are named after their ``@controller_header`` value and
  hashed under their header type's name.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any, Iterable

from google.protobuf import json_format, text_format

from host_agent.p4runtime import p4info_pb2 as p4i

PREFIX = {
    "action": 0x01, "table": 0x02, "value_set": 0x03, "controller_header": 0x04,
    "action_profile": 0x11, "counter": 0x12, "direct_counter": 0x13, "meter": 0x14,
    "direct_meter": 0x15, "register": 0x16, "digest": 0x17,
}

# annotations p4c does not copy into ``annotations``: names and ids are fields of their
# own, @brief/@description become ``doc``
_SKIP_ANNOTATIONS = {"name", "id", "brief", "description", "hidden"}

_MATCH_TYPES = {"exact": p4i.MatchField.EXACT, "lpm": p4i.MatchField.LPM,
                "ternary": p4i.MatchField.TERNARY, "range": p4i.MatchField.RANGE,
                "optional": p4i.MatchField.OPTIONAL}

_COUNTER_UNITS = {"packets": p4i.CounterSpec.PACKETS, "bytes": p4i.CounterSpec.BYTES,
                  "packets_and_bytes": p4i.CounterSpec.BOTH, "both": p4i.CounterSpec.BOTH}
_METER_UNITS = {"packets": p4i.MeterSpec.PACKETS, "bytes": p4i.MeterSpec.BYTES}


class P4InfoError(ValueError):
    """The program cannot be described in P4Info (bad or duplicate @id, ...)."""


def jenkins_one_at_a_time(data: bytes | str) -> int:
    """Bob Jenkins' one-at-a-time hash, 32-bit, as p4c uses it for P4Runtime ids."""
    if isinstance(data, str):
        data = data.encode()
    h = 0
    for b in data:
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def cp_name(name: str) -> str:
    """Control-plane name as P4Info shows it: a leading ``.`` (global @name) is dropped."""
    return name[1:] if name.startswith(".") else name


def _parse_id(body: str, where: str) -> int:
    try:
        v = int(body.strip(), 0)
    except ValueError:
        raise P4InfoError(f"{where}: @id({body}) is not an unsigned integer") from None
    if not 0 <= v < 1 << 32:
        raise P4InfoError(f"{where}: @id({body}) is not a 32-bit unsigned integer")
    return v


class SymbolTable:
    """Ids and aliases of the top-level P4Info objects (p4c's P4RuntimeSymbolTable)."""

    def __init__(self) -> None:
        self._kinds: dict[str, dict[str, int | None]] = {}
        self._assigned: set[int] = set()
        self._suffix_counts: dict[tuple[str, ...], int] = {}
        self._symbols: set[str] = set()

    def add(self, kind: str, name: str, annotations: dict[str, str] | None = None) -> None:
        name = cp_name(name)
        table = self._kinds.setdefault(kind, {})
        if name in table:
            return
        uid = None
        if annotations and "id" in annotations:
            uid = _parse_id(annotations["id"], name)
            prefix = PREFIX[kind] << 24
            if uid & 0xFF000000 and uid & 0xFF000000 != prefix:
                raise P4InfoError(f"{name}: @id has the wrong 8-bit prefix (expected {PREFIX[kind]:#04x})")
            uid |= prefix
            if uid in self._assigned:
                raise P4InfoError(f"{name}: @id {uid} is assigned to multiple declarations")
            self._assigned.add(uid)
        table[name] = uid
        if name not in self._symbols:
            self._symbols.add(name)
            parts = name.split(".")
            for n in range(1, len(parts) + 1):
                suf = tuple(parts[-n:])
                self._suffix_counts[suf] = self._suffix_counts.get(suf, 0) + 1

    def compute_ids(self) -> None:
        for kind, table in self._kinds.items():
            prefix = PREFIX[kind] << 24
            for name in sorted(n for n, i in table.items() if i is None):
                h = start = jenkins_one_at_a_time(name)
                while True:
                    cand = prefix | (h & 0xFFFFFF)
                    if cand not in self._assigned:
                        break
                    h = (h + 1) & 0xFFFFFFFF
                    if h == start:
                        raise P4InfoError(f"no id left to represent {name} in P4Runtime")
                self._assigned.add(cand)
                table[name] = cand

    def id(self, kind: str, name: str) -> int:
        v = self._kinds[kind][cp_name(name)]
        assert v is not None, "compute_ids() first"
        return v

    def alias(self, name: str) -> str:
        parts = cp_name(name).split(".")
        for n in range(1, len(parts) + 1):
            if self._suffix_counts.get(tuple(parts[-n:]), 0) < 2:
                return ".".join(parts[-n:])
        return ".".join(parts)


def _annotation_strings(annotations: dict[str, str]) -> list[str]:
    """The unstructured annotations as p4c prints them (ToP4: ``@name(tokens)``)."""
    out = []
    for k, body in annotations.items():
        if k in _SKIP_ANNOTATIONS or getattr(body, "structured", False):
            continue
        out.append(f"@{k}({body})" if body != "" else f"@{k}")
    return out


def _add_annotations(msg: Any, annotations: dict[str, str]) -> None:
    """``annotations`` and ``structured_annotations`` of a P4Info message: p4c lists a
    structured annotation (``@a[k = v]``, ``@a[1, "x"]``, ``@a[]``) apart, its expressions
    evaluated to string, int64 or bool (control-plane/p4RuntimeArchHandler.cpp)."""
    msg.annotations.extend(_annotation_strings(annotations))
    for k, body in annotations.items():
        if k in _SKIP_ANNOTATIONS or not getattr(body, "structured", False):
            continue
        sa = msg.structured_annotations.add()
        sa.name = k
        items = _split_items(_ANN_TOKEN.findall(str(body)))
        if not items:
            continue
        if all(len(it) >= 3 and re.fullmatch(r"[A-Za-z_]\w*", it[0]) and it[1] == "=" for it in items):
            for it in items:
                kv = sa.kv_pair_list.kv_pairs.add()
                kv.key = it[0]
                _structured_value(kv.value, it[2:])
        else:
            for it in items:
                _structured_value(sa.expression_list.expressions.add(), it)


_ANN_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\w+|==|!=|<=|>=|&&|\|\||<<|>>|\S')


def _split_items(toks: list[str]) -> list[list[str]]:
    """Tokens split at the commas outside parentheses."""
    items, cur, depth = [], [], 0
    for t in toks:
        if t == "," and depth == 0:
            items.append(cur)
            cur = []
            continue
        depth += {"(": 1, ")": -1}.get(t, 0)
        cur.append(t)
    if cur:
        items.append(cur)
    return items


def _p4_int(tok: str) -> int | None:
    """A P4 integer literal (``12``, ``0x1f``, ``8w5``, ``4s-1`` not included), or None."""
    m = re.fullmatch(r"(?:\d+[ws])?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[0-9_]*)", tok)
    if not m:
        return None
    v = m.group(1).replace("_", "")
    if v[:2].lower() == "0d":
        return int(v[2:])
    return int(v, 0) if v[:2].lower() in ("0x", "0b", "0o") else int(v)


def _structured_value(expr: Any, toks: list[str]) -> None:
    """A structured annotation's expression: p4c folds it to a literal (string, int64, bool)."""
    if len(toks) == 1 and toks[0].startswith('"'):
        expr.string_value = toks[0][1:-1]
        return
    if toks in (["true"], ["false"]):
        expr.bool_value = toks == ["true"]
        return
    py = []
    for t in toks:
        v = _p4_int(t)
        if v is not None:
            py.append(str(v))
        elif t in ("true", "false"):
            py.append("True" if t == "true" else "False")
        elif t in ("&&", "||", "!"):
            py.append({"&&": " and ", "||": " or ", "!": " not "}[t])
        elif t.startswith('"') or re.fullmatch(r"==|!=|<=|>=|<<|>>|[-+*/%&|^~<>()]", t):
            py.append(t)
        else:
            expr.string_value = " ".join(toks)     # not a constant expression we can fold
            return
    try:
        value = _fold(ast.parse("".join(py).replace("/", "//"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        expr.string_value = " ".join(toks)
        return
    if isinstance(value, bool):
        expr.bool_value = value
    elif isinstance(value, int):
        expr.int64_value = value
    else:
        expr.string_value = str(value)


def _fold(node: Any) -> Any:
    """Evaluate a constant expression of ints, bools and strings (no names, no calls)."""
    import operator as op
    bins = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.FloorDiv: op.floordiv, ast.Mod: op.mod,
            ast.BitAnd: op.and_, ast.BitOr: op.or_, ast.BitXor: op.xor, ast.LShift: op.lshift,
            ast.RShift: op.rshift}
    cmps = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge}
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, str, bool)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in bins:
        return bins[type(node.op)](_fold(node.left), _fold(node.right))
    if isinstance(node, ast.UnaryOp):
        v = _fold(node.operand)
        return {ast.USub: lambda: -v, ast.UAdd: lambda: +v, ast.Not: lambda: not v,
                ast.Invert: lambda: ~v}[type(node.op)]()
    if isinstance(node, ast.BoolOp):
        vals = [_fold(v) for v in node.values]
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in cmps:
        return cmps[type(node.ops[0])](_fold(node.left), _fold(node.comparators[0]))
    raise ValueError("not a constant expression")


def _preamble(pre: Any, sym: SymbolTable, kind: str, name: str, annotations: dict[str, str],
              *, display: str | None = None, alias: str | None = None) -> None:
    pre.id = sym.id(kind, name)
    pre.name = display if display is not None else cp_name(name)
    pre.alias = alias if alias is not None else sym.alias(name)
    _add_annotations(pre, annotations)
    _doc(pre, annotations)


def _doc(msg: Any, annotations: dict[str, str]) -> None:
    for k in ("brief", "description"):
        if k in annotations:
            body = annotations[k].strip()
            if len(body) >= 2 and body[0] == body[-1] == '"':
                body = body[1:-1]
            setattr(msg.doc, k, body)


def _field_ids(items: Iterable[Any], where: str) -> list[int]:
    """p4c's FieldIdAllocator: @id values first, then 1, 2, ... in order skipping used ones.

    An element with an @id still consumes its position's counter value."""
    items = list(items)
    ids: list[int | None] = []
    used: set[int] = set()
    for it in items:
        ann = getattr(it, "annotations", None) or {}
        if "id" in ann:
            v = _parse_id(ann["id"], where)
            if v == 0:
                raise P4InfoError(f"{where}: 0 is not a valid @id value")
            if v in used:
                raise P4InfoError(f"{where}: @id {v} is used multiple times")
            used.add(v)
            ids.append(v)
        else:
            ids.append(None)
    index = 1
    out = []
    for v in ids:
        if v is not None:
            index += 1
            out.append(v)
            continue
        while index in used:
            index += 1
        used.add(index)
        out.append(index)
    return out


def program_info_of(program_or_info: Any) -> Any:
    """Accept a ProgramInfo, a compiled program (``.info``) or a Switch (``.program.info``)."""
    from emulation.p4.info import ProgramInfo
    obj = program_or_info
    for _ in range(3):
        if isinstance(obj, ProgramInfo):
            return obj
        if hasattr(obj, "info"):
            obj = obj.info
        elif hasattr(obj, "program"):
            obj = obj.program
        else:
            break
    if isinstance(obj, ProgramInfo):
        return obj
    raise TypeError(f"cannot find a ProgramInfo in {type(program_or_info).__name__}")


def p4info_from_program(program_or_info: Any) -> Any:
    """Build a ``p4.config.v1.P4Info`` message from a program's ProgramInfo."""
    info = program_info_of(program_or_info)
    sym = SymbolTable()
    hidden = lambda o: "hidden" in (o.annotations or {})  # noqa: E731
    # p4c collects every table and action of the program in its symbol table, @hidden ones too
    # (control-plane/p4RuntimeSymbolTable.cpp), so they count for the aliases and the ids;
    # P4Info then leaves the hidden ones out
    all_tables = sorted(_applied_tables(info), key=_order)
    all_actions = _actions_in_order(_used_actions(info), all_tables, getattr(info, "action_call_sites", None))
    tables = [t for t in all_tables if not hidden(t)]
    actions = [a for a in all_actions if not hidden(a)]
    removed = _removed_blocks(info)
    externs = _externs_in_order([e for e in info.externs if not hidden(e) and not e.name.startswith(removed)],
                                all_tables)
    kinds = {"counter": "counter", "direct_counter": "direct_counter", "meter": "meter",
             "direct_meter": "direct_meter", "register": "register", "action_profile": "action_profile",
             "value_set": "value_set"}
    for a in all_actions:
        sym.add("action", a.name, a.annotations)
    for t in all_tables:
        sym.add("table", t.name, t.annotations)
    for e in externs:
        if e.kind in kinds:
            sym.add(kinds[e.kind], e.name, e.annotations)
    for h in info.controller_headers:
        sym.add("controller_header", h.type_name or h.name, h.annotations)
    for d in info.digests:
        sym.add("digest", d.name, None)
    sym.compute_ids()

    p = p4i.P4Info()
    p.pkg_info.arch = info.arch or "v1model"
    action_names = {cp_name(a.name) for a in actions}
    # an action no table refers to is only ever called with all its arguments bound: p4c
    # lists no parameters for it
    in_tables = {cp_name(ref.name) for t in tables for ref in t.actions}
    for t in tables:
        tm = p.tables.add()
        _preamble(tm.preamble, sym, "table", t.name, t.annotations)
        for fid, k in zip(_key_ids(t), t.keys):
            mf = tm.match_fields.add()
            mf.id = fid
            mf.name = k.name
            _add_annotations(mf, k.annotations)
            _doc(mf, k.annotations)
            # p4c: an ``error`` key is described as a string (bitwidth 0), a translated ``type``
            # with its controller width (control-plane/p4RuntimeSerializer.cpp, getTypeWidth)
            mf.bitwidth = 0 if getattr(k, "is_error", False) else _p4rt_width(info, k.width, k)
            mt = _MATCH_TYPES.get(k.match_kind)
            if mt is None:
                mf.other_match_type = k.match_kind
            else:
                mf.match_type = mt
            if getattr(k, "type_name", ""):
                mf.type_name.name = k.type_name
        for ref in t.actions:
            if cp_name(ref.name) not in action_names:
                raise P4InfoError(f"table {t.name}: action {ref.name} is not among the program's actions")
            ar = tm.action_refs.add()
            ar.id = sym.id("action", ref.name)
            ann = dict(ref.annotations)
            if ref.default_only and "defaultonly" not in ann:
                ann["defaultonly"] = ""
            if ref.table_only and "tableonly" not in ann:
                ann["tableonly"] = ""
            _add_annotations(ar, ann)
            if "tableonly" in ann and "defaultonly" in ann:
                raise P4InfoError(f"table {t.name}: action {ref.name} is both @tableonly and @defaultonly")
            if "tableonly" in ann:
                ar.scope = p4i.ActionRef.TABLE_ONLY
            elif "defaultonly" in ann:
                ar.scope = p4i.ActionRef.DEFAULT_ONLY
        if t.const_default_action and t.default_action:
            tm.const_default_action_id = sym.id("action", t.default_action)
        for kind, nm in (("direct_counter", t.direct_counter), ("direct_meter", t.direct_meter)):
            if nm:
                tm.direct_resource_ids.append(sym.id(kind, nm))
        if getattr(t, "implementation", None):
            tm.implementation_id = sym.id("action_profile", t.implementation)
        tm.size = t.size
        if getattr(t, "support_timeout", False):   # ``support_timeout = true``
            tm.idle_timeout_behavior = p4i.Table.NOTIFY_CONTROL
        if t.has_const_entries:
            tm.is_const_table = True
        if t.has_const_entries or getattr(t, "has_initial_entries", False):
            tm.has_initial_entries = True
    for a in actions:
        am = p.actions.add()
        _preamble(am.preamble, sym, "action", a.name, a.annotations)
        params = a.params if cp_name(a.name) in in_tables else []
        for pid, prm in zip(_field_ids(params, a.name), params):
            pm = am.params.add()
            pm.id = pid
            pm.name = prm.name
            _add_annotations(pm, prm.annotations)
            _doc(pm, prm.annotations)
            pm.bitwidth = _p4rt_width(info, prm.width, prm)
            if getattr(prm, "type_name", ""):
                pm.type_name.name = prm.type_name
    table_ids = {cp_name(t.name): sym.id("table", t.name) for t in tables}
    for e in externs:
        if e.kind == "counter":
            c = p.counters.add()
            _preamble(c.preamble, sym, "counter", e.name, e.annotations)
            c.spec.unit = _COUNTER_UNITS.get(e.unit, p4i.CounterSpec.BOTH)
            c.size = e.size
        elif e.kind in ("direct_counter", "direct_meter") and cp_name(e.table or "") not in table_ids:
            # p4c adds direct resources with the table that owns them (addTableProperties): one
            # whose table is gone (never applied) or that no table names is not listed
            continue
        elif e.kind == "direct_counter":
            c = p.direct_counters.add()
            _preamble(c.preamble, sym, "direct_counter", e.name, e.annotations)
            c.spec.unit = _COUNTER_UNITS.get(e.unit, p4i.CounterSpec.BOTH)
            c.direct_table_id = table_ids[cp_name(e.table)]
        elif e.kind == "meter":
            m = p.meters.add()
            _preamble(m.preamble, sym, "meter", e.name, e.annotations)
            m.spec.unit = _METER_UNITS.get(e.unit, p4i.MeterSpec.BYTES)
            m.size = e.size
        elif e.kind == "direct_meter":
            m = p.direct_meters.add()
            _preamble(m.preamble, sym, "direct_meter", e.name, e.annotations)
            m.spec.unit = _METER_UNITS.get(e.unit, p4i.MeterSpec.BYTES)
            m.direct_table_id = table_ids[cp_name(e.table)]
        elif e.kind == "value_set":
            vs = p.value_sets.add()
            _preamble(vs.preamble, sym, "value_set", e.name, e.annotations)
            _value_set_match(vs, e)
            vs.size = e.size
        elif e.kind == "action_profile":
            # p4c: @max_group_size goes into max_group_size (selectors only), not the annotations
            ann = {k: v for k, v in e.annotations.items()
                   if k not in ("max_group_size", "selector_size_semantics", "max_member_weight")}
            ap = p.action_profiles.add()
            _preamble(ap.preamble, sym, "action_profile", e.name, ann)
            # p4c keeps the tables of a profile in a set of names (P4RuntimeArchHandlerCommon's
            # actionProfilesRefs): ids in the order of the tables' names
            ap.table_ids.extend(table_ids[n] for n in sorted(cp_name(t.name) for t in tables
                                                              if getattr(t, "implementation", None) == e.name))
            ap.with_selector = e.algorithm is not None
            ap.size = e.size
            if "max_group_size" in e.annotations and ap.with_selector:
                ap.max_group_size = int(e.annotations["max_group_size"].strip(), 0)
                # p4c then states the group size's meaning: sum of weights unless
                # @selector_size_semantics("sum_of_members") (with @max_member_weight)
                sem = e.annotations.get("selector_size_semantics", "").strip().strip('"').lower()
                if sem == "sum_of_members":
                    ap.sum_of_members.SetInParent()
                    if "max_member_weight" in e.annotations:
                        ap.sum_of_members.max_member_weight = int(e.annotations["max_member_weight"].strip(), 0)
                else:
                    ap.sum_of_weights.SetInParent()
        elif e.kind == "register":
            r = p.registers.add()
            _preamble(r.preamble, sym, "register", e.name, e.annotations)
            if getattr(e, "type_desc", None) is not None:
                _type_spec_of(r.type_spec, e.type_desc, p, info)
            else:
                bits = r.type_spec.bitstring
                (bits.int if e.signed else bits.bit).bitwidth = e.width
            r.size = e.size
    for h in info.controller_headers:
        if "hidden" in (h.annotations or {}):
            continue        # p4c's addControllerHeader skips a @hidden header type
        cm = p.controller_packet_metadata.add()
        ann = dict(h.annotations)
        ann.setdefault("controller_header", f'"{h.name}"')
        _preamble(cm.preamble, sym, "controller_header", h.type_name or h.name, ann,
                  display=h.name, alias=h.name)
        fields = [f for f in h.fields if "hidden" not in (getattr(f, "annotations", None) or {})]
        ids = dict(zip(map(id, h.fields), _field_ids(h.fields, h.name)))
        for f in fields:
            md = cm.metadata.add()
            md.id = ids[id(f)]
            md.name = f.name
            _add_annotations(md, getattr(f, "annotations", None) or {})
            md.bitwidth = _p4rt_width(info, f.width, f)
            if getattr(f, "type_name", ""):
                md.type_name.name = f.type_name
    for d in info.digests:
        dm = p.digests.add()
        _preamble(dm.preamble, sym, "digest", d.name, {})
        if getattr(d, "type_desc", None) is not None:
            _type_spec_of(dm.type_spec, d.type_desc, p, info)
            continue
        dm.type_spec.struct.name = d.name
        st = p.type_info.structs[d.name]
        for f in d.fields:
            mem = st.members.add()
            mem.name = f.name
            _type_spec(mem.type_spec, f)
    _add_serializable_enums(p, info)
    _add_new_types(p, info, tables)
    if any(getattr(k, "is_error", False) for t in tables for k in t.keys):
        p.type_info.error.members.extend(getattr(info, "error_members", None) or [])
    _add_pkg_info(p, getattr(info, "main_annotations", None) or {})
    if _writes_type_info(info):
        p.type_info.SetInParent()
    return p


def _add_serializable_enums(p: Any, info: Any) -> None:
    """``type_info.serializable_enums``: the ``enum bit<W>`` types of the controller-header
    fields and of the listed actions' parameters, as p4c writes them (its TypeSpecConverter
    visits those types; an enum used elsewhere only is not listed).  P4Runtime spec 1.3,
    "P4TypeInfo"; member values big-endian in ceil(W/8) bytes.  Controllers read them to
    name PacketIn/PacketOut values (p4lang/tutorials flowcache)."""
    wanted = {f.enum for h in info.controller_headers for f in h.fields}
    wanted |= {q.enum for a in _used_actions(info) for q in a.params}
    wanted |= {getattr(k, "enum", "") for t in _applied_tables(info) for k in t.keys}
    wanted |= {f.enum for d in info.digests for f in d.fields}
    for e in getattr(info, "serializable_enums", ()):
        if e.name not in wanted or e.name in p.type_info.serializable_enums:
            continue
        se = p.type_info.serializable_enums[e.name]
        se.underlying_type.bitwidth = e.width
        for name, value in e.members:
            m = se.members.add()
            m.name = name
            m.value = value.to_bytes((e.width + 7) // 8, "big")


def _used_actions(info: Any) -> list:
    """The actions p4c lists: those a table refers to or an apply block calls directly.

    p4c's front end drops actions nobody uses (an unused top-level ``NoAction`` too) and
    actions only other actions call."""
    used = {cp_name(ref.name) for t in _applied_tables(info) for ref in t.actions}
    removed = _removed_blocks(info)
    used |= {cp_name(n) for n in getattr(info, "actions_called_from_apply", ()) if not n.startswith(removed)}
    return [a for a in info.actions if cp_name(a.name) in used]


def _writes_type_info(info: Any) -> bool:
    """p4c writes a (possibly empty) ``type_info`` once it has looked up a type for the
    P4Info: for a table, an extern instance, a digest or any extern function a control calls."""
    return bool(_applied_tables(info) or info.externs or info.digests
                or getattr(info, "calls_extern_functions", False)
                or any(getattr(a, "calls_extern_functions", False) for a in _used_actions(info)))


def _applied_tables(info: Any) -> list:
    """The tables p4c keeps: its front end removes a table no apply block applies ("Table t
    is not used; removing", frontends/p4/unusedDeclarations.cpp), with what only it used, and
    the tables of a parser/control instance nothing applies (see :func:`_removed_blocks`)."""
    removed = _removed_blocks(info)
    return [t for t in info.tables if (getattr(t, "applied_sites", None) is None or t.applied_sites)
            and not t.name.startswith(removed)]


def _order(obj: Any) -> tuple:
    return getattr(obj, "order", None) or ()


def _actions_in_order(actions: list, tables: list, call_sites: dict | None = None) -> list:
    """Actions in p4c's order: the blocks' actions where the front end leaves them (inlined
    parser/control instances in place), a top-level action (``NoAction``) at the front of the
    first block that uses it, in the order of first use: the tables' action lists, then the
    calls in apply blocks (frontends/p4/localizeActions.cpp)."""
    first_use: dict[str, tuple] = {}
    for t in tables:
        if not _order(t):
            continue
        for i, ref in enumerate(t.actions):
            first_use.setdefault(cp_name(ref.name), (_order(t)[0], -1, (0,) + _order(t)[1:], i))
    for i, (n, where) in enumerate((call_sites or {}).items()):
        if where:
            k = (where[0], -1, (1,), i)
            n = cp_name(n)
            first_use[n] = min(first_use.get(n, k), k)

    def key(a):
        return _order(a) or first_use.get(cp_name(a.name), ())
    return sorted(actions, key=key)


def _externs_in_order(externs: list, tables: list) -> list:
    """Extern instances in p4c's order (where the front end leaves their declarations); a
    direct counter or meter with the table that owns it (p4c adds it with the table)."""
    table_order = {cp_name(t.name): _order(t) for t in tables}

    def key(e):
        if e.kind in ("direct_counter", "direct_meter") and e.table:
            return table_order.get(cp_name(e.table), _order(e))
        return _order(e)
    return sorted(externs, key=key)


def _removed_blocks(info: Any) -> tuple:
    """Name prefixes (``I.sub.``) of the parser/control instances p4c's front end removes:
    a named instance nothing applies (nor passes to a constructor) is an "unused instance"
    (frontends/p4/unusedDeclarations.cpp keeps unused *extern* instances only), and with it go
    its tables, actions, extern instances and value sets, and the instances declared in it.
    A ``.``-global ``@name`` inside such an instance is not matched (kept)."""
    used = getattr(info, "used_instances", None) or set()
    return tuple(f"{b}." for b in getattr(info, "block_instances", None) or () if b not in used)


class _Annotated:
    def __init__(self, annotations: dict) -> None:
        self.annotations = annotations


def _key_ids(t: Any) -> list[int]:
    """Match field ids, numbered as p4c numbers them: over every key element, ``selector``
    ones included (which P4Info does not list)."""
    every = getattr(t, "key_annotations", None)
    if not every or any(getattr(k, "position", -1) < 0 for k in t.keys):
        return _field_ids(t.keys, t.name)
    ids = _field_ids([_Annotated(a) for a in every], t.name)
    return [ids[k.position] for k in t.keys]


def _p4rt_width(info: Any, width: int, obj: Any) -> int:
    """The bitwidth P4Info gives a value of ``obj``'s type: a ``type`` with
    ``@p4runtime_translation`` has the controller's width (0 for a string)."""
    nt = (getattr(info, "new_types", None) or {}).get(getattr(obj, "type_name", "") or "")
    if nt is not None and nt.translation_uri is not None:
        return nt.sdn_bitwidth or 0
    return width


def _type_spec(spec: Any, f: Any) -> None:
    """A P4DataTypeSpec for a digest struct member (p4c's TypeSpecConverter)."""
    if getattr(f, "type_name", ""):
        spec.new_type.name = f.type_name
    elif getattr(f, "enum", ""):
        spec.serializable_enum.name = f.enum
    elif getattr(f, "is_bool", False):
        spec.bool.SetInParent()
    elif getattr(f, "signed", False):
        spec.bitstring.int.bitwidth = f.width
    else:
        spec.bitstring.bit.bitwidth = f.width


_VS_MATCH = {"exact": p4i.MatchField.EXACT, "lpm": p4i.MatchField.LPM, "ternary": p4i.MatchField.TERNARY,
             "range": p4i.MatchField.RANGE, "optional": p4i.MatchField.OPTIONAL}


def _value_set_match(vs: Any, e: Any) -> None:
    """The ``match`` fields of a value set (p4c's P4RuntimeAnalyzer::addValueSet): one of the
    value set's width for ``value_set<bit<W>>``; for ``value_set<S>`` one per field of S, named
    after it, ids from 1 (``@id`` first, FieldIdAllocator), match type from ``@match``
    (EXACT without one), the field's other annotations and ``@brief``/``@description``."""
    fields = getattr(e, "fields", None)
    if not fields:
        mf = vs.match.add()
        mf.id = 1
        mf.bitwidth = e.width
        mf.match_type = p4i.MatchField.EXACT
        return
    for fid, f in zip(_field_ids(fields, e.name), fields):
        mf = vs.match.add()
        mf.id = fid
        mf.name = f.name
        mf.bitwidth = f.width
        kind = (f.annotations.get("match") or "exact").strip()
        if kind in _VS_MATCH:
            mf.match_type = _VS_MATCH[kind]
        else:
            mf.other_match_type = kind
        _add_annotations(mf, {k: v for k, v in f.annotations.items() if k != "match"})
        _doc(mf, f.annotations)


def _type_spec_of(spec: Any, desc: Any, p: Any, info: Any) -> None:
    """Fill a ``P4DataTypeSpec`` from a :class:`~emulation.p4.info.TypeDesc`, adding the named
    types it refers to (structs, headers, header unions, enums, serializable enums, new types,
    the error members) to ``type_info``, as p4c's TypeSpecConverter does
    (control-plane/typeSpecConverter.cpp)."""
    ti = p.type_info
    k = desc.kind
    if k in ("bit", "int"):
        (spec.bitstring.int if k == "int" else spec.bitstring.bit).bitwidth = desc.width
    elif k == "varbit":
        spec.bitstring.varbit.max_bitwidth = desc.width
    elif k == "bool":
        spec.bool.SetInParent()
    elif k == "error":
        spec.error.SetInParent()
        if not ti.HasField("error"):
            ti.error.members.extend(getattr(info, "error_members", None) or [])
    elif k == "enum":
        spec.enum.name = desc.name
        if desc.name not in ti.enums:
            en = ti.enums[desc.name]
            for m in desc.members:
                en.members.add().name = m
    elif k == "serializable_enum":
        spec.serializable_enum.name = desc.name
        if desc.name not in ti.serializable_enums:
            se = ti.serializable_enums[desc.name]
            se.underlying_type.bitwidth = desc.width
            for name, value in desc.members:
                m = se.members.add()
                m.name = name
                m.value = (value & ((1 << desc.width) - 1)).to_bytes((desc.width + 7) // 8, "big")
    elif k == "new_type":
        spec.new_type.name = desc.name
        _new_type_entry(p, info, desc.name)
    elif k == "struct":
        spec.struct.name = desc.name
        if desc.name not in ti.structs:
            st = ti.structs[desc.name]
            for n, fd in desc.fields:
                mem = st.members.add()
                mem.name = n
                if fd is not None:
                    _type_spec_of(mem.type_spec, fd, p, info)
    elif k == "header":
        spec.header.name = desc.name
        if desc.name not in ti.headers:
            hd = ti.headers[desc.name]
            for n, fd in desc.fields:
                mem = hd.members.add()
                mem.name = n
                if fd is None:
                    continue
                if fd.kind == "new_type":     # a header field's ``type``: its bits
                    nt = (getattr(info, "new_types", None) or {}).get(fd.name)
                    if nt is not None:
                        (mem.type_spec.int if nt.signed else mem.type_spec.bit).bitwidth = nt.width
                elif fd.kind == "serializable_enum":
                    mem.type_spec.bit.bitwidth = fd.width
                elif fd.kind == "varbit":
                    mem.type_spec.varbit.max_bitwidth = fd.width
                elif fd.kind in ("bit", "int"):
                    (mem.type_spec.int if fd.kind == "int" else mem.type_spec.bit).bitwidth = fd.width
                elif fd.kind == "bool":
                    mem.type_spec.bit.bitwidth = 1
    elif k == "header_union":
        spec.header_union.name = desc.name
        if desc.name not in ti.header_unions:
            hu = ti.header_unions[desc.name]
            for n, fd in desc.fields:
                mem = hu.members.add()
                mem.name = n
                if fd is not None:
                    scratch = p4i.P4DataTypeSpec()
                    _type_spec_of(scratch, fd, p, info)
                    mem.header.name = scratch.header.name
    elif k in ("header_stack", "header_union_stack"):
        elem = desc.fields[0][1] if desc.fields else None
        scratch = p4i.P4DataTypeSpec()
        if elem is not None:
            _type_spec_of(scratch, elem, p, info)
        if k == "header_stack":
            spec.header_stack.header.name = scratch.header.name
            spec.header_stack.size = desc.size
        else:
            spec.header_union_stack.header_union.name = scratch.header_union.name
            spec.header_union_stack.size = desc.size
    elif k == "tuple":
        spec.tuple.SetInParent()
        for _, fd in desc.fields:
            m = spec.tuple.members.add()
            if fd is not None:
                _type_spec_of(m, fd, p, info)


def _new_type_entry(p: Any, info: Any, name: str) -> None:
    """``type_info.new_types[name]`` as p4c's TypeSpecConverter writes it: ``translated_type``
    for ``@p4runtime_translation``, else ``original_type`` (the bits under the chain of types)."""
    nt = (getattr(info, "new_types", None) or {}).get(name)
    if nt is None or name in p.type_info.new_types:
        return
    spec = p.type_info.new_types[name]
    _add_annotations(spec, {k: v for k, v in nt.annotations.items() if k != "p4runtime_translation"})
    if nt.translation_uri is not None:
        spec.translated_type.uri = nt.translation_uri
        if nt.sdn_bitwidth is None:
            spec.translated_type.sdn_string.SetInParent()
        else:
            spec.translated_type.sdn_bitwidth = nt.sdn_bitwidth
    else:
        bits = spec.original_type.bitstring
        (bits.int if nt.signed else bits.bit).bitwidth = nt.width


def _add_new_types(p: Any, info: Any, tables: list) -> None:
    """``type_info.new_types``: every ``type`` the P4Info refers to (match fields, listed
    actions' parameters, controller-header fields, digest fields), as p4c's TypeSpecConverter
    writes it: ``translated_type`` for ``@p4runtime_translation``, else ``original_type``."""
    defs = getattr(info, "new_types", None) or {}
    names = [getattr(k, "type_name", "") for t in tables for k in t.keys]
    names += [getattr(q, "type_name", "") for a in _used_actions(info) for q in a.params]
    names += [getattr(f, "type_name", "") for h in info.controller_headers for f in h.fields]
    names += [getattr(f, "type_name", "") for d in info.digests for f in d.fields]
    for n in names:
        if n in defs:
            _new_type_entry(p, info, n)


_PKG_INFO_KEYS = ("name", "version", "organization", "contact", "url", "arch")


def _add_pkg_info(p: Any, annotations: dict[str, str]) -> None:
    """``pkg_info`` fields from ``@pkginfo(name="...", version="...")`` on ``main``, its other
    annotations and its documentation (p4c's addPkgInfo)."""
    body = annotations.get("pkginfo")
    if body:
        for key, value in re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', body):
            if key in _PKG_INFO_KEYS:
                setattr(p.pkg_info, key, value)
    _add_annotations(p.pkg_info, {k: v for k, v in annotations.items() if k != "pkginfo"})
    _doc(p.pkg_info, annotations)


# ---------------------------------------------------------------------------- files
_TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"


def p4info_to_text(p4info: Any) -> str:
    return _TEXT_HEADER + text_format.MessageToString(p4info)


def _format_of(path: str | Path) -> str:
    s = str(path).lower()
    if s.endswith(".json"):
        return "json"
    if s.endswith((".bin", ".pb", ".binpb")):
        return "binary"
    return "text"  # .txt, .txtpb, .pb.txt and anything else, as p4c does


def write_p4info(p4info: Any, path: str | Path) -> None:
    """Write P4Info as text (``.txt``/``.txtpb``), binary (``.bin``/``.pb``) or JSON (``.json``)."""
    fmt = _format_of(path)
    if fmt == "binary":
        Path(path).write_bytes(p4info.SerializeToString(deterministic=True))
    elif fmt == "json":
        Path(path).write_text(json_format.MessageToJson(p4info, indent=2) + "\n")
    else:
        Path(path).write_text(p4info_to_text(p4info))


def read_p4info(path: str | Path) -> Any:
    fmt = _format_of(path)
    m = p4i.P4Info()
    if fmt == "binary":
        m.ParseFromString(Path(path).read_bytes())
    elif fmt == "json":
        json_format.Parse(Path(path).read_text(), m)
    else:
        text_format.Parse(Path(path).read_text(), m)
    return m


def p4info_to_json_dict(p4info: Any) -> dict:
    return json.loads(json_format.MessageToJson(p4info))
