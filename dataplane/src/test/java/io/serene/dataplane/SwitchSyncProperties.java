package io.serene.dataplane;

import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketType;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.sync.StepLayout;
import io.serene.protocol.sync.SyncConfig;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import java.nio.ByteBuffer;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The data plane's release rule under random sync configs and random arrival orders with
 * duplicates: every released chunk satisfies the config in force for its round (required workers
 * and quorum, or its timeout passed), holds exactly the contributions its bitmap names (each once),
 * and never changes after release; contributions beyond the bound are refused. jqwik prints the
 * falsifying sample, seed included.
 */
class SwitchSyncProperties {
    private static final int POOL = 64;
    private static final int CHUNKS = 2;
    /** The job's steps: 2 elements in chunks of 1, two exponent steps (never sent here), then the value steps. */
    private static final StepLayout LAYOUT = new StepLayout(CHUNKS, 1, POOL);

    /** What the test saw of one released chunk. */
    private static final class Release {
        final long bitmap;
        final int count;
        final int value;
        final long atNs;
        /** Whether the release condition held when it was released, as the test keeps the state. */
        final boolean explained;

        Release(final long bitmap, final int count, final int value, final long atNs, final boolean explained) {
            this.bitmap = bitmap;
            this.count = count;
            this.value = value;
            this.atNs = atNs;
            this.explained = explained;
        }
    }

    @Property(tries = 300)
    void releasesFollowTheConfigOfTheirRoundAndCountEachContributionOnce(
        @ForAll @IntRange(min = 1, max = 8) final int workers,
        @ForAll @IntRange(min = 0, max = 4) final int kind,
        @ForAll @IntRange(min = 0, max = 3) final int bound,
        @ForAll final long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        final SyncConfig config = config(kind, workers, bound, random);
        final SyncConfig.Resolved rule = config.resolve(workers);
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(1)
            .maxWorkers(8).chunkElements(1).maxPoolSize(POOL).roundRing(8).defaultSync(config).conclude(), ex -> {
                throw new AssertionError(ex);
            });
        final Map<Long, Release> releases = new HashMap<>();
        final long[] now = {0};
        final long all = (1L << workers) - 1;
        // the state the release rule reads, as the switch should keep it: a release only its timeout
        // allowed latches its round (the intersection of such releases' workers) and adds the workers it
        // left out to the late set; a contribution counted into an open chunk takes its worker out
        final long[] late = {0};
        final Map<Integer, Long> latch = new HashMap<>();
        final Map<Long, Long> firstNs = new HashMap<>();
        final boolean timeouts = rule.timeoutNs != SyncConfig.NO_TIMEOUT;
        final Outbox outbox = (port, buffer, offset, length) -> {
            final ResultPacket p = new ResultPacket().wrap(buffer, offset, length);
            if (p.type() == PacketType.RESULT && !p.hasFlag(Flags.RETRANSMIT)) {
                final long bitmap = p.bitmapWord(0);
                final int round = p.round();
                // PSP: the round's seeded sample of the required set (job 1), drawn as the switch draws it
                final BitSet missing = rule.requiredFor(1, round);
                missing.andNot(BitSet.valueOf(new long[] {bitmap}));
                final boolean byRule = missing.isEmpty() && p.contributorCount() >= rule.quorum;
                final Long held = latch.get(round);
                final boolean byLatch = held != null && (bitmap & held) == held;
                final long onTime = all & ~late[0];
                final boolean withoutTheLate = timeouts && late[0] != 0 && (bitmap & onTime) == onTime;
                final boolean timedOut = timeouts && now[0] - firstNs.getOrDefault(logical(p), now[0]) >= rule.timeoutNs;
                final Release previous = releases.putIfAbsent(logical(p), new Release(bitmap, p.contributorCount(),
                    p.value(0), now[0], byRule || byLatch || withoutTheLate || timedOut));
                if (previous == null && !byRule && !byLatch && !withoutTheLate) {
                    late[0] |= all & ~bitmap;
                    latch.merge(round, bitmap, (a, b) -> a & b);
                }
                if (previous != null) {
                    // the first release is the one checked (its time, the late set then)
                    assertThat(p.bitmapWord(0)).as("a chunk is released once; re-multicasts repeat it").isEqualTo(previous.bitmap);
                }
            }
        };
        for (int w = 0; w < workers; w++) {
            final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(1)
                .workerId(w).workerCount(workers).elementsPerRound(CHUNKS);
            pipeline.onPacket(w, b, 0, JoinPacket.LENGTH, 0, outbox);
        }
        // every worker contributes 2^w to every chunk of rounds 0..5 in a random order, some twice
        final int rounds = 6;
        final int total = workers * rounds * CHUNKS;
        final long[] order = new long[total * 2];
        int n = 0;
        for (int w = 0; w < workers; w++) {
            for (int r = 0; r < rounds; r++) {
                for (int c = 0; c < CHUNKS; c++) {
                    order[n++] = ((long) w << 32) | ((long) r * CHUNKS + c);
                    if (random.nextInt(4) == 0) {
                        order[n++] = ((long) w << 32) | ((long) r * CHUNKS + c);
                    }
                }
            }
        }
        for (int i = n - 1; i > 0; i--) {
            final int k = random.nextInt(i + 1);
            final long t = order[i];
            order[i] = order[k];
            order[k] = t;
        }
        final Map<Long, Long> contributedBefore = new HashMap<>();
        for (int i = 0; i < n; i++) {
            final int w = (int) (order[i] >>> 32);
            final long seq = order[i] & 0xFFFF_FFFFL;
            final int round = (int) (seq / CHUNKS);
            final long refusedBefore = pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND);
            final int releasedRound = pipeline.releasedRound(1);
            now[0] += random.nextInt(300_000);
            final boolean beyond = round > releasedRound + 1 + Math.min(rule.bound, 7);
            if (!beyond) {
                firstNs.putIfAbsent(seq, now[0]);
                final boolean fresh = (contributedBefore.getOrDefault(seq, 0L) & (1L << w)) == 0;
                // in time: into an open chunk, or after its release yet within its timeout (caught up): waited for again
                final boolean inTime = !releases.containsKey(seq) || timeouts && now[0] - firstNs.get(seq) <= rule.timeoutNs;
                if (fresh && inTime) {
                    late[0] &= ~(1L << w);
                }
            }
            contribute(pipeline, outbox, w, seq, round, now[0]);
            pipeline.onTimer(now[0], outbox);
            assertThat(pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND) > refusedBefore)
                .as("round %d with R=%d, s=%d", round, releasedRound, rule.bound).isEqualTo(beyond);
            if (!beyond) {
                contributedBefore.merge(seq, 1L << w, (a, b) -> a | b);
            }
        }
        // round 0 is never beyond the bound and gets every worker's contribution: it must be released
        assertThat(releases).containsKeys(0L, 1L);
        for (final Map.Entry<Long, Release> e : releases.entrySet()) {
            final Release r = e.getValue();
            final BitSet bits = BitSet.valueOf(new long[] {r.bitmap});
            assertThat(r.count).isEqualTo(bits.cardinality());
            // exactly once: the sum is the sum of 2^w over the bitmap
            assertThat(r.value).as("seq %d", e.getKey()).isEqualTo((int) r.bitmap);
            assertThat(r.bitmap & ~contributedBefore.getOrDefault(e.getKey(), 0L)).isZero();
            assertThat(r.explained).as("seq %d released with %s under %s at %d ns: by the rule, its timeout, its round's latch "
                + "or without the late", e.getKey(), bits, config, r.atNs).isTrue();
        }
        assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS))
            .isEqualTo(releases.values().stream().mapToLong(r -> r.count).sum()
                + pendingContributions(releases, contributedBefore));
    }

    @Property(tries = 50)
    void aTimeoutLatchesItsRoundAndIsNotWaitedOutAgainForAWorkerUntilItCatchesUp(
        @ForAll @IntRange(min = 2, max = 8) final int workers, @ForAll final long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        final long timeout = 10_000_000L;
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(1)
            .maxWorkers(8).chunkElements(1).maxPoolSize(POOL).roundRing(8).defaultSync(SyncConfig.bsp().withTimeoutNs(timeout))
            .conclude(), ex -> {
                throw new AssertionError(ex);
            });
        final Map<Long, Long> released = new HashMap<>();
        final Outbox outbox = (port, buffer, offset, length) -> {
            final ResultPacket p = new ResultPacket().wrap(buffer, offset, length);
            if (p.type() == PacketType.RESULT && !p.hasFlag(Flags.RETRANSMIT)) {
                released.put(logical(p), p.bitmapWord(0));
            }
        };
        for (int w = 0; w < workers; w++) {
            final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(1)
                .workerId(w).workerCount(workers).elementsPerRound(CHUNKS);
            pipeline.onPacket(w, b, 0, JoinPacket.LENGTH, 0, outbox);
        }
        final int late = random.nextInt(workers);
        long now = 1_000;
        for (int w = 0; w < workers; w++) {
            if (w != late) {
                contribute(pipeline, outbox, w, 0, 0, now);
            }
        }
        pipeline.onTimer(now + timeout / 2, outbox);
        assertThat(released).as("worker %d missing, before the timeout", late).isEmpty();
        now += timeout + timeout / 4 + 1;
        pipeline.onTimer(now, outbox);
        final long others = ((1L << workers) - 1) & ~(1L << late);
        assertThat(released).as("the timeout released chunk 0 without worker %d", late).containsEntry(0L, others);
        // chunk 1 of the same round: released by the last of the others' contributions, not a second timeout
        for (int w = 0; w < workers; w++) {
            if (w != late) {
                assertThat(released).as("before worker %d's contribution", w).doesNotContainKey(1L);
                contribute(pipeline, outbox, w, 1, 0, now + 1_000);
            }
        }
        assertThat(released).as("chunk 1 with the workers of the timed-out chunk 0").containsEntry(1L, others);
        assertThat(pipeline.releasedRound(1)).isZero();
        // round 1: the late worker is not waited for until it is counted in time again
        for (int w = 0; w < workers; w++) {
            if (w != late) {
                contribute(pipeline, outbox, w, 2, 1, now + 2_000);
            }
        }
        assertThat(released).as("round 1, chunk 0: without the late worker, no timeout").containsEntry(2L, others);
        contribute(pipeline, outbox, late, 3, 1, now + 3_000);
        for (int w = 0; w < workers; w++) {
            if (w != late) {
                assertThat(released).as("round 1, chunk 1: the late worker came first, in time").doesNotContainKey(3L);
                contribute(pipeline, outbox, w, 3, 1, now + 4_000);
            }
        }
        assertThat(released).containsEntry(3L, (1L << workers) - 1);
        // round 2: every worker waited for again
        for (int w = 0; w < workers; w++) {
            if (w != late) {
                contribute(pipeline, outbox, w, 4, 2, now + 5_000);
            }
        }
        pipeline.onTimer(now + 6_000, outbox);
        assertThat(released).as("round 2 waits for the worker that caught up").doesNotContainKey(4L);
        contribute(pipeline, outbox, late, 4, 2, now + 7_000);
        assertThat(released).containsEntry(4L, (1L << workers) - 1);
    }

    /** Contributions the switch accepted into chunks it has not released yet. */
    private static long pendingContributions(final Map<Long, Release> releases, final Map<Long, Long> contributed) {
        long pending = 0;
        for (final Map.Entry<Long, Long> e : contributed.entrySet()) {
            if (!releases.containsKey(e.getKey())) {
                pending += Long.bitCount(e.getValue());
            }
        }
        return pending;
    }

    private static SyncConfig config(final int kind, final int workers, final int bound, final SplittableRandom random) {
        final SyncConfig base = SyncConfig.ssp(bound);
        switch (kind) {
            case 0:
                return base;
            case 1:
                return base.requiringNone().withQuorum(1 + random.nextInt(workers));
            case 2: {
                if (workers == 1) {
                    return base; // excluding the only worker leaves nothing to release a chunk
                }
                final BitSet excluded = new BitSet();
                excluded.set(random.nextInt(workers));
                return base.excluding(excluded);
            }
            case 3:
                return base.withTimeoutNs(1_000_000L + random.nextInt(5_000_000));
            default:
                // PSP: pBSP with bound 0, pSSP otherwise
                return base.withSample(1 + random.nextInt(workers));
        }
    }

    /** A result's chunk as the test numbers them: round x CHUNKS + chunk. */
    private static long logical(final ResultPacket p) {
        return (long) p.round() * CHUNKS + p.chunk();
    }

    /** Worker w's value for the chunk the test numbers {@code logical} (round x CHUNKS + chunk): its value step. */
    private static void contribute(final SwitchPipeline pipeline, final Outbox outbox, final int worker,
                                   final long logical, final int round, final long nowNs) {
        final int length = DataPacket.length(1);
        final ByteBuffer b = Packet.allocate(length);
        final long seq = LAYOUT.seq(round, LAYOUT.exponentSteps() + (int) (logical % CHUNKS));
        new DataPacket().wrap(b, 0, length).initHeader(PacketType.DATA).jobId(1).workerId(worker).seq(seq)
            .round(round).chunk((int) (logical % CHUNKS)).poolIndex((int) (seq % POOL)).shadowSet((int) ((seq / POOL) & 1))
            .flags(Flags.VALUES).elementCount(1).exponent((byte) 0).value(0, 1 << worker);
        pipeline.onPacket(worker, b, 0, length, nowNs, outbox);
    }
}
