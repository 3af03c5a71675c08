"""P4_16 front end: preprocess -> parse (lark) -> typed AST -> checks.  Knows no architecture."""
