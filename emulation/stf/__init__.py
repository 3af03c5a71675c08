"""p4c's STF test format on the embedded v1model target (``saatp p4 stf``)."""
from .parser import StfError, parse_stf

__all__ = ["StfError", "parse_stf"]
