#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build dm-hddsim for one installed kernel and run validate.sh in a
# virtme-ng VM booted on that kernel (TCG if /dev/kvm is unusable).
#
#   run-vm.sh <kernel: 6.1, 6.12 or a full release, 6.12.117+deb12-amd64>
#
# Environment: RUNTIME (seconds per fio job, default 12), QUICK=1 (three
# calibration jobs only), OUT (results directory, default
# out/<release>-<date>, git-ignored), VNG (path to vng; default the
# project's, .venv/vng, which make deps installs), MEMORY (1G), CPUS (2),
# KVM=1 to use /dev/kvm instead of TCG.

set -eu

HERE=$(dirname "$(readlink -f "$0")")
TOP=$(cd "$HERE/../.." && pwd)
want=${1:?usage: run-vm.sh <kernel: 6.1, 6.12 or a full release>}

krel=$("$TOP/qemu/kernel-release" "$want") || exit 4
kimg=/boot/vmlinuz-$krel
[ -r "$kimg" ] || { echo "no $kimg" >&2; exit 4; }

vng=${VNG:-$TOP/.venv/vng/bin/vng}
[ -x "$vng" ] || vng=$(command -v vng) ||
	{ echo "virtme-ng not found (make deps); or set VNG" >&2; exit 4; }

# Built as the tests and make bench build it.
make -s -C "$TOP" hddsim KVER="$krel"
build=$HERE/build/$krel

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
