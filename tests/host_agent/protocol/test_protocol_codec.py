"""Wire format: the struct/numpy fast path, the scapy layer and the pretty-printer are all
derived from the one field table, and agree."""
import dataclasses
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_agent import wire
from host_agent.protocol import codec, layout


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
    strag=st.integers(0, 2**32 - 1), exp=st.integers(-128, 127), klog2=st.integers(0, layout.MAX_KLOG2),
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
    # the receivers' fast check takes and refuses the same frames
    assert bytes(wire.udp_payload(fr, wire.SA_PORT)) == sa
    assert wire.udp_payload(fr, wire.SA_PORT + 1) is None
    for bad in (fr[:40], fr[:12] + b"\x86\xdd" + fr[14:], fr[:14] + b"\x46" + fr[15:],
                fr[:23] + b"\x06" + fr[24:], fr[:-1]):
        assert wire.udp_payload(bad, wire.SA_PORT) is None


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3000), klog2=st.integers(0, layout.MAX_KLOG2), pool=st.integers(1, 40),
       flags=st.integers(0, 255), seed=st.integers(0, 2**31))
def test_data_packets_are_the_packets_pack_makes(n, klog2, pool, flags, seed):
    """All DATA packets of a vector at once (numpy) == header + payload per chunk (pack)."""
    rng = np.random.default_rng(seed)
    q = rng.integers(-2**31, 2**31, size=n, dtype=np.int64).astype(np.int32)
    k = 1 << klog2
    h = _hdr(type=wire.DATA, klog2=klog2, flags=flags | wire.F_PAYLOAD)
    buf = np.full(10 + (-(-n // k)) * (wire.HDR_LEN + 4 * k), 0xAA, dtype=np.uint8)  # reused: dirty
    rows = wire.data_packets(h, q, buf, pool, wire.F_SET)
    assert rows.shape == (-(-n // k), wire.HDR_LEN + 4 * k)
    for seq in range(rows.shape[0]):
        nv = min(k, n - seq * k)
        set_flag = wire.F_SET if (seq // pool) & 1 else 0
        want = h.copy(seq=seq, slot=seq % pool, nvalid=nv, flags=(h.flags & ~wire.F_SET) | set_flag)
        pad = np.zeros(k, np.int32)
        pad[:nv] = q[seq * k:seq * k + nv]
        assert rows[seq].tobytes() == wire.pack(want, pad), seq


@pytest.mark.parametrize("klog2", [6, 8, layout.MAX_KLOG2])
def test_scapy_dissects_every_k(klog2):
    from scapy.layers.l2 import Ether
    k = 1 << klog2
    vals = np.arange(k, dtype=np.int32) - k // 2
    tpl = wire.FrameTemplate("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.0.0.1", "10.0.0.254")
    p = Ether(tpl.frame(wire.pack(_hdr(klog2=klog2), vals)))
    cls = wire.scapy_layer()
    assert p.haslayer(cls)
    np.testing.assert_array_equal(wire.from_scapy(p)[1], vals)


def test_serial_newer_wraps():
    assert wire.serial_newer(1, 0xFFFF)
    assert not wire.serial_newer(0xFFFF, 1)
    assert not wire.serial_newer(5, 5)


def test_constants_follow_from_the_table():
    assert wire.HDR_LEN == sum(f.bits for f in wire.SA_HEADER) // 8 == 28
    assert wire.MAX_WORKERS == layout.FIELD["bitmap"].bits == 32
    assert [f.name for f in wire.SA_HEADER][:3] == ["version", "type", "flags"]
    assert codec.HEADER_STRUCT.format == "!BBBBBBHIHHIIbBBB"
    assert [f.name for f in dataclasses.fields(wire.Header)] == [f.name for f in wire.SA_HEADER]
    assert wire.Header() == wire.Header(**{f.name: f.default for f in wire.SA_HEADER})


def test_scapy_layer_fields_are_the_table():
    cls = wire.scapy_layer()
    assert [f.name for f in cls.fields_desc] == [f.name for f in wire.SA_HEADER] + ["vals"]
    assert len(cls()) == wire.HDR_LEN


def test_pretty_printer_names_type_flags_and_fields():
    h = _hdr(type=wire.PACK, flags=wire.F_UCAST | wire.F_SET, bitmap=0x30, strag=5)
    text = str(h)
    assert text.startswith("PACK[") and "flags=SET|UCAST" in text
    assert "bitmap=0x30" in text and "strag=0x5" in text and "seq=123456" in text
    assert "rsv=" not in text
    assert str(_hdr(type=3, flags=0)).startswith("3[flags=0 ")


def test_wrapping_and_strict_fields():
    b = _hdr(iter=0x10005, bitmap=-1, flags=~wire.F_PAYLOAD).pack()
    h = wire.Header.unpack(b)
    assert h.iter == 5 and h.bitmap == 0xFFFFFFFF and h.flags == 0xFF & ~wire.F_PAYLOAD
    for bad in (dict(job=256), dict(seq=-1), dict(exp=128)):
        with pytest.raises(struct.error):
            _hdr(**bad).pack()


@pytest.mark.parametrize("klog2", [0, 8, layout.MAX_KLOG2])
def test_payload_sizes_up_to_max_lanes(klog2):
    k = 1 << klog2
    vals = (np.arange(k, dtype=np.int64) * 2654435761 % (1 << 32) - (1 << 31)).astype(np.int32)
    b = wire.pack(_hdr(klog2=klog2), vals)
    assert len(b) == wire.HDR_LEN + 4 * k
    assert b[wire.HDR_LEN:] == codec.payload_struct(k).pack(*(int(v) for v in vals))
    h, v = wire.unpack(b)
    assert h.k == k
    np.testing.assert_array_equal(v, vals)
    assert v.dtype == np.int32 and v.dtype.isnative


def test_klog2_past_max_rejected():
    b = bytearray(_hdr(klog2=layout.MAX_KLOG2 + 1).pack())
    with pytest.raises(wire.WireError, match="klog2"):
        wire.unpack(bytes(b))


def test_codec_is_derived_for_any_table():
    """A different table gets its own struct units and a round-tripping codec."""
    F = layout.HeaderField
    table = (F("a", 3, layout.UINT, 0, ""), F("b", 5, layout.HEX, 0, "", wraps=True),
             F("c", 16, layout.SINT, 0, ""), F("d", 2, layout.UINT, 0, ""),
             F("e", 6, layout.UINT, 0, ""), F("f", 8, layout.UINT, 0, "", wraps=True))
    units = codec.struct_units(table)
    assert [tuple(f.name for f in u.fields) for u in units] == [("a", "b"), ("c",), ("d", "e"),
                                                                ("f",)]
    st_ = struct.Struct(codec.struct_format(table))
    assert st_.format == "!BhBB"
    pack, unpack = codec.compile_codec(units, st_)

    class Obj:
        a, b, c, d, e, f = 5, 0x3F, -300, 2, 33, 0x1FF
    raw = pack(Obj)
    assert raw == bytes([(5 << 5) | 0x1F]) + (-300).to_bytes(2, "big", signed=True) + \
        bytes([(2 << 6) | 33, 0xFF])
    assert unpack(lambda *v: v, raw, 0) == (5, 0x1F, -300, 2, 33, 0xFF)


@pytest.mark.parametrize("widths", [(4, 8), (12, 12), (24,), (40,)])
def test_struct_units_refuse_fields_that_do_not_fill_a_unit(widths):
    table = [layout.HeaderField(f"x{i}", w, layout.UINT, 0, "") for i, w in enumerate(widths)]
    with pytest.raises(ValueError):
        codec.struct_units(table)


def test_struct_units_refuse_a_signed_field_sharing_bytes():
    F = layout.HeaderField
    table = [F("a", 4, layout.UINT, 0, ""), F("b", 8, layout.SINT, 0, ""),
             F("c", 4, layout.UINT, 0, "")]
    with pytest.raises(ValueError, match="signed"):
        codec.struct_units(table)


def test_table_refuses_inconsistent_rows():
    with pytest.raises(ValueError):
        layout.HeaderField("x", 4, layout.SINT, 0, "")        # signed fields are whole bytes
    with pytest.raises(ValueError):
        layout.HeaderField("x", 8, layout.ENUM, 0, "")        # an enum needs its names
    with pytest.raises(ValueError):
        layout.HeaderField("x", 8, "float", 0, "")
