"""Where things are in the repository, for tests that run files or commands."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
P4SRC = REPO / "p4src"
