#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Host-side test of qemu/vm itself (it must never hang on a KVM that cannot boot a guest): how it chooses between KVM
# and TCG, and its stall watchdog.  No VM boots and no KVM is needed: a
# stand-in qemu-system-x86_64 (fake/) comes first in PATH, where
# virtme-ng looks QEMU up, and hangs, aborts or "boots" by running the
# guest script on the host.  VM_KVM_DEV points qemu/vm at a writable
# file in place of /dev/kvm, so the probe runs on any machine.
#
#   tests/vmrunner/run.sh     TAP lines, then "N passed, N failed"
#
# Takes about half a minute, most of it the deliberate hangs and silences.
# Every qemu/vm run is bounded (--timeout 15, and timeout(1) around it),
# so a qemu/vm that waits on a hung guest fails here instead of hanging.
# Time limits are loose (other VMs load this host): each only has to
# tell the wanted path from the slow one it replaces, a probe limit or
# the --timeout.

set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d /tmp/vmrunner.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

export PATH=$here/fake:$PATH
export VM_KVM_DEV=$tmp/kvm
export FAKE_QEMU_LOG=$tmp/starts
: >"$VM_KVM_DEV"
unset VM_KVM VM_KVM_CACHE VM_KVM_PROBE_TIMEOUT FAKE_QEMU_KVM FAKE_QEMU_TCG

n=0 passed=0 failed=0

# check DESC CONDITION...: one TAP line; on failure, what qemu/vm said.
check() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		passed=$((passed + 1))
		echo "ok $n - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $n - $desc"
		echo "#   exit $rc after ${secs}s; stdout: $(tr '\n' ' ' <"$tmp/out")"
		sed 's/^/#   stderr: /' "$tmp/err"
		echo "#   QEMU starts: $(starts)"
	fi
}

# vm [ARG...] -- CMD: qemu/vm on the default kernel, no dm-tac; sets rc
# and secs, stdout and stderr in $tmp/out and $tmp/err, and clears the
# record of QEMU starts first.
vm() {
	local t0
	: >"$FAKE_QEMU_LOG"
	t0=$(date +%s.%N)
	timeout 60 "$top/qemu/vm" --no-dm-tac --timeout 15 --log "$tmp/console" \
		--rwdir "$tmp/rw" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	secs=$(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")
}

starts() { paste -s -d ',' "$FAKE_QEMU_LOG"; }
said() { grep -q -e "$1" "$tmp/err"; }
printed() { grep -q -x -e "$1" "$tmp/out"; }
# within LIMIT [SECS]: SECS (default: the last run's) <= LIMIT
within() {
	local t=$secs
	[ $# -lt 2 ] || t=$2
	[ -n "$t" ] && [ "$(echo "$t <= $1" | bc)" = 1 ]
}
# how long the probe took, by qemu/vm's own account
probe_secs() { sed -n 's/.*under KVM in \([0-9.]*\)s.*/\1/p' "$tmp/err" | head -n 1; }
is() { [ "$1" = "$2" ]; }
cached() { ls "$1"/*-* 2>/dev/null | grep -v -E '\.(lock|log)$' | head -n 1; }

if ! "$top/qemu/kernel-release" 6.1 >/dev/null ||
   [ ! -x "$top/.venv/vng/bin/vng" ]; then
	echo "Bail out! no kernel 6.1 or no virtme-ng (make deps)"
	echo "0 passed, 1 failed"
	exit 1
fi

# 1. A KVM whose guest hangs (console stops at "Probing EDD") is found
# out within the probe's limit and TCG is used.  The stall watchdog
# (120 s) is far away: the probe's own limit must do it.
export VM_KVM_CACHE=$tmp/cache-hang
VM_KVM_PROBE_TIMEOUT=5 FAKE_QEMU_KVM=hang vm -- echo hello
check "hanging KVM: the run succeeds under TCG" \
	eval 'is "$rc" 0 && printed hello && is "$(starts)" "KVM hang,TCG boot"'
check "hanging KVM: stderr says TCG, from the probe" \
	said '^vm: TCG, from the probe (.*did not boot.*TIMEOUT'
# Elapsed times are bounded loosely (a loaded host is slow): they only
# tell "gave up at a limit" from "waited for the 15 s timeout".
check "hanging KVM: the probe gave up at its limit, before the run's 15 s timeout ($(probe_secs)s, run ${secs}s <= 14)" \
	eval 'within 14 "$(probe_secs)" && within 14'
check "hanging KVM: the verdict is cached" \
	eval 'grep -q "^kvm=no" "$(cached "$VM_KVM_CACHE")" 2>/dev/null'

# 2. The cached verdict is used without a boot.
VM_KVM_PROBE_TIMEOUT=5 FAKE_QEMU_KVM=hang vm -- echo again
check "cache: no probe boot, only the TCG run" \
	eval 'is "$rc" 0 && printed again && is "$(starts)" "TCG boot"'
check "cache: stderr says TCG, from the cache" \
	said '^vm: TCG, from the cache (the probe of .*did not boot'

# The key holds the guest kernel: another kernel is probed afresh.
if "$top/qemu/kernel-release" 6.12 >/dev/null 2>&1; then
	VM_KVM_PROBE_TIMEOUT=3 FAKE_QEMU_KVM=abort vm --kernel 6.12 -- true
	check "cache: another kernel gets its own probe" \
		eval 'is "$rc" 0 && said "^vm: TCG, from the probe" && is "$(starts)" "KVM abort,TCG boot"'
fi

# A KVM that makes QEMU abort at once (this machine's) costs no wait.
export VM_KVM_CACHE=$tmp/cache-abort
FAKE_QEMU_KVM=abort vm -- true
check "aborting KVM: TCG from the probe, QEMU's complaint quoted, no 30 s wait (${secs}s <= 14)" \
	eval 'is "$rc" 0 && said "^vm: TCG, from the probe (.*failed to set MSR 0x10a" && within 14'

# A KVM that works is used, and so is its cached verdict.
export VM_KVM_CACHE=$tmp/cache-good
FAKE_QEMU_KVM=boot vm -- echo fast
check "working KVM: KVM, from the probe" \
	eval 'is "$rc" 0 && printed fast && said "^vm: KVM, from the probe (.*booted" && is "$(starts)" "KVM boot,KVM boot"'
FAKE_QEMU_KVM=boot vm -- true
check "working KVM: KVM, from the cache, no probe boot" \
	eval 'is "$rc" 0 && said "^vm: KVM, from the cache" && is "$(starts)" "KVM boot"'

# 3. The overrides: no probe, no cache.
export VM_KVM_CACHE=$tmp/cache-override
VM_KVM=no FAKE_QEMU_KVM=hang vm -- echo tcg
check "VM_KVM=no: TCG without a probe" \
	eval 'is "$rc" 0 && printed tcg && said "^vm: TCG, from the override VM_KVM=no" && is "$(starts)" "TCG boot" && [ -z "$(cached "$VM_KVM_CACHE")" ]'
VM_KVM_CACHE=$tmp/cache-hang VM_KVM=yes FAKE_QEMU_KVM=boot vm -- echo kvm
check "VM_KVM=yes: KVM without a probe, whatever the cache says" \
	eval 'is "$rc" 0 && printed kvm && said "^vm: KVM, from the override VM_KVM=yes" && is "$(starts)" "KVM boot"'
VM_KVM=yes vm --kvm no -- true
check "--kvm no wins over VM_KVM=yes" \
	eval 'is "$rc" 0 && said "^vm: TCG, from the override --kvm no" && is "$(starts)" "TCG boot"'
VM_KVM=maybe vm -- true
check "VM_KVM=maybe is refused" \
	eval 'is "$rc" 125 && said "VM_KVM=maybe: auto, yes or no" && is "$(starts)" ""'
# Not qemu/vm's doing, but what "make demo VM_KVM=no" (README) relies on.
check "make puts VM_KVM=no from its command line into a recipe's environment" \
	eval '[ "$(make -s -f - VM_KVM=no <<<"x: ; @echo \$\$VM_KVM")" = no ]'

# 4. The stall watchdog: a guest silent on its console before its command
# started is killed and reported; a silent command, or a slow boot that
# keeps talking, is not.
export VM_KVM=no
FAKE_QEMU_TCG=hang vm --stall-timeout 2 -- true
check "silent boot: killed, 'no console output for 2 s', exit 125, before the 15 s timeout (${secs}s <= 14)" \
	eval 'is "$rc" 125 && said "no console output for 2 s" && within 14'
FAKE_QEMU_TCG=boot vm --stall-timeout 1 -- sh -c 'sleep 3; echo done'
check "silent command after its start: not killed" \
	eval 'is "$rc" 0 && printed done'
FAKE_QEMU_TCG=slowboot vm --stall-timeout 2 -- echo up
check "slow boot that keeps printing: not killed" \
	eval 'is "$rc" 0 && printed up'
VM_KVM=yes FAKE_QEMU_KVM=hang vm --stall-timeout 2 -- true
check "silent boot under KVM: the report suggests VM_KVM=no" \
	eval 'is "$rc" 125 && said "no console output for 2 s.*VM_KVM=no"'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
