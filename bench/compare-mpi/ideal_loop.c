/*
 * ideal_loop: mcast's 1-byte bcast + barrier loop across hosts, written as
 * the least a program can do for it, to bound what a runtime could reach on
 * the namespace cluster (issue 16's 3 hosts x 2 ranks).
 *
 * The same messages and the same order as mcast's host-aware bcast
 * (`Hosts { k: 0 }`, one packet: rank 0 sends to every other host's
 * leader over TCP and to its host-mate through shared memory; each leader
 * hands the byte to its host-mates through shared memory) and its
 * two-level barrier (host-mates tell their leader through a flag in shared
 * memory; the leaders tell rank 0 over TCP; rank 0 releases them over TCP;
 * each leader releases its host-mates through a flag; IDEAL_HUB=h makes
 * host h's leader the one the leaders tell and that releases them). No runtime: every
 * wait polls its socket (recv MSG_DONTWAIT) or its flag, with sched_yield
 * between polls, as mcast and Open MPI (mpi_yield_when_idle) do. No
 * engine, no headers, no inbox, no timers.
 *
 * Ranks are mapped by slot: ranks 2h and 2h+1 on host h, rank 2h its
 * leader (RANKS_PER_HOST changes the 2). Launched by mclaunch, which sets
 * MCAST_RANK and MCAST_SIZE:
 *
 *   cc -O2 -o /tmp/ideal_loop bench/compare-mpi/ideal_loop.c
 *   mclaunch --hostfile /tmp/mcast-cluster/hostfile \
 *     --launch-agent "ssh -F /tmp/mcast-cluster/ssh_config" -n 6 \
 *     -x IDEAL_IPS=10.77.0.1,10.77.0.2,10.77.0.3 -x IDEAL_PORT=$((30000 + RANDOM % 20000)) \
 *     /tmp/ideal_loop [ITERATIONS]
 *
 * Rank 0 prints the wall clock per iteration in microseconds (median of
 * 10 blocks of ITERATIONS / 10, after ITERATIONS / 10 warm-up).
 * IDEAL_POLL_NS and IDEAL_EVENT_NS add that much busy time to every look
 * at a socket or flag, or to every message or flag taken: what a
 * runtime's own work per poll or per event costs this loop.
 * Standard C and POSIX only; every wait is bounded (10 s, then exit 1).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LINE 128
#define MAX_HOSTS 16

struct host_flags {
    _Alignas(LINE) volatile uint64_t data;
    _Alignas(LINE) volatile uint64_t arrive[8]; /* per host-mate slot */
    _Alignas(LINE) volatile uint64_t release;
};

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double deadline;
static void check_deadline(const char *what) {
    if (now_us() > deadline) {
        fprintf(stderr, "ideal_loop: timed out waiting for %s\n", what);
        exit(1);
    }
}

/* Busy for `us` microseconds: a runtime's own cost, per look at a socket
 * or flag (IDEAL_POLL_NS) or per event taken (IDEAL_EVENT_NS). */
static double poll_us, event_us;
static void busy(double us) {
    if (us > 0) {
        double until = now_us() + us;
        while (now_us() < until)
            ;
    }
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

/* Wait for one byte on fd, polling. */
static void recv_byte(int fd, const char *what) {
    char c;
    for (;;) {
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 1) {
            busy(event_us);
            return;
        }
        if (n == 0) {
            fprintf(stderr, "ideal_loop: peer closed (%s)\n", what);
            exit(1);
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            die("recv");
        check_deadline(what);
        busy(poll_us);
        sched_yield();
    }
}

static void send_byte(int fd) {
    char c = 1;
    if (send(fd, &c, 1, 0) != 1)
        die("send");
}

static void wait_flag(volatile uint64_t *f, uint64_t want, const char *what) {
    while (*f < want) {
        check_deadline(what);
        busy(poll_us);
        sched_yield();
    }
    busy(event_us);
}

static int nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int main(int argc, char **argv) {
    const char *rs = getenv("MCAST_RANK"), *ns = getenv("MCAST_SIZE");
    const char *ips = getenv("IDEAL_IPS"), *ps = getenv("IDEAL_PORT");
    const char *per = getenv("RANKS_PER_HOST");
    if (!rs || !ns || !ips || !ps) {
        fprintf(stderr, "ideal_loop: needs MCAST_RANK, MCAST_SIZE, IDEAL_IPS, IDEAL_PORT\n");
        return 2;
    }
    int rank = atoi(rs), size = atoi(ns), port = atoi(ps);
    const char *pn = getenv("IDEAL_POLL_NS");
    poll_us = pn ? atof(pn) / 1e3 : 0;
    const char *en = getenv("IDEAL_EVENT_NS");
    event_us = en ? atof(en) / 1e3 : 0;
    int k = per ? atoi(per) : 2;
    long iters = argc > 1 ? atol(argv[1]) : 20000;
    if (k < 1 || k > 9 || size < 1 || size % k || size / k > MAX_HOSTS || iters < 10) {
        fprintf(stderr, "ideal_loop: bad sizes\n");
        return 2;
    }
    int hosts = size / k, host = rank / k, leader = host * k, slot = rank - leader;
    char ip[MAX_HOSTS][64];
    {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", ips);
        int h = 0;
        for (char *s = strtok(buf, ","); s && h < MAX_HOSTS; s = strtok(NULL, ","))
            snprintf(ip[h++], 64, "%s", s);
        if (h < hosts) {
            fprintf(stderr, "ideal_loop: IDEAL_IPS names %d hosts, need %d\n", h, hosts);
            return 2;
        }
    }
    deadline = now_us() + 10e6;

    /* Shared memory of this host (named by the port: one job, one name). */
    char name[64];
    snprintf(name, sizeof name, "/ideal-loop-%d-%d", port, host);
    struct host_flags *fl = NULL;
    if (k > 1) {
        int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
        if (fd < 0)
            die("shm_open");
        if (ftruncate(fd, sizeof *fl) != 0)
            die("ftruncate");
        fl = mmap(NULL, sizeof *fl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (fl == MAP_FAILED)
            die("mmap");
        close(fd);
    }

    /* TCP between every two hosts' leaders: leader a connects to each
     * leader b > a (which listens on port + b) and names its host. */
    int conn[MAX_HOSTS] = {0};
    if (rank == leader) {
        int l = -1;
        if (host > 0) {
            int one = 1;
            l = socket(AF_INET, SOCK_STREAM, 0);
            setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port + host)};
            inet_pton(AF_INET, ip[host], &a.sin_addr);
            if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, MAX_HOSTS))
                die("bind/listen");
        }
        for (int h = host + 1; h < hosts; h++) {
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port + h)};
            inet_pton(AF_INET, ip[h], &a.sin_addr);
            for (;;) {
                int s = socket(AF_INET, SOCK_STREAM, 0);
                if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
                    conn[h] = s;
                    break;
                }
                close(s);
                check_deadline("a leader to listen");
                usleep(1000);
            }
            char me = (char)host;
            if (send(conn[h], &me, 1, 0) != 1)
                die("send");
            nodelay(conn[h]);
        }
        for (int n = 0; n < host; n++) {
            int s = accept(l, NULL, NULL);
            char who;
            if (s < 0 || recv(s, &who, 1, MSG_WAITALL) != 1 || who < 0 || who >= host)
                die("accept");
            conn[(int)who] = s;
            nodelay(s);
        }
        if (l >= 0)
            close(l);
    }
    /* The barrier's hub: the leader of host IDEAL_HUB (default 0, rank 0's). */
    const char *hs = getenv("IDEAL_HUB");
    int hub = hs ? atoi(hs) : 0;
    if (hub < 0 || hub >= hosts)
        hub = 0;

    long warm = iters / 10, block = iters / 10;
    double blocks[10];
    double t0 = now_us();
    for (long i = 1; i <= warm + 10 * block; i++) {
        deadline = now_us() + 10e6;
        if (rank == leader) {
            /* The data: rank 0 to every other leader, each leader to its
             * host-mates. */
            if (rank == 0)
                for (int h = 1; h < hosts; h++)
                    send_byte(conn[h]);
            else
                recv_byte(conn[0], "the data");
            if (fl)
                fl->data = i;
            /* The barrier: host-mates to their leader, leaders to the hub,
             * the hub's release back, each leader's to its host-mates. */
            for (int m = 1; m < k; m++)
                wait_flag(&fl->arrive[m], i, "a host-mate's arrival");
            if (host == hub) {
                for (int h = 0; h < hosts; h++)
                    if (h != hub)
                        recv_byte(conn[h], "a leader's arrival");
                for (int h = 0; h < hosts; h++)
                    if (h != hub)
                        send_byte(conn[h]);
            } else {
                send_byte(conn[hub]);
                recv_byte(conn[hub], "the release");
            }
            if (fl)
                fl->release = i;
        } else {
            wait_flag(&fl->data, i, "the data");
            fl->arrive[slot] = i;
            wait_flag(&fl->release, i, "the release");
        }
        if (i > warm && (i - warm) % block == 0) {
            double t1 = now_us();
            blocks[(i - warm) / block - 1] = (t1 - t0) / block;
            t0 = t1;
        } else if (i == warm) {
            t0 = now_us();
        }
    }
    if (fl && rank == leader)
        shm_unlink(name);
    if (rank == 0) {
        for (int a = 0; a < 10; a++)
            for (int b = a + 1; b < 10; b++)
                if (blocks[b] < blocks[a]) {
                    double t = blocks[a];
                    blocks[a] = blocks[b];
                    blocks[b] = t;
                }
        printf("%.2f\n", (blocks[4] + blocks[5]) / 2);
    }
    return 0;
}
