// SPDX-License-Identifier: GPL-2.0
/*
 * cppc-sim: the firmware side of an emulated ACPI CPPC platform.
 *
 * QEMU runs the guest with its RAM in a shared file
 * (-object memory-backend-file,share=on,mem-path=FILE); the guest's SSDT
 * (platform/amd-pstate/gen-ssdt.py) points each CPU's _CPC registers at a
 * region of that RAM, reserved with memmap= in the guest. This program
 * maps the same file and plays the platform:
 *
 *  - CPPC Enable: a CPU honours requests only while its enable register is 1;
 *    otherwise it runs at nominal performance (legacy P-state control).
 *  - Requests: DESIRED is clamped to [MIN, MAX] and to the capabilities
 *    [lowest, highest]; MIN and MAX start at lowest and highest (the OS
 *    may leave them alone, as 6.1's amd-pstate does). DESIRED 0 means "no
 *    request": nominal.
 *  - Feedback counters: the reference counter advances at the reference
 *    performance, the delivered counter at the level applied, per
 *    microsecond, so delivered/reference * reference_perf is the
 *    performance the CPU delivered, as on real hardware.
 *  - A status page (magic, heartbeat, what each CPU's registers held as
 *    seen here) lets the guest check that a simulator is attached and what
 *    it saw; a timeline file records time, cpu, enable, desired, min, max
 *    and delivered performance.
 *
 * On SIGTERM/SIGINT it takes a last look at the registers (the guest may
 * have written them just before QEMU exited), writes a "final" line per
 * CPU and exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATUS_MAGIC	0x314d495343505043ULL	/* "CPPCSIM1" little-endian */
#define STATUS_VERSION	1
#define MAX_CPUS	64

/* The status page, as the guest reads it (tests/pstate/cppc_platform.py). */
struct sim_cpu_status {
	uint32_t enable;	/* enable register as last seen */
	uint32_t desired;	/* desired register as last seen */
	uint32_t applied;	/* performance level the CPU runs at */
	uint32_t desired_min;	/* smallest non-zero desired seen while enabled */
	uint32_t desired_max;	/* largest desired seen while enabled */
	uint32_t enabled_count;	/* 0 -> 1 transitions of enable */
	uint32_t disabled_count;	/* 1 -> 0 transitions of enable */
	uint32_t out_of_range;	/* desired writes outside [lowest, highest] */
	uint64_t changes;	/* times desired changed */
	uint64_t reserved[3];
};

struct sim_status {
	uint64_t magic;
	uint32_t version;
	uint32_t ncpus;
	uint64_t heartbeat;	/* ticks since start */
	uint64_t elapsed_ns;
	uint32_t tick_us;
	uint32_t pad[7];
	struct sim_cpu_status cpu[MAX_CPUS];
};

struct conf {
	long highest, nominal, lowest_nonlinear, lowest, reference;
	long base, size, stride, status_offset;
	long reg_desired, reg_min, reg_max, reg_enable, reg_ref, reg_del;
};

static volatile sig_atomic_t stop;
static const char *prog = "cppc-sim";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* KEY=VALUE lines, '#' comments: the same file the SSDT is generated from. */
static void load_conf(const char *path, struct conf *c)
{
	static const struct { const char *key; size_t off; } keys[] = {
#define K(name, field) { name, offsetof(struct conf, field) }
		K("HIGHEST_PERF", highest), K("NOMINAL_PERF", nominal),
		K("LOWEST_NONLINEAR_PERF", lowest_nonlinear), K("LOWEST_PERF", lowest),
		K("REFERENCE_PERF", reference), K("CPPC_BASE", base), K("CPPC_SIZE", size),
		K("CPPC_STRIDE", stride), K("STATUS_OFFSET", status_offset),
		K("REG_DESIRED", reg_desired), K("REG_MIN", reg_min), K("REG_MAX", reg_max),
		K("REG_ENABLE", reg_enable), K("REG_REFERENCE_CTR", reg_ref),
		K("REG_DELIVERED_CTR", reg_del),
#undef K
	};
	unsigned int seen = 0;
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *eq, *end, *hash = strchr(line, '#');
		unsigned int i;
		long v;

		if (hash)
			*hash = 0;
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = 0;
		v = strtol(eq + 1, &end, 0);
		while (*end == ' ' || *end == '\n' || *end == '\t')
			end++;
		if (*end)
			die("%s: %s: not a number", path, line);
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(line, keys[i].key)) {
				*(long *)((char *)c + keys[i].off) = v;
				seen |= 1u << i;
			}
	}
	fclose(f);
	for (unsigned int i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!(seen & (1u << i)))
			die("%s: %s is not set", path, keys[i].key);
	if (!(c->lowest > 0 && c->lowest <= c->lowest_nonlinear &&
	      c->lowest_nonlinear <= c->nominal && c->nominal <= c->highest))
		die("%s: expected 0 < lowest <= lowest_nonlinear <= nominal <= highest", path);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: cppc-sim --conf=CPPC.CONF --mem=GUEST_RAM_FILE --cpus=N [options]\n"
		"  --timeline=FILE   write time, cpu, enable, desired, min, max, delivered\n"
		"  --tick-us=US      how often the registers are looked at (default 1000)\n"
		"  --sample-ms=MS    timeline row per CPU at least this often (default 20)\n"
		"  --wait=S          wait up to S seconds for QEMU to create the RAM file\n"
		"                    (default 30)\n"
		"Start it next to a QEMU that runs with\n"
		"  -object memory-backend-file,id=ram,share=on,mem-path=GUEST_RAM_FILE,size=...\n"
		"  -machine memory-backend=ram\n"
		"and the SSDT built from the same CPPC.CONF.\n");
}

static inline uint32_t rd32(volatile uint8_t *p)
{
	return *(volatile uint32_t *)p;
}

static inline void wr32(volatile uint8_t *p, uint32_t v)
{
	*(volatile uint32_t *)p = v;
}

static inline void add64(volatile uint8_t *p, uint64_t v)
{
	*(volatile uint64_t *)p += v;
}

static long clampl(long v, long lo, long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "mem", required_argument, NULL, 'm' },
		{ "cpus", required_argument, NULL, 'n' },
		{ "timeline", required_argument, NULL, 't' },
		{ "tick-us", required_argument, NULL, 'k' },
		{ "sample-ms", required_argument, NULL, 's' },
		{ "wait", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf_path = NULL, *mem_path = NULL, *timeline_path = NULL;
	long ncpus = 0, tick_us = 1000, sample_ms = 20, wait_s = 30;
	double frac_ref[MAX_CPUS] = { 0 }, frac_del[MAX_CPUS] = { 0 };
	double last_row[MAX_CPUS], t0, prev;
	uint32_t last_applied[MAX_CPUS], last_desired[MAX_CPUS], last_enable[MAX_CPUS];
	volatile struct sim_status *st;
	volatile uint8_t *ram, *region;
	struct conf c = { 0 };
	struct sigaction sa;
	struct stat sb;
	FILE *tl = NULL;
	int opt, fd;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end = NULL;

		switch (opt) {
		case 'c': conf_path = optarg; break;
		case 'm': mem_path = optarg; break;
		case 't': timeline_path = optarg; break;
		case 'n': ncpus = strtol(optarg, &end, 10); break;
		case 'k': tick_us = strtol(optarg, &end, 10); break;
		case 's': sample_ms = strtol(optarg, &end, 10); break;
		case 'w': wait_s = strtol(optarg, &end, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (end && *end) {
			fprintf(stderr, "%s: --%s=%s: not a number\n", prog,
				opts[opt == 'n' ? 2 : opt == 'k' ? 4 : opt == 's' ? 5 : 6].name, optarg);
			return 2;
		}
	}
	if (!conf_path || !mem_path || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (ncpus < 1 || ncpus > MAX_CPUS)
		die("--cpus=%ld: out of range 1..%d", ncpus, MAX_CPUS);
	if (tick_us < 100 || tick_us > 1000000 || sample_ms < 1 || wait_s < 0)
		die("--tick-us must be 100..1000000, --sample-ms >= 1, --wait >= 0");
	load_conf(conf_path, &c);
	if (c.status_offset + (long)sizeof(struct sim_status) > c.size ||
	    ncpus * c.stride > c.status_offset)
		die("%s: %ld CPUs and the status page do not fit in the region", conf_path, ncpus);

	/* QEMU creates the file when it starts; give it a little time. */
	for (double until = now_s() + wait_s;;) {
		if (stat(mem_path, &sb) == 0 && sb.st_size >= c.base + c.size)
			break;
		if (now_s() >= until)
			die("no guest: %s %s after %ld s (start QEMU with a shared memory backend on that file, see --help)",
			    mem_path, stat(mem_path, &sb) ? "does not exist" :
			    "is smaller than the register region", wait_s);
		usleep(100000);
	}
	fd = open(mem_path, O_RDWR);
	if (fd < 0)
		die("%s: %s", mem_path, strerror(errno));
	ram = mmap(NULL, c.base + c.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ram == MAP_FAILED)
		die("mmap %s: %s", mem_path, strerror(errno));
	close(fd);
	region = ram + c.base;
	st = (volatile struct sim_status *)(region + c.status_offset);

	if (timeline_path) {
		tl = fopen(timeline_path, "w");
		if (!tl)
			die("%s: %s", timeline_path, strerror(errno));
		fprintf(tl, "# cppc-sim timeline: highest %ld nominal %ld lowest_nonlinear %ld lowest %ld reference %ld\n"
			"# t_s cpu enable desired min max delivered\n",
			c.highest, c.nominal, c.lowest_nonlinear, c.lowest, c.reference);
	}

	/* Firmware defaults: no request, full range allowed, counters at 0. */
	memset((void *)st, 0, sizeof(*st));
	for (long cpu = 0; cpu < ncpus; cpu++) {
		volatile uint8_t *b = region + cpu * c.stride;

		wr32(b + c.reg_min, c.lowest);
		wr32(b + c.reg_max, c.highest);
		last_applied[cpu] = last_desired[cpu] = last_enable[cpu] = ~0u;
		last_row[cpu] = -1;
		st->cpu[cpu].desired_min = ~0u;
	}
	st->version = STATUS_VERSION;
	st->ncpus = ncpus;
	st->tick_us = tick_us;
	__atomic_store_n(&st->magic, STATUS_MAGIC, __ATOMIC_RELEASE);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	t0 = prev = now_s();
	for (int last = 0; !last;) {
		struct timespec ts = { 0, tick_us * 1000 };
		double t, dt_us;

		nanosleep(&ts, NULL);
		last = stop;	/* one more pass after the signal */
		t = now_s();
		dt_us = (t - prev) * 1e6;
		prev = t;
		for (long cpu = 0; cpu < ncpus; cpu++) {
			volatile uint8_t *b = region + cpu * c.stride;
			volatile struct sim_cpu_status *cs = &st->cpu[cpu];
			uint32_t en = rd32(b + c.reg_enable);
			uint32_t des = rd32(b + c.reg_desired);
			long mn = rd32(b + c.reg_min), mx = rd32(b + c.reg_max), applied;

			if (en != 0 && en != 1)
				en = 1;	/* bit 0 is the enable bit */
			mn = clampl(mn, c.lowest, c.highest);
			mx = clampl(mx, mn, c.highest);
			if (!en || !des)
				applied = c.nominal;
			else
				applied = clampl(des, mn, mx);

			if (en && last_enable[cpu] != 1)
				cs->enabled_count++;
			if (!en && last_enable[cpu] == 1)
				cs->disabled_count++;
			if (en && des) {
				if (des < cs->desired_min)
					cs->desired_min = des;
				if (des > cs->desired_max)
					cs->desired_max = des;
				if (des != last_desired[cpu] &&
				    (des < (uint32_t)c.lowest || des > (uint32_t)c.highest))
					cs->out_of_range++;
			}
			if (des != last_desired[cpu] && last_desired[cpu] != ~0u)
				cs->changes++;
			cs->enable = en;
			cs->desired = des;
			cs->applied = applied;

			/* Counters: per microsecond, reference and delivered perf. */
			frac_ref[cpu] += c.reference * dt_us;
			frac_del[cpu] += applied * dt_us;
			add64(b + c.reg_ref, (uint64_t)frac_ref[cpu]);
			add64(b + c.reg_del, (uint64_t)frac_del[cpu]);
			frac_ref[cpu] -= (uint64_t)frac_ref[cpu];
			frac_del[cpu] -= (uint64_t)frac_del[cpu];

			if (tl && (en != last_enable[cpu] || des != last_desired[cpu] ||
				   applied != last_applied[cpu] ||
				   (t - last_row[cpu]) * 1000 >= sample_ms)) {
				fprintf(tl, "%.4f %ld %u %u %ld %ld %ld\n",
					t - t0, cpu, en, des, mn, mx, applied);
				last_row[cpu] = t;
			}
			if (tl && last)
				fprintf(tl, "# final cpu=%ld enable=%u desired=%u enabled=%u disabled=%u out_of_range=%u\n",
					cpu, en, des, cs->enabled_count, cs->disabled_count,
					cs->out_of_range);
			last_enable[cpu] = en;
			last_desired[cpu] = des;
			last_applied[cpu] = applied;
		}
		st->elapsed_ns = (uint64_t)((t - t0) * 1e9);
		__atomic_add_fetch(&st->heartbeat, 1, __ATOMIC_RELEASE);
	}
	if (tl && fclose(tl))
		die("%s: %s", timeline_path, strerror(errno));
	return 0;
}
