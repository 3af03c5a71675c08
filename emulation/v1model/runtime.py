"""Per-switch run-time object that the generated code calls for v1model extern *functions*.

One ``Runtime`` per :class:`~emulation.v1model.switch.Switch`; the generated module
holds it as the global ``RT``.  Semantics follow BMv2's ``simple_switch`` primitives
(``v1model-semantics.md``).
"""
from __future__ import annotations

import random as _random
from dataclasses import dataclass
from typing import Any, Sequence

from .errors import P4AssertionError
from .externs import PacketLength
from .hashes import HASHES


@dataclass(slots=True)
class Frame:
    """Per-pass requests made by externs (clone, resubmit, recirculate, truncate)."""
    clone_session: int | None = None
    clone_fl: int | None = None
    resubmit_fl: int | None = None
    recirc_fl: int | None = None
    truncate: int | None = None


class Runtime:
    """``frame`` is None at the start of each pass and becomes a :class:`Frame` on the first
    request, so the switch sees "nothing requested" with one comparison."""

    def __init__(self, switch: Any, seed: int | None = None):
        self.sw = switch
        self.plen = PacketLength()
        self.frame: Any = None
        self.rng = _random.Random(seed)
        self.custom_crc: dict[str, dict] = {}
        self.drop_port = getattr(switch, "drop_port", 511)
        self.cksum_error = 0
        self.payload = b""
        self.log_fn = getattr(switch, "log", None)
        self.hash_fns = self._make_hash_fns()

    # -- traffic-manager requests (the last call of each kind counts) ------
    def _requests(self) -> Frame:
        f = self.frame
        if f is None:
            f = self.frame = Frame()
        return f

    def clone(self, session: int, field_list: int | None = None) -> None:
        f = self._requests()
        f.clone_session = session
        f.clone_fl = field_list

    def resubmit(self, field_list: int) -> None:
        self._requests().resubmit_fl = field_list

    def recirculate(self, field_list: int) -> None:
        self._requests().recirc_fl = field_list

    def truncate(self, length: int) -> None:
        self._requests().truncate = length

    # -- misc -----------------------------------------------------------------
    def now_us(self) -> int:
        return self.sw.now_us()

    def random(self, lo: int, hi: int) -> int:
        if hi < lo:
            lo, hi = hi, lo
        return self.rng.randint(lo, hi)

    def digest(self, name: str, receiver: int, fields: dict[str, int]) -> None:
        self.sw.digests.append((name, receiver, fields))

    def log_msg(self, fmt: str, args: Sequence[int] = ()) -> None:
        if self.log_fn is None:
            return
        parts = fmt.split("{}")
        msg = parts[0]
        for i, p in enumerate(parts[1:]):
            msg += (str(args[i]) if i < len(args) else "{}") + p
        self.log_fn(f"log_msg: {msg}")

    def assert_fail(self, what: str, where: str) -> None:
        raise P4AssertionError(f"{where}: {what} failed")

    # -- hashes and checksums ---------------------------------------------------
    def hash_bytes(self, algo: str, data: bytes) -> int:
        return self.hash_fns[algo](data)

    def _make_hash_fns(self) -> dict:
        """Algorithm name -> function(bytes) -> int; the generated code indexes this directly."""
        fns = {}
        for name, fn in HASHES.items():
            if name.endswith("_custom"):
                fns[name] = (lambda data, fn=fn, name=name:
                             fn(data, **self.custom_crc[name]) if name in self.custom_crc else fn(data))
            else:
                fns[name] = fn
        fns["random"] = lambda data: self.rng.getrandbits(32)
        return fns

    def hash(self, algo: str, base: int, data: bytes, maxv: int, out_width: int) -> int:
        """``hash(out O result, algo, T base, D data, M max)``: ``base + H % max`` (max 0 -> 1)."""
        h = self.hash_fns[algo](data)
        if maxv == 0:
            maxv = 1
        return (base + h % maxv) & ((1 << out_width) - 1)

    def checksum(self, algo: str, data: bytes) -> int:
        return self.hash_fns[algo](data)
