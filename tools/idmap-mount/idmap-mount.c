// SPDX-License-Identifier: GPL-2.0
/*
 * idmap-mount: create an idmapped mount of SOURCE at TARGET.
 *
 * open_tree(OPEN_TREE_CLONE) detaches a copy of SOURCE, mount_setattr()
 * attaches the idmapping (a user namespace, made here from --map specs or
 * given with --userns), move_mount() attaches it at TARGET. The mapping
 * syntax is util-linux's (X-mount.idmap, mount-idmapped): b|u|g:FROM:TO:RANGE,
 * written into the namespace's uid_map/gid_map as "FROM TO RANGE".
 *
 * Exit status: 0 done, 1 the kernel refused, 2 bad usage or mapping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/mount.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "idmap-spec.h"

static const char *prog = "idmap-mount";

static void usage(FILE *out)
{
	fprintf(out,
"NAME\n"
"    idmap-mount - create an idmapped mount\n"
"\n"
"SYNOPSIS\n"
"    idmap-mount [--recursive] [--readonly] --map=SPEC... SOURCE TARGET\n"
"    idmap-mount [--recursive] [--readonly] --userns=PATH SOURCE TARGET\n"
"\n"
"DESCRIPTION\n"
"    Makes the mount tree at SOURCE visible at TARGET with its file\n"
"    ownership translated through an idmapping. Nothing is copied or\n"
"    chowned: the kernel translates ids on every access. SOURCE may be a\n"
"    filesystem mounted in a user namespace (e.g. a rootless container's\n"
"    tmpfs); the caller then needs CAP_SYS_ADMIN in that namespace only.\n"
"\n"
"    The kernel refuses the initial idmapping, the filesystem's own\n"
"    idmapping, a mount that is already idmapped and filesystems that do\n"
"    not support idmapped mounts; each refusal is explained.\n"
"\n"
"OPTIONS\n"
"    -m, --map=SPEC\n"
"        One extent of the idmapping, in util-linux syntax\n"
"        TYPE:FROM:TO:RANGE, repeatable. TYPE is u (user ids), g (group\n"
"        ids) or b (both). RANGE ids starting at FROM, the ids as the\n"
"        filesystem's user namespace sees them, appear through the mount\n"
"        as the ids starting at TO, as the caller's user namespace sees\n"
"        them. Ids outside every extent appear as the overflow id (65534)\n"
"        and cannot be written. Up to %d extents per type; extents of a\n"
"        type must not overlap on either side; FROM+RANGE and TO+RANGE\n"
"        must not exceed 4294967295.\n"
"    -u, --userns=PATH\n"
"        Use the idmapping of an existing user namespace, e.g.\n"
"        /proc/PID/ns/user, instead of --map.\n"
"    -r, --recursive\n"
"        Clone and idmap the whole mount tree below SOURCE.\n"
"        Default: SOURCE's mount only.\n"
"        --readonly\n"
"        Make the new mount read-only.\n"
"    -n, --dry-run\n"
"        Check the mapping and print it in uid_map form; change nothing.\n"
"    -h, --help\n"
"        Show this text.\n"
"\n"
"EXAMPLES\n"
"    idmap-mount --map=b:0:100000:65536 /srv/image /run/ctr/rootfs\n"
"        Files owned by 0..65535 in /srv/image appear owned by\n"
"        100000..165535 under /run/ctr/rootfs.\n"
"    idmap-mount --map=u:1000:0:1 --map=g:1000:0:1 ~/src /mnt/src\n"
"        uid and gid 1000 appear as 0; every other id as 65534.\n"
"    idmap-mount --userns=/proc/1234/ns/user --readonly /data /mnt/data\n"
"\n"
"EXIT STATUS\n"
"    0 success, 1 the kernel or the system refused, 2 bad arguments.\n",
		IDMAP_MAX_EXTENTS);
}

/* Write @text to /proc/@pid/@file. */
static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	ssize_t len = strlen(text), n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n != len) {
		int err = n < 0 ? -errno : -EIO;

		close(fd);
		return err;
	}
	close(fd);
	return 0;
}

/*
 * Make a user namespace carrying @map and return an fd for it. A child
 * unshares and waits; the parent writes its maps, opens its namespace and
 * lets it go.
 */
static int make_userns(const struct idmap *map)
{
	char *text, path[64];
	int pipefd[2], fd, err, status;
	pid_t pid;
	char c;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(pipefd[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWUSER))
			_exit(1);
		/* Parent closes its end when done. */
		if (read(pipefd[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(pipefd[0]);

	/* The child has unshared once its uid_map is writable. */
	err = -EAGAIN;
	for (int i = 0; i < 2000 && err; i++) {
		char self[64], child[64];
		struct stat a, b;

		snprintf(self, sizeof(self), "/proc/self/ns/user");
		snprintf(child, sizeof(child), "/proc/%d/ns/user", pid);
		if (stat(self, &a) == 0 && stat(child, &b) == 0 &&
		    a.st_ino != b.st_ino)
			err = 0;
		else
			usleep(1000);
	}
	if (!err) {
		text = idmap_format(map, IDMAP_UID);
		err = text ? write_proc(pid, "uid_map", text) : -ENOMEM;
		free(text);
	}
	if (!err) {
		text = idmap_format(map, IDMAP_GID);
		err = text ? write_proc(pid, "gid_map", text) : -ENOMEM;
		free(text);
	}
	fd = -1;
	if (!err) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			err = -errno;
	}
	close(pipefd[1]);
	waitpid(pid, &status, 0);
	return err ? err : fd;
}

static int open_tree_clone(const char *source, bool recursive)
{
	return syscall(SYS_open_tree, AT_FDCWD, source,
		       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
		       (recursive ? AT_RECURSIVE : 0));
}

static int set_idmap(int tree, int userns, bool recursive, bool readonly)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_IDMAP | (readonly ? MOUNT_ATTR_RDONLY : 0),
		.userns_fd = userns,
	};

	return syscall(SYS_mount_setattr, tree, "",
		       AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
		       &attr, sizeof(attr));
}

/* Is the mount holding @path idmapped already? (mountinfo says so) */
static bool mount_is_idmapped(const char *path)
{
	struct statx stx;
	char *line = NULL;
	size_t len = 0;
	bool found = false;
	FILE *f;

	if (statx(AT_FDCWD, path, 0, STATX_MNT_ID, &stx) ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return false;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (getline(&line, &len, f) > 0) {
		char *opts = NULL;
		uint64_t id;

		if (sscanf(line, "%" SCNu64, &id) != 1 || id != stx.stx_mnt_id)
			continue;
		/* fields: id parent maj:min root mountpoint options ... */
		opts = line;
		for (int i = 0; i < 5 && opts; i++) {
			opts = strchr(opts, ' ');
			if (opts)
				opts++;
		}
		found = opts && strstr(opts, "idmapped") &&
			strstr(opts, "idmapped") < strchr(opts, ' ');
		break;
	}
	free(line);
	fclose(f);
	return found;
}

/* Is @userns the initial user namespace (it has no parent)? */
static bool userns_is_initial(int userns)
{
	int parent = ioctl(userns, NS_GET_PARENT);

	if (parent >= 0) {
		close(parent);
		return false;
	}
	/* EPERM: no parent at all, or the parent is outside our reach. */
	return errno == EPERM;
}

/*
 * EINVAL with an existing namespace: is it the filesystem's own idmapping,
 * or does the filesystem not support idmapped mounts at all? A fresh
 * namespace cannot be the filesystem's, so try one on another clone.
 */
static bool fs_supports_idmap(const char *source, bool recursive)
{
	struct idmap probe = { 0 };
	char spec[64];
	int tree, ns, ret;

	snprintf(spec, sizeof(spec), "b:0:%u:1", (unsigned int)getuid());
	if (idmap_add_spec(&probe, spec, NULL, 0))
		return true;
	ns = make_userns(&probe);
	if (ns < 0)
		return true;
	tree = open_tree_clone(source, recursive);
	if (tree < 0) {
		close(ns);
		return true;
	}
	ret = set_idmap(tree, ns, recursive, false);
	close(tree);
	close(ns);
	return ret == 0 || errno != EINVAL;
}

static const char *explain_setattr(int err, const char *source, int userns,
				   bool given_userns, bool recursive)
{
	switch (err) {
	case EINVAL:
		if (given_userns && fs_supports_idmap(source, recursive))
			return "this is the filesystem's own idmapping (the user namespace it was mounted in); use a different namespace with the same map";
		return "the filesystem does not support idmapped mounts";
	case EPERM:
		if (mount_is_idmapped(source))
			return "the source mount is already idmapped; idmap its underlying mount instead";
		if (userns_is_initial(userns))
			return "the initial idmapping cannot be attached to a mount (it marks a mount as not idmapped)";
		return "no CAP_SYS_ADMIN over the filesystem's user namespace";
	case EBADF:
		return "the user namespace file descriptor is not valid";
	case ENOSYS:
		return "this kernel has no mount_setattr() (Linux 5.12 or later needed)";
	default:
		return strerror(err);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "map", required_argument, NULL, 'm' },
		{ "userns", required_argument, NULL, 'u' },
		{ "recursive", no_argument, NULL, 'r' },
		{ "readonly", no_argument, NULL, 'R' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool recursive = false, readonly = false, dry_run = false;
	const char *userns_path = NULL, *source, *target;
	struct idmap map = { 0 };
	char err[256];
	int opt, userns, tree;

	while ((opt = getopt_long(argc, argv, "m:u:rnh", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (idmap_add_spec(&map, optarg, err, sizeof(err))) {
				fprintf(stderr, "%s: bad --map '%s': %s\n", prog, optarg, err);
				return 2;
			}
			break;
		case 'u':
			userns_path = optarg;
			break;
		case 'r':
			recursive = true;
			break;
		case 'R':
			readonly = true;
			break;
		case 'n':
			dry_run = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try '%s --help'.\n", prog);
			return 2;
		}
	}
	if (!!userns_path == !!(map.nr[IDMAP_UID] || map.nr[IDMAP_GID])) {
		fprintf(stderr, "%s: give either --map (one or more) or --userns\n", prog);
		return 2;
	}
	if (!userns_path && (!map.nr[IDMAP_UID] || !map.nr[IDMAP_GID])) {
		fprintf(stderr, "%s: the mapping needs user and group extents (use b: or both u: and g:)\n",
			prog);
		return 2;
	}
	if (dry_run) {
		char *u = idmap_format(&map, IDMAP_UID), *g = idmap_format(&map, IDMAP_GID);

		printf("uid_map:\n%sgid_map:\n%s", u ? u : "", g ? g : "");
		free(u);
		free(g);
		return 0;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "%s: need SOURCE and TARGET\nTry '%s --help'.\n", prog, prog);
		return 2;
	}
	source = argv[optind];
	target = argv[optind + 1];

	if (userns_path) {
		userns = open(userns_path, O_RDONLY | O_CLOEXEC);
		if (userns < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, userns_path, strerror(errno));
			return 1;
		}
	} else {
		userns = make_userns(&map);
		if (userns < 0) {
			fprintf(stderr, "%s: cannot create a user namespace with this mapping: %s%s\n",
				prog, strerror(-userns),
				userns == -EPERM ? " (the TO ids must be mapped in your user namespace and you need CAP_SETUID/CAP_SETGID there)" : "");
			return 1;
		}
	}

	tree = open_tree_clone(source, recursive);
	if (tree < 0) {
		fprintf(stderr, "%s: open_tree %s: %s%s\n", prog, source, strerror(errno),
			errno == EPERM ? " (cloning a mount needs CAP_SYS_ADMIN in the mount namespace's user namespace)" : "");
		return 1;
	}
	if (set_idmap(tree, userns, recursive, readonly)) {
		int e = errno;

		fprintf(stderr, "%s: mount_setattr %s: %s: %s\n", prog, source, strerror(e),
			explain_setattr(e, source, userns, userns_path, recursive));
		return 1;
	}
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH)) {
		fprintf(stderr, "%s: move_mount to %s: %s\n", prog, target, strerror(errno));
		return 1;
	}
	return 0;
}
