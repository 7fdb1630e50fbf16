#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build dm-hddsim for one installed kernel and run validate.sh in a
# virtme-ng VM booted on that kernel (TCG if /dev/kvm is unusable).
#
#   run-vm.sh <kernel release or prefix: 6.1, 6.12, 6.12.117+deb12-amd64>
#
# Environment: RUNTIME (seconds per fio job, default 12), QUICK=1 (three
# calibration jobs only), OUT (results directory, default
# out/<release>-<date>, git-ignored), VNG (path to vng), MEMORY (1G),
# CPUS (2), KVM=1 to use /dev/kvm instead of TCG.

set -eu

HERE=$(dirname "$(readlink -f "$0")")
want=${1:?usage: run-vm.sh <kernel release>}

# "6.1" must not pick 6.12: try "<want>." first, as the top Makefile does.
find_release() {
	(cd /usr/src && ls -d linux-headers-"$1"*-amd64 2>/dev/null) |
		sed 's/^linux-headers-//' | sort -V | tail -n 1
}
krel=$(find_release "$want.")
[ -n "$krel" ] || krel=$(find_release "$want")
[ -n "$krel" ] || { echo "no headers for $want in /usr/src" >&2; exit 4; }
kimg=/boot/vmlinuz-$krel
[ -r "$kimg" ] || { echo "no $kimg" >&2; exit 4; }

vng=${VNG:-$(command -v vng || echo /tmp/vng/bin/vng)}
[ -x "$vng" ] || { echo "virtme-ng not found; set VNG" >&2; exit 4; }

build=$HERE/build/$krel
mkdir -p "$build"
cp "$HERE/dm-hddsim.c" "$HERE/Kbuild" "$build/"
make -C /usr/src/linux-headers-"$krel" M="$build" modules W=1

out=${OUT:-$HERE/out/$krel-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
kvm=--disable-kvm
[ "${KVM:-0}" = 1 ] && kvm=
echo "host: $(nproc) CPUs, $(uptime)" | tee "$out/host.txt"

# tsc=reliable: under TCG the clocksource watchdog rejects the TSC and the
# guest falls back to the HPET, an emulated MMIO read on every clock call.
set +e
PATH=$(dirname "$vng"):$PATH "$vng" -r "$kimg" $kvm \
	--memory "${MEMORY:-1G}" --cpus "${CPUS:-2}" --append tsc=reliable \
	--rwdir "$out" \
	--exec "bash $HERE/validate.sh $build/dm-hddsim.ko $out ${RUNTIME:-12} ${QUICK:+quick}" \
	2>&1 | tee "$out/validate.log"
rc=${PIPESTATUS[0]}
echo "host after: $(uptime)" | tee -a "$out/host.txt"
echo "results in $out"
exit "$rc"
