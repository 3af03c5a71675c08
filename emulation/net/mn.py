"""Import Mininet from the distribution's Python path.

Debian's ``mininet`` package installs into ``/usr/lib/python3/dist-packages``, which a
virtualenv does not see.  :func:`import_mininet` appends that directory to ``sys.path``
(after the venv's own directories, so the venv's packages keep precedence) and imports
Mininet, or raises :class:`MininetMissing` with what to install.
"""
from __future__ import annotations

import os
import shutil
import sys

DIST_DIRS = ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages")


class MininetMissing(RuntimeError):
    pass


def import_mininet():
    """Return the ``mininet`` package, or raise :class:`MininetMissing`."""
    try:
        import mininet  # noqa: F401
    except ImportError:
        for d in DIST_DIRS:
            if os.path.isdir(os.path.join(d, "mininet")) and d not in sys.path:
                sys.path.append(d)
        try:
            import mininet  # noqa: F401
        except ImportError as e:
            raise MininetMissing(
                "Mininet is not installed (its Python package was not found in the venv nor in "
                f"{', '.join(DIST_DIRS)}); install it with `apt-get install mininet` "
                "(scripts/setup.sh does)") from e
    import mininet.net  # noqa: F401
    import mininet.node  # noqa: F401
    import mininet.link  # noqa: F401
    if shutil.which("mnexec") is None:
        raise MininetMissing("Mininet's helper `mnexec` is not on PATH; reinstall the mininet package")
    return mininet


def why_unavailable() -> str | None:
    """None when Mininet experiments can run here, else the reason (for skips and errors)."""
    if os.geteuid() != 0:
        return "Mininet needs root (network namespaces, veth links, raw sockets)"
    try:
        import_mininet()
    except MininetMissing as e:
        return str(e)
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not on PATH"
    return None
