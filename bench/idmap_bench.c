// SPDX-License-Identifier: GPL-2.0
/*
 * idmap-bench: what an idmapped mount of a tmpfs costs, against what users
 * do instead. Runs in the guest; prints one JSON object per measurement
 * (seconds of CLOCK_MONOTONIC per repetition) for scripts/bench-report.py.
 *
 * Configurations:
 *   plain       (a)  tmpfs
 *   idmapped    (b)  idmapped mount of a tmpfs mounted in the initial userns
 *   nested      (c)  idmapped mount of a tmpfs mounted in a user namespace,
 *                    used from a nested user namespace
 *   bindfs      (d)  bindfs --map over tmpfs (FUSE)
 *   ramfs       (b') idmapped mount of a ramfs
 *   copychown   (e)  giving a container a shifted view by copying the tree
 *                    and chowning every entry (the "view" workload only)
 *
 * Workloads on N files, in one directory ("flat") or 100 per directory
 * ("tree"): create, stat, readdir, chown, write4k, read4k, unlink; and
 * "view": the time to give a container a shifted view of a tree of N
 * files (one idmapped mount, or copy and chown).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <linux/securebits.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tests/idmap/userns.h"

#define ROOT "/tmp/bench"
#define SHIFT 100000		/* ids appear shifted by this through mounts */
#define PER_DIR 100		/* files per directory in the tree layout */

static long n_files = 100000;
static int reps = 5;
static int layouts = 3;	/* bit 0: flat, bit 1: tree */
static char buf4k[4096];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "idmap-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void report_skip(const char *config, const char *why)
{
	printf("{\"config\": \"%s\", \"skipped\": \"%s\"}\n", config, why);
	fflush(stdout);
}

static void report(const char *config, const char *layout, const char *workload,
		   long n, const double *t, int count)
{
	printf("{\"config\": \"%s\", \"layout\": \"%s\", \"workload\": \"%s\", \"n\": %ld, \"seconds\": [",
	       config, layout, workload, n);
	for (int i = 0; i < count; i++)
		printf("%s%.9f", i ? ", " : "", t[i]);
	printf("]}\n");
	fflush(stdout);
}

/* File i of the layout under @dir. */
static void file_path(char *p, size_t len, const char *dir, int tree, long i)
{
	if (tree)
		snprintf(p, len, "%s/d%ld/f%ld", dir, i / PER_DIR, i);
	else
		snprintf(p, len, "%s/f%ld", dir, i);
}

static void make_dirs(const char *dir, int tree, long n)
{
	char p[512];

	if (!tree)
		return;
	for (long d = 0; d < (n + PER_DIR - 1) / PER_DIR; d++) {
		snprintf(p, sizeof(p), "%s/d%ld", dir, d);
		if (mkdir(p, 0777) && errno != EEXIST)
			die(p);
	}
}

enum wl { W_CREATE, W_STAT, W_READDIR, W_CHOWN, W_WRITE, W_READ, W_UNLINK, W_NR };
static const char *const wl_name[] = {
	"create", "stat", "readdir", "chown", "write4k", "read4k", "unlink"
};

static void readdir_all(const char *dir, int tree, long n, long *count)
{
	char p[512];
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		die(dir);
	while ((e = readdir(d)))
		(*count)++;
	closedir(d);
	if (tree)
		for (long i = 0; i < (n + PER_DIR - 1) / PER_DIR; i++) {
			snprintf(p, sizeof(p), "%s/d%ld", dir, i);
			readdir_all(p, 0, 0, count);
		}
}

/* One cycle of every workload on @n files under @dir; times into t[]. */
static void cycle(const char *dir, int tree, long n, uid_t owner, double *t)
{
	char p[512];
	struct stat st;
	long count = 0;
	double t0;

	make_dirs(dir, tree, n);
	t0 = now();
	for (long i = 0; i < n; i++) {
		int fd;

		file_path(p, sizeof(p), dir, tree, i);
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			die(p);
		close(fd);
	}
	t[W_CREATE] = now() - t0;

	t0 = now();
	for (long i = 0; i < n; i++) {
		file_path(p, sizeof(p), dir, tree, i);
		if (stat(p, &st))
			die(p);
	}
	t[W_STAT] = now() - t0;

	t0 = now();
	readdir_all(dir, tree, n, &count);
	t[W_READDIR] = now() - t0;

	t0 = now();
	for (long i = 0; i < n; i++) {
		file_path(p, sizeof(p), dir, tree, i);
		if (chown(p, owner + (i & 1), owner + (i & 1)))
			die(p);
	}
	t[W_CHOWN] = now() - t0;

	t0 = now();
	for (long i = 0; i < n; i++) {
		int fd;

		file_path(p, sizeof(p), dir, tree, i);
		fd = open(p, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || pwrite(fd, buf4k, sizeof(buf4k), 0) != sizeof(buf4k))
			die(p);
		close(fd);
	}
	t[W_WRITE] = now() - t0;

	t0 = now();
	for (long i = 0; i < n; i++) {
		int fd;

		file_path(p, sizeof(p), dir, tree, i);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || pread(fd, buf4k, sizeof(buf4k), 0) != sizeof(buf4k))
			die(p);
		close(fd);
	}
	t[W_READ] = now() - t0;

	t0 = now();
	for (long i = 0; i < n; i++) {
		file_path(p, sizeof(p), dir, tree, i);
		if (unlink(p))
			die(p);
	}
	t[W_UNLINK] = now() - t0;
}

/* Warm-up, then @reps measured cycles of both layouts; report each. */
static void run_workloads(const char *config, const char *dir, uid_t owner)
{
	double t[W_NR], all[W_NR][64];

	for (int tree = 0; tree <= 1; tree++) {
		if (!(layouts & (1 << tree)))
			continue;
		cycle(dir, tree, n_files, owner, t);	/* warm-up */
		for (int r = 0; r < reps; r++) {
			cycle(dir, tree, n_files, owner, t);
			for (int w = 0; w < W_NR; w++)
				all[w][r] = t[w];
		}
		for (int w = 0; w < W_NR; w++)
			report(config, tree ? "tree" : "flat", wl_name[w], n_files, all[w], reps);
	}
}

static void mount_fs(const char *type, const char *dir)
{
	mkdir(dir, 0755);
	if (mount("bench", dir, type, 0, "mode=0777,nr_inodes=0"))
		die(dir);
}

/* (b), (b'): idmapped mount of a filesystem mounted in the initial userns. */
static void config_idmapped(const char *config, const char *type)
{
	char fs[64], mnt[64], map[64];
	int ns, err;

	snprintf(fs, sizeof(fs), ROOT "/%s-fs", config);
	snprintf(mnt, sizeof(mnt), ROOT "/%s", config);
	mount_fs(type, fs);
	mkdir(mnt, 0755);
	snprintf(map, sizeof(map), "0 %d 65536\n", SHIFT);
	ns = userns_fd(map);
	if (ns < 0)
		die("user namespace");
	err = idmap_mount(fs, mnt, ns, 0);
	close(ns);
	if (err) {
		char why[128];

		snprintf(why, sizeof(why), "%s refuses idmapped mounts (%s): kernel without the series",
			 type, strerror(-err));
		report_skip(config, why);
		umount2(fs, MNT_DETACH);
		return;
	}
	/*
	 * Act as the owner the mount shows (the filesystem's root appears as
	 * SHIFT), keeping root's capabilities as in the other configurations.
	 */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP))
		die("securebits");
	setfsgid(SHIFT);
	setfsuid(SHIFT);
	run_workloads(config, mnt, SHIFT + 1000);
	setfsuid(0);
	setfsgid(0);
	prctl(PR_SET_SECUREBITS, 0);
	umount2(mnt, MNT_DETACH);
	umount2(fs, MNT_DETACH);
}

/*
 * (c): a rootless container (0 -> 100000) mounts tmpfs and idmaps it
 * (fs 0..9999 -> container 10000..19999); a nested container (0 ->
 * container 10000) uses it. Runs in a child; output goes to our stdout.
 */
static void config_nested(void)
{
	const char *fs = ROOT "/nested-fs", *mnt = ROOT "/nested";
	int status, ns, err;
	pid_t pid;

	mkdir(fs, 0777);
	mkdir(mnt, 0777);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (become_root_in("0 100000 65536\n", CLONE_NEWNS, 1000))
			die("container user namespace");
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			die("private");
		mount_fs("tmpfs", fs);
		ns = userns_fd("0 10000 10000\n");
		if (ns < 0)
			die("mount user namespace");
		err = idmap_mount(fs, mnt, ns, 0);
		close(ns);
		if (err) {
			report_skip("nested", "tmpfs mounted in a user namespace refuses idmapped mounts: kernel without the series");
			_exit(0);
		}
		if (become_root_in("0 10000 10000\n", 0, -1))
			die("nested user namespace");
		run_workloads("nested", mnt, 1000);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "idmap-bench: nested configuration failed\n");
}

/* (d): bindfs --map=0/SHIFT over tmpfs, the FUSE alternative. */
static void config_bindfs(void)
{
	const char *fs = ROOT "/bindfs-fs", *mnt = ROOT "/bindfs";
	char cmd[512];

	if (system("command -v bindfs >/dev/null 2>&1")) {
		report_skip("bindfs", "bindfs is not installed (Debian package bindfs)");
		return;
	}
	if (access("/dev/fuse", R_OK | W_OK)) {
		report_skip("bindfs", "no /dev/fuse (kernel without CONFIG_FUSE_FS)");
		return;
	}
	mount_fs("tmpfs", fs);
	mkdir(mnt, 0755);
	snprintf(cmd, sizeof(cmd), "bindfs --map=0/%d:@0/@%d %s %s", SHIFT, SHIFT, fs, mnt);
	if (system(cmd)) {
		report_skip("bindfs", "bindfs failed to mount");
		umount2(fs, MNT_DETACH);
		return;
	}
	run_workloads("bindfs", mnt, SHIFT + 1000);
	umount2(mnt, MNT_DETACH);
	umount2(fs, MNT_DETACH);
}

/*
 * A tree of @n empty files (100 per directory) to give a container a view
 * of. Empty keeps 1,000,000 files within the guest's memory, and makes
 * copy-and-chown look cheaper than it is with real file contents.
 */
static void fill_tree(const char *dir, long n)
{
	char p[512];

	make_dirs(dir, 1, n);
	for (long i = 0; i < n; i++) {
		int fd;

		file_path(p, sizeof(p), dir, 1, i);
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			die(p);
		close(fd);
	}
}

/* Copy the tree and chown every entry by SHIFT: what engines do per map. */
static void copy_chown(const char *src, const char *dst, long n)
{
	char s[512], d[512];

	mkdir(dst, 0755);
	if (chown(dst, SHIFT, SHIFT))
		die(dst);
	for (long i = 0; i < (n + PER_DIR - 1) / PER_DIR; i++) {
		snprintf(d, sizeof(d), "%s/d%ld", dst, i);
		if (mkdir(d, 0777) || chown(d, SHIFT, SHIFT))
			die(d);
	}
	for (long i = 0; i < n; i++) {
		int in, out;
		ssize_t len;

		file_path(s, sizeof(s), src, 1, i);
		file_path(d, sizeof(d), dst, 1, i);
		in = open(s, O_RDONLY | O_CLOEXEC);
		out = open(d, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (in < 0 || out < 0)
			die(s);
		len = read(in, buf4k, sizeof(buf4k));
		if (len < 0 || write(out, buf4k, len) != len || fchown(out, SHIFT, SHIFT))
			die(d);
		close(in);
		close(out);
	}
}

/* "view": one idmapped mount vs copy-and-chown, for each N in @sizes. */
static void run_view(const char *sizes)
{
	char list[256], *tok, *save = NULL;

	snprintf(list, sizeof(list), "%s", sizes);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *fs = ROOT "/view-fs", *mnt = ROOT "/view", *copy = ROOT "/view-fs/copy";
		long n = atol(tok);
		double idm[64], cc[64], t0;
		int ns, err = 0, r;

		mount_fs("tmpfs", fs);
		mkdir(mnt, 0755);
		fill_tree(fs, n);
		for (r = -1; r < reps && !err; r++) {	/* r == -1: warm-up */
			char map[64];

			snprintf(map, sizeof(map), "0 %d 65536\n", SHIFT);
			t0 = now();
			ns = userns_fd(map);
			err = ns < 0 ? -EINVAL : idmap_mount(fs, mnt, ns, 0);
			if (ns >= 0)
				close(ns);
			if (r >= 0)
				idm[r] = now() - t0;
			if (!err)
				umount2(mnt, MNT_DETACH);
		}
		if (err)
			report_skip("idmapped", "tmpfs refuses idmapped mounts: kernel without the series");
		else
			report("idmapped", "tree", "view", n, idm, reps);

		for (r = -1; r < reps; r++) {
			char cmd[128];

			t0 = now();
			copy_chown(fs, copy, n);
			if (r >= 0)
				cc[r] = now() - t0;
			snprintf(cmd, sizeof(cmd), "rm -rf %s", copy);
			if (system(cmd))
				die("rm");
		}
		report("copychown", "tree", "view", n, cc, reps);
		umount2(fs, MNT_DETACH);
	}
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: idmap-bench [--n=N] [--reps=R] [--view=N1,N2,...] [--layout=L] CONFIG...\n"
		"  CONFIG: plain idmapped nested bindfs ramfs view (view: idmapped vs copychown)\n"
		"  N: 1..2000000 files (default 100000); R: 1..50 (default 5)\n"
		"  L: flat, tree or both (default): the layouts the workloads run on\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "n", required_argument, NULL, 'n' },
		{ "reps", required_argument, NULL, 'r' },
		{ "view", required_argument, NULL, 'v' },
		{ "layout", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *view = "1000,10000,100000,1000000";
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			n_files = strtol(optarg, &end, 10);
			if (*end || n_files < 1 || n_files > 2000000) {
				fprintf(stderr, "idmap-bench: --n=%s: out of range 1..2000000\n", optarg);
				return 2;
			}
			break;
		case 'r':
			reps = strtol(optarg, &end, 10);
			if (*end || reps < 1 || reps > 50) {
				fprintf(stderr, "idmap-bench: --reps=%s: out of range 1..50\n", optarg);
				return 2;
			}
			break;
		case 'v':
			view = optarg;
			for (const char *p = view; *p; p++)
				if ((*p < '0' || *p > '9') && *p != ',') {
					fprintf(stderr, "idmap-bench: --view=%s: expected N1,N2,...\n", view);
					return 2;
				}
			break;
		case 'l':
			if (!strcmp(optarg, "flat")) {
				layouts = 1;
			} else if (!strcmp(optarg, "tree")) {
				layouts = 2;
			} else if (!strcmp(optarg, "both")) {
				layouts = 3;
			} else {
				fprintf(stderr, "idmap-bench: --layout=%s: expected flat, tree or both\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		static const char *const known[] = { "plain", "idmapped", "nested",
						     "bindfs", "ramfs", "view" };
		int ok = 0;

		for (unsigned int k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			ok |= !strcmp(argv[i], known[k]);
		if (!ok) {
			fprintf(stderr, "idmap-bench: unknown configuration '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		die("mount namespace");
	mkdir(ROOT, 0755);
	if (mount("bench", ROOT, "tmpfs", 0, "mode=0755"))
		die(ROOT);
	memset(buf4k, 'x', sizeof(buf4k));

	for (int i = optind; i < argc; i++) {
		if (!strcmp(argv[i], "plain")) {
			mount_fs("tmpfs", ROOT "/plain");
			run_workloads("plain", ROOT "/plain", 1000);
			umount2(ROOT "/plain", MNT_DETACH);
		} else if (!strcmp(argv[i], "idmapped")) {
			config_idmapped("idmapped", "tmpfs");
		} else if (!strcmp(argv[i], "ramfs")) {
			config_idmapped("ramfs", "ramfs");
		} else if (!strcmp(argv[i], "nested")) {
			config_nested();
		} else if (!strcmp(argv[i], "bindfs")) {
			config_bindfs();
		} else if (!strcmp(argv[i], "view")) {
			run_view(view);
		}
	}
	return 0;
}
