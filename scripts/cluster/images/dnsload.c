/*
 * The cluster suite's DNS load client (client-glibc image, test/cluster/rollout.test.ts): sends
 * queries at a steady rate to one server, each from a fresh UDP socket (a new ephemeral source
 * port, as the C libraries' stub resolvers do), and waits up to a timeout for each answer with no
 * retry. It counts what a pod's application would see: a query is answered when a reply with its
 * id and question and RCODE NOERROR with at least one answer record arrives in time; anything else
 * (timeout, ICMP port unreachable, another RCODE, an empty answer) is a failure. "In time" is
 * judged by the kernel's arrival stamp of the reply, so a client starved of CPU does not turn
 * answered queries into timeouts.
 *
 *   dnsload SERVER RATE NAME [TIMEOUT_MS]
 *
 * Output (stdout, one line each, parsed by test/cluster/load.ts):
 *   start server=S rate=R name=N timeout_ms=T
 *   sec S sent N answered A failed F late L   every second, for the queries *sent* in the Unix
 *                                             second S, once all of them are settled (S + 1 s +
 *                                             the timeout later); L: sends skipped because the
 *                                             client was starved of CPU over 100 ms (it never
 *                                             bursts to catch up)
 *   fail MS REASON                            one per failed query: its send time (Unix ms) and
 *                                             timeout | refused | rcode=N | noanswer | send:ERR |
 *                                             recv:ERR
 *   done sent N answered A failed F           after SIGTERM/SIGINT, once everything is settled
 * Counting by send second lets a test sum the queries sent in any window exactly: a second's line
 * is final when printed, whatever is still in flight.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CAP 8192    /* queries in flight at most: rate x timeout must stay below it */
#define BUCKETS 64  /* seconds of counters kept until printed */

struct slot {
  int fd; /* -1: free */
  uint16_t id;
  int64_t sent_ns;  /* realtime, just before send() */
  int64_t deadline; /* realtime ns: sent_ns + timeout */
};
struct bucket {
  int64_t sec; /* -1: unused */
  long sent, answered, failed, late;
};

static struct slot slots[CAP];
static struct bucket buckets[BUCKETS];
static unsigned char query[512];
static size_t qlen, qdlen; /* whole query; its question section (after the 12-byte header) */
static volatile sig_atomic_t stopping;
static long tot_sent, tot_answered, tot_failed;

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
static int64_t real_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static struct bucket *bucket_for(int64_t sec) {
  struct bucket *b = &buckets[sec % BUCKETS];
  if (b->sec != sec) {
    /* A second still unprinted would be lost: BUCKETS covers far more than timeout + 1 s. */
    if (b->sec >= 0) fprintf(stderr, "dnsload: bucket of second %lld overwritten\n", (long long)b->sec);
    memset(b, 0, sizeof *b);
    b->sec = sec;
  }
  return b;
}

/* The query: header (id patched per query, RD), NAME A IN, no EDNS. */
static int build_query(const char *name) {
  unsigned char *p = query + 12;
  memset(query, 0, 12);
  query[2] = 0x01; /* RD */
  query[5] = 1;    /* QDCOUNT */
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
  *p++ = 0, *p++ = 1; /* A */
  *p++ = 0, *p++ = 1; /* IN */
  qlen = (size_t)(p - query);
  qdlen = qlen - 12;
  return 0;
}

static void settle(int i, int ok, const char *reason, int epfd) {
  struct slot *s = &slots[i];
  struct bucket *b = bucket_for(s->sent_ns / 1000000000);
  if (ok) {
    b->answered++;
    tot_answered++;
  } else {
    b->failed++;
    tot_failed++;
    printf("fail %lld %s\n", (long long)(s->sent_ns / 1000000), reason);
  }
  epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
  close(s->fd);
  s->fd = -1;
}

static void send_one(long seq, const struct sockaddr_in *server, int epfd, int64_t timeout_ns) {
  int i = (int)(seq % CAP);
  struct slot *s = &slots[i];
  if (s->fd >= 0) {
    fprintf(stderr, "dnsload: more than %d queries in flight; lower the rate or the timeout\n", CAP);
    exit(1);
  }
  uint16_t id;
  if (getentropy(&id, sizeof id) != 0) id = (uint16_t)rand();
  s->id = id;
  query[0] = (unsigned char)(id >> 8);
  query[1] = (unsigned char)id;
  /* A new socket per query: connect() binds a fresh ephemeral port, and ICMP errors (port
   * unreachable) come back as ECONNREFUSED, as in glibc's and musl's resolvers. The kernel stamps
   * each datagram's arrival (SO_TIMESTAMPNS): whether the answer came in time is decided by that
   * stamp, not by when this process got the CPU to read it (a starved client is not a lost query). */
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  s->sent_ns = real_ns();
  s->deadline = s->sent_ns + timeout_ns;
  struct bucket *b = bucket_for(s->sent_ns / 1000000000);
  b->sent++;
  tot_sent++;
  if (fd < 0) {
    b->failed++, tot_failed++;
    printf("fail %lld send:%s\n", (long long)(s->sent_ns / 1000000), strerror(errno));
    return;
  }
  s->fd = fd;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLERR, .data.u32 = (uint32_t)i};
  epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
  if (connect(fd, (const struct sockaddr *)server, sizeof *server) != 0 || send(fd, query, qlen, 0) != (ssize_t)qlen) {
    char reason[64];
    snprintf(reason, sizeof reason, "send:%s", strerror(errno));
    settle(i, 0, reason, epfd);
  }
}

/* Read what arrived for slot i. Returns 1 once the query is settled. */
static int receive(int i, int epfd) {
  struct slot *s = &slots[i];
  unsigned char buf[1500];
  char reason[64];
  for (;;) {
    char ctrl[CMSG_SPACE(sizeof(struct timespec))];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof ctrl};
    ssize_t n = recvmsg(s->fd, &msg, 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      if (errno == ECONNREFUSED)
        snprintf(reason, sizeof reason, "refused");
      else
        snprintf(reason, sizeof reason, "recv:%s", strerror(errno));
      settle(i, 0, reason, epfd);
      return 1;
    }
    int64_t arrived = real_ns();
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        struct timespec t;
        memcpy(&t, CMSG_DATA(c), sizeof t);
        arrived = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
      }
    /* Not this query's reply (another id or question): keep waiting, as a stub resolver does. */
    if (n < 12 + (ssize_t)qdlen || buf[0] != (unsigned char)(s->id >> 8) || buf[1] != (unsigned char)s->id ||
        !(buf[2] & 0x80) || buf[4] != 0 || buf[5] != 1 || memcmp(buf + 12, query + 12, qdlen) != 0)
      continue;
    int rcode = buf[3] & 0x0f;
    int ancount = (buf[6] << 8) | buf[7];
    if (arrived > s->deadline) {
      settle(i, 0, "timeout", epfd); /* it came, but after the client had given up */
    } else if (rcode != 0) {
      snprintf(reason, sizeof reason, "rcode=%d", rcode);
      settle(i, 0, reason, epfd);
    } else if (ancount == 0) {
      settle(i, 0, "noanswer", epfd);
    } else {
      settle(i, 1, NULL, epfd);
    }
    return 1;
  }
}

/* Print, oldest first, every second whose queries are all settled and that no later query can
 * fall into (it ended more than a timeout ago); `all`: every second left. */
static void report(int64_t timeout_ns, int all) {
  int64_t horizon = (real_ns() - timeout_ns) / 1000000000 - 1;
  for (;;) {
    struct bucket *oldest = NULL;
    for (int k = 0; k < BUCKETS; k++)
      if (buckets[k].sec >= 0 && (!oldest || buckets[k].sec < oldest->sec)) oldest = &buckets[k];
    if (!oldest) break;
    int settled = oldest->answered + oldest->failed == oldest->sent;
    if (!all && !(settled && oldest->sec < horizon)) break;
    printf("sec %lld sent %ld answered %ld failed %ld late %ld\n", (long long)oldest->sec, oldest->sent,
           oldest->answered, oldest->failed, oldest->late);
    oldest->sec = -1;
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: dnsload SERVER RATE NAME [TIMEOUT_MS]\n");
    return 2;
  }
  struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(53)};
  if (inet_pton(AF_INET, argv[1], &server.sin_addr) != 1) {
    fprintf(stderr, "dnsload: SERVER must be an IPv4 address: %s\n", argv[1]);
    return 2;
  }
  double rate = atof(argv[2]);
  int64_t timeout_ms = argc > 4 ? atoll(argv[4]) : 2000;
  if (rate <= 0 || timeout_ms <= 0 || rate * (double)timeout_ms / 1000.0 >= CAP / 2) {
    fprintf(stderr, "dnsload: RATE and TIMEOUT_MS must be positive, rate x timeout below %d\n", CAP / 2);
    return 2;
  }
  if (build_query(argv[3]) != 0) {
    fprintf(stderr, "dnsload: bad name %s\n", argv[3]);
    return 2;
  }
  for (int i = 0; i < CAP; i++) slots[i].fd = -1;
  for (int k = 0; k < BUCKETS; k++) buckets[k].sec = -1;
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  setvbuf(stdout, NULL, _IOLBF, 0);
  srand((unsigned)mono_ns());
  printf("start server=%s rate=%g name=%s timeout_ms=%lld\n", argv[1], rate, argv[3], (long long)timeout_ms);

  int epfd = epoll_create1(EPOLL_CLOEXEC);
  const int64_t interval = (int64_t)(1e9 / rate), timeout_ns = timeout_ms * 1000000;
  int64_t next_send = mono_ns(), last_report = 0;
  long seq = 0, oldest = 0; /* queries [oldest, seq) may be in flight, in send (= deadline) order */
  for (;;) {
    /* What arrived first (its arrival stamp decides), then what is due to be sent. */
    struct epoll_event evs[256];
    int n;
    while ((n = epoll_wait(epfd, evs, 256, 0)) > 0)
      for (int k = 0; k < n; k++) {
        int i = (int)evs[k].data.u32;
        if (slots[i].fd >= 0) receive(i, epfd);
      }
    int64_t now = mono_ns();
    /* Send what the schedule says is due. More than 100 ms behind (the client was starved of
     * CPU): skip the missed sends and count them, rather than burst to catch up, so that the
     * servers never see more than the rate. */
    while (!stopping && now >= next_send) {
      if (now - next_send > 100000000) {
        int64_t missed = (now - next_send) / interval;
        bucket_for(real_ns() / 1000000000)->late += missed;
        next_send += missed * interval;
      }
      send_one(seq++, &server, epfd, timeout_ns);
      next_send += interval;
    }
    /* Timeouts (deadlines follow send order): a reply already queued may still have come in time. */
    int64_t rnow = real_ns();
    while (oldest < seq && (slots[oldest % CAP].fd < 0 || slots[oldest % CAP].deadline <= rnow)) {
      int i = (int)(oldest % CAP);
      if (slots[i].fd >= 0 && !receive(i, epfd)) settle(i, 0, "timeout", epfd);
      oldest++;
    }
    if (now - last_report >= 250000000) {
      report(timeout_ns, 0);
      last_report = now;
    }
    if (stopping && oldest == seq) break;
    int64_t wait_ns = stopping ? 50000000 : next_send - now;
    if (oldest < seq && slots[oldest % CAP].deadline - rnow < wait_ns) wait_ns = slots[oldest % CAP].deadline - rnow;
    int wait_ms = wait_ns > 0 ? (int)((wait_ns + 999999) / 1000000) : 0;
    n = epoll_wait(epfd, evs, 256, wait_ms);
    for (int k = 0; k < n; k++) {
      int i = (int)evs[k].data.u32;
      if (slots[i].fd >= 0) receive(i, epfd);
    }
  }
  report(timeout_ns, 1);
  printf("done sent %ld answered %ld failed %ld\n", tot_sent, tot_answered, tot_failed);
  return 0;
}
