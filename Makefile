# SPDX-License-Identifier: GPL-2.0-only
#
# dm-tac top-level Makefile.
#
#   make                 build dm-tac/dm-tac.ko for KDIR (see below)
#   make KVER=6.12       build for another installed kernel
#   make deps            install everything the tests and the demo need
#   make demo            boot a VM: the disk model alone, dm-tac, dm-cache
#   make check           unit tests, qemu/vm's own tests, the install tests'
#                        host half, VM selftests on 6.1 and 6.12, and the
#                        crash tests at CI size
#   make check-crash     the crash tests of write-back at full size
#   make check-unit      user-space unit tests (ASan/UBSan)
#   make check-vm        VM selftests on one kernel (KVER=6.1 by default)
#   make debug-kernel    build (once) and install a KASAN + lockdep + UBSAN
#                        + kmemleak 6.12 kernel from Debian's linux-source
#   make check-debug     check's VM and crash tests on that kernel
#   make check-torture   tac_torture.sh alone, 2 CPUs (KVER, TORTURE_SECONDS)
#   make tools           user-space tools (tacsim, tracegen)
#   make bench-sim       trace-driven policy comparison
#   make bench-micro     dm-tac's overhead against dm-linear and dm-cache,
#                        RAM per block (ROUNDS, ROUND_S)
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

.PHONY: all module clean deps check check-crash check-unit check-vm check-torture check-debug debug-kernel demo tools bench-sim bench-micro bench-wb hddsim bench \
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
# systemd unit, DKMS's file list), the VM selftests on both LTS kernels,
# the crash tests of write-back (tests/crash/README.md) at CI size, and
# tac_coherence.sh, tac_streams.sh and tac_lockless.sh of 6.1 in a VM of
# their own with 2 CPUs, so that races run in parallel and a reader can
# change CPUs.  Every test of the I/O path runs on both kernels; those of
# the module's own logic on one (ONE_KERNEL_TESTS in tests/check.sh),
# and each kernel tortures a different half of the (mode, block size)
# pairs, every mode on each (TORTURE_SHARE).  The VMs and the crash
# tests (log replay and bad-metadata images on 6.1, 6 power cuts on
# 6.12) run as a queue, two at a time on 2 cores, longest first.  The CI
# has 30 minutes: the whole of it took 35.6 on an idle 2-core host before
# the tests were shared out between the kernels (README.md, "Tests").
CI_CRASH := WRITES=300 MAX_STATES=150 IMAGES=80 CYCLES=5
check: deps
	@$(CI_CRASH) TORTURE_SECONDS=32 TORTURE_SHARE=1 bash tests/check.sh \
		unit vmrunner install crash:selftest vm:6.1 vm:6.12 vm2:6.1 \
		crash:powercut:6.12:tac crash:replay:6.1:tac \
		beside:crash:fuzz:6.1

# The crash tests at full size, both kernels, with 8 and 64 KiB blocks
# behind dm-delay (completions later, from another context), and the
# stacks that are broken on purpose (the tests must catch them).
check-crash: deps
	@bash tests/check.sh crash:selftest \
		crash:replay:6.1:tac+replay:6.1:tac-8k-delay+fuzz:6.1+powercut:6.1:tac+replay:6.1:lossy \
		crash:replay:6.12:tac+replay:6.12:tac-64k-delay+fuzz:6.12+powercut:6.12:tac+replay:6.12:noflush

check-unit:
	@bash tests/check.sh unit

# VM selftests on one kernel (KVER, default 6.1); TESTS= picks some.
check-vm: deps
	@bash tests/check.sh vm:$(or $(KVER),6.1)

# The torture test alone, with 2 CPUs: TORTURE_SECONDS of random load
# (default 90) shared by its scenarios; from 400 on they are repeated.
TORTURE_SECONDS ?= 90
check-torture: deps
	@$(MAKE) -s -C tests/torture
	@mkdir -p out/torture
	@qemu/vm --kernel $(or $(KVER),6.1) --cpus 2 \
		--timeout $$((3 * $(TORTURE_SECONDS) + 1500)) \
		--rwdir out/torture --log out/torture/console.log -- \
		env TORTURE_SECONDS=$(TORTURE_SECONDS) \
		tests/selftests/run_all.sh -t $$((3 * $(TORTURE_SECONDS) + 1200)) \
		tac_torture.sh

# dm-tac under the kernel's own checkers: Debian's linux-source-6.12 with
# KASAN, lockdep, UBSAN, kmemleak and debug objects (qemu/debug.config),
# built once (40 minutes on 2 cores, measured on a busy host) and cached outside the clone in
# /var/cache/dm-tac/debug-kernel/<key>; see qemu/debug-kernel.  Not part
# of "check": the build alone would take most of CI's time.
debug-kernel: deps
	@bash qemu/debug-kernel

# The VM selftests (torture included) shared out among two VMs side by
# side, the crash tests at CI size each taking the first of their places
# that frees, then the 2-CPU ones, on that kernel.  KASAN and lockdep slow a test down 5 to 25 times under
# TCG: the limits per test and per VM are raised.
check-debug: deps
	@bash qemu/debug-kernel >&2
	@rel=$$(bash qemu/debug-kernel --release) && \
	VM_SPLIT=$${VM_SPLIT:-2} TAC_TEST_TIMEOUT=$${TAC_TEST_TIMEOUT:-2400} \
	VM_TIMEOUT=$${VM_TIMEOUT:-14400} VM_STALL_TIMEOUT=$${VM_STALL_TIMEOUT:-900} \
	$(CI_CRASH) bash tests/check.sh vm:$$rel vm2:$$rel \
		crash:replay:$$rel:tac+fuzz:$$rel crash:powercut:$$rel:tac

# The disk alone, dm-tac and dm-cache on the HDD model (tests/hddsim),
# built for the kernel as for bench-wb.
demo: deps
	@$(MAKE) -s hddsim KVER=$(or $(KVER),6.1) >/dev/null
	@qemu/vm --kernel $(or $(KVER),6.1) \
		--module tests/hddsim/build/$$(qemu/kernel-release $(or $(KVER),6.1))/dm-hddsim.ko \
		-- qemu/demo.sh

# dm-tac's own overhead: hit path vs dm-linear and dm-cache smq (iodepth 1,
# 16, 32, 2 jobs; CPU time per I/O; BS=8k for reads of a database page),
# miss path without admissions, write-back write hits (with and without
# fsyncs) vs dm-linear, RAM per block.  The devices of a comparison are
# measured side by side in ROUNDS
# (5) rounds of ROUND_S (2) second runs each, interleaved: median, min and
# max IOPS, and medians of the ratios taken within each round.
bench-micro: deps
	@qemu/vm --kernel $(or $(KVER),6.1) --memory 3G -- env \
		$(if $(ROUNDS),ROUNDS=$(ROUNDS)) $(if $(ROUND_S),ROUND_S=$(ROUND_S)) \
		$(if $(BS),BS=$(BS)) $(if $(WARM_BS),WARM_BS=$(WARM_BS)) \
		bench/perf/micro.sh

# Benchmarks against dm-cache, bcache and dm-writecache on an HDD model
# (the comparison with the caches users have), see bench/compare/README.md:
#   make bench [QUICK=1] [KVER="6.1 6.12"] [WORKLOADS=...] [CONTENDERS=...]
bench:
	@WITH_PLOTS=1 WITH_MARIADB=1 bash qemu/deps
	@KVER="$(or $(KVER),6.1)" QUICK="$(QUICK)" WORKLOADS="$(WORKLOADS)" \
		CONTENDERS="$(CONTENDERS)" bench/compare/bench.sh

# The test-only HDD model (tests/hddsim), built per kernel like dm-tac:
# the one way it is built (the tests, make bench, tests/hddsim/run-vm.sh).
hddsim:
	@mkdir -p tests/hddsim/build/$(KREL)
	@cp -p tests/hddsim/dm-hddsim.c tests/hddsim/Kbuild tests/hddsim/build/$(KREL)/
	$(MAKE) -C $(KDIR) M=$(TOP)/tests/hddsim/build/$(KREL) modules W=1

# Write-back vs write-through vs the origin alone, write-heavy.
bench-wb: deps
	@$(MAKE) -s hddsim KVER=$(or $(KVER),6.1) >/dev/null
	@qemu/vm --kernel $(or $(KVER),6.1) --memory 3G \
		--module tests/hddsim/build/$$(qemu/kernel-release $(or $(KVER),6.1))/dm-hddsim.ko \
		-- bench/perf/writeback.sh

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
