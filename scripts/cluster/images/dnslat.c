/*
 * The cluster suite's latency probe (client-glibc image, test/cluster/node-local.test.ts): how long
 * one name takes to be answered by each of several servers, asked from the same pod in turn, so
 * that every server is measured under the same conditions (issue 26: a cache hit on the node
 * against the same query through the cluster DNS Service).
 *
 *   dnslat ROUNDS NAME SERVER...
 *
 * Each round sends one A query for NAME to each SERVER:53 in turn, one at a time, each from a new
 * connected UDP socket (a fresh ephemeral source port, as the C libraries' stub resolvers do), and
 * waits up to 2 s for the reply with no retry. The time of a query runs from just before send() to
 * the kernel's arrival stamp of its reply (SO_TIMESTAMPNS): what the network path and the server
 * took, not when this process got the CPU back. One unmeasured query per server first warms the
 * servers' caches. Replies count only with the query's id and question, NOERROR and an answer.
 *
 * Output (stdout), one line per server, in the order given:
 *   server S name N rounds R answered A failed F p50_us X p90_us X p99_us X min_us X max_us X
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SERVERS 8
#define TIMEOUT_MS 2000

static unsigned char query[512];
static size_t qlen, qdlen;

static int64_t real_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The query: header (id patched per query, RD), NAME A IN, no EDNS (as dnsload's). */
static int build_query(const char *name) {
  unsigned char *p = query + 12;
  memset(query, 0, 12);
  query[2] = 0x01;
  query[5] = 1;
  const char *s = name;
  while (*s) {
    const char *dot = strchr(s, '.');
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (n == 0 || n > 63 || (size_t)(p - query) + n + 6 > sizeof query) return -1;
    *p++ = (unsigned char)n;
    memcpy(p, s, n);
    p += n;
    s += n;
    if (*s == '.') s++;
  }
  *p++ = 0;
  *p++ = 0, *p++ = 1;
  *p++ = 0, *p++ = 1;
  qlen = (size_t)(p - query);
  qdlen = qlen - 12;
  return 0;
}

/* One query to `server`; its time in ns, or -1 when it failed (timeout, refused, no answer). */
static int64_t ask(const struct sockaddr_in *server) {
  uint16_t id;
  if (getentropy(&id, sizeof id) != 0) id = (uint16_t)rand();
  query[0] = (unsigned char)(id >> 8);
  query[1] = (unsigned char)id;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
  int64_t result = -1;
  if (connect(fd, (const struct sockaddr *)server, sizeof *server) != 0) goto out;
  int64_t sent = real_ns();
  if (send(fd, query, qlen, 0) != (ssize_t)qlen) goto out;
  int64_t deadline = sent + (int64_t)TIMEOUT_MS * 1000000;
  for (;;) {
    int64_t left = deadline - real_ns();
    if (left <= 0) goto out;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, (int)((left + 999999) / 1000000)) <= 0) goto out;
    unsigned char buf[1500];
    char ctrl[CMSG_SPACE(sizeof(struct timespec))];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl};
    ssize_t n = recvmsg(fd, &msg, 0);
    if (n < 0) goto out; /* ECONNREFUSED and the like */
    int64_t arrived = real_ns();
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        struct timespec t;
        memcpy(&t, CMSG_DATA(c), sizeof t);
        arrived = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
      }
    if (n < 12 + (ssize_t)qdlen || buf[0] != query[0] || buf[1] != query[1] || !(buf[2] & 0x80) ||
        memcmp(buf + 12, query + 12, qdlen) != 0)
      continue; /* not this query's reply */
    if ((buf[3] & 0x0f) == 0 && ((buf[6] << 8) | buf[7]) > 0 && arrived <= deadline) result = arrived - sent;
    goto out;
  }
out:
  close(fd);
  return result;
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The q-quantile of n sorted values (nearest rank), in µs. */
static long quantile_us(const int64_t *v, long n, double q) {
  long k = (long)(q * (double)n + 0.999999) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return (long)(v[k] / 1000);
}

int main(int argc, char **argv) {
  if (argc < 4 || argc - 3 > MAX_SERVERS) {
    fprintf(stderr, "usage: dnslat ROUNDS NAME SERVER... (at most %d servers)\n", MAX_SERVERS);
    return 2;
  }
  long rounds = atol(argv[1]);
  int nserv = argc - 3;
  struct sockaddr_in servers[MAX_SERVERS];
  if (rounds <= 0 || build_query(argv[2]) != 0) {
    fprintf(stderr, "dnslat: ROUNDS must be positive and NAME a domain name\n");
    return 2;
  }
  for (int s = 0; s < nserv; s++) {
    servers[s] = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(53)};
    if (inet_pton(AF_INET, argv[3 + s], &servers[s].sin_addr) != 1) {
      fprintf(stderr, "dnslat: SERVER must be an IPv4 address: %s\n", argv[3 + s]);
      return 2;
    }
  }
  int64_t *times[MAX_SERVERS];
  long answered[MAX_SERVERS] = {0}, failed[MAX_SERVERS] = {0};
  for (int s = 0; s < nserv; s++) {
    times[s] = calloc((size_t)rounds, sizeof(int64_t));
    if (!times[s]) return 1;
    ask(&servers[s]); /* warm the cache; not counted */
  }
  for (long r = 0; r < rounds; r++)
    for (int s = 0; s < nserv; s++) {
      int64_t t = ask(&servers[s]);
      if (t < 0)
        failed[s]++;
      else
        times[s][answered[s]++] = t;
    }
  for (int s = 0; s < nserv; s++) {
    long n = answered[s];
    qsort(times[s], (size_t)n, sizeof(int64_t), cmp);
    if (n == 0) {
      printf("server %s name %s rounds %ld answered 0 failed %ld\n", argv[3 + s], argv[2], rounds, failed[s]);
      continue;
    }
    printf("server %s name %s rounds %ld answered %ld failed %ld p50_us %ld p90_us %ld p99_us %ld min_us %ld max_us %ld\n",
           argv[3 + s], argv[2], rounds, n, failed[s], quantile_us(times[s], n, 0.5), quantile_us(times[s], n, 0.9),
           quantile_us(times[s], n, 0.99), (long)(times[s][0] / 1000), (long)(times[s][n - 1] / 1000));
  }
  return 0;
}
