#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""crc_twin.py IN OUT: write to OUT a copy of the 4 KiB block IN that
differs from it in its first four bytes, has the same 16-bit unit checksum
as dm-tac's on-disk map keeps it (the low 16 bits of the unit's crc32c),
and a different crc32c.  A cache that lost the write of OUT over IN would
pass a 16-bit check by construction; dm-tac must still catch it.

crc32c is affine in the data: for blocks of one length,
crc(a ^ d) = crc(a) ^ lin(d), lin(d) being the CRC of d from a zero
register.  So a change d of the first four bytes keeps the low 16 bits
when lin(d) & 0xffff == 0: found by walking the 32 one-bit changes in
Gray-code order (at most about 2^16 steps)."""
import sys

UNIT = 4096
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data, crc=0xFFFFFFFF):
    """The kernel's crc32c(~0, data, len): no final inversion."""
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def lin_bit(bit):
    """lin() of a unit that is all zero but for one bit of its first word."""
    crc = crc32c((1 << bit).to_bytes(4, "little"), 0)
    for _ in range(UNIT - 4):          # zero bytes: one table step each
        crc = TABLE[crc & 0xFF] ^ (crc >> 8)
    return crc


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    block = open(sys.argv[1], "rb").read()
    if len(block) != UNIT:
        sys.exit("crc_twin: %s is not 4096 bytes" % sys.argv[1])
    basis = [lin_bit(b) for b in range(32)]
    image = 0
    prev = 0
    for n in range(1, 1 << 20):
        gray = n ^ (n >> 1)
        image ^= basis[(gray ^ prev).bit_length() - 1]
        prev = gray
        if image & 0xFFFF == 0 and image:
            break
    else:
        sys.exit("crc_twin: no change found")
    head = int.from_bytes(block[:4], "little") ^ gray
    twin = head.to_bytes(4, "little") + block[4:]
    a, b = crc32c(block), crc32c(twin)
    if twin == block or a & 0xFFFF != b & 0xFFFF or a == b:
        sys.exit("crc_twin: internal error (%08x %08x)" % (a, b))
    open(sys.argv[2], "wb").write(twin)


main()
