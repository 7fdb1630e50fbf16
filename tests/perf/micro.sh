#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# dm-tac micro-benchmarks (figures, not a test), run inside the VM:
#   make bench-micro [KVER=6.12]
#
#  1. 4 KiB random reads at 100% hits vs dm-linear on the cache device,
#     with checksums checked (verify_reads on, the default) and not, and
#     dm-cache smq (write-through, 32 KiB blocks, its smallest) beside;
#  2. the same four devices at iodepth 1 and 32 and with 2 jobs of iodepth
#     16 (IOPS summed), $QD_RUNTIME seconds each, and the guest's CPU time
#     per I/O in section 1's runs: the non-idle jiffies of /proc/stat's
#     "cpu" line (user, nice, system, irq, softirq; not iowait or steal),
#     fio's own included, over the I/Os fio did; dm-tac's and dm-cache's
#     read hits and misses of every run are printed;
#  3. 4 KiB random reads with no admissions (passthrough, and write-through
#     with every block bypassed) vs dm-linear on the origin;
#  4. RAM per cache block: slab + vmalloc growth when a large cache over
#     null_blk is created.
# Both devices are RAM disks (brd), so the figures measure dm-tac's own
# overhead; under TCG emulation absolute IOPS are low, the ratios are the
# point.
set -u
RUNTIME=${RUNTIME:-15}
QD_RUNTIME=${QD_RUNTIME:-8}	# section 2's runs other than iodepth 16
modprobe brd rd_nr=3 rd_size=$((512 * 1024)) || exit 1
origin=/dev/ram0
cache=/dev/ram1
meta=/dev/ram2			# dm-cache's metadata
len=$(blockdev --getsz $origin)
ws=64M			# the working set, well inside the cache
hz=$(getconf CLK_TCK)

# Jiffies the CPUs were busy: user, nice, system, irq, softirq.
busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }

# fio_iops FILE [OFFSET [IODEPTH [NUMJOBS]]]: 4 KiB random reads of the
# working set from OFFSET (0) for $RUNTIME seconds (0: one pass, each block
# once per job) with NUMJOBS (1) jobs of IODEPTH (16).  Prints the IOPS,
# all jobs summed, and the guest's busy CPU time per I/O in microseconds.
fio_iops() {
	local b0 b1 json t=
	[ "$RUNTIME" = 0 ] || t="--runtime=$RUNTIME --time_based"
	b0=$(busy)
	json=$(fio --name=m --filename="$1" --direct=1 --ioengine=libaio \
		--iodepth="${3:-16}" --numjobs="${4:-1}" --group_reporting \
		--rw=randread --bs=4k --size=$ws --offset="${2:-0}" $t \
		--output-format=json)
	b1=$(busy)
	python3 -c '
import json, sys
r = json.loads(sys.stdin.read())["jobs"][0]["read"]
b0, b1, hz = (int(x) for x in sys.argv[1:])
print(int(r["iops"]), "%.1f" % ((b1 - b0) * 1e6 / hz / max(r["total_ios"], 1)))
' "$b0" "$b1" "$hz" <<<"$json"
}
field() { dmsetup status "$1" | awk -v n="$2" '{ print $(n + 3) }'; }
# Read hits and misses so far of dm-tac or dm-cache device NAME ("- -" for
# others).
hitmiss() {
	dmsetup status "$1" | awk '$3 == "tac" { print $7, $8; next }
		$3 == "cache" { print $8, $9; next } { print "-", "-" }'
}

# measure KEY NAME IODEPTH NUMJOBS: fio_iops over /dev/mapper/NAME into
# iops[KEY,IODEPTH,NUMJOBS], cpu[...] and hm[...] ("hits misses" of the run).
declare -A iops cpu hm
measure() {
	local k=$1,$3,$4 h0 h1
	h0=$(hitmiss "$2")
	read -r "iops[$k]" "cpu[$k]" < <(fio_iops /dev/mapper/"$2" 0 "$3" "$4")
	h1=$(hitmiss "$2")
	set -- $h0 $h1
	if [ "$1" = - ]; then
		hm[$k]="- -"
	else
		hm[$k]="$(($3 - $1)) $(($4 - $2))"
	fi
}
# Section 2's other columns for KEY.
measure_qd() {
	RUNTIME=$QD_RUNTIME measure "$1" "$2" 1 1
	RUNTIME=$QD_RUNTIME measure "$1" "$2" 32 1
	RUNTIME=$QD_RUNTIME measure "$1" "$2" 16 2
}

dd if=/dev/urandom of=$origin bs=1M count=128 status=none
dd if=/dev/zero of=$cache bs=1M count=1 status=none

# 1. hits (and 2, which needs the same devices)
dmsetup create lin_c --table "0 $len linear $cache 0"
measure lin lin_c 16 1
lin_c=${iops[lin,16,1]}
measure_qd lin lin_c
dmsetup remove lin_c
dmsetup create --noudevrules tacm --table "0 $len tac $origin $cache 8 0"
dmsetup mknodes tacm
# Warm-up: passes over the working set, each block read once in 4 KiB
# random reads (larger sequential reads are read around the cache), until
# one has no miss.
for i in 1 2 3 4 5; do
	RUNTIME=0 measure warm tacm 16 1
	[ "${hm[warm,16,1]#* }" = 0 ] && break
done
dmsetup message tacm 0 reset_stats
measure tac tacm 16 1
tac_hit=${iops[tac,16,1]}
read -r hits misses <<<"${hm[tac,16,1]}"
measure_qd tac tacm
dmsetup message tacm 0 set verify_reads off
dmsetup message tacm 0 reset_stats
measure nov tacm 16 1
tac_nov=${iops[nov,16,1]}
nov_hits=${hm[nov,16,1]% *}
measure_qd nov tacm
dmsetup message tacm 0 set verify_reads on

# 3. no admissions: the cache is full of hot blocks; reads of another
# region are never warm enough (admit_margin 1000%).
dmsetup message tacm 0 set admit_margin 1000
dmsetup message tacm 0 set fill_threshold 0
dmsetup message tacm 0 reset_stats
read -r tac_byp _ < <(fio_iops /dev/mapper/tacm 256M)
byp_prom=$(field tacm 8)
byp_miss=$(field tacm 5)
dmsetup message tacm 0 mode passthrough
read -r tac_pt _ < <(fio_iops /dev/mapper/tacm 256M)
dmsetup remove tacm
dmsetup create lin_o --table "0 $len linear $origin 0"
read -r lin_o _ < <(fio_iops /dev/mapper/lin_o 256M)
dmsetup remove lin_o

# dm-cache smq over the same devices, warmed the same way (smq promotes
# after a few hits).
modprobe dm-cache 2>/dev/null
dd if=/dev/zero of=$meta bs=1M count=8 status=none
dmc_hit=0 dmc_note="dm-cache unavailable"
if dmsetup create --noudevrules dmcm --table \
	"0 $len cache $meta $cache $origin 64 1 writethrough smq 0" 2>/dev/null; then
	dmsetup mknodes dmcm
	for i in 1 2 3 4; do
		RUNTIME=5 fio_iops /dev/mapper/dmcm >/dev/null
	done
	measure dmc dmcm 16 1
	dmc_hit=${iops[dmc,16,1]}
	dmc_note=$(dmsetup status dmcm | awk '{ print $8 " hits, " $9 " misses" }')
	measure_qd dmc dmcm
	dmsetup remove dmcm
fi

ratio() { python3 -c "print('%.2f' % ($1 / max($2, 1)))"; }
echo "== 4 KiB random reads, iodepth 16, ${RUNTIME}s each, brd devices, $(uname -r)"
printf '%-44s %10s %8s\n' "device" "IOPS" "ratio"
printf '%-44s %10d %8s\n' "dm-linear on the cache device" "$lin_c" "1.00"
printf '%-44s %10d %8s\n' "dm-tac, 100% hits ($hits hits, $misses misses)" "$tac_hit" "$(ratio "$tac_hit" "$lin_c")"
printf '%-44s %10d %8s\n' "dm-tac, verify_reads off ($nov_hits hits)" "$tac_nov" "$(ratio "$tac_nov" "$lin_c")"
printf '%-44s %10d %8s\n' "dm-cache smq ($dmc_note, last pass)" "$dmc_hit" "$(ratio "$dmc_hit" "$lin_c")"
echo "dm-tac vs dm-cache smq: $(ratio "$tac_hit" "$dmc_hit") (verify_reads on), $(ratio "$tac_nov" "$dmc_hit") (off)"

echo "== 4 KiB random read hits, IOPS by iodepth (QD): QD16 is the ${RUNTIME}s runs above, the others ${QD_RUNTIME}s each"
echo "   numjobs=2: 2 jobs of iodepth 16, IOPS summed.  CPU us/IO at QD16: busy time of the guest's $(nproc) CPUs"
echo "   (user+nice+system+irq+softirq of /proc/stat, fio's own included) per I/O; ratio: that over dm-linear's"
keys="lin tac nov" names=("dm-linear on the cache device" "dm-tac, verify_reads on" "dm-tac, verify_reads off" "dm-cache smq")
[ -n "${iops[dmc,16,1]:-}" ] && keys="$keys dmc"
printf '%-30s %7s %7s %7s %9s %9s %18s\n' device QD1 QD16 QD32 numjobs=2 "CPU us/IO" "ratio vs dm-linear"
i=0
for k in $keys; do
	printf '%-30s %7d %7d %7d %9d %9s %18s\n' "${names[i]}" "${iops[$k,1,1]}" \
		"${iops[$k,16,1]}" "${iops[$k,32,1]}" "${iops[$k,16,2]}" \
		"${cpu[$k,16,1]}" "$(ratio "${cpu[$k,16,1]}" "${cpu[lin,16,1]}")"
	i=$((i + 1))
done
i=0
for k in $keys; do
	[ "$k" != lin ] && printf '%s, read hits/misses: QD1 %s, QD16 %s, QD32 %s, numjobs=2 %s\n' \
		"${names[i]}" "${hm[$k,1,1]/ //}" "${hm[$k,16,1]/ //}" \
		"${hm[$k,32,1]/ //}" "${hm[$k,16,2]/ //}"
	i=$((i + 1))
done
[ -z "${iops[dmc,16,1]:-}" ] && echo "dm-cache smq: $dmc_note"

echo "== 4 KiB random reads with no admissions, iodepth 16, ${RUNTIME}s each"
printf '%-44s %10d %8s\n' "dm-linear on the origin" "$lin_o" "1.00"
printf '%-44s %10d %8s\n' "dm-tac passthrough" "$tac_pt" "$(ratio "$tac_pt" "$lin_o")"
printf '%-44s %10d %8s\n' "dm-tac writethrough, all bypassed ($byp_prom of $byp_miss promoted)" "$tac_byp" "$(ratio "$tac_byp" "$lin_o")"

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
