// SPDX-License-Identifier: GPL-2.0
/*
 * Mount, idmap, unmount and tear down namespaces many times (LEAK_CYCLES,
 * default 10000) and check that no user namespace outlives its cycle.
 *
 * Slab counts cannot tell (KASAN's quarantine keeps freed objects), so
 * this uses the kernel's own accounting: every live user namespace is
 * charged to its creator's uid up to the initial namespace, where
 * /proc/sys/user/max_user_namespaces caps it. With the cap lowered, the
 * number of namespaces uid 1000 can still create is its free budget; a
 * leaked namespace uses up budget for good. kmemleak, scanned by the
 * guest init afterwards, catches leaked memory that is not a namespace.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "userns.h"
#include "kselftest_harness.h"

#define CAP 64	/* max_user_namespaces during the test */

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

static int cycles(int n, const char *dir)
{
	char fs[256], mnt[256];

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

/* Under TCG and KASAN a cycle takes ~0.2 s: allow 45 minutes. */
TEST_F_TIMEOUT(leak, mount_idmap_umount_cycles_leak_nothing, 2700)
{
	const char *env = getenv("LEAK_CYCLES");
	int n = env ? atoi(env) : 10000, status, before, after;
	char dir[] = "/tmp/leak.XXXXXX", sub[64], cap[16];
	pid_t pid;

	ASSERT_NE(mkdtemp(dir), NULL);
	ASSERT_EQ(chmod(dir, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/fs", dir);
	ASSERT_EQ(mkdir(sub, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/mnt", dir);
	ASSERT_EQ(mkdir(sub, 0777), 0);
	snprintf(cap, sizeof(cap), "%d\n", CAP);
	ASSERT_EQ(write_file("/proc/sys/user/max_user_namespaces", cap), 0);

	before = settled_budget(CAP);
	TH_LOG("namespace budget of uid 1000 before: %d of %d", before, CAP);
	ASSERT_GT(before, CAP / 2);

	pid = fork();
	if (pid == 0)
		_exit(cycles(n, dir));
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0) TH_LOG("cycle step %d failed", WEXITSTATUS(status));

	after = settled_budget(before);
	TH_LOG("%d cycles; budget after: %d (a leaked namespace lowers it)", n, after);
	EXPECT_EQ(after, before);
}

TEST_HARNESS_MAIN
