#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Check that the one list of dm-tac's status fields still describes them.

    tests/status-fields/check.py [--list FILE] [--doc FILE] [--source FILE]

dm-tac/status-fields is the list (position and name of every INFO field).
This checks, on the host and without a kernel, that

  * its positions are 1, 2, 3, ... and its names unique words;
  * the Status table of Documentation/dm-tac.rst has exactly those
    numbers and names, in that order;
  * the STATUSTYPE_INFO format of tac_status() in dm-tac/dm-tac-target.c
    (its DMEMIT format strings, concatenated) has one word per field, and
    each word as many printf conversions as the name has slash-separated
    parts ("used/total": "%u/%u").

Prints one line per check and "N passed, N failed"; exits 1 if any
failed.  The defaults are the files of this tree.
"""

import argparse
import os
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# A printf conversion as the kernel's vsnprintf takes them (%pUb and the
# other %p extensions count as one).
CONV = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
                  r"(?:hh|h|ll|l|L|z|Z|j|t)?(?:p[A-Za-z]*|[diouxXcs])")


def read_list(path):
    """[(position, name, line number)] from the list file."""
    fields = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            if len(words) != 2 or not words[0].isdigit():
                raise ValueError("%s:%d: expected '<position> <name>', got %r"
                                 % (path, n, line))
            fields.append((int(words[0]), words[1], n))
    return fields


def read_doc(path):
    """[(number, name)] from the first table of the Status section."""
    with open(path) as f:
        lines = f.read().split("\n")
    start = None
    for i in range(len(lines) - 1):
        if lines[i] == "Status" and re.fullmatch(r"=+", lines[i + 1]):
            start = i + 2
            break
    if start is None:
        raise ValueError("%s: no 'Status' section" % path)
    borders = []
    for i in range(start, len(lines)):
        if re.fullmatch(r"=+( +=+)+ *", lines[i]):
            borders.append(i)
            if len(borders) == 2:
                break
        # The next section title ends the search.
        if i + 1 < len(lines) and re.fullmatch(r"=+", lines[i + 1]) \
                and lines[i].strip() and not lines[i].startswith(" "):
            break
    if len(borders) != 2:
        raise ValueError("%s: no table in the Status section" % path)
    border = lines[borders[0]]
    first_col = len(border.split(" ")[0])
    second_col = border.index("=", first_col + border[first_col:].index(" "))
    rows = []
    for line in lines[borders[0] + 1:borders[1]]:
        num = line[:first_col].strip()
        if not num:
            continue          # a description's continuation line
        name = line[second_col:].split()[0] if line[second_col:].strip() else ""
        rows.append((num, name))
    return rows


def read_format(path):
    """The STATUSTYPE_INFO format words of tac_status()."""
    with open(path) as f:
        src = f.read()
    m = re.search(r"^static void tac_status\(", src, re.M)
    if not m:
        raise ValueError("%s: no tac_status()" % path)
    body = src[m.end():]
    body = body[:re.search(r"^}", body, re.M).start()]
    m = re.search(r"case STATUSTYPE_INFO:(.*?)\bbreak;", body, re.S)
    if not m:
        raise ValueError("%s: tac_status() has no STATUSTYPE_INFO case" % path)
    info = re.sub(r"/\*.*?\*/", " ", m.group(1), flags=re.S)
    fmt = ""
    for call in re.finditer(r"\bDMEMIT\(\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+)",
                            info):
        fmt += "".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", call.group(1)))
    if not fmt:
        raise ValueError("%s: no DMEMIT format in tac_status()'s "
                         "STATUSTYPE_INFO case" % path)
    return fmt.split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", default=os.path.join(TOP, "dm-tac/status-fields"))
    ap.add_argument("--doc", default=os.path.join(TOP,
                                                  "Documentation/dm-tac.rst"))
    ap.add_argument("--source", default=os.path.join(TOP,
                                                     "dm-tac/dm-tac-target.c"))
    a = ap.parse_args()
    results = []

    def check(ok, what, why=""):
        results.append(ok)
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": " + why))

    try:
        fields = read_list(a.list)
        doc = read_doc(a.doc)
        words = read_format(a.source)
    except (OSError, ValueError) as e:
        print("FAIL reading the files: %s" % e)
        print("0 passed, 1 failed")
        return 1
    def short(path):
        r = os.path.relpath(os.path.abspath(path), TOP)
        return path if r.startswith("..") else r
    rl, rd, rs = short(a.list), short(a.doc), short(a.source)

    # The list itself.
    bad = [(p, name, n) for i, (p, name, n) in enumerate(fields, 1)
           if p != i or not re.fullmatch(r"[a-z_]+(/[a-z_]+)*", name)]
    names = [name for _, name, _ in fields]
    dups = sorted({x for x in names if names.count(x) > 1})
    check(fields and not bad and not dups,
          "%s: %d fields numbered 1-%d, unique lower-case names"
          % (rl, len(fields), len(fields)),
          "; ".join(["line %d: '%d %s'" % (n, p, name) for p, name, n in bad]
                    + ["'%s' twice" % d for d in dups]) or "empty")

    # The Documentation's table.
    want = [(str(p), name) for p, name, _ in fields]
    diffs = []
    for i in range(max(len(want), len(doc))):
        w = "%s %s" % want[i] if i < len(want) else "(nothing)"
        d = "%s %s" % doc[i] if i < len(doc) else "(nothing)"
        if w != d:
            diffs.append("row %d: list '%s', documentation '%s'" % (i + 1, w, d))
    check(not diffs, "%s: the Status table has the list's numbers and names"
          % rd, "; ".join(diffs[:5]))

    # The kernel's format.
    diffs = []
    for i in range(max(len(fields), len(words))):
        if i >= len(fields):
            diffs.append("word %d '%s' is not in the list" % (i + 1, words[i]))
            continue
        if i >= len(words):
            diffs.append("field %d %s is not printed" % (i + 1, fields[i][1]))
            continue
        name, word = fields[i][1], words[i]
        n = len(CONV.findall(word.replace("%%", "")))
        parts = name.count("/") + 1
        if n != parts:
            diffs.append("field %d %s: '%s' has %d conversion(s), the name %d"
                         % (i + 1, name, word, n, parts))
    if len(words) != len(fields):
        diffs.insert(0, "it prints %d words, the list has %d fields"
                     % (len(words), len(fields)))
    check(not diffs, "%s: tac_status()'s INFO format prints one word per "
          "listed field, with a conversion per part of its name" % rs,
          "; ".join(diffs[:5]))

    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
