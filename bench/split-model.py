#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A model of dm-tac's write-back split past the fill, on a block trace.

    bench/split-model.py TRACE CACHE_BLOCKS [SPEC ...]

Where the clean/dirty split's target goes (policy/tac-split.c) and what
the disk pays, for a cache of CACHE_BLOCKS 4 KiB blocks.  A model, not
dm-tac: every miss is admitted, clean blocks leave in LRU order, dirty
blocks never do (with none clean, one dirty block is written back to make
room, where dm-tac would send the I/O around the cache), every 512 block
accesses the cleaner writes back in origin order from above its start
(the target plus half the free blocks beyond a sixteenth, as the
kernel's tac_split_high()) to a twentieth under it (as __clean_goal()),
and a write-back costs what a read does.  TAC's admission filter, which keeps cold reads out of the
clean space, is not modelled: the clean side is worth less here than in
dm-tac.

TRACE: a blkparse text trace (tools/traces/pgbench.blkparse.gz), a
tracegen CSV (tools/traces/gen/*.csv.gz), or synth:C:HOT:N (N accesses:
three in four read a hot set of HOT * C blocks at random, one in four
writes a block never written before or after).

SPEC, JSON (one run each; by default the three below):
    {"pct": 20, "adapt": true, "sampled": true}
pct the starting target (dirty_threshold), adapt false pins it; sampled
false is the split before the long horizon (ghosts of every block, a
decision per slots / 8 votes), true the current one (ghosts of one block
in 2^k, a decision per max(slots / 64, 8) votes).

Prints, per SPEC: origin reads, write-backs, their sum (the I/O cost),
the target at the end and on average (percent of the cache), and the
votes of each side.
"""
import collections
import bisect
import gzip
import json
import random
import sys

M64 = (1 << 64) - 1


def load(path):
    """The trace as a list of (is_write, 4 KiB block)."""
    ev = []
    if path.startswith('synth:'):
        _, c, hot, n = path.split(':')
        rnd = random.Random(1)
        hot = int(int(c) * float(hot))
        fresh = 10 ** 9
        for i in range(int(n)):
            if i % 4 == 3:
                ev.append((True, fresh))
                fresh += 1
            else:
                ev.append((False, rnd.randrange(hot)))
        return ev
    with gzip.open(path, 'rt') as f:
        if path.endswith('.csv.gz'):
            next(f)
            for line in f:
                _, op, off, ln = line.split(',')
                off, ln = int(off), int(ln)
                for b in range(off // 4096, (off + ln - 1) // 4096 + 1):
                    ev.append((op == 'W', b))
            return ev
        for line in f:
            p = line.split()
            if len(p) < 10 or p[5] != 'Q' or int(p[9]) == 0:
                continue
            w, sec, n = 'W' in p[6], int(p[7]), int(p[9])
            if not w and 'R' not in p[6]:
                continue
            for b in range(sec // 8, (sec + n - 1) // 8 + 1):
                ev.append((w, b))
    return ev


def split_hash(b, sampled=True):
    """tac_split_hash(): splitmix64's finaliser; before the sample, a
    multiplication alone."""
    h = (b * 0x9e3779b97f4a7c15) & M64
    if not sampled:
        return h
    h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & M64
    h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & M64
    return h ^ (h >> 31)


def run(ev, nr, pct=20, adapt=True, sampled=True):
    clean = collections.OrderedDict()
    dirty = set()
    slots = max(1 << (max(nr // 64, 1).bit_length() - 1), 64)
    sample = (1 << (max(nr // slots, 1).bit_length() - 1)) - 1 if sampled else 0
    per_step = max(slots // 64, 8) if sampled else max(slots // 8, 8)
    step = max(nr // 64, 1)
    target = max(nr * pct // 100, min(nr, 1))
    lo = min(max(nr * min(pct, 5) // 100, 1), target)
    hi = nr * max(pct, 80) // 100
    ghosts = {False: [0] * slots, True: [0] * slots}
    st = dict(target=target, votes=0, back={False: 0, True: 0},
              cursor=0, reads=0, wbs=0, sum=0, n={False: 0, True: 0})

    def slot(b):
        h = split_hash(b, sampled)
        if (h >> 57) & sample:
            return None, 0
        return (h >> 32) & (slots - 1), ((h >> 16) & 0xffff) | 1

    def remember(side, b):
        s, fp = slot(b)
        if s is not None:
            ghosts[side][s] = fp

    def returns(side, b):
        """A ghost of @side for @b: a vote of cost 1 (it votes once)."""
        s, fp = slot(b)
        if s is None or ghosts[side][s] != fp:
            return
        ghosts[side][s] = 0
        st['back'][side] += 1
        st['n'][side] += 1
        st['votes'] += 1
        if st['votes'] < per_step:
            return
        d, c = st['back'][True], st['back'][False]
        if adapt and d > c:
            st['target'] = min(hi, st['target'] + step)
        elif adapt and d < c:
            t = st['target']
            st['target'] = t - step if t > lo + step else lo
        st['votes'] = 0
        st['back'] = {False: 0, True: 0}

    def clean_to(goal):
        if len(dirty) <= goal:
            return
        order = sorted(dirty)
        i = bisect.bisect_left(order, st['cursor'])
        for k in range(len(dirty) - goal):
            b = order[(i + k) % len(order)]
            dirty.discard(b)
            clean[b] = 1
            st['wbs'] += 1
            remember(True, b)
            st['cursor'] = b + 1

    def make_room():
        if len(clean) + len(dirty) >= nr:
            if not clean:
                clean_to(len(dirty) - 1)
            b, _ = clean.popitem(last=False)
            remember(False, b)

    for t, (w, b) in enumerate(ev):
        if w and b not in dirty:
            returns(True, b)
            if b in clean:
                del clean[b]
            else:
                make_room()
            dirty.add(b)
        elif not w and b in clean:
            clean.move_to_end(b)
        elif not w and b not in dirty:
            st['reads'] += 1
            returns(False, b)
            make_room()
            clean[b] = 1
        if t % 512 == 0:
            free = nr - len(clean) - len(dirty)
            high = st['target']
            if adapt and free > nr // 16 and high < hi:
                high += min((free - nr // 16) // 2, hi - high)
            if len(dirty) > high:
                clean_to(high - high // 20)
        st['sum'] += st['target']
    return dict(reads=st['reads'], writebacks=st['wbs'],
                cost=st['reads'] + st['wbs'],
                target_end=round(100 * st['target'] / nr, 1),
                target_avg=round(100 * st['sum'] / len(ev) / nr, 1),
                votes_clean=st['n'][False], votes_dirty=st['n'][True])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ev = load(sys.argv[1])
    nr = int(sys.argv[2])
    specs = sys.argv[3:] or ['{"pct": 20, "sampled": false}',
                             '{"pct": 20}', '{"pct": 20, "adapt": false}']
    print(f'# {sys.argv[1]}: {len(ev)} block accesses, '
          f'{len({b for _, b in ev})} blocks; a cache of {nr}')
    for spec in specs:
        print(spec, run(ev, nr, **json.loads(spec)), flush=True)


if __name__ == '__main__':
    main()
