/* The XDP switch's driver: loads serene_xdp.o, attaches its pipeline to the switch's ports (generic XDP), points
 * each port's device-map entry at the per-port program, and then serves the Java control plane's table writes
 * and register reads, one command a line on stdin, one answer a line on stdout:
 *
 *   put MAP KEY VALUE   write an entry (hex bytes)        -> ok | error TEXT
 *   get MAP KEY         read an entry (per-CPU maps: every processor's value, concatenated) -> hex | error TEXT
 *   getl MAP KEY        read an entry under its spin lock (BPF_F_LOCK), as the program reads it -> hex | error TEXT
 *   del MAP KEY         delete an entry (hash maps)       -> ok | error TEXT
 *   port IFINDEX        add a switch port: attach, and a device-map entry -> ok | error TEXT
 *   number              take the switch's next packet number (the counter the pipeline numbers with) -> decimal
 *   stats               the pipeline's and the per-port program's runs and run time (kernel.bpf_stats, enabled while the
 *                       driver runs) -> "RUNS NS PORT_RUNS PORT_NS"
 *   run PROG HEX        run a program once on a packet (BPF_PROG_TEST_RUN) -> "RETVAL HEX" (the packet after) | error TEXT
 *   sweep PLACE SIZE    the timeout scanner over a job's slots (serene_sweep, on a SIZE-byte packet): each slot it releases
 *                       -> "result HEX" (the RESULT's UDP payload), then -> ok | error TEXT
 *
 * Every port is detached when stdin closes or on SIGINT/SIGTERM, so a switch that dies leaves no program behind. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PORTS 4096
#define NET 42 /* ethernet, IPv4 without options, UDP */
#define MAX_SWEEPS 64 /* results a sweep command answers with at most; the next sweep goes on */

static int ports[MAX_PORTS];
static int nports;

static void detach_all(void)
{
    for (int i = 0; i < nports; i++)
        bpf_xdp_detach(ports[i], XDP_FLAGS_SKB_MODE, NULL);
    nports = 0;
}

static void on_signal(int sig)
{
    detach_all();
    _exit(128 + sig);
}

static int unhex(const char *text, unsigned char *out, size_t size)
{
    size_t n = strlen(text);
    if (n != 2 * size)
        return -1;
    for (size_t i = 0; i < size; i++) {
        unsigned int b;
        if (sscanf(text + 2 * i, "%2x", &b) != 1)
            return -1;
        out[i] = (unsigned char) b;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s serene_xdp.o\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
    if (!obj || libbpf_get_error(obj)) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 1;
    }
    int err = bpf_object__load(obj);
    if (err) {
        fprintf(stderr, "the kernel refused the XDP program: %s\n", strerror(-err));
        return 1;
    }
    struct bpf_program *pipeline = bpf_object__find_program_by_name(obj, "serene_switch");
    struct bpf_program *port = bpf_object__find_program_by_name(obj, "serene_port");
    struct bpf_program *number = bpf_object__find_program_by_name(obj, "serene_number");
    struct bpf_program *aggregate = bpf_object__find_program_by_name(obj, "serene_aggregate");
    struct bpf_program *sweep = bpf_object__find_program_by_name(obj, "serene_sweep");
    struct bpf_map *tx = bpf_object__find_map_by_name(obj, "tx_ports");
    struct bpf_map *stages = bpf_object__find_map_by_name(obj, "stages");
    if (!pipeline || !port || !number || !aggregate || !sweep || !tx || !stages) {
        fprintf(stderr, "%s lacks the switch's programs or maps\n", argv[1]);
        return 1;
    }
    __u32 stage = 0;
    int aggregate_fd = bpf_program__fd(aggregate);
    if (bpf_map_update_elem(bpf_map__fd(stages), &stage, &aggregate_fd, 0)) {
        fprintf(stderr, "cannot chain the pipeline's stages: %s\n", strerror(errno));
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    signal(SIGPIPE, on_signal);
    /* the kernel counts each program's runs and run time while this fd is open (-1 without: stats read 0) */
    int stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
    (void) stats;
    int cpus = libbpf_num_possible_cpus();
    printf("ready %d\n", cpus);

    char line[1 << 17];
    static unsigned char key[4096], value[1 << 16], sweep_in[1 << 16], sweep_out[(1 << 16) + 4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *cmd = strtok(line, " ");
        if (!cmd)
            continue;
        if (!strcmp(cmd, "port")) {
            char *a = strtok(NULL, " ");
            int ifindex = a ? atoi(a) : 0;
            if (ifindex <= 0 || nports >= MAX_PORTS) {
                printf("error bad port\n");
                continue;
            }
            err = bpf_xdp_attach(ifindex, bpf_program__fd(pipeline), XDP_FLAGS_SKB_MODE, NULL);
            if (err) {
                printf("error attaching to %d: %s\n", ifindex, strerror(-err));
                continue;
            }
            ports[nports++] = ifindex;
            struct bpf_devmap_val val = { .ifindex = ifindex, .bpf_prog.fd = bpf_program__fd(port) };
            __u32 k = ifindex;
            err = bpf_map_update_elem(bpf_map__fd(tx), &k, &val, 0);
            printf(err ? "error device map: %s\n" : "ok\n", strerror(errno));
            continue;
        }
        if (!strcmp(cmd, "number")) {
            unsigned char packet[64] = {0}, out[64];
            LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = packet, .data_size_in = sizeof packet, .data_out = out,
                        .data_size_out = sizeof out, .repeat = 1);
            err = bpf_prog_test_run_opts(bpf_program__fd(number), &run);
            if (err || run.retval != 2) {
                printf("error numbering: %s\n", strerror(errno));
                continue;
            }
            unsigned long long n;
            memcpy(&n, out, sizeof n);
            printf("%llu\n", n);
            continue;
        }
        if (!strcmp(cmd, "sweep")) {
            char *a = strtok(NULL, " ");
            char *z = strtok(NULL, " ");
            int place = a ? atoi(a) : -1, size = z ? atoi(z) : 0;
            if (place < 0 || size < NET || size > (int) sizeof sweep_in) {
                printf("error bad sweep\n");
                continue;
            }
            int failed = 0;
            for (int k = 0; k < MAX_SWEEPS; k++) {
                memset(sweep_in, 0, size);
                memcpy(sweep_in, &place, sizeof place);
                LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = sweep_in, .data_size_in = size, .data_out = sweep_out,
                            .data_size_out = sizeof sweep_out, .repeat = 1);
                if (bpf_prog_test_run_opts(bpf_program__fd(sweep), &run) || run.retval == XDP_ABORTED) {
                    printf("error sweeping: %s\n", run.retval == XDP_ABORTED ? "aborted" : strerror(errno));
                    failed = 1;
                    break;
                }
                if (run.retval != XDP_TX || run.data_size_out <= NET)
                    break;
                printf("result ");
                for (__u32 i = NET; i < run.data_size_out; i++)
                    printf("%02x", sweep_out[i]);
                printf("\n");
            }
            if (!failed)
                printf("ok\n");
            continue;
        }
        if (!strcmp(cmd, "run")) {
            char *name = strtok(NULL, " ");
            char *hex = strtok(NULL, " ");
            struct bpf_program *prog = name ? bpf_object__find_program_by_name(obj, name) : NULL;
            size_t size = hex ? strlen(hex) / 2 : 0;
            if (!prog || size < NET || size > sizeof sweep_in || unhex(hex, sweep_in, size)) {
                printf("error bad run\n");
                continue;
            }
            LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = sweep_in, .data_size_in = size, .data_out = sweep_out,
                        .data_size_out = sizeof sweep_out, .repeat = 1);
            if (bpf_prog_test_run_opts(bpf_program__fd(prog), &run)) {
                printf("error running %s: %s\n", name, strerror(errno));
                continue;
            }
            printf("%u ", run.retval);
            for (__u32 i = 0; i < run.data_size_out; i++)
                printf("%02x", sweep_out[i]);
            printf("\n");
            continue;
        }
        if (!strcmp(cmd, "stats")) {
            struct bpf_prog_info a = {0}, b = {0};
            __u32 la = sizeof a, lb = sizeof b;
            if (bpf_obj_get_info_by_fd(bpf_program__fd(pipeline), &a, &la) || bpf_obj_get_info_by_fd(bpf_program__fd(port), &b, &lb)) {
                printf("error stats: %s\n", strerror(errno));
                continue;
            }
            printf("%llu %llu %llu %llu\n", (unsigned long long) a.run_cnt, (unsigned long long) a.run_time_ns,
                   (unsigned long long) b.run_cnt, (unsigned long long) b.run_time_ns);
            continue;
        }
        char *name = strtok(NULL, " ");
        char *k = strtok(NULL, " ");
        struct bpf_map *map = name ? bpf_object__find_map_by_name(obj, name) : NULL;
        if (!map || !k) {
            printf("error no map %s\n", name ? name : "");
            continue;
        }
        size_t ks = bpf_map__key_size(map), vs = bpf_map__value_size(map);
        int percpu = bpf_map__type(map) == BPF_MAP_TYPE_PERCPU_ARRAY || bpf_map__type(map) == BPF_MAP_TYPE_PERCPU_HASH;
        size_t total = percpu ? ((vs + 7) / 8 * 8) * cpus : vs;
        if (ks > sizeof key || total > sizeof value || unhex(k, key, ks)) {
            printf("error bad key for %s (%zu bytes)\n", name, ks);
            continue;
        }
        if (!strcmp(cmd, "put")) {
            char *v = strtok(NULL, " ");
            if (!v || percpu || unhex(v, value, vs)) {
                printf("error bad value for %s (%zu bytes)\n", name, vs);
                continue;
            }
            err = bpf_map_update_elem(bpf_map__fd(map), key, value, 0);
            printf(err ? "error %s\n" : "ok\n", strerror(errno));
        } else if (!strcmp(cmd, "get") || !strcmp(cmd, "getl")) {
            if (bpf_map_lookup_elem_flags(bpf_map__fd(map), key, value, strcmp(cmd, "getl") ? 0 : BPF_F_LOCK)) {
                printf("error %s\n", strerror(errno));
                continue;
            }
            for (size_t i = 0; i < total; i++)
                printf("%02x", value[i]);
            printf("\n");
        } else if (!strcmp(cmd, "del")) {
            err = bpf_map_delete_elem(bpf_map__fd(map), key);
            printf(err && errno != ENOENT ? "error %s\n" : "ok\n", strerror(errno));
        } else {
            printf("error unknown command %s\n", cmd);
        }
    }
    detach_all();
    return 0;
}
