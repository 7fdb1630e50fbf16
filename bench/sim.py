#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench-sim: the TAC paper's section 4 comparison, on our traces.

Generates the synthetic traces with tools/tracegen (cached in
tools/traces/gen/, deterministic), takes the captured pgbench trace from
tools/traces/ if present, runs tacsim with every policy at three cache
sizes, and prints per trace and size: hit ratio, I/O time, I/O time
relative to LRU and to OPT, cache device I/Os per block hit or filled
(tacsim's cache_ios: a page's blocks in a row are one I/O), the gap
closure (LRU - TAC) / (LRU - OPT), the
TAC/ARC I/O time ratio, and whether the simulator goals hold.  Then it
measures TAC's replay speed in accesses per second.

Environment: BENCH_SIZES (default "128M,256M,512M"),
BENCH_PGBENCH_SIZES (default "16M,32M,64M"), BENCH_TRACES (comma
list of names to run), BENCH_SEED (default 1), TACSIM_ARGS (extra tacsim
arguments, e.g. "--param aging_period=262144").
"""
import json
import os
import shlex
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(TOP, "tools")
TACSIM = os.path.join(TOOLS, "tacsim", "tacsim")
TRACEGEN = os.path.join(TOOLS, "tracegen", "tracegen")
GEN = os.path.join(TOOLS, "traces", "gen")
SEED = os.environ.get("BENCH_SEED", "1")
SIZES = os.environ.get("BENCH_SIZES", "128M,256M,512M")
# The pgbench capture is short (TCG VM, ~20 transactions/s): its caches are
# scaled to its footprint, 1-4% of the 1.5 GiB database (TAC section 4.2
# used an SSD of 2% of the database).
PGBENCH_SIZES = os.environ.get("BENCH_PGBENCH_SIZES", "16M,32M,64M")
EXTRA = shlex.split(os.environ.get("TACSIM_ARGS", ""))
POLICIES = ["tac", "lru", "fifo", "clock", "arc", "lru2", "opt"]

# name -> (description, tracegen arguments); defaults documented in README.
SYNTHETIC = [
    ("a-oltp", "(a) OLTP: Zipf 0.9 8K reads/updates, 4G table, 128M DRAM",
     ["--workload", "oltp"]),
    ("b-ods", "(b) ODS: index lookups in 384M + range scans of 6G",
     ["--workload", "ods"]),
    ("c-dw", "(c) DW: Zipfian date ranges over 6G, recent hotter",
     ["--workload", "dw"]),
    ("d-scan", "(d) pure scan: 4 passes over 1G",
     ["--workload", "scan"]),
]
PGBENCH = os.path.join(TOOLS, "traces", "pgbench.blkparse.gz")
# Traces and sizes the simulator goals apply to: (b), (c), pgbench at the
# smaller sizes; (a) against LRU only.
GAP_GOAL_TRACES = {"b-ods", "c-dw", "pgbench"}
# Issue 10: TAC's I/O time at most the better of LRU and ARC on every
# trace and size, and the gap closed by 0.75 on these at every size.
ISSUE10_GAP_TRACES = {"b-ods", "c-dw"}


def generate(name, args):
    os.makedirs(GEN, exist_ok=True)
    path = os.path.join(GEN, "%s-seed%s.csv.gz" % (name, SEED))
    stamp = path + ".cmd"
    cmd = [TRACEGEN] + args + ["--seed", SEED, "--out", path]
    want = " ".join(cmd[1:])
    if not (os.path.exists(path) and os.path.exists(stamp)
            and open(stamp).read() == want):
        subprocess.run(cmd, check=True)
        with open(stamp, "w") as f:
            f.write(want)
    return path


def run(path, sizes):
    cmd = [TACSIM, "--policy", "all", "--cache-size", sizes, "--json",
           "--quiet"] + EXTRA + [path]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    res = {}
    for line in out.splitlines():
        r = json.loads(line)
        res.setdefault(r["cache_bytes"], {})[r["policy"]] = r
    return res


def size_name(b):
    for unit, n in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b % n == 0:
            return "%d%s" % (b // n, unit)
    return str(b)


def main():
    for exe in (TACSIM, TRACEGEN):
        if not os.access(exe, os.X_OK):
            sys.exit("bench-sim: %s not built (make -C tools)" % exe)
    only = os.environ.get("BENCH_TRACES")
    only = set(only.split(",")) if only else None
    traces = []
    for name, desc, args in SYNTHETIC:
        if only is None or name in only:
            traces.append((name, desc, generate(name, args)))
    if only is None or "pgbench" in only:
        if os.path.exists(PGBENCH):
            traces.append(("pgbench", "pgbench TPC-B, scale 100 (1.5G), "
                           "ext4 in a VM, blktrace Q events", PGBENCH))
        else:
            print("pgbench trace %s missing: run "
                  "tools/capture-pgbench-trace.sh to make it" % PGBENCH)

    summary = []
    print("rel_LRU, rel_OPT: I/O time / LRU's, / OPT's.  "
          "closure = (LRU - TAC) / (LRU - OPT) in I/O time.\n")
    for name, desc, path in traces:
        t0 = time.time()
        res = run(path, PGBENCH_SIZES if name == "pgbench" else SIZES)
        first = next(iter(next(iter(res.values())).values()))
        if name == traces[0][0]:
            print("Cost model (TAC core defaults), us per 4 KiB block: SSD "
                  "read %d, SSD write %d, HDD random %d, HDD sequential %d\n"
                  % (first["cost_ssd_read_us"], first["cost_ssd_write_us"],
                     first["cost_hdd_random_us"], first["cost_hdd_seq_us"]))
        print("== %s: %s" % (name, desc))
        print("   %d requests, %d accesses (%.0f%% reads), classifier: "
              "%d seq / %d random requests; replayed in %.0f s"
              % (first["requests"], first["accesses"],
                 100.0 * first["reads"] / max(1, first["accesses"]),
                 first["seq_requests"], first["random_requests"],
                 time.time() - t0))
        print("   %-6s %-6s %8s %15s %8s %8s %10s"
              % ("cache", "policy", "hit%", "io_time_ms", "rel_LRU",
                 "rel_OPT", "cache_io%"))
        for size in sorted(res):
            pol = res[size]
            lru = pol["lru"]["io_time_ms"]
            opt = pol["opt"]["io_time_ms"]
            for p in POLICIES:
                if p not in pol:
                    continue
                r = pol[p]
                # Cache device I/Os per block served or filled there.
                touched = r["hits"] + r["admissions"]
                print("   %-6s %-6s %8.3f %15.1f %8.3f %8.3f %10.1f"
                      % (size_name(size), p, 100 * r["hit_ratio"],
                         r["io_time_ms"], r["io_time_ms"] / lru,
                         r["io_time_ms"] / opt,
                         100.0 * r["cache_ios"] / max(1, touched)))
            if "tac" in pol:
                tac = pol["tac"]["io_time_ms"]
                arc = pol["arc"]["io_time_ms"]
                closure = (lru - tac) / (lru - opt) if lru != opt else \
                    float("nan")
                summary.append((name, size, closure, tac / arc, tac / lru,
                                pol["tac"]["accesses_per_sec"]))
                print("   %-6s closure %.3f   TAC/ARC %.3f   TAC/LRU %.3f"
                      % (size_name(size), closure, tac / arc, tac / lru))
        print()

    missed = []
    if summary:
        # "The smaller sizes": all but the largest size of each trace.
        largest = {}
        for name, size, _, _, _, _ in summary:
            largest[name] = max(largest.get(name, 0), size)
        print("== Summary (simulator goals: TAC against LRU and ARC)")
        print("   %-8s %-6s %9s %9s %9s %10s  %s"
              % ("trace", "cache", "closure", "TAC/ARC", "TAC/LRU",
                 "TAC Macc/s", "goal"))
        for name, size, closure, tac_arc, tac_lru, rate in summary:
            goals = []
            if name in GAP_GOAL_TRACES and size < largest[name]:
                ok = closure >= 0.75 and tac_arc <= 0.85
                goals.append("closure>=0.75, TAC/ARC<=0.85: %s" % (
                    "met" if ok else "MISSED"))
            elif name == "a-oltp":
                goals.append("TAC/LRU<=1.05: %s" % (
                    "met" if tac_lru <= 1.05 else "MISSED"))
            # Issue 10: at most the better of LRU and ARC, everywhere;
            # TAC / min(LRU, ARC) is the larger of the two ratios.
            goals.append("TAC/best<=1: %s" % (
                "met" if max(tac_arc, tac_lru) <= 1 else "MISSED"))
            if name in ISSUE10_GAP_TRACES:
                goals.append("closure>=0.75: %s" % (
                    "met" if closure >= 0.75 else "MISSED"))
            goal = "; ".join(goals)
            print("   %-8s %-6s %9.3f %9.3f %9.3f %10.2f  %s"
                  % (name, size_name(size), closure, tac_arc, tac_lru,
                     rate / 1e6, goal))
            if "MISSED" in goal:
                missed.append((name, size))
        print()

    # Why a goal was missed: TAC's I/O time relative to LRU under one-at-a-
    # time changes of its tunables (the trace stays as it is).
    if missed:
        paths = {n: p for n, _, p in traces}
        variants = [("default", []),
                    ("extent 8K", ["--extent-size", "8K"]),
                    ("extent 32K", ["--extent-size", "32K"]),
                    ("extent 512K", ["--extent-size", "512K"]),
                    ("aging 2^16", ["--param", "aging_period=65536"]),
                    ("aging 2^22", ["--param", "aging_period=4194304"]),
                    ("margin 0%", ["--param", "admit_margin=0"]),
                    ("margin 10%", ["--param", "admit_margin=10"]),
                    ("fill 100%", ["--param", "fill_threshold=100"]),
                    ("write-around", ["--write-mode", "around"])]
        print("== Sensitivity where a goal was missed: TAC/LRU I/O time "
              "(gap closure), one change at a time, LRU and OPT under the "
              "same settings")
        for name, size in missed:
            cells = []
            for label, args in variants:
                cmd = [TACSIM, "--policy", "lru,tac,opt", "--cache-size",
                       str(size), "--json", "--quiet"] + EXTRA + args + \
                    [paths[name]]
                out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                                     text=True).stdout
                rows = {r["policy"]: r for r in map(json.loads,
                                                    out.splitlines())}
                lru, tac, opt = (rows[k]["io_time_ms"]
                                 for k in ("lru", "tac", "opt"))
                cells.append("%s %.3f (%s)" % (
                    label, tac / lru,
                    "%.2f" % ((lru - tac) / (lru - opt)) if lru != opt
                    else "-"))
            print("   %s %s: %s" % (name, size_name(size), ", ".join(cells)))
        print()

    # Speed: TAC alone, median of 3 replays, on the largest synthetic trace.
    speed = [t for t in traces if t[0] == "b-ods"] or traces[:1]
    if speed:
        name, _, path = speed[0]
        size = (PGBENCH_SIZES if name == "pgbench" else SIZES).split(",")[0]
        rates, walls = [], []
        for _ in range(3):
            out = subprocess.run(
                [TACSIM, "--policy", "tac", "--cache-size", size, "--json",
                 "--quiet"] + EXTRA + [path],
                check=True, stdout=subprocess.PIPE, text=True).stdout
            r = json.loads(out.splitlines()[0])
            rates.append(r["accesses_per_sec"])
            walls.append(r["accesses"] / r["sim_wall_seconds"])
        rates.sort()
        walls.sort()
        print("== TAC speed: %.2f M accesses per CPU second (wall clock "
              "%.2f M/s on this shared machine), median of 3 replays of %s, "
              "%d accesses, cache %s; goal >= 2 M/s: %s"
              % (rates[1] / 1e6, walls[1] / 1e6, name, r["accesses"], size,
                 "met" if rates[1] >= 2e6 else "MISSED"))
        print("   (the TAC Macc/s column above is per CPU second too)")


if __name__ == "__main__":
    main()
