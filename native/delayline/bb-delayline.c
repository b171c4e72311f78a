/* bb-delayline: a user-space delay line between two interfaces, for kernels without netem.
 *
 *   bb-delayline IF_A IF_B DELAY_AB_US DELAY_BA_US [LIMIT_PACKETS]
 *
 * Every frame received on IF_A is sent on IF_B DELAY_AB_US microseconds later, and every frame received on
 * IF_B is sent on IF_A DELAY_BA_US later (a constant delay keeps the order). Frames are read and written with
 * AF_PACKET sockets carrying a virtio-net header (PACKET_VNET_HDR), so checksums the sender left to offload
 * and GSO frames pass through unchanged. Socket buffers are forced large so that they never act as a hidden
 * queue; the delay queues hold at most LIMIT_PACKETS frames per direction (default 100000), beyond which
 * frames are dropped and counted.
 *
 * Prints "ready" on stdout once both sockets are bound. On SIGUSR1 it prints its statistics as one JSON line,
 * on SIGUSR2 it sets them to zero (e.g. after a calibration), on SIGINT/SIGTERM it prints them and exits 0: per direction frames forwarded, dropped (queue full or send
 * error), and the lateness of each send against its due time (mean, max, count over 100 us), the delay the
 * line adds beyond the configured one.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAME (65536 + 64)
#define SOCK_BUF (64 * 1024 * 1024)

struct slot {
    uint64_t due_ns;
    uint32_t len;
    unsigned char *data;
};

struct dir {
    const char *name;
    int in_fd, out_fd;
    uint64_t delay_ns;
    struct slot *ring;
    uint32_t cap, head, count;
    uint64_t forwarded, dropped_full, dropped_send, late_over_100us;
    uint64_t late_sum_ns, late_max_ns;
};

static volatile sig_atomic_t want_stats, want_reset, want_exit;

static void on_usr1(int sig) { (void)sig; want_stats = 1; }
static void on_usr2(int sig) { (void)sig; want_reset = 1; }
static void on_term(int sig) { (void)sig; want_exit = 1; }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_socket(const char *ifname) {
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd < 0) { perror("socket(AF_PACKET)"); return -1; }
    int one = 1, buf = SOCK_BUF;
    if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) < 0) { perror("PACKET_VNET_HDR"); return -1; }
    if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0) {
        perror("PACKET_IGNORE_OUTGOING");
        return -1;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) < 0) perror("SO_RCVBUFFORCE");
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) < 0) perror("SO_SNDBUFFORCE");
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof sll);
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = (int)if_nametoindex(ifname);
    if (sll.sll_ifindex == 0) { fprintf(stderr, "bb-delayline: no interface %s\n", ifname); return -1; }
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) { perror("bind"); return -1; }
    return fd;
}

static void print_stats(struct dir *d, int n) {
    printf("{\"directions\": [");
    for (int i = 0; i < n; i++) {
        struct dir *x = &d[i];
        printf("%s{\"name\": \"%s\", \"delay_ns\": %llu, \"forwarded\": %llu, \"dropped_queue_full\": %llu, "
               "\"dropped_send\": %llu, \"queued\": %u, \"lateness_mean_ns\": %.1f, \"lateness_max_ns\": %llu, "
               "\"late_over_100us\": %llu}", i ? ", " : "", x->name, (unsigned long long)x->delay_ns,
               (unsigned long long)x->forwarded, (unsigned long long)x->dropped_full,
               (unsigned long long)x->dropped_send, x->count,
               x->forwarded ? (double)x->late_sum_ns / (double)x->forwarded : 0.0,
               (unsigned long long)x->late_max_ns, (unsigned long long)x->late_over_100us);
    }
    printf("]}\n");
    fflush(stdout);
}

static void receive(struct dir *d) {
    static unsigned char scratch[MAX_FRAME];
    for (;;) {
        ssize_t n = recv(d->in_fd, scratch, MAX_FRAME, MSG_DONTWAIT);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) perror("recv");
            return;
        }
        if (d->count == d->cap) { d->dropped_full++; continue; }
        struct slot *s = &d->ring[(d->head + d->count) % d->cap];
        s->data = malloc((size_t)n);
        if (!s->data) { d->dropped_full++; continue; }
        memcpy(s->data, scratch, (size_t)n);
        s->len = (uint32_t)n;
        s->due_ns = now_ns() + d->delay_ns;
        d->count++;
    }
}

static void transmit(struct dir *d) {
    while (d->count) {
        struct slot *s = &d->ring[d->head];
        uint64_t t = now_ns();
        if (s->due_ns > t) return;
        if (send(d->out_fd, s->data, s->len, 0) < 0) {
            if (errno == ENOBUFS || errno == EAGAIN) return;  /* retry on the next round, still due */
            d->dropped_send++;
        } else {
            uint64_t late = t - s->due_ns;
            d->forwarded++;
            d->late_sum_ns += late;
            if (late > d->late_max_ns) d->late_max_ns = late;
            if (late > 100000) d->late_over_100us++;
        }
        free(s->data);
        s->data = NULL;
        d->head = (d->head + 1) % d->cap;
        d->count--;
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: bb-delayline IF_A IF_B DELAY_AB_US DELAY_BA_US [LIMIT_PACKETS]\n");
        return 2;
    }
    uint32_t cap = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 100000;
    if (cap == 0) { fprintf(stderr, "bb-delayline: LIMIT_PACKETS must be > 0\n"); return 2; }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    int fa = open_socket(argv[1]), fb = open_socket(argv[2]);
    if (fa < 0 || fb < 0) return 1;
    struct dir d[2] = {
        {.name = "a_to_b", .in_fd = fa, .out_fd = fb, .delay_ns = strtoull(argv[3], NULL, 10) * 1000ull},
        {.name = "b_to_a", .in_fd = fb, .out_fd = fa, .delay_ns = strtoull(argv[4], NULL, 10) * 1000ull},
    };
    for (int i = 0; i < 2; i++) {
        d[i].cap = cap;
        d[i].ring = calloc(cap, sizeof(struct slot));
        if (!d[i].ring) { perror("calloc"); return 1; }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf("ready\n");
    fflush(stdout);
    struct pollfd pfd[2] = {{.fd = fa, .events = POLLIN}, {.fd = fb, .events = POLLIN}};
    while (!want_exit) {
        if (want_stats) { want_stats = 0; print_stats(d, 2); }
        if (want_reset) {
            want_reset = 0;
            for (int i = 0; i < 2; i++) {
                d[i].forwarded = d[i].dropped_full = d[i].dropped_send = d[i].late_over_100us = 0;
                d[i].late_sum_ns = d[i].late_max_ns = 0;
            }
            printf("reset\n");
            fflush(stdout);
        }
        uint64_t next = UINT64_MAX, t = now_ns();
        for (int i = 0; i < 2; i++)
            if (d[i].count && d[i].ring[d[i].head].due_ns < next) next = d[i].ring[d[i].head].due_ns;
        struct timespec ts = {0, 0}, *tsp = NULL;
        if (next != UINT64_MAX) {
            uint64_t wait = next > t ? next - t : 0;
            ts.tv_sec = (time_t)(wait / 1000000000ull);
            ts.tv_nsec = (long)(wait % 1000000000ull);
            tsp = &ts;
        } else {
            ts.tv_sec = 0;
            ts.tv_nsec = 200000000;  /* wake up now and then for signals */
            tsp = &ts;
        }
        int r = ppoll(pfd, 2, tsp, NULL);
        if (r < 0 && errno != EINTR) { perror("ppoll"); return 1; }
        if (r > 0) {
            if (pfd[0].revents & POLLIN) receive(&d[0]);
            if (pfd[1].revents & POLLIN) receive(&d[1]);
        }
        transmit(&d[0]);
        transmit(&d[1]);
    }
    print_stats(d, 2);
    return 0;
}
