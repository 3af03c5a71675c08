"""Type checking and code generation: P4_16 AST -> one Python module per program.

One pass over the program does both jobs: every expression is typed (with ``file:line:col``
errors for what the language forbids) and lowered to a Python expression string in the
same step, so there is one source of truth for what an operator means.  The output is
ordinary Python source, compiled once with ``compile()``; no AST is walked per packet.

Lowering rules (P4_16 spec, section 8):
* ``bit<W>`` values are Python ints in ``[0, 2^W)``; ``int<W>`` values are Python ints in
  ``[-2^(W-1), 2^(W-1))``; every operator re-establishes that range (wrap-around,
  saturation, truncating casts).  ``bool`` is ``bool``; ``error`` and enums are ints.
* headers and structs are generated ``__slots__`` classes; a header's validity bit is
  ``_valid``; composite assignment copies in place (``dst._set(src)``), so references
  handed to actions and sub-controls keep seeing the same objects.
* parsers and controls become *factories* (one per declaration) that build one instance
  per instance path; their parameters and control-level variables are closure cells
  shared by the instance's actions, tables and ``apply``.
* ``out``/``inout`` parameters of scalar type are returned (copy-out); composite ones are
  passed by reference.

The architecture (v1model) is not known here: extern objects and extern functions are
lowered through :class:`~emulation.p4.compiler.hooks.ArchHooks`, which
``emulation/v1model/arch.py`` implements.

Modules (each a mixin of ``Compiler`` or the data it shares):

* ``symbols.py``: symbols, scopes, fresh names
* ``source_writer.py``: the generated source, line by line
* ``hooks.py``: ArchHooks, the only seam to an architecture
* ``typecheck.py``: type resolution and checks
* ``consteval.py``: constant evaluation
* ``declarations.py``: top-level declarations
* ``header_classes.py``: header/union/struct classes and their byte codecs
* ``expressions.py``: expressions and l-values
* ``calls.py``: calls and argument passing
* ``statements.py``: statements
* ``blocks.py``: functions, actions, instances, controls
* ``parsers.py``: parser states and transitions
* ``tables.py``: tables and const entries
* ``module.py``: module output (the generated Python module)
* ``core.py``: ``Compiler``, the mixins above composed, and the state they share
"""
