// SPDX-License-Identifier: GPL-2.0
/*
 * Mount, idmap, unmount and tear down namespaces many times (LEAK_CYCLES,
 * default 2000) and check that every object the cycles create is gone
 * afterwards: each count below must be back at its start value.
 *
 * The counts are exact: one object leaked by every cycle, or by any one
 * of them, shows at the end, and kmemleak needs only one too. What more
 * cycles buy is chances for a leak that needs a rare timing: the
 * teardown (free_user_ns() from a workqueue, the detached mounts' and
 * superblocks' RCU-delayed frees) overlaps the next cycle. 2,000 cycles
 * are a trade-off for make check's time: 10,000 took 215-283 s of its
 * idmap area under TCG (28 ms a cycle); LEAK_CYCLES=10000 is the longer
 * run for a change to those paths.
 *
 *  namespace budget   every live user namespace is charged to its
 *                     creator's uid up to the initial namespace, where
 *                     /proc/sys/user/max_user_namespaces caps it. With the
 *                     cap lowered, the number of namespaces uid 1000 can
 *                     still create is its free budget; a leaked namespace
 *                     uses up budget for good.
 *  user_namespace,    live objects of these slab caches (/proc/slabinfo
 *  mnt_cache,         active_objs). KASAN's quarantine keeps freed objects
 *  shmem_inode_cache  counted as active, and CPU slabs count their free
 *                     objects as active; writing 1 to
 *                     /sys/kernel/slab/CACHE/shrink empties both
 *                     (kmem_cache_shrink(): kasan_cache_shrink(), then
 *                     flush_all()), so the count read right after is the
 *                     number of live objects. slab_nomerge (vm.conf) keeps
 *                     each in a cache of its own; checked below.
 *  inodes             nr_inodes of /proc/sys/fs/inode-nr, kept by
 *                     alloc_inode() and __destroy_inode() themselves, after
 *                     dropping the dentry and inode caches.
 *  superblocks        the first free anonymous device number, as a fresh
 *                     tmpfs gets it (get_anon_bdev() takes the lowest free
 *                     number, kill_anon_super() returns it at once): a
 *                     leaked tmpfs or ramfs superblock keeps its number.
 *
 * Freeing is deferred (RCU, workqueues), so counts are read until they
 * are stable at the start and until they equal the start values at the
 * end, for a bounded time. kmemleak, scanned by the guest init afterwards,
 * catches leaked memory none of these counts.
 *
 * LEAK_HOLD, for showing that the check fails for the right reason only
 * (never set by guest.sh): in the last tmpfs cycle the test keeps
 *  fd     an open file of the idmapped mount (so the detached mount, its
 *         superblock, two shmem inodes and the mount's user namespace),
 *  mntns  the cycles' mount namespace, as the cycles go on in a copy
 *         (so that namespace's mounts, the tmpfs and its user namespaces),
 * until the end counts are read, then closes it and reads them again.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>

#include "userns.h"
#include "kselftest_harness.h"

#define CAP 64	/* max_user_namespaces during the test */

enum { C_USERNS, C_MNT, C_SHMEM, C_INODES, C_SB, NR_COUNTS };

static const char *const slab_cache[] = {
	[C_USERNS] = "user_namespace",
	[C_MNT] = "mnt_cache",
	[C_SHMEM] = "shmem_inode_cache",
};

static const char *const count_name[NR_COUNTS] = {
	[C_USERNS] = "user namespaces (user_namespace slab objects)",
	[C_MNT] = "mounts (mnt_cache slab objects)",
	[C_SHMEM] = "shmem inodes (shmem_inode_cache slab objects)",
	[C_INODES] = "inodes (nr_inodes, /proc/sys/fs/inode-nr)",
	[C_SB] = "superblocks (first free anonymous device minor)",
};

/* ---- the counts ---- */

static long read_long(const char *path)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

/* Live objects of @cache, with quarantine and CPU slabs emptied first. */
static long slab_live(const char *cache)
{
	char path[128], line[512], name[64];
	long active = -1, n;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", cache);
	if (write_file(path, "1"))
		return -1;
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %ld", name, &n) == 2 && strcmp(name, cache) == 0) {
			active = n;
			break;
		}
	}
	fclose(f);
	return active;
}

static int sys_fsopen(const char *fs, unsigned int flags)
{
	return syscall(SYS_fsopen, fs, flags);
}

static int sys_fsconfig(int fd, unsigned int cmd, const char *key,
			const void *value, int aux)
{
	return syscall(SYS_fsconfig, fd, cmd, key, value, aux);
}

static int sys_fsmount(int fd, unsigned int flags, unsigned int attrs)
{
	return syscall(SYS_fsmount, fd, flags, attrs);
}

/* The anonymous device minor a new superblock gets now (and frees). */
static long first_free_anon_minor(void)
{
	int fsfd, mfd;
	struct stat st;
	long minor = -1;

	fsfd = sys_fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return -1;
	if (sys_fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0) {
		mfd = sys_fsmount(fsfd, FSMOUNT_CLOEXEC, 0);
		if (mfd >= 0) {
			if (fstat(mfd, &st) == 0 && major(st.st_dev) == 0)
				minor = minor(st.st_dev);
			close(mfd);
		}
	}
	close(fsfd);
	return minor;
}

static void read_counts(long *v)
{
	/* Unused dentries and inodes go; their RCU frees need a moment. */
	write_file("/proc/sys/vm/drop_caches", "2");
	usleep(300000);
	v[C_USERNS] = slab_live(slab_cache[C_USERNS]);
	v[C_MNT] = slab_live(slab_cache[C_MNT]);
	v[C_SHMEM] = slab_live(slab_cache[C_SHMEM]);
	v[C_INODES] = read_long("/proc/sys/fs/inode-nr");
	/* Last: the probe's mount and inode are freed by the next read. */
	v[C_SB] = first_free_anon_minor();
}

static int same(const long *a, const long *b)
{
	return memcmp(a, b, NR_COUNTS * sizeof(*a)) == 0;
}

/* Start values: read until three reads in a row agree. */
static int settle_start(long *v)
{
	long prev[NR_COUNTS];
	int agree = 0;

	read_counts(prev);
	for (int i = 0; i < 100; i++) {
		read_counts(v);
		agree = same(v, prev) ? agree + 1 : 0;
		if (agree == 2)
			return 0;
		memcpy(prev, v, sizeof(prev));
	}
	return -1;
}

/* End values: read until they equal @start, for up to ~60 s. */
static void settle_end(long *v, const long *start)
{
	for (int i = 0; i < 100; i++) {
		read_counts(v);
		if (same(v, start))
			return;
		usleep(300000);
	}
}

/* How many namespaces uid 1000 can create at once (in a child). */
static int budget(void)
{
	int fds[CAP + 1], n = 0, status;
	int pipefd[2];
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		unsigned char count = 0;

		close(pipefd[0]);
		/* One namespace for the container itself... */
		if (become_root_in("0 100000 65536\n", 0, 1000))
			_exit(1);
		count = 1;
		/* ...and as many more as the budget allows. */
		while (count < CAP + 1) {
			fds[n] = userns_fd("0 0 1\n");
			if (fds[n] < 0)
				break;
			n++;
			count++;
		}
		if (write(pipefd[1], &count, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(pipefd[1]);
	{
		unsigned char count = 0;

		if (read(pipefd[0], &count, 1) != 1)
			count = 0;
		close(pipefd[0]);
		waitpid(pid, &status, 0);
		return count;
	}
}

/* Budget once deferred frees (RCU, workqueue) have had time to run. */
static int settled_budget(int want)
{
	int b = budget();

	for (int i = 0; i < 50 && b < want; i++) {
		usleep(200000);
		b = budget();
	}
	return b;
}

/* ---- holding a reference, for the demonstration only ---- */

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* In the last tmpfs cycle: hand the parent a reference to keep. */
static int hold(const char *what, const char *fs, const char *mnt, int sock)
{
	char p[300];
	int fd;

	if (strcmp(what, "fd") == 0) {
		snprintf(p, sizeof(p), "%s/held", fs);
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return -1;
		close(fd);
		snprintf(p, sizeof(p), "%s/held", mnt);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	} else if (strcmp(what, "mntns") == 0) {
		fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
		/* Go on in a copy; this namespace keeps its mounts. */
		if (fd >= 0 && unshare(CLONE_NEWNS)) {
			close(fd);
			fd = -1;
		}
	} else {
		return -1;
	}
	if (fd < 0 || send_fd(sock, fd))
		return -1;
	close(fd);
	return 0;
}

static int cycles(int n, const char *dir, const char *what, int sock)
{
	char fs[256], mnt[256];
	int last_tmpfs = (n - 1) & ~1;

	snprintf(fs, sizeof(fs), "%s/fs", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	/* A rootless container: everything below happens inside it. */
	if (become_root_in("0 100000 65536\n", CLONE_NEWNS, 1000))
		return 1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 2;
	for (int i = 0; i < n; i++) {
		int ns;

		if (mount("c", fs, i % 2 ? "ramfs" : "tmpfs", 0, NULL))
			return 3;
		ns = userns_fd("0 1000 1000\n");
		if (ns < 0)
			return 4;
		if (idmap_mount(fs, mnt, ns, 0))
			return 5;
		close(ns);
		if (what && i == last_tmpfs && hold(what, fs, mnt, sock))
			return 7;
		if (umount2(mnt, MNT_DETACH) || umount2(fs, MNT_DETACH))
			return 6;
		if (i && i % 1000 == 0)
			fprintf(stderr, "# %d cycles\n", i);
	}
	return 0;
}

FIXTURE(leak) {
	char saved[32];
};

FIXTURE_SETUP(leak)
{
	int fd = open("/proc/sys/user/max_user_namespaces", O_RDONLY);
	ssize_t n;

	ASSERT_GE(fd, 0);
	n = read(fd, self->saved, sizeof(self->saved) - 1);
	ASSERT_GT(n, 0);
	self->saved[n] = 0;
	close(fd);
}

FIXTURE_TEARDOWN(leak)
{
	write_file("/proc/sys/user/max_user_namespaces", self->saved);
}

/* Under TCG and KASAN a cycle takes 28 ms, up to ~0.2 s on a busy host. */
TEST_F_TIMEOUT(leak, mount_idmap_umount_cycles_leak_nothing, 2700)
{
	const char *env = getenv("LEAK_CYCLES"), *what = getenv("LEAK_HOLD");
	int n = env ? atoi(env) : 2000, status, before, after, sv[2], held;
	char dir[] = "/tmp/leak.XXXXXX", sub[64], cap[16];
	long start[NR_COUNTS], end[NR_COUNTS];
	pid_t pid;

	/* Each counted cache must be a cache of its own (slab_nomerge). */
	for (unsigned int i = 0; i < sizeof(slab_cache) / sizeof(slab_cache[0]); i++) {
		snprintf(sub, sizeof(sub), "/sys/kernel/slab/%s/aliases", slab_cache[i]);
		ASSERT_EQ(read_long(sub), 0) {
			TH_LOG("%s is shared with other caches: boot with slab_nomerge",
			       slab_cache[i]);
		}
	}
	ASSERT_NE(mkdtemp(dir), NULL);
	ASSERT_EQ(chmod(dir, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/fs", dir);
	ASSERT_EQ(mkdir(sub, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/mnt", dir);
	ASSERT_EQ(mkdir(sub, 0777), 0);
	snprintf(cap, sizeof(cap), "%d\n", CAP);
	ASSERT_EQ(write_file("/proc/sys/user/max_user_namespaces", cap), 0);
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);

	before = settled_budget(CAP);
	TH_LOG("namespace budget of uid 1000 before: %d of %d", before, CAP);
	ASSERT_GT(before, CAP / 2);
	ASSERT_EQ(settle_start(start), 0) TH_LOG("the counts never settled");
	for (int i = 0; i < NR_COUNTS; i++) {
		ASSERT_GE(start[i], 0) {
			TH_LOG("cannot read %s", count_name[i]);
		}
	}

	pid = fork();
	if (pid == 0)
		_exit(cycles(n, dir, what, sv[1]));
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0) TH_LOG("cycle step %d failed", WEXITSTATUS(status));
	held = recv_fd(sv[0]);
	if (what)
		TH_LOG("LEAK_HOLD=%s: holding fd %d until the counts are read", what, held);

	settle_end(end, start);
	after = settled_budget(before);
	TH_LOG("%d cycles", n);
	TH_LOG("namespace budget of uid 1000: start %d, end %d", before, after);
	for (int i = 0; i < NR_COUNTS; i++)
		TH_LOG("%s: start %ld, end %ld", count_name[i], start[i], end[i]);
	if (held >= 0) {
		long again[NR_COUNTS];

		close(held);
		settle_end(again, start);
		TH_LOG("after closing the held fd, the counts are %s the start values",
		       same(again, start) ? "back at" : "still not at");
	}
	snprintf(sub, sizeof(sub), "%s/fs", dir);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/mnt", dir);
	rmdir(sub);
	rmdir(dir);
	EXPECT_EQ(after, before)
		TH_LOG("leak: namespace budget of uid 1000: start %d, end %d", before, after);
	for (int i = 0; i < NR_COUNTS; i++) {
		EXPECT_EQ(end[i], start[i]) {
			TH_LOG("leak: %s: start %ld, end %ld", count_name[i], start[i], end[i]);
		}
	}
}

TEST_HARNESS_MAIN
