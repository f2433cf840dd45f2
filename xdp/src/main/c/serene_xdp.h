/* The XDP data plane's maps, shared by the program (serene_xdp.c) and its driver (serene_xdp_driver.c).
 * The switch's dimensions are compile-time constants, as a P4 program's register sizes are:
 * SERENE_J jobs, SERENE_N workers a job (SERENE_W = N/64 bitmap words), SERENE_P slots a shadow set,
 * SERENE_K elements a chunk (SERENE_B blocks of SERENE_BLOCK), SERENE_G rounds in the release ring, SERENE_E config
 * entries a job. */
#ifndef SERENE_XDP_H
#define SERENE_XDP_H

#ifndef SERENE_J
#define SERENE_J 4
#endif
#ifndef SERENE_N
#define SERENE_N 64
#endif
#define SERENE_W ((SERENE_N + 63) / 64)
#ifndef SERENE_P
#define SERENE_P 64
#endif
#ifndef SERENE_K
#define SERENE_K 256
#endif
/* a slot's sums are kept in blocks, each under its own lock: the verifier walks a loop over one block once */
#define SERENE_BLOCK 256
#define SERENE_B ((SERENE_K + SERENE_BLOCK - 1) / SERENE_BLOCK)
#ifndef SERENE_G
#define SERENE_G 64
#endif
#ifndef SERENE_E
#define SERENE_E 8
#endif

/* counters, in this order (the driver names them with the Java switch's SwitchCounter names) */
enum serene_counter {
    C_PACKETS_IN, C_PACKETS_OUT, C_CONTRIBUTIONS, C_VALUE_CONTRIBUTIONS, C_RELEASES, C_PARTIAL_RELEASES,
    C_RESULTS_MULTICAST, C_RESULTS_RETRANSMITTED, C_DUPLICATES, C_OVERFLOWS, C_DROP_NOT_JOINED, C_DROP_BAD_MAC,
    C_DROP_REPLAYED, C_DROP_BAD_ELEMENT_COUNT, C_DROP_BAD_SLOT, C_DROP_INCONSISTENT, C_DROP_BAD_STEP,
    C_DROP_BAD_EXPONENT, C_DROP_AHEAD, C_DROP_BEYOND_BOUND, C_DROP_STALE, C_DROP_LATE, C_TIMEOUT_RELEASES, C_DROP_FROZEN, C_COUNTERS
};

/* settings[0]: the switch's address, whether jobs are keyed, the next packet number the switch sends */
struct serene_settings {
    __u32 ip;          /* network order */
    __u16 port;        /* network order */
    __u16 keyed;
    __u64 number;      /* taken with an atomic add */
};

/* job_static[j]: written by the control plane when a job is created, read by the program */
struct serene_job {
    __u32 id;
    __u32 active;
    __u32 workers;
    __u32 elements;
    __u32 chunks;
    __u32 steps_per_round;
    __u64 r0, r1;      /* the job's reply key */
};

struct serene_entry {
    __s32 first_round;
    __s32 bound;
    __s32 quorum;      /* resolved: a count */
    __u32 sample;      /* PSP: a release waits for a seeded sample of this many of the required workers; 0: all */
    __u64 timeout_ns;  /* 0: none */
    __u64 required[SERENE_W];
};

/* job_bank[j * 2 + b]: the job's membership and config list; the control plane writes the bank not in use,
 * then flips bank_in_use[j], so the program never reads a half-written list */
struct serene_bank {
    __s32 epoch;
    __u32 entries;     /* oldest first */
    __u64 joined[SERENE_W];
    struct serene_entry entry[SERENE_E];
};

/* job_dyn[j]: what the program keeps about the job, under its lock: R, the open step, the release ring, per
 * worker its clock and what the Java switch's ArrivalRecorder keeps (its newest round heard, its arrival offset
 * there, its compute time as it reports it, and the same of its last finished round); and what timeouts leave:
 * the late set and, per ring place, the round a timeout released a step of and the workers that release held; and the
 * newest round opened */
struct serene_dyn {
    struct bpf_spin_lock lock;
    __s32 released_round;
    __s64 open_seq;
    __u32 ring_count[SERENE_G];
    __s32 clock[SERENE_N];
    __s32 arrival_round[SERENE_N];
    __s32 finished_round[SERENE_N];
    __u64 offset_ns[SERENE_N];
    __u64 iteration_ns[SERENE_N];
    __u64 finished_compute_ns[SERENE_N];
    __u64 finished_offset_ns[SERENE_N];
    __u64 late[SERENE_W];
    __s32 latch_round[SERENE_G];
    __u64 latch[SERENE_G * SERENE_W];
    __s32 newest_round;   /* the newest round a DATA packet was let open (a hot-swap's round comes after it) */
};

/* worker_key[j * N + w]: the worker's key (control plane) and the window over its DATA packet numbers */
struct serene_worker {
    struct bpf_spin_lock lock;
    __u32 pad;
    __u64 k0, k1;
    __u64 highest;
    __u64 seen[4];
};

/* slots[(j * 2 + set) * P + slot]: the slot's state; its sums are in its blocks. adding: contributions taken whose
 * values are still being added (a slot releases only when none is) */
struct serene_slot {
    struct bpf_spin_lock lock;
    __s32 round;
    __s64 seq;
    __u64 first_ns;
    __s32 chunk;
    __u32 count;
    __u32 length;
    __s32 quorum;
    __s8 exponent;
    __u8 released;
    __u8 flags;
    __u8 pad;
    __u32 adding;
    __u64 timeout_ns;  /* the entry's it opened under; 0: none */
    __u64 required[SERENE_W];
    __u64 bitmap[SERENE_W];
};

/* blocks[slot index * B + b]: elements b * BLOCK .. of a slot's sums; tag: the first_ns of the slot's opening they
 * belong to (another tag: sums of an earlier opening, reset by the first contribution to the block) */
struct serene_block {
    struct bpf_spin_lock lock;
    __u32 pad;
    __u64 tag;
    __s32 sums[SERENE_BLOCK];
};

/* ports[ifindex]: the worker behind a switch port (one a port), where results to it go */
struct serene_port {
    __u32 job;
    __u32 worker;
    __u32 ip;          /* network order */
    __u16 udp_port;    /* network order */
    __u8 mac[6];       /* the worker's */
    __u8 own_mac[6];   /* the port's */
    __u16 pad;
};

#endif
