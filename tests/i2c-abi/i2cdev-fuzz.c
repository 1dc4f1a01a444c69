// SPDX-License-Identifier: GPL-2.0
/*
 * i2cdev-fuzz: random i2c-dev requests, for a bounded number of
 * iterations, on the given buses: I2C_SMBUS with every transaction size
 * from 0 to 300 (the SMBus 3.0 ones included), I2C_RDWR with random
 * messages, flags (I2C_M_RECV_LEN, I2C_M_RECV_LEN_255, ...) and lengths,
 * the other ioctls, read() and write(); data pointers valid, NULL, unmapped
 * or kernel addresses.
 *
 * Besides surviving (the harness scans the console for reports, and a
 * request that takes over 10 s counts as a hang), it checks what the ABI
 * promises about buffers: nothing is written past the size the ABI gives
 * a request (34 bytes for the classic SMBus sizes, 257 for the SMBus 3.0
 * ones, len for an I2C_RDWR message: a message's buffer is as long as its
 * len, up to i2c-dev's 8192, with a guard after it), and a classic SMBus
 * request whose 34 bytes end at an unmapped page never fails with EFAULT
 * (the kernel does not read or write beyond them).
 *
 * Built as a 64-bit and as a 32-bit program (tests/i2c-abi/Makefile): the
 * 32-bit one reaches i2c-dev through compat_i2cdev_ioctl(), which
 * translates i2c_rdwr_ioctl_data, i2c_msg and i2c_smbus_ioctl_data from
 * their 32-bit layouts. The same seed makes the same requests on both.
 *
 *   i2cdev-fuzz [-s SEED] [-n ITERATIONS] BUS...
 *
 * Each run takes a new seed from getrandom() unless one is given, with -s
 * or in the environment as I2CDEV_FUZZ_SEED; it prints the seed first,
 * and every failure message names the seed and the iteration, so that a
 * failing run can be repeated exactly (same seed, same buses, same
 * targets).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "smbus3.h"

#define GUARD 0xa5
#define AREA 300		/* an SMBus request's buffer; most messages' */
#define MSG_MAX 8192		/* i2c-dev's limit of an I2C_RDWR message */
#define GUARD_LEN 256
#define MAX_MSGS 45

/* size bytes of data (AREA or a message's len), then GUARD_LEN of guard */
struct area {
	unsigned char buf[MSG_MAX + GUARD_LEN];
	size_t size;
};

static uint64_t rng;
static unsigned long seed, iteration;
static char hang_msg[160];
static struct area areas[MAX_MSGS];
static unsigned char *tight;	/* 34 bytes ending at an unmapped page */
static unsigned long violations, iterations;
static unsigned long errnos[256], successes;
static const char *current = "";

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng >> 11;
}

static uint32_t below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static void on_alarm(int sig)
{
	(void)sig;
	/* async-signal-safe: write() only; hang_msg names the seed */
	char num[24], *p = num + sizeof(num);
	unsigned long v = iteration;
	ssize_t r;

	do
		*--p = '0' + v % 10;
	while (v /= 10);
	r = write(2, hang_msg, strlen(hang_msg));
	r = write(2, p, num + sizeof(num) - p);
	r = write(2, ": ", 2);
	r = write(2, current, strlen(current));
	r = write(2, "\n", 1);
	(void)r;
	_exit(1);
}

static unsigned char before[MAX_MSGS][MSG_MAX];

static void fill(int i, size_t size)
{
	size_t j;

	areas[i].size = size;
	for (j = 0; j < size; j++)
		areas[i].buf[j] = rnd();
	memset(areas[i].buf + size, GUARD, GUARD_LEN);
}

static void snapshot(int i)
{
	memcpy(before[i], areas[i].buf, areas[i].size);
}

/* Bytes from @abi_size on must be as they were, guard included. */
static void check_area(int i, size_t abi_size, const char *what)
{
	size_t j;

	for (j = abi_size; j < areas[i].size + GUARD_LEN; j++) {
		unsigned char was = j < areas[i].size ? before[i][j] : GUARD;

		if (areas[i].buf[j] != was) {
			fprintf(stderr, "VIOLATION (seed %lu, iteration %lu): %s wrote byte %zu, past its %zu bytes\n",
				seed, iteration, what, j, abi_size);
			violations++;
			return;
		}
	}
}

/* How many bytes of data the ABI lets an I2C_SMBUS request of @size touch */
static size_t smbus_abi_size(int size)
{
	if (size >= 0 && size <= I2C_SMBUS_I2C_BLOCK_DATA)
		return sizeof(union i2c_smbus_data);
	if (size >= I2C_SMBUS3_BLOCK_DATA && size <= I2C_SMBUS3_I2C_BLOCK_DATA)
		return I2C_SMBUS3_BLOCK_MAX + 2;
	return 0;
}

static void *bogus_pointer(void)
{
	static void *const ptrs[] = {
		/* on a 32-bit build: 0x81000000, 0xfffff000 (above a compat
		 * task's TASK_SIZE) and 0xffffffff
		 */
		(void *)1, (void *)4096, (void *)(uintptr_t)0xffffffff81000000ULL,
		(void *)(uintptr_t)0x00007ffffffff000ULL, (void *)(uintptr_t)-1,
	};

	return ptrs[below(sizeof(ptrs) / sizeof(ptrs[0]))];
}

static void count(long ret)
{
	if (ret >= 0)
		successes++;
	else
		errnos[errno & 255]++;
}

static int pick_size(void)
{
	switch (below(4)) {
	case 0:
		return below(301);
	case 1:
		return I2C_SMBUS3_BLOCK_DATA + below(3);
	default:
		return below(12);
	}
}

static void fuzz_smbus(int fd)
{
	struct i2c_smbus_ioctl_data args;
	int size = pick_size(), kind = below(8);
	long ret;

	args.read_write = below(8) ? below(2) : rnd();
	args.command = rnd();
	args.size = size;
	fill(0, AREA);
	if (below(3) == 0)
		areas[0].buf[0] = below(40);	/* block lengths near the limits */
	else if (below(2))
		areas[0].buf[0] = 200 + below(56);
	snapshot(0);
	if (kind == 0)
		args.data = NULL;
	else if (kind == 1)
		args.data = bogus_pointer();
	else if (kind == 2 && size <= I2C_SMBUS_I2C_BLOCK_DATA) {
		args.data = (union i2c_smbus_data *)tight;
		memcpy(tight, areas[0].buf, 34);
	} else {
		args.data = (union i2c_smbus_data *)areas[0].buf;
	}
	current = "I2C_SMBUS";
	alarm(10);
	ret = ioctl(fd, I2C_SMBUS, &args);
	alarm(0);
	count(ret);
	if (args.data == (void *)areas[0].buf)
		check_area(0, smbus_abi_size(size), "I2C_SMBUS");
	if (args.data == (void *)tight && ret < 0 && errno == EFAULT) {
		fprintf(stderr, "VIOLATION (seed %lu, iteration %lu): I2C_SMBUS size %d with its 34 bytes at a page end: EFAULT\n",
			seed, iteration, size);
		violations++;
	}
}

static const uint16_t flag_bits[] = {
	I2C_M_RD, I2C_M_TEN, I2C_M_RECV_LEN, I2C_M_RECV_LEN_255, I2C_M_NOSTART,
	I2C_M_IGNORE_NAK, I2C_M_NO_RD_ACK, I2C_M_REV_DIR_ADDR, I2C_M_STOP,
	0x0200 /* I2C_M_DMA_SAFE, kernel only */, 0x0002, 0x0080,
};

static void fuzz_rdwr(int fd)
{
	struct i2c_msg msgs[MAX_MSGS];
	struct i2c_rdwr_ioctl_data set;
	unsigned int n = below(4) ? 1 + below(3) : below(MAX_MSGS + 1), i, b;
	int bogus_msgs = below(20) == 0;
	long ret;

	for (i = 0; i < n; i++) {
		msgs[i].addr = below(4) ? 0x50 + below(2) * 0x20 - 0x20 * (below(3) == 0) :
			       below(0x400);
		msgs[i].flags = 0;
		for (b = 0; b < sizeof(flag_bits) / sizeof(flag_bits[0]); b++)
			if (below(5) == 0)
				msgs[i].flags |= flag_bits[b];
		if (below(2))
			msgs[i].flags |= I2C_M_RD;
		msgs[i].len = below(10) ? below(AREA + 1) : (below(2) ? MSG_MAX + 1 : rnd() & 0xffff);
		/* the buffer is the message's: any len i2c-dev takes, guarded */
		fill(i, msgs[i].len > AREA && msgs[i].len <= MSG_MAX ? msgs[i].len : AREA);
		if (msgs[i].flags & I2C_M_RECV_LEN)
			areas[i].buf[0] = below(4);
		snapshot(i);
		msgs[i].buf = below(12) ? areas[i].buf : bogus_pointer();
	}
	set.msgs = bogus_msgs ? bogus_pointer() : msgs;
	set.nmsgs = n;
	current = "I2C_RDWR";
	alarm(10);
	ret = ioctl(fd, I2C_RDWR, &set);
	alarm(0);
	count(ret);
	if (bogus_msgs)
		return;
	for (i = 0; i < n; i++)
		if (msgs[i].buf == areas[i].buf)
			check_area(i, msgs[i].len < areas[i].size ? msgs[i].len : areas[i].size,
				   "I2C_RDWR message");
}

static void fuzz_other(int fd)
{
	unsigned long funcs;
	char *p = (char *)areas[0].buf;
	long ret;

	current = "other request";
	alarm(10);
	switch (below(8)) {
	case 0:
		ret = ioctl(fd, I2C_FUNCS, below(2) ? (void *)&funcs : bogus_pointer());
		break;
	case 1:
		/* stay on the bus's test addresses most of the time */
		ret = ioctl(fd, below(2) ? I2C_SLAVE : I2C_SLAVE_FORCE,
			    below(4) ? (long)(0x30 + 0x20 * below(2)) : (long)rnd() - (1 << 20));
		break;
	case 2:
		ret = ioctl(fd, I2C_PEC, below(3));
		break;
	case 3:
		ret = ioctl(fd, I2C_TENBIT, below(3));
		break;
	case 4:
		ret = ioctl(fd, I2C_RETRIES, below(4));
		break;
	case 5:
		ret = ioctl(fd, I2C_TIMEOUT, below(2) ? below(20) : rnd());
		break;
	case 6:
		fill(0, AREA);
		snapshot(0);
		ret = read(fd, below(8) ? p : bogus_pointer(), below(10) ? below(AREA) : 8193);
		break;
	default:
		fill(0, AREA);
		ret = write(fd, below(8) ? p : bogus_pointer(), below(10) ? below(AREA) : 8193);
		break;
	}
	alarm(0);
	count(ret);
	/* keep a sane timeout for what follows */
	ioctl(fd, I2C_TIMEOUT, 10);
}

int main(int argc, char **argv)
{
	unsigned long n = 10000, i, e;
	int fds[16], nfd = 0, opt;
	const char *seed_arg = getenv("I2CDEV_FUZZ_SEED");
	unsigned char *pages;
	char path[32], *end;

	while ((opt = getopt(argc, argv, "s:n:")) != -1) {
		if (opt == 's')
			seed_arg = optarg;
		else if (opt == 'n')
			n = strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	if (seed_arg && *seed_arg) {
		errno = 0;
		seed = strtoul(seed_arg, &end, 0);
		if (errno || *end) {
			fprintf(stderr, "i2cdev-fuzz: bad seed '%s'\n", seed_arg);
			return 2;
		}
	} else if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) {
		perror("getrandom");
		return 2;
	} else {
		seed &= 0xffffffffUL;	/* short enough to type */
	}
	for (; optind < argc && nfd < 16; optind++) {
		snprintf(path, sizeof(path), "/dev/i2c-%s", argv[optind]);
		fds[nfd] = open(path, O_RDWR);
		if (fds[nfd] < 0) {
			perror(path);
			return 2;
		}
		ioctl(fds[nfd], I2C_SLAVE_FORCE, 0x50);
		nfd++;
	}
	if (!nfd) {
		fprintf(stderr, "usage: i2cdev-fuzz [-s SEED] [-n ITERATIONS] BUS...\n");
		return 2;
	}
	pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED || mprotect(pages + 4096, 4096, PROT_NONE)) {
		perror("mmap");
		return 2;
	}
	tight = pages + 4096 - sizeof(union i2c_smbus_data);
	printf("i2cdev-fuzz: seed=%lu (repeat with -s %lu or I2CDEV_FUZZ_SEED=%lu)\n", seed, seed,
	       seed);
	fflush(stdout);
	snprintf(hang_msg, sizeof(hang_msg),
		 "i2cdev-fuzz: HANG (seed %lu): a request took over 10 s: iteration ", seed);
	signal(SIGALRM, on_alarm);
	rng = seed * 0x9e3779b97f4a7c15ULL + 1;

	for (i = 0; i < n; i++) {
		int fd = fds[below(nfd)];

		iteration = i;
		switch (below(10)) {
		case 0 ... 4:
			fuzz_smbus(fd);
			break;
		case 5 ... 7:
			fuzz_rdwr(fd);
			break;
		default:
			fuzz_other(fd);
			break;
		}
		iterations++;
	}
	printf("seed=%lu iterations=%lu succeeded=%lu violations=%lu errors:", seed, iterations,
	       successes, violations);
	for (e = 0; e < 256; e++)
		if (errnos[e])
			printf(" %s=%lu", strerrorname_np(e) ? strerrorname_np(e) : "?", errnos[e]);
	printf("\n");
	return violations ? 1 : 0;
}
