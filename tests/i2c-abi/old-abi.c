// SPDX-License-Identifier: GPL-2.0
/*
 * old-abi: the "old binary" of the i2c-dev ABI tests. Built against the
 * system's uAPI headers, which must be the unchanged 6.1 ones (checked
 * below), it runs the classic I2C_SMBUS and I2C_RDWR requests given on the
 * command line and prints one line per request: return value, errno, the
 * data the ABI says the kernel returned, and whether anything was written
 * past the ABI's buffer size (every buffer is followed by a guard area).
 *
 *   old-abi BUS ADDR REQUEST [REQUEST...]
 *   REQUEST: funcs | byte-read:C | byte-write:C:V | word-read:C |
 *            word-write:C:V | block-read:C | block-write:C:LEN |
 *            block-proc:C:B1[:B2...] | i2c-block-read:C:LEN |
 *            i2c-block-write:C:LEN | broken-i2c-block-read:C |
 *            rdwr-recv-len:C:BUFLEN | rdwr-flags:C:LEN:FLAGS
 *
 * rdwr-flags writes C, then reads LEN bytes with I2C_M_RD and the extra
 * message flags FLAGS, given as a number: bits that had no meaning in 6.1
 * (0x0100) reach i2c-dev as they do from an old program that sets them.
 * With I2C_M_RECV_LEN in FLAGS, buf[0] is 1 and the data is buf[0] plus
 * the received length, as for rdwr-recv-len.
 *
 * The same transcript on two kernels must be the same text, with one
 * exception that must be visible and explained: I2C_FUNCS is printed raw,
 * as an old program receives it, followed by the bits these headers do not
 * define ("undefined="); a kernel that adds a functionality bit shows it
 * there (tests/i2c-abi/abi_test.py accepts only I2C_FUNC_SMBUS3_BLOCK).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/i2c.h>
#include <linux/i2c-dev.h>

#if defined(I2C_FUNC_SMBUS3_BLOCK) || defined(I2C_SMBUS3_BLOCK_MAX)
#error "old-abi must be built against the unchanged 6.1 uAPI headers"
#endif

#define GUARD 0xa5
#define GUARD_LEN 512

/* Every function bit these headers define; the others are new to an old binary. */
#define KNOWN_FUNCS (I2C_FUNC_I2C | I2C_FUNC_10BIT_ADDR | \
		     I2C_FUNC_PROTOCOL_MANGLING | I2C_FUNC_SMBUS_PEC | \
		     I2C_FUNC_NOSTART | I2C_FUNC_SLAVE | \
		     I2C_FUNC_SMBUS_BLOCK_PROC_CALL | I2C_FUNC_SMBUS_QUICK | \
		     I2C_FUNC_SMBUS_BYTE | I2C_FUNC_SMBUS_BYTE_DATA | \
		     I2C_FUNC_SMBUS_WORD_DATA | I2C_FUNC_SMBUS_PROC_CALL | \
		     I2C_FUNC_SMBUS_BLOCK_DATA | I2C_FUNC_SMBUS_I2C_BLOCK | \
		     I2C_FUNC_SMBUS_HOST_NOTIFY)

static struct {
	unsigned char buf[300];
	unsigned char guard[GUARD_LEN];
} area;

static void prepare(void)
{
	memset(&area, GUARD, sizeof(area));
}

/* The guard starts right after the @size bytes the ABI lets the kernel write. */
static const char *guard_state(size_t size)
{
	const unsigned char *p = area.buf + size;
	const unsigned char *end = (unsigned char *)&area + sizeof(area);

	for (; p < end; p++)
		if (*p != GUARD)
			return "CORRUPTED";
	return "intact";
}

static void report(const char *req, int ret, int err, const unsigned char *data,
		   int len, size_t abi_size)
{
	int i;

	printf("%s -> ret=%d errno=%s", req, ret, ret < 0 ? strerror(err) : "-");
	if (data && len > 0) {
		printf(" data=");
		for (i = 0; i < len; i++)
			printf("%02x", data[i]);
	}
	printf(" guard=%s\n", guard_state(abi_size));
}

static int smbus(int fd, char rw, unsigned char cmd, int size, union i2c_smbus_data *d)
{
	struct i2c_smbus_ioctl_data args = {
		.read_write = rw, .command = cmd, .size = size, .data = d,
	};

	return ioctl(fd, I2C_SMBUS, &args);
}

static void request(int fd, int addr, char *req)
{
	union i2c_smbus_data *d = (union i2c_smbus_data *)area.buf;
	char copy[256], *op, *arg[260];
	int n = 0, ret, err, i, len;
	unsigned long funcs;

	snprintf(copy, sizeof(copy), "%s", req);
	op = strtok(copy, ":");
	while (n < 259 && (arg[n] = strtok(NULL, ":")))
		n++;
#define A(i) ((int)strtol(arg[i], NULL, 0))
	prepare();
	errno = 0;
	if (!strcmp(op, "funcs")) {
		funcs = 0;
		ret = ioctl(fd, I2C_FUNCS, &funcs);
		printf("%s -> ret=%d funcs=0x%08lx undefined=0x%08lx\n", req, ret, funcs,
		       funcs & ~(unsigned long)KNOWN_FUNCS);
		return;
	} else if (!strcmp(op, "byte-read") && n == 1) {
		ret = smbus(fd, I2C_SMBUS_READ, A(0), I2C_SMBUS_BYTE_DATA, d);
		report(req, ret, errno, ret < 0 ? NULL : d->block, 1, sizeof(d->byte));
	} else if (!strcmp(op, "byte-write") && n == 2) {
		d->byte = A(1);
		ret = smbus(fd, I2C_SMBUS_WRITE, A(0), I2C_SMBUS_BYTE_DATA, d);
		report(req, ret, errno, NULL, 0, sizeof(d->byte));
	} else if (!strcmp(op, "word-read") && n == 1) {
		ret = smbus(fd, I2C_SMBUS_READ, A(0), I2C_SMBUS_WORD_DATA, d);
		report(req, ret, errno, ret < 0 ? NULL : d->block, 2, sizeof(d->word));
	} else if (!strcmp(op, "word-write") && n == 2) {
		d->word = A(1);
		ret = smbus(fd, I2C_SMBUS_WRITE, A(0), I2C_SMBUS_WORD_DATA, d);
		report(req, ret, errno, NULL, 0, sizeof(d->word));
	} else if (!strcmp(op, "block-read") && n == 1) {
		ret = smbus(fd, I2C_SMBUS_READ, A(0), I2C_SMBUS_BLOCK_DATA, d);
		err = errno;
		/* On failure, print what the kernel left in the 34 bytes. */
		len = ret < 0 ? (int)sizeof(d->block) : 1 + d->block[0];
		report(req, ret, err, d->block, len, sizeof(d->block));
	} else if ((!strcmp(op, "block-write") || !strcmp(op, "i2c-block-write")) && n == 2) {
		len = A(1);
		d->block[0] = len;
		for (i = 1; i <= len && i < (int)sizeof(d->block); i++)
			d->block[i] = 0x30 + i;
		ret = smbus(fd, I2C_SMBUS_WRITE, A(0), op[0] == 'b' ? I2C_SMBUS_BLOCK_DATA :
			    I2C_SMBUS_I2C_BLOCK_DATA, d);
		report(req, ret, errno, NULL, 0, sizeof(d->block));
	} else if (!strcmp(op, "block-proc") && n >= 2) {
		d->block[0] = n - 1;
		for (i = 1; i < n && i < (int)sizeof(d->block); i++)
			d->block[i] = A(i);
		ret = smbus(fd, I2C_SMBUS_WRITE, A(0), I2C_SMBUS_BLOCK_PROC_CALL, d);
		err = errno;
		len = ret < 0 ? (int)sizeof(d->block) : 1 + d->block[0];
		report(req, ret, err, d->block, len, sizeof(d->block));
	} else if (!strcmp(op, "i2c-block-read") && n == 2) {
		d->block[0] = A(1);
		ret = smbus(fd, I2C_SMBUS_READ, A(0), I2C_SMBUS_I2C_BLOCK_DATA, d);
		err = errno;
		len = ret < 0 ? 0 : 1 + d->block[0];
		report(req, ret, err, d->block, len, sizeof(d->block));
	} else if (!strcmp(op, "broken-i2c-block-read") && n == 1) {
		ret = smbus(fd, I2C_SMBUS_READ, A(0), I2C_SMBUS_I2C_BLOCK_BROKEN, d);
		err = errno;
		len = ret < 0 ? 0 : 1 + d->block[0];
		report(req, ret, err, d->block, len, sizeof(d->block));
	} else if (!strcmp(op, "rdwr-recv-len") && n == 2) {
		unsigned char cmd = A(0);
		struct i2c_msg msgs[2] = {
			{ .addr = addr, .len = 1, .buf = &cmd },
			{ .addr = addr, .flags = I2C_M_RD | I2C_M_RECV_LEN,
			  .len = A(1), .buf = area.buf },
		};
		struct i2c_rdwr_ioctl_data set = { .msgs = msgs, .nmsgs = 2 };

		area.buf[0] = 1;	/* one byte (the count) before the data */
		ret = ioctl(fd, I2C_RDWR, &set);
		err = errno;
		len = ret < 0 ? 0 : msgs[1].len;
		report(req, ret, err, area.buf, len, A(1));
	} else if (!strcmp(op, "rdwr-flags") && n == 3) {
		unsigned char cmd = A(0);
		struct i2c_msg msgs[2] = {
			{ .addr = addr, .len = 1, .buf = &cmd },
			{ .addr = addr, .flags = I2C_M_RD | A(2),
			  .len = A(1), .buf = area.buf },
		};
		struct i2c_rdwr_ioctl_data set = { .msgs = msgs, .nmsgs = 2 };

		area.buf[0] = 1;
		ret = ioctl(fd, I2C_RDWR, &set);
		err = errno;
		len = ret < 0 ? 0 : msgs[1].len;
		report(req, ret, err, area.buf, len, A(1));
	} else {
		fprintf(stderr, "old-abi: bad request '%s'\n", req);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	char path[32];
	int fd, addr, i;

	if (argc < 4) {
		fprintf(stderr, "usage: old-abi BUS ADDR REQUEST...\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/dev/i2c-%s", argv[1]);
	addr = strtol(argv[2], NULL, 0);
	fd = open(path, O_RDWR);
	if (fd < 0 || ioctl(fd, I2C_SLAVE, addr) < 0) {
		perror(path);
		return 1;
	}
	for (i = 3; i < argc; i++)
		request(fd, addr, argv[i]);
	return 0;
}
