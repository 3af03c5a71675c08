""":class:`Out`: the generated Python source, one indented line at a time."""
from __future__ import annotations

from contextlib import contextmanager


class Out:
    def __init__(self):
        self.lines: list[str] = []
        self.ind = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    @contextmanager
    def block(self, header: str):
        self(header)
        self.ind += 1
        n = len(self.lines)
        yield
        if len(self.lines) == n:
            self("pass")
        self.ind -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
