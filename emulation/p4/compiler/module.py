"""Module output: the whole generated Python module (classes, constants, the ``build`` factory)."""
from __future__ import annotations

from .. import nodes as A
from ..types import BlockT, ExternT
from .source_writer import Out
from .symbols import InstSym, TypeSym


class ModuleMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def build_module(self) -> tuple[str, list]:
        """Generate the module; returns (source, [(package param, block kind, decl, apply fn)])."""
        main = self.compile()
        pkg = main.ty
        if not isinstance(pkg, BlockT) or not isinstance(pkg.decl, A.PackageDecl):
            raise self.err("main must be an instance of a package", main.decl)
        self._factories: list[Out] = []
        body = Out()
        body.ind = 1
        # top-level actions and functions
        self._fn_indent, self._fn_sink = 1, []
        for a in self.top_actions:
            self.gen_action(a, self.glob, body, [])
        for f in getattr(self, "top_functions", []):
            if not f.decl.type_params:      # a generic one is compiled per call (its type arguments)
                self.ensure_function(f, self.glob)
        for sym in list(self.glob.syms.values()):
            # extern objects instantiated at top level (shared by every control), e.g. a register
            if isinstance(sym, InstSym) and isinstance(sym.ty, ExternT) and sym.decl is not None:
                sym.kind = "extern"
                self.hooks.extern_instance(self, sym, sym.decl.args, body, self.glob)
        blocks = []
        params = pkg.decl.params
        bound = self.bind_args(params, main.decl.args, main.decl, f"package {pkg.decl.name}", decl=pkg.decl)
        calls = Out()
        calls.ind = 1
        for p, a in zip(params, bound):
            node = a.value
            nested = self._nested_package(node)
            if nested is not None:
                # a package passed to another package (p4c's front end accepts it): its parsers
                # and controls are checked, but the program is not one package of blocks for
                # the architecture (blocks then does not match the architecture's package)
                self._check_nested_package(*nested)
                blocks.append((p.name, None, None))
                continue
            if isinstance(node, A.Path):
                s = self.glob.lookup(node.name)
                if not isinstance(s, InstSym) or not isinstance(s.ty, BlockT) or \
                        not isinstance(s.ty.decl, (A.ControlDecl, A.ParserDecl)):
                    raise self.err(f"{node.name} is not a parser or control instance (argument {p.name} of "
                                   f"{pkg.decl.name})", node)
                d, path, cargs = s.ty.decl, s.full, s.decl.args
            elif isinstance(node, A.CtorCall):
                s = self.glob.lookup(node.tname)
                if not isinstance(s, TypeSym) or not isinstance(s.ty, (A.ControlDecl, A.ParserDecl)):
                    raise self.err(f"{node.tname} is not a parser or control declaration", node)
                d, path, cargs = s.ty, node.tname, node.args
            else:
                raise self.err(f"argument {p.name} of {pkg.decl.name} must be a parser or control", main.decl)
            syms = self.instance_args(d, cargs, self.glob, node)
            fname = self.gen_block_instance(d, path, syms, self.glob)
            py = f"blk_{p.name}"
            calls(f"{py} = {fname}({', '.join(self._factory_args[fname])})")
            blocks.append((p.name, d, py))
        if any(d is None for _, d, _ in blocks):
            self.check_blocks_main_skips()
            return "", blocks
        src = Out()
        if self._lanes_used:
            src("import numpy as np")
        if self._uses_struct:
            src("import struct as _struct")
        src.lines.extend(self.classes.lines)
        with src.block("def build(RT, REG):"):
            for line in self.hooks.prelude:
                src(line)
            if self.trace:
                src("TR = RT.tracer")
            src.lines.extend(self.consts_code.lines and ["    " + ln for ln in self.consts_code.lines])
            src.lines.extend(body.lines)
            for fo in self._fn_sink:
                src.lines.extend(fo.lines)
            for fo in self._factories:
                src.lines.extend(fo.lines)
            src.lines.extend(calls.lines)
            src(f"return {{{', '.join(f'{n!r}: {py}' for n, _, py in blocks)}}}")
        self.check_blocks_main_skips()
        return src.text(), blocks

    def _nested_package(self, node: A.Node):
        """``(package decl, constructor arguments, where they are written)`` if ``node`` (an
        argument of a package) is a package instance or a package constructor call, else None."""
        if isinstance(node, A.Path):
            s = self.glob.lookup(node.name)
            if isinstance(s, InstSym) and isinstance(s.ty, BlockT) and isinstance(s.ty.decl, A.PackageDecl):
                return s.ty.decl, s.decl.args, s.decl
        elif isinstance(node, A.CtorCall):
            s = self.glob.lookup(node.tname)
            if isinstance(s, TypeSym) and isinstance(s.ty, A.PackageDecl):
                return s.ty, node.args, node
        return None

    def _check_nested_package(self, pdecl: A.PackageDecl, args: list, node: A.Node) -> None:
        """Compile (for their errors) the parsers and controls given to a package that is itself
        an argument of ``main``'s package."""
        bound = self.bind_args(pdecl.params, args, node, f"package {pdecl.name}", decl=pdecl)
        for a in bound:
            inner = a.value
            nested = self._nested_package(inner)
            if nested is not None:
                self._check_nested_package(*nested)
                continue
            if isinstance(inner, A.Path):
                s = self.glob.lookup(inner.name)
                if isinstance(s, InstSym) and isinstance(s.ty, BlockT) and \
                        isinstance(s.ty.decl, (A.ControlDecl, A.ParserDecl)):
                    d, path, cargs = s.ty.decl, s.full, s.decl.args
                else:
                    continue
            elif isinstance(inner, A.CtorCall):
                s = self.glob.lookup(inner.tname)
                if not isinstance(s, TypeSym) or not isinstance(s.ty, (A.ControlDecl, A.ParserDecl)):
                    continue
                d, path, cargs = s.ty, inner.tname, inner.args
            else:
                continue
            syms = self.instance_args(d, cargs, self.glob, inner)
            self.gen_block_instance(d, path, syms, self.glob)
