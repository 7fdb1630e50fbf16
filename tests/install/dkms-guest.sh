#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# In a VM booted with 'qemu/vm --no-dm-tac': is the DKMS build of dm-tac
# that tests/install/check.sh installed into a throwaway root found by
# name, like any module of the kernel?
#
#   tests/install/dkms-guest.sh STAGE
#
# STAGE/lib/modules/<release>/ holds what 'make dkms-install' added to
# /lib/modules/<release>/ (updates/dkms/dm-tac.ko*, the new modules.dep
# and friends).  It is laid over the host's read-only /lib/modules/<release>
# with a read-only overlay, which is what the guest would see had the
# install been done on the host itself.  TAP output (lib.sh).

. "$(dirname "$0")/../selftests/lib.sh"
require modprobe modinfo dmsetup losetup

stage=${1:?usage: dkms-guest.sh STAGE}
rel=$(uname -r)
mods=/lib/modules/$rel
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$TOP/dm-tac/dkms.conf")

[ -d "$stage$mods" ] || ksft_skip "nothing staged for $rel in $stage"
if grep -q '^dm_tac ' /proc/modules; then
	tap_fail "dm-tac is not loaded before the test (qemu/vm --no-dm-tac)" "it is"
	tap_done
fi
check_cmd "the staged install is laid over $mods" \
	mount -t overlay dkms-stage -o "lowerdir=$stage$mods:$mods" "$mods"
at_exit "umount '$mods'"

path=$(modinfo -n dm-tac 2>&1)
case $path in
"$mods"/updates/dkms/dm-tac.ko*) tap_ok "modinfo finds dm-tac in updates/dkms ($path)" ;;
*) tap_fail "modinfo finds dm-tac in updates/dkms" "modinfo -n dm-tac: $path" ;;
esac
dep=$(grep "^updates/dkms/dm-tac.ko[^:]*:" "$mods/modules.dep")
case $dep in
*kernel/drivers/md/dm-mod.ko*) echo "$dep" | grep -q kernel/lib/libcrc32c.ko &&
	tap_ok "modules.dep lists it with dm-mod and libcrc32c" ||
	tap_fail "modules.dep lists it with dm-mod and libcrc32c" "'$dep'" ;;
*) tap_fail "modules.dep lists it with dm-mod and libcrc32c" "'$dep'" ;;
esac
# -v: modprobe says which file it loads.
how=$(modprobe -v dm-tac 2>&1)
check_eq "modprobe dm-tac loads the DKMS build" "insmod $path" \
	"$(echo "$how" | grep dm-tac | sed 's/ *$//')"
check_eq "lsmod shows dm_tac" dm_tac "$(lsmod | awk '$1 == "dm_tac" { print $1 }')"
check_eq "dmsetup targets: tac at the DKMS package's version" "v$version" \
	"$(dmsetup targets | awk '$1 == "tac" { print $2 }')"

# It works: a device over two loop devices, data in and out.
scratch_dev origin 16 || ksft_skip "no loop devices"
scratch_dev cache 8
if tac_create dkmstac "$origin" "$cache" 8; then
	dd if=/dev/urandom of="$_scratch/data" bs=1M count=4 status=none
	dd if="$_scratch/data" of=/dev/mapper/dkmstac bs=1M oflag=direct status=none
	check_eq "a dm-tac device of the DKMS build returns what was written" \
		"$(md5sum <"$_scratch/data" | cut -d' ' -f1)" \
		"$(dev_md5 /dev/mapper/dkmstac 0 4)"
	dm_remove dkmstac
else
	tap_fail "a dm-tac device of the DKMS build returns what was written" \
		"dmsetup create failed: $(dmesg | grep tac | tail -n 1)"
fi

# Device-mapper loads a target's module by name on first use.
check_cmd "modprobe -r dm-tac" modprobe -r dm-tac
if tac_create dkmstac "$origin" "$cache" 8; then
	check_eq "a 'tac' table loads dm-tac by itself" dm_tac \
		"$(lsmod | awk '$1 == "dm_tac" { print $1 }')"
	dm_remove dkmstac
else
	tap_fail "a 'tac' table loads dm-tac by itself" \
		"dmsetup create failed: $(dmesg | tail -n 2 | tr '\n' ' ')"
fi
modprobe -r dm-tac 2>/dev/null

tap_done
