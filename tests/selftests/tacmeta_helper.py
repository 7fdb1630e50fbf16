#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for tac_tacmeta.sh (in the VM): data patterns, damaged and
forged cache images.  One process does a whole job: starting Python over
the VM's 9p root costs more than the work.

  fill FILE NBLOCKS                 every 4 KiB block "old <n>"
  write DEV FIRST END STEP          O_DIRECT "new <n>" to those blocks, fsync
  verify DEV NBLOCKS FIRST END STEP [LOST...]
                                    every block reads "new <n>" if written
                                    (and not LOST), else "old <n>"
  damage SRC OUTDIR COUNT SEED LIMIT BITS_MAX
                                    OUTDIR/<i>.img: SRC with 1..BITS_MAX
                                    random bits below LIMIT inverted (as
                                    tests/crash/flipbits); one line each
  forge IMG dup|beyond              a second dirty entry for the first
                                    dirty block's origin block, or that
                                    entry's origin block past the origin;
                                    sector checksums fixed
  temp-area DEV PAGES               both superblock slots: a temperature
                                    area of PAGES pages, the data area
                                    after it, the geometry otherwise
                                    consistent; checksums fixed
  lost IMG SECTOR                   origin blocks of the dirty entries in
                                    map sector SECTOR
  copy SRC DST                      copy a file
  klog                              the kernel's messages since the last
                                    klog (the first: since the helper
                                    started), from /dev/kmsg
  counts IMG                        'tacmeta dump IMG', its JSON read:
                                    the numbers of mappings, dirty entries
                                    and temperature records
  serve                             many commands, one process: a request
                                    a line on stdin, its words separated by
                                    tabs: [NAME=VALUE...] 'tacmeta ARG...'
                                    (tacmeta's main(), the command line's
                                    code) or one of the above, with those
                                    variables in its environment; the
                                    reply is what it
                                    printed (stdout and stderr), then a
                                    line "\x1e<exit status>"
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import mmap
import os
import random
import struct
import sys
import traceback

BS = 4096
here = os.path.dirname(os.path.abspath(__file__))
_loader = importlib.machinery.SourceFileLoader(
    "tacmeta", os.path.join(here, "..", "..", "tools", "tacmeta"))
_spec = importlib.util.spec_from_loader("tacmeta", _loader)
tm = importlib.util.module_from_spec(_spec)
_loader.exec_module(tm)


def block(kind, n):
    head = ("%s %d\n" % (kind, n)).encode()
    fill = bytes([(n * 7 + (1 if kind == "new" else 0)) % 251]) * (BS - len(head))
    return head + fill


def fill(path, nblocks):
    with open(path, "r+b") as f:
        for n in range(int(nblocks)):
            f.write(block("old", n))


def write(dev, first, end, step):
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, BS)
    for n in range(int(first), int(end), int(step)):
        buf.seek(0)
        buf.write(block("new", n))
        os.pwritev(fd, [buf], n * BS)
    os.fsync(fd)
    os.close(fd)


def verify(dev, nblocks, first, end, step, *lost):
    written = set(range(int(first), int(end), int(step))) - set(map(int, lost))
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 1 << 20)
    bad = 0
    per = (1 << 20) // BS
    for c in range(0, int(nblocks), per):
        got = os.preadv(fd, [buf], c * BS)
        data = buf[:got]
        for i in range(min(per, int(nblocks) - c)):
            n = c + i
            want = block("new" if n in written else "old", n)
            if data[i * BS:(i + 1) * BS] != want:
                bad += 1
                if bad <= 3:
                    print("block %d: %r" % (n, data[i * BS:i * BS + 16]))
    os.close(fd)
    print("%d wrong blocks" % bad)
    return 1 if bad else 0


def damage(src, outdir, count, seed, limit, bits_max):
    pristine = open(src, "rb").read()
    rnd = random.Random(int(seed))
    for i in range(1, int(count) + 1):
        img = bytearray(pristine)
        flips = []
        for _ in range(rnd.randint(1, int(bits_max))):
            off, bit = rnd.randrange(int(limit)), rnd.randrange(8)
            img[off] ^= 1 << bit
            flips.append("%d.%d" % (off, bit))
        with open(os.path.join(outdir, "%d.img" % i), "wb") as f:
            f.write(img)
        print(i, " ".join(flips))


def _cache(img):
    dev = tm.Dev(img, write=True, force=True)
    c = tm.Cache(dev, tm.Report(None))
    return dev, c


def _put_entry(dev, c, cb, v, crcs):
    s, i = divmod(cb, c.per)
    off = (c.sb["map_start"] + s) * 512
    sec = bytearray(dev.read(off, 512))
    e = tm.SECTOR_HDR + i * c.eb
    struct.pack_into("<Q", sec, e, v)
    struct.pack_into("<%dH" % c.units, sec, e + 8, *crcs)
    struct.pack_into("<I", sec, 0, c.sector_csum(bytes(sec)))
    dev.write(off, bytes(sec))


def forge(img, what):
    dev, c = _cache(img)
    first = next(cb for cb in sorted(c.entries) if c.entries[cb]["dirty"])
    e = c.entries[first]
    if what == "dup":
        # A free cache block in a later map sector.
        free = next(cb for cb in range(c.sb["nr_cblocks"])
                    if cb not in c.entries and cb // c.per > first // c.per)
        v = e["oblock"] << 3 | tm.ENTRY_NOCRC | tm.ENTRY_DIRTY | tm.ENTRY_VALID
        _put_entry(dev, c, free, v, [0] * c.units)
        print(e["oblock"], first, free)
    else:
        ob = c.nr_oblocks + 5
        v = ob << 3 | (tm.ENTRY_NOCRC if e["nocrc"] else 0) | \
            tm.ENTRY_DIRTY | tm.ENTRY_VALID
        _put_entry(dev, c, first, v, e["crc"])
        print(ob, first)
    dev.sync()


def temp_area(dev_path, pages):
    """Both superblock slots: a temperature area of PAGES pages, the data
    area moved past it and shrunk to fit, the rest of the geometry as
    tacmeta's rules (the kernel's) want it; checksums fixed."""
    pages = int(pages)
    dev = tm.Dev(dev_path, write=True, force=True)
    size = dev.size // tm.SECTOR
    off = {n: (c, o) for n, c, o in tm.SB_FIELDS}
    for slot in (0, 1):
        b = bytearray(dev.read(slot * tm.MD_BLOCK, tm.MD_BLOCK))
        get = lambda n: struct.unpack_from("<" + off[n][0], b, off[n][1])[0]
        bs = get("block_sectors")
        data = -(-(get("temp_start") + pages * 8) // bs) * bs
        n = (size - data) // bs
        for name, v in (("temp_pages", pages), ("data_start", data),
                        ("nr_cblocks", n),
                        ("map_pages", tm.map_pages_for(n, bs))):
            struct.pack_into("<" + off[name][0], b, off[name][1], v)
        struct.pack_into("<I", b, 8, tm.block_csum(bytes(b)))
        dev.write(slot * tm.MD_BLOCK, bytes(b))
    dev.sync()


def lost(img, sector):
    dev, c = _cache(img)
    s = int(sector)
    print(" ".join(str(e["oblock"]) for cb, e in sorted(c.entries.items())
                   if e["dirty"] and cb // c.per == s))


def copy(src, dst):
    import shutil
    shutil.copyfile(src, dst)


_kmsg = None


def _kmsg_open():
    global _kmsg
    if _kmsg is None:
        _kmsg = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(_kmsg, 0, os.SEEK_END)


def klog():
    _kmsg_open()
    while True:
        try:
            rec = os.read(_kmsg, 8192)
        except BlockingIOError:
            return
        except BrokenPipeError:     # overwritten before it was read
            continue
        # "prio,seq,usec,flags;message\n" and " KEY=value" lines
        head, _, msg = rec.decode(errors="replace").partition(";")
        print(msg.split("\n", 1)[0])


def counts(img):
    import json
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = tm.main(["dump", img])
    if rc:
        return rc
    j = json.loads(out.getvalue())
    print(len(j["mappings"]), len(j["dirty"]), len(j["temperatures"]["records"]))


def _run(words):
    env = {}
    while "=" in words[0]:
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        if words[0] == "tacmeta":
            return tm.main(words[1:])
        return COMMANDS[words[0]](*words[1:]) or 0
    finally:
        for k, v in saved.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def serve():
    try:
        _kmsg_open()
    except OSError:
        pass
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        words = line.rstrip("\n").split("\t")
        # As in a process of its own: the crc32c tacmeta starts with, and
        # every device closed at the end.
        tm._raw = tm._raw_python
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                rc = _run(words)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
            except Exception:
                traceback.print_exc()
                rc = 99
        while tm._opened:
            tm._opened.pop().close()
        text = out.getvalue()
        if text and not text.endswith("\n"):
            text += "\n"
        sys.stdout.write("%s\x1e%d\n" % (text, rc))
        sys.stdout.flush()


COMMANDS = {"fill": fill, "write": write, "verify": verify, "damage": damage,
            "forge": forge, "temp-area": temp_area, "lost": lost, "copy": copy, "klog": klog,
            "counts": counts, "serve": serve}

if __name__ == "__main__":
    sys.exit(COMMANDS[sys.argv[1]](*sys.argv[2:]) or 0)
