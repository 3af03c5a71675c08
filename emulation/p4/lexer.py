"""Tokenizer and LALR parser set-up for P4_16.

P4's grammar needs to know which identifiers name types (``T x;`` declares, ``f(x);``
calls; ``(T) x`` casts).  Before parsing, :func:`tokenize` scans the whole token list
once and collects every declared type name (headers, structs, enums, typedefs, ``type``,
externs, parsers, controls, packages, and type variables such as ``T`` in
``extern register<T>``); identifiers with those names become ``TYPE_IDENTIFIER``.  The
same pass folds each ``@name(...)`` annotation into one ``ANNOTATION`` token, marks a
``<`` that opens type arguments as ``TA_LT`` and the first ``>`` of an adjacent ``>>``
as ``SHR_GT``.  Scoping of type names is not modelled: a type variable name is a type
name everywhere (programs rarely reuse ``T``/``H``/``M`` as variable names).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token
from lark.exceptions import UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer

from .errors import Loc, P4Error
from .preprocess import LineMap

GRAMMAR = Path(__file__).with_name("p4.lark")

_TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\f\r]+|\n)
| (?P<comment>//[^\n]*|/\*(?:.|\n)*?\*/)
| (?P<integer>[0-9]+[ws][0-9a-fA-FxXbBoOdD_]+|0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)
| (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
| (?P<string>"(?:\\.|[^"\\\n])*")
| (?P<compound>\|\+\|=|\|-\|=|<<=|>>=|\+=|-=|\*=|/=|%=|&=|\|=|\^=)
| (?P<punct>&&&|\.\.\.|\|\+\||\|-\||\+\+|\.\.|&&|\|\||==|!=|<=|>=|<<|[-+*/%&|^~!<>=?:;,.(){}\[\]@#])
""", re.X)

TYPE_START = {"TYPE_IDENTIFIER", "BIT", "INT", "BOOL", "VARBIT", "TUPLE", "ERROR", "STRING_KW", "VOID", "_"}


class _Src:
    def __init__(self, text: str, linemap: LineMap | None, filename: str):
        self.text, self.linemap, self.filename = text, linemap, filename

    def loc(self, line: int, col: int) -> Loc:
        if self.linemap is not None:
            return self.linemap.loc(line, col)
        return Loc(self.filename, line, col)


@lru_cache(maxsize=1)
def _parser() -> tuple[Lark, dict[str, str]]:
    p = Lark(GRAMMAR.read_text(), parser="lalr", lexer=_ListLexer, propagate_positions=True,
             maybe_placeholders=True, cache=False)
    # map literal strings (keywords and punctuation) to the terminal names lark gave them
    lit: dict[str, str] = {}
    for t in p.terminals:
        if t.pattern.type == "str":
            lit[t.pattern.value] = t.name
    return p, lit


class _ListLexer(Lexer):
    """Feeds lark the token list prepared by :func:`tokenize` (passed as the 'text')."""

    def __init__(self, lexer_conf):  # noqa: D401
        pass

    def lex(self, data, *args):  # data: list[Token]
        return iter(data)


def _raw_tokens(src: _Src, lit: dict[str, str]) -> list[Token]:
    text = src.text
    toks: list[Token] = []
    pos, line, col = 0, 1, 1
    n = len(text)
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise P4Error(f"syntax error: unexpected character {text[pos]!r}", src.loc(line, col))
        kind = m.lastgroup
        val = m.group()
        if kind == "ws" or kind == "comment":
            nl = val.count("\n")
            if nl:
                line += nl
                col = len(val) - val.rfind("\n")
            else:
                col += len(val)
            pos = m.end()
            continue
        if kind == "integer":
            typ = "INTEGER"
        elif kind == "ident":
            typ = lit.get(val, "IDENTIFIER") if val != "_" else lit["_"]
        elif kind == "string":
            typ = "STRING"
        elif kind == "compound":
            typ = "COMPOUND_OP"
        else:
            typ = lit.get(val)
            if typ is None:
                typ = {"@": "@", "#": lit.get("#", "#")}.get(val, val)
        toks.append(Token(typ, val, pos, line, col, line, col + len(val), pos + len(val)))
        pos = m.end()
        col += len(val)
    return toks


def _fold_annotations(toks: list[Token], src: _Src) -> list[Token]:
    out: list[Token] = []
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        if t.type != "@":
            out.append(t)
            i += 1
            continue
        if i + 1 >= n or not re.match(r"[A-Za-z_]", toks[i + 1].value):
            raise P4Error("syntax error: expected an annotation name after '@'", src.loc(t.line, t.column))
        name = toks[i + 1].value
        j = i + 2
        body: list[Token] = []
        if name == "pragma" and not (j < n and toks[j].value == "("):
            # "@pragma tokens..." runs to the end of its line (p4c's PRAGMA ... END_PRAGMA: an
            # unstructured annotation whose body is the rest of the line)
            line = toks[i + 1].line
            k = j
            while k < n and toks[k].line == line:
                k += 1
            body, j = toks[j:k], k
        elif j < n and toks[j].value in ("(", "[") and toks[j].line == toks[i + 1].line:
            open_, close = toks[j].value, {"(": ")", "[": "]"}[toks[j].value]
            depth = 0
            k = j
            while k < n:
                v = toks[k].value
                if v == open_:
                    depth += 1
                elif v == close:
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            if k >= n:
                raise P4Error(f"syntax error: unterminated annotation @{name}", src.loc(t.line, t.column))
            body = toks[j + 1:k] if open_ == "(" else StructuredBody(toks[j + 1:k])
            j = k + 1
        last = toks[j - 1]      # the annotation's last token (its name or closing bracket)
        tok = Token("ANNOTATION", (name, body), t.start_pos, t.line, t.column, last.end_line, last.end_column,
                    last.end_pos)
        out.append(tok)
        i = j
    return out


class StructuredBody(list):
    """The tokens of a structured annotation (``@a[k=v, ...]``, ``@a[1, "x"]``): P4Runtime lists
    these apart (``structured_annotations``)."""
    structured = True


def _type_names(toks: list[Token]) -> set[str]:
    names: set[str] = set()
    n = len(toks)
    idents = ("IDENTIFIER",)
    for i, t in enumerate(toks):
        v = t.value if isinstance(t.value, str) else ""
        nxt = toks[i + 1] if i + 1 < n else None
        if v in ("header", "struct", "header_union", "control", "parser", "package") and t.type != "IDENTIFIER":
            if nxt is not None and nxt.type in idents:
                names.add(nxt.value)
        elif v == "enum" and t.type != "IDENTIFIER":
            # enum NAME {  |  enum bit<W> NAME {
            j = i + 1
            while j < n and toks[j].value != "{":
                j += 1
            if j - 1 > i and toks[j - 1].type in idents:
                names.add(toks[j - 1].value)
        elif v in ("typedef", "type") and t.type != "IDENTIFIER" and (
                i == 0 or toks[i - 1].type == "ANNOTATION" or toks[i - 1].value in (";", "}", "{")):
            j, depth = i + 1, 0
            while j < n:
                vv = toks[j].value
                if vv in ("(", "[", "{"):
                    depth += 1
                elif vv in (")", "]", "}"):
                    depth -= 1
                    if depth < 0:
                        break
                elif vv == ";" and depth == 0:
                    break
                j += 1
            if j < n and toks[j].value == ";" and toks[j - 1].type in idents:
                names.add(toks[j - 1].value)
        elif v == "extern" and t.type != "IDENTIFIER":
            if nxt is not None and nxt.type in idents and i + 2 < n and toks[i + 2].value in ("<", "{"):
                names.add(nxt.value)
        elif v == "<" and i > 0 and toks[i - 1].type in idents + ("TYPE_IDENTIFIER",):
            # NAME < A, B, C >  : type variables of a generic declaration (or known types)
            j = i + 1
            cand = []
            while j + 1 < n and toks[j].type in idents:
                cand.append(toks[j].value)
                if toks[j + 1].value == ",":
                    j += 2
                    continue
                break
            if cand and j + 1 < n and toks[j + 1].value == ">":
                names.update(cand)
    return names


def tokenize(text: str, filename: str = "<string>", linemap: LineMap | None = None) -> list[Token]:
    _, lit = _parser()
    src = _Src(text, linemap, filename)
    toks = _fold_annotations(_raw_tokens(src, lit), src)
    # annotations on block statements (@atomic { ... }) carry no meaning for this target
    toks = [t for i, t in enumerate(toks)
            if not (t.type == "ANNOTATION" and i + 1 < len(toks) and toks[i + 1].value == "{")]
    tnames = _type_names(toks)
    for t in toks:
        if t.type == "IDENTIFIER" and t.value in tnames:
            t.type = "TYPE_IDENTIFIER"
    lt, gt = lit["<"], lit[">"]
    for i, t in enumerate(toks):
        if t.type == lt and i + 1 < len(toks):
            nx = toks[i + 1]
            if nx.type == "TYPE_IDENTIFIER" and i + 2 < len(toks) and toks[i + 2].type == lit.get("."):
                continue    # x < E.member: a comparison (a type argument is never T.name)
            if nx.type in TYPE_START or nx.type == lit.get("_") or (nx.type == lit.get(".") and i + 2 < len(toks)
                                                                     and toks[i + 2].type == "TYPE_IDENTIFIER"):
                t.type = "TA_LT"
        elif t.type == gt and i + 1 < len(toks):
            nx = toks[i + 1]
            if nx.type == gt and nx.line == t.line and nx.column == t.column + 1:
                t.type = "SHR_GT"
    return toks


_PRETTY = {
    "TYPE_IDENTIFIER": "a type name", "IDENTIFIER": "an identifier", "INTEGER": "an integer",
    "STRING": "a string", "ANNOTATION": "an annotation", "TA_LT": "'<'", "SHR_GT": "'>'", "$END": "end of input",
}


def _expected(p: Lark, names) -> str:
    rev = {t.name: t.pattern.value for t in p.terminals if t.pattern.type == "str"}
    items = sorted({_PRETTY.get(n) or (f"'{rev[n]}'" if n in rev else n) for n in names})
    if len(items) > 12:
        items = items[:12] + ["..."]
    return ", ".join(items)


def parse(text: str, filename: str = "<string>", linemap: LineMap | None = None):
    """Parse preprocessed P4 text into a lark tree (tokens keep expanded-text positions)."""
    p, lit = _parser()
    src = _Src(text, linemap, filename)
    toks = tokenize(text, filename, linemap)
    try:
        return p.parse(toks), src
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            last = toks[-1] if toks else None
            loc = src.loc(last.end_line, last.end_column) if last else src.loc(1, 1)
            raise P4Error(f"syntax error: unexpected end of input; expected {_expected(p, e.expected)}", loc) from None
        shown = tok.value if isinstance(tok.value, str) else "@" + tok.value[0]
        raise P4Error(f"syntax error: unexpected {shown!r}; expected {_expected(p, e.expected)}",
                      src.loc(tok.line, tok.column)) from None
    except UnexpectedInput as e:  # pragma: no cover - the token list is already complete
        raise P4Error(f"syntax error: {e}", src.loc(getattr(e, 'line', 0), getattr(e, 'column', 0))) from None
