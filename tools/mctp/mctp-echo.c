// SPDX-License-Identifier: GPL-2.0
/*
 * mctp-echo: an echo service and a ping over AF_MCTP sockets.
 *
 *   mctp-echo serve [--net N] [--type T] [--count C]
 *       answer each request of message type T (default 0x7f, vendor
 *       defined over PCI) with the same bytes, as a response (tag owner
 *       bit clear, same tag); stop after C requests (default: never)
 *   mctp-echo ping --eid E [--net N] [--type T] [--sizes S1,S2,...]
 *       [--count C] [--timeout MS]
 *       send C requests of each size (bytes, 1..65536) to EID E, wait
 *       for each response, check it byte for byte, and print a line per
 *       size: size=S count=C rtt_ms_median= rtt_ms_min= rtt_ms_max=
 *       msgs_per_s= bytes_per_s= (round trips; payload bytes one way).
 *       A response that differs, comes from the wrong peer or does not
 *       come in time is an error (exit 1).
 *
 * The payload of request i is a pattern seeded by i and the size, so a
 * response that was cut, reordered or reassembled wrongly cannot match.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/mctp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_MCTP
#define AF_MCTP 45
#endif

#define MAX_MSG 65536
#define MAX_SIZES 32

static const char *prog = "mctp-echo";

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mctp-echo serve [--net N] [--type T] [--count C]\n"
		"       mctp-echo ping --eid E [--net N] [--type T] [--sizes S1,S2,...]\n"
		"                      [--count C] [--timeout MS]\n");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long num(const char *what, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || !*s || *end || v < min || v > max) {
		fprintf(stderr, "%s: --%s=%s: expected %ld..%ld\n", prog, what, s, min, max);
		exit(2);
	}
	return v;
}

static void fill(unsigned char *buf, size_t len, unsigned long seed)
{
	uint32_t x = seed * 2654435761u + len;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = x >> 16;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int serve(int fd, int net, int type, long count)
{
	static unsigned char buf[MAX_MSG];
	struct sockaddr_mctp addr = {
		.smctp_family = AF_MCTP,
		.smctp_network = net,
		.smctp_addr.s_addr = MCTP_ADDR_ANY,
		.smctp_type = type,
	};

	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		fprintf(stderr, "%s: bind type %#x net %d: %s\n", prog, type, net, strerror(errno));
		return 1;
	}
	printf("%s: serving type %#x on net %d\n", prog, type, net);
	fflush(stdout);
	for (long n = 0; !count || n < count; n++) {
		socklen_t alen = sizeof(addr);
		ssize_t len = recvfrom(fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&addr, &alen);

		if (len < 0) {
			fprintf(stderr, "%s: recvfrom: %s\n", prog, strerror(errno));
			return 1;
		}
		if (len > (ssize_t)sizeof(buf)) {
			fprintf(stderr, "%s: %zd-byte request truncated\n", prog, len);
			return 1;
		}
		addr.smctp_tag &= ~MCTP_TAG_OWNER;
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&addr, sizeof(addr)) != len) {
			fprintf(stderr, "%s: reply of %zd bytes to eid %d: %s\n", prog, len,
				addr.smctp_addr.s_addr, strerror(errno));
			return 1;
		}
	}
	return 0;
}

static int ping(int fd, int net, int eid, int type, long *sizes, int nsizes, long count,
		long timeout_ms)
{
	static unsigned char out[MAX_MSG], in[MAX_MSG + 1];
	double *rtt = calloc(count, sizeof(*rtt));

	if (!rtt)
		return 1;
	for (int s = 0; s < nsizes; s++) {
		double t0 = now(), total;

		for (long i = 0; i < count; i++) {
			struct sockaddr_mctp to = {
				.smctp_family = AF_MCTP,
				.smctp_network = net,
				.smctp_addr.s_addr = eid,
				.smctp_type = type,
				.smctp_tag = MCTP_TAG_OWNER,
			}, from;
			socklen_t alen = sizeof(from);
			struct pollfd p = { .fd = fd, .events = POLLIN };
			double t = now();
			ssize_t len;

			fill(out, sizes[s], i);
			if (sendto(fd, out, sizes[s], 0, (struct sockaddr *)&to, sizeof(to)) != sizes[s]) {
				fprintf(stderr, "%s: send %ld bytes to eid %d net %d: %s\n", prog,
					sizes[s], eid, net, strerror(errno));
				return 1;
			}
			if (poll(&p, 1, timeout_ms) != 1) {
				fprintf(stderr, "%s: no response from eid %d to request %ld of %ld bytes within %ld ms\n",
					prog, eid, i + 1, sizes[s], timeout_ms);
				return 1;
			}
			len = recvfrom(fd, in, sizeof(in), MSG_TRUNC, (struct sockaddr *)&from, &alen);
			rtt[i] = now() - t;
			if (len < 0) {
				fprintf(stderr, "%s: recvfrom: %s\n", prog, strerror(errno));
				return 1;
			}
			if (from.smctp_addr.s_addr != eid || from.smctp_type != type ||
			    (from.smctp_tag & MCTP_TAG_OWNER)) {
				fprintf(stderr, "%s: response from eid %d type %#x tag %#x, expected eid %d type %#x, a response tag\n",
					prog, from.smctp_addr.s_addr, from.smctp_type,
					from.smctp_tag, eid, type);
				return 1;
			}
			if (len != sizes[s] || memcmp(in, out, len)) {
				fprintf(stderr, "%s: response %ld of %ld bytes differs (%zd bytes back)\n",
					prog, i + 1, sizes[s], len);
				return 1;
			}
		}
		total = now() - t0;
		qsort(rtt, count, sizeof(*rtt), cmp_double);
		printf("size=%ld count=%ld rtt_ms_median=%.3f rtt_ms_min=%.3f rtt_ms_max=%.3f msgs_per_s=%.4f bytes_per_s=%.1f\n",
		       sizes[s], count, rtt[count / 2] * 1e3, rtt[0] * 1e3, rtt[count - 1] * 1e3,
		       count / total, count * sizes[s] / total);
		fflush(stdout);
	}
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "net", required_argument, NULL, 'n' },
		{ "eid", required_argument, NULL, 'e' },
		{ "type", required_argument, NULL, 't' },
		{ "sizes", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long sizes[MAX_SIZES] = { 1 }, count = 0, timeout = 2000;
	int nsizes = 1, net = MCTP_NET_ANY, eid = -1, type = 0x7f, opt, fd, is_ping;

	if (argc < 2 || (strcmp(argv[1], "serve") && strcmp(argv[1], "ping"))) {
		usage(argc > 1 && !strcmp(argv[1], "--help") ? stdout : stderr);
		return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	is_ping = !strcmp(argv[1], "ping");
	optind = 2;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'n': net = num("net", optarg, 0, 0x7fffffff); break;
		case 'e': eid = num("eid", optarg, 1, 254); break;
		case 't': type = num("type", optarg, 0, 0x7f); break;
		case 'c': count = num("count", optarg, 1, 10000000); break;
		case 'w': timeout = num("timeout", optarg, 1, 600000); break;
		case 's': {
			char *tok, *save = NULL;

			nsizes = 0;
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (nsizes == MAX_SIZES) {
					fprintf(stderr, "%s: at most %d sizes\n", prog, MAX_SIZES);
					return 2;
				}
				sizes[nsizes++] = num("sizes", tok, 1, MAX_MSG);
			}
			if (!nsizes) {
				fprintf(stderr, "%s: --sizes: expected S1,S2,...\n", prog);
				return 2;
			}
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (is_ping && eid < 0)) {
		usage(stderr);
		return 2;
	}
	fd = socket(AF_MCTP, SOCK_DGRAM, 0);
	if (fd < 0) {
		fprintf(stderr, "%s: AF_MCTP socket: %s (kernel without CONFIG_MCTP?)\n", prog,
			strerror(errno));
		return 1;
	}
	if (is_ping)
		return ping(fd, net, eid, type, sizes, nsizes, count ? count : 10, timeout);
	return serve(fd, net, type, count);
}
