/*
 * tcp_pingpong: the loopback TCP one-hop latency floor.
 *
 * A 1-byte ping-pong over a TCP connection on 127.0.0.1 (TCP_NODELAY, blocking
 * sockets, as a plain MPI/mcast TCP hop would use): the client times each round
 * trip with CLOCK_MONOTONIC and reports the one-way latency, round trip / 2.
 *
 *   tcp_pingpong serve                 listen on 127.0.0.1:<ephemeral>, print
 *                                      "PORT <n>" on stdout, echo one client
 *   tcp_pingpong client PORT [ITERS] [WARMUP]
 *                                      ping-pong with a server, print one JSON
 *                                      line: one-way µs (median, mean, p10, p90)
 *   tcp_pingpong local [ITERS] [WARMUP]
 *                                      both ends in one run (fork), unpinned
 *
 * run.py pins the two ends with taskset: both on one core (`taskset -c 0` for
 * both processes), or on different cores (`taskset -c 0` server, `-c 1` client).
 *
 * Two settings, for a hop between the test cluster's namespace hosts
 * (bench/cluster): TCP_PINGPONG_ADDR=A.B.C.D, the IPv4 address the server
 * listens on and the client connects to (default 127.0.0.1); and
 * TCP_PINGPONG_SPIN=1, both ends reading with MSG_DONTWAIT in a loop, as a
 * polling MPI or mcast rank waits, instead of blocking in read. E.g.
 *   ip netns exec mc-h2 env TCP_PINGPONG_ADDR=10.77.0.2 TCP_PINGPONG_SPIN=1 tcp_pingpong serve
 *   ip netns exec mc-h1 env TCP_PINGPONG_ADDR=10.77.0.2 TCP_PINGPONG_SPIN=1 tcp_pingpong client PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void nodelay(int fd) {
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) die("TCP_NODELAY");
}

/* TCP_PINGPONG_ADDR, or the loopback address. */
static in_addr_t address(void) {
    const char *a = getenv("TCP_PINGPONG_ADDR");
    struct in_addr in;
    if (!a || !*a) return htonl(INADDR_LOOPBACK);
    if (inet_pton(AF_INET, a, &in) != 1) {
        fprintf(stderr, "tcp_pingpong: TCP_PINGPONG_ADDR=%s is not an IPv4 address\n", a);
        exit(2);
    }
    return in.s_addr;
}

/* Read one byte: spinning on MSG_DONTWAIT under TCP_PINGPONG_SPIN=1, else
 * blocking. 1, 0 at the end of the stream, -1 on an error. */
static ssize_t read1(int fd, char *c) {
    static int spin = -1;
    if (spin < 0) spin = getenv("TCP_PINGPONG_SPIN") && !strcmp(getenv("TCP_PINGPONG_SPIN"), "1");
    if (!spin) return read(fd, c, 1);
    for (;;) {
        ssize_t r = recv(fd, c, 1, MSG_DONTWAIT);
        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return r;
    }
}

static int listen_loopback(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = address();
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(fd, 1) < 0) die("listen");
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) die("getsockname");
    *port = ntohs(a.sin_port);
    return fd;
}

/* Echo single bytes until the peer closes. */
static void serve(int lfd) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) die("accept");
    nodelay(fd);
    char c;
    for (;;) {
        ssize_t r = read1(fd, &c);
        if (r == 0) break;
        if (r < 0) die("server read");
        if (write(fd, &c, 1) != 1) die("server write");
    }
    close(fd);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void client(int port, long iters, long warmup) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = address();
    a.sin_port = htons((unsigned short)port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    nodelay(fd);
    double *t = malloc(sizeof(double) * (size_t)iters);
    double *w = malloc(sizeof(double) * (size_t)iters);
    if (!t || !w) die("malloc");
    char c = 'x';
    for (long i = 0; i < warmup + iters; i++) {
        double t0 = now_us();
        if (write(fd, &c, 1) != 1) die("client write");
        double t1 = now_us();
        if (read1(fd, &c) != 1) die("client read");
        double dt = now_us() - t0;
        if (i >= warmup) {
            t[i - warmup] = dt / 2.0;
            w[i - warmup] = t1 - t0;
        }
    }
    close(fd);
    double sum = 0;
    for (long i = 0; i < iters; i++) sum += t[i];
    qsort(t, (size_t)iters, sizeof(double), cmp);
    qsort(w, (size_t)iters, sizeof(double), cmp);
    /* write_median_us: the write call alone (on veth it also runs the
     * receiving side's TCP work, on the writer's CPU). */
    printf("{\"iterations\": %ld, \"median_us\": %.4f, \"mean_us\": %.4f, "
           "\"p10_us\": %.4f, \"p90_us\": %.4f, \"write_median_us\": %.4f}\n",
           iters, t[iters / 2], sum / iters, t[iters / 10], t[iters * 9 / 10], w[iters / 2]);
    free(t);
    free(w);
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "serve")) {
        int port, lfd = listen_loopback(&port);
        printf("PORT %d\n", port);
        fflush(stdout);
        serve(lfd);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "client")) {
        long iters = argc > 3 ? atol(argv[3]) : 20000, warm = argc > 4 ? atol(argv[4]) : 2000;
        if (iters < 1) iters = 1;
        client(atoi(argv[2]), iters, warm);
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "local")) {
        long iters = argc > 2 ? atol(argv[2]) : 20000, warm = argc > 3 ? atol(argv[3]) : 2000;
        if (iters < 1) iters = 1;
        int port, lfd = listen_loopback(&port);
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            serve(lfd);
            _exit(0);
        }
        close(lfd);
        client(port, iters, warm);
        waitpid(pid, NULL, 0);
        return 0;
    }
    fprintf(stderr, "usage: tcp_pingpong serve | client PORT [ITERS] [WARMUP] | "
                    "local [ITERS] [WARMUP]\n");
    return 2;
}
