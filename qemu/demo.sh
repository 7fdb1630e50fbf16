#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The demo, run inside the VM by 'make demo': a dm-tac device over two
# emulated disks (a 256 MiB origin, a 32 MiB cache), a short fio job that
# reads a skewed hot set while a scan streams through, then the device's
# status and table with every field named.
set -eu
modprobe loop
work=$(mktemp -d)
mount -t tmpfs -o size=400M demo "$work"
truncate -s 256M "$work/origin.img"
truncate -s 32M "$work/cache.img"
origin=$(losetup --find --show "$work/origin.img")
cache=$(losetup --find --show "$work/cache.img")
cleanup() {
	dmsetup remove demo 2>/dev/null || true
	losetup -d "$origin" "$cache" 2>/dev/null || true
	umount -l "$work" 2>/dev/null || true
}
trap cleanup EXIT

len=$(blockdev --getsz "$origin")
table="0 $len tac $origin $cache 8 2 mode writethrough"
echo "# dmsetup create demo --table \"$table\""
dmsetup create demo --table "$table"

echo "# fio: 8 KiB Zipf-skewed random reads over 96 MiB, plus a scan of the rest"
fio --output-format=terse --terse-version=3 --minimal \
	--name=hot --filename=/dev/mapper/demo --direct=1 --ioengine=psync \
	--rw=randread --bs=8k --size=96M --random_distribution=zipf:1.1 \
	--runtime=20 --time_based \
	--name=scan --filename=/dev/mapper/demo --direct=1 --ioengine=psync \
	--rw=read --bs=128k --offset=96M --size=160M --runtime=20 --time_based |
	awk -F';' '{ printf "  %-5s %8d IOPS  %8.0f us mean read latency\n", $3, $8, $16 }'

echo
echo "# dmsetup table demo"
dmsetup table demo
echo
echo "# dmsetup status demo"
status=$(dmsetup status demo)
echo "$status"
echo
names=(start length target block_size used/total dirty read_hits
       read_misses write_hits write_misses promotions demotions writebacks
       mode seq_requests random_requests bypassed invalidations
       cache_errors tracked_extents coldest_temp state)
i=0
for f in $status; do
	printf '  %-16s %s\n' "${names[$i]:-field$i}" "$f"
	i=$((i + 1))
done
echo
echo "# the hottest extents (dmsetup message demo 0 heat 5):"
echo "#   extent, its first sector, temperature (saved disk time)"
dmsetup message demo 0 heat 5 | sed 's/^/  /'
