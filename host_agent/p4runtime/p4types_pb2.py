"""Message classes of ``p4/config/v1/p4types.proto`` (built from the vendored schema; see proto.py)."""
from .proto import build as _build

globals().update(_build("p4/config/v1/p4types.proto", __name__))
