# SPDX-License-Identifier: GPL-2.0-only
#
# dm-tac top-level Makefile.
#
#   make                 build dm-tac/dm-tac.ko for KDIR (see below)
#   make KVER=6.12       build for another installed kernel
#   make deps            install everything the tests and the demo need
#   make demo            boot a VM, create a dm-tac device, run fio, show status
#   make check           unit tests + VM selftests on 6.1 and 6.12
#   make check-unit      user-space unit tests (ASan/UBSan)
#   make check-vm        VM selftests on one kernel (KVER=6.1 by default)
#   make tools           user-space tools (tacsim, tracegen)
#   make bench-sim       trace-driven policy comparison

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# Kernel selection.  KVER is a prefix of an installed release ("6.1",
# "6.12", or a full "6.12.117+deb12-amd64"); KDIR overrides everything.
find_release = $(lastword $(sort $(patsubst /usr/src/linux-headers-%,%,\
	$(wildcard /usr/src/linux-headers-$(1)*-amd64))))
ifdef KVER
  KREL := $(call find_release,$(KVER).)
  ifeq ($(KREL),)
    KREL := $(call find_release,$(KVER))
  endif
  ifeq ($(KREL),)
    $(error no linux-headers installed for KVER=$(KVER); run 'make deps')
  endif
  KDIR ?= /usr/src/linux-headers-$(KREL)
else
  ifneq ($(wildcard /lib/modules/$(shell uname -r)/build),)
    KDIR ?= /lib/modules/$(shell uname -r)/build
  else
    KREL := $(call find_release,)
    KDIR ?= /usr/src/linux-headers-$(KREL)
  endif
endif

.PHONY: all module clean deps check check-unit check-vm tools bench-sim

all: module

module:
	$(MAKE) -C $(KDIR) M=$(TOP)/dm-tac modules

clean:
	-$(MAKE) -C $(KDIR) M=$(TOP)/dm-tac clean
	-$(MAKE) -C tests/unit clean
	-$(MAKE) -C tools clean

check-unit:
	$(MAKE) -C tests/unit check

tools:
	$(MAKE) -C tools

bench-sim:
	$(MAKE) -C tools bench-sim
