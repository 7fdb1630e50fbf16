// SPDX-License-Identifier: GPL-2.0-only
/*
 * The two dmsetup commands the crash tests need per replayed state, as
 * one small static program: in the VM, dmsetup (dynamically linked,
 * started over the 9p root under TCG) costs about a second per call,
 * which made replay over a dm stack crawl.
 *
 * usage: dmctl create NAME "START LEN TARGET ARGS..."   prints /dev/dm-N
 *        dmctl remove NAME                              retries while busy
 *
 * create is DM_DEV_CREATE, DM_TABLE_LOAD and a resume; a table the
 * target rejects removes the half-made device again and exits 1 (the
 * target's reason is in the kernel log, as with dmsetup).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define BUF_SIZE 16384

static int ctl;
static union {
	struct dm_ioctl io;
	char raw[BUF_SIZE];
} u;

static struct dm_ioctl *dm_prep(const char *name)
{
	memset(&u, 0, sizeof(u));
	u.io.version[0] = DM_VERSION_MAJOR;
	u.io.data_size = sizeof(u);
	u.io.data_start = sizeof(struct dm_ioctl);
	snprintf(u.io.name, sizeof(u.io.name), "%s", name);
	return &u.io;
}

static int dm_remove(const char *name)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (!ioctl(ctl, DM_DEV_REMOVE, dm_prep(name)))
			return 0;
		if (errno == ENXIO)
			return 0;	/* not there: nothing to do */
		if (errno != EBUSY)
			break;
		usleep(100000);
	}
	fprintf(stderr, "dmctl: remove %s: %s\n", name, strerror(errno));
	return 1;
}

static int dm_create(const char *name, const char *line)
{
	unsigned long long start, len;
	struct dm_target_spec *spec;
	char target[DM_MAX_TYPE_NAME];
	struct dm_ioctl *io;
	int n = 0, i;

	if (sscanf(line, "%llu %llu %15s %n", &start, &len, target, &n) != 3 ||
	    !n || strlen(line + n) + sizeof(*spec) + sizeof(struct dm_ioctl) +
			      8 > BUF_SIZE) {
		fprintf(stderr, "dmctl: bad table line '%s'\n", line);
		return 2;
	}
	if (ioctl(ctl, DM_DEV_CREATE, dm_prep(name))) {
		fprintf(stderr, "dmctl: create %s: %s\n", name, strerror(errno));
		return 1;
	}
	io = dm_prep(name);
	io->target_count = 1;
	spec = (struct dm_target_spec *)(u.raw + io->data_start);
	spec->sector_start = start;
	spec->length = len;
	snprintf(spec->target_type, sizeof(spec->target_type), "%s", target);
	strcpy((char *)(spec + 1), line + n);
	if (ioctl(ctl, DM_TABLE_LOAD, io)) {
		fprintf(stderr, "dmctl: load table of %s: %s (the kernel log "
			"says why)\n", name, strerror(errno));
		dm_remove(name);
		return 1;
	}
	if (ioctl(ctl, DM_DEV_SUSPEND, dm_prep(name))) {	/* resume */
		fprintf(stderr, "dmctl: resume %s: %s\n", name,
			strerror(errno));
		dm_remove(name);
		return 1;
	}
	if (ioctl(ctl, DM_DEV_STATUS, dm_prep(name))) {
		fprintf(stderr, "dmctl: status %s: %s\n", name,
			strerror(errno));
		return 1;
	}
	/* devtmpfs makes /dev/dm-N; give it a moment if it lags. */
	{
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/dev/dm-%u",
			 minor((dev_t)u.io.dev));
		for (i = 0; i < 50 && stat(path, &st); i++)
			usleep(20000);
		printf("%s\n", path);
	}
	return 0;
}

int main(int argc, char **argv)
{
	ctl = open("/dev/mapper/control", O_RDWR);
	if (ctl < 0) {
		fprintf(stderr, "dmctl: /dev/mapper/control: %s\n",
			strerror(errno));
		return 2;
	}
	if (argc == 4 && !strcmp(argv[1], "create"))
		return dm_create(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "remove"))
		return dm_remove(argv[2]);
	fprintf(stderr, "usage: dmctl create NAME 'START LEN TARGET ARGS' | "
		"dmctl remove NAME\n");
	return 2;
}
