#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# tools/tacmeta against the kernel, on real caches.  A write-back cache
# with dirty and clean blocks and saved temperatures is made through the
# module, and copied twice: "live" (while it runs, after a flush: an
# unclean stop) and "clean" (after its removal).  Then:
#
#  * tacmeta check passes both, and predicts what the kernel loads from
#    each (blocks, dirty blocks, temperatures), which the kernel then
#    does; dump lists the same;
#  * random bits of their metadata are inverted, as tests/crash/fuzz.sh
#    does (1..8 bits below data_start, TACMETA_IMAGES images, default 10;
#    make check-vm TESTS=tac_tacmeta.sh TACMETA_IMAGES=200 for many): on
#    every image
#    check's prediction must be what the kernel does, check must exit 1
#    (naming the damage) whenever the kernel refuses the cache or loads
#    less than from the undamaged copy, and exit 0 only when the kernel
#    loads exactly what it loads from the undamaged copy;
#  * chosen damage: a map sector, a superblock slot, a temperature page,
#    forged entries (a second dirty entry for one origin block: a
#    warning; an origin block past the origin: an error);
#  * repair writes nothing without --yes, nothing that drops dirty data
#    without --discard-dirty, and afterwards check passes and the kernel
#    loads the cache, whose data is right but for the dropped blocks;
#  * a device in use is refused.
#
# The kernel's verdict is taken without any I/O to the device: dmsetup
# create --notable, then load (the constructor reads the metadata), then
# status --inactive.
#
# Starting Python costs most of a second in the VM, and tacmeta runs
# some 40 times here: most of them go to one Python process,
# tacmeta_helper.py serve, which runs tacmeta's main() (tm below).  The
# command itself runs where the process matters: the refusals of a
# device in use, the pristine pair's checks, TACMETA_CRC.

. "$(dirname "$0")/lib.sh"

# diag_lines TEXT: every line of TEXT as a TAP comment
diag_lines() {
	local l
	while IFS= read -r l; do echo "#   $l"; done <<<"$1"
}
require dmsetup losetup
[ -x /usr/bin/python3 ] || ksft_skip "no /usr/bin/python3"

IMAGES=${TACMETA_IMAGES:-10}
SEED=${TACMETA_SEED:-1}

# _serve WORD...: a request to the helper process; what it printed in
# $out, its exit status in $rc and returned.
coproc TMS { exec /usr/bin/python3 "$SELFTESTS/tacmeta_helper.py" serve 2>&1; }
at_exit "kill $TMS_PID"
_serve() {
	local IFS=$'\t' l
	out= rc=
	if echo "$*" >&"${TMS[1]}"; then
		while IFS= read -r l <&"${TMS[0]}"; do
			if [[ $l == $'\x1e'* ]]; then
				rc=${l#$'\x1e'}
				break
			fi
			out+=${out:+$'\n'}$l
		done
	fi
	[ -n "$rc" ] || { rc=125; out+="${out:+$'\n'}tacmeta_helper.py serve is gone"; }
	return "$rc"
}
# tm ARG...: 'tacmeta ARG...' in the helper process
tm() { _serve tacmeta "$@"; }
# th COMMAND ARG...: a command of tacmeta_helper.py in it
th() { _serve "$@"; }
# tm_ok DESC ARG...: 'tacmeta ARG...' exits 0
tm_ok() {
	local desc=$1
	shift
	tm "$@" && tap_ok "$desc" || tap_fail "$desc" "tacmeta $* exits $rc: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
}
# th_ok DESC COMMAND ARG...: a helper command exits 0
th_ok() {
	local desc=$1
	shift
	th "$@" && tap_ok "$desc" || tap_fail "$desc" "$* exits $rc: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
}
OPTS="mode writeback dirty_threshold 100 dirty_adapt off clean_idle_ms 0 max_cache_inflight 65536"
NOPT=$(wc -w <<<"$OPTS")
ONB=4096	# origin blocks (16 MiB)

scratch_dev origin 16 || ksft_skip "no loop devices"
scratch_dev cache 4
scratch_dev dmg 4	# the kernel reads each image through this one
img=$_scratch/img
mkdir -p "$img"
th fill "$_scratch/origin.img" $ONB
osz=$(sectors "$origin")

# The pristine pair: 150 dirty blocks (every 3rd of 0..449), 400 clean
# ones (reads of 1000..1399), temperatures.
tac_create tacmm "$origin" "$cache" 8 $OPTS || ksft_skip "cannot create the device"
th write /dev/mapper/tacmm 0 450 3 || diag "$out"
dd if=/dev/mapper/tacmm of=/dev/null bs=4k skip=1000 count=400 iflag=direct status=none
dd if=/dev/mapper/tacmm of=/dev/null bs=4k skip=1000 count=400 iflag=direct status=none
sync /dev/mapper/tacmm
sleep 0.3
cp "$_scratch/cache.img" "$img/live.img"

# A device in use is refused, with the reason.
out=$("$TACMETA" check "$cache" 2>&1)
rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "is held by dm-" &&
	tap_ok "check refuses a cache a dm device holds (exit 2, names the holder)" ||
	tap_fail "check refuses a cache a dm device holds (exit 2, names the holder)" "exit $rc: ${out//$'\n'/ | }"
out=$("$TACMETA" repair --yes "$cache" 2>&1)
[ $? = 2 ] && tap_ok "repair refuses it too" || tap_fail "repair refuses it too" "${out//$'\n'/ | }"
"$TACMETA" check --force "$cache" >/dev/null 2>&1
[ $? -le 1 ] && tap_ok "check --force reads it anyway" || tap_fail "check --force reads it anyway"
dm_remove tacmm
cp "$_scratch/cache.img" "$img/clean.img"
# TACMETA_KEEP=DIR (a qemu/vm --rwdir): keep the pristine pair there.
[ -z "${TACMETA_KEEP:-}" ] || cp "$img/live.img" "$img/clean.img" "$TACMETA_KEEP/"

# kverdict IMAGE: what the kernel makes of a cache image, in $kv:
# "refuse", or "load <blocks> <dirty> <temperatures restored>"; what the
# kernel logged meanwhile in $klog; $out and $rc are kept.  Few programs
# run: each costs a lot in the VM (the helper process copies and reads
# the kernel log).
kverdict() {
	local st t d o=$out r=$rc
	th copy "$1" "$_scratch/dmg.img"
	th klog
	if dmsetup load tacmk --table "0 $osz tac $origin $dmg 8 $NOPT $OPTS" 2>/dev/null; then
		# used/total and dirty_blocks (dm-tac/status-fields 2 and 3):
		# tac_stat reads the live table, not the inactive one.
		read -r _ _ _ _ st d _ < <(dmsetup status --inactive tacmk)
		th klog
		klog=$out
		t=0
		[[ $klog =~ \ ([0-9]+)\ extent\ temperatures\ restored ]] && t=${BASH_REMATCH[1]}
		kv="load ${st%/*} $d $t"
		dmsetup clear tacmk
	else
		th klog
		klog=$out
		kv=refuse
	fi
	out=$o rc=$r
}
dmsetup create tacmk --notable || ksft_skip "dmsetup create --notable failed"
at_exit "dmsetup remove tacmk"

# cverdict OUTPUT: check's prediction in kverdict's terms.
cverdict() {
	local re1='prediction: the kernel loads ([0-9]+) blocks \(([0-9]+) dirty\) and ([0-9]+) extent temperatures'
	local re2='prediction: the kernel loads ([0-9]+) blocks \(([0-9]+) dirty\): the dirty ones only'
	if [[ $1 =~ $re1 ]]; then
		echo "load ${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
	elif [[ $1 =~ $re2 ]]; then
		echo "load ${BASH_REMATCH[1]} ${BASH_REMATCH[2]} 0"
	elif [[ $1 =~ prediction:\ the\ kernel\ refuses ]]; then
		echo refuse
	elif [[ $1 =~ prediction:\ the\ kernel\ (starts\ cold|formats) ]]; then
		echo "load 0 0 0"
	else
		echo "no prediction"
	fi
}

diag "the pristine pair made (${SECONDS}s)"
declare -A base
for b in live clean; do
	out=$("$TACMETA" check "$img/$b.img" 2>&1)
	rc=$?
	check_eq "check passes the $b copy" 0 "$rc"
	[ $rc = 0 ] || diag_lines "$out"
	kverdict "$img/$b.img"
	base[$b]=$kv
	check_eq "...and predicts what the kernel loads from it" "${base[$b]}" "$(cverdict "$out")"
done
read -r _ u d t <<<"${base[clean]}"
check_eq "the live copy: the 150 dirty blocks only" "load 150 150 0" "${base[live]}"
[ "$u" -ge 550 ] && [ "$d" = 150 ] && [ "$t" -gt 0 ] &&
	tap_ok "the clean copy: dirty and clean blocks, temperatures ($u, $d, $t)" ||
	tap_fail "the clean copy: dirty and clean blocks, temperatures" "${base[clean]}"

# dump: the same numbers.
th counts "$img/clean.img"
check_eq "dump: mappings, dirty list and temperatures" "$u $d $t" "$out"
tm map "$img/clean.img"
check_eq "...and map lists the mappings" "$u" "$(wc -l <<<"$out")"

# Random bit flips in the metadata, as the fuzz test makes them.
data_start=$(sb_field "$img/clean.img" data_start)
limit=$((data_start * 512))
for b in live clean; do
	mkdir -p "$img/$b"
	th damage "$img/$b.img" "$img/$b" $((IMAGES / 2)) $((SEED * 1000 + ${#b})) $limit 8
	echo "$out" >"$img/$b.flips"
done
declare -A flipped
for b in live clean; do
	while read -r i f; do flipped[$b/$i]=$f; done <"$img/$b.flips"
done
n=0 bad=0 loaded=0 refused=0 lesser=0
for i in $(seq $((IMAGES / 2))); do
	for b in live clean; do
		n=$((n + 1))
		f=$img/$b/$i.img
		flips=${flipped[$b/$i]}
		tm check "$f"
		kverdict "$f"; k=$kv
		c=$(cverdict "$out")
		why=
		if [ "$c" != "$k" ]; then
			why="check predicts '$c', the kernel did '$k'"
		elif [ "$k" != "${base[$b]}" ] && [ $rc != 1 ]; then
			why="the kernel did '$k', not '${base[$b]}' as undamaged, but check exits $rc"
		elif [ "$k" = "${base[$b]}" ] && [ $rc != 0 ] && [ $rc != 1 ]; then
			why="check exits $rc"
		elif [ $rc = 1 ] && [[ $out != *$'\n'"error: "* ]]; then
			why="check exits 1 without naming an error"
		fi
		case $k in
		refuse) refused=$((refused + 1)) ;;
		"${base[$b]}") loaded=$((loaded + 1)) ;;
		*) lesser=$((lesser + 1)) ;;
		esac
		if [ -n "$why" ]; then
			bad=$((bad + 1))
			tap_fail "damaged image $b/$i (flipped $flips)" "$why"
			diag_lines "$out"
		fi
	done
done
rm -rf "$img/live" "$img/clean"
diag "$n damaged images done (${SECONDS}s)"
[ $bad = 0 ] && tap_ok "$n randomly damaged images: check predicted the kernel every time ($refused refused, $lesser loaded less, $loaded loaded as undamaged)"

# Chosen damage.  A map sector with dirty entries, in the live copy.
for s in 0 1 2 3 4 5 6 7; do
	th lost "$img/live.img" $s
	lost=$out
	[ -n "$lost" ] && break
done
map_start=$(sb_field "$img/live.img" map_start)
cp "$img/live.img" "$img/map.img"
tm flip "$img/map.img" $(((map_start + s) * 512 + 300)) 4
tm check "$img/map.img"
kverdict "$img/map.img"; k=$kv
check_eq "a damaged map sector: check exits 1" 1 $rc
grep -q "^error: map sector $s (cache device sector $((map_start + s)),.* fails its checksum" <<<"$out" &&
	tap_ok "...naming the sector" || tap_fail "...naming the sector" "${out//$'\n'/ | }"
check_eq "...predicting the kernel's refusal" "refuse refuse" "$(cverdict "$out") $k"
[[ $klog == *"map sector $s (cache device sector $((map_start + s))) fails its checksum"* ]] &&
	tap_ok "...the kernel names the same sector" ||
	tap_fail "...the kernel names the same sector" "$(dmesg | grep tac: | head -n 2)"

# repair: nothing without --yes, nothing lossy without --discard-dirty.
before=$(md5sum <"$img/map.img")
tm repair --yes "$img/map.img"
rc2=$rc
tm repair "$img/map.img"
rc1=$rc
check_eq "repair without --yes, or dropping dirty entries without --discard-dirty, exits 1 and writes nothing" \
	"1 1 $before" "$rc1 $rc2 $(md5sum <"$img/map.img")"
grep -q "^LOSES DATA: rewrite map sector $s empty" <<<"$out" &&
	tap_ok "...and says what it would do, and that it loses data" ||
	tap_fail "...and says what it would do, and that it loses data" "${out//$'\n'/ | }"
tm repair --discard-dirty --yes "$img/map.img"
check_eq "repair --discard-dirty --yes repairs it" 0 $rc
grep -q "^WARNING: dropping dirty entries" <<<"$out" &&
	tap_ok "...with a warning" || tap_fail "...with a warning" "${out//$'\n'/ | }"
tm_ok "...check passes afterwards" check "$img/map.img"
nlost=$(wc -w <<<"$lost")
kverdict "$img/map.img"
check_eq "...and the kernel loads it without the lost sector's $nlost dirty blocks" \
	"load $((150 - nlost)) $((150 - nlost)) 0" "$kv"
cp "$img/map.img" "$_scratch/cache.img"
tac_create tacmm "$origin" "$cache" 8 $OPTS
th_ok "...its data is right, but for those blocks' newest writes" \
	verify /dev/mapper/tacmm $ONB 0 450 3 $lost
dm_remove tacmm

# tacmeta writeback of the damaged copy saves what it can verify.
th fill "$_scratch/origin.img" $ONB
cp "$img/live.img" "$_scratch/cache.img"
tm flip "$cache" $(((map_start + s) * 512 + 300)) 4
tm writeback "$cache" "$origin"
check_eq "writeback copies the dirty blocks of the undamaged sectors" \
	"$((150 - nlost)) dirty blocks written back, 0 skipped" "$(tail -n 1 <<<"$out")"
th_ok "...to the origin: the origin alone holds all but the lost ones" \
	verify "$origin" $ONB 0 450 3 $lost
th fill "$_scratch/origin.img" $ONB

# A damaged superblock slot and temperature page of the clean copy.
cur=$(sb_slot "$img/clean.img")
cp "$img/clean.img" "$img/sb.img"
tm flip "$img/sb.img" $((cur * 4096 + 40)) 0
tm check "$img/sb.img"
kverdict "$img/sb.img"; k=$kv
check_eq "the current superblock slot damaged: check exits 1" 1 $rc
grep -q "^error: superblock slot $cur fails its checksum" <<<"$out" &&
	tap_ok "...naming the slot" || tap_fail "...naming the slot" "${out//$'\n'/ | }"
check_eq "...and predicts the kernel's fallback to the older slot" "$k" "$(cverdict "$out")"
tm_ok "repair --yes rewrites the slot" repair --yes "$img/sb.img"
tm_ok "...check passes afterwards" check "$img/sb.img"

temp_start=$(sb_field "$img/clean.img" temp_start)
cp "$img/clean.img" "$img/temp.img"
tm flip "$img/temp.img" $((temp_start * 512 + 100)) 3
tm check "$img/temp.img"
kverdict "$img/temp.img"; k=$kv
check_eq "a damaged temperature page: check exits 1" 1 $rc
grep -q "^error: saved temperature page 0 .* fails its checksum: the kernel starts with cold temperatures" <<<"$out" &&
	tap_ok "...naming the page" || tap_fail "...naming the page" "${out//$'\n'/ | }"
[[ $klog == *"saved temperature page 0 is damaged"* ]] &&
	tap_ok "...which the kernel says too" || tap_fail "...which the kernel says too" "$(dmesg | grep tac)"
check_eq "...and predicts the blocks without temperatures" "load $u $d 0" "$(cverdict "$out")"
tm_ok "repair --yes forgets the temperatures" repair --yes "$img/temp.img"
tm_ok "...check passes afterwards" check "$img/temp.img"
kverdict "$img/temp.img"
check_eq "...and the kernel loads every block, quietly" "load $u $d 0 quiet" \
	"$kv $([[ $klog == *damaged* ]] && echo loud || echo quiet)"

# Forged entries (valid checksums, impossible contents).
cp "$img/live.img" "$img/dup.img"
th forge "$img/dup.img" dup
read -r dob dcb1 dcb2 <<<"$out"
tm check "$img/dup.img"
kverdict "$img/dup.img"; k=$kv
check_eq "two dirty entries for one origin block (a crash in a commit): a warning, exit 0" 0 $rc
grep -q "^warning: origin block $dob has two dirty entries (cache blocks $dcb1 and $dcb2)" <<<"$out" &&
	tap_ok "...naming both" || tap_fail "...naming both" "${out//$'\n'/ | }"
[[ $klog == *"origin block $dob has two dirty entries (cache blocks $dcb1 and $dcb2): keeping the first"* ]] &&
	tap_ok "...as the kernel does, which keeps the first" ||
	tap_fail "...as the kernel does, which keeps the first" "$(dmesg | grep tac)"
check_eq "...and check predicts what it loads" "$k" "$(cverdict "$out")"

cp "$img/clean.img" "$img/beyond.img"
th forge "$img/beyond.img" beyond
read -r bob bcb <<<"$out"
tm check "$img/beyond.img"
kverdict "$img/beyond.img"; k=$kv
check_eq "an origin block past the origin: exit 1" 1 $rc
grep -q "^error: cache block $bcb maps origin block $bob, beyond the origin's $ONB blocks" <<<"$out" &&
	tap_ok "...naming it" || tap_fail "...naming it" "${out//$'\n'/ | }"
check_eq "...and the kernel's refusal" "refuse refuse" "$(cverdict "$out") $k"
[[ $klog == *"holds an impossible entry"* ]] &&
	tap_ok "...which the kernel logs" || tap_fail "...which the kernel logs" "$(dmesg | grep tac)"
tm repair --yes "$img/beyond.img"
check_eq "repair --yes will not drop that dirty entry" 1 $rc
tm_ok "repair --discard-dirty --yes does" repair --discard-dirty --yes "$img/beyond.img"
kverdict "$img/beyond.img"
check_eq "...and the kernel loads the rest" "load $((u - 1)) $((d - 1)) $t" "$kv"

# The origin must be the cache's.
scratch_dev other 8
tm check --origin "$other" "$img/clean.img"
check_eq "check --origin: another origin's size is an error" "1 1" \
	"$rc $(grep -c '^error: the cache belongs to an origin of 32768 sectors, the origin given has 16384' <<<"$out")"
tm_ok "check --origin: its own origin passes" check --origin "$origin" "$img/clean.img"
tm_ok "check --data: the cached data matches its checksums" check --data "$img/clean.img"
# A cached block's data damaged: check --data names it.
tm map "$img/clean.img"
cb=$(sed -n 's/^{"cblock": \([0-9]*\), .*"nocrc": false.*/\1/p' <<<"$out")
cb=${cb%%$'\n'*}
cp "$img/clean.img" "$img/data.img"
tm flip "$img/data.img" $(((data_start + cb * 8) * 512 + 100)) 2
tm check --data "$img/data.img"
check_eq "check --data: a damaged cached block is an error" 1 $rc
grep -q "^error: cache block $cb (origin block [0-9]*, [a-z]*): units 0 fail their checksums" <<<"$out" &&
	tap_ok "...naming the block and unit" || tap_fail "...naming the block and unit" "${out//$'\n'/ | }"
# Large caches are checked with the kernel's crc32c (AF_ALG), which must
# find what tacmeta's own finds: a damaged map sector, a damaged block
# among good ones.
cp "$img/live.img" "$img/map.img"
tm flip "$img/map.img" $(((map_start + s) * 512 + 300)) 4
for f in map data; do
	th TACMETA_CRC=python tacmeta check --data "$img/$f.img"
	check_eq "the kernel's crc32c finds the same ($f copy)" "$out" \
		"$(TACMETA_CRC=kernel "$TACMETA" check --data "$img/$f.img" 2>&1)"
done

diag "took ${SECONDS}s"
tap_done
