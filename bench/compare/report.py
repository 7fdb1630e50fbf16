#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Result tables and charts of a benchmark run (bench/compare/bench.sh).

    report.py RESULTS_DIR

Reads RESULTS_DIR/raw/<kernel release>/ as guest.sh and
blktrace-replay.sh left it and writes RESULTS_DIR/results.md and, when
matplotlib is importable (the .venv/plot venv), PNG charts beside it:
throughput-<release>.png and hitratio-scan-pollution-<release>.png.
Standard library only apart from matplotlib.
"""

import glob
import gzip
import json
import os
import re
import shlex
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

WORKLOAD_TITLES = {
    "oltp-read": "1 OLTP read-mostly",
    "oltp-write": "2 OLTP write-heavy",
    "scan-pollution": "3 scan pollution",
    "ods-mix": "4 ODS mix",
    "seq-read": "5 sequential read",
    "seq-over-hot-read": "8 sequential read over a cached hot set",
    "seq-over-hot-write": "9 sequential write over a cached hot set",
    "uniform-random": "6 uniform random",
    "pgbench": "pgbench (PostgreSQL)",
    "sysbench": "sysbench oltp_read_write (MariaDB)",
}

DATABASES = {"pgbench", "sysbench"}

# Contenders that keep dirty data: compared with dm-cache smq writeback;
# the rest with dm-cache smq writethrough.
# Workloads measured in MB/s (streams), the rest in IOPS (databases: TPS).
STREAMS = {"seq-read", "seq-over-hot-read", "seq-over-hot-write"}


def unit_of(wl):
    return "MB/s" if wl in STREAMS else "TPS" if wl in DATABASES else "IOPS"


WRITEBACK = {"dmcache-wb", "bcache-wb", "writecache"}


def keeps_dirty(ct):
    return ct in WRITEBACK or ct.startswith("tac-writeback")


def read_env(path):
    env = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if "=" not in line:
                    continue
                k, v = line.split("=", 1)
                try:
                    v = shlex.split(v)
                    env[k] = v[0] if v else ""
                except ValueError:
                    env[k] = v
    except OSError:
        pass
    return env


def read_words(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def read_lines(path):
    try:
        with open(path) as f:
            return [l.rstrip("\n") for l in f if l.strip()]
    except OSError:
        return []


def load_fio(path):
    """fio JSON, tolerating warnings fio prints before the object."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    i = text.find("{")
    if i < 0:
        return None
    try:
        return json.loads(text[i:])
    except ValueError:
        return None


def window_hit_ratio(path, t0, t1):
    """Hit ratio between the samples nearest to t0 and t1 (epoch s).

    bcache folds its counters into stats_total only every few seconds, so
    a short window can see no change at all: then the whole run (warm-up
    included) is used.  Returns (ratio, whole_run) or None."""
    s = samples(path)
    if len(s) < 2 or t0 is None:
        return None
    a = min(s, key=lambda x: abs(x[0] - t0))
    b = min(s, key=lambda x: abs(x[0] - t1))
    h = b[2] - a[2]
    m = b[3] - a[3]
    if h + m > 0 and b[0] > a[0]:
        return h / (h + m), False
    h = s[-1][2] - s[0][2]
    m = s[-1][3] - s[0][3]
    return (h / (h + m), True) if h + m > 0 else None


def fmt_hit(hit):
    if hit is None:
        return "–"
    return f"{100 * hit[0]:.1f}" + ("*" if hit[1] else "")


def fio_cell(d, ct, wl):
    j = load_fio(os.path.join(d, ct, wl + ".json"))
    if not j or not j.get("jobs"):
        return None
    jobs = sorted(j["jobs"], key=lambda x: x.get("groupid", 0))
    prim = jobs[0]
    mixed = prim.get("mixed") or prim["read"]
    lat = mixed.get("lat_ns", {})
    pct = lat.get("percentile", {})
    bw = sum((x.get("mixed") or x["read"])["bw_bytes"] for x in jobs)
    r = {
        "iops": mixed["iops"],
        "mbs": bw / 1e6,
        "mean_ms": lat.get("mean", 0) / 1e6,
        "p99_ms": pct.get("99.000000", 0) / 1e6,
        "runtime_s": mixed.get("runtime", 0) / 1e3,
    }
    r["metric"] = r["mbs"] if wl in STREAMS else r["iops"]
    # The measured phase: the last runtime_s seconds before fio reported.
    t1 = j.get("timestamp_ms", 0) / 1e3
    r["hit"] = window_hit_ratio(os.path.join(d, ct, wl + ".samples"),
                                t1 - r["runtime_s"], t1)
    r.update(disk_counts(None if ct == "nvme" else
                         os.path.join(d, ct, wl + ".status")))
    r.update(guest_counts(os.path.join(d, ct, wl + ".status")))
    return r


def pgbench_cell(d, ct, measure_s):
    """TPS and latency over the last measure_s seconds of the run."""
    txs = []
    try:
        with open(os.path.join(d, ct, "pgbench.log")) as f:
            for line in f:
                # client transaction latency_us script epoch_s epoch_us
                w = line.split()
                if len(w) >= 6 and w[2].isdigit() and w[4].isdigit():
                    txs.append((int(w[4]) + int(w[5]) / 1e6, int(w[2])))
    except OSError:
        pass
    if not txs or measure_s <= 0:
        return None
    t1 = max(t for t, _ in txs)
    t0 = t1 - measure_s
    lats = sorted(l for t, l in txs if t > t0)
    if not lats:
        return None
    tps = len(lats) / measure_s
    return {
        "iops": tps,
        "metric": tps,
        "mbs": None,
        "mean_ms": sum(lats) / len(lats) / 1e3,
        "p99_ms": lats[min(len(lats) - 1, int(len(lats) * 0.99))] / 1e3,
        "hit": window_hit_ratio(os.path.join(d, ct, "pgbench.samples"),
                                t0, t1),
        **disk_counts(None if ct == "nvme" else
                      os.path.join(d, ct, "pgbench.status")),
        **guest_counts(os.path.join(d, ct, "pgbench.status")),
    }


INTERVAL = re.compile(r"^\[\s*(\d+)s\s*\].*?\btps:\s*([0-9.]+)")


def sysbench_cell(d, ct, measure_s):
    """TPS of the measured sysbench run over its first measure_s seconds
    (from the per-interval reports: the run's total also counts the
    transactions in flight when its time ran out, seconds of them on a
    slow disk), and latency from its report."""
    avg = p99 = total = None
    done = 0.0
    t_prev = t_last = 0
    for line in read_lines(os.path.join(d, ct, "sysbench.txt")):
        w = line.replace("(", " ").split()
        m = INTERVAL.match(line)
        if m:
            t = int(m.group(1))
            if t <= measure_s or not measure_s:
                done += float(m.group(2)) * (t - t_prev)
                t_prev = t_last = t
        elif line.lstrip().startswith("transactions:") and len(w) >= 3:
            total = float(w[2])  # "N (R per sec.)": sysbench's own rate
        elif line.lstrip().startswith("avg:") and len(w) >= 2:
            avg = float(w[1])
        elif "percentile:" in line and len(w) >= 3:
            p99 = float(w[-1])
    win = read_words(os.path.join(d, ct, "sysbench.window"))
    tps = done / t_last if t_last else total
    if tps is None or len(win) != 2:
        return None
    return {
        "iops": tps,
        "metric": tps,
        "mbs": None,
        "mean_ms": avg,
        "p99_ms": p99,
        "hit": window_hit_ratio(os.path.join(d, ct, "sysbench.samples"),
                                float(win[0]), float(win[1])),
        **disk_counts(None if ct == "nvme" else
                      os.path.join(d, ct, "sysbench.status")),
        **guest_counts(os.path.join(d, ct, "sysbench.status")),
    }


def phase_time(env, wl, which):
    for p in env.get("PHASES", "").split():
        w = p.split(":")
        if w[0] == wl and len(w) == 3:
            return int(w[1 if which == "warmup" else 2])
    return 0


def disk_counts(path):
    """Between the cell's start and end status: the share of the time the
    disk model was busy (hddsim's busy_us) and the requests it served
    (reads + writes) per second.  None where unknown."""
    at = {}
    phase = t = None
    for line in read_lines(path) if path else []:
        w = line.split()
        if w[0] == "==" and len(w) >= 3:
            phase, t = w[1], float(w[2])
        elif w[0] == "origin:" and len(w) > 11 and w[3] == "hddsim":
            # requests sequential near seeks reads writes passthrough busy_us
            at[phase] = (t, int(w[11]), int(w[8]) + int(w[9]))
    if "start" in at and "end" in at and at["end"][0] > at["start"][0]:
        (t0, b0, n0), (t1, b1, n1) = at["start"], at["end"]
        return {"busy": (b1 - b0) / 1e6 / (t1 - t0),
                "disk_iops": (n1 - n0) / (t1 - t0)}
    return {"busy": None, "disk_iops": None}


def guest_counts(path):
    """Between the cell's start and end status: the share of the guest's
    CPU time that was busy (/proc/stat's "cpu" line: user, nice, system,
    irq, softirq against all but guest time) and the commands the NVMe
    completed (reads + writes + flushes) per second.  None where unknown
    (runs before these lines were recorded)."""
    at = {}
    phase = t = None
    for line in read_lines(path) if path else []:
        w = line.split()
        if not w:
            continue
        if w[0] == "==" and len(w) >= 3:
            phase, t = w[1], float(w[2])
        elif w[0] == "cpu" and len(w) >= 8 and phase:
            v = [int(x) for x in w[1:9]]
            at.setdefault(phase, {})["cpu"] = (
                v[0] + v[1] + v[2] + v[5] + v[6], sum(v))
        elif w[0] == "nvme0n1:" and len(w) >= 17 and phase:
            # fields 1 reads, 5 writes, 16 flushes (block/stat.rst)
            at.setdefault(phase, {})["nvme"] = (
                t, int(w[1]) + int(w[5]) + int(w[16]))
    a, b = at.get("start", {}), at.get("end", {})
    out = {"cpu": None, "cache_iops": None}
    if "cpu" in a and "cpu" in b and b["cpu"][1] > a["cpu"][1]:
        out["cpu"] = (b["cpu"][0] - a["cpu"][0]) / (b["cpu"][1] - a["cpu"][1])
    if "nvme" in a and "nvme" in b and b["nvme"][0] > a["nvme"][0]:
        out["cache_iops"] = (b["nvme"][1] - a["nvme"][1]) / (b["nvme"][0] -
                                                             a["nvme"][0])
    return out


def tac_status_totals(path):
    """{phase: (read_hits, read_misses, write_hits, write_misses)}"""
    out = {}
    phase = None
    for line in read_lines(path):
        w = line.split()
        if w[0] == "==":
            phase = w[1]
        elif len(w) > 10 and w[2] == "tac" and phase:
            out[phase] = tuple(int(x) for x in w[6:10])
    return out


def tacsim_compare(d, ct):
    """(kernel hit ratio, tacsim hit ratio) over the traced pgbench run."""
    lines = read_lines(os.path.join(d, ct, "tacsim.json"))
    sim = None
    for line in lines:
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("policy") == "tac":
            sim = j
    st = tac_status_totals(os.path.join(d, ct, "pgbench.status"))
    kern = None
    if "start" in st and "end" in st:
        dl = [b - a for a, b in zip(st["start"], st["end"])]
        n = sum(dl)
        if n:
            kern = (dl[0] + dl[2]) / n
    note = None
    if sim is None:
        t = read_lines(os.path.join(d, ct, "tacsim.txt"))
        note = t[-1] if t else "no replay"
    return kern, sim, note


def fmt(v, nd=0, suffix=""):
    if v is None:
        return "–"
    if nd == 0:
        return f"{v:,.0f}{suffix}"
    return f"{v:,.{nd}f}{suffix}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def smq_ref(ct):
    return "dmcache-wb" if keeps_dirty(ct) else "dmcache-wt"


def samples(path):
    """[(t, phase, hits, misses)]"""
    out = []
    for line in read_lines(path):
        w = line.split()
        if len(w) == 4 and w[2].isdigit() and w[3].isdigit():
            out.append((float(w[0]), w[1], int(w[2]), int(w[3])))
    return out


def phase_seconds(events):
    """Wall time per contender and overall, from events.tsv."""
    per = {}
    first = last = None
    for line in events:
        w = line.split()
        if len(w) < 5:
            continue
        t = float(w[0])
        first = t if first is None else first
        last = t
        per.setdefault(w[1], [t, t])
        per[w[1]][1] = t
    return per, first, last


def kernel_section(out, d, rel, charts):
    env = read_env(os.path.join(d, "bench.env"))
    cts = read_words(os.path.join(d, "contenders.txt"))
    wls = read_words(os.path.join(d, "workloads.txt"))
    info = read_lines(os.path.join(d, "guest-info.txt"))
    notes = read_lines(os.path.join(d, "notes.txt"))
    res = {}
    for ct in cts:
        for wl in wls:
            if wl == "pgbench":
                r = pgbench_cell(d, ct, phase_time(env, wl, "measure"))
            elif wl == "sysbench":
                r = sysbench_cell(d, ct, phase_time(env, wl, "measure"))
            else:
                r = fio_cell(d, ct, wl)
            if r:
                res[(ct, wl)] = r

    out.append(f"## Kernel {rel}\n")
    for line in info:
        out.append(f"- {line}")
    out.append(f"- sizes: origin {env.get('ORIGIN_MB')} MiB, cache "
               f"{env.get('CACHE_MB')} MiB (+{env.get('META_MB')} MiB "
               f"metadata), pgbench scale {env.get('PG_SCALE')}, "
               f"PostgreSQL cgroup {env.get('PG_MEM')}, shared_buffers "
               f"{env.get('PG_SHARED_BUFFERS')}, sysbench {env.get('MY_TABLES')} "
               f"tables x {env.get('MY_ROWS')} rows, MariaDB cgroup "
               f"{env.get('MY_MEM')}")
    out.append(f"- phases (workload:warm-up:measured s): {env.get('PHASES')}")
    out.append("")

    # Summary matrix: the ranking metric and its ratio to the bare disk.
    out.append("### Summary: IOPS (seq-read, seq-over-hot-*: MB/s; databases: TPS), "
               "x HDD alone\n")
    out.append("| contender | " + " | ".join(
        WORKLOAD_TITLES.get(w, w) for w in wls) + " |")
    out.append("|---|" + "---:|" * len(wls))
    for ct in cts:
        cells = []
        for wl in wls:
            r = res.get((ct, wl))
            if not r:
                cells.append("–")
                continue
            x = ratio(r["metric"], res.get(("hdd", wl), {}).get("metric"))
            cells.append(fmt(r["metric"], 1 if r["metric"] < 100 else 0) +
                         (f" ({x:.2f}x)" if x is not None and ct != "hdd"
                          else ""))
        out.append(f"| {ct} | " + " | ".join(cells) + " |")
    out.append("")

    for wl in wls:
        rows = [(ct, res[(ct, wl)]) for ct in cts if (ct, wl) in res]
        if not rows:
            continue
        unit = unit_of(wl)
        out.append(f"### {WORKLOAD_TITLES.get(wl, wl)}\n")
        out.append(f"| contender | {unit} | MB/s (all jobs) | mean ms | "
                   "p99 ms | read hit % | disk busy % | disk IO/s | "
                   "guest CPU % | NVMe IO/s | x HDD | x smq |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                   "---:|")
        for ct, r in rows:
            xh = ratio(r["metric"], res.get(("hdd", wl), {}).get("metric"))
            ref = smq_ref(ct)
            xs = ratio(r["metric"], res.get((ref, wl), {}).get("metric"))
            out.append(
                f"| {ct} | {fmt(r['metric'], 1 if r['metric'] < 100 else 0)}"
                f" | {fmt(r['mbs'], 1)} | {fmt(r['mean_ms'], 2)}"
                f" | {fmt(r['p99_ms'], 1)}"
                f" | {fmt_hit(r['hit'])}"
                f" | {fmt(None if r['busy'] is None else 100 * r['busy'], 0)}"
                f" | {fmt(r['disk_iops'], 1)}"
                f" | {fmt(None if r.get('cpu') is None else 100 * r['cpu'], 0)}"
                f" | {fmt(r.get('cache_iops'), 0)}"
                f" | {fmt(xh, 2)} | {fmt(xs, 2)} |")
        out.append("")

    goals_section(out, cts, res)

    # Kernel against simulator on the traced dm-tac pgbench run.
    cmp_rows = []
    for ct in cts:
        if ct.startswith("tac-") and os.path.isdir(os.path.join(d, ct,
                                                                "blktrace")):
            kern, sim, note = tacsim_compare(d, ct)
            cmp_rows.append((ct, kern, sim, note))
    if cmp_rows:
        out.append("### dm-tac pgbench trace: kernel vs tacsim\n")
        out.append("Hit ratio over all block accesses (reads and writes) "
                   "of the traced run (warm-up + measured), as tacsim "
                   "counts them.\n")
        out.append("| contender | kernel hit % | tacsim hit % | note |")
        out.append("|---|---:|---:|---|")
        for ct, kern, sim, note in cmp_rows:
            out.append(f"| {ct} | {fmt(None if kern is None else 100 * kern, 1)}"
                       f" | {fmt(None if sim is None else 100 * sim['hit_ratio'], 1)}"
                       f" | {note or ''} |")
        out.append("")

    if notes:
        out.append("### Notes from the run\n")
        for n in notes:
            out.append(f"- {n}")
        out.append("")

    per, first, last = phase_seconds(
        read_lines(os.path.join(d, "events.tsv")))
    if first is not None:
        out.append("### Time used\n")
        out.append("| contender | minutes |")
        out.append("|---|---:|")
        for ct in cts:
            if ct in per:
                out.append(f"| {ct} | {(per[ct][1] - per[ct][0]) / 60:.1f} |")
        out.append(f"| all cells | {(last - first) / 60:.1f} |")
        out.append("")

    if plt is not None and res:
        charts += plot_throughput(d, rel, cts, wls, res)
        charts += plot_hitratio(d, rel, cts)


def goals_section(out, cts, res):
    """The goals against the other caches, each with the measured ratio, met or not."""
    tacs = [c for c in cts if c.startswith("tac-")]
    lines = []

    def metric(ct, wl):
        r = res.get((ct, wl))
        return None if r is None else r["metric"]

    def hit(ct, wl):
        r = res.get((ct, wl))
        return None if r is None or r["hit"] is None else r["hit"][0]

    def say(what, got, goal):
        if got is None:
            lines.append(f"- {what}: not measured")
        else:
            verdict = "met" if got >= goal else \
                f"missed by {100 * (goal - got) / goal:.0f}%"
            lines.append(f"- {what}: {got:.2f}x (goal {goal}x: {verdict})")

    for t in tacs:
        ref = smq_ref(t)
        wl = "scan-pollution"
        if (t, wl) in res:
            say(f"scan pollution, {t} / {ref} throughput",
                ratio(metric(t, wl), metric(ref, wl)), 1.5)
            say(f"scan pollution, {t} / {ref} read hit ratio",
                ratio(hit(t, wl), hit(ref, wl)), 1.5)
        for wl in ("oltp-read", "ods-mix"):
            if (t, wl) in res:
                say(f"{wl}, {t} / {ref}",
                    ratio(metric(t, wl), metric(ref, wl)), 1.2)
                say(f"{wl}, {t} / hdd",
                    ratio(metric(t, wl), metric("hdd", wl)), 5)
        for wl in ("seq-read", "seq-over-hot-read", "seq-over-hot-write",
                   "uniform-random"):
            if (t, wl) in res:
                say(f"{wl}, {t} / hdd (no more than 5% slower)",
                    ratio(metric(t, wl), metric("hdd", wl)), 0.95)
    if ("tac-writeback", "oltp-write") in res:
        for ref in ("dmcache-wb", "bcache-wb"):
            say(f"oltp-write, tac-writeback / {ref}",
                ratio(metric("tac-writeback", "oltp-write"),
                      metric(ref, "oltp-write")), 1.2)
    # Issue 10: at least 1.2x bcache and 1.0x dm-writecache; and never
    # behind dm-cache.
    db_goals = (("bcache-wb", 1.2), ("writecache", 1.0), ("dmcache-wb", 1.0))
    for wl, goals in (("pgbench", db_goals), ("sysbench", db_goals)):
        if ("tac-writeback", wl) in res:
            for ref, goal in goals:
                say(f"{wl} TPS, tac-writeback / {ref}",
                    ratio(metric("tac-writeback", wl), metric(ref, wl)), goal)
        if ("tac-writethrough", wl) in res:
            say(f"{wl} TPS, tac-writethrough / hdd",
                ratio(metric("tac-writethrough", wl), metric("hdd", wl)), 1.1)
    if lines:
        out.append("### Goals against the other caches, as measured in this run\n")
        out.extend(lines)
        out.append("")


def plot_throughput(d, rel, cts, wls, res):
    wls = [w for w in wls if any((c, w) in res for c in cts)]
    if not wls:
        return []
    n = len(wls)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows),
                             squeeze=False)
    for i, wl in enumerate(wls):
        ax = axes[i // cols][i % cols]
        names = [c for c in cts if (c, wl) in res]
        vals = [res[(c, wl)]["metric"] for c in names]
        colors = ["tab:red" if c.startswith("tac-") else
                  "tab:blue" if c.startswith("dmcache") else
                  "tab:green" if c.startswith("bcache") else
                  "tab:purple" if c == "writecache" else "tab:gray"
                  for c in names]
        ax.bar(range(len(names)), vals, color=colors)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
        unit = unit_of(wl)
        ax.set_title(f"{WORKLOAD_TITLES.get(wl, wl)} ({unit})", fontsize=10)
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(f"Throughput per workload, kernel {rel} (log scale)")
    fig.tight_layout()
    name = f"throughput-{rel}.png"
    fig.savefig(os.path.join(d, "..", "..", name), dpi=90)
    plt.close(fig)
    return [name]


def plot_hitratio(d, rel, cts):
    series = []
    for ct in cts:
        # dm-tac against dm-cache, the comparison the goals make; bcache folds its
        # counters in every few seconds, too coarse for this chart.
        if not (ct.startswith("tac-") or ct.startswith("dmcache")):
            continue
        s = samples(os.path.join(d, ct, "scan-pollution.samples"))
        if len(s) < 3:
            continue
        t0 = s[0][0]
        warm = phase_time(read_env(os.path.join(d, "bench.env")),
                          "scan-pollution", "warmup")
        tm = t0 + warm if warm else None
        xs, ys = [], []
        for a, b in zip(s, s[1:]):
            h = b[2] - a[2]
            m = b[3] - a[3]
            if h + m > 0 and b[1] in ("warmup", "measure", "run", "end"):
                xs.append(b[0] - t0)
                ys.append(100.0 * h / (h + m))
        if xs:
            series.append((ct, xs, ys, None if tm is None else tm - t0))
    if not series:
        return []
    fig, ax = plt.subplots(figsize=(8, 4))
    for ct, xs, ys, tm in series:
        style = "-" if ct.startswith("tac-") else "--"
        ax.plot(xs, ys, style, label=ct, linewidth=1.5)
    tm = next((x[3] for x in series if x[3] is not None), None)
    if tm is not None:
        ax.axvline(tm, color="gray", linewidth=0.8)
        ax.text(tm, 101, " measured phase", fontsize=8, color="gray",
                va="bottom")
    ax.set_xlabel("seconds since the start of the run")
    ax.set_ylabel("read hit ratio per sample interval, %")
    ax.set_ylim(0, 105)
    ax.set_title(f"Scan pollution: hit ratio over time, kernel {rel}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = f"hitratio-scan-pollution-{rel}.png"
    fig.savefig(os.path.join(d, "..", "..", name), dpi=90)
    plt.close(fig)
    return [name]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    top = sys.argv[1]
    out = ["# dm-tac benchmark results\n"]
    for line in read_lines(os.path.join(top, "host-info.txt")):
        out.append(f"- {line}")
    out.append("")
    out.append("Ranking metric: IOPS of the first job group (the OLTP or "
               "lookup job; scans are in MB/s (all jobs)), MB/s for the "
               "sequential read, TPS for the databases.  Latency: fio's total "
               "latency (lat) of that group, reads and writes together; "
               "pgbench: per transaction over the measured window; sysbench: "
               "its report of the measured run (mean, 99th percentile).  Read hit %: the target's own "
               "counters over the measured phase (dm-tac: read hits / "
               "(hits + misses) from its status; dm-cache: the same fields, "
               "per bio; bcache: stats_total cache and bypass hits / all; "
               "dm-writecache: read hits / reads, per block).  x smq: "
               "against dm-cache smq writeback for write-back contenders, "
               "writethrough for the others; * marks a hit ratio over the whole "
               "run because the counters did not move within the measured "
               "window (bcache updates them every few seconds).  Disk busy %: the share of the "
               "cell's run (warm-up + measured) the disk model was busy, "
               "from hddsim's busy_us; far under 100 means the cell was "
               "not limited by the disk (CPU under TCG).  Disk IO/s: the "
               "reads and writes the disk model served per second over the "
               "same span.  Guest CPU %: the share of the guest's CPU time "
               "that was busy over the same span (/proc/stat); near 100, "
               "the cell was limited by the CPU (TCG).  NVMe IO/s: the "
               "commands (reads, writes, flushes) the NVMe completed per "
               "second over the same span, every contender's cache and the "
               "NVMe alone.  "
               "See bench/compare/README.md.\n")
    charts = []
    for d in sorted(glob.glob(os.path.join(top, "raw", "*"))):
        if os.path.isdir(d):
            kernel_section(out, d, os.path.basename(d), charts)
    if charts:
        out.append("## Charts\n")
        for c in charts:
            out.append(f"![{c}]({c})\n")
    elif plt is None:
        out.append("(No charts: matplotlib not installed; "
                   "make deps WITH_PLOTS=1.)\n")
    path = os.path.join(top, "results.md")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
