"""Message classes of ``p4/v1/p4runtime.proto`` (built from the vendored schema; see proto.py)."""
from .proto import build as _build

globals().update(_build("p4/v1/p4runtime.proto", __name__))
