#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Boot-time activation, without the boot: tools/dm-tac-activate, which
# dm-tac.service runs before local file systems are mounted and stops at
# shutdown, brings a write-back device up from a tactab that names its
# disks by stable links; a file system on it is written, unmounted, the
# device stopped (its state saved) and started again: warm, with the dirty
# blocks, and every file reads back right, from the cache.  Then what
# goes wrong: a busy device is not stopped, a device that appears late is
# waited for, a missing one or a dangerous line ('format', UUID=) is
# reported while the other devices still come up.

. "$(dirname "$0")/lib.sh"

# diag_lines TEXT: every line of TEXT as a TAP comment
diag_lines() {
	local l
	while IFS= read -r l; do echo "#   $l"; done <<<"$1"
}
require dmsetup losetup mkfs.ext4 md5sum

act=$TOP/tools/dm-tac-activate
# No cleaning: the dirty blocks must still be there after the restart.
# No streams: the file system's 8 MiB file, written back in requests of
# 1 MiB and more, would go around the cache, and the test is of what a
# restart keeps of what was cached.
WB="mode writeback clean_idle_ms 0 dirty_threshold 90 dirty_adapt off sequential_cutoff_kb 0"
scratch_dev origin 64 || ksft_skip "no loop devices"
scratch_dev cache 16
scratch_dev origin2 16
scratch_dev cache2 8
byid=$_scratch/by-id
mnt=$_scratch/mnt
mkdir -p "$byid" "$mnt"
ln -s "$origin" "$byid/ata-HDD_SERIAL1"
ln -s "$cache" "$byid/nvme-SSD_SERIAL1-part1"
tab=$_scratch/tactab
cat >"$tab" <<EOF
# name  origin  cache  block_size  options
tacact  $byid/ata-HDD_SERIAL1  $byid/nvme-SSD_SERIAL1-part1  8  $WB   # trailing comment
EOF
at_exit "umount '$mnt'"
at_exit "dm_remove tacact; dm_remove tac2"
dev=/dev/mapper/tacact

check_eq "tables: the table line it would load" \
	"tacact: 0 $(sectors "$origin") tac $origin $cache 8 10 $WB" \
	"$("$act" -c "$tab" tables)"
out=$("$act" -c "$tab" start 2>&1)
check_eq "start creates the device from the tactab" "0 writeback" \
	"$? $(tac_stat tacact mode)"
diag_lines "$out"
check_cmd "...and says so" grep -q "tacact: started, /dev/mapper/tacact, writeback" <<<"$out"
udevadm settle 2>/dev/null
out=$("$act" -c "$tab" start 2>&1)
check_eq "start again: already active, exit 0" "0 dm-tac-activate: tacact: already active" "$? $out"

# A file system, written through the cache.
mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$dev" >/dev/null 2>&1
check_cmd "a file system on it mounts" mount "$dev" "$mnt"
dd if=/dev/urandom of="$mnt/big" bs=1M count=8 status=none
for i in $(seq 20); do echo "file $i" >"$mnt/small$i"; done
sums=$(cd "$mnt" && md5sum big small* | md5sum)
umount "$mnt"
used=$(tac_stat tacact used)
dirty=$(tac_stat tacact dirty_blocks)
diag "before stop: $used blocks cached, $dirty dirty"
check_ge "write-back: the files left dirty blocks" 100 "$dirty"

out=$("$act" -c "$tab" stop 2>&1)
check_eq "stop removes it" "0 absent" \
	"$? $(dmsetup info tacact >/dev/null 2>&1 && echo present || echo absent)"
check_eq "...with its state saved: the superblock says clean" True "$(sb_field "$cache" clean)"
check_eq "...and the dirty blocks recorded" "$dirty" "$(sb_field "$cache" nr_dirty)"

kmsg_mark
out=$("$act" -c "$tab" start 2>&1)
check_eq "start again" 0 $?
check_ge "...warm: every saved block is loaded" "$used" "$(tac_stat tacact used)"
check_eq "...the dirty ones with them" "$dirty" "$(tac_stat tacact dirty_blocks)"
kmsg_has "last shutdown clean" && tap_ok "...after a clean shutdown (kernel log)" ||
	tap_fail "...after a clean shutdown (kernel log)" "$(dmesg | grep tac)"
udevadm settle 2>/dev/null
check_cmd "the file system mounts again" mount "$dev" "$mnt"
check_eq "every file reads back right" "$sums" "$(cd "$mnt" && md5sum big small* | md5sum)"
umount "$mnt"

# Dirty blocks are loaded after any stop: warm means the clean ones too.
check_cmd "flush: every dirty block written back, all cached blocks clean" \
	dmsetup message tacact 0 flush
used=$(tac_stat tacact used)
check_cmd "stop" "$act" -c "$tab" stop
check_cmd "start" "$act" -c "$tab" start
check_eq "...warm: every clean block is back" "$used 0" \
	"$(tac_stat tacact used dirty_blocks)"
udevadm settle 2>/dev/null
mount "$dev" "$mnt"
dmsetup message tacact 0 reset_stats
check_eq "every file reads back right" "$sums" "$(cd "$mnt" && md5sum big small* | md5sum)"
hits=$(tac_stat tacact read_hits)
misses=$(tac_stat tacact read_misses)
diag "reading the files: $hits blocks from the cache, $misses from the origin"
check_ge "...mostly from the cache (read hits, blocks)" 1000 "$hits"
check_ge "...more hits than misses" "$misses" "$hits"

# Still mounted: stop leaves it alone and says why.
out=$("$act" -c "$tab" stop 2>&1)
check_eq "stop of a mounted device fails, the device stays" "1 present" \
	"$? $(dmsetup info tacact >/dev/null 2>&1 && echo present || echo absent)"
check_cmd "...saying it is open" grep -q "tacact: still open (mounted?); not removed" <<<"$out"
umount "$mnt"
"$act" -c "$tab" status | grep -q "tacact: active, /dev/mapper/tacact, writeback" &&
	tap_ok "status shows it active" || tap_fail "status shows it active" "$("$act" -c "$tab" status 2>&1)"
check_cmd "stop after the unmount" "$act" -c "$tab" stop

# One bad line, one missing disk: reported, the others still come up.
good="tacact   $byid/ata-HDD_SERIAL1  $byid/nvme-SSD_SERIAL1-part1  8  $WB
tac2     $byid/late-HDD  $byid/late-SSD  8"
first=${good%%$'\n'*}
second=${good#*$'\n'}
cat >"$tab" <<EOF
$second
$first
tacbad   $origin2  $cache2  8  format
tacuuid  UUID=1234-abcd  $cache2  8
tacgone  $byid/ata-NOT_THERE  $cache2  8
tacshort $origin2 $cache2
tacpart  PARTUUID=0f0e0d0c-0000-4000-8000-000000000001  $cache2  8
EOF
# A disk that shows up while start waits for it (udev finding it late at
# boot): linked once start says it is waiting, so that no timing decides
# what is tested.  The whole start waits 4 s at most.
log=$_scratch/start.log
: >"$log"
(for i in $(seq 200); do
	grep -qF "waiting for $byid/late-HDD" "$log" && break
	sleep 0.1
done
ln -s "$origin2" "$byid/late-HDD"; ln -s "$cache2" "$byid/late-SSD") &
"$act" -c "$tab" -w 4 start >"$log" 2>&1
rc=$?
wait
out=$(<"$log")
diag_lines "$out"
check_eq "start with bad lines and missing disks exits 1" 1 $rc
check_eq "...but the good devices are up (one waited for)" "writeback writethrough" \
	"$(tac_stat tacact mode) $(tac_stat tac2 mode)"
for want in "tactab:3: tacbad: 'format' re-formats the cache" \
	    "tactab:4: tacuuid: 'UUID=1234-abcd' names a file system" \
	    "tacgone: origin $byid/ata-NOT_THERE did not appear within 4 s" \
	    "tactab:6: want '<name> <origin> <cache> <block_size>" \
	    "tacpart: origin /dev/disk/by-partuuid/0f0e0d0c-0000-4000-8000-000000000001 did not appear" \
	    "waiting for $byid/late-"; do
	grep -qF -- "$want" <<<"$out" && tap_ok "...says: $want" ||
		tap_fail "...says: $want" "not in the output"
done
check_eq "...and created nothing else" "absent absent" \
	"$(for d in tacbad tacgone; do dmsetup info $d >/dev/null 2>&1 && echo present || echo absent; done | paste -s -d ' ')"
out=$("$act" -c "$tab" stop tacact 2>&1)
check_eq "stop with the bad lines still there: done, but exit 1" "1 absent" \
	"$? $(dmsetup info tacact >/dev/null 2>&1 && echo present || echo absent)"
echo "$good" >"$tab"
"$act" -c "$tab" start >/dev/null
out=$("$act" -c "$tab" stop tac2 2>&1)
check_eq "stop NAME stops that one only" "0 absent present" \
	"$? $(for d in tac2 tacact; do dmsetup info $d >/dev/null 2>&1 && echo present || echo absent; done | paste -s -d ' ')"
check_cmd "stop stops the rest (and ignores what is not active)" "$act" -c "$tab" stop tacact tac2
out=$("$act" -c "$tab" stop nosuch 2>&1)
check_eq "a NAME not in the tactab is an error" "1" "$?"

tap_done
