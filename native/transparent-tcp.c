// exec-server-transparent-tcp: transparent TCP for one proxied sandbox (networkProxyTransparentTcp).
//
// Usage: transparent-tcp PID, with fd 3 a Node IPC channel (JSON lines) to the executor. PID is
// the first process of a sandbox whose network namespace bubblewrap unshared (it holds only `lo`).
//
// It enters that network namespace (and its user namespace, which owns it), and there:
//   - creates the TUN device `codextun` with 192.0.2.1/32 and the default route;
//   - makes 100.66.0.0/16 local (a `local` route on lo);
//   - opens a TCP listener on 0.0.0.0:<ephemeral> and a UDP socket on 127.0.0.53:53 (the sandbox's
//     resolver: its /etc/resolv.conf names it) and hands both to the executor over the channel;
//   - then rewrites every TCP packet the sandbox routes into the TUN and writes it back:
//       child -> X:p, from 192.0.2.1:a   becomes   X:p -> 100.66.(a>>8).(a&255):L
//       100.66.h.l:L -> X:p               becomes   X:p -> 192.0.2.1:(h<<8|l)
//     so each of the child's connections to anywhere is accepted by the namespace's own TCP stack
//     on the listener L, where the executor sees the original destination as the peer address
//     (and the child's port as the local address): it applies the SOCKS5 policy to it and relays.
//     The mapping is stateless; no table can fill up. Anything but IPv4 TCP is dropped.
// It moves packets only; the policy and the upstream connection are the executor's. It exits when
// the channel closes (the executor ends it with the process) or the executor dies.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHANNEL_FD 3
#define TUN_NAME "codextun"
#define TUN_ADDR 0xC0000201u  /* 192.0.2.1 */
#define MAP_NET 0x64420000u   /* 100.66.0.0/16 */
#define DNS_ADDR 0x7F000035u  /* 127.0.0.53 */

static void fail(int code, const char *what) {
  fprintf(stderr, "transparent-tcp: %s: %s\n", what, errno ? strerror(errno) : "failed");
  exit(code);
}

static struct sockaddr_in in4(uint32_t addr, uint16_t port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(addr);
  a.sin_port = htons(port);
  return a;
}

static int same_ns(const char *ours, int theirs) {
  struct stat a, b;
  if (stat(ours, &a) != 0 || fstat(theirs, &b) != 0) fail(2, "stat namespace");
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* 100.66.0.0/16 type local on lo: every address in it is this namespace's own. */
static void add_local_route(void) {
  struct {
    struct nlmsghdr nh;
    struct rtmsg rt;
    char attrs[64];
  } req;
  memset(&req, 0, sizeof req);
  req.nh.nlmsg_type = RTM_NEWROUTE;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  req.nh.nlmsg_seq = 1;
  req.rt.rtm_family = AF_INET;
  req.rt.rtm_dst_len = 16;
  req.rt.rtm_table = RT_TABLE_LOCAL;
  req.rt.rtm_protocol = RTPROT_BOOT;
  req.rt.rtm_scope = RT_SCOPE_HOST;
  req.rt.rtm_type = RTN_LOCAL;
  size_t len = NLMSG_LENGTH(sizeof(struct rtmsg));
  uint32_t dst = htonl(MAP_NET);
  int oif = (int)if_nametoindex("lo");
  if (oif == 0) fail(4, "no lo in the sandbox's network namespace");
  struct rtattr *ra = (struct rtattr *)((char *)&req + NLMSG_ALIGN(len));
  ra->rta_type = RTA_DST;
  ra->rta_len = RTA_LENGTH(4);
  memcpy(RTA_DATA(ra), &dst, 4);
  len = NLMSG_ALIGN(len) + RTA_ALIGN(ra->rta_len);
  ra = (struct rtattr *)((char *)&req + len);
  ra->rta_type = RTA_OIF;
  ra->rta_len = RTA_LENGTH(4);
  memcpy(RTA_DATA(ra), &oif, 4);
  len += RTA_ALIGN(ra->rta_len);
  req.nh.nlmsg_len = (uint32_t)len;
  int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (nl < 0) fail(4, "netlink socket");
  if (send(nl, &req, len, 0) != (ssize_t)len) fail(4, "netlink send");
  char buf[512];
  ssize_t n = recv(nl, buf, sizeof buf, 0);
  if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr))) fail(4, "netlink answer");
  struct nlmsghdr *h = (struct nlmsghdr *)buf;
  if (h->nlmsg_type != NLMSG_ERROR) fail(4, "netlink answer type");
  struct nlmsgerr *e = (struct nlmsgerr *)NLMSG_DATA(h);
  if (e->error != 0) {
    errno = -e->error;
    fail(4, "local route for 100.66.0.0/16");
  }
  close(nl);
}

static int open_tun(int fd) {
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, TUN_NAME, IFNAMSIZ - 1);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (ioctl(fd, TUNSETIFF, &ifr) != 0) fail(4, "create " TUN_NAME);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) fail(4, "socket");
  struct sockaddr_in a = in4(TUN_ADDR, 0), m = in4(0xFFFFFFFFu, 0);
  memcpy(&ifr.ifr_addr, &a, sizeof a);
  if (ioctl(s, SIOCSIFADDR, &ifr) != 0) fail(4, "address of " TUN_NAME);
  memcpy(&ifr.ifr_netmask, &m, sizeof m);
  if (ioctl(s, SIOCSIFNETMASK, &ifr) != 0) fail(4, "netmask of " TUN_NAME);
  if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) fail(4, "flags of " TUN_NAME);
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) fail(4, "bring up " TUN_NAME);
  struct rtentry rt;
  memset(&rt, 0, sizeof rt);
  struct sockaddr_in zero = in4(0, 0);
  memcpy(&rt.rt_dst, &zero, sizeof zero);
  memcpy(&rt.rt_genmask, &zero, sizeof zero);
  rt.rt_flags = RTF_UP;
  rt.rt_dev = (char *)TUN_NAME;
  if (ioctl(s, SIOCADDRT, &rt) != 0) fail(4, "default route");
  close(s);
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) fail(4, "nonblocking tun");
  return fd;
}

/* One Node IPC message carrying one descriptor, then the receiver's acknowledgement. */
static void hand_over(int fd, const char *json) {
  char ctrl[CMSG_SPACE(sizeof(int))];
  memset(ctrl, 0, sizeof ctrl);
  struct iovec iov = {(void *)json, strlen(json)};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  if (sendmsg(CHANNEL_FD, &msg, MSG_NOSIGNAL) != (ssize_t)strlen(json)) fail(5, "hand over a socket");
  close(fd);
  char line[256];
  size_t at = 0;
  for (;;) {
    char ch;
    ssize_t n = read(CHANNEL_FD, &ch, 1);
    if (n <= 0) fail(5, "the executor's channel closed");
    if (ch != '\n') {
      if (at < sizeof line - 1) line[at++] = ch;
      continue;
    }
    line[at] = 0;
    if (strstr(line, "NODE_HANDLE_NACK")) fail(5, "the executor refused a socket");
    if (strstr(line, "NODE_HANDLE_ACK")) return;
    at = 0;
  }
}

static uint32_t fold(uint32_t s) {
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return s;
}

/* RFC 1624: the checksum after replacing 16-bit words `from` by `to`. */
static uint16_t adjust(uint16_t check, const uint16_t *from, const uint16_t *to, int n) {
  uint32_t s = (uint16_t)~ntohs(check);
  for (int i = 0; i < n; i++) s += (uint16_t)~from[i] + to[i];
  return htons((uint16_t)~fold(s));
}

static uint16_t ip_checksum(const uint8_t *h, int len) {
  uint32_t s = 0;
  for (int i = 0; i < len; i += 2) s += (uint32_t)(h[i] << 8 | h[i + 1]);
  return htons((uint16_t)~fold(s));
}

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void put32(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }

/* Rewrites one packet in place; returns 0 when it is to be dropped. */
static int rewrite(uint8_t *p, ssize_t n, uint16_t listen_port) {
  if (n < 20 || (p[0] >> 4) != 4) return 0;
  int ihl = (p[0] & 15) * 4;
  if (ihl < 20 || n < ihl + 20 || get16(p + 2) != n || p[9] != IPPROTO_TCP) return 0;
  if (get16(p + 6) & 0x3FFF) return 0; /* fragments (MF or an offset) */
  uint8_t *t = p + ihl;
  uint32_t src = get32(p + 12), dst = get32(p + 16);
  uint16_t sp = get16(t), dp = get16(t + 2);
  uint32_t nsrc, ndst;
  uint16_t nsp, ndp;
  if (src == TUN_ADDR) {
    if ((dst & 0xFFFF0000u) == MAP_NET || dst == TUN_ADDR || (dst >> 24) == 127) return 0;
    nsrc = dst, nsp = dp, ndst = MAP_NET | sp, ndp = listen_port;
  } else if ((src & 0xFFFF0000u) == MAP_NET && sp == listen_port) {
    if ((dst & 0xFFFF0000u) == MAP_NET || dst == TUN_ADDR || (dst >> 24) == 127) return 0;
    nsrc = dst, nsp = dp, ndst = TUN_ADDR, ndp = (uint16_t)(src & 0xFFFF);
  } else {
    return 0;
  }
  uint16_t from[6] = {(uint16_t)(src >> 16), (uint16_t)src, (uint16_t)(dst >> 16), (uint16_t)dst, sp, dp};
  uint16_t to[6] = {(uint16_t)(nsrc >> 16), (uint16_t)nsrc, (uint16_t)(ndst >> 16), (uint16_t)ndst, nsp, ndp};
  uint16_t check;
  memcpy(&check, t + 16, 2);
  check = adjust(check, from, to, 6);
  memcpy(t + 16, &check, 2);
  put32(p + 12, nsrc);
  put32(p + 16, ndst);
  put16(t, nsp);
  put16(t + 2, ndp);
  p[10] = p[11] = 0;
  uint16_t ipc = ip_checksum(p, ihl);
  memcpy(p + 10, &ipc, 2);
  return 1;
}

int main(int argc, char **argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;
  signal(SIGPIPE, SIG_IGN);
  if (argc != 2 || strspn(argv[1], "0123456789") != strlen(argv[1]) || strlen(argv[1]) == 0 || strlen(argv[1]) > 9) {
    fprintf(stderr, "usage: transparent-tcp PID (fd 3: the executor's Node IPC channel)\n");
    return 2;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%s/ns/net", argv[1]);
  int netns = open(path, O_RDONLY | O_CLOEXEC);
  if (netns < 0) fail(2, "open the sandbox's network namespace");
  /* Never the executor's own network: only a namespace other than ours is configured. */
  if (same_ns("/proc/self/ns/net", netns)) {
    errno = 0;
    fail(2, "the target is in the executor's network namespace");
  }
  /* The user namespace that owns the network namespace: the sandbox's own, or (bubblewrap run
     as root inside a prepared namespace) the one it was created in before its own. */
  int userns = ioctl(netns, NS_GET_USERNS);
  if (userns < 0) {
    snprintf(path, sizeof path, "/proc/%s/ns/user", argv[1]);
    userns = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (userns < 0) fail(2, "open the sandbox's user namespace");
  if (!same_ns("/proc/self/ns/user", userns) && setns(userns, CLONE_NEWUSER) != 0) fail(2, "enter the sandbox's user namespace");
  if (setns(netns, CLONE_NEWNET) != 0) fail(2, "enter the sandbox's network namespace");
  close(userns);
  close(netns);
  /* A namespace bubblewrap unshared holds lo only; anything else is not ours to route. */
  struct if_nameindex *ifs = if_nameindex();
  if (!ifs) fail(4, "list interfaces");
  for (struct if_nameindex *i = ifs; i->if_index != 0; i++) {
    if (strcmp(i->if_name, "lo") != 0) {
      errno = 0;
      fail(4, "the sandbox's network namespace is not empty");
    }
  }
  if_freenameindex(ifs);
  /* Opened only now: a TUN device is created in the namespace its descriptor was opened in. */
  int tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (tun < 0) fail(3, "open /dev/net/tun");
  open_tun(tun);
  add_local_route();
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in any = in4(0, 0);
  if (ls < 0 || bind(ls, (struct sockaddr *)&any, sizeof any) != 0 || listen(ls, 511) != 0) fail(4, "transparent listener");
  socklen_t al = sizeof any;
  if (getsockname(ls, (struct sockaddr *)&any, &al) != 0) fail(4, "listener port");
  uint16_t port = ntohs(any.sin_port);
  int ds = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in dns = in4(DNS_ADDR, 53);
  if (ds < 0 || bind(ds, (struct sockaddr *)&dns, sizeof dns) != 0) fail(4, "resolver socket on 127.0.0.53:53");
  char json[160];
  snprintf(json, sizeof json, "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Server\",\"msg\":{\"transparent\":\"tcp\",\"port\":%u}}\n", port);
  hand_over(ls, json);
  hand_over(ds, "{\"cmd\":\"NODE_HANDLE\",\"type\":\"dgram.Socket\",\"dgramType\":\"udp4\",\"msg\":{\"transparent\":\"dns\"}}\n");

  static uint8_t buf[65536];
  struct pollfd fds[2] = {{tun, POLLIN, 0}, {CHANNEL_FD, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      fail(6, "poll");
    }
    if (fds[1].revents) {
      ssize_t n = read(CHANNEL_FD, buf, sizeof buf);
      if (n <= 0) return 0;
    }
    if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return 0;
    if (!(fds[0].revents & POLLIN)) continue;
    for (int i = 0; i < 64; i++) {
      ssize_t n = read(tun, buf, sizeof buf);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        fail(6, "read " TUN_NAME);
      }
      if (rewrite(buf, n, port) && write(tun, buf, (size_t)n) < 0 && errno != EAGAIN && errno != ENOBUFS) fail(6, "write " TUN_NAME);
    }
  }
}
