#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# dm-tac micro-benchmarks (figures, not a test), run inside the VM:
#   make bench-micro [KVER=6.12] [ROUNDS=5] [ROUND_S=2] [BS=4k] [WARM_BS=4k]
#
# Under TCG a single run of a few seconds is too noisy to compare devices
# (the same device's IOPS move by a third from one minute to the next), so
# the devices of a comparison exist side by side and are measured
# interleaved: ROUNDS rounds, each running every configuration once for
# ROUND_S seconds in an order that rotates from round to round.  Reported:
# the median IOPS per configuration with its min and max over the rounds,
# and ratios taken within each round, then their median.
#
#  1. 4 KiB (BS) random read hits (100% hits, a 64 MiB working set) of
#     dm-linear, dm-tac with checksums checked (verify_reads on, the
#     default) and not (the same device, toggled by a message before its
#     runs), and dm-cache smq (write-through, 32 KiB blocks, its
#     smallest), each at iodepth 1, 16 and 32 and with 2 jobs of iodepth
#     16 (IOPS summed); with the guest's CPU time per I/O: the non-idle
#     jiffies of /proc/stat's "cpu" line (user, nice, system, irq,
#     softirq; not iowait or steal), fio's own included, over the I/Os fio
#     did; and dm-tac's and dm-cache's read hits and misses over all the
#     rounds (0 misses expected);
#  2. 4 KiB (BS) random reads with no admissions (passthrough, and write-through
#     with a policy that admits nothing) vs dm-linear on the origin, the
#     same way;
#  3. RAM per cache block: slab + vmalloc growth when a large cache over
#     null_blk is created;
#  4. write-back write hits: random writes of BS over the 64 MiB working
#     set, cached and dirty (written twice first; idle cleaning off, so
#     every block stays dirty), in dm-tac write-back and in dm-linear,
#     at iodepth 16, without flushes and with an fsync (a flush: dm-tac
#     commits its metadata) after every 16 writes; IOPS and CPU per I/O
#     as in 1.  Section 4 runs before 3, whose RAM disks it removes.
# All devices are RAM disks (brd), each read from RAM of the same kind: the
# origin ram0 is shared by dm-tac, dm-cache and section 2's dm-linear (none
# writes to it); dm-tac's cache is ram1, dm-cache's metadata and cache
# ram2 and ram3, section 1's dm-linear ram4, a copy of the working set.
# So the figures measure the targets' own overhead; under TCG emulation
# absolute IOPS are low, the ratios are the point.
set -u
ROUNDS=${ROUNDS:-5}
ROUND_S=${ROUND_S:-2}
# The measured reads' size: 8k, a database page, is two of dm-tac's
# 4 KiB blocks (the warm-up reads 4 KiB).
BS=${BS:-4k}
modprobe brd rd_nr=5 rd_size=$((512 * 1024)) || exit 1
origin=/dev/ram0
tcache=/dev/ram1		# dm-tac's cache
meta=/dev/ram2			# dm-cache's metadata
dcache=/dev/ram3		# dm-cache's cache
lindev=/dev/ram4		# section 1's dm-linear
len=$(blockdev --getsz $origin)
ws=64M			# the working set (hits), well inside the caches
cold=64M		# section 2 reads [64M, 128M), which no cache holds
hz=$(getconf CLK_TCK)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=$out/runs		# a line per measured run: its JSON file, CPU jiffies

# BUSY: jiffies the CPUs were busy (user, nice, system, irq, softirq), read
# without a fork: under TCG every process started costs a few 100 ms.
busy() {
	local cpu u n s idle iow irq sirq rest
	read -r cpu u n s idle iow irq sirq rest </proc/stat
	BUSY=$((u + n + s + irq + sirq))
}

# fio_run JSON FILE OFFSET IODEPTH NUMJOBS SECONDS [SIZE]: random reads
# of SIZE (4k) over $ws from OFFSET for SECONDS (0: one pass, each block
# once per job) with NUMJOBS jobs of IODEPTH, the result in JSON.
fio_run() {
	local t=
	[ "$6" = 0 ] || t="--runtime=$6 --time_based"
	fio --name=m --filename="$2" --direct=1 --ioengine=libaio \
		--iodepth="$4" --numjobs="$5" --group_reporting \
		--rw="${RW:-randread}" --fsync="${FSYNC:-0}" \
		--bs="${7:-4k}" --size=$ws --offset="$3" $t \
		--output-format=json --output="$1" >/dev/null
}
# measure KEY ROUND FILE OFFSET IODEPTH NUMJOBS: a fio_run of ROUND_S
# seconds, recorded in $runs as "KEY ROUND JSON busy0 busy1".
measure() {
	local b0 json=$out/$1.$2.json
	busy; b0=$BUSY
	fio_run "$json" "$3" "$4" "$5" "$6" "$ROUND_S" "$BS"
	busy
	echo "$1 $2 $json $b0 $BUSY" >>"$runs"
}
field() { dmsetup status "$1" | awk -v n="$2" '{ print $(n + 3) }'; }
# Read hits, read misses, promotions and (dm-tac) missed blocks bypassed so
# far of dm-tac or dm-cache device NAME.
counts() {
	dmsetup status "$1" | awk '$3 == "tac" { print $7, $8, $11, $17; next }
		$3 == "cache" { print $8, $9, $13, 0 }'
}

dd if=/dev/urandom of=$origin bs=1M count=128 status=none
dd if=$origin of=$lindev bs=1M count=64 iflag=direct oflag=direct status=none

# 1. hits: the devices side by side.
dmsetup create lin_h --table "0 $len linear $lindev 0"
dmsetup create --noudevrules tacm --table "0 $len tac $origin $tcache 8 0"
dmsetup mknodes tacm
# Warm-up: passes over the working set, each block read once in random
# reads of WARM_BS (4 KiB; larger sequential reads are read around the
# cache), until one has no miss.  A miss of several blocks is cached in
# cache blocks that follow each other while there are free ones, so
# WARM_BS=BS lets each measured read be one read run (a database's
# pages, filled whole); 4 KiB leaves a page's blocks apart.
for i in 1 2 3 4 5; do
	read -r _ m0 _ _ < <(counts tacm)
	fio_run "$out/warm.json" /dev/mapper/tacm 0 16 1 0 "${WARM_BS:-4k}"
	read -r _ m1 _ _ < <(counts tacm)
	[ "$m1" = "$m0" ] && break
done
# dm-cache smq over the same origin, warmed the same way as before (smq
# promotes after a few hits).
modprobe dm-cache 2>/dev/null
devs="lin tacon tacoff" dmc_note=
if dmsetup create --noudevrules dmcm --table \
	"0 $len cache $meta $dcache $origin 64 1 writethrough smq 0" 2>/dev/null; then
	dmsetup mknodes dmcm
	for i in 1 2 3 4; do
		fio_run "$out/warm.json" /dev/mapper/dmcm 0 16 1 5
	done
	devs="$devs dmc"
else
	dmc_note="dm-cache unavailable"
fi
devs=($devs)
loads=(1x1 16x1 32x1 16x2)	# IODEPTHxNUMJOBS

read -r tac_h0 tac_m0 _ _ < <(counts tacm)
[ -z "$dmc_note" ] && read -r dmc_h0 dmc_m0 _ _ < <(counts dmcm)
verify=on
for ((r = 0; r < ROUNDS; r++)); do
	for ((l = 0; l < 4; l++)); do
		load=${loads[(l + r) % 4]}
		for ((d = 0; d < ${#devs[@]}; d++)); do
			dev=${devs[(d + l + r) % ${#devs[@]}]}
			case $dev in
			lin)	name=lin_h ;;
			dmc)	name=dmcm ;;
			*)	name=tacm
				if [ "tac$verify" != "$dev" ]; then
					verify=${dev#tac}
					dmsetup message tacm 0 set verify_reads $verify
				fi ;;
			esac
			measure "$dev.$load" $r /dev/mapper/$name 0 ${load%x*} ${load#*x}
		done
	done
done
read -r tac_h1 tac_m1 _ _ < <(counts tacm)
tac_hm="$((tac_h1 - tac_h0))/$((tac_m1 - tac_m0))"
dmc_hm=
if [ -z "$dmc_note" ]; then
	read -r dmc_h1 dmc_m1 _ _ < <(counts dmcm)
	dmc_hm="$((dmc_h1 - dmc_h0))/$((dmc_m1 - dmc_m0))"
	dmsetup remove dmcm
fi
dmsetup message tacm 0 set verify_reads on
dmsetup remove lin_h

# 2. no admissions, on the origin's [64M, 128M), which no cache holds.
# admit_margin cannot stop admissions (admit_margin 1000 with
# fill_threshold 0 had all 16384 blocks of such a region promoted): with
# free blocks (the 512 MiB cache holds 64 MiB) a miss is admitted when its
# extent's temperature beats that of the next victim's extent by
# admit_margin percent (1000 at most; the learning filter may halve the
# latter), and every random access adds cost_hdd_random_us -
# cost_cache_us to it, so an extent read often enough always gets in.  What the policy needs is a candidate of
# temperature 0: with both disk costs 0 no access warms an extent, and 0
# is never warmer than anything; fill_threshold 0 turns off the filling
# that admits everything below 95% used.  Every miss still goes through
# the whole policy (classification, accounting, the admission decision)
# and is bypassed.
dmsetup create lin_o --table "0 $len linear $origin 0"
dmsetup message tacm 0 set fill_threshold 0
dmsetup message tacm 0 set cost_hdd_random_us 0
dmsetup message tacm 0 set cost_hdd_seq_us 0
byp_miss=0 byp_prom=0 byp_byp=0 mode=writethrough
ncfg=(lin pt byp)
for ((r = 0; r < ROUNDS; r++)); do
	for ((d = 0; d < 3; d++)); do
		case ${ncfg[(d + r) % 3]} in
		lin)
			measure nolin $r /dev/mapper/lin_o $cold 16 1 ;;
		pt)
			[ $mode = passthrough ] ||
				dmsetup message tacm 0 mode passthrough
			mode=passthrough
			measure nopt $r /dev/mapper/tacm $cold 16 1 ;;
		byp)
			[ $mode = writethrough ] ||
				dmsetup message tacm 0 mode writethrough
			mode=writethrough
			read -r _ m0 p0 y0 < <(counts tacm)
			measure nobyp $r /dev/mapper/tacm $cold 16 1
			read -r _ m1 p1 y1 < <(counts tacm)
			byp_miss=$((byp_miss + m1 - m0))
			byp_prom=$((byp_prom + p1 - p0))
			byp_byp=$((byp_byp + y1 - y0)) ;;
		esac
	done
done
dmsetup remove tacm
dmsetup remove lin_o

# 4. write-back write hits: dm-tac write-back on ram1 (64 MiB written
# twice: cached, dirty) against dm-linear on ram4, side by side.
dmsetup create --noudevrules tacw --table \
	"0 $len tac $origin $tcache 8 3 mode writeback format" || exit 1
dmsetup mknodes tacw
dmsetup message tacw 0 set clean_idle_ms 0
dmsetup create lin_w --table "0 $len linear $lindev 0"
for i in 1 2; do
	fio --name=w --filename=/dev/mapper/tacw --direct=1 --rw=write \
		--bs=64k --size=$ws --ioengine=psync >/dev/null
done
read -r w_dirty0 w_wh0 w_wm0 < <(dmsetup status tacw | awk '{ print $6, $9, $10 }')
wcfg=(wlin wtac wlinf wtacf)
for ((r = 0; r < ROUNDS; r++)); do
	for ((d = 0; d < 4; d++)); do
		c=${wcfg[(d + r) % 4]} f=0 dev=/dev/mapper/lin_w
		case $c in *f) f=16 ;; esac
		case $c in wtac*) dev=/dev/mapper/tacw ;; esac
		RW=randwrite FSYNC=$f measure $c $r $dev 0 16 1
	done
done
read -r w_dirty1 w_wh1 w_wm1 < <(dmsetup status tacw | awk '{ print $6, $9, $10 }')
w_commits=$(dmsetup status tacw | awk '{ print $25 }')
dmsetup remove tacw
dmsetup remove lin_w

RUNS=$runs HZ=$hz ROUNDS=$ROUNDS ROUND_S=$ROUND_S KREL=$(uname -r) BS=$BS \
WSTAT="$w_dirty0 $w_dirty1 $((w_wh1 - w_wh0)) $((w_wm1 - w_wm0)) $w_commits" \
NCPU=$(nproc) DEVS="${devs[*]}" TAC_HM=$tac_hm DMC_HM=$dmc_hm \
DMC_NOTE=$dmc_note BYP="$byp_prom $byp_miss $byp_byp" python3 - <<'PY'
import json, os, statistics

e = os.environ
hz, rounds = int(e["HZ"]), int(e["ROUNDS"])
res = {}	# key -> {round: (IOPS, CPU us per I/O)}
for line in open(e["RUNS"]):
    key, rnd, path, b0, b1 = line.split()
    j = json.load(open(path))["jobs"][0]
    r = j["write"] if key.startswith("w") else j["read"]
    cpu = (int(b1) - int(b0)) * 1e6 / hz / max(r["total_ios"], 1)
    res.setdefault(key, {})[int(rnd)] = (r["iops"], cpu)

def vals(key, i=0):
    return [v[i] for v in res[key].values()]

def ratios(a, b, i=0):
    return [res[a][r][i] / max(res[b][r][i], 1e-9)
            for r in res[a] if r in res.get(b, {})]

med = statistics.median
def mm(x):
    return "%.2f [%.2f-%.2f]" % (med(x), min(x), max(x))

devs = e["DEVS"].split()
names = {"lin": "dm-linear", "tacon": "dm-tac, verify_reads on",
         "tacoff": "dm-tac, verify_reads off", "dmc": "dm-cache smq"}
loads = [("1x1", "QD1"), ("16x1", "QD16"), ("32x1", "QD32"),
         ("16x2", "numjobs=2")]
print("== %s random read hits, 64 MiB working set, brd RAM disks, %s"
      % (e["BS"], e["KREL"]))
print("   %d rounds; each runs every configuration below once for %ss, in an"
      " order rotating from round" % (rounds, e["ROUND_S"]))
print("   to round.  IOPS: median, min and max over the rounds (numjobs=2:"
      " 2 jobs of iodepth 16, summed).")
print("   CPU us/IO: busy time of the guest's %s CPUs (user+nice+system+irq+"
      "softirq of /proc/stat, fio's" % e["NCPU"])
print("   own included) per I/O, median over the rounds.  x linear: the"
      " median of the rounds' ratios to dm-linear.")
print("%-10s %-26s %7s %7s %7s %8s %9s %8s" % ("load", "device", "IOPS",
      "min", "max", "x linear", "CPU us/IO", "x linear"))
for load, label in loads:
    for d in devs:
        k, kl = d + "." + load, "lin." + load
        x = vals(k)
        print("%-10s %-26s %7d %7d %7d %8.2f %9.1f %8.2f" % (
              label if d == devs[0] else "", names[d], med(x), min(x),
              max(x), med(ratios(k, kl)), med(vals(k, 1)),
              med(ratios(k, kl, 1))))
hm = "dm-tac %s (both verify_reads settings)" % e["TAC_HM"]
if e["DMC_HM"]:
    hm += ", dm-cache smq %s" % e["DMC_HM"]
print("read hits/misses over all the rounds: " + hm)
if "dmc" in devs:
    print("dm-tac vs dm-cache smq: %.2f (verify_reads on), %.2f (off)" % (
          med(ratios("tacon.16x1", "dmc.16x1")),
          med(ratios("tacoff.16x1", "dmc.16x1"))))
else:
    print("dm-tac vs dm-cache smq: " + e["DMC_NOTE"])
print("dm-tac verify_reads off vs dm-linear: %.2f"
      % med(ratios("tacoff.16x1", "lin.16x1")))
print("   (those at QD16; each the median of the %d rounds' ratios.  All"
      " loads, median [min-max]:)" % rounds)
pairs = [("tacon", "dmc"), ("tacoff", "dmc"), ("tacon", "lin"),
         ("tacoff", "lin"), ("dmc", "lin")]
short = {"lin": "dm-linear", "tacon": "dm-tac on", "tacoff": "dm-tac off",
         "dmc": "dm-cache smq"}
print("%-26s" % "IOPS ratio" + "".join("%18s" % l for _, l in loads))
for a, b in pairs:
    if a in devs and b in devs:
        print("%-26s" % (short[a] + " / " + short[b]) + "".join(
              "%18s" % mm(ratios(a + "." + l, b + "." + l)) for l, _ in loads))

prom, miss, byp = (int(x) for x in e["BYP"].split())
print("== %s random reads with no admissions, iodepth 16, of 64 MiB no cache"
      " holds, %d rounds of %ss runs" % (e["BS"], rounds, e["ROUND_S"]))
print("%-58s %7s %7s %7s %8s" % ("device", "IOPS", "min", "max", "x linear"))
for k, name in (("nolin", "dm-linear on the origin"),
                ("nopt", "dm-tac passthrough"),
                ("nobyp", "dm-tac writethrough, %s (%d of %d promoted)" % (
                 "all bypassed" if prom == 0 and byp == miss else
                 "NOT all bypassed", prom, miss))):
    x = vals(k)
    print("%-58s %7d %7d %7d %8.2f" % (name, med(x), min(x), max(x),
          med(ratios(k, "nolin"))))
print("   write-through: %d misses, %d bypassed, %d promoted; nothing can be"
      " admitted: cost_hdd_random_us" % (miss, byp, prom))
print("   and cost_hdd_seq_us 0 (no access warms an extent), fill_threshold"
      " 0; the policy still decides each miss")

d0, d1, wh, wm, commits = (int(x) for x in e["WSTAT"].split())
print("== %s random write hits in write-back, iodepth 16, 64 MiB cached and"
      " dirty, %d rounds of %ss runs" % (e["BS"], rounds, e["ROUND_S"]))
print("%-42s %7s %7s %7s %8s %9s %8s" % ("device", "IOPS", "min", "max",
      "x linear", "CPU us/IO", "x linear"))
for k, kl, name in (("wlin", "wlin", "dm-linear"),
                    ("wtac", "wlin", "dm-tac write-back"),
                    ("wlinf", "wlinf", "dm-linear, fsync every 16"),
                    ("wtacf", "wlinf", "dm-tac write-back, fsync every 16")):
    x = vals(k)
    print("%-42s %7d %7d %7d %8.2f %9.1f %8.2f" % (name, med(x), min(x),
          max(x), med(ratios(k, kl)), med(vals(k, 1)),
          med(ratios(k, kl, 1))))
print("   dm-tac: dirty blocks %d before the rounds, %d after; %d write hits,"
      " %d write misses; %d metadata commits in all" % (d0, d1, wh, wm, commits))
PY

# 3. RAM per cache block over null_blk (no memory behind it).
rmmod brd
modprobe null_blk nr_devices=2 gb=64 memory_backed=0 || exit 0
sleep 1
mem() { awk '/^(Slab|VmallocUsed|Percpu):/ { s += $2 } END { print s }' /proc/meminfo; }
sync; echo 3 >/proc/sys/vm/drop_caches
m0=$(mem)
nlen=$(blockdev --getsz /dev/nullb0)
dmsetup create --noudevrules tacram --table "0 $nlen tac /dev/nullb0 /dev/nullb1 8 0"
sync; echo 3 >/proc/sys/vm/drop_caches
m1=$(mem)
total=$(field tacram 2 | cut -d/ -f2)
tracked=$(dmsetup table tacram >/dev/null; dmsetup status tacram | awk '{ print $20 }')
dmsetup remove --noudevrules tacram
python3 - "$m0" "$m1" "$total" <<'EOF'
import sys
m0, m1, n = (int(x) for x in sys.argv[1:])
print("== RAM: a 64 GiB cache of 4 KiB blocks over null_blk")
print("cache blocks %d, slab+vmalloc+percpu growth %.1f MiB, %.2f bytes per "
      "cache block (statistics table and fixed costs included)"
      % (n, (m1 - m0) / 1024, (m1 - m0) * 1024 / n))
EOF
