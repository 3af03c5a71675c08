"""Helpers for gen_stf.py: bit packing, checksums and CRCs (CRC-16/ARC, CRC-32) as BMv2 computes them."""
import os, struct, sys, zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # tests/
from testsupport.crc_reference import crc16_arc as crc16  # noqa: E402

def bits(*fields):
    """fields: (width, value) MSB first -> bytes (total must be byte aligned)."""
    v = 0; w = 0
    for width, val in fields:
        v = (v << width) | (val & ((1 << width) - 1)); w += width
    assert w % 8 == 0, w
    return v.to_bytes(w // 8, 'big')

def eth(dst=2, src=1, etype=0x1234):
    return bits((48, dst), (48, src), (16, etype))

def hx(b):
    return b.hex().upper()

def csum16(b):
    if len(b) % 2: b += b'\0'
    s = 0
    for i in range(0, len(b), 2):
        s += (b[i] << 8) | b[i+1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF

def crc32(b):
    return zlib.crc32(b) & 0xFFFFFFFF

def s8(v):  # to signed
    v &= 0xFF
    return v - 256 if v >= 128 else v

def u(v, w):
    return v & ((1 << w) - 1)

def sat_s(v, w):
    lo, hi = -(1 << (w-1)), (1 << (w-1)) - 1
    return max(lo, min(hi, v))

def sat_u(v, w):
    return max(0, min((1 << w) - 1, v))

def ipv4(src, dst, ttl=64, proto=17, tot=20, ident=1, tos=0, csum=None):
    h = bits((4,4),(4,5),(8,tos),(16,tot),(16,ident),(3,0),(13,0),(8,ttl),(8,proto),(16,0),(32,src),(32,dst))
    c = csum16(h) if csum is None else csum
    return h[:10] + c.to_bytes(2,'big') + h[12:]

def ip(s):
    a = [int(x) for x in s.split('.')]
    return (a[0]<<24)|(a[1]<<16)|(a[2]<<8)|a[3]
