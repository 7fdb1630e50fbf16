#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Functional checks and calibration of the dm-hddsim target.  Runs as root
# inside a throw-away VM (see run-vm.sh), over a sparse brd RAM disk.
#
#   validate.sh <dm-hddsim.ko> <outdir> [runtime_s] [quick]
#
# Part 1 (TAP): table grammar, rejected tables, messages, the model's
# arithmetic read back from the status counters, data integrity, suspend,
# resume, reload and forced removal under load, module unload, clean dmesg.
# Part 2: fio calibration runs (fio/*.fio); their acceptance ranges come
# from what the benchmarks need of the model and are reported as TAP
# lines too.  Timing depends on the
# host: these are measurements, not unit tests.
#
# Exit status: 0 if every check passed, 1 otherwise, 4 if it cannot run.

set -u

KO=${1:?usage: validate.sh <dm-hddsim.ko> <outdir> [runtime_s] [quick]}
OUT=${2:?usage: validate.sh <dm-hddsim.ko> <outdir> [runtime_s] [quick]}
RUNTIME=${3:-12}
QUICK=${4:-}
HERE=$(dirname "$(readlink -f "$0")")
RAM_KIB=$((4 * 1024 * 1024))	# 4 GiB, sparse: only written pages use RAM

export RUNTIME

n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# expect <name> <expected> <actual>
expect() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		echo "#   expected: '$2'"
		echo "#   actual:   '$3'"
	fi
}
# expect_range <name> <lo> <hi> <actual>: lo <= actual <= hi (decimals ok)
expect_range() {
	if awk -v lo="$2" -v hi="$3" -v v="$4" \
		'BEGIN { exit !(v + 0 >= lo + 0 && v + 0 <= hi + 0) }'; then
		ok "$1 # $4 in [$2, $3]"
	else
		not_ok "$1"
		echo "#   expected: $2 .. $3"
		echo "#   actual:   $4"
	fi
}
bail() { echo "Bail out! $*"; exit 4; }

mkdir -p "$OUT" || bail "cannot write $OUT"
command -v fio >/dev/null && command -v jq >/dev/null &&
	command -v dmsetup >/dev/null || bail "needs fio, jq and dmsetup"

modprobe dm-mod || bail "no dm-mod"
modprobe brd rd_nr=1 rd_size=$RAM_KIB || bail "no brd"
insmod "$KO" || bail "cannot load $KO"
dmesg -c >/dev/null

RAM=/dev/ram0
SZ=$(blockdev --getsz $RAM)
MM=$(cat /sys/block/ram0/dev)
HDD=/dev/mapper/hdd

echo "# kernel $(uname -r), fio $(fio --version), backing $RAM $SZ sectors"

settle() { udevadm settle 2>/dev/null || sleep 1; }
create() {
	dmsetup create hdd --table "0 $SZ hddsim $RAM $*" 2>/dev/null &&
		settle
}
remove() { dmsetup remove hdd 2>/dev/null; }
table() { dmsetup table hdd | cut -d' ' -f4-; }
# stats <field>...: INFO fields 1..15 (see README.md), one snapshot
stats() {
	local info
	info=$(dmsetup status hdd | cut -d' ' -f4-)
	for f; do echo "$info" | cut -d' ' -f"$f"; done | paste -sd' '
}
reset() { dmsetup message hdd 0 reset_stats; }
# rd <sector> <bytes>: one direct read of <bytes> at <sector>
rd() {
	dd if=$HDD of=/dev/null iflag=direct,skip_bytes bs="$2" count=1 \
		skip=$(($1 * 512)) status=none
}

### Part 1: functional checks ###############################################

create 0
expect "table_roundtrip_defaults" "$MM 0" "$(table)"
remove

opts="6 rpm 5400 seek_avg_us 9000 rate_mb_s 120"
create "$opts"
expect "table_roundtrip_keeps_given_options_in_order" "$MM $opts" "$(table)"
remove

opts="12 overhead_us 100 rate_mb_s 200 rpm 10000 seek_full_us 12000 seek_avg_us 6000 seek_track_us 400"
create "$opts"
expect "table_roundtrip_all_options" "$MM $opts" "$(table)"
remove

create "2 RPM 07200"
expect "table_canonical_key_case_and_number" "$MM 2 rpm 7200" "$(table)"
remove

# reject <name> <target args> <expected ti->error text>
reject() {
	dmesg -c >/dev/null
	if dmsetup create hdd --table "0 $SZ hddsim $2" 2>/dev/null; then
		not_ok "rejects_$1"
		echo "#   table '$2' was accepted"
		remove
		return
	fi
	if dmesg | grep -qF -- "$3"; then
		ok "rejects_$1"
	else
		not_ok "rejects_$1"
		echo "#   expected in dmesg: '$3'"
		echo "#   dmesg: $(dmesg | tail -n 2)"
	fi
	remove
}
reject no_opt_count "$RAM" "Not enough arguments"
reject odd_opt_count "$RAM 1 rpm" "must be <key> <value> pairs"
reject too_many_opts "$RAM 14 rpm 1 rpm 1 rpm 1 rpm 1 rpm 1 rpm 1 rpm 1" "Invalid number of optional arguments"
reject missing_value "$RAM 4 rpm 7200" "Invalid number of optional arguments"
reject trailing_junk_in_number "$RAM 2 rpm 7200x" "Invalid rpm"
reject negative_number "$RAM 2 rate_mb_s -1" "Invalid rate_mb_s"
reject decimal_number "$RAM 2 rate_mb_s 1.5" "Invalid rate_mb_s"
reject out_of_range "$RAM 2 rpm 0" "Invalid rpm"
reject out_of_range_time "$RAM 2 seek_full_us 1000001" "Invalid seek_full_us"
reject unknown_key "$RAM 2 spindle 7200" "Unrecognised optional argument"
reject duplicate_key "$RAM 4 rpm 7200 rpm 5400" "Duplicate optional argument"
reject trailing_argument "$RAM 2 rpm 7200 extra" "Unexpected argument"
reject unordered_seeks "$RAM 2 seek_track_us 9000" "seek_track_us <= seek_avg_us"
reject avg_above_sqrt_curve "$RAM 2 seek_avg_us 15000" "seek_avg_us out of range"
reject avg_below_linear "$RAM 2 seek_avg_us 5000" "seek_avg_us out of range"
reject missing_device "/dev/nonexistent 0" "Device lookup failed"

create 0 || bail "cannot create hdd"
DM=$(basename "$(readlink -f $HDD)")

expect "reports_rotational" "1" "$(cat /sys/block/$DM/queue/rotational)"

reset
expect "reset_stats_zeroes_info" "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" \
	"$(dmsetup status hdd | cut -d' ' -f4-)"
expect "info_has_15_fields" "15" \
	"$(dmsetup status hdd | cut -d' ' -f4- | wc -w)"
dmsetup message hdd 0 fail_flush 2>/dev/null
expect "rejects_fail_flush_without_count" "1" "$?"
dmsetup message hdd 0 fail_fua x 2>/dev/null
expect "rejects_fail_fua_without_a_count" "1" "$?"
dmsetup message hdd 0 fail_flushes maybe 2>/dev/null
expect "rejects_fail_flushes_neither_on_nor_off" "1" "$?"
dmsetup message hdd 0 frobnicate 2>/dev/null
expect "rejects_unknown_message" "1" "$?"
dmsetup message hdd 0 reset_stats now 2>/dev/null
expect "rejects_reset_stats_with_argument" "1" "$?"

# The model, read back through the counters (exact integer arithmetic).
rd 0 1M; reset
for i in 1 2 3 4 5 6 7 8; do rd $((i * 2048)) 1M; done
# 8 x 2048 sectors * 512000 / 150 ns = 8 x 6990506 ns
expect "sequential_costs_transfer_only" "8 8 0 0 55924" \
	"$(stats 1 2 3 4 8)"

dd if=$HDD of=/dev/null iflag=direct bs=128k count=64 skip=1024 status=none
reset
dd if=$HDD of=/dev/null iflag=direct bs=128k count=64 skip=1088 status=none
expect "back_to_back_pieces_are_sequential" "64 64 0" \
	"$(stats 1 2 4)"

# A 1 MiB bio split by the block layer: a one-stripe dm-stripe with 64 KiB
# chunks above hddsim cuts it into 16 pieces submitted in order.
dmsetup create hddsplit --table "0 $SZ striped 1 128 $HDD 0" ||
	bail "cannot create the 64 KiB splitting stripe"
settle
rd 0 1M; reset
dd if=/dev/mapper/hddsplit of=/dev/null iflag=direct bs=1M count=1 skip=1 \
	status=none
# 16 x 128 sectors * 512000 / 150 ns = 16 x 436906 ns
expect "split_bio_pieces_cost_transfer_only" "16 16 0 0 6990" \
	"$(stats 1 2 3 4 8)"
dmsetup remove hddsplit

rd 0 4k; reset; rd 1032 4k	# 1024 sectors ahead on the same track
# 1024 * 512000 / 150 + 8 * 512000 / 150 ns = 3495253 + 27306
expect "short_forward_skip_costs_rotation_only" "1 0 1 0 3522" \
	"$(stats 1 2 3 4 8)"

rd 0 4k; reset; rd $((SZ - 8)) 4k
# full stroke 16000 + half revolution 4166.7 + transfer 27.3 us
expect_range "full_stroke_seek_us" 20170 20195 "$(stats 8)"
rd 0 4k; reset; rd $((8 + SZ / 3)) 4k
# a third of the device: 8500 + 4166.7 + 27.3 us
expect_range "third_stroke_seek_us" 12685 12700 "$(stats 8)"
rd 0 4k; reset; rd $((8 + 4096)) 4k
# two tracks ahead: x = 4096 / SZ, seek ~ track-to-track + b*sqrt(x)
expect_range "short_seek_us" 4690 5000 "$(stats 8)"

dmesg -c >/dev/null
if fio --name=verify-seq --filename=$HDD --rw=write --bs=256k --size=64m \
	--offset=1g --direct=1 --verify=crc32c --do_verify=1 \
	--verify_state_save=0 --output=/dev/null; then
	ok "data_verifies_sequential_write"
else
	not_ok "data_verifies_sequential_write"
fi
if fio --name=verify-rand --filename=$HDD --rw=randwrite --bs=4k --size=2m \
	--offset=2g --direct=1 --verify=crc32c --do_verify=1 \
	--verify_state_save=0 --output=/dev/null; then
	ok "data_verifies_random_write"
else
	not_ok "data_verifies_random_write"
fi
if cmp -s <(dd if=$RAM bs=1M skip=1024 count=64 status=none) \
	<(dd if=$HDD iflag=direct bs=1M skip=1024 count=64 status=none); then
	ok "data_lands_on_backing_device"
else
	not_ok "data_lands_on_backing_device"
fi

settle
if [ "$(cat /sys/block/$DM/queue/discard_max_bytes)" -gt 0 ]; then
	# -f: no signature probe (51 reads) first; udev would probe after.
	udevadm control --stop-exec-queue 2>/dev/null
	reset
	blkdiscard -f -o 3g -l 64m $HDD 2>/dev/null
	expect "discard_passes_down_without_cost" "0 1 0" "$(stats 1 7 8)"
	udevadm control --start-exec-queue 2>/dev/null
	settle
else
	skip "discard_passes_down_without_cost" "backing device has no discard"
fi

# background_load <seconds>: random 4 KiB reads, 4 outstanding
background_load() {
	fio --name=load --filename=$HDD --rw=randread --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=4 --time_based --runtime="$1" \
		--output=/dev/null 2>/dev/null &
	LOAD=$!
	sleep 2
}

background_load 8
r=0
for i in 1 2 3; do
	dmsetup suspend hdd || r=1
	[ "$(dmsetup info -c --noheadings -o suspended hdd)" = "Suspended" ] || r=1
	sleep 0.3
	dmsetup resume hdd || r=1
	sleep 0.5
done
dmsetup suspend --noflush hdd && dmsetup resume hdd || r=1
wait $LOAD || r=1
expect "suspend_resume_under_load" "0" "$r"

background_load 6
r=0
dmsetup load hdd --table "0 $SZ hddsim $RAM 2 rpm 5400" || r=1
dmsetup resume hdd || r=1
wait $LOAD || r=1
expect "reload_under_load" "0 $MM 2 rpm 5400" "$r $(table)"
expect "reports_rotational_after_reload" "1" \
	"$(cat /sys/block/$DM/queue/rotational)"

background_load 6
dmsetup remove --force hdd >/dev/null 2>&1
wait $LOAD	# fails: its device turned into an error target
dmsetup remove hdd 2>/dev/null
if dmsetup info hdd >/dev/null 2>&1; then
	not_ok "forced_remove_under_load"
else
	ok "forced_remove_under_load"
fi

if rmmod dm_hddsim; then ok "module_unloads"; else not_ok "module_unloads"; fi
insmod "$KO" || bail "cannot reload $KO"

if dmesg | grep -E "BUG|WARNING|Oops|Call Trace|hddsim: "; then
	not_ok "dmesg_clean"
else
	ok "dmesg_clean"
fi

### Part 2: calibration #####################################################

create 0 || bail "cannot create hdd"
dmsetup create hddsplit --table "0 $SZ striped 1 128 $HDD 0" ||
	bail "cannot create the 64 KiB splitting stripe"

# job <fio file> <device>: run it, save JSON and the hddsim status
job() {
	local name=$1 dev=$2 tag=$3
	settle
	reset
	HDD=$dev fio --output-format=json --output="$OUT/$tag.json" \
		"$HERE/fio/$name.fio" || not_ok "fio $tag ran"
	dmsetup status hdd | cut -d' ' -f4- >"$OUT/$tag.status"
}
# Field from a saved run: val <tag> <jq expression on .jobs[0]>
val() { jq -r ".jobs[0] | $2" "$OUT/$1.json"; }

JOBS="randread-4k-qd1 randread-4k-qd4 randread-8k-qd1 randwrite-4k-qd1
	seqread-1m-qd1 seqread-1m-qd4 seqwrite-1m-qd1"
[ -n "$QUICK" ] && JOBS="randread-4k-qd1 seqread-1m-qd1 randread-8k-qd1"
for j in $JOBS; do
	job "$j" $HDD "$j"
done
job seqread-1m-qd1 /dev/mapper/hddsplit seqread-1m-qd1-split64k
# The host's own ceiling: the same one-at-a-time jobs on the bare RAM disk.
RUNTIME=5 job randread-4k-qd1 $RAM raw-randread-4k-qd1
RUNTIME=5 job seqread-1m-qd1 $RAM raw-seqread-1m-qd1

{
	echo "| fio job | IOPS | MB/s | latency mean / p50 / p99 ms | model service us | seq / near / seek | timer late / credited us/req | overruns |"
	echo "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |"
	for tag in $JOBS seqread-1m-qd1-split64k raw-randread-4k-qd1 \
		raw-seqread-1m-qd1; do
		dir=read
		case $tag in *write*) dir=write ;; esac
		read -r req sq nr sk _ _ _ _ avg late ovr _ cred \
			<"$OUT/$tag.status"
		[ "$req" -gt 0 ] || req=1
		printf "| %s | %.1f | %.1f | %.2f / %.2f / %.2f | %s | %s / %s / %s | %s / %s | %s |\n" \
			"$tag" "$(val "$tag" ".$dir.iops")" \
			"$(val "$tag" ".$dir.bw_bytes / 1e6")" \
			"$(val "$tag" ".$dir.lat_ns.mean / 1e6")" \
			"$(val "$tag" ".$dir.clat_ns.percentile[\"50.000000\"] / 1e6")" \
			"$(val "$tag" ".$dir.clat_ns.percentile[\"99.000000\"] / 1e6")" \
			"$avg" "$sq" "$nr" "$sk" \
			"$((late / req))" "$((cred / req))" "$ovr"
	done
} | tee "$OUT/results.md"

expect_range "randread_4k_qd1_iops" 70 130 "$(val randread-4k-qd1 .read.iops)"
expect_range "seqread_1m_qd1_MBps" 120 180 \
	"$(val seqread-1m-qd1 '.read.bw_bytes / 1e6')"
if [ -z "$QUICK" ]; then
	expect_range "randread_4k_qd4_iops" 70 130 \
		"$(val randread-4k-qd4 .read.iops)"
	expect_range "seqread_1m_qd4_MBps" 120 180 \
		"$(val seqread-1m-qd4 '.read.bw_bytes / 1e6')"
fi

# Cost of one 8 KiB block read at random vs within a 1 MiB sequential read.
ratio=$(awk -v iops="$(val randread-8k-qd1 .read.iops)" \
	-v bw="$(val seqread-1m-qd1 .read.bw_bytes)" \
	'BEGIN { printf "%.0f", (1 / iops) / (8192 / bw) }')
echo "random/sequential cost per 8 KiB block: ${ratio}x" |
	tee -a "$OUT/results.md"
expect_range "random_vs_sequential_8k_block_cost_ratio" 50 500 "$ratio"

dmsetup remove hddsplit
dmsetup remove hdd
rmmod dm_hddsim

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
