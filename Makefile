# SPDX-License-Identifier: GPL-2.0-only
#
# dm-tac top-level Makefile.
#
#   make                 build dm-tac/dm-tac.ko for KDIR (see below)
#   make KVER=6.12       build for another installed kernel
#   make deps            install everything the tests and the demo need
#   make demo            boot a VM, create a dm-tac device, run fio, show status
#   make check           unit tests, qemu/vm's own tests, VM selftests on
#                        6.1 and 6.12, and the crash tests at CI size
#   make check-crash     the crash tests of write-back at full size
#   make check-unit      user-space unit tests (ASan/UBSan)
#   make check-vm        VM selftests on one kernel (KVER=6.1 by default)
#   make tools           user-space tools (tacsim, tracegen)
#   make bench-sim       trace-driven policy comparison
#   make bench-micro     dm-tac's overhead against dm-linear, RAM per block
#   make bench           dm-tac against dm-cache, bcache, dm-writecache
#   make dkms-install    build and install dm-tac with DKMS for every kernel
#                        with headers (DKMS_KERNELS="<release>..." for some)
#   make dkms-remove     remove it from DKMS and every kernel
#   make install         tacmeta, dm-tac-activate and the systemd unit
#                        (PREFIX=/usr/local, DESTDIR=)
#   make uninstall       remove them (not /etc/dm-tac/tactab)
#   make check-install   DKMS install and removal for 6.1 and 6.12 in a
#                        throwaway root, modprobe in a VM per kernel

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# Kernel selection.  KVER names an installed kernel: "6.1" or "6.12" (the
# newest installed point release of that series) or a full release such as
# "6.12.117+deb12-amd64".  KDIR overrides everything.  Without either:
# the running kernel's build tree if it has one, else the newest installed
# /usr/src/linux-headers-*-amd64.
ifndef KDIR
  ifdef KVER
    KREL := $(shell $(TOP)/qemu/kernel-release $(KVER))
    ifeq ($(KREL),)
      $(error no linux-headers installed for KVER=$(KVER); run 'make deps')
    endif
    KDIR := /usr/src/linux-headers-$(KREL)
  else ifneq ($(wildcard /lib/modules/$(shell uname -r)/build),)
    KDIR := /lib/modules/$(shell uname -r)/build
  else
    KREL := $(shell $(TOP)/qemu/kernel-release)
    KDIR := /usr/src/linux-headers-$(KREL)
  endif
endif
KREL := $(shell sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)

.PHONY: all module clean deps check check-crash check-unit check-vm demo tools bench-sim bench-micro bench-wb hddsim bench \
	dkms-install dkms-remove install uninstall check-install

all: module

# The module is built in dm-tac/ and a copy kept per kernel release in
# build/<release>/, which is what the VM runner loads.
module:
	@test -n "$(KREL)" || { echo "no kernel headers at '$(KDIR)'; run 'make deps'"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP)/dm-tac modules
	@mkdir -p build/$(KREL)
	@cp dm-tac/dm-tac.ko build/$(KREL)/dm-tac.ko

clean:
	-$(MAKE) -C $(KDIR) M=$(TOP)/dm-tac clean
	-$(MAKE) -C tests/unit clean
	-$(MAKE) -C tools clean

deps:
	@bash qemu/deps

# Everything: unit tests, the VM runner's own (tests/vmrunner, no VM) and
# the host half of the install tests (tests/install: make install, the
# systemd unit, DKMS's file list),
# the VM selftests on both LTS kernels, then the crash tests of
# write-back (tests/crash/README.md) at CI size: log replay and
# bad-metadata images on one kernel, 20 power cuts on the other, side by
# side.
CI_CRASH := WRITES=300 MAX_STATES=600 IMAGES=200 CYCLES=20
check: deps
	@$(CI_CRASH) bash tests/check.sh unit vmrunner install vm:6.1 vm:6.12 crash:selftest \
		crash:replay:6.1:tac+fuzz:6.1 crash:powercut:6.12:tac

# The crash tests at full size, both kernels, and the stacks that are
# broken on purpose (the tests must catch them).
check-crash: deps
	@bash tests/check.sh crash:selftest \
		crash:replay:6.1:tac+fuzz:6.1+powercut:6.1:tac+replay:6.1:lossy \
		crash:replay:6.12:tac+fuzz:6.12+powercut:6.12:tac+replay:6.12:noflush

check-unit:
	@bash tests/check.sh unit

# VM selftests on one kernel (KVER, default 6.1); TESTS= picks some.
check-vm: deps
	@bash tests/check.sh vm:$(or $(KVER),6.1)

demo: deps
	@qemu/vm --kernel $(or $(KVER),6.1) -- qemu/demo.sh

# dm-tac's own overhead: hit path vs dm-linear, miss path, RAM per block.
bench-micro: deps
	@qemu/vm --kernel $(or $(KVER),6.1) --memory 3G -- tests/perf/micro.sh

# Benchmarks against dm-cache, bcache and dm-writecache on an HDD model
# (issue 6), see tests/bench/README.md:
#   make bench [QUICK=1] [KVER="6.1 6.12"] [WORKLOADS=...] [CONTENDERS=...]
bench:
	@WITH_PLOTS=1 bash qemu/deps
	@KVER="$(or $(KVER),6.1)" QUICK="$(QUICK)" WORKLOADS="$(WORKLOADS)" \
		CONTENDERS="$(CONTENDERS)" tests/bench/bench.sh

# The test-only HDD model (tests/hddsim), built per kernel like dm-tac.
HDDSIM_KO = tests/hddsim/build/$(KREL)/dm-hddsim.ko
hddsim:
	@mkdir -p tests/hddsim/build/$(KREL)
	@cp tests/hddsim/dm-hddsim.c tests/hddsim/Kbuild tests/hddsim/build/$(KREL)/
	$(MAKE) -C $(KDIR) M=$(TOP)/tests/hddsim/build/$(KREL) modules

# Write-back vs write-through vs the origin alone, write-heavy.
bench-wb: deps
	@$(MAKE) -s hddsim KVER=$(or $(KVER),6.1) >/dev/null
	@qemu/vm --kernel $(or $(KVER),6.1) --memory 3G \
		--module tests/hddsim/build/$$(qemu/kernel-release $(or $(KVER),6.1))/dm-hddsim.ko \
		-- tests/perf/writeback.sh

tools:
	$(MAKE) -C tools

bench-sim:
	$(MAKE) -C tools bench-sim

# Installing (README.md, "Install").  The module goes through DKMS, which
# rebuilds it for new kernels; dm-tac/dkms.conf describes it.
dkms-install:
	@bash tools/dkms-install.sh install $(DKMS_KERNELS)

dkms-remove:
	@bash tools/dkms-install.sh remove

# The tools and boot-time activation: /etc/dm-tac/tactab (an example,
# never overwritten), dm-tac-activate, and dm-tac.service, which runs it
# before local file systems are mounted and stops the devices at shutdown.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
UNITDIR ?= $(PREFIX)/lib/systemd/system
install:
	install -D -m 755 tools/tacmeta $(DESTDIR)$(SBINDIR)/tacmeta
	install -D -m 755 tools/dm-tac-activate $(DESTDIR)$(SBINDIR)/dm-tac-activate
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|@SBINDIR@|$(SBINDIR)|g' tools/dm-tac.service.in \
		>$(DESTDIR)$(UNITDIR)/dm-tac.service
	chmod 644 $(DESTDIR)$(UNITDIR)/dm-tac.service
	test -e $(DESTDIR)/etc/dm-tac/tactab || \
		install -D -m 644 tools/tactab.example $(DESTDIR)/etc/dm-tac/tactab
	@if [ -z "$(DESTDIR)" ]; then \
		[ ! -d /run/systemd/system ] || systemctl daemon-reload; \
		echo "edit /etc/dm-tac/tactab, then: systemctl enable dm-tac.service"; \
	fi

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/tacmeta $(DESTDIR)$(SBINDIR)/dm-tac-activate \
		$(DESTDIR)$(UNITDIR)/dm-tac.service
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl daemon-reload; \
	fi

# The install tests (tests/install/check.sh): their host half, which make
# check runs too, and DKMS install and removal in a throwaway root, then
# modprobe in a VM per kernel, which it does not (see README, "Tests").
check-install:
	@WITH_DKMS=1 bash qemu/deps
	@bash tests/install/check.sh host dkms
