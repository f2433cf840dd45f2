/* Serene's switch pipeline, the DATA path, as an XDP program: parser and checks, per-worker MAC and
 * replay window, the slot pool with shadow sets and contributor bitmaps, block floating point
 * exponents, saturating int32 sums, the release rule (required set and quorum of the config entry in
 * force for the round, under the bound), the release ring and R, the RESULT signed and sent to every
 * worker of the job through a device map, and NACKs. Every other packet goes up to the Java switch on
 * the same address (its CPU port): JOIN, LEAVE, CONFIG, reports, and whatever this program cannot parse,
 * which the Java parser counts. docs/xdp.md maps each Java block to its part here. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "serene_xdp.h"

#define HDR 56
#define NET 42                        /* ethernet, IPv4 without options, UDP */
#define DELTA (24 + 16 * SERENE_W)    /* a RESULT is this much longer than the DATA it answers */
#define MAGIC 0x5345
#define VERSION 4
#define T_DATA 1
#define T_RESULT 2
#define T_NACK 7
#define F_VALUES 1
#define F_SATURATED 2
#define F_RETRANSMIT 4
#define F_EXPONENTS 8
#define F_REPORT 64
#define F_PAYLOAD (F_VALUES | F_EXPONENTS)
#define NO_EXPONENT (-128)
#define MIN_EXPONENT (-126)
#define MAX_EXPONENT 127
#define ST_AHEAD 5
#define ST_STALE 6
#define ST_HELD 15
#define OPEN_SCAN 64

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct serene_settings); } settings SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SERENE_J); __type(key, __u32); __type(value, struct serene_job); } job_static SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 2 * SERENE_J); __type(key, __u32); __type(value, struct serene_bank); } job_bank SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SERENE_J); __type(key, __u32); __type(value, __u32); } bank_in_use SEC(".maps");
/* job_frozen[j]: set by the control plane while it chooses a hot-swap's round and writes it: no new round opens */
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SERENE_J); __type(key, __u32); __type(value, __u32); } job_frozen SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SERENE_J); __type(key, __u32); __type(value, struct serene_dyn); } job_dyn SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SERENE_J * SERENE_N); __type(key, __u32); __type(value, struct serene_worker); } worker_key SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SERENE_J * 2 * SERENE_P); __type(key, __u32); __type(value, struct serene_slot); } slots SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SERENE_J * 2 * SERENE_P * SERENE_B); __type(key, __u32); __type(value, struct serene_block); } blocks SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, SERENE_J * SERENE_N); __type(key, __u32); __type(value, struct serene_port); } ports SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_DEVMAP_HASH); __uint(max_entries, SERENE_J * SERENE_N); __type(key, __u32); __type(value, struct bpf_devmap_val); } tx_ports SEC(".maps");
struct counters { __u64 c[C_COUNTERS]; };
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct counters); } counters SEC(".maps");
/* the fields of a DATA packet, read before the packet is rewritten */
struct data_in {
    __u32 job, n, flags;
    __u16 worker, pool, status;
    __s8 exp;
    __u8 set;
    __s64 seq;
    __s32 round, chunk;
    __u64 number, mac;
    __u64 w0, w2, w3, w5;
    __u8 from_mac[6], own_mac[6];
    __u32 ip;
    __u16 udp_port;
};

/* per processor: a packet's values, and then the sums it carries out (a per-processor value holds at most 32 KiB) */
struct values { __s32 v[SERENE_B * SERENE_BLOCK]; };
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct values); } values SEC(".maps");
/* A walk over a chunk's blocks with bpf_loop: the slot's first block, the chunk's length, a mask of all ones for
 * exponents, the tag of the slot's opening, what the walk found, the chunk's blocks and the one the walk starts at. In the scratch, not on the stack, so its callback
 * starts from one state for the verifier, whichever path called it. */
struct block_walk { __u32 first; __u32 n; __s32 exponents; __s32 overflow; __u64 tag; __u32 bad; __u32 blocks; __u32 start; __u32 pad; };

/* a released slot, as its RESULT tells it */
struct out {
    __u64 first_ns;
    __s64 seq;
    __s32 round, chunk;
    __u32 count, length;
    __s8 exponent;
    __u8 flags;
    __u64 bitmap[SERENE_W];
};

/* what the release rule reads beside the slot, taken from the job's registers before the slot's lock (one lock at a
 * time): the latch of the slot's round (if latch_round is that round), the late set, the members */
struct rule_view { __s32 latch_round; __u32 any_late; __u64 latch[SERENE_W]; __u64 late[SERENE_W]; __u64 joined[SERENE_W]; };

/* PSP's draw for a round (SyncRules.sample): the stream's state, the required workers drawn from, how many there are
 * and how many to draw, the sample */
struct sample_draw { __u64 state; __u32 n; __u32 count; __u64 from[SERENE_W]; __u64 out[SERENE_W]; };

/* per processor: a packet's fields and where the DATA path is (read from memory, each use is a fresh unknown to the
 * verifier, so its paths merge) */
struct scratch { __u32 outcome; __u32 bumps; __u32 tmp; __u32 j; __u32 e; __u32 bank; __u32 late; __u32 pad; struct data_in in; struct block_walk walk;
    struct out o; struct rule_view view; __u32 timed; __u32 within; __u32 found; __u32 sampled; struct sample_draw draw; };
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct scratch); } scratch SEC(".maps");

/* the DATA path's stages: [0] serene_aggregate (the driver fills it) */
struct { __uint(type, BPF_MAP_TYPE_PROG_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u32); } stages SEC(".maps");

static __always_inline void count(__u32 c, __u64 by)
{
    __u32 zero = 0;
    struct counters *v = bpf_map_lookup_elem(&counters, &zero);
    if (v && c < C_COUNTERS)
        v->c[c] += by;
}

static __always_inline void count_mask(__u32 mask)
{
    __u32 zero = 0;
    struct counters *v = bpf_map_lookup_elem(&counters, &zero);
    if (!v)
        return;
    for (__u32 c = 0; c < C_COUNTERS; c++)
        v->c[c] += (mask >> c) & 1;
}

/* the lowest open step's scan: bpf_loop's callback, so the verifier walks it once */
struct open_scan { __u32 j; __s64 open; };

static long open_step(__u64 k, struct open_scan *scan)
{
    __s64 open = scan->open;
    __u32 oi = (scan->j * 2 + (((__u64) open / SERENE_P) & 1)) * SERENE_P + (__u64) open % SERENE_P;
    struct serene_slot *os = bpf_map_lookup_elem(&slots, &oi);
    if (!os || os->seq != open || !os->released)
        return 1;
    scan->open = open + 1;
    return 0;
}

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
    v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); } while (0)

/* x % n as an array index whose bound the verifier sees (clang would otherwise drop a check it can prove, and the
 * verifier cannot bound a remainder by a constant that is not a power of two) */
static __always_inline __u64 index_below(__u64 x, __u64 n)
{
    __u64 i = x % n;
    asm volatile("" : "+r"(i));
    if (i >= n)
        i = 0;
    return i;
}

/* A value through memory: the verifier forgets which of its possible values it was, so the paths it took to get
 * there merge instead of being walked once a value */
static __always_inline __u32 launder(struct scratch *sc, __u32 v)
{
    sc->tmp = v;
    return sc->tmp;
}

/* SipHash-2-4 of n whole 8-byte words (n <= 8), as PacketAuth.sipHash; never 0 (a MAC of 0 means unsigned) */
static __always_inline __u64 siphash(__u64 k0, __u64 k1, const __u64 *m, __u32 n)
{
    __u64 v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
    __u64 v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
    for (__u32 k = 0; k < 9; k++) {
        __u64 w;
        if (k < n)
            w = m[k & 7];
        else if (k == n)
            w = ((__u64) (8 * n) & 0xFF) << 56;
        else
            break;
        v3 ^= w;
        SIPROUND;
        SIPROUND;
        v0 ^= w;
    }
    v2 ^= 0xFF;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    __u64 mac = v0 ^ v1 ^ v2 ^ v3;
    return mac == 0 ? 1 : mac;
}

/* RFC 6479's window, as ReplayWindow.take: whether number n is new (then marked seen). Under the worker's lock. */
static __always_inline int take(struct serene_worker *w, __u64 n)
{
    __u64 h = w->highest;
    if (n > h) {
        __u64 clear = (n >> 6) - (h >> 6);
        if (clear > 4)
            clear = 4;
        for (__u64 k = 1; k <= 4; k++)
            if (k <= clear)
                w->seen[((h >> 6) + k) & 3] = 0;
        w->highest = n;
    } else if (h - n >= 192) {
        return 0;
    }
    __u64 bit = 1ULL << (n & 63);
    __u32 word = (n >> 6) & 3;
    if (w->seen[word] & bit)
        return 0;
    w->seen[word] |= bit;
    return 1;
}

static __always_inline __u16 ip_checksum(struct iphdr *ip)
{
    __u32 sum = 0;
    __u16 *p = (__u16 *) ip;
    ip->check = 0;
    for (int i = 0; i < 10; i++)
        sum += p[i];
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    return ~sum;
}

/* the packet's addresses as a reply to its sender, its lengths for a Serene packet of len bytes */
static __always_inline void reply_to_sender(struct ethhdr *eth, struct iphdr *ip, struct udphdr *udp, __u32 len)
{
    __u8 mac[6];
    __builtin_memcpy(mac, eth->h_source, 6);
    __builtin_memcpy(eth->h_source, eth->h_dest, 6);
    __builtin_memcpy(eth->h_dest, mac, 6);
    __u32 a = ip->saddr;
    ip->saddr = ip->daddr;
    ip->daddr = a;
    __u16 p = udp->source;
    udp->source = udp->dest;
    udp->dest = p;
    ip->tot_len = bpf_htons(20 + 8 + len);
    ip->ttl = 64;
    ip->check = ip_checksum(ip);
    udp->len = bpf_htons(8 + len);
    udp->check = 0;
}

/* a packet's values into the processor's values (store 0), or those into the packet (store 1); 1 to 4K bytes, the
 * register's bounds made plain to the verifier */
static __always_inline int move_values(struct xdp_md *ctx, __u32 at, __u32 bytes, int store)
{
    __u32 zero = 0;
    struct values *val = bpf_map_lookup_elem(&values, &zero);
    __u32 b = ((bytes - 1) & 0xFFFF) + 1;
    if (!val || b > 4 * SERENE_K)
        return -1;
    asm volatile("" : "+r"(b));
    return store ? bpf_xdp_store_bytes(ctx, at, val->v, b) : bpf_xdp_load_bytes(ctx, at, val->v, b);
}


/* where block b's elements start in the processor's values, bounds plain to the verifier */
static __always_inline __u32 block_base(__u64 b)
{
    return ((__u32) b % SERENE_B) * SERENE_BLOCK;
}

/* a walk over the blocks of slot sidx for a chunk of n elements, of the slot's opening tag */
static __always_inline struct block_walk *begin_walk(struct scratch *sc, __u32 sidx, __u32 n, __u64 tag)
{
    struct block_walk *walk = &sc->walk;
    walk->first = sidx * SERENE_B;
    walk->n = n;
    walk->blocks = (n + SERENE_BLOCK - 1) / SERENE_BLOCK;
    walk->tag = tag;
    walk->exponents = 0;
    walk->overflow = 0;
    walk->start = 0;
    walk->bad = 0;
    return walk;
}

/* a block walk's callback's view: the processor's values and the walk (null if the maps have none) */
static __always_inline struct block_walk *walking(struct values **val)
{
    __u32 zero = 0;
    struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
    *val = bpf_map_lookup_elem(&values, &zero);
    return sc && *val ? &sc->walk : 0;
}

/* block b of the walk's slot */
static __always_inline struct serene_block *walk_block(struct block_walk *w, __u64 b)
{
    __u32 key = w->first + (__u32) b % SERENE_B;
    return bpf_map_lookup_elem(&blocks, &key);
}

/* an exponent block of the packet outside MIN_EXPONENT..MAX_EXPONENT sets bad (elements past n are not looked at) */
static long check_block(__u64 b, void *unused)
{
    struct values *val;
    struct block_walk *w = walking(&val);
    if (!w)
        return 1;
    __u32 base = block_base(b);
    __u32 n = w->n;
    __u32 bad = 0;
    for (__u32 i = 0; i < SERENE_BLOCK; i++) {
        __s32 v = val->v[base + i];
        __u32 in = (__u32) ((__s32) (base + i - n) >> 31); /* all ones for an element of the packet */
        bad |= ((__u32) ((v - MIN_EXPONENT) | (MAX_EXPONENT - v)) >> 31) & in;
    }
    w->bad |= bad;
    return 0;
}

/* block b of the packet's values into the slot's sums, under the block's lock: saturating int32 sums, or exponent
 * maxima; a block holding an earlier opening's sums starts over */
static long add_block(__u64 b, void *unused)
{
    struct values *val;
    struct block_walk *w = walking(&val);
    if (!w)
        return 1;
    /* each contribution starts at its own block (the walk's start), so two processors adding to one chunk at once
     * work on blocks apart instead of taking each other's cache lines element by element */
    __u32 blocks_used = w->blocks;
    if (blocks_used == 0)
        return 1;
    b = (b + w->start) % blocks_used;
    struct serene_block *blk = walk_block(w, b);
    if (!blk)
        return 1;
    __u32 base = block_base(b);
    __u32 n = w->n;
    __u32 lim = n > base ? n - base : 0; /* the packet's elements in this block */
    __u64 tag = w->tag;
    __s32 exponents = w->exponents;
    __u32 overflow = 0;
    bpf_spin_lock(&blk->lock);
    __u32 keep = -(__u32) (blk->tag == tag); /* all ones while the block holds this opening's sums */
    asm volatile("" : "+r"(keep));
    blk->tag = tag;
    if (exponents) {
        /* the maximum: elements past the packet's are below every exponent; a reset block starts below them too */
        for (__u32 i = 0; i < SERENE_BLOCK; i++) {
            __s32 a = (blk->sums[i] & (__s32) keep) | ((__s32) 0x80000000 & ~(__s32) keep);
            __s32 in = (__s32) (base + i - n) >> 31; /* all ones for an element of the packet */
            asm volatile("" : "+r"(in));
            __s32 e = (val->v[base + i] & in) | (~in & (__s32) 0x80000000);
            __s32 below = (__s32) (((__s64) a - e) >> 63); /* -1 when a < e */
            asm volatile("" : "+r"(below)); /* a mask, not a condition: no branch for the verifier to walk twice */
            blk->sums[i] = a ^ ((a ^ e) & below);
        }
    } else {
        /* the plain add, its overflows noted; only a block where one happened takes the second pass, which finds the
         * element's sum before the add (the add wraps, so it is the sum less the value) and saturates it: so every
         * element is the saturating sum, and while contributions lie within the job's scale it is the plain one */
        if (lim >= SERENE_BLOCK) {
            for (__u32 i = 0; i < SERENE_BLOCK; i++) {
                __u32 a = (__u32) blk->sums[i] & keep;
                __u32 v = (__u32) val->v[base + i];
                __u32 r = a + v;
                overflow |= (a ^ r) & (v ^ r);
                blk->sums[i] = (__s32) r;
            }
        } else {
            /* the chunk's last block, part of it the packet's: the rest adds nothing */
            for (__u32 i = 0; i < SERENE_BLOCK; i++) {
                __u32 in = (__u32) ((__s32) (i - lim) >> 31); /* all ones for an element of the packet */
                asm volatile("" : "+r"(in));
                __u32 a = (__u32) blk->sums[i] & keep;
                __u32 v = (__u32) val->v[base + i] & in;
                __u32 r = a + v;
                overflow |= (a ^ r) & (v ^ r);
                blk->sums[i] = (__s32) r;
            }
        }
        overflow >>= 31;
        if (overflow) {
            for (__u32 i = 0; i < SERENE_BLOCK; i++) {
                __u32 in = (__u32) ((__s32) (i - lim) >> 31);
                asm volatile("" : "+r"(in));
                __s32 r = blk->sums[i];
                __s32 v = val->v[base + i] & in;
                __s32 a = (__s32) ((__u32) r - (__u32) v);
                __s32 ov = ((a ^ r) & (v ^ r)) >> 31;
                asm volatile("" : "+r"(ov)); /* a mask, not a condition: no branch for the verifier to walk twice */
                blk->sums[i] = (r & ~ov) | (((a >> 31) ^ 0x7FFFFFFF) & ov);
            }
        }
    }
    bpf_spin_unlock(&blk->lock);
    w->overflow |= overflow;
    return 0;
}

/* block b of the slot's sums into the processor's values, under the block's lock; a block of another opening sets bad */
static long copy_block(__u64 b, void *unused)
{
    struct values *val;
    struct block_walk *w = walking(&val);
    if (!w)
        return 1;
    struct serene_block *blk = walk_block(w, b);
    if (!blk)
        return 1;
    __u32 base = block_base(b);
    __u64 tag = w->tag;
    __u32 bad = 0;
    bpf_spin_lock(&blk->lock);
    if (blk->tag != tag)
        bad = 1;
    for (__u32 i = 0; i < SERENE_BLOCK; i++)
        val->v[base + i] = blk->sums[i];
    bpf_spin_unlock(&blk->lock);
    w->bad |= bad;
    return 0;
}

/* ArrivalRecorder.arrived, for reported compute times: worker w's packet for a round came {@code after} ns after
 * its step's first; the first of a newer round settles its last (under the job's lock) */
static __always_inline void arrived(struct serene_dyn *dyn, __u32 w, __s32 round, __u64 after, __u64 reported)
{
    if (round > dyn->arrival_round[w]) {
        dyn->finished_round[w] = dyn->arrival_round[w];
        dyn->finished_compute_ns[w] = dyn->iteration_ns[w];
        dyn->finished_offset_ns[w] = dyn->offset_ns[w];
        dyn->offset_ns[w] = 0;
        dyn->arrival_round[w] = round;
        if (reported > 0)
            dyn->iteration_ns[w] = reported;
    }
    if (round == dyn->arrival_round[w] && after > dyn->offset_ns[w])
        dyn->offset_ns[w] = after;
}


/* bits set in x (no popcount instruction in BPF) */
static __always_inline __u32 popcount(__u64 x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (x * 0x0101010101010101ULL) >> 56;
}

/* SyncRules.position: the worker at position index (from 0) among those set in from */
static __always_inline __u32 position(__u64 *from, __u32 index)
{
    __u32 left = index;
    for (int w = 0; w < SERENE_W; w++) {
        __u64 word = from[w];
        __u32 bits = popcount(word);
        if (left < bits) {
            for (__u32 i = 0; i < 64; i++)
                if (i < left)
                    word &= word - 1;
            return (w << 6) + popcount((word & -word) - 1);
        }
        left -= bits;
    }
    return 0;
}

/* one pick of Floyd's algorithm (SyncRules.sample), k from 0: bpf_loop's callback over the scratch's draw */
static long draw_one(__u64 k, void *unused)
{
    __u32 zero = 0;
    struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
    if (!sc)
        return 1;
    struct sample_draw *d = &sc->draw;
    __u32 j = d->n - d->count + (__u32) k;
    d->state += 0x9E3779B97F4A7C15ULL;
    __u64 z = d->state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    __u32 pick = position(d->from, (__u32) (z % ((__u64) j + 1)));
    if (d->out[index_below(pick >> 6, SERENE_W)] & (1ULL << (pick & 63)))
        pick = position(d->from, j);
    d->out[index_below(pick >> 6, SERENE_W)] |= 1ULL << (pick & 63);
    return 0;
}

/* SyncRules.sample: PSP's seeded sample of count of the workers in the entry's required set for a round of the job
 * (seeded by its id), into the scratch's draw; every chunk of the round, and the Java switch, draw the same */
static __always_inline void draw_sample(struct scratch *sc, struct serene_entry *entry, __u32 job_id, __s32 round)
{
    struct sample_draw *d = &sc->draw;
    __u32 n = 0;
    for (int w = 0; w < SERENE_W; w++) {
        d->from[w] = entry->required[w];
        d->out[w] = 0;
        n += popcount(entry->required[w]);
    }
    __u32 count = entry->sample;
    if (count >= n) {
        for (int w = 0; w < SERENE_W; w++)
            d->out[w] = d->from[w];
        return;
    }
    d->n = n;
    d->count = count;
    d->state = (__u64) job_id * 0x9E3779B97F4A7C15ULL + (__u64) (__s64) round;
    bpf_loop(count, draw_one, 0, 0);
}

/* the release rule's view of the job for a slot of the round, under the job's lock */
static __always_inline void take_view(struct serene_dyn *dyn, struct serene_bank *bank, __s32 round, struct rule_view *v)
{
    __u32 r = index_below((__u32) round, SERENE_G);
    __u32 any = 0;
    bpf_spin_lock(&dyn->lock);
    v->latch_round = dyn->latch_round[r];
    for (int w = 0; w < SERENE_W; w++) {
        v->latch[w] = dyn->latch[index_below((__u64) r * SERENE_W + w, SERENE_G * SERENE_W)];
        v->late[w] = dyn->late[w];
        any |= dyn->late[w] != 0;
    }
    bpf_spin_unlock(&dyn->lock);
    v->any_late = any;
    for (int w = 0; w < SERENE_W; w++)
        v->joined[w] = bank->joined[w];
}

/* ReleaseRule.releasable (one group), under the slot's lock: 0 not yet; 1 due: the rule (every required worker and at
 * least the quorum), the round's latch (a timeout released a step of the round and the slot holds every worker that
 * release held), or, under a timeout, every joined worker outside the late set, which is not empty; 2 due by the
 * timeout alone */
static __always_inline int due(struct serene_slot *s, struct rule_view *v, __u64 now)
{
    int latched = v->latch_round == s->round;
    int on_time = v->any_late && s->timeout_ns;
    int met = s->count >= (__u32) s->quorum;
    for (int w = 0; w < SERENE_W; w++) {
        __u64 need = v->joined[w] & ~v->late[w];
        if ((s->bitmap[w] & v->latch[w]) != v->latch[w])
            latched = 0;
        if ((s->bitmap[w] & need) != need)
            on_time = 0;
        if ((s->bitmap[w] & s->required[w]) != s->required[w])
            met = 0;
    }
    if (latched || on_time || met)
        return 1;
    if (s->timeout_ns && now - s->first_ns >= s->timeout_ns)
        return 2;
    return 0;
}

/* a released slot's state into o, under its lock */
static __always_inline void take_out(struct serene_slot *s, struct out *o)
{
    o->first_ns = s->first_ns;
    o->seq = s->seq;
    o->round = s->round;
    o->chunk = s->chunk;
    o->count = s->count;
    o->length = s->length;
    o->exponent = s->exponent;
    o->flags = s->flags;
    for (int w = 0; w < SERENE_W; w++)
        o->bitmap[w] = s->bitmap[w];
}

/* ReleaseRule.recordTimeout: the workers a release by timeout left out join the late set, and its round's latch
 * holds the workers it held (intersected with an earlier one of the round) */
static __always_inline void record_timeout(struct serene_dyn *dyn, struct rule_view *v, struct out *o)
{
    __u32 r = index_below((__u32) o->round, SERENE_G);
    bpf_spin_lock(&dyn->lock);
    int fresh = dyn->latch_round[r] != o->round;
    dyn->latch_round[r] = o->round;
    for (int w = 0; w < SERENE_W; w++) {
        dyn->late[w] |= v->joined[w] & ~o->bitmap[w];
        __u64 held = dyn->latch[index_below((__u64) r * SERENE_W + w, SERENE_G * SERENE_W)] & o->bitmap[w];
        dyn->latch[index_below((__u64) r * SERENE_W + w, SERENE_G * SERENE_W)] = fresh ? o->bitmap[w] : held;
    }
    bpf_spin_unlock(&dyn->lock);
}

/* after a release: counted; the lowest open step moves past released steps (a bounded scan a release; a hint for
 * loss recovery); the release ring and R move on */
static __always_inline void after_release(__u32 j, struct serene_job *job, struct serene_dyn *dyn, struct out *o)
{
    struct open_scan scan = { .j = j, .open = dyn->open_seq };
    bpf_loop(OPEN_SCAN, open_step, &scan, 0);
    __s64 open = scan.open;
    count(C_RELEASES, 1);
    if (o->count < job->workers)
        count(C_PARTIAL_RELEASES, 1);
    bpf_spin_lock(&dyn->lock);
    if (open > dyn->open_seq)
        dyn->open_seq = open;
    if (o->flags & F_VALUES) {
        dyn->ring_count[index_below((__u32) o->round, SERENE_G)]++;
        for (int k = 0; k < SERENE_G; k++) {
            __u32 next = index_below((__u32) (dyn->released_round + 1), SERENE_G);
            if (dyn->ring_count[next] != job->chunks)
                break;
            dyn->ring_count[next] = 0;
            dyn->released_round++;
        }
    }
    bpf_spin_unlock(&dyn->lock);
}

/* the bank job j's config list is in now (bank_in_use), its key into bkey; null if the maps have none */
static __always_inline struct serene_bank *bank_in_use_of(__u32 j, __u32 *bkey)
{
    __u32 *b = bpf_map_lookup_elem(&bank_in_use, &j);
    if (!b)
        return 0;
    *bkey = j * 2 + (*b & 1);
    return bpf_map_lookup_elem(&job_bank, bkey);
}

/* The DATA packet of n elements turned into a NACK with status (the header alone), back to its sender */
static __always_inline int nack(struct xdp_md *ctx, struct serene_settings *cfg, struct serene_job *job, __u32 n, __u16 status)
{
    __u64 number = __sync_fetch_and_add(&cfg->number, 1);
    if (bpf_xdp_adjust_tail(ctx, -(int) (4 * (n & 0xFFFF))) < 0)
        return XDP_DROP;
    void *data = (void *) (long) ctx->data;
    void *end = (void *) (long) ctx->data_end;
    if (data + NET + HDR > end)
        return XDP_DROP;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + 14;
    struct udphdr *udp = data + 34;
    __u64 *hw = data + NET;
    __u16 *h16 = data + NET;
    __u8 *h8 = data + NET;
    h16[0] = MAGIC;
    h8[2] = VERSION;
    h8[3] = T_NACK;
    h16[2] = 0;
    h16[3] = 0;
    /* job and worker stay, exponent and set stay; seq, round, chunk stay */
    *(__s32 *) (h8 + 32) = 0;
    *(__u16 *) (h8 + 38) = status;
    hw[5] = number;
    __u64 m[6] = { hw[0], hw[1], hw[2], hw[3], hw[4], hw[5] };
    hw[6] = cfg->keyed ? siphash(job->r0, job->r1, m, 6) : 0;
    reply_to_sender(eth, ip, udp, HDR);
    count(C_PACKETS_OUT, 1);
    return XDP_TX;
}

/* The RESULT for a released slot o, written over the packet, which holds the DATA it answers (or as many bytes):
 * the packet grows at its front by DELTA, so its values sit where the result's go; addressed to the DATA's sender
 * (a multicast's copies are readdressed per port by serene_port), from the switch; the sums from the processor's
 * values; numbered and sealed. 0, or -1 if the packet cannot take it. */
static __always_inline int build_result(struct xdp_md *ctx, struct serene_settings *cfg, struct serene_job *job,
                                        struct serene_bank *bank, struct serene_dyn *dyn, __u32 j, struct out *o,
                                        struct data_in *in, int retransmit)
{
    void *data, *end;
    struct ethhdr *eth;
    struct iphdr *ip;
    struct udphdr *udp;
    __u64 number = __sync_fetch_and_add(&cfg->number, 1);
    __s32 epoch = bank->epoch;
    __s32 released = dyn->released_round;
    __s64 open = dyn->open_seq;
    __u64 open_bitmap[SERENE_W] = {};
    __u32 oi = (j * 2 + (((__u64) open / SERENE_P) & 1)) * SERENE_P + (__u64) open % SERENE_P;
    struct serene_slot *os = bpf_map_lookup_elem(&slots, &oi);
    if (os && os->seq == open)
        for (int w = 0; w < SERENE_W; w++)
            open_bitmap[w] = os->bitmap[w];
    if (bpf_xdp_adjust_head(ctx, -DELTA) < 0)
        return -1;
    data = (void *) (long) ctx->data;
    end = (void *) (long) ctx->data_end;
    if (data + NET + HDR + DELTA > end)
        return -1;
    eth = data;
    ip = data + 14;
    udp = data + 34;
    /* to the sender (a multicast's copies are readdressed per port by serene_port) */
    __builtin_memcpy(eth->h_dest, in->from_mac, 6);
    __builtin_memcpy(eth->h_source, in->own_mac, 6);
    ip->daddr = in->ip;
    udp->dest = in->udp_port;
    eth->h_proto = bpf_htons(ETH_P_IP);
    ip->version = 4;
    ip->ihl = 5;
    ip->tos = 0;
    ip->id = 0;
    ip->frag_off = 0;
    ip->protocol = IPPROTO_UDP;
    /* from the switch */
    ip->saddr = cfg->ip;
    udp->source = cfg->port;
    __u8 *r = data + NET;
    __u64 *rw = data + NET;
    *(__u16 *) r = MAGIC;
    r[2] = VERSION;
    r[3] = T_RESULT;
    *(__u16 *) (r + 4) = o->flags | (retransmit ? F_RETRANSMIT : 0);
    *(__u16 *) (r + 6) = o->length;
    *(__u32 *) (r + 8) = in->job;
    *(__u16 *) (r + 12) = 0;
    *(__s8 *) (r + 14) = o->exponent;
    r[15] = ((__u64) o->seq / SERENE_P) & 1;
    *(__s64 *) (r + 16) = o->seq;
    *(__s32 *) (r + 24) = o->round;
    *(__s32 *) (r + 28) = o->chunk;
    *(__s32 *) (r + 32) = epoch;
    *(__u16 *) (r + 36) = (__u64) o->seq % SERENE_P;
    *(__u16 *) (r + 38) = 0;
    rw[5] = number;
    *(__u32 *) (r + 56) = o->count;
    *(__s32 *) (r + 60) = released;
    *(__u32 *) (r + 64) = SERENE_W;
    *(__u32 *) (r + 68) = 0;
    *(__s64 *) (r + 72) = open;
    for (int w = 0; w < SERENE_W; w++) {
        rw[10 + w] = o->bitmap[w];
        rw[10 + SERENE_W + w] = open_bitmap[w];
    }
    __u64 m[8] = { rw[0], rw[2], rw[3], rw[4], rw[5], rw[7], rw[8], rw[9] };
    rw[6] = cfg->keyed ? siphash(job->r0, job->r1, m, 8) : 0;
    __u32 rlen = HDR + DELTA + 4 * o->length;
    if (rlen > 0xFFFF)
        return -1;
    ip->tot_len = bpf_htons(20 + 8 + rlen);
    ip->ttl = 64;
    ip->check = ip_checksum(ip);
    udp->len = bpf_htons(8 + rlen);
    udp->check = 0;
    if (o->length > 0 && move_values(ctx, NET + HDR + DELTA, 4 * o->length, 1) < 0)
        return -1;
    return 0;
}

SEC("xdp")
int serene_switch(struct xdp_md *ctx)
{
    void *data = (void *) (long) ctx->data;
    void *end = (void *) (long) ctx->data_end;
    __u32 zero = 0;
    struct serene_settings *cfg = bpf_map_lookup_elem(&settings, &zero);
    struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
    if (!cfg || !sc || data + NET + HDR > end)
        return XDP_PASS;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + 14;
    struct udphdr *udp = data + 34;
    if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->protocol != IPPROTO_UDP
        || (ip->frag_off & bpf_htons(0x3FFF)) || ip->daddr != cfg->ip || udp->dest != cfg->port)
        return XDP_PASS;
    __u8 *h = data + NET;
    if (*(__u16 *) h != MAGIC || h[2] != VERSION || h[3] != T_DATA)
        return XDP_PASS;
    struct data_in *in = &sc->in;
    in->flags = *(__u16 *) (h + 4);
    in->n = *(__u16 *) (h + 6);
    if (in->flags & F_REPORT)
        return XDP_PASS;
    __u32 len = bpf_ntohs(udp->len);
    if (len != 8 + HDR + 4 * in->n || data + NET + HDR + 4 * in->n > end)
        return XDP_PASS;
    in->job = *(__u32 *) (h + 8);
    in->worker = *(__u16 *) (h + 12);
    in->exp = *(__s8 *) (h + 14);
    in->set = h[15];
    in->seq = *(__s64 *) (h + 16);
    in->round = *(__s32 *) (h + 24);
    in->chunk = *(__s32 *) (h + 28);
    in->pool = *(__u16 *) (h + 36);
    in->status = *(__u16 *) (h + 38);
    in->number = *(__u64 *) (h + 40);
    in->mac = *(__u64 *) (h + 48);
    in->w0 = *(__u64 *) h;
    in->w2 = *(__u64 *) (h + 16);
    in->w3 = *(__u64 *) (h + 24);
    in->w5 = *(__u64 *) (h + 40);
    __builtin_memcpy(in->from_mac, eth->h_source, 6);
    __builtin_memcpy(in->own_mac, eth->h_dest, 6);
    in->ip = ip->saddr;
    in->udp_port = udp->source;

    __u32 j = SERENE_J;
    struct serene_job *job = 0;
    for (__u32 i = 0; i < SERENE_J; i++) {
        __u32 key = i;
        struct serene_job *c = bpf_map_lookup_elem(&job_static, &key);
        if (c && c->active && c->id == in->job) {
            j = i;
            job = c;
            break;
        }
    }
    j = launder(sc, j);
    if (j >= SERENE_J)
        return XDP_PASS;
    job = bpf_map_lookup_elem(&job_static, &j);
    if (!job || in->worker >= job->workers || in->worker >= SERENE_N)
        return XDP_PASS; /* unknown job, bad worker: the Java switch answers and counts */
    count(C_PACKETS_IN, 1);
    __u32 wkey = j * SERENE_N + in->worker;
    struct serene_worker *wk = bpf_map_lookup_elem(&worker_key, &wkey);
    if (!wk)
        return XDP_PASS;
    if (cfg->keyed) {
        __u64 m[4] = { in->w0, in->w2, in->w3, in->w5 };
        if (siphash(wk->k0, wk->k1, m, 4) != in->mac) {
            count(C_DROP_BAD_MAC, 1);
            return XDP_DROP;
        }
        bpf_spin_lock(&wk->lock);
        int fresh = take(wk, in->number);
        bpf_spin_unlock(&wk->lock);
        if (!fresh) {
            count(C_DROP_REPLAYED, 1);
            return XDP_DROP;
        }
    }
    __u32 bkey;
    struct serene_bank *bank = bank_in_use_of(j, &bkey);
    if (!bank)
        return XDP_PASS;
    if (!(bank->joined[index_below(in->worker >> 6, SERENE_W)] & (1ULL << (in->worker & 63)))) {
        count(C_DROP_NOT_JOINED, 1);
        return XDP_DROP;
    }
    __u32 payload = in->flags & F_PAYLOAD;
    if (payload == F_PAYLOAD || (payload ? (in->n == 0 || in->n > SERENE_K) : in->n != 0)) {
        count(C_DROP_BAD_ELEMENT_COUNT, 1);
        return XDP_DROP;
    }
    if (in->seq < 0 || in->round < 0 || in->chunk < 0 || (__u32) in->chunk >= job->chunks) {
        count(C_DROP_BAD_SLOT, 1);
        return XDP_DROP;
    }
    __u32 slot = (__u64) in->seq % SERENE_P;
    __u32 set = ((__u64) in->seq / SERENE_P) & 1;
    if (in->pool != slot || in->set != set) {
        count(C_DROP_BAD_SLOT, 1);
        return XDP_DROP;
    }
    if (job->steps_per_round == 0 || (__u64) in->seq / job->steps_per_round != (__u64) in->round) {
        count(C_DROP_BAD_STEP, 1);
        return XDP_DROP;
    }
    __u32 bytes = 4 * in->n;
    if (in->n > 0 && move_values(ctx, NET + HDR, bytes, 0) < 0)
        return XDP_PASS;
    if (in->exp != NO_EXPONENT && in->exp < MIN_EXPONENT) {
        count(C_DROP_BAD_EXPONENT, 1);
        return XDP_DROP;
    }
    if (payload == F_EXPONENTS) {
        struct block_walk *check = begin_walk(sc, 0, in->n, 0);
        bpf_loop(check->blocks, check_block, 0, 0);
        if (check->bad) {
            count(C_DROP_BAD_EXPONENT, 1);
            return XDP_DROP;
        }
    }
    /* a table write under way: while the control plane picks a hot-swap's round past every round opened (newest_round,
     * read under the job's lock as it is set here) and writes the bank, no newer round opens (a NACK AHEAD: the worker
     * sends again); then the bank is read again, so a round opened after the write sees it */
    __u32 *frozen = bpf_map_lookup_elem(&job_frozen, &j);
    struct serene_dyn *dyn = bpf_map_lookup_elem(&job_dyn, &j);
    if (!frozen || !dyn)
        return XDP_PASS;
    int refused = 0;
    bpf_spin_lock(&dyn->lock);
    if (in->round > dyn->newest_round) {
        if (*frozen)
            refused = 1;
        else
            dyn->newest_round = in->round;
    }
    bpf_spin_unlock(&dyn->lock);
    if (refused) {
        count(C_DROP_FROZEN, 1);
        return nack(ctx, cfg, job, in->n, ST_AHEAD);
    }
    bank = bank_in_use_of(j, &bkey);
    if (!bank)
        return XDP_PASS;
    /* the config entry in force for the round: the newest starting at or before it, else the oldest */
    __u32 e = 0;
    for (__u32 i = 1; i < SERENE_E; i++)
        if (i < bank->entries && bank->entry[i].first_round <= in->round)
            e = i;
    e = launder(sc, e);
    if (e >= SERENE_E)
        return XDP_PASS;
    /* the slot's part is a program of its own (a tail call), which the verifier walks from one state */
    sc->j = j;
    sc->e = e;
    sc->bank = bkey;
    bpf_tail_call(ctx, &stages, 0);
    return XDP_PASS;
}

/* The DATA path's second part, the slot and what follows: tail-called by serene_switch with the packet's fields
 * and places in the scratch. */
SEC("xdp")
int serene_aggregate(struct xdp_md *ctx)
{
    void *data, *end;
    struct ethhdr *eth;
    struct iphdr *ip;
    struct udphdr *udp;
    __u32 zero = 0;
    struct serene_settings *cfg = bpf_map_lookup_elem(&settings, &zero);
    struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
    if (!cfg || !sc)
        return XDP_PASS;
    struct data_in *in = &sc->in;
    __u32 j = sc->j;
    __u32 e = sc->e;
    __u32 bkey = sc->bank;
    if (j >= SERENE_J || e >= SERENE_E)
        return XDP_PASS;
    struct serene_job *job = bpf_map_lookup_elem(&job_static, &j);
    struct serene_bank *bank = bpf_map_lookup_elem(&job_bank, &bkey);
    if (!job || !bank)
        return XDP_PASS;
    __u32 payload = in->flags & F_PAYLOAD;
    __u32 bytes = 4 * in->n;
    __u32 slot = (__u64) in->seq % SERENE_P;
    __u32 set = ((__u64) in->seq / SERENE_P) & 1;
    struct serene_entry *entry = &bank->entry[e];
    __u32 sidx = (j * 2 + set) * SERENE_P + slot;
    __u32 oidx = (j * 2 + (set ^ 1)) * SERENE_P + slot;
    struct serene_slot *s = bpf_map_lookup_elem(&slots, &sidx);
    struct serene_slot *other = bpf_map_lookup_elem(&slots, &oidx);
    struct serene_dyn *dyn = bpf_map_lookup_elem(&job_dyn, &j);
    if (!s || !other || !dyn)
        return XDP_PASS;
    __s32 bound = entry->bound;
    __s64 ring = SERENE_G - 1;
    __s64 highest = (__s64) dyn->released_round + 1 + (bound < ring ? bound : ring);
    int previous_released = in->seq < SERENE_P || (other->seq == in->seq - SERENE_P && other->released);
    __u64 now = bpf_ktime_get_ns();

    /* PSP: the round's sample, drawn before the lock when this packet would open the slot (an unlocked look: the slot
     * only moves to newer steps, so a packet that finds it older may open it, and one that does not, will not) */
    sc->sampled = 0;
    if (entry->sample > 0 && in->seq > s->seq) {
        draw_sample(sc, entry, job->id, in->round);
        sc->sampled = 1;
    }
    /* the slot, under its lock: 0 drop, 2 answer with the released result, 3 NACK AHEAD, 4 NACK STALE, 6 NACK HELD (a
     * duplicate of an open step), 5 taken (its values are added next, then the rule decides: 1 released now) */
    /* kept in the scratch, not in registers, so the verifier walks what follows once, not once an outcome */
    sc->outcome = 0;
    sc->bumps = 0;
    sc->late = 0;
    sc->within = 0;
    sc->timed = 0;
    struct out o = {};
    bpf_spin_lock(&s->lock);
    if (in->seq > s->seq) {
        if ((__s64) in->round > highest) {
            sc->bumps |= 1u << C_DROP_BEYOND_BOUND;
            sc->outcome = 3;
            goto unlock;
        }
        if (!previous_released || s->adding > 0) {
            sc->bumps |= 1u << C_DROP_AHEAD;
            sc->outcome = 3;
            goto unlock;
        }
        s->seq = in->seq;
        s->count = 0;
        s->adding = 0;
        s->round = in->round;
        s->chunk = in->chunk;
        s->length = in->n;
        s->exponent = NO_EXPONENT;
        s->released = 0;
        s->flags = payload;
        s->first_ns = now;
        s->quorum = entry->quorum;
        s->timeout_ns = entry->timeout_ns;
        for (int w = 0; w < SERENE_W; w++) {
            s->bitmap[w] = 0;
            s->required[w] = sc->sampled ? sc->draw.out[w] : entry->required[w];
        }
    } else if (in->seq < s->seq) {
        sc->bumps |= 1u << C_DROP_STALE;
        sc->outcome = 4;
        goto unlock;
    }
    if (s->round != in->round || s->chunk != in->chunk || s->length != in->n || (s->flags & F_PAYLOAD) != payload) {
        sc->bumps |= 1u << C_DROP_INCONSISTENT;
        goto unlock;
    }
    __u64 bit = 1ULL << (in->worker & 63);
    __u32 word = index_below(in->worker >> 6, SERENE_W);
    if (s->bitmap[word] & bit) {
        sc->bumps |= 1u << C_DUPLICATES;
        if (s->released) {
            sc->bumps |= 1u << C_RESULTS_RETRANSMITTED;
            sc->outcome = 2;
        } else {
            sc->outcome = 6;
        }
        goto unlock;
    }
    if (s->released) {
        sc->bumps |= (1u << C_DROP_LATE) | (1u << C_RESULTS_RETRANSMITTED);
        sc->outcome = 2;
        sc->late = 1;
        /* late only because the step went without the late set, yet within the timeout: caught up, waited for again */
        sc->within = s->timeout_ns && now - s->first_ns <= s->timeout_ns;
        goto unlock;
    }
    sc->bumps |= 1u << C_CONTRIBUTIONS;
    if (payload == F_VALUES)
        sc->bumps |= 1u << C_VALUE_CONTRIBUTIONS;
    s->bitmap[word] |= bit;
    s->count++;
    s->adding++;
    if (in->exp != NO_EXPONENT && in->exp > s->exponent)
        s->exponent = in->exp;
    s->flags |= in->flags & F_SATURATED;
    sc->outcome = 5;
unlock:
    o.first_ns = s->first_ns;
    if (sc->outcome == 2)
        take_out(s, &o);
    bpf_spin_unlock(&s->lock);
    count_mask(sc->bumps);
    if (sc->outcome == 0)
        return XDP_DROP;

    struct block_walk *walk = begin_walk(sc, sidx, in->n, o.first_ns);
    __u32 blocks_used = walk->blocks;
    walk->exponents = payload == F_EXPONENTS ? -1 : 0;
    walk->start = job->workers ? in->worker * blocks_used / job->workers : 0;
    if (sc->outcome == 5) {
        /* the values, block by block, each under its lock; then, under the slot's lock again, the release rule once
         * no contribution taken is still being added */
        if (payload)
            bpf_loop(blocks_used, add_block, 0, 0);
        take_view(dyn, bank, in->round, &sc->view);
        bpf_spin_lock(&s->lock);
        if (s->adding > 0)
            s->adding--;
        if (walk->overflow)
            s->flags |= F_SATURATED;
        if (s->adding == 0 && !s->released) {
            int d = due(s, &sc->view, now);
            if (d) {
                s->released = 1;
                sc->outcome = 1;
                sc->timed = d == 2;
                take_out(s, &o);
            }
        }
        bpf_spin_unlock(&s->lock);
        if (walk->overflow)
            count(C_OVERFLOWS, 1);
    }
    int outcome = sc->outcome;
    if (outcome == 1 || outcome == 2) {
        /* the released sums, block by block; blocks of a newer opening (the slot moved on meanwhile): no answer */
        bpf_loop(blocks_used, copy_block, 0, 0);
        if (walk->bad)
            return XDP_DROP;
    }

    if (outcome == 1) {
        if (sc->timed) {
            count(C_TIMEOUT_RELEASES, 1);
            record_timeout(dyn, &sc->view, &o);
        }
        after_release(j, job, dyn, &o);
    }
    if (outcome == 5 || outcome == 1 || sc->late) {
        /* a contribution, in time or late: the worker's clock (values in time), its arrival telemetry, and out of the
         * late set if in time (waited for again) */
        __u32 w = index_below(in->worker, SERENE_N);
        __u64 after = now > o.first_ns ? now - o.first_ns : 0;
        __u64 reported = (__u64) in->status * 100000;
        __u64 keep = sc->late && !sc->within ? ~0ULL : ~(1ULL << (in->worker & 63));
        __u32 word = index_below(in->worker >> 6, SERENE_W);
        bpf_spin_lock(&dyn->lock);
        dyn->late[word] &= keep;
        if (payload == F_VALUES && !sc->late && in->round > dyn->clock[w])
            dyn->clock[w] = in->round;
        arrived(dyn, w, in->round, after, reported);
        bpf_spin_unlock(&dyn->lock);
        if (outcome == 5)
            return XDP_DROP;
    }

    if (outcome == 3 || outcome == 4 || outcome == 6)
        return nack(ctx, cfg, job, in->n, outcome == 3 ? ST_AHEAD : outcome == 4 ? ST_STALE : ST_HELD);

    if (o.length != in->n || build_result(ctx, cfg, job, bank, dyn, j, &o, in, outcome == 2) < 0)
        return XDP_DROP;
    if (outcome == 2) {
        count(C_PACKETS_OUT, 1);
        return XDP_TX;
    }
    count(C_RESULTS_MULTICAST, 1);
    return bpf_redirect_map(&tx_ports, 0, BPF_F_BROADCAST);
}

/* serene_sweep's walk over a job's slots (the job's place and bank in the scratch): the first one due is released
 * under its lock, its state in the scratch (found: its index) */
static long sweep_slot(__u64 i, void *unused)
{
    __u32 zero = 0;
    struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
    if (!sc)
        return 1;
    __u32 j = sc->j;
    __u32 sidx = j * 2 * SERENE_P + (__u32) i % (2 * SERENE_P);
    struct serene_slot *s = bpf_map_lookup_elem(&slots, &sidx);
    struct serene_dyn *dyn = bpf_map_lookup_elem(&job_dyn, &j);
    struct serene_bank *bank = bpf_map_lookup_elem(&job_bank, &sc->bank);
    if (!s || !dyn || !bank)
        return 1;
    __s32 round = s->round;
    if (s->seq < 0 || s->released || s->count == 0 || s->adding > 0)
        return 0;
    take_view(dyn, bank, round, &sc->view);
    __u64 now = bpf_ktime_get_ns();
    int d = 0;
    bpf_spin_lock(&s->lock);
    if (s->seq >= 0 && !s->released && s->count > 0 && s->adding == 0 && s->round == round) {
        d = due(s, &sc->view, now);
        if (d) {
            s->released = 1;
            take_out(s, &sc->o);
        }
    }
    bpf_spin_unlock(&s->lock);
    if (!d)
        return 0;
    sc->found = sidx;
    sc->timed = d == 2;
    return 1;
}

/* The timeout scanner (TimeoutScanner's sweep, as a packet generator would run it): run by the driver
 * (BPF_PROG_TEST_RUN) when the control plane's timer asks, on a packet whose first four bytes name a job's place and
 * which is as long as the job's longest DATA. It releases the first slot of the job that is due (its timeout passed,
 * or the latch or late set allow it now), as the DATA path would, and turns the packet into its RESULT: XDP_TX, and
 * the control plane sends it to the job's workers from the switch's address. XDP_DROP: none is due. */
SEC("xdp.frags")
int serene_sweep(struct xdp_md *ctx)
{
    void *data = (void *) (long) ctx->data;
    void *end = (void *) (long) ctx->data_end;
    __u32 zero = 0;
    struct serene_settings *cfg = bpf_map_lookup_elem(&settings, &zero);
    struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
    if (!cfg || !sc || data + 4 > end)
        return XDP_ABORTED;
    __u32 j = *(__u32 *) data;
    if (j >= SERENE_J)
        return XDP_ABORTED;
    struct serene_job *job = bpf_map_lookup_elem(&job_static, &j);
    struct serene_dyn *dyn = bpf_map_lookup_elem(&job_dyn, &j);
    __u32 bkey;
    struct serene_bank *bank = bank_in_use_of(j, &bkey);
    if (!job || !dyn || !bank || !job->active)
        return XDP_DROP;
    sc->j = j;
    sc->bank = bkey;
    sc->found = ~0u;
    sc->timed = 0;
    bpf_loop(2 * SERENE_P, sweep_slot, 0, 0);
    __u32 sidx = sc->found;
    if (sidx >= SERENE_J * 2 * SERENE_P)
        return XDP_DROP;
    struct out *o = &sc->o;
    if (sc->timed) {
        count(C_TIMEOUT_RELEASES, 1);
        record_timeout(dyn, &sc->view, o);
    }
    after_release(j, job, dyn, o);
    struct block_walk *walk = begin_walk(sc, sidx, o->length, o->first_ns);
    bpf_loop(walk->blocks, copy_block, 0, 0);
    /* the packet as long as the DATA it answers, then grown into the RESULT */
    int have = bpf_xdp_get_buff_len(ctx);
    int want = NET + HDR + 4 * (o->length & 0xFFFF);
    if (walk->bad || have < want || bpf_xdp_adjust_tail(ctx, want - have) < 0)
        return XDP_ABORTED;
    struct data_in *in = &sc->in;
    __builtin_memset(in, 0, sizeof *in);
    in->job = job->id;
    if (build_result(ctx, cfg, job, bank, dyn, j, o, in, 0) < 0)
        return XDP_ABORTED;
    count(C_RESULTS_MULTICAST, 1);
    return XDP_TX;
}

/* Each port's copy of a multicast RESULT: addressed to the worker behind the port, or dropped if that worker is
 * not of the result's job. */
SEC("xdp/devmap")
int serene_port(struct xdp_md *ctx)
{
    void *data = (void *) (long) ctx->data;
    void *end = (void *) (long) ctx->data_end;
    if (data + NET + HDR > end)
        return XDP_DROP;
    __u32 ifindex = ctx->egress_ifindex;
    struct serene_port *p = bpf_map_lookup_elem(&ports, &ifindex);
    __u8 *h = data + NET;
    if (!p || *(__u32 *) (h + 8) != p->job)
        return XDP_DROP;
    struct ethhdr *eth = data;
    struct iphdr *ip = data + 14;
    struct udphdr *udp = data + 34;
    __builtin_memcpy(eth->h_dest, p->mac, 6);
    __builtin_memcpy(eth->h_source, p->own_mac, 6);
    ip->daddr = p->ip;
    udp->dest = p->udp_port;
    ip->check = ip_checksum(ip);
    count(C_PACKETS_OUT, 1);
    return XDP_PASS;
}

/* The switch's next packet number, for the Java switch's own packets: run by the driver (BPF_PROG_TEST_RUN),
 * it takes the number with the same atomic add the pipeline takes its numbers with and writes it into the
 * test packet, so the switch's packets from both sides are numbered by one counter. */
SEC("xdp")
int serene_number(struct xdp_md *ctx)
{
    void *data = (void *) (long) ctx->data;
    void *end = (void *) (long) ctx->data_end;
    __u32 zero = 0;
    struct serene_settings *cfg = bpf_map_lookup_elem(&settings, &zero);
    if (!cfg || data + 16 > end)
        return XDP_ABORTED;
    *(__u64 *) data = __sync_fetch_and_add(&cfg->number, 1);
    return XDP_PASS;
}
