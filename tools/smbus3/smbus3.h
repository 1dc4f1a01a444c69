/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SMBus 3.0 block ABI of i2c-dev (patches 0013/0014, see
 * Documentation/i2c/dev-interface.rst). Kernel headers without it come
 * from kernels without it: the values are fixed, so a program built here
 * carries them and finds out at run time (I2C_FUNCS) whether the kernel
 * has them. With headers that have them, check they are the same.
 */
#ifndef SMBUS3_H
#define SMBUS3_H

#include <linux/i2c.h>
#include <linux/i2c-dev.h>

#ifdef I2C_FUNC_SMBUS3_BLOCK
_Static_assert(I2C_FUNC_SMBUS3_BLOCK == 0x00000040, "I2C_FUNC_SMBUS3_BLOCK");
_Static_assert(I2C_M_RECV_LEN_255 == 0x0100, "I2C_M_RECV_LEN_255");
_Static_assert(I2C_SMBUS3_BLOCK_MAX == 255, "I2C_SMBUS3_BLOCK_MAX");
_Static_assert(I2C_SMBUS3_BLOCK_DATA == 9, "I2C_SMBUS3_BLOCK_DATA");
_Static_assert(I2C_SMBUS3_BLOCK_PROC_CALL == 10, "I2C_SMBUS3_BLOCK_PROC_CALL");
_Static_assert(I2C_SMBUS3_I2C_BLOCK_DATA == 11, "I2C_SMBUS3_I2C_BLOCK_DATA");
_Static_assert(sizeof(union i2c_smbus3_data) == 258, "union i2c_smbus3_data");
#else
#define I2C_FUNC_SMBUS3_BLOCK		0x00000040
#define I2C_M_RECV_LEN_255		0x0100
#define I2C_SMBUS3_BLOCK_MAX		255
#define I2C_SMBUS3_BLOCK_DATA		9
#define I2C_SMBUS3_BLOCK_PROC_CALL	10
#define I2C_SMBUS3_I2C_BLOCK_DATA	11
union i2c_smbus3_data {
	__u8 byte;
	__u16 word;
	__u8 block[I2C_SMBUS3_BLOCK_MAX + 2];
};
#endif

#endif
