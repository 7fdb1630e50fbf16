#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make -C tools check: tacsim's readers on tiny hand-made traces, one per
# format, with the counts worked out by hand below; then the fuzzer against
# an ASan/UBSan build.  TAP output.
set -u
T=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$T/../.." && pwd)
SIM=$T/tacsim
n=0 fail=0

field() { python3 -c "import json,sys; r=json.loads(sys.stdin.readline()); print(r['$1'])"; }

# check NAME FILE FIELD EXPECTED [tacsim args...]
check() {
	local name=$1 file=$2 f=$3 want=$4 got
	shift 4
	got=$("$SIM" --policy lru --cache-size 64K --json --quiet "$@" \
		"$T/samples/$file" 2>/dev/null | field "$f")
	n=$((n + 1))
	if [ "$got" = "$want" ]; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name # expected $want got $got"
		fail=$((fail + 1))
	fi
}

# blkparse, Q kept: R 0+16 (blocks 0,1), WS 8+8 (block 1), RA 7+2 (block 0:
# sectors 7..8 are bytes 3584..4607, blocks 0 and 1), R on 8,16 (another
# device: block 0 of device 1); G/D/C, the flush, the discard and the
# summary skipped; "12x" malformed.
check "blkparse: format detected" sample.blkparse format blkparse
check "blkparse Q: 4 requests" sample.blkparse requests 4
check "blkparse Q: 6 block accesses" sample.blkparse accesses 6
check "blkparse Q: 1 write access" sample.blkparse writes 1
check "blkparse Q: second device kept apart (hits 0,1 after first miss)" \
	sample.blkparse hits 3
check "blkparse: '12x' sector malformed" sample.blkparse malformed_lines 1
check "blkparse C: 1 request" sample.blkparse requests 1 --blkparse-event C
# MSR: 0+8192 (2 blocks), write 4096+4096 (block 1), disk 1 block 0,
# disk 0 block 0 again; "Erase" malformed.
check "msr: format detected" sample.msr format msr
check "msr: 5 accesses" sample.msr accesses 5
check "msr: disk 1 is another device (2 hits)" sample.msr hits 2
check "msr: unknown type malformed" sample.msr malformed_lines 1
# The TAC core keeps origin blocks below 2^40: every device of a trace
# must land there (disk 1 used to start at 2^48, and TAC refused it).
n=$((n + 1))
out=$("$SIM" --policy tac --cache-size 64K --json --quiet \
	"$T/samples/sample.msr" 2>&1 >/dev/null | grep -c WARNING)
got=$("$SIM" --policy tac --cache-size 64K --json --quiet \
	"$T/samples/sample.msr" 2>/dev/null | field admissions)
if [ "$out" = 0 ] && [ "$got" = 3 ]; then
	echo "ok $n - msr, tac: disk 1's block is admitted like disk 0's (3 admissions, no warning)"
else
	echo "not ok $n - msr, tac: disk 1's block is admitted like disk 0's # $got admissions, $out warnings"
	fail=$((fail + 1))
fi
# A block at 2^34 or beyond of its device does not fit: malformed.
printf '1,h,0,Read,%s,4096,1\n1,h,0,Read,%s,4096,1\n' \
	$(((1 << 46) - 4096)) $((1 << 46)) >"$T/samples/.far.msr"
check "msr: block 2^34 of a device malformed, the one before kept" \
	.far.msr malformed_lines 1
check "...and the one before read" .far.msr accesses 1
rm -f "$T/samples/.far.msr"
# SPC: LBA 0 8K (blocks 0,1), LBA 8 = byte 4096 (block 1), ASU 1 block 0,
# LBA 0 512 bytes (block 0); size -5 malformed.
check "spc: format detected" sample.spc format spc
check "spc: 5 accesses" sample.spc accesses 5
check "spc: 2 hits" sample.spc hits 2
check "spc: negative size malformed" sample.spc malformed_lines 1
# CSV: 0+8192 (0,1), 4095+2 (bytes 4095..4096: blocks 0 and 1), 4096+4096
# (1); op X malformed; zero length skipped; header and comment skipped.
check "csv: format detected" sample.csv format csv
check "csv: 3 requests" sample.csv requests 3
check "csv: 5 accesses" sample.csv accesses 5
check "csv: 2 write accesses" sample.csv writes 2
check "csv: 3 hits" sample.csv hits 3
check "csv: op X malformed" sample.csv malformed_lines 1
check "csv: block size 8K: 3 accesses" sample.csv accesses 3 --block-size 8K

# Cache I/Os (cache_io() in tacsim.c), LRU handing out free blocks in
# order.  sample.csv: 0+8192 fills blocks 0 and 1 into cache blocks 0 and
# 1 (one I/O), 4095+2 hits both (one), 4096+4096 hits block 1 (one).
check "csv: 3 cache I/Os" sample.csv cache_ios 3
# sample.spc: a fill of two (one), a hit (one), another device's fill
# (one), a hit (one).
check "spc: 4 cache I/Os" sample.spc cache_ios 4
# Block 1 written into cache block 0, block 0 into 1, then both read: the
# read's blocks are not in a row on the cache, two I/Os, four in all.
printf "time,op,offset_bytes,length_bytes\n0,W,4096,4096\n1,W,0,4096\n2,R,0,8192\n" >"$T/samples/.apart.csv"
check "csv: blocks apart on the cache cost an I/O each" .apart.csv cache_ios 4
rm -f "$T/samples/.apart.csv"

# The cache write cost: a read's by default, else --param or --cost-ssd-write.
check "cache write cost: a read's by default" sample.csv cost_ssd_write_us 20
check "cache write cost: --param cost_cache_write_us=35" sample.csv \
	cost_ssd_write_us 35 --param cost_cache_write_us=35
check "cache write cost: --cost-ssd-write 40" sample.csv cost_ssd_write_us 40 \
	--cost-ssd-write 40

if cc -std=gnu11 -g -O1 -fsanitize=address,undefined \
	-fno-sanitize-recover=all -I"$TOP/tools/include" -I"$TOP/dm-tac/policy" \
	-I"$T" "$T/tacsim.c" "$T/trace.c" "$T"/policy-*.c \
	"$TOP"/dm-tac/policy/tac-*.c -lz -o "$T/tacsim-asan" 2>/dev/null; then
	n=$((n + 1))
	if python3 "$T/fuzz-parsers.py" "$T/tacsim-asan" >/dev/null; then
		echo "ok $n - fuzzed readers: no crash, no sanitizer report"
	else
		echo "not ok $n - fuzzed readers # see tools/tacsim/fuzz-parsers.py"
		fail=$((fail + 1))
	fi
	rm -f "$T/tacsim-asan"
fi
echo "1..$n"
echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
