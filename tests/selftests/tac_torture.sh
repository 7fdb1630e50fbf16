#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Torture: tests/torture/torture (4 threads, native AIO, a model of every
# sector; see its header) on dm-tac in every mode and with 4, 8 and
# 64 KiB blocks, over three device stacks:
#
#   ram     RAM disks: every I/O completes in its submitter's context
#   delay   dm-delay (1 ms) over RAM disks: completions come later, from
#           a workqueue
#   nullb   null_blk: data copied at submission, completion from a timer
#           (100 us), as an NVMe SSD's DMA and interrupt
#
# while a background loop sends 'flush', 'invalidate', mode switches (to
# write-back, or from it to write-through, and back), and changes
# dirty_threshold, dirty_adapt and sequential_cutoff_kb, and the cleaner runs (10%
# dirty threshold, 50 ms idle cleaning, 100 ms commits).  With 64 KiB
# blocks the tool's requests of 64 and 128 KiB are streams
# (sequential_cutoff_kb 64 from the start): reads that go around clean
# cached blocks and writes that drop them race with everything else.  After each scenario: the final verify
# through the target (the tool's), then 'mode writethrough' (which
# cleans), removal, the origin alone against the model, and a warm
# re-creation against the model again.
#
# TORTURE_SECONDS (default 90) is the total time of random load, shared
# by the scenarios; from 400 on, the scenario list is run several times
# (iterations) with the stacks rotated, so each (mode, block size) pair
# meets every stack.  The last case is the figure:
#   torture: <verified blocks> verified blocks, <S> scenarios x <I> iterations, <L> lost
# (blocks of every verify pass; L: sectors found wrong, by the tool's
# reads during a run or by a verify pass: per scenario the most any of
# its passes found).

. "$(dirname "$0")/lib.sh"
require dmsetup

TORTURE_DIR=$TOP/tests/torture
[ -x "$TORTURE_DIR/torture" ] || make -s -C "$TORTURE_DIR" >/dev/null 2>&1 ||
	ksft_skip "cannot build tests/torture (make -C tests/torture)"

SECONDS_TOTAL=${TORTURE_SECONDS:-90}
ITER=$((SECONDS_TOTAL / 200))
[ "$ITER" -ge 1 ] || ITER=1
# TORTURE_PART=K/2 runs the K-th half of the scenarios: those whose mode's
# and block size's places add up to K-1 modulo 2, so that every mode is
# tortured in each half, with different block sizes, over all three
# stacks (make check shares them out between its two kernels:
# tests/check.sh); 1/1, the default, runs them all.
# TORTURE_MODES, TORTURE_ALT (the mode the background loop switches to
# and back from; default write-back, or write-through for it) and
# TORTURE_ARGS (more options for the tool, e.g. "--discard 0") narrow a
# run down when looking for a cause.
read -r -a MODES <<<"${TORTURE_MODES:-writeback writethrough writearound passthrough}"
BSS=(8 16 128)			# 4, 8, 64 KiB
STACKS=(ram delay nullb)
NSCEN=$(( ${#MODES[@]} * ${#BSS[@]} ))
PART=${TORTURE_PART:-1/1}
PART_K=${PART%/*} PART_N=${PART#*/}
case $PART in
1/1 | 1/2 | 2/2) ;;
*)
	echo "TORTURE_PART must be 1/1, 1/2 or 2/2, not '$PART'" >&2
	exit 1
	;;
esac
# in_part I: scenario I is in this share
in_part() {
	[ $(( ($1 % ${#MODES[@]} + $1 / ${#MODES[@]}) % PART_N )) -eq $((PART_K - 1)) ]
}
NRUN=0
for ((i = 0; i < NSCEN; i++)); do
	in_part "$i" && NRUN=$((NRUN + 1))
done
if [ "$NRUN" = 0 ]; then
	echo "TORTURE_PART $PART leaves no scenario of TORTURE_MODES" >&2
	exit 1
fi
SLICE=$(( (SECONDS_TOTAL + NRUN * ITER - 1) / (NRUN * ITER) ))	# rounded up: at least SECONDS_TOTAL
[ "$SLICE" -ge 2 ] || SLICE=2
REGION_MIB=8
CACHE_MIB=2

scratch_dev dummy 1 || ksft_skip "no tmpfs"	# sets up $_scratch
udev_quiet "tt*" || diag "cannot keep udev from probing the devices"
bin=$_scratch/bin
mkdir -p "$bin" && cp "$TORTURE_DIR/torture" "$bin/" ||
	ksft_skip "cannot copy the tool"
TORTURE=$bin/torture

ram_devs $((REGION_MIB + 8)) 2 || ksft_skip "no brd"
dmsetup create tt_rc --table "0 $((CACHE_MIB * 2048)) linear /dev/ram1 0" ||
	ksft_skip "no dm-linear"
at_exit "dm_remove tt_rc"
delay_dev tt_do /dev/ram0 1 1 || ksft_skip "no dm-delay"
dmsetup create tt_dc1 --table "0 $((CACHE_MIB * 2048)) linear /dev/ram1 $((CACHE_MIB * 2048))" &&
	at_exit "dm_remove tt_dc1"
delay_dev tt_dc /dev/mapper/tt_dc1 1 1
have_nullb=1
nullb_dev nbo $((REGION_MIB + 8)) 100000 && nullb_dev nbc $CACHE_MIB 100000 ||
	have_nullb=0

# stack_devs STACK: set $origin, $cache and $origin_raw (the origin's
# data without any dm layer, for the check of the origin alone)
stack_devs() {
	case $1 in
	ram) origin=/dev/ram0 cache=/dev/mapper/tt_rc origin_raw=/dev/ram0 ;;
	delay) origin=/dev/mapper/tt_do cache=/dev/mapper/tt_dc origin_raw=/dev/ram0 ;;
	nullb) origin=$nbo cache=$nbc origin_raw=$nbo ;;
	esac
}

# The background loop: messages while the tool runs, until $stop exists.
messages() {
	local main=$1 alt=$2 r
	while [ ! -e "$stop" ]; do
		r=$((RANDOM % 8))
		case $r in
		0) dmsetup message tt 0 flush ;;
		1) dmsetup message tt 0 invalidate ;;
		2) dmsetup message tt 0 mode "$alt"; nap 0.3
		   dmsetup message tt 0 mode "$main" ;;
		3) dmsetup message tt 0 set dirty_threshold $((1 + RANDOM % 30)) ;;
		4) dmsetup message tt 0 set clean_idle_ms $((RANDOM % 200))
		   dmsetup message tt 0 set dirty_adapt \
			"$(shuf -n 1 -e on off)" ;;
		5) dmsetup message tt 0 set sequential_cutoff_kb \
			"$(shuf -n 1 -e 0 64 64 1024)" ;;
		*) ;;
		esac
		nap 0.$((2 + RANDOM % 4))
	done
	dmsetup message tt 0 mode "$main"
}

# tool NAME ARGS...: run the tool, its output in $_scratch/NAME.log;
# sets $line (its last line) and returns its status
tool() {
	local name=$1 rc
	shift
	"$TORTURE" "$@" >"$_scratch/$name.log" 2>&1
	rc=$?
	line=$(grep -E '^torture: [0-9]+ verified blocks' "$_scratch/$name.log" | tail -n 1)
	[ -n "$line" ] || line="no result: $(tail -n 2 "$_scratch/$name.log" | tr '\n' ' ')"
	return $rc
}

# tally: add the counts of $line to the totals; a scenario's lost
# sectors are the most any of its passes found (a write lost through the
# target is lost on the origin and after re-creation too)
tally() {
	local v l s e
	read -r v l s e < <(sed -E 's/^torture: ([0-9]+) verified blocks, [0-9]+ ops, ([0-9]+) lost, ([0-9]+) stale, ([0-9]+) io errors.*/\1 \2 \3 \4/;t;s/.*/0 0 0 0/' <<<"$line")
	total_blocks=$((total_blocks + v))
	[ $((l + s)) -le "$scen_lost" ] || scen_lost=$((l + s))
	total_errors=$((total_errors + e))
}

# verdict DESC STATUS LOG: one case from the tool's result (LOG: its
# output, the first mismatches of which are shown on failure)
verdict() {
	if [ "$2" = 0 ]; then
		tap_ok "$1: ${line#torture: }"
	else
		tap_fail "$1" "${line#torture: }"
		grep -E '^torture: (stale|lost|write|read|BLK|fdatasync)' \
			"$_scratch/$3.log" | head -n 5 | sed 's/^/# /'
	fi
}

total_blocks=0 total_lost=0 total_errors=0 nrun=0
bad_state=()
stop=$_scratch/stop

# The tool must catch a device that loses writes, and pass on one that
# does not: dm-flakey acknowledging and dropping writes 1 s out of 2.
dmsetup create tt_flaky --table "0 $(sectors /dev/ram0) flakey /dev/ram0 0 1 1 1 drop_writes" &&
	at_exit "dm_remove tt_flaky"
tool selftest --dev /dev/mapper/tt_flaky --seconds 4 --seed 7 --region 0:4M --discard 0
rc=$?
if [ "$rc" = 1 ]; then
	tap_ok "the tool catches a device that drops writes (dm-flakey): ${line#torture: }"
else
	tap_fail "the tool catches a device that drops writes (dm-flakey)" "exit $rc: ${line#torture: }"
fi
dm_remove tt_flaky
tool plain --dev /dev/ram0 --seconds 2 --seed 8 --region 0:4M
verdict "the tool passes on a RAM disk alone" $? plain

for ((it = 0; it < ITER; it++)); do
	for ((i = 0; i < NSCEN; i++)); do
		in_part "$i" || continue
		mode=${MODES[i % ${#MODES[@]}]}
		j=$((i / ${#MODES[@]}))
		bs=${BSS[j]}
		stack=${STACKS[(i % ${#MODES[@]} + j + it) % ${#STACKS[@]}]}
		if [ "$stack" = nullb ] && [ "$have_nullb" = 0 ]; then
			stack=delay
		fi
		stack_devs "$stack"
		grains=(8 1 "$bs" 16)
		grain=${grains[(i + it) % 4]}
		seed=$((1000 * it + i + 1))
		alt=${TORTURE_ALT:-writeback}
		[ "$mode" != "$alt" ] || alt=writethrough
		[ "$mode" != "$alt" ] || alt=writearound
		name="$stack $mode $((bs / 2))K grain $grain"
		start=$(date +%s)
		scen_lost=0

		dd if=/dev/zero of="$cache" bs=4k count=2 oflag=direct status=none
		table="$mode dirty_threshold 10 dirty_adapt off clean_idle_ms 50 commit_interval 100 error_threshold 1000000 sequential_cutoff_kb 64"
		if ! tac_create tt "$origin" "$cache" "$bs" mode $table; then
			tap_fail "$name: create" "$(dmesg | grep tac | tail -n 1)"
			continue
		fi
		dev=/dev/mapper/tt
		rm -f "$stop"
		messages "$mode" "$alt" 2>"$_scratch/messages.err" &
		mpid=$!
		tool run --dev "$dev" --seconds "$SLICE" --seed "$seed" \
			--region 0:${REGION_MIB}M --grain "$grain" \
			--bs $((bs * 512)) --state "$_scratch/state" ${TORTURE_ARGS:-}
		rc=$?
		touch "$stop"
		wait $mpid
		tally
		verdict "$name: reads during the run and the final verify through the target" $rc run
		diag "$(grep -E '^torture: [0-9.]+s:' "$_scratch/run.log")"
		errs=$(grep -v -E '^$' "$_scratch/messages.err" | sort | uniq -c | head -n 3)
		[ -z "$errs" ] || diag "messages refused: $errs"
		st="state $(tac_field tt 19), $(tac_field tt 16) cache errors, mode $(tac_field tt 11)"
		[ "$st" = "state ok, 0 cache errors, mode $mode" ] ||
			bad_state+=("$name: $st")

		dmsetup message tt 0 mode writethrough
		d=$(tac_field tt 3)
		dm_remove tt
		tool origin --verify-only --dev "$origin_raw" --state "$_scratch/state"
		rc=$?
		tally
		verdict "$name: the origin alone after 'mode writethrough' ($d dirty) and removal" $rc origin

		tac_create tt "$origin" "$cache" "$bs" mode $table
		used=$(tac_field tt 2)
		tool warm --verify-only --dev "$dev" --state "$_scratch/state"
		rc=$?
		tally
		verdict "$name: re-created warm ($used blocks cached)" $rc warm
		dm_remove tt
		nrun=$((nrun + 1))
		total_lost=$((total_lost + scen_lost))
		diag "$name: $(( $(date +%s) - start ))s"
	done
done

if [ ${#bad_state[@]} -eq 0 ]; then
	tap_ok "no cache error, state ok, mode kept in every scenario"
else
	tap_fail "no cache error, state ok, mode kept in every scenario" \
		"$(printf '%s; ' "${bad_state[@]}")"
fi
diag "lost: sectors found wrong (stale reads included); io errors: $total_errors"
figure="torture: $total_blocks verified blocks, $NRUN scenarios x $ITER iterations, $total_lost lost"
[ "$PART_N" = 1 ] || figure+=" (share $PART of $NSCEN scenarios)"
if [ "$total_lost" = 0 ] && [ "$total_errors" = 0 ] && [ "$nrun" = $((NRUN * ITER)) ]; then
	tap_ok "$figure"
else
	tap_fail "$figure" "$nrun of $((NRUN * ITER)) scenarios ran, $total_errors io errors"
fi
tap_done
