/*
 * bb-loadgen: benchbook's native constant-rate load generator.
 *
 * Sends Ethernet/IPv4/UDP frames through an AF_PACKET socket with sendmmsg(2).
 * Every frame carries a 64-bit packet id, big-endian (network byte order), at
 * byte offset 42 of the frame (the first 8 bytes of the UDP payload, right after
 * the 14 B Ethernet, 20 B IPv4 and 8 B UDP headers). benchbook matches captures
 * with IdKey(offset=42, width=8).
 *
 * --size is the Ethernet frame size *including* the 4 B FCS, as MoonGen counts
 * it (-x 64): the bytes handed to the kernel (and seen in a capture) are size-4.
 *
 * Pacing: packet k is due at t0 + k * 1e9 / rate on CLOCK_MONOTONIC. The sender
 * sleeps with clock_nanosleep(TIMER_ABSTIME) (timer slack set to 1 ns) until the
 * next packet is due, then sends every packet that is due (at most --batch per
 * sendmmsg). With --spin-ns N it wakes N ns early and busy-waits the rest.
 * --unpaced sends full batches as fast as the path takes them (the ceiling).
 *
 * Output: one JSON object on stdout when done (or on SIGINT/SIGTERM, with what
 * was sent so far). Errors: a message on stderr and exit code 2 (usage) or 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ID_OFFSET 42
#define MAX_BATCH 1024
#define MAX_FRAME 9018

static volatile sig_atomic_t stop_requested = 0;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
    struct timespec ts;
    ts.tv_sec = (time_t)(t / 1000000000ull);
    ts.tv_nsec = (long)(t % 1000000000ull);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        if (stop_requested) return;
    }
}

static int parse_mac(const char *s, uint8_t mac[6]) {
    unsigned v[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return -1;
    for (int i = 0; i < 6; i++) {
        if (v[i] > 255) return -1;
        mac[i] = (uint8_t)v[i];
    }
    return 0;
}

static uint16_t csum_fold(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n) {
    for (size_t i = 0; i + 1 < n; i += 2) sum += (uint32_t)((p[i] << 8) | p[i + 1]);
    if (n & 1) sum += (uint32_t)(p[n - 1] << 8);
    return sum;
}

/* Write id into the frame and recompute the UDP checksum (IPv4 pseudo header). */
static void stamp_frame(uint8_t *f, size_t len, uint64_t id) {
    for (int i = 0; i < 8; i++) f[ID_OFFSET + i] = (uint8_t)(id >> (56 - 8 * i));
    uint8_t *ip = f + 14, *udp = f + 34;
    size_t udp_len = len - 34;
    udp[6] = udp[7] = 0;
    uint32_t sum = 0;
    sum = csum_add(sum, ip + 12, 8); /* source and destination addresses */
    sum += 17;                       /* protocol */
    sum += (uint32_t)udp_len;
    sum = csum_add(sum, udp, udp_len);
    uint16_t c = csum_fold(sum);
    if (c == 0) c = 0xffff;
    udp[6] = (uint8_t)(c >> 8);
    udp[7] = (uint8_t)(c & 0xff);
}

static void build_frame(uint8_t *f, size_t len, const uint8_t dst[6], const uint8_t src[6],
                        struct in_addr sip, struct in_addr dip, uint16_t sport, uint16_t dport) {
    memset(f, 0, len);
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    uint8_t *ip = f + 14;
    size_t ip_len = len - 14;
    ip[0] = 0x45;
    ip[2] = (uint8_t)(ip_len >> 8);
    ip[3] = (uint8_t)(ip_len & 0xff);
    ip[6] = 0x40; /* DF */
    ip[8] = 64;   /* TTL */
    ip[9] = 17;   /* UDP */
    memcpy(ip + 12, &sip, 4);
    memcpy(ip + 16, &dip, 4);
    uint16_t c = csum_fold(csum_add(0, ip, 20));
    ip[10] = (uint8_t)(c >> 8);
    ip[11] = (uint8_t)(c & 0xff);
    uint8_t *udp = f + 34;
    size_t udp_len = len - 34;
    udp[0] = (uint8_t)(sport >> 8);
    udp[1] = (uint8_t)(sport & 0xff);
    udp[2] = (uint8_t)(dport >> 8);
    udp[3] = (uint8_t)(dport & 0xff);
    udp[4] = (uint8_t)(udp_len >> 8);
    udp[5] = (uint8_t)(udp_len & 0xff);
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: bb-loadgen --iface IF [--rate PPS | --unpaced] (--count N | --duration S)\n"
            "                  [--size BYTES(incl. FCS, default 64)] [--batch N(default 32)]\n"
            "                  [--src-mac M] [--dst-mac M] [--src-ip A] [--dst-ip A]\n"
            "                  [--sport P] [--dport P] [--id-start N] [--cpu N] [--spin-ns N]\n"
            "Frames carry a 64-bit big-endian packet id at byte offset %d. Prints JSON.\n",
            ID_OFFSET);
}

struct stats {
    uint64_t n;
    double mean, m2, max;
};

static void stats_add(struct stats *s, double x) {
    s->n++;
    double d = x - s->mean;
    s->mean += d / (double)s->n;
    s->m2 += d * (x - s->mean);
    if (s->n == 1 || x > s->max) s->max = x;
}

/* square root by Newton's method: keeps the binary free of libm (the Makefile links no -lm) */
static double nsqrt(double x) {
    if (!(x > 0)) return 0.0;
    double r = x > 1 ? x : 1.0;
    for (int i = 0; i < 200; i++) {
        double n = 0.5 * (r + x / r);
        if (n == r) break;
        r = n;
    }
    return r;
}

static double stats_sd(const struct stats *s) { return s->n > 1 ? nsqrt(s->m2 / (double)(s->n - 1)) : 0.0; }

int main(int argc, char **argv) {
    const char *iface = NULL;
    double rate = 0.0, duration = 0.0;
    int unpaced = 0, cpu = -1;
    long long count = -1, spin_ns = 0;
    long size = 64, batch = 32;
    unsigned long long id_start = 0;
    uint8_t src_mac[6] = {0x02, 0xbb, 0, 0, 0, 0x01}, dst_mac[6] = {0x02, 0xbb, 0, 0, 0, 0x02};
    struct in_addr sip, dip;
    inet_pton(AF_INET, "10.250.0.1", &sip);
    inet_pton(AF_INET, "10.250.1.2", &dip);
    long sport = 1234, dport = 5678;

    static const struct option opts[] = {
        {"iface", required_argument, 0, 'i'},   {"rate", required_argument, 0, 'r'},
        {"unpaced", no_argument, 0, 'u'},       {"count", required_argument, 0, 'n'},
        {"duration", required_argument, 0, 'd'}, {"size", required_argument, 0, 's'},
        {"batch", required_argument, 0, 'b'},   {"src-mac", required_argument, 0, 'S'},
        {"dst-mac", required_argument, 0, 'D'}, {"src-ip", required_argument, 0, 'a'},
        {"dst-ip", required_argument, 0, 'A'},  {"sport", required_argument, 0, 'p'},
        {"dport", required_argument, 0, 'P'},   {"id-start", required_argument, 0, 'I'},
        {"cpu", required_argument, 0, 'c'},     {"spin-ns", required_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    int o;
    char *end;
    while ((o = getopt_long(argc, argv, "i:r:un:d:s:b:h", opts, NULL)) != -1) {
        errno = 0;
        end = NULL;
        switch (o) {
        case 'i': iface = optarg; break;
        case 'r': rate = strtod(optarg, &end); break;
        case 'u': unpaced = 1; break;
        case 'n': count = strtoll(optarg, &end, 10); break;
        case 'd': duration = strtod(optarg, &end); break;
        case 's': size = strtol(optarg, &end, 10); break;
        case 'b': batch = strtol(optarg, &end, 10); break;
        case 'S': if (parse_mac(optarg, src_mac)) { fprintf(stderr, "bb-loadgen: bad --src-mac '%s' (expected aa:bb:cc:dd:ee:ff)\n", optarg); return 2; } break;
        case 'D': if (parse_mac(optarg, dst_mac)) { fprintf(stderr, "bb-loadgen: bad --dst-mac '%s' (expected aa:bb:cc:dd:ee:ff)\n", optarg); return 2; } break;
        case 'a': if (inet_pton(AF_INET, optarg, &sip) != 1) { fprintf(stderr, "bb-loadgen: bad --src-ip '%s'\n", optarg); return 2; } break;
        case 'A': if (inet_pton(AF_INET, optarg, &dip) != 1) { fprintf(stderr, "bb-loadgen: bad --dst-ip '%s'\n", optarg); return 2; } break;
        case 'p': sport = strtol(optarg, &end, 10); break;
        case 'P': dport = strtol(optarg, &end, 10); break;
        case 'I': id_start = strtoull(optarg, &end, 10); break;
        case 'c': cpu = (int)strtol(optarg, &end, 10); break;
        case 'w': spin_ns = strtoll(optarg, &end, 10); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (end != NULL && (*end != '\0' || end == optarg || errno)) {
            fprintf(stderr, "bb-loadgen: option value '%s' is not a valid number\n", optarg);
            usage(stderr);
            return 2;
        }
    }
    if (!iface) { fprintf(stderr, "bb-loadgen: --iface is required\n"); usage(stderr); return 2; }
    if (!unpaced && !(rate > 0)) { fprintf(stderr, "bb-loadgen: give --rate PPS > 0 or --unpaced\n"); return 2; }
    if (count < 0 && !(duration > 0)) { fprintf(stderr, "bb-loadgen: give --count N or --duration S\n"); return 2; }
    if (size < 64 || size > MAX_FRAME + 4) { fprintf(stderr, "bb-loadgen: --size %ld outside 64..%d\n", size, MAX_FRAME + 4); return 2; }
    if (batch < 1 || batch > MAX_BATCH) { fprintf(stderr, "bb-loadgen: --batch %ld outside 1..%d\n", batch, MAX_BATCH); return 2; }
    if (sport < 0 || sport > 65535 || dport < 0 || dport > 65535) { fprintf(stderr, "bb-loadgen: port outside 0..65535\n"); return 2; }

    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set)) { fprintf(stderr, "bb-loadgen: cannot pin to cpu %d: %s\n", cpu, strerror(errno)); return 1; }
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    unsigned ifindex = if_nametoindex(iface);
    if (!ifindex) { fprintf(stderr, "bb-loadgen: interface '%s': %s\n", iface, strerror(errno)); return 1; }
    int fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: send only, receive nothing */
    if (fd < 0) { fprintf(stderr, "bb-loadgen: socket(AF_PACKET): %s (needs CAP_NET_RAW)\n", strerror(errno)); return 1; }
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof sll);
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = (int)ifindex;
    sll.sll_protocol = 0;
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll)) { fprintf(stderr, "bb-loadgen: bind %s: %s\n", iface, strerror(errno)); return 1; }
    int sndbuf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);

    size_t flen = (size_t)size - 4;
    static uint8_t frames[MAX_BATCH][MAX_FRAME];
    static struct mmsghdr msgs[MAX_BATCH];
    static struct iovec iov[MAX_BATCH];
    for (long i = 0; i < batch; i++) {
        build_frame(frames[i], flen, dst_mac, src_mac, sip, dip, (uint16_t)sport, (uint16_t)dport);
        iov[i].iov_base = frames[i];
        iov[i].iov_len = flen;
        memset(&msgs[i], 0, sizeof msgs[i]);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    const double gap = unpaced ? 0.0 : 1e9 / rate;
    uint64_t target = count >= 0 ? (uint64_t)count : 0;
    if (count < 0 && !unpaced) target = (uint64_t)(duration * rate + 0.5);
    const uint64_t deadline_span = (count < 0 && unpaced) ? (uint64_t)(duration * 1e9) : 0;

    uint64_t sent = 0, errors = 0, calls = 0, late_gap = 0;
    uint64_t id = id_start;
    struct stats lateness = {0, 0, 0, 0};
    uint64_t wall_start = realtime_ns();
    uint64_t t0 = now_ns();
    uint64_t t_first = 0, t_last = 0;
    const char *stop_reason = "done";

    for (;;) {
        if (stop_requested) { stop_reason = "signal"; break; }
        uint64_t now = now_ns();
        if (deadline_span) {
            if (now - t0 >= deadline_span) break;
        } else if (sent >= target) {
            break;
        }
        long n;
        if (unpaced) {
            n = batch;
            if (!deadline_span && target - sent < (uint64_t)n) n = (long)(target - sent);
        } else {
            uint64_t due_t = t0 + (uint64_t)((double)sent * gap);
            if (now < due_t) {
                if (spin_ns > 0 && due_t - now > (uint64_t)spin_ns) sleep_until(due_t - (uint64_t)spin_ns);
                else if (spin_ns <= 0) sleep_until(due_t);
                while ((now = now_ns()) < due_t && !stop_requested) { /* spin */ }
                if (stop_requested) continue;
            }
            /* every packet whose due time has passed, at most one batch */
            uint64_t due = (uint64_t)((double)(now - t0) / gap) + 1;
            if (due > target) due = target;
            n = (long)(due - sent);
            if (n > batch) n = batch;
            if (n < 1) n = 1;
        }
        for (long i = 0; i < n; i++) stamp_frame(frames[i], flen, id + (uint64_t)i);
        long done = 0;
        while (done < n) {
            int r = sendmmsg(fd, msgs + done, (unsigned)(n - done), 0);
            calls++;
            if (r < 0) {
                if (errno == EINTR && !stop_requested) continue;
                if (errno == ENOBUFS || errno == EAGAIN) { errors++; sched_yield(); continue; }
                if (stop_requested) break;
                fprintf(stderr, "bb-loadgen: sendmmsg on %s: %s\n", iface, strerror(errno));
                stop_reason = "error";
                goto out;
            }
            done += r;
        }
        uint64_t t = now_ns();
        if (!t_first) t_first = t;
        t_last = t;
        if (!unpaced) {
            for (long i = 0; i < done; i++) {
                double due_i = (double)t0 + (double)(sent + (uint64_t)i) * gap;
                double late = (double)t - due_i;
                stats_add(&lateness, late);
                if (late > gap) late_gap++;
            }
        }
        sent += (uint64_t)done;
        id += (uint64_t)done;
    }
out:;
    uint64_t t_end = now_ns();
    double span = (double)(t_end - t0) / 1e9;
    /* achieved rate: packets over the time from the schedule start to the last send */
    double achieved = span > 0 ? (double)sent / span : 0.0;
    double sched_span = (sent > 1 && t_last > t_first) ? (double)(t_last - t_first) / 1e9 : 0.0;
    char dev[64];
    if (unpaced || !(rate > 0)) snprintf(dev, sizeof dev, "null");
    else snprintf(dev, sizeof dev, "%.6g", (achieved - rate) / rate);
    printf("{\"tool\": \"bb-loadgen\", \"version\": 1, \"iface\": \"%s\", \"frame_size\": %ld, "
           "\"bytes_per_frame_sent\": %zu, \"id_offset\": %d, \"id_width\": 8, \"id_byteorder\": \"big\", "
           "\"id_first\": %llu, \"id_last\": %llu, \"mode\": \"%s\", \"requested_pps\": %.3f, "
           "\"sent\": %llu, \"target\": %llu, \"send_retries\": %llu, \"sendmmsg_calls\": %llu, "
           "\"batch\": %ld, \"duration_s\": %.9f, \"send_span_s\": %.9f, \"achieved_pps\": %.3f, "
           "\"rate_deviation_rel\": %s, \"lateness_ns\": {\"mean\": %.1f, \"stddev\": %.1f, \"max\": %.1f}, "
           "\"late_by_more_than_one_gap\": %llu, \"start_realtime_ns\": %llu, \"stop_reason\": \"%s\"}\n",
           iface, size, flen, ID_OFFSET, (unsigned long long)id_start,
           (unsigned long long)(sent ? id_start + sent - 1 : id_start), unpaced ? "unpaced" : "paced",
           unpaced ? 0.0 : rate, (unsigned long long)sent, (unsigned long long)target,
           (unsigned long long)errors, (unsigned long long)calls, batch, span, sched_span, achieved,
           dev, lateness.mean, stats_sd(&lateness), lateness.max,
           (unsigned long long)late_gap, (unsigned long long)wall_start, stop_reason);
    close(fd);
    return strcmp(stop_reason, "error") == 0 ? 1 : 0;
}
