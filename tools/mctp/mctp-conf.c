// SPDX-License-Identifier: GPL-2.0
/*
 * mctp-conf: configure MCTP links, local addresses, routes and neighbours
 * over rtnetlink (Debian has no MCTP package).
 *
 *   mctp-conf link set DEV [up|down] [mtu N] [net N]
 *   mctp-conf addr add|del EID dev DEV
 *   mctp-conf route add|del EID via DEV [mtu N]
 *   mctp-conf neigh add|del EID dev DEV [lladdr HEX]
 *
 * EIDs and network ids are decimal or 0x-hex. A refusal prints the
 * kernel's extended ack message when it sends one.
 */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef AF_MCTP
#define AF_MCTP 45
#endif

static const char *prog = "mctp-conf";

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mctp-conf link set DEV [up|down] [mtu N] [net N]\n"
		"       mctp-conf addr add|del EID dev DEV\n"
		"       mctp-conf route add|del EID via DEV [mtu N]\n"
		"       mctp-conf neigh add|del EID dev DEV [lladdr HEX]\n");
}

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

struct req {
	struct nlmsghdr nh;
	char buf[1024];
};

static struct rtattr *add_attr(struct req *r, unsigned short type, const void *data, size_t len)
{
	struct rtattr *rta = (struct rtattr *)((char *)&r->nh + NLMSG_ALIGN(r->nh.nlmsg_len));

	if (NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_SPACE(len) > sizeof(*r))
		die("request too large");
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	return rta;
}

static void end_nest(struct req *r, struct rtattr *nest)
{
	nest->rta_len = (char *)&r->nh + r->nh.nlmsg_len - (char *)nest;
}

static unsigned long number(const char *what, const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || !*s || *end || v > max)
		die("%s '%s': expected a number 0..%lu", what, s, max);
	return v;
}

static int ifindex(const char *dev)
{
	int i = if_nametoindex(dev);

	if (!i)
		die("no such device '%s'", dev);
	return i;
}

/* Send the request, wait for the ack, report the kernel's error. */
static void talk(struct req *r)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char buf[8192];
	int fd, one = 1;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		die("netlink socket: %s", strerror(errno));
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	r->nh.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	r->nh.nlmsg_seq = 1;
	if (sendto(fd, r, r->nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("netlink send: %s", strerror(errno));
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		die("netlink receive: %s", strerror(errno));
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
		struct nlmsgerr *e = NLMSG_DATA(h);
		const char *msg = NULL;

		if (h->nlmsg_type != NLMSG_ERROR)
			continue;
		if (!e->error)
			goto out;
		if (h->nlmsg_flags & NLM_F_ACK_TLVS) {
			/* The extended ack follows the echoed request header. */
			size_t off = sizeof(*e);
			int len;

			if (!(h->nlmsg_flags & NLM_F_CAPPED))
				off += e->msg.nlmsg_len - sizeof(e->msg);
			len = h->nlmsg_len - NLMSG_HDRLEN - off;
			for (struct rtattr *a = (struct rtattr *)((char *)e + off); RTA_OK(a, len);
			     a = RTA_NEXT(a, len))
				if (a->rta_type == NLMSGERR_ATTR_MSG)
					msg = RTA_DATA(a);
		}
		die("%s%s%s", strerror(-e->error), msg ? ": " : "", msg ? msg : "");
	}
	die("netlink: no acknowledgement");
out:
	close(fd);
}

static void link_set(int argc, char **argv)
{
	struct req r = { .nh.nlmsg_type = RTM_NEWLINK };
	struct ifinfomsg *ifi = NLMSG_DATA(&r.nh);

	if (argc < 1)
		die("link set: which device?");
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex(argv[0]);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "up") || !strcmp(argv[i], "down")) {
			ifi->ifi_change |= IFF_UP;
			ifi->ifi_flags = argv[i][0] == 'u' ? IFF_UP : 0;
		} else if (!strcmp(argv[i], "mtu") && i + 1 < argc) {
			unsigned int mtu = number("mtu", argv[++i], 0xffffffff);

			add_attr(&r, IFLA_MTU, &mtu, sizeof(mtu));
		} else if (!strcmp(argv[i], "net") && i + 1 < argc) {
			unsigned int net = number("net", argv[++i], 0xffffffff);
			struct rtattr *spec = add_attr(&r, IFLA_AF_SPEC | NLA_F_NESTED, NULL, 0);
			struct rtattr *mctp = add_attr(&r, AF_MCTP | NLA_F_NESTED, NULL, 0);

			add_attr(&r, IFLA_MCTP_NET, &net, sizeof(net));
			end_nest(&r, mctp);
			end_nest(&r, spec);
		} else {
			die("link set: unexpected '%s'", argv[i]);
		}
	}
	talk(&r);
}

static void addr(int add, int argc, char **argv)
{
	struct req r = { .nh.nlmsg_type = add ? RTM_NEWADDR : RTM_DELADDR };
	struct ifaddrmsg *ifa = NLMSG_DATA(&r.nh);
	unsigned char eid;

	if (argc != 3 || strcmp(argv[1], "dev"))
		die("addr: expected EID dev DEV");
	eid = number("EID", argv[0], 0xff);
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(*ifa));
	if (add)
		r.nh.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifa->ifa_family = AF_MCTP;
	ifa->ifa_index = ifindex(argv[2]);
	add_attr(&r, IFA_LOCAL, &eid, 1);
	talk(&r);
}

static void route(int add, int argc, char **argv)
{
	struct req r = { .nh.nlmsg_type = add ? RTM_NEWROUTE : RTM_DELROUTE };
	struct rtmsg *rtm = NLMSG_DATA(&r.nh);
	unsigned char eid;
	unsigned int oif;

	if (argc != 3 && !(argc == 5 && add && !strcmp(argv[3], "mtu")))
		die("route: expected EID via DEV [mtu N]");
	if (strcmp(argv[1], "via"))
		die("route: expected EID via DEV [mtu N]");
	eid = number("EID", argv[0], 0xff);
	oif = ifindex(argv[2]);
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(*rtm));
	if (add)
		r.nh.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	rtm->rtm_family = AF_MCTP;
	rtm->rtm_type = RTN_UNICAST;
	rtm->rtm_table = RT_TABLE_DEFAULT;
	add_attr(&r, RTA_DST, &eid, 1);
	add_attr(&r, RTA_OIF, &oif, sizeof(oif));
	if (argc == 5) {
		unsigned int mtu = number("mtu", argv[4], 0xffffffff);
		struct rtattr *m = add_attr(&r, RTA_METRICS | NLA_F_NESTED, NULL, 0);

		add_attr(&r, RTAX_MTU, &mtu, sizeof(mtu));
		end_nest(&r, m);
	}
	talk(&r);
}

static void neigh(int add, int argc, char **argv)
{
	struct req r = { .nh.nlmsg_type = add ? RTM_NEWNEIGH : RTM_DELNEIGH };
	struct ndmsg *nd = NLMSG_DATA(&r.nh);
	unsigned char eid, ll[32];
	size_t n = 0;

	if (!(argc == 3 || (argc == 5 && !strcmp(argv[3], "lladdr"))) || strcmp(argv[1], "dev"))
		die("neigh: expected EID dev DEV [lladdr HEX]");
	if (add && argc != 5)
		die("neigh add: lladdr is required");
	eid = number("EID", argv[0], 0xff);
	r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(*nd));
	if (add)
		r.nh.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	nd->ndm_family = AF_MCTP;
	nd->ndm_ifindex = ifindex(argv[2]);
	add_attr(&r, NDA_DST, &eid, 1);
	if (argc == 5) {
		const char *h = argv[4];

		if (!strncmp(h, "0x", 2))
			h += 2;
		if (!*h || strlen(h) % 2 || strlen(h) / 2 > sizeof(ll))
			die("lladdr '%s': expected hex bytes", argv[4]);
		for (; *h; h += 2) {
			char byte[3] = { h[0], h[1], 0 }, *end;

			ll[n++] = strtoul(byte, &end, 16);
			if (*end || byte[0] == '+' || byte[0] == '-' || byte[0] == ' ')
				die("lladdr '%s': expected hex bytes", argv[4]);
		}
		add_attr(&r, NDA_LLADDR, ll, n);
	}
	talk(&r);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "link") && !strcmp(argv[2], "set")) {
		link_set(argc - 3, argv + 3);
	} else if (!strcmp(argv[2], "add") || !strcmp(argv[2], "del")) {
		int add = argv[2][0] == 'a';

		if (!strcmp(argv[1], "addr"))
			addr(add, argc - 3, argv + 3);
		else if (!strcmp(argv[1], "route"))
			route(add, argc - 3, argv + 3);
		else if (!strcmp(argv[1], "neigh"))
			neigh(add, argc - 3, argv + 3);
		else
			goto bad;
	} else {
		goto bad;
	}
	return 0;
bad:
	usage(stderr);
	return 2;
}
