#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# dm-tac micro-benchmarks (figures, not a test), run inside the VM:
#   make bench-micro [KVER=6.12]
#
#  1. 4 KiB random reads at 100% hits vs dm-linear on the cache device,
#     with checksums checked (verify_reads on, the default) and not, and
#     dm-cache smq (write-through, 32 KiB blocks, its smallest) beside;
#  2. 4 KiB random reads with no admissions (passthrough, and write-through
#     with every block bypassed) vs dm-linear on the origin;
#  3. RAM per cache block: slab + vmalloc growth when a large cache over
#     null_blk is created.
# Both devices are RAM disks (brd), so the figures measure dm-tac's own
# overhead; under TCG emulation absolute IOPS are low, the ratios are the
# point.
set -u
RUNTIME=${RUNTIME:-15}
modprobe brd rd_nr=3 rd_size=$((512 * 1024)) || exit 1
origin=/dev/ram0
cache=/dev/ram1
meta=/dev/ram2			# dm-cache's metadata
len=$(blockdev --getsz $origin)
ws=64M			# the working set, well inside the cache

fio_iops() {
	fio --name=m --filename="$1" --direct=1 --ioengine=libaio --iodepth=16 \
		--rw=randread --bs=4k --size=$ws --offset=${2:-0} \
		--runtime="$RUNTIME" --time_based --output-format=json |
		python3 -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}
field() { dmsetup status "$1" | awk -v n="$2" '{ print $(n + 3) }'; }

dd if=/dev/urandom of=$origin bs=1M count=128 status=none
dd if=/dev/zero of=$cache bs=1M count=1 status=none

# 1. hits
dmsetup create lin_c --table "0 $len linear $cache 0"
lin_c=$(fio_iops /dev/mapper/lin_c)
dmsetup remove lin_c
dmsetup create --noudevrules tacm --table "0 $len tac $origin $cache 8 0"
dmsetup mknodes tacm
for i in 1 2 3; do
	dd if=/dev/mapper/tacm of=/dev/null bs=64k count=1024 iflag=direct status=none
	sleep 1
done
dmsetup message tacm 0 reset_stats
tac_hit=$(fio_iops /dev/mapper/tacm)
hits=$(field tacm 4)
misses=$(field tacm 5)
dmsetup message tacm 0 set verify_reads off
dmsetup message tacm 0 reset_stats
tac_nov=$(fio_iops /dev/mapper/tacm)
nov_hits=$(field tacm 4)
dmsetup message tacm 0 set verify_reads on

# 2. no admissions: the cache is full of hot blocks; reads of another
# region are never warm enough (admit_margin 1000%).
dmsetup message tacm 0 set admit_margin 1000
dmsetup message tacm 0 set fill_threshold 0
dmsetup message tacm 0 reset_stats
tac_byp=$(fio_iops /dev/mapper/tacm 256M)
byp_prom=$(field tacm 8)
byp_miss=$(field tacm 5)
dmsetup message tacm 0 mode passthrough
tac_pt=$(fio_iops /dev/mapper/tacm 256M)
dmsetup remove tacm
dmsetup create lin_o --table "0 $len linear $origin 0"
lin_o=$(fio_iops /dev/mapper/lin_o 256M)
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
	dmc_hit=$(fio_iops /dev/mapper/dmcm)
	dmc_note=$(dmsetup status dmcm | awk '{ print $8 " hits, " $9 " misses" }')
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
