#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Status output: INFO has the documented leading fields in order, and its
# counters count; TABLE reproduces the constructor line; the IMA
# measurement (when the kernel has IMA) carries the documented keys;
# unknown messages are refused.

. "$(dirname "$0")/lib.sh"
require dmsetup losetup

scratch_dev origin 16 || ksft_skip "no loop devices"
scratch_dev cache 8
dev=/dev/mapper/tacst

tac_create tacst "$origin" "$cache" 8 mode passthrough ||
	ksft_skip "cannot create the device"

status=$(dmsetup status tacst)
set -- $status
check_eq "INFO: target name" tac "$3"
check_eq "INFO: field 1 is block_size" 8 "$4"
case $5 in
*/*) tap_ok "INFO: field 2 is used/total blocks ($5)" ;;
*) tap_fail "INFO: field 2 is used/total blocks" "got '$5'" ;;
esac
check_eq "INFO: field 11 is the mode" passthrough "${14}"
check_eq "INFO: as many fields as dm-tac/status-fields lists" \
	"$(grep -c '^[0-9]' "$TAC_STATUS_FIELDS")" $(($# - 3))

# Counters: exactly N reads and M writes of one block each, O_DIRECT.
# Reads are counted before any write: closing a device written to makes
# udev probe it again, and those reads would race with the count.
udevadm settle 2>/dev/null
r0=$(tac_stat tacst read_misses)
dd if="$dev" of=/dev/null bs=4k count=10 iflag=direct status=none
check_eq "INFO: read_misses counts 10 reads in passthrough" $((r0 + 10)) \
	"$(tac_stat tacst read_misses)"
w0=$(tac_stat tacst write_misses)
dd if=/dev/zero of="$dev" bs=4k count=7 oflag=direct status=none
check_eq "INFO: write_misses counts 7 writes in passthrough" $((w0 + 7)) \
	"$(tac_stat tacst write_misses)"
check_eq "INFO: no hits in passthrough" "0 0" \
	"$(tac_stat tacst read_hits) $(tac_stat tacst write_hits)"
check_eq "INFO: no promotions in passthrough" 0 "$(tac_stat tacst promotions)"

om=$(printf '%d:%d' $((0x$(stat -c %t "$origin"))) $((0x$(stat -c %T "$origin"))))
cm=$(printf '%d:%d' $((0x$(stat -c %t "$cache"))) $((0x$(stat -c %T "$cache"))))
check_eq "TABLE reproduces the constructor line" \
	"0 $(sectors "$origin") tac $om $cm 8 2 mode passthrough" \
	"$(dmsetup table tacst)"

# dmsetup's table output feeds back into a reload unchanged.
check_cmd "TABLE output is a valid table (reload)" \
	dmsetup reload tacst --table "$(dmsetup table tacst)"
dmsetup clear tacst

kmsg_mark
if dmsetup message tacst 0 no-such-message 2>/dev/null; then
	tap_fail "an unknown message is refused" "accepted"
else
	kmsg_has "unknown message 'no-such-message'" &&
		tap_ok "an unknown message is refused with its name" ||
		tap_fail "an unknown message is refused with its name" "$(dmesg | tail -n1)"
fi

# IMA: measure device-mapper critical data, reload, find our record.
ima=/sys/kernel/security/ima
mountpoint -q /sys/kernel/security || mount -t securityfs none /sys/kernel/security 2>/dev/null
if [ -w "$ima/policy" ] &&
   echo "measure func=CRITICAL_DATA label=device-mapper template=ima-buf" \
	> "$ima/policy" 2>/dev/null; then
	dm_remove tacst
	tac_create tacst "$origin" "$cache" 8 mode passthrough
	rec=$(awk '$5 ~ /dm_table_load/ { print $6 }' \
		"$ima/ascii_runtime_measurements" | tail -n1 |
		py3 -c 'import sys; print(bytes.fromhex(sys.stdin.read().strip()).decode(errors="replace"))')
	case $rec in
	*target_name=tac,target_version=1.*,origin=*,cache=*,block_size=8,mode=passthrough,cache_uuid=*\;*)
		tap_ok "IMA: table measurement has the documented keys" ;;
	*)
		tap_fail "IMA: table measurement has the documented keys" "got: $rec" ;;
	esac
else
	tap_skip "IMA: table measurement has the documented keys" "no IMA policy interface"
fi

tap_done
