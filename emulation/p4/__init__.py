"""P4_16 front end; knows no architecture and imports nothing else of the project.

``frontend.py`` (entry points) -> ``preprocess.py`` (pcpp) -> ``lexer.py`` + ``p4.lark`` (tokens,
LALR parse) -> ``builder.py`` (lark tree -> ``nodes.py``, the syntax tree) -> ``compiler/``
(type check + Python code generation, one pass; an architecture plugs in through
``compiler/hooks.py``).  ``types.py``, ``info.py`` (control-plane description), ``pyrt.py``
(run-time support of the generated code) and ``errors.py`` are shared data.
"""
