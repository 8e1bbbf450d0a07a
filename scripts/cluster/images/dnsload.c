/*
 * The cluster suite's DNS load client (client-glibc image, test/cluster/rollout.test.ts): sends
 * queries at a steady rate to one server, each from a fresh UDP socket (a new ephemeral source
 * port, as the C libraries' stub resolvers do), and waits up to a timeout for each answer with no
 * retry. It counts what a pod's application would see: a query is answered when a reply with its
 * id and question and RCODE NOERROR with at least one answer record arrives in time; anything else
 * (timeout, ICMP port unreachable, another RCODE, an empty answer) is a failure.
 *
 *   dnsload SERVER RATE NAME [TIMEOUT_MS]
 *
 * Output (stdout, one line each, parsed by test/cluster/load.ts):
 *   start server=S rate=R name=N timeout_ms=T
 *   sec S sent N answered A failed F late L   every second, for the queries *sent* in the Unix
 *                                             second S, once all of them are settled (S + 1 s +
 *                                             the timeout later); L: sent over 100 ms behind the
 *                                             schedule (the client was starved of CPU)
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
  int fd;           /* -1: free */
  uint16_t id;
  int64_t sent_ms;  /* realtime, for the report */
  int64_t deadline; /* monotonic ns */
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
static int64_t real_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
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
  struct bucket *b = bucket_for(s->sent_ms / 1000);
  if (ok) {
    b->answered++;
    tot_answered++;
  } else {
    b->failed++;
    tot_failed++;
    printf("fail %lld %s\n", (long long)s->sent_ms, reason);
  }
  epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
  close(s->fd);
  s->fd = -1;
}

static void send_one(long seq, const struct sockaddr_in *server, int epfd, int late, int64_t timeout_ns) {
  int i = (int)(seq % CAP);
  struct slot *s = &slots[i];
  if (s->fd >= 0) {
    fprintf(stderr, "dnsload: more than %d queries in flight; lower the rate or the timeout\n", CAP);
    exit(1);
  }
  s->sent_ms = real_ms();
  s->deadline = mono_ns() + timeout_ns;
  struct bucket *b = bucket_for(s->sent_ms / 1000);
  b->sent++;
  tot_sent++;
  if (late) b->late++;
  uint16_t id;
  if (getentropy(&id, sizeof id) != 0) id = (uint16_t)rand();
  s->id = id;
  query[0] = (unsigned char)(id >> 8);
  query[1] = (unsigned char)id;
  char reason[64];
  /* A new socket per query: connect() binds a fresh ephemeral port, and ICMP errors (port
   * unreachable) come back as ECONNREFUSED, as in glibc's and musl's resolvers. */
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) {
    b->failed++, tot_failed++;
    printf("fail %lld send:%s\n", (long long)s->sent_ms, strerror(errno));
    return;
  }
  struct epoll_event ev = {.events = EPOLLIN | EPOLLERR, .data.u32 = (uint32_t)i};
  if (connect(s->fd, (const struct sockaddr *)server, sizeof *server) != 0 ||
      send(s->fd, query, qlen, 0) != (ssize_t)qlen) {
    snprintf(reason, sizeof reason, "send:%s", strerror(errno));
    epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev);
    settle(i, 0, reason, epfd);
    return;
  }
  epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev);
}

static void receive(int i, int epfd) {
  struct slot *s = &slots[i];
  unsigned char buf[1500];
  char reason[64];
  for (;;) {
    ssize_t n = recv(s->fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == ECONNREFUSED)
        snprintf(reason, sizeof reason, "refused");
      else
        snprintf(reason, sizeof reason, "recv:%s", strerror(errno));
      settle(i, 0, reason, epfd);
      return;
    }
    /* Not this query's reply (another id or question): keep waiting, as a stub resolver does. */
    if (n < 12 + (ssize_t)qdlen || buf[0] != (unsigned char)(s->id >> 8) || buf[1] != (unsigned char)s->id ||
        !(buf[2] & 0x80) || buf[4] != 0 || buf[5] != 1 || memcmp(buf + 12, query + 12, qdlen) != 0)
      continue;
    int rcode = buf[3] & 0x0f;
    int ancount = (buf[6] << 8) | buf[7];
    if (rcode != 0) {
      snprintf(reason, sizeof reason, "rcode=%d", rcode);
      settle(i, 0, reason, epfd);
    } else if (ancount == 0) {
      settle(i, 0, "noanswer", epfd);
    } else {
      settle(i, 1, NULL, epfd);
    }
    return;
  }
}

/* Print every second whose queries are all settled (sent before now - timeout - 1 s). */
static void report(int64_t timeout_ms, int all) {
  int64_t horizon = (real_ms() - timeout_ms - 200) / 1000; /* seconds < horizon are final */
  for (;;) {
    struct bucket *oldest = NULL;
    for (int k = 0; k < BUCKETS; k++)
      if (buckets[k].sec >= 0 && (all || buckets[k].sec < horizon) && (!oldest || buckets[k].sec < oldest->sec))
        oldest = &buckets[k];
    if (!oldest) break;
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
    int64_t now = mono_ns();
    /* Send what the schedule says is due; behind schedule (CPU starvation) catch up and count it. */
    while (!stopping && now >= next_send) {
      send_one(seq++, &server, epfd, now - next_send > 100000000, timeout_ns);
      next_send += interval;
    }
    /* Timeouts: deadlines follow send order. */
    while (oldest < seq && (slots[oldest % CAP].fd < 0 || slots[oldest % CAP].deadline <= now)) {
      if (slots[oldest % CAP].fd >= 0) settle((int)(oldest % CAP), 0, "timeout", epfd);
      oldest++;
    }
    if (now - last_report >= 250000000) {
      report(timeout_ms, 0);
      last_report = now;
    }
    if (stopping && oldest == seq) break;
    int64_t wake = stopping ? now + 50000000 : next_send;
    if (oldest < seq && slots[oldest % CAP].deadline < wake) wake = slots[oldest % CAP].deadline;
    int wait_ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
    struct epoll_event evs[256];
    int n = epoll_wait(epfd, evs, 256, wait_ms);
    for (int k = 0; k < n; k++) {
      int i = (int)evs[k].data.u32;
      if (slots[i].fd >= 0) receive(i, epfd);
    }
  }
  report(timeout_ms, 1);
  printf("done sent %ld answered %ld failed %ld\n", tot_sent, tot_answered, tot_failed);
  return 0;
}
