"""Wire format: the struct/numpy fast path and the scapy layers agree."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_agent import wire


def _hdr(**kw):
    base = dict(type=wire.DATA, flags=wire.F_SET, job=3, wid=5, nworkers=8, helper=2, slot=17,
                seq=123456, iter=65535, nvalid=40, bitmap=1 << 5, strag=0x80000001, exp=-7,
                klog2=6, dst=4, rsv=0)
    base.update(kw)
    return wire.Header(**base)


def test_header_is_28_bytes_and_roundtrips():
    h = _hdr()
    b = h.pack()
    assert len(b) == wire.HDR_LEN == 28
    assert b[0] == (1 << 4) | wire.DATA
    h2 = wire.Header.unpack(b)
    assert h2 == h


def test_payload_roundtrip_big_endian():
    vals = np.arange(-32, 32, dtype=np.int32) * 1000003
    h = _hdr()
    b = wire.pack(h, vals)
    assert len(b) == 28 + 4 * 64
    assert b[28:32] == int(vals[0]).to_bytes(4, "big", signed=True)
    h2, v2 = wire.unpack(b)
    assert h2.flags & wire.F_PAYLOAD
    np.testing.assert_array_equal(v2, vals)


@pytest.mark.parametrize("bad", [b"", b"\x10" * 27])
def test_short_header_rejected(bad):
    with pytest.raises(wire.WireError):
        wire.unpack(bad)


def test_bad_version_and_lengths_rejected():
    b = bytearray(wire.pack(_hdr(), np.zeros(64, np.int32)))
    with pytest.raises(wire.WireError, match="payload"):
        wire.unpack(bytes(b[:-4]))
    b2 = bytearray(b)
    b2[0] = (2 << 4) | wire.DATA
    with pytest.raises(wire.WireError, match="version"):
        wire.unpack(bytes(b2))
    ho = wire.pack(_hdr(), None)
    with pytest.raises(wire.WireError, match="trailing"):
        wire.unpack(ho + b"\0")
    with pytest.raises(wire.WireError):
        wire.pack(_hdr(), np.zeros(63, np.int32))


hdr_st = st.builds(
    wire.Header, type=st.sampled_from([0, 1, 2, 4, 5, 6, 7, 8]), flags=st.integers(0, 255),
    job=st.integers(0, 255), wid=st.integers(0, 255), nworkers=st.integers(0, 255),
    helper=st.integers(0, 255), slot=st.integers(0, 0xFFFF), seq=st.integers(0, 2**32 - 1),
    iter=st.integers(0, 0xFFFF), nvalid=st.integers(0, 0xFFFF), bitmap=st.integers(0, 2**32 - 1),
    strag=st.integers(0, 2**32 - 1), exp=st.integers(-128, 127), klog2=st.integers(0, 6),
    dst=st.integers(0, 255), rsv=st.integers(0, 255))


@settings(max_examples=60, deadline=None)
@given(h=hdr_st, seed=st.integers(0, 2**31))
def test_fast_path_agrees_with_scapy(h, seed):
    rng = np.random.default_rng(seed)
    vals = None
    if h.flags & wire.F_PAYLOAD:
        vals = rng.integers(-2**31, 2**31, size=h.k, dtype=np.int64).astype(np.int32)
    fast = wire.pack(h.copy(), vals)
    sc = bytes(wire.to_scapy(h, vals))
    assert fast == sc
    cls = wire.scapy_layer()
    h2, v2 = wire.from_scapy(cls(fast))
    h3, v3 = wire.unpack(fast)
    assert h2 == h3
    if vals is None:
        assert v2 is None and v3 is None
    else:
        np.testing.assert_array_equal(v2, vals)
        np.testing.assert_array_equal(v3, vals)


def test_frame_template_and_strip_agree_with_scapy():
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    tpl = wire.FrameTemplate("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.0.0.1", "10.0.0.254")
    sa = wire.pack(_hdr(), np.ones(64, np.int32))
    fr = tpl.frame(sa)
    assert len(fr) == 14 + 20 + 8 + 28 + 256 == 326
    p = Ether(fr)
    assert p[IP].src == "10.0.0.1" and p[IP].dst == "10.0.0.254"
    assert p[UDP].dport == wire.SA_PORT and p[UDP].len == 8 + len(sa)
    # scapy recomputes the IPv4 checksum: ours must match
    chk = p[IP].chksum
    del p[IP].chksum
    assert Ether(bytes(p))[IP].chksum == chk
    cls = wire.scapy_layer()
    assert p.haslayer(cls) and p[cls].seq == 123456 and list(p[cls].vals) == [1] * 64
    l2, payload = wire.strip_frame(fr, check_ip_csum=True)
    assert bytes(payload) == sa and l2.dport == wire.SA_PORT
    for bad in (fr[:40], fr[:12] + b"\x86\xdd" + fr[14:], fr[:14] + b"\x46" + fr[15:]):
        with pytest.raises(wire.WireError):
            wire.strip_frame(bad)


def test_serial_newer_wraps():
    assert wire.serial_newer(1, 0xFFFF)
    assert not wire.serial_newer(0xFFFF, 1)
    assert not wire.serial_newer(5, 5)
