#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Tests of installing dm-tac the way users do (README.md, "Install").
#
#   tests/install/check.sh [host] [dkms]      default: both
#
# host   (seconds, no VM, no root needed; part of 'make check'):
#        dm-tac/dkms.conf's version is the target's, the DKMS source copy
#        is exactly the module's files (those git does not ignore),
#        'make install DESTDIR=...' installs the tools and a systemd unit
#        that 'systemd-analyze verify' accepts without a word, ordered
#        before local file systems, and every tool answers --help.
# dkms   ('make check-install'; root, dkms, one VM per kernel, one at a
#        time): 'make dkms-install' for the 6.1 and 6.12 kernels, then
#        'make dkms-remove', run for real but in a throwaway root: a
#        private mount namespace (unshare -m) where /var/lib/dkms is an
#        empty tmpfs and /usr/src and /lib/modules are overlays whose
#        writes go to a tmpfs.  What the install added to
#        /lib/modules/<release> is kept in out/install/stage, and a VM per
#        kernel, booted without the tree's dm-tac (qemu/vm --no-dm-tac),
#        lays it over its /lib/modules/<release> and loads dm-tac by name
#        (tests/install/dkms-guest.sh).  The host's /usr/src,
#        /var/lib/dkms and /lib/modules are checked unchanged afterwards.
#
# TAP-like lines, then "N passed, N failed"; exit 1 if anything failed.
# DKMS_KERNELS overrides the kernels (full release names).

set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=$top/out/install
mkdir -p "$out"
cd "$top" || exit 1

n=0 passed=0 failed=0

ok() { n=$((n + 1)); passed=$((passed + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1${2:+ # $2}"; }
# check DESC COMMAND...: passes if COMMAND exits 0; its output if not
check() {
	local desc=$1 o
	shift
	if o=$("$@" 2>&1); then
		ok "$desc"
	else
		not_ok "$desc" "$(echo "$o" | tail -n 4 | tr '\n' ' ')"
	fi
}

# retap PREFIX: TAP lines of another run on stdin, renumbered into this
# one, their descriptions after PREFIX; other lines pass through
retap() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "$1${line#ok * - }" ;;
		"not ok "*) line=${line#not ok * - }; not_ok "$1${line%% # *}" "$(echo "$line" | sed -n 's/^[^#]* # //p')" ;;
		*) echo "$line" ;;
		esac
	done
}

check_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "expected '$2', got '$3'"; fi
}

part_host() {
	local dest=$out/destdir v_conf v_target unit
	v_conf=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dm-tac/dkms.conf)
	v_target=$(sed -n 's/^[[:space:]]*\.version = {\([0-9]*\), *\([0-9]*\), *\([0-9]*\)}.*/\1.\2.\3/p' \
		dm-tac/dm-tac-target.c)
	check_eq "dkms.conf's PACKAGE_VERSION is the target's version (dm-tac-target.c)" \
		"$v_target" "$v_conf"
	if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
		check_eq "DKMS gets every file of dm-tac/ git does not ignore, nothing else" \
			"$(git -C "$top" ls-files --cached --others --exclude-standard dm-tac | sed 's|^dm-tac/||' | sort | paste -s -d ' ')" \
			"$(bash tools/dkms-install.sh sources | sort | paste -s -d ' ')"
	fi

	rm -rf "$dest"
	check "make install DESTDIR=... installs" \
		make -s --no-print-directory install DESTDIR="$dest"
	local f
	for f in /usr/local/sbin/tacmeta /usr/local/sbin/dm-tac-activate \
		 /usr/local/lib/systemd/system/dm-tac.service /etc/dm-tac/tactab; do
		check "...$f" test -s "$dest$f"
	done
	check "...the tools are executable" test -x "$dest/usr/local/sbin/tacmeta" -a \
		-x "$dest/usr/local/sbin/dm-tac-activate"
	unit=$dest/usr/local/lib/systemd/system/dm-tac.service
	check_eq "...the unit runs the installed script" \
		"ExecStart=/usr/local/sbin/dm-tac-activate start" \
		"$(grep '^ExecStart=' "$unit" 2>/dev/null)"
	check "...ordered before local file systems, stopped at shutdown" \
		sh -c "grep -qx 'DefaultDependencies=no' '$unit' &&
		       grep -qx 'Before=local-fs-pre.target shutdown.target' '$unit' &&
		       grep -qx 'Wants=local-fs-pre.target' '$unit' &&
		       grep -qx 'Conflicts=shutdown.target' '$unit' &&
		       grep -qx 'ExecStop=/usr/local/sbin/dm-tac-activate stop' '$unit' &&
		       grep -qx 'WantedBy=sysinit.target' '$unit'"
	echo "# an existing tactab is kept" >>"$dest/etc/dm-tac/tactab"
	make -s --no-print-directory install DESTDIR="$dest" >/dev/null 2>&1
	check "...a second install keeps an edited /etc/dm-tac/tactab" \
		grep -q "an existing tactab is kept" "$dest/etc/dm-tac/tactab"
	if command -v systemd-analyze >/dev/null; then
		# --root: the unit and its ExecStart= are looked up in DESTDIR.
		# It exits 0 on unknown keys and bad values: silence is the test.
		local o
		if o=$(systemd-analyze verify --root="$dest" "$unit" 2>&1) && [ -z "$o" ]; then
			ok "systemd-analyze verify accepts the unit, silently"
		else
			not_ok "systemd-analyze verify accepts the unit, silently" \
				"$(echo "$o" | head -n 3 | tr '\n' ' ')"
		fi
	else
		ok "systemd-analyze verify accepts the unit # SKIP no systemd-analyze"
	fi
	check "make uninstall DESTDIR=... removes the tools and the unit" \
		sh -c "make -s --no-print-directory uninstall DESTDIR='$dest' &&
		       ! test -e '$dest/usr/local/sbin/tacmeta' &&
		       ! test -e '$dest/usr/local/sbin/dm-tac-activate' &&
		       ! test -e '$unit'"

	for f in tools/tacmeta tools/dm-tac-activate; do
		check "$f --help" "$f" --help
	done
}

# What DKMS and depmod may change on the host: all of it must be as it
# was after the test.
host_state() {
	local r
	ls -la /usr/src /var/lib/dkms 2>&1
	for r in "${kernels[@]}"; do
		ls -la "/lib/modules/$r" "/lib/modules/$r/updates" 2>&1
		md5sum "/lib/modules/$r"/modules.* 2>&1
	done
}

# In the private mount namespace (see the top).
part_dkms_ns() {
	local stage=$1 t r dep
	shift
	kernels=("$@")
	t=$(mktemp -d /tmp/dm-tac-dkms.XXXXXX)
	mount -t tmpfs dm-tac-dkms "$t" || { not_ok "throwaway root: tmpfs"; return; }
	mkdir -p "$t/dkms" "$t/src/u" "$t/src/w" "$t/mod/u" "$t/mod/w"
	check "throwaway root: /var/lib/dkms, /usr/src and /lib/modules over a tmpfs" \
		sh -c "mount --bind '$t/dkms' /var/lib/dkms &&
		       mount -t overlay dm-tac-src -o lowerdir=/usr/src,upperdir=$t/src/u,workdir=$t/src/w /usr/src &&
		       mount -t overlay dm-tac-mod -o lowerdir=/lib/modules,upperdir=$t/mod/u,workdir=$t/mod/w /lib/modules"
	if [ "$(findmnt -n -o SOURCE /lib/modules)" != dm-tac-mod ]; then
		echo "# not going on without the throwaway root"
		return
	fi

	local start=$SECONDS
	if make -s --no-print-directory dkms-install DKMS_KERNELS="${kernels[*]}" \
		>"$out/dkms-install.log" 2>&1; then
		ok "make dkms-install DKMS_KERNELS='${kernels[*]}' ($((SECONDS - start))s)"
	else
		not_ok "make dkms-install" "$(tail -n 5 "$out/dkms-install.log" | tr '\n' ' ')"
	fi
	sed 's/^/#   /' "$out/dkms-install.log" | grep -v -e 'readelf: Warning' -e '^#   *$'
	for r in "${kernels[@]}"; do
		check_eq "dkms status: installed for $r" \
			"dm-tac/$version, $r, $(uname -m): installed" \
			"$(dkms status -m dm-tac -k "$r" 2>/dev/null)"
		dep=$(modprobe -S "$r" --show-depends dm-tac 2>&1 | tail -n 1)
		case $dep in
		"insmod /lib/modules/$r/updates/dkms/dm-tac.ko"*) ok "modprobe resolves dm-tac for $r: $dep" ;;
		*) not_ok "modprobe resolves dm-tac for $r to updates/dkms" "$dep" ;;
		esac
	done
	check "the source is in /usr/src/dm-tac-$version" test -s "/usr/src/dm-tac-$version/dkms.conf"
	rm -rf "$stage"
	mkdir -p "$stage/lib/modules"
	for r in "${kernels[@]}"; do
		cp -a "$t/mod/u/$r" "$stage/lib/modules/"
	done

	start=$SECONDS
	if make -s --no-print-directory dkms-remove >"$out/dkms-remove.log" 2>&1; then
		ok "make dkms-remove ($((SECONDS - start))s)"
	else
		not_ok "make dkms-remove" "$(tail -n 5 "$out/dkms-remove.log" | tr '\n' ' ')"
	fi
	check_eq "dkms status: no dm-tac left" "" "$(dkms status -m dm-tac 2>/dev/null)"
	check "no /usr/src/dm-tac-* left" sh -c "! ls -d /usr/src/dm-tac-* 2>/dev/null"
	for r in "${kernels[@]}"; do
		check "$r: no dm-tac in updates/dkms or modules.dep" \
			sh -c "! ls /lib/modules/$r/updates/dkms/dm-tac.ko* 2>/dev/null &&
			       ! grep -q dm-tac /lib/modules/$r/modules.dep"
	done
}

part_dkms() {
	local stage=$out/stage before after k
	if [ -n "${DKMS_KERNELS:-}" ]; then
		read -r -a kernels <<<"$DKMS_KERNELS"
	else
		kernels=()
		for k in 6.1 6.12; do
			kernels+=("$(qemu/kernel-release "$k")") || { not_ok "kernel $k installed (make deps)"; return; }
		done
	fi
	if [ "$(id -u)" != 0 ] || ! command -v dkms >/dev/null; then
		not_ok "root and dkms (make check-install installs it)"
		return
	fi
	before=$(host_state)
	unshare -m --propagation private "$0" dkms-ns "$stage" "${kernels[@]}" >"$out/ns.out" 2>&1
	# Renumber the namespace's lines into this run.
	retap "" <"$out/ns.out"
	after=$(host_state)
	if [ "$before" = "$after" ]; then
		ok "the host's /usr/src, /var/lib/dkms and /lib/modules are as before"
	else
		not_ok "the host's /usr/src, /var/lib/dkms and /lib/modules are as before" \
			"$(diff <(echo "$before") <(echo "$after") | head -n 6 | tr '\n' ' ')"
	fi

	for k in "${kernels[@]}"; do
		local start=$SECONDS rc
		qemu/vm --kernel "$k" --no-dm-tac --rwdir "$out/vm" \
			--log "$out/console-$k.log" -- tests/install/dkms-guest.sh "$stage" \
			>"$out/vm-$k.log" 2>"$out/vm-$k.err"
		rc=$?
		grep -E '^(not )?ok ' "$out/vm-$k.log" | while IFS= read -r line; do
			echo "$line"
		done >"$out/vm-$k.tap"
		retap "$k: " <"$out/vm-$k.tap"
		grep -q '^not ok' "$out/vm-$k.tap" || [ "$rc" = 0 ] ||
			not_ok "$k: the VM ran to the end" "exit $rc: $(grep "^vm: " "$out/vm-$k.err" | tail -n 2 | tr "\n" " ")"
		echo "# $k: VM $((SECONDS - start))s"
	done
}

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dm-tac/dkms.conf)
if [ "${1:-}" = dkms-ns ]; then
	shift
	part_dkms_ns "$@"
	exit 0
fi
[ $# -gt 0 ] || set -- host dkms
t0=$SECONDS
for p in "$@"; do
	case $p in
	host) part_host ;;
	dkms) part_dkms ;;
	*) echo "unknown part '$p' (host, dkms)"; exit 2 ;;
	esac
done
echo "# took $((SECONDS - t0))s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
