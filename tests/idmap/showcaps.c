// SPDX-License-Identifier: GPL-2.0
/* Print this process's permitted capability set (hex), for exec tests. */
#include <stdio.h>
#include <string.h>

int main(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapPrm:", 7) == 0) {
			fputs(line + 8, stdout);
			return 0;
		}
	return 1;
}
