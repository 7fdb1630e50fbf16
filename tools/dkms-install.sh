#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What 'make dkms-install' and 'make dkms-remove' run (root only):
#
#   tools/dkms-install.sh install [KERNEL...]
#       Replace any dm-tac registered with DKMS by this tree's: copy
#       dm-tac/ (Kbuild, dkms.conf, *.c, *.h) to /usr/src/dm-tac-<version>,
#       'dkms add', then 'dkms install' for each KERNEL (full release
#       names) or, without any, for every kernel in /lib/modules that has
#       headers (a build/ link).  The module lands in
#       /lib/modules/<release>/updates/dkms/dm-tac.ko and modules.dep, so
#       'modprobe dm-tac' (and device-mapper's own loading of a target on
#       first use) finds it.  Later kernels get it from DKMS's kernel
#       hooks (AUTOINSTALL in dkms.conf).
#   tools/dkms-install.sh remove
#       'dkms remove --all' every registered dm-tac version, and remove
#       the /usr/src copies this script made.
#   tools/dkms-install.sh sources
#       List the files of dm-tac/ that install copies (not root).
#
# Environment: DKMS (the dkms command, default dkms).

set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dkms=${DKMS:-dkms}
name=dm-tac
marker=.installed-by-dm-tac-make

say() { echo "dkms-install: $*"; }
die() { echo "dkms-install: $*" >&2; exit 1; }

if [ "${1:-}" = install ] || [ "${1:-}" = remove ]; then
	[ "$(id -u)" = 0 ] || die "run as root (DKMS writes /usr/src, /var/lib/dkms and /lib/modules)"
	command -v "$dkms" >/dev/null ||
		die "dkms is not installed (Debian: apt-get install dkms)"
fi

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dm-tac/dkms.conf")
[ -n "$version" ] || die "no PACKAGE_VERSION in dm-tac/dkms.conf"

# Versions of dm-tac DKMS knows: "dm-tac/1.2.0, 6.1.0-56-amd64, x86_64:
# installed" or "dm-tac/1.2.0: added".
registered() {
	"$dkms" status -m "$name" 2>/dev/null |
		sed -n "s|^$name/\([^,:]*\)[,:].*|\1|p" | sort -u
}

# The module's source: every file in dm-tac/ but what a build makes
# (the kernel build's outputs, as in .gitignore).
sources() {
	local f
	for f in "$top"/dm-tac/* "$top"/dm-tac/policy/*; do
		f=${f#"$top"/dm-tac/}
		case ${f##*/} in
		*.o | *.ko | *.mod | *.mod.c | *.cmd | *.a | *.d | modules.order | Module.symvers) ;;
		*) [ -f "$top/dm-tac/$f" ] && echo "$f" ;;
		esac
	done
}

remove_all() {
	local v
	for v in $(registered); do
		say "removing $name/$v from DKMS (every kernel)"
		"$dkms" remove -m "$name" -v "$v" --all
	done
	for v in /usr/src/"$name"-*; do
		[ -e "$v/$marker" ] || continue
		say "removing $v"
		rm -rf "$v"
	done
}

case ${1:-} in
sources)
	sources
	;;
install)
	shift
	remove_all
	src=/usr/src/$name-$version
	if [ -e "$src" ]; then
		die "$src exists and was not made by this script (a package's?); remove it first"
	fi
	say "copying the module's source to $src"
	mkdir -p "$src"
	mkdir -p "$src/policy"
	sources | while read -r f; do cp "$top/dm-tac/$f" "$src/$f"; done
	: >"$src/$marker"
	"$dkms" add -m "$name" -v "$version"
	if [ $# -gt 0 ]; then
		kernels=("$@")
	else
		kernels=()
		for d in /lib/modules/*/build; do
			[ -e "$d/include" ] && kernels+=("$(basename "$(dirname "$d")")")
		done
	fi
	[ ${#kernels[@]} -gt 0 ] ||
		die "no kernel headers in /lib/modules/*/build (Debian: apt-get install linux-headers-$(uname -r))"
	failed=()
	for k in "${kernels[@]}"; do
		say "building and installing $name/$version for $k"
		rc=0
		"$dkms" install -m "$name" -v "$version" -k "$k" || rc=$?
		case $rc in
		0) ;;
		77) say "$k: skipped (dkms.conf's BUILD_EXCLUSIVE: kernel too old, or no device-mapper)" ;;
		*) failed+=("$k") ;;
		esac
	done
	"$dkms" status -m "$name"
	if [ -n "$(uname -r)" ] && [ ! -e "/lib/modules/$(uname -r)/build/include" ]; then
		say "note: the running kernel $(uname -r) has no headers, so no dm-tac for it"
	fi
	[ ${#failed[@]} -eq 0 ] || die "the build failed for: ${failed[*]} (see /var/lib/dkms/$name/$version/build/make.log)"
	;;
remove)
	remove_all
	;;
*)
	sed -n '3,/^$/s/^# \{0,1\}//p' "$0"
	exit 2
	;;
esac
