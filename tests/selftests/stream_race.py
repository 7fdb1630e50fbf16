#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Stream reads racing writes of the blocks they cover.

  stream_race.py stamp DEV MIB             write version 0 of every 4 KiB
                                           block of the first MIB MiB
  stream_race.py run DEV MIB STEP SECONDS  race, then exit 1 on a stale read

A block holds its number and a version, 16 bytes repeated over 4 KiB.
`run` first writes version 1 of every STEP-th block (write-back: these
become dirty), then for SECONDS a writer thread keeps writing a higher
version of one of those blocks at a time while the main thread reads the
region sequentially in 1 MiB requests (a stream).  Each block read must be
whole (one version throughout), be the block asked for, and be at least
the version whose write had completed when the read was issued: an older
one is data lost to the reader (the origin's stale copy of a dirty block,
say).  Blocks never written must read as version 0.
"""
import mmap
import os
import random
import struct
import sys
import threading
import time

BS = 4096
REQ = 1 << 20


def stamp(b, v):
    return struct.pack("<QQ", b, v) * (BS // 16)


def write_block(fd, buf, b, v):
    buf[:BS] = stamp(b, v)
    if os.pwritev(fd, [memoryview(buf)[:BS]], b * BS) != BS:
        sys.exit("stream_race: short write of block %d" % b)


def main():
    mode, dev, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
    nblocks = (mib << 20) // BS
    fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, REQ)
    if mode == "stamp":
        for first in range(0, nblocks, REQ // BS):
            for i in range(REQ // BS):
                buf[i * BS:(i + 1) * BS] = stamp(first + i, 0)
            os.pwritev(fd, [buf], first * BS)
        return 0

    step, seconds = int(sys.argv[4]), float(sys.argv[5])
    hot = list(range(step // 2, nblocks, step))
    acked = {b: 1 for b in hot}
    wbuf = mmap.mmap(-1, BS)
    for b in hot:
        write_block(fd, wbuf, b, 1)
    stop = threading.Event()
    writes = [0]

    def writer():
        wfd = os.open(dev, os.O_RDWR | os.O_DIRECT)
        mine = mmap.mmap(-1, BS)
        rnd = random.Random(1)
        while not stop.is_set():
            b = rnd.choice(hot)
            v = acked[b] + 1
            write_block(wfd, mine, b, v)
            acked[b] = v
            writes[0] += 1
        os.close(wfd)

    t = threading.Thread(target=writer)
    t.start()
    reads = bad = 0
    end = time.monotonic() + seconds
    off = 0
    try:
        while time.monotonic() < end and bad < 5:
            floor = dict(acked)
            if os.preadv(fd, [buf], off) != REQ:
                sys.exit("stream_race: short read at %d" % off)
            first = off // BS
            for i in range(REQ // BS):
                blk = buf[i * BS:(i + 1) * BS]
                b, v = struct.unpack_from("<QQ", blk)
                want = floor.get(first + i, 0)
                if b != first + i or blk != stamp(b, v) or v < want or \
                        (want == 0 and v != 0):
                    bad += 1
                    print("stale: block %d read as block %d version %d "
                          "(whole: %s), version %d was written" %
                          (first + i, b, v, blk == stamp(b, v), want))
            reads += 1
            off = (off + REQ) % (nblocks * BS)
    finally:
        stop.set()
        t.join()
    print("%d stream reads of 1 MiB, %d writes of %d hot blocks, %d stale" %
          (reads, writes[0], len(hot), bad))
    return 1 if bad or not reads or not writes[0] else 0


sys.exit(main())
