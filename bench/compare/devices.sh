# SPDX-License-Identifier: GPL-2.0-only
#
# Device setup for the benchmark, sourced by guest.sh inside the VM.
#
#   origin_model                         MODEL=hddsim|delay
#   backing_init [IMAGE]                 once: RAM disks (IMAGE as pristine
#                                        data), NVMe regions
#   origin_reset [0]                     fresh origin: a new copy-on-write
#                                        view of the pristine data; with 0,
#                                        seen from sector 0 (bcache layout)
#   cache_reset                          wipe the cache region's superblocks
#   backing_exit                         remove what backing_init made
#   ct_setup CONTENDER                   build the device under test: $DEV
#   ct_counters                          "<read hits> <read misses>" or "- -"
#   ct_status                            the contender's raw status
#   ct_teardown                          remove everything ct_setup made
#
# Layout, all sizes from config.sh:
#   origin   /dev/mapper/bench-origin: the HDD model (or its stand-in) over
#            bench-snap, a transient dm-snapshot of the pristine data
#            (brd /dev/ram1, loaded once: the database image or zeroes) with
#            its copy-on-write store on /dev/ram0.  A new snapshot for
#            every cell is a fresh disk in no time, without copying the
#            database again: no contender sees another's writes.  The
#            snapshot works at RAM speed under the model's milliseconds.
#   NVMe     /dev/nvme0n1 (or /dev/ram2 with CACHE_KIND=brd):
#            [0, ORIGIN_MB)                 bench-fast: "NVMe alone"
#            [ORIGIN_MB, +META_MB+CACHE_MB) bench-cache: the cache region
#   dm-cache splits bench-cache into bench-cmeta (META_MB) and bench-cdata.

# Under TCG every fork and exec costs a noticeable fraction of a second,
# so these functions avoid command substitutions where they can: results
# go into variables, not through $(...).

BENCH_PFX=bench

note() {
	echo "bench: $*" >&2
}

dm_rm() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[ -e "/dev/mapper/$1" ] || return 0
		dmsetup remove "$1" 2>/dev/null && return 0
		sleep 0.3
	done
	dmsetup remove --force "$1"
}

# ------------------------------------------------------------------
# The origin.  Everything about the HDD model is in this one function and
# origin_table(): a better model drops in here.

# origin_model: set MODEL to hddsim or delay
origin_model() {
	MODEL=$ORIGIN_MODEL
	if [ "$MODEL" = auto ]; then
		# bench.sh has qemu/vm load dm-hddsim.ko when the tree has it.
		if dmsetup targets | grep -qw hddsim; then
			MODEL=hddsim
		else
			MODEL=delay
		fi
	fi
}

# origin_table: set TABLE to the origin's table line over $BACKING
origin_table() {
	local len=$((ORIGIN_MB * 2048))
	case $MODEL in
	hddsim)
		# hddsim <backing_dev> <#opt_args> [<key> <value>]...
		set -- $HDDSIM_ARGS
		TABLE="0 $len hddsim $BACKING $# $*"
		;;
	delay)
		# delay <dev> <offset> <delay_ms>: every bio waits DELAY_MS
		TABLE="0 $len delay $BACKING 0 $DELAY_MS"
		;;
	*)
		note "unknown ORIGIN_MODEL '$MODEL'"
		return 1
		;;
	esac
}

# The pristine data sits on /dev/ram1 at sector BCACHE_DATA_OFFSET: seen
# from sector 0 it is a bcache backing device's layout (superblock area,
# then data), seen from BCACHE_DATA_OFFSET the plain image.
BCACHE_DATA_OFFSET=16
BRD_MB=$((ORIGIN_MB + 64))

# backing_init [IMAGE]: load brd (ram0: copy-on-write store, ram1: pristine
# data, ram2: the cache with CACHE_KIND=brd) and put IMAGE on ram1.
backing_init() {
	local image=${1:-}
	origin_model
	fast_dev || return 1
	modprobe dm-snapshot || return 1
	if grep -q '^brd ' /proc/modules; then
		rmmod brd || { note "cannot unload brd"; return 1; }
	fi
	modprobe brd rd_nr=3 rd_size=$((BRD_MB * 1024)) max_part=0 || return 1
	if [ -n "$image" ]; then
		# Only the image's data: holes stay unallocated in brd.
		dd if="$image" of=/dev/ram1 bs=4M oflag=direct,seek_bytes \
			seek=$((BCACHE_DATA_OFFSET * 512)) conv=sparse,nocreat \
			status=none || return 1
	fi
	# The devices that never change, made once: the two read-only views
	# of the pristine data and the two regions of the NVMe.
	local len=$((ORIGIN_MB * 2048)) clen=$(((META_MB + CACHE_MB) * 2048))
	dmsetup create "$BENCH_PFX-pristine" --readonly \
		--table "0 $len linear /dev/ram1 $BCACHE_DATA_OFFSET" &&
	dmsetup create "$BENCH_PFX-pristine0" --readonly \
		--table "0 $len linear /dev/ram1 0" &&
	dmsetup create "$BENCH_PFX-fast" --table "0 $len linear $FASTDEV 0" &&
	dmsetup create "$BENCH_PFX-cache" --table \
		"0 $clen linear $FASTDEV $len" || return 1
	FAST=/dev/mapper/$BENCH_PFX-fast
	CACHE=/dev/mapper/$BENCH_PFX-cache
}

backing_exit() {
	dm_rm "$BENCH_PFX-origin"
	dm_rm "$BENCH_PFX-snap"
	dm_rm "$BENCH_PFX-pristine"
	dm_rm "$BENCH_PFX-pristine0"
	dm_rm "$BENCH_PFX-cache"
	dm_rm "$BENCH_PFX-fast"
}

# origin_reset [0]: with 0, the pristine data seen from sector 0 (bcache)
origin_reset() {
	local view=$BENCH_PFX-pristine len=$((ORIGIN_MB * 2048))
	[ "${1:-}" != 0 ] || view=$BENCH_PFX-pristine0
	dm_rm "$BENCH_PFX-origin"
	dm_rm "$BENCH_PFX-snap"
	# N: transient, nothing of an earlier snapshot on ram0 is read back.
	# 256 KiB chunks: dm-snapshot splits every bio at chunk boundaries, and
	# with 4 KiB chunks a 1 MiB read became 256 bios, enough CPU under TCG
	# for the model's sequential requests to overrun their due times; a
	# first write to a chunk copies it, in RAM.
	dmsetup create "$BENCH_PFX-snap" --table \
		"0 $len snapshot /dev/mapper/$view /dev/ram0 N 512" || return 1
	BACKING=/dev/mapper/$BENCH_PFX-snap
	origin_table || return 1
	dmsetup create "$BENCH_PFX-origin" --table "$TABLE" || return 1
	ORIGIN=/dev/mapper/$BENCH_PFX-origin
}

# ------------------------------------------------------------------
# The fast device: "NVMe alone" region and cache region.

# fast_dev: set FASTDEV to the NVMe (or its brd stand-in)
fast_dev() {
	case $CACHE_KIND in
	nvme)
		FASTDEV=/dev/nvme0n1
		[ -b $FASTDEV ] || { note "no $FASTDEV"; return 1; }
		;;
	brd) FASTDEV=/dev/ram2 ;;
	*) note "unknown CACHE_KIND '$CACHE_KIND'"; return 1 ;;
	esac
}

cache_reset() {
	# Wipe the first MiB of the region, where every contender keeps its
	# superblock (dm-cache: in its metadata part, which starts there), so
	# no contender finds another's metadata.  The data area needs no
	# zeroing: no cache reads a block it has not written.
	dd if=/dev/zero of="$CACHE" bs=1M count=1 oflag=direct status=none
}

# ------------------------------------------------------------------
# Contenders.  ct_setup sets CT (the contender's name), DEV (the device to
# benchmark) and CT_KIND; it returns 2 for "skipped, see the note".

CT=
CT_KIND=
DEV=
BCACHE=
CT_NOTE=

ct_setup() {
	CT=$1
	CT_NOTE=
	case $CT in
	hdd) CT_KIND=bare; DEV=$ORIGIN ;;
	nvme) CT_KIND=bare; DEV=$FAST ;;
	tac-*) ct_tac_setup "${CT#tac-}" ;;
	dmcache-wt) ct_dmcache_setup writethrough ;;
	dmcache-wb) ct_dmcache_setup writeback ;;
	bcache-wt) ct_bcache_setup writethrough ;;
	bcache-wb) ct_bcache_setup writeback ;;
	writecache) ct_writecache_setup ;;
	*) CT_NOTE="unknown contender"; return 2 ;;
	esac
}

# ct_tac_setup MODE[-nostream][-4k|-8k|-16k][-noverify][-dirtyN][-fillN][-fixed]:
# -nostream turns streams off (sequential_cutoff_kb 0), -4k, -8k and -16k
# use 4, 8 or 16 KiB blocks instead of TAC_BLOCK (DB_TAC_BLOCK under the databases
# and sync-write's 4 KiB writes),
# -noverify sets verify_reads off, -dirtyN sets dirty_threshold N, -fixed
# sets dirty_adapt off, -fillN sets fill_threshold N, for a side-by-side
# measure of what each does.
ct_tac_setup() {
	local mode=$1 len=$((ORIGIN_MB * 2048)) block=$TAC_BLOCK extra= opts
	case ${WL:-} in pgbench | sysbench | sync-write) block=$DB_TAC_BLOCK ;; esac
	case $mode in *-fixed) extra+=" dirty_adapt off"; mode=${mode%-fixed} ;; esac
	case ${mode##*-} in fill[0-9]|fill[0-9][0-9]|fill100)
		extra+=" fill_threshold ${mode##*-fill}"; mode=${mode%-fill*} ;;
	esac
	case ${mode##*-} in dirty[0-9]|dirty[0-9][0-9]|dirty100)
		extra+=" dirty_threshold ${mode##*-dirty}"; mode=${mode%-dirty*} ;;
	esac
	case $mode in *-noverify) extra+=" verify_reads off"; mode=${mode%-noverify} ;; esac
	case $mode in *-4k) block=8; mode=${mode%-4k} ;; esac
	case $mode in *-8k) block=16; mode=${mode%-8k} ;; esac
	case $mode in *-16k) block=32; mode=${mode%-16k} ;; esac
	case $mode in *-nostream) extra+=" sequential_cutoff_kb 0"; mode=${mode%-nostream} ;; esac
	# shellcheck disable=SC2086
	set -- mode "$mode" format $extra
	opts="$# $*"
	CT_KIND=tac
	dmesg -C 2>/dev/null
	if ! dmsetup create "$BENCH_PFX-tac" --table \
		"0 $len tac $ORIGIN $CACHE $block $opts" \
		> /dev/null 2>&1; then
		CT_NOTE="dm-tac rejected mode $mode: $(dmesg | grep -i 'tac' |
			tail -n 1 | sed 's/^\[[^]]*\] *//')"
		return 2
	fi
	DEV=/dev/mapper/$BENCH_PFX-tac
}

ct_dmcache_setup() {
	local feat=$1 len=$((ORIGIN_MB * 2048)) mlen=$((META_MB * 2048))
	CT_KIND=dmcache
	dmsetup create "$BENCH_PFX-cmeta" --table "0 $mlen linear $CACHE 0" &&
	dmsetup create "$BENCH_PFX-cdata" --table \
		"0 $((CACHE_MB * 2048)) linear $CACHE $mlen" &&
	dmsetup create "$BENCH_PFX-dmcache" --table "0 $len cache \
/dev/mapper/$BENCH_PFX-cmeta /dev/mapper/$BENCH_PFX-cdata $ORIGIN \
$DMCACHE_BLOCK 1 $feat smq 0" || { CT_NOTE="dm-cache setup failed"; return 1; }
	DEV=/dev/mapper/$BENCH_PFX-dmcache
}

# bcache: the backing device is the origin with bcache's 8 KiB superblock
# area in front (data offset BCACHE_DATA_OFFSET sectors), so its device is
# 8 KiB shorter.

ct_bcache_setup() {
	local mode=$1 cset b i odev
	CT_KIND=bcache
	modprobe bcache 2>/dev/null
	[ -w /sys/fs/bcache/register ] || { CT_NOTE="no bcache module"; return 2; }
	cset=$(cat /proc/sys/kernel/random/uuid)
	# Both devices were zeroed (origin_reset, cache_reset): nothing to wipe.
	make-bcache --data-offset "$BCACHE_DATA_OFFSET" -B "$ORIGIN" >/dev/null &&
	# Buckets of 64 KiB: bcache refuses a cache of fewer than 513
	# buckets, and its 512 KiB default gives a 108 MiB region only 216.
	make-bcache --cset-uuid "$cset" --bucket 64k -C "$CACHE" >/dev/null ||
		{ CT_NOTE="make-bcache failed"; return 1; }
	BCACHE_CSET=$cset
	echo "$CACHE" > /sys/fs/bcache/register 2>/dev/null
	echo "$ORIGIN" > /sys/fs/bcache/register 2>/dev/null
	# /dev/mapper nodes are not symlinks without udev: find the origin's
	# sysfs directory by device number.
	set -- $(stat -L -c '%t %T' "$ORIGIN")
	odev=/sys/dev/block/$((16#$1)):$((16#$2))
	for i in $(seq 50); do
		[ -e "$odev/bcache/dev" ] && break
		sleep 0.2
	done
	BCACHE=$(basename "$(readlink -f "$odev/bcache/dev")")
	[ -n "$BCACHE" ] && [ -b "/dev/$BCACHE" ] ||
		{ CT_NOTE="bcache device did not appear"; return 1; }
	b=/sys/block/$BCACHE/bcache
	if [ ! -e /sys/fs/bcache/"$cset" ]; then
		CT_NOTE="cache set $cset not registered"
		return 1
	fi
	[ -e "$b/cache" ] || echo "$cset" > "$b/attach"
	echo "$mode" > "$b/cache_mode"
	# The congestion tracker bypasses the cache when its latency exceeds
	# 2 ms (reads) or 20 ms (writes); emulated NVMe under TCG crosses that
	# for reasons no real SSD has, so it is off (bcache.rst, "Troubleshooting
	# performance").  sequential_cutoff, its scan filter, stays at 4M.
	echo 0 > /sys/fs/bcache/"$cset"/congested_read_threshold_us
	echo 0 > /sys/fs/bcache/"$cset"/congested_write_threshold_us
	DEV=/dev/$BCACHE
}

ct_writecache_setup() {
	local len=$((ORIGIN_MB * 2048))
	CT_KIND=writecache
	dmsetup create "$BENCH_PFX-wc" --table \
		"0 $len writecache s $ORIGIN $CACHE $WRITECACHE_BLOCK 0" ||
		{ CT_NOTE="dm-writecache setup failed"; return 1; }
	DEV=/dev/mapper/$BENCH_PFX-wc
}

# ct_counters: cumulative "<read hits> <read misses>" of the running
# contender, as the target counts them (units differ, see README.md).
ct_counters() {
	local s b h m bh bm
	case $CT_KIND in
	tac)
		# <block_size> <used>/<total> <dirty> <read_hits> <read_misses> ...
		s=$(dmsetup status "$BENCH_PFX-tac")
		set -- $s
		echo "${7:--} ${8:--}"
		;;
	dmcache)
		# ... <#read hits> <#read misses>: words 5 and 6 after "cache"
		s=$(dmsetup status "$BENCH_PFX-dmcache")
		set -- $s
		echo "${8:--} ${9:--}"
		;;
	bcache)
		# Bypassed reads (sequential cutoff) count: a bypassed hit is a
		# hit, a bypassed miss a miss.  sysfs reads, no fork.
		b=/sys/block/$BCACHE/bcache/stats_total
		read -r h < $b/cache_hits
		read -r m < $b/cache_misses
		read -r bh < $b/cache_bypass_hits
		read -r bm < $b/cache_bypass_misses
		echo $((h + bh)) $((m + bm))
		;;
	writecache)
		# <error> <blocks> <free> <writeback> <reads> <read hits> ...
		# (the counters exist since Linux 5.17)
		s=$(dmsetup status "$BENCH_PFX-wc")
		set -- $s
		if [ $# -ge 9 ]; then
			echo "$9" $(($8 - $9))
		else
			echo - -
		fi
		;;
	*) echo - - ;;
	esac
}

ct_status() {
	case $CT_KIND in
	tac) dmsetup status "$BENCH_PFX-tac" ;;
	dmcache) dmsetup status "$BENCH_PFX-dmcache" ;;
	writecache) dmsetup status "$BENCH_PFX-wc" ;;
	bcache)
		local b=/sys/block/$BCACHE/bcache
		echo "state=$(cat $b/state) dirty=$(cat $b/dirty_data)" \
		     "hits=$(cat $b/stats_total/cache_hits)" \
		     "misses=$(cat $b/stats_total/cache_misses)" \
		     "bypass_hits=$(cat $b/stats_total/cache_bypass_hits)" \
		     "bypass_misses=$(cat $b/stats_total/cache_bypass_misses)" \
		     "bypassed=$(cat $b/stats_total/bypassed)"
		;;
	*) echo - ;;
	esac
	echo "origin: $(dmsetup status "$BENCH_PFX-origin" 2>/dev/null)"
}

ct_teardown() {
	local f i
	if [ "$CT_KIND" = bcache ]; then
		# Stop whatever bcache registered, even after a failed setup:
		# it holds the origin and the cache region open.
		for f in /sys/block/bcache*/bcache/stop /sys/fs/bcache/*-*/stop; do
			[ -e "$f" ] && echo 1 > "$f" 2>/dev/null
		done
		for i in $(seq 100); do
			compgen -G '/sys/fs/bcache/*-*' > /dev/null ||
				compgen -G '/sys/block/bcache*' > /dev/null || break
			sleep 0.2
		done
		BCACHE=
		BCACHE_CSET=
	fi
	dm_rm "$BENCH_PFX-tac"
	dm_rm "$BENCH_PFX-dmcache"
	dm_rm "$BENCH_PFX-cmeta"
	dm_rm "$BENCH_PFX-cdata"
	dm_rm "$BENCH_PFX-wc"
	CT_KIND=
	DEV=
}
