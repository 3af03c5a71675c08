"""Reference checksums written bit by bit from their definitions, independent of the
target's code (emulation/v1model/hashes.py), for computing expected values in tests."""


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2's ``crc16``): reflected polynomial 0x8005 (0xA001 reflected),
    initial value 0, no final xor; one bit at a time."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc
