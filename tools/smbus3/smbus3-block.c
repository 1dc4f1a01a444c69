// SPDX-License-Identifier: GPL-2.0
/*
 * smbus3-block: SMBus block transfers of up to 255 bytes (SMBus 3.0)
 * through i2c-dev, falling back to the 32-byte blocks of earlier SMBus
 * revisions where the kernel or the adapter has no SMBus 3.0 blocks.
 *
 *   smbus3-block [-f] [-p] [-3] BUS ADDR OPERATION COMMAND [ARG...]
 *
 *   read                 SMBus block read
 *   write BYTE...        SMBus block write
 *   proc-call BYTE...    SMBus block write - block read process call
 *   i2c-read LEN         I2C block read (command, then LEN bytes)
 *   i2c-write BYTE...    I2C block write (command, then the bytes)
 *   rdwr-read            block read through I2C_RDWR and I2C_M_RECV_LEN
 *
 *   -f  use the address even if a driver or target holds it
 *   -p  SMBus PEC
 *   -3  require SMBus 3.0 blocks: exit 3 instead of falling back
 *
 * Reads print "N: 0x.. 0x.." (N data bytes). Exit status: 0 done, 1 the
 * transfer failed, 2 bad usage, 3 no SMBus 3.0 blocks and -3 given, or
 * more bytes to write than a 32-byte block holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "smbus3.h"

static const char *prog = "smbus3-block";

static void usage(void)
{
	fprintf(stderr,
		"usage: %s [-f] [-p] [-3] BUS ADDR OPERATION COMMAND [ARG...]\n"
		"  OPERATION: read | write BYTE... | proc-call BYTE... |\n"
		"             i2c-read LEN | i2c-write BYTE... | rdwr-read\n", prog);
	exit(2);
}

static long number(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: %s '%s': expected %ld..%ld\n", prog, what, s, lo, hi);
		exit(2);
	}
	return v;
}

static void print_block(const __u8 *data, int len)
{
	int i;

	printf("%d:", len);
	for (i = 0; i < len; i++)
		printf(" 0x%02x", data[i]);
	printf("\n");
}

static int rdwr_read(int fd, int addr, __u8 command, int pec, int max)
{
	/* buf[0]: bytes before the data: the count, and PEC's at the end */
	__u8 buf[1 + I2C_SMBUS3_BLOCK_MAX + 1];
	struct i2c_msg msgs[2] = {
		{ .addr = addr, .len = 1, .buf = &command },
		{ .addr = addr, .flags = I2C_M_RD | I2C_M_RECV_LEN,
		  .len = 1 + max + pec, .buf = buf },
	};
	struct i2c_rdwr_ioctl_data set = { .msgs = msgs, .nmsgs = 2 };

	if (max > I2C_SMBUS_BLOCK_MAX)
		msgs[1].flags |= I2C_M_RECV_LEN_255;
	buf[0] = 1 + pec;
	if (ioctl(fd, I2C_RDWR, &set) < 0)
		return -1;
	if (msgs[1].len < 1 + buf[0]) {
		errno = EPROTO;
		return -1;
	}
	print_block(buf + 1, buf[0]);
	return 0;
}

int main(int argc, char **argv)
{
	int force = 0, pec = 0, require = 0, opt, fd, bus, addr, size, n, i;
	union i2c_smbus3_data data = { 0 };
	struct i2c_smbus_ioctl_data args;
	const char *op;
	unsigned long funcs;
	char path[32];
	int max, smbus3;

	while ((opt = getopt(argc, argv, "fp3")) != -1) {
		switch (opt) {
		case 'f': force = 1; break;
		case 'p': pec = 1; break;
		case '3': require = 1; break;
		default: usage();
		}
	}
	if (argc - optind < 4)
		usage();
	bus = number(argv[optind], 0, 1 << 20, "bus");
	addr = number(argv[optind + 1], 0x03, 0x77, "address");
	op = argv[optind + 2];
	args.command = number(argv[optind + 3], 0, 255, "command");
	argv += optind + 4;
	argc -= optind + 4;

	snprintf(path, sizeof(path), "/dev/i2c-%d", bus);
	fd = open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	if (ioctl(fd, I2C_FUNCS, &funcs) < 0) {
		fprintf(stderr, "%s: I2C_FUNCS: %s\n", prog, strerror(errno));
		return 1;
	}
	smbus3 = !!(funcs & I2C_FUNC_SMBUS3_BLOCK);
	if (!smbus3) {
		if (require) {
			fprintf(stderr, "%s: i2c-%d has no SMBus 3.0 blocks (kernel or adapter)\n",
				prog, bus);
			return 3;
		}
		fprintf(stderr, "%s: i2c-%d has no SMBus 3.0 blocks: using 32-byte blocks\n",
			prog, bus);
	}
	max = smbus3 ? I2C_SMBUS3_BLOCK_MAX : I2C_SMBUS_BLOCK_MAX;
	if (ioctl(fd, force ? I2C_SLAVE_FORCE : I2C_SLAVE, addr) < 0) {
		fprintf(stderr, "%s: address 0x%02x: %s%s\n", prog, addr, strerror(errno),
			errno == EBUSY ? " (-f uses it anyway)" : "");
		return 1;
	}
	if (pec && ioctl(fd, I2C_PEC, 1) < 0) {
		fprintf(stderr, "%s: I2C_PEC: %s\n", prog, strerror(errno));
		return 1;
	}

	if (!strcmp(op, "rdwr-read")) {
		if (argc)
			usage();
		if (rdwr_read(fd, addr, args.command, pec, max) < 0) {
			fprintf(stderr, "%s: I2C_RDWR block read: %s\n", prog, strerror(errno));
			return 1;
		}
		return 0;
	}

	if (!strcmp(op, "read") && !argc) {
		args.read_write = I2C_SMBUS_READ;
		size = I2C_SMBUS_BLOCK_DATA;
	} else if (!strcmp(op, "i2c-read") && argc == 1) {
		args.read_write = I2C_SMBUS_READ;
		size = I2C_SMBUS_I2C_BLOCK_DATA;
		data.block[0] = number(argv[0], 1, I2C_SMBUS3_BLOCK_MAX, "length");
	} else if ((!strcmp(op, "write") || !strcmp(op, "proc-call") ||
		    !strcmp(op, "i2c-write")) && argc >= 1) {
		args.read_write = I2C_SMBUS_WRITE;
		size = !strcmp(op, "write") ? I2C_SMBUS_BLOCK_DATA :
		       !strcmp(op, "proc-call") ? I2C_SMBUS_BLOCK_PROC_CALL :
		       I2C_SMBUS_I2C_BLOCK_DATA;
		if (argc > I2C_SMBUS3_BLOCK_MAX) {
			fprintf(stderr, "%s: %d bytes: at most %d\n", prog, argc,
				I2C_SMBUS3_BLOCK_MAX);
			return 2;
		}
		data.block[0] = argc;
		for (i = 0; i < argc; i++)
			data.block[1 + i] = number(argv[i], 0, 255, "byte");
	} else {
		usage();
	}
	n = data.block[0];
	if (n > max) {
		fprintf(stderr, "%s: %d bytes do not fit the 32-byte blocks of i2c-%d\n",
			prog, n, bus);
		return 3;
	}
	if (smbus3)
		size = size == I2C_SMBUS_BLOCK_DATA ? I2C_SMBUS3_BLOCK_DATA :
		       size == I2C_SMBUS_BLOCK_PROC_CALL ? I2C_SMBUS3_BLOCK_PROC_CALL :
		       I2C_SMBUS3_I2C_BLOCK_DATA;
	args.size = size;
	/* 34 bytes of data are used with the classic sizes, 257 with SMBus 3.0 */
	args.data = (union i2c_smbus_data *)&data;
	if (ioctl(fd, I2C_SMBUS, &args) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, op, strerror(errno));
		return 1;
	}
	if (args.read_write == I2C_SMBUS_READ || strcmp(op, "proc-call") == 0)
		print_block(data.block + 1, data.block[0]);
	return 0;
}
