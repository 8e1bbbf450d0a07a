/*
 * The client images' probe of the system resolver: it asks the C library (glibc in
 * client-glibc, musl in client-musl) exactly as an application does, so the pod's own
 * /etc/resolv.conf (search list, ndots) decides which names are sent. Output is stable and
 * parseable by test/cluster/:
 *   resolve hosts NAME    getaddrinfo(NAME, AF_UNSPEC): "ADDR CANONNAME" per unique address,
 *                         exit 2 with "NOTFOUND <gai error>" when it fails
 *   resolve ptr ADDR      getnameinfo(ADDR, NI_NAMEREQD): the name, exit 2 when there is none
 *   resolve sleep         sleep until SIGTERM (the pod's main process)
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void stop(int sig) { _exit(128 + sig); }

static int hosts(const char *name) {
  struct addrinfo hints, *res, *ai;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_CANONNAME;
  int rc = getaddrinfo(name, NULL, &hints, &res);
  if (rc != 0) {
    printf("NOTFOUND %s\n", gai_strerror(rc));
    return 2;
  }
  const char *canon = res->ai_canonname ? res->ai_canonname : name;
  for (ai = res; ai; ai = ai->ai_next) {
    char buf[INET6_ADDRSTRLEN];
    const void *a = ai->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                                             : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
    if (!inet_ntop(ai->ai_family, a, buf, sizeof buf)) continue;
    printf("%s %s\n", buf, canon);
  }
  freeaddrinfo(res);
  return 0;
}

static int ptr(const char *addr) {
  struct sockaddr_storage ss;
  socklen_t len;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    len = sizeof *v6;
  } else {
    printf("BADADDR %s\n", addr);
    return 1;
  }
  char host[NI_MAXHOST];
  int rc = getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, NULL, 0, NI_NAMEREQD);
  if (rc != 0) {
    printf("NOTFOUND %s\n", gai_strerror(rc));
    return 2;
  }
  printf("%s\n", host);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 2 && strcmp(argv[1], "sleep") == 0) {
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    for (;;) pause();
  }
  if (argc == 3 && strcmp(argv[1], "hosts") == 0) return hosts(argv[2]);
  if (argc == 3 && strcmp(argv[1], "ptr") == 0) return ptr(argv[2]);
  fprintf(stderr, "usage: resolve hosts NAME | ptr ADDR | sleep\n");
  return 1;
}
