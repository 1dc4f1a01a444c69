// SPDX-License-Identifier: GPL-2.0
/*
 * guest-setup FSTAB DIR OPTIONS: what guest/init does before the job, in
 * one static program instead of four dynamically linked ones (mount three
 * times, ip). Under TCG with the test kernel the first exec of each of
 * those reads it and its libraries over 9p: 0.5-0.8 s apiece, in every VM.
 *
 *  1. Each line of FSTAB, in order, as "mount -a -T FSTAB" mounts it on a
 *     system where nothing is mounted yet: "defaults", "noauto" (the line
 *     is skipped) and the flags below are mount(8)'s, "X-mount.mkdir"
 *     makes the mount point (mode 0755, or X-mount.mkdir=MODE), other
 *     X- and x- options are ignored, every other option goes to the
 *     filesystem as its data. No \040 escapes: guest/fstab needs none.
 *  2. The host's run directory, the 9p share with mount tag "out", on DIR
 *     with the 9p OPTIONS.
 *  3. The loopback interface up ("ip link set lo up").
 *
 * A step that fails is reported on stderr (the console) and the others
 * still run, as in the shell; the exit status is 1 if any failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *name;
	unsigned long flag;
} flags[] = {
	{ "ro", MS_RDONLY },	{ "nosuid", MS_NOSUID },     { "nodev", MS_NODEV },
	{ "noexec", MS_NOEXEC }, { "noatime", MS_NOATIME }, { "relatime", MS_RELATIME },
};

static int failed;

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "guest-setup: %s %s: %s\n", what, path, strerror(errno));
	failed = 1;
}

static void mkdir_p(const char *path, mode_t mode)
{
	char p[4096];

	if (!*path || snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, mode);
}

/* One fstab entry: SOURCE TARGET TYPE OPTIONS [FREQ PASSNO]. */
static void mount_entry(char *line, int n)
{
	char *src, *dst, *type, *opts, *opt, *save, data[1024] = "";
	unsigned long mflags = 0;
	int mkdir_first = 0;
	mode_t mode = 0755;

	src = strtok_r(line, " \t\n", &save);
	if (!src || *src == '#')
		return;
	dst = strtok_r(NULL, " \t\n", &save);
	type = strtok_r(NULL, " \t\n", &save);
	opts = strtok_r(NULL, " \t\n", &save);
	if (!dst || !type || !opts) {
		fprintf(stderr, "guest-setup: fstab line %d: want SOURCE TARGET TYPE OPTIONS\n", n);
		failed = 1;
		return;
	}
	for (opt = strtok_r(opts, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		size_t i;

		if (!strcmp(opt, "defaults"))
			continue;
		if (!strcmp(opt, "noauto"))
			return;
		if (!strncasecmp(opt, "X-mount.mkdir", 13) && (!opt[13] || opt[13] == '=')) {
			mkdir_first = 1;
			if (opt[13])
				mode = strtoul(opt + 14, NULL, 8);
			continue;
		}
		if (!strncasecmp(opt, "X-", 2))
			continue;
		for (i = 0; i < ARRAY_SIZE(flags); i++)
			if (!strcmp(opt, flags[i].name))
				break;
		if (i < ARRAY_SIZE(flags)) {
			mflags |= flags[i].flag;
			continue;
		}
		if (strlen(data) + strlen(opt) + 2 > sizeof(data)) {
			fprintf(stderr, "guest-setup: fstab line %d: options too long\n", n);
			failed = 1;
			return;
		}
		if (*data)
			strcat(data, ",");
		strcat(data, opt);
	}
	if (mkdir_first)
		mkdir_p(dst, mode);
	if (mount(src, dst, type, mflags, *data ? data : NULL))
		fail("cannot mount", dst);
}

static void loopback_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		fail("cannot read the flags of", "lo");
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			fail("cannot bring up", "lo");
	}
	if (s >= 0)
		close(s);
}

int main(int argc, char **argv)
{
	char line[1024];
	struct stat st;
	FILE *f;
	int n = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: guest-setup FSTAB DIR 9P-OPTIONS\n");
		return 2;
	}
	f = fopen(argv[1], "re");
	if (!f) {
		fail("cannot read", argv[1]);
	} else {
		while (fgets(line, sizeof(line), f)) {
			n++;
			if (!strchr(line, '\n') && !feof(f)) {
				fprintf(stderr, "guest-setup: %s:%d: line too long\n", argv[1], n);
				failed = 1;
				while (fgets(line, sizeof(line), f) && !strchr(line, '\n'))
					;
				continue;
			}
			mount_entry(line, n);
		}
		fclose(f);
	}
	if (stat(argv[2], &st) || !S_ISDIR(st.st_mode))
		mkdir_p(argv[2], 0755);
	if (mount("out", argv[2], "9p", 0, argv[3]))
		fail("cannot mount the output directory at", argv[2]);
	loopback_up();
	return failed;
}
