#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Fuzz tacsim's trace readers: mutated lines of every format, random
bytes, NULs, overlong lines, gzip and truncated gzip.  Run it against an
ASan/UBSan build:

  gcc -std=gnu11 -g -O1 -fsanitize=address,undefined \\
      -fno-sanitize-recover=all -Itools/include -Idm-tac/policy -Itools/tacsim \\
      tools/tacsim/tacsim.c tools/tacsim/trace.c tools/tacsim/policy-*.c \\
      dm-tac/policy/tac-*.c -lz -o /tmp/tacsim-asan
  python3 tools/tacsim/fuzz-parsers.py /tmp/tacsim-asan [SEED]

Passes when every run exits 0 or 2 with no sanitizer report.
"""
import gzip
import os
import random
import subprocess
import sys
import tempfile

SAMPLES = {
    "blkparse": [
        "  8,0    3       12     0.000012345  4711  Q   R 123456 + 8 [postgres]",
        "254,0    0      597    23.482350110   283  Q FWS [postgres]",
        "  8,0    1        3     0.000100000     0  C  WS 99 + 16 [0]",
        "CPU0 (vda):",
    ],
    "msr": ["128166372003061629,wdev,0,Read,3371008,4096,1765",
            "128166372003061629,wdev,1,Write,0,65536,100"],
    "spc": ["0,20941264,8192,W,0.551706", "1,3,512,r,1.0"],
    "csv": ["time,op,offset_bytes,length_bytes", "0.1,R,4096,8192",
            "2,write,0,1"],
}
ALPHABET = "0123456789,.+-[]RWrwQCDN \t:xyz\x00\xff"
BIG = [0, 2**64 - 1, 2**64, 2**63, 10**30, -1]


def mutate(s):
    s = list(s)
    for _ in range(random.randint(1, 4)):
        k = random.random()
        i = random.randrange(len(s) + 1)
        if k < 0.3 and s:
            del s[min(i, len(s) - 1)]
        elif k < 0.6:
            s.insert(i, random.choice(ALPHABET))
        elif k < 0.8 and s:
            s[min(i, len(s) - 1)] = random.choice(ALPHABET)
        else:
            s.insert(i, str(random.choice(BIG)))
    return "".join(s)


def main():
    exe = sys.argv[1]
    random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    bad = 0
    runs = 0
    with tempfile.TemporaryDirectory() as d:
        for fmt, lines in SAMPLES.items():
            for rnd in range(6):
                out = [mutate(l) if random.random() < 0.5 else l
                       for l in (random.choice(lines) for _ in range(3000))]
                if rnd == 5:
                    out.append("A" * 20000)
                    out.append("".join(chr(random.randrange(256))
                                       for _ in range(300)))
                data = "\n".join(out).encode("latin-1")
                path = os.path.join(d, "f%s%d" % (fmt, rnd))
                if rnd % 2:
                    data = gzip.compress(data)
                    if rnd == 3:
                        data = data[:len(data) // 2]
                with open(path, "wb") as f:
                    f.write(data)
                for f in ("auto", "blkparse", "msr", "spc", "csv"):
                    p = subprocess.run(
                        [exe, "--policy", "all", "--cache-size", "64K",
                         "--json", "--quiet", "--format", f,
                         "--max-errors", "0", path],
                        capture_output=True, text=True, errors="replace")
                    runs += 1
                    if p.returncode not in (0, 2) or \
                            "Sanitizer" in p.stderr or \
                            "runtime error" in p.stderr:
                        bad += 1
                        print("FAIL %s/%d as %s: status %d\n%s"
                              % (fmt, rnd, f, p.returncode, p.stderr[-800:]))
    print("%d runs, %d failures" % (runs, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
