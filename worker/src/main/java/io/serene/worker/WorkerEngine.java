package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.Flags;
import io.serene.protocol.Outbox;
import io.serene.protocol.PacketCheck;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketFlyweight;
import io.serene.protocol.PacketType;
import io.serene.protocol.RttEstimator;
import io.serene.protocol.Status;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.StepLayout;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;

import java.nio.ByteBuffer;
import java.nio.IntBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * The worker side of the aggregation protocol, sans-IO: joins the job, turns each round's
 * gradient into a stream of steps over the switch's slot pool, recovers losses, follows the
 * job's sync configs, and reassembles released results into {@link Aggregate}s.
 *
 * <p>Steps of a round with C chunks of K elements and pool size P, with b = min(P, C) and
 * X = ceil(b / K):
 * <pre>
 *   step t &lt; X      : the exponents of chunks tK .. min(b, (t+1)K) - 1 (the switch takes maxima)
 *   step t = X + j  : values of chunk j, quantized with chunk j's agreed exponent, carrying the
 *                     exponent of chunk j + b in the header (look-ahead, as SwitchML does)
 * </pre>
 * Step numbers (seq) run on across rounds: seq = round * (X + C) + t; every worker derives the
 * same numbering.
 *
 * <p>Synchronization (DESIGN.md section 2): the switch sends the job's config table (bound s,
 * release rule, late mode per first round) and stamps its epoch on every result. A worker is
 * cleared for round c once it knows the current table and R &gt;= c - s - 1 ({@link #awaitClearance});
 * it sends a round's steps only when cleared. A chunk can be released without this worker
 * (quorum, exclusion, timeout): results arrive for steps it has not sent, the steps are then skipped,
 * and its values for such a chunk, or for a chunk its contribution reached too late, are folded
 * into its next round's gradient or dropped, as the round's late mode says. Each released chunk is
 * applied once, in round order, averaged by its own contributor count.
 *
 * <p>Single-threaded: the transport calls every method from its one thread.
 */
public final class WorkerEngine implements PacketEndpoint {
    private enum Phase { JOINING, READY, LEAVING, LEFT, FAILED }

    /** One round as this worker knows it: released parts, and its own gradient once submitted. */
    private static final class RoundState {
        final int round;
        final RoundBuffers buffers;
        CompletableFuture<Aggregate> future;
        boolean submitted;
        int chunksReleased;
        boolean saturated;
        /** The compute time the caller reported for this round (sent in every DATA packet; 0: none). */
        long computeNs;

        RoundState(final int round, final RoundBuffers buffers) {
            this.round = round;
            this.buffers = buffers;
        }
    }

    /** A caller waiting until the worker may start computing a round. */
    private static final class ClearanceWaiter {
        final int round;
        final CompletableFuture<Void> future = new CompletableFuture<>();

        ClearanceWaiter(final int round) {
            this.round = round;
        }
    }

    /** Results this many steps ahead of a pending step mark it lost. */
    private static final int REORDER_THRESHOLD = 3;
    /** Steps resent per timeout event; the rest of the expired steps wait another timeout. */
    private static final int MAX_RESENDS_PER_TIMEOUT = 4;
    /** Shortest tail probe: below this a probe would mostly resend steps still on their way. */
    private static final long MIN_PROBE_NS = 200_000L;
    /** Largest chunk a JOIN_ACK may announce (a DATA packet must fit one datagram). */
    private static final int MAX_CHUNK_ELEMENTS = 16_000;
    /** Most entries of a config table (the switch keeps eight). */
    private static final int MAX_CONFIG_ENTRIES = 64;

    private final WorkerContext ctx;
    private final Counters<WorkerCounter> counters = new Counters<>(WorkerCounter.class);
    private final Consumer<Throwable> errorHandler;
    private final PacketFlyweight in = new PacketFlyweight();
    private final PacketFlyweight out = new PacketFlyweight();
    private final ByteBuffer txBuffer = PacketFlyweight.allocate(PacketFlyweight.dataLength(MAX_CHUNK_ELEMENTS));
    private final IntBuffer txInts = txBuffer.asIntBuffer();
    private final int[] quantized = new int[MAX_CHUNK_ELEMENTS];
    private final CompletableFuture<Void> joined = new CompletableFuture<>();
    private final CompletableFuture<Void> left = new CompletableFuture<>();
    /** Round buffers handed back by {@link Aggregate#release()}, from any thread. */
    private final Queue<RoundBuffers> pool = new ConcurrentLinkedQueue<>();
    private final RttEstimator rtt;
    private final int q;
    private ByteBuffer viewSource;
    private IntBuffer view;

    private Phase phase = Phase.JOINING;
    private long phaseDeadlineNs;
    private int attempts;
    private WorkerException failure;

    // known after JOIN_ACK
    private int poolSize;
    private int chunkElements;
    private int roundRing;
    private StepLayout layout;
    // the layout's numbers, read on every step
    private int chunks;
    private int lookAhead;
    private int expSteps;
    private int stepsPerRound;
    private int window;

    // the job's config table as last received whole, and the newest epoch seen anywhere
    private final int[] cfgFirst = new int[MAX_CONFIG_ENTRIES];
    private final int[] cfgBound = new int[MAX_CONFIG_ENTRIES];
    private final LateMode[] cfgLate = new LateMode[MAX_CONFIG_ENTRIES];
    private int cfgCount;
    private int knownEpoch = -1;
    private int seenEpoch;
    private final int[] pendingFirst = new int[MAX_CONFIG_ENTRIES];
    private final int[] pendingBound = new int[MAX_CONFIG_ENTRIES];
    private final LateMode[] pendingLate = new LateMode[MAX_CONFIG_ENTRIES];
    private int pendingEpoch = -1;
    private long pendingMask;
    private long configRequestAtNs;

    // window registers of this worker's own steps in flight, indexed by seq & windowMask
    private int windowMask;
    private long[] entrySeq;
    private boolean[] entryDone;
    private long[] entrySentNs;
    private long[] entrySendStamp;
    private long sendStamp;
    private long[] entryDeadlineNs;
    private int[] entryRetries;
    private long tailProbeArmedAt = -1;
    private long minRttNs = Long.MAX_VALUE / 8;
    private long nextSeq;
    /** Loss-recovery hint from the latest result: the job's lowest open step, and whether the switch has ours. */
    private long openSeq = -1;
    private boolean openHasMine;
    private long oldestSeq;
    private long earliestDeadlineNs = NO_DEADLINE;

    // rounds from baseRound (the oldest not yet delivered) on, created when submitted or first heard of
    private RoundState[] rounds = new RoundState[16];
    private int baseRound;
    private int submittedRounds;
    private int releasedRound = -1;
    private final List<ClearanceWaiter> waiters = new ArrayList<>();
    private float[] fold;
    private boolean foldPending;
    /** Rounds submitted before the JOIN_ACK: gradient copy and future. */
    private final List<Object[]> beforeJoin = new ArrayList<>();

    public WorkerEngine(final WorkerContext context, final Consumer<Throwable> errorHandler) {
        this.ctx = context.conclude();
        this.errorHandler = errorHandler;
        this.q = BlockFloat.scaleBits(ctx.workers());
        this.rtt = new RttEstimator(ctx.initialRtoNs(), ctx.minRtoNs(), ctx.maxRtoNs());
    }

    public WorkerContext context() {
        return ctx;
    }

    public Counters<WorkerCounter> counters() {
        return counters;
    }

    /** Completes when the switch accepted the JOIN; fails when it refused or never answered. */
    public CompletableFuture<Void> joined() {
        return joined;
    }

    /** Rounds delivered to the caller (all before this one are complete). */
    public int completedRounds() {
        return baseRound;
    }

    /** The highest round R such that every round up to it is released, as this worker last heard. */
    public int releasedRound() {
        return releasedRound;
    }

    /** The epoch of the config table this worker holds, -1 before the first. */
    public int configEpoch() {
        return knownEpoch;
    }

    public int poolSize() {
        return poolSize;
    }

    /**
     * Elements per chunk, as the switch announced in its JOIN_ACK; readable from any thread once
     * {@link #joined()} has completed (the completion orders the write before the read).
     */
    public int chunkElements() {
        if (!joined.isDone() || joined.isCompletedExceptionally()) {
            throw new IllegalStateException("worker " + ctx.workerId() + " has not joined");
        }
        return chunkElements;
    }

    public long rtoNs() {
        return rtt.rtoNs();
    }

    /** Smoothed round-trip time of a step (send to result), -1 before the first sample. */
    public long srttNs() {
        return rtt.srttNs();
    }

    /** The window's position, for diagnostics. */
    public String debugState() {
        return "phase=" + phase + ", nextSeq=" + nextSeq + ", oldestSeq=" + oldestSeq + ", submitted=" + submittedRounds
            + ", completed=" + baseRound + ", R=" + releasedRound + ", epoch=" + knownEpoch + "/" + seenEpoch
            + ", rto=" + rtt.rtoNs() / 1000 + " us";
    }

    /**
     * Contributes this worker's gradient for a round and returns the future aggregate. Rounds are
     * numbered 0, 1, 2, ... without gaps; the array is copied (folded late values are added to
     * the copy). The aggregate holds whoever made it into each chunk, this worker or not.
     */
    public CompletableFuture<Aggregate> allreduce(final int round, final float[] gradient) {
        return allreduce(round, gradient, null);
    }

    /**
     * {@link #allreduce(int, float[])} with the chunk exponents already computed by
     * {@link BlockFloat#chunkExponents} (on another thread, say) for {@link #chunkElements()}.
     */
    public CompletableFuture<Aggregate> allreduce(final int round, final float[] gradient, final byte[] chunkExponents) {
        return allreduce(round, gradient, chunkExponents, 0);
    }

    /**
     * {@link #allreduce(int, float[], byte[])} reporting the worker's compute time for the round
     * (nanoseconds; 0: none): every DATA packet of the round carries it, for the switch's telemetry.
     */
    public CompletableFuture<Aggregate> allreduce(final int round, final float[] gradient, final byte[] chunkExponents,
                                                  final long computeNs) {
        final CompletableFuture<Aggregate> future = new CompletableFuture<>();
        if (phase == Phase.FAILED) {
            future.completeExceptionally(failure);
            return future;
        }
        if (phase == Phase.LEAVING || phase == Phase.LEFT) {
            future.completeExceptionally(new WorkerException("worker " + ctx.workerId() + " has left the job"));
            return future;
        }
        if (round != submittedRounds + beforeJoin.size()) {
            future.completeExceptionally(new WorkerException(
                "rounds must be submitted in order without gaps: expected round " + submittedRounds + ", got " + round));
            return future;
        }
        if (gradient.length != ctx.elementsPerRound()) {
            future.completeExceptionally(new WorkerException(
                "gradient has " + gradient.length + " elements, the job has " + ctx.elementsPerRound()));
            return future;
        }
        if (phase == Phase.JOINING) {
            // the chunking is known only from the JOIN_ACK: keep the round until then
            beforeJoin.add(new Object[] {gradient.clone(), future, computeNs});
            return future;
        }
        submit(round, gradient, chunkExponents, computeNs, future);
        return future;
    }

    private void submit(final int round, final float[] gradient, final byte[] chunkExponents, final long computeNs,
                        final CompletableFuture<Aggregate> future) {
        final RoundState st = state(round);
        st.computeNs = computeNs;
        final float[] data = st.buffers.data;
        System.arraycopy(gradient, 0, data, 0, data.length);
        if (foldPending) {
            for (int i = 0; i < data.length; i++) {
                data[i] += fold[i];
            }
            Arrays.fill(fold, 0f);
            foldPending = false;
            computeLocalExponents(st);
        } else if (chunkExponents != null && chunkExponents.length == chunks) {
            System.arraycopy(chunkExponents, 0, st.buffers.localExp, 0, chunks);
        } else {
            computeLocalExponents(st);
        }
        st.future = future;
        st.submitted = true;
        submittedRounds++;
    }

    /**
     * Completes once this worker may start computing {@code round}: it holds the current config
     * table and R &gt;= round - s - 1 for the bound s in force for that round (at most the release
     * ring ahead of R). Call on the engine's thread.
     */
    public CompletableFuture<Void> awaitClearance(final int round) {
        final ClearanceWaiter waiter = new ClearanceWaiter(round);
        if (phase == Phase.READY && cleared(round)) {
            waiter.future.complete(null);
        } else if (phase == Phase.FAILED) {
            waiter.future.completeExceptionally(failure);
        } else {
            waiters.add(waiter);
        }
        return waiter.future;
    }

    /** The bound in force for a round, as this worker knows the config table (UNBOUNDED before it knows). */
    public int boundFor(final int round) {
        return cfgCount == 0 ? SyncConfig.UNBOUNDED : cfgBound[entryFor(round)];
    }

    /** The late mode in force for a round, as this worker knows the config table (fold before it knows). */
    public LateMode lateModeFor(final int round) {
        return cfgCount == 0 ? LateMode.FOLD : cfgLate[entryFor(round)];
    }

    /** Leaves the job; completes when the switch acknowledged or after the join retry budget. */
    public CompletableFuture<Void> leave() {
        if (phase == Phase.READY || phase == Phase.JOINING) {
            phase = Phase.LEAVING;
            attempts = 0;
            phaseDeadlineNs = 0;
        } else if (phase != Phase.LEAVING) {
            left.complete(null);
        }
        return left;
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                         final long nowNs, final Outbox outbox) {
        counters.increment(WorkerCounter.PACKETS_IN);
        try {
            in.wrap(buffer, offset, length);
            if (in.check() != PacketCheck.OK || in.jobId() != ctx.jobId()) {
                counters.increment(WorkerCounter.DROP_MALFORMED);
                return;
            }
            switch (in.type()) {
                case RESULT:
                    onResult(nowNs, outbox);
                    break;
                case CONFIG:
                    onConfig();
                    break;
                case JOIN_ACK:
                    onJoinAck();
                    break;
                case NACK:
                    counters.increment(WorkerCounter.NACKS);
                    break;
                case LEAVE_ACK:
                    if (phase == Phase.LEAVING && in.workerId() == ctx.workerId()) {
                        phase = Phase.LEFT;
                        left.complete(null);
                    }
                    break;
                default:
                    counters.increment(WorkerCounter.DROP_UNEXPECTED);
                    break;
            }
            if (phase == Phase.READY) {
                pump(nowNs, outbox);
                deliverRounds();
                wakeWaiters();
            }
        } catch (final RuntimeException ex) {
            counters.increment(WorkerCounter.ERRORS);
            errorHandler.accept(ex);
        }
    }

    @Override
    public long onTimer(final long nowNs, final Outbox outbox) {
        try {
            switch (phase) {
                case JOINING:
                    return retryControl(nowNs, outbox, PacketType.JOIN);
                case LEAVING:
                    return retryControl(nowNs, outbox, PacketType.LEAVE);
                case READY: {
                    long next = NO_DEADLINE;
                    if (!configFresh()) {
                        next = requestConfig(nowNs, outbox);
                    }
                    pump(nowNs, outbox);
                    if (nowNs >= earliestDeadlineNs) {
                        retransmit(nowNs, outbox);
                    }
                    deliverRounds();
                    wakeWaiters();
                    return Math.min(next, earliestDeadlineNs);
                }
                default:
                    return NO_DEADLINE;
            }
        } catch (final RuntimeException ex) {
            counters.increment(WorkerCounter.ERRORS);
            errorHandler.accept(ex);
            return nowNs + ctx.minRtoNs();
        }
    }

    private long retryControl(final long nowNs, final Outbox outbox, final PacketType type) {
        if (nowNs < phaseDeadlineNs) {
            return phaseDeadlineNs;
        }
        if (attempts >= ctx.maxJoinAttempts()) {
            if (type == PacketType.JOIN) {
                fail(new WorkerException("switch did not answer JOIN of worker " + ctx.workerId() + " for job "
                    + ctx.jobId() + " after " + attempts + " attempts"));
            } else {
                phase = Phase.LEFT;
                left.complete(null);
            }
            return NO_DEADLINE;
        }
        attempts++;
        final int length = type == PacketType.JOIN ? PacketFlyweight.JOIN_LENGTH : PacketFlyweight.HEADER_LENGTH;
        out.wrap(txBuffer, 0, length).initHeader(type).jobId(ctx.jobId()).workerId(ctx.workerId());
        if (type == PacketType.JOIN) {
            out.joinWorkerCount(ctx.workers()).joinElementsPerRound(ctx.elementsPerRound());
            counters.increment(WorkerCounter.JOIN_ATTEMPTS);
        }
        outbox.send(ctx.switchPort(), txBuffer, 0, length);
        counters.increment(WorkerCounter.PACKETS_OUT);
        phaseDeadlineNs = nowNs + ctx.joinRetryNs();
        return phaseDeadlineNs;
    }

    private void onJoinAck() {
        if (phase != Phase.JOINING || in.workerId() != ctx.workerId()) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        final Status status = Status.fromCode(in.status());
        if (status != Status.OK) {
            fail(new WorkerException("switch refused JOIN of worker " + ctx.workerId() + " for job " + ctx.jobId()
                + ": " + status + describe(status)));
            return;
        }
        final int p = in.ackPoolSize();
        final int k = in.ackChunkElements();
        final int g = in.ackRoundRing();
        if (p < 1 || k < 1 || k > MAX_CHUNK_ELEMENTS || g < 2) {
            fail(new WorkerException("switch sent an invalid JOIN_ACK: pool " + p + ", chunk " + k + ", ring " + g));
            return;
        }
        poolSize = p;
        chunkElements = k;
        roundRing = g;
        layout = new StepLayout(ctx.elementsPerRound(), k, p);
        chunks = layout.chunks();
        lookAhead = layout.lookAhead();
        expSteps = layout.exponentSteps();
        stepsPerRound = layout.stepsPerRound();
        window = Math.min(p, ctx.maxWindow());
        final int entries = Integer.highestOneBit(Math.max(1, window - 1)) << 1;
        windowMask = entries - 1;
        entrySeq = new long[entries];
        entryDone = new boolean[entries];
        entrySentNs = new long[entries];
        entrySendStamp = new long[entries];
        entryDeadlineNs = new long[entries];
        entryRetries = new int[entries];
        Arrays.fill(entrySeq, -1L);
        fold = new float[ctx.elementsPerRound()];
        phase = Phase.READY;
        for (final Object[] pending : beforeJoin) {
            @SuppressWarnings("unchecked")
            final CompletableFuture<Aggregate> future = (CompletableFuture<Aggregate>) pending[1];
            submit(submittedRounds, (float[]) pending[0], null, (Long) pending[2], future);
        }
        beforeJoin.clear();
        joined.complete(null);
    }

    /** One entry of the job's config table; the table is taken once every entry of its epoch arrived. */
    private void onConfig() {
        final int epoch = in.configEpoch();
        seenEpoch = Math.max(seenEpoch, epoch);
        if (epoch <= knownEpoch) {
            return;
        }
        final int count = in.elementCount();
        final int index = in.chunk();
        if (count < 1 || count > MAX_CONFIG_ENTRIES || index >= count || !LateMode.isWireCode(in.configLateMode())) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        if (epoch != pendingEpoch) {
            pendingEpoch = epoch;
            pendingMask = 0;
        }
        pendingFirst[index] = in.configFirstRound();
        pendingBound[index] = in.configBound();
        pendingLate[index] = LateMode.fromWireCode(in.configLateMode());
        pendingMask |= 1L << index;
        if (pendingMask == (count == 64 ? -1L : (1L << count) - 1)) {
            System.arraycopy(pendingFirst, 0, cfgFirst, 0, count);
            System.arraycopy(pendingBound, 0, cfgBound, 0, count);
            System.arraycopy(pendingLate, 0, cfgLate, 0, count);
            cfgCount = count;
            knownEpoch = epoch;
            counters.increment(WorkerCounter.CONFIG_UPDATES);
        }
    }

    private boolean configFresh() {
        return knownEpoch >= 0 && knownEpoch >= seenEpoch;
    }

    /** Asks the switch for the config table, again every join-retry interval until it is current. */
    private long requestConfig(final long nowNs, final Outbox outbox) {
        if (nowNs >= configRequestAtNs) {
            out.wrap(txBuffer, 0, PacketFlyweight.HEADER_LENGTH).initHeader(PacketType.CONFIG_REQUEST)
                .jobId(ctx.jobId()).workerId(ctx.workerId()).configEpoch(knownEpoch);
            outbox.send(ctx.switchPort(), txBuffer, 0, PacketFlyweight.HEADER_LENGTH);
            counters.increment(WorkerCounter.PACKETS_OUT);
            counters.increment(WorkerCounter.CONFIG_REQUESTS);
            // the first request waits a little: the table normally follows the JOIN_ACK by itself
            configRequestAtNs = nowNs + Math.max(ctx.minRtoNs(), Math.min(ctx.joinRetryNs(), rtt.rtoNs()));
        }
        return configRequestAtNs;
    }

    private int entryFor(final int round) {
        return SyncRules.entryFor(cfgFirst, 0, 0, cfgCount, MAX_CONFIG_ENTRIES, round);
    }

    /** Whether this worker may work on round r: current config and R >= r - s - 1 (at most the ring ahead). */
    private boolean cleared(final int round) {
        if (!configFresh()) {
            return false;
        }
        return SyncRules.mayStart(round, releasedRound, cfgBound[entryFor(round)], roundRing);
    }

    private void wakeWaiters() {
        if (waiters.isEmpty()) {
            return;
        }
        final Iterator<ClearanceWaiter> it = waiters.iterator();
        while (it.hasNext()) {
            final ClearanceWaiter waiter = it.next();
            if (cleared(waiter.round)) {
                it.remove();
                waiter.future.complete(null);
            }
        }
    }

    /** The state of a round at or after baseRound, created (with recycled buffers) on first use. */
    private RoundState state(final int round) {
        if (round < baseRound) {
            throw new IllegalStateException("round " + round + " was already delivered (next is " + baseRound + ")");
        }
        while (round - baseRound >= rounds.length) {
            growRounds();
        }
        RoundState st = rounds[round & (rounds.length - 1)];
        if (st == null) {
            st = new RoundState(round, buffers());
            rounds[round & (rounds.length - 1)] = st;
        }
        return st;
    }

    private RoundState existing(final int round) {
        if (round < baseRound || round - baseRound >= rounds.length) {
            return null;
        }
        final RoundState st = rounds[round & (rounds.length - 1)];
        return st != null && st.round == round ? st : null;
    }

    /** Whether step seq has been released (rounds already delivered are). */
    private boolean stepReleased(final long seq) {
        final int round = layout.round(seq);
        if (round < baseRound) {
            return true;
        }
        final RoundState st = existing(round);
        if (st == null) {
            return false;
        }
        final int t = layout.step(seq);
        return t < expSteps ? st.buffers.expStepReleased[t] : st.buffers.chunkReleased[t - expSteps];
    }

    private void onResult(final long nowNs, final Outbox outbox) {
        if (phase != Phase.READY) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        final long seq = in.seq();
        final int round = layout.round(seq);
        final int t = layout.step(seq);
        final boolean valueStep = layout.isValueStep(t);
        final int chunk = layout.chunkOf(t);
        final int n = layout.elementCount(t);
        if (seq < 0 || in.round() != round || in.chunk() != chunk || in.elementCount() != n
            || (in.flags() & Flags.PAYLOAD) != (valueStep ? Flags.VALUES : Flags.EXPONENTS)) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        seenEpoch = Math.max(seenEpoch, in.configEpoch());
        releasedRound = Math.max(releasedRound, in.releasedRound());
        openSeq = in.openSeq();
        final int me = ctx.workerId();
        final boolean mine = (in.bitmapWord(me >>> 6) & (1L << (me & 63))) != 0;
        openHasMine = (in.openBitmapWord(me >>> 6) & (1L << (me & 63))) != 0;

        // this worker's own step, if in flight
        final int e = (int) seq & windowMask;
        if (seq < nextSeq && entrySeq[e] == seq && !entryDone[e]) {
            entryDone[e] = true;
            if (entryRetries[e] == 0) {
                counters.increment(WorkerCounter.RTT_SAMPLES);
                rtt.sample(nowNs - entrySentNs[e]);
                minRttNs = Math.min(minRttNs, nowNs - entrySentNs[e]);
            }
            fastRetransmit(seq, entrySendStamp[e], nowNs, outbox);
            while (oldestSeq < nextSeq && entryDone[(int) oldestSeq & windowMask]) {
                oldestSeq++;
            }
        }
        // the switch releases no round beyond R + ring, so anything further is not a result of this job
        if (round < baseRound || round > SyncRules.highestStartable(releasedRound, SyncConfig.UNBOUNDED, roundRing) + 1) {
            counters.increment(WorkerCounter.DUPLICATE_RESULTS);
            return;
        }
        final RoundState st = state(round);
        final RoundBuffers b = st.buffers;
        final ByteBuffer buffer = in.buffer();
        final int at = in.offset() + in.resultValuesOffset();
        if (!valueStep) {
            if (b.expStepReleased[t]) {
                counters.increment(WorkerCounter.DUPLICATE_RESULTS);
                return;
            }
            counters.increment(WorkerCounter.RESULTS);
            b.expStepReleased[t] = true;
            for (int i = 0; i < n; i++) {
                b.agreedExp[chunk + i] = (byte) buffer.getInt(at + 4 * i);
                b.expKnown[chunk + i] = true;
            }
            return;
        }
        if (b.chunkReleased[chunk]) {
            counters.increment(WorkerCounter.DUPLICATE_RESULTS);
            return;
        }
        counters.increment(WorkerCounter.RESULTS);
        b.chunkReleased[chunk] = true;
        st.chunksReleased++;
        if (chunk + lookAhead < chunks) {
            b.agreedExp[chunk + lookAhead] = in.exponent();
            b.expKnown[chunk + lookAhead] = true;
        }
        final int base = chunk * chunkElements;
        if ((at & 3) == 0) {
            intView(buffer).get(at >> 2, b.integerSums, base, n);
        } else {
            for (int i = 0; i < n; i++) {
                b.integerSums[base + i] = buffer.getInt(at + 4 * i);
            }
        }
        b.chunkContributors[chunk] = in.contributorCount();
        final int words = in.bitmapWords();
        for (int w = 0; w < words; w++) {
            long bits = in.bitmapWord(w);
            if (w < b.words) {
                b.chunkBitmaps[chunk * b.words + w] = bits;
            }
            while (bits != 0) {
                b.contributors.set((w << 6) + Long.numberOfTrailingZeros(bits));
                bits &= bits - 1;
            }
        }
        if (in.hasFlag(Flags.SATURATED)) {
            st.saturated = true;
        }
        if (mine) {
            b.mineResolved[chunk] = true;
            counters.increment(WorkerCounter.INCLUDED_CHUNKS);
        } else if (st.submitted && seq < nextSeq && !b.mineResolved[chunk]) {
            // sent, but released without it: it reached the switch too late, or not at all
            resolveLate(st, chunk);
        }
    }

    /** This worker's values for a chunk did not make it into the release: fold or drop them. */
    private void resolveLate(final RoundState st, final int chunk) {
        st.buffers.mineResolved[chunk] = true;
        if (cfgCount > 0 && cfgLate[entryFor(st.round)] == LateMode.DROP) {
            counters.increment(WorkerCounter.DROPPED_CHUNKS);
            return;
        }
        final int from = chunk * chunkElements;
        final int to = from + chunkLength(chunk);
        final float[] data = st.buffers.data;
        for (int i = from; i < to; i++) {
            fold[i] += data[i];
        }
        foldPending = true;
        counters.increment(WorkerCounter.FOLDED_CHUNKS);
    }

    /** Hands out complete rounds in order: every chunk released and every own step passed. */
    private void deliverRounds() {
        while (baseRound < submittedRounds) {
            final RoundState st = rounds[baseRound & (rounds.length - 1)];
            if (st == null || st.chunksReleased < chunks || nextSeq < layout.firstSeq(baseRound + 1)) {
                return;
            }
            rounds[baseRound & (rounds.length - 1)] = null;
            baseRound++;
            counters.increment(WorkerCounter.ROUNDS_COMPLETED);
            st.future.complete(new Aggregate(st.round, chunkElements, q, ctx.elementsPerRound(), chunks, st.buffers,
                st.saturated, pool));
        }
    }

    private void pump(final long nowNs, final Outbox outbox) {
        while (true) {
            final long seq = nextSeq;
            final int round = layout.round(seq);
            if (round >= submittedRounds || !cleared(round)) {
                armTailProbe(nowNs);
                return;
            }
            final int t = layout.step(seq);
            final RoundState st = state(round);
            final int e = (int) seq & windowMask;
            if (stepReleased(seq)) {
                // released without this worker: nothing to send
                if (t >= expSteps && !st.buffers.mineResolved[t - expSteps]) {
                    resolveLate(st, t - expSteps);
                }
                if (seq - oldestSeq >= windowMask + 1) {
                    return;
                }
                entrySeq[e] = seq;
                entryDone[e] = true;
                if (oldestSeq == seq) {
                    oldestSeq++;
                }
                nextSeq++;
                counters.increment(WorkerCounter.STEPS_SKIPPED);
                continue;
            }
            if (seq - oldestSeq >= window) {
                return;
            }
            // the slot's previous use must be released before the switch accepts this one
            final long previous = StepLayout.previousUse(seq, poolSize);
            if (previous >= 0 && !stepReleased(previous)) {
                return;
            }
            if (t >= expSteps && !st.buffers.expKnown[t - expSteps]) {
                return;
            }
            entrySeq[e] = seq;
            entryDone[e] = false;
            entryRetries[e] = 0;
            entrySentNs[e] = nowNs;
            entrySendStamp[e] = ++sendStamp;
            entryDeadlineNs[e] = nowNs + rtt.rtoNs();
            earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
            sendStep(seq, st, t, outbox);
            nextSeq++;
            counters.increment(WorkerCounter.STEPS_SENT);
        }
    }

    private static String describe(final Status status) {
        switch (status) {
            case TABLE_FULL:
                return " (the switch holds its maximum number of jobs)";
            case SHAPE_MISMATCH:
                return " (the job exists with another worker count or gradient size)";
            case BAD_KEY:
                return " (worker id, worker count or gradient size out of the switch's range)";
            default:
                return "";
        }
    }

    /**
     * Loss detection ahead of the timeout (TCP's duplicate-acknowledgement threshold, with RACK's
     * send-time check): when the result of step x arrives, a step at least
     * {@link #REORDER_THRESHOLD} below x that is still pending and was last sent before x (by send
     * order, not clock: a burst shares one timestamp) is presumed lost and sent again. Steps go out
     * in order and the switch releases them in order,
     * so this rarely fires spuriously; a step resent after x was sent is left alone, so each loss is
     * resent at most once per round trip. A worker cannot tell its own loss from a peer's, so every
     * worker resends; the switch absorbs the duplicates.
     */
    private void fastRetransmit(final long seq, final long stamp, final long nowNs, final Outbox outbox) {
        for (long s = oldestSeq; s <= seq - REORDER_THRESHOLD; s++) {
            final int e = (int) s & windowMask;
            if (!entryDone[e] && entrySendStamp[e] < stamp) {
                if (s == openSeq && openHasMine) {
                    // the switch holds this worker's contribution: the loss is a peer's
                    counters.increment(WorkerCounter.RESENDS_AVOIDED);
                    entrySendStamp[e] = ++sendStamp;
                    continue;
                }
                resend(s, e, nowNs, outbox);
                counters.increment(WorkerCounter.FAST_RETRANSMISSIONS);
            }
        }
    }

    private void resend(final long seq, final int e, final long nowNs, final Outbox outbox) {
        final int round = layout.round(seq);
        if (round < baseRound) {
            // the round was delivered (its chunks all released) while this step's result was lost:
            // nothing left to recover
            entryDone[e] = true;
            return;
        }
        entryRetries[e]++;
        entrySentNs[e] = nowNs;
        entrySendStamp[e] = ++sendStamp;
        entryDeadlineNs[e] = nowNs + rtt.backedOffRtoNs(entryRetries[e]);
        earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
        sendStep(seq, state(round), layout.step(seq), outbox);
    }

    /**
     * Tail loss probe (after TCP's TLP): once every submitted step is sent, no later result can
     * reveal a loss among the last steps, and the timeout, sized for a loaded pipeline, is long.
     * So the pending steps get a probe deadline of a few unloaded round trips (the smallest RTT
     * seen, at least {@link #MIN_PROBE_NS}) instead. Armed once per drain.
     */
    private void armTailProbe(final long nowNs) {
        if (tailProbeArmedAt == nextSeq || oldestSeq == nextSeq) {
            return;
        }
        tailProbeArmedAt = nextSeq;
        final long probeNs = Math.max(MIN_PROBE_NS, 4 * minRttNs);
        for (long seq = oldestSeq; seq < nextSeq; seq++) {
            final int e = (int) seq & windowMask;
            if (!entryDone[e] && entryRetries[e] == 0) {
                entryDeadlineNs[e] = Math.min(entryDeadlineNs[e], Math.max(nowNs, entrySentNs[e] + probeNs));
                earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
            }
        }
    }

    /**
     * Timeout recovery: resends at most {@link #MAX_RESENDS_PER_TIMEOUT} expired steps, oldest
     * first, and pushes the other expired steps back by the backed-off timeout. After a stall of
     * the whole pipeline (a pause of this process, say) every step in flight has expired at once,
     * and resending all of them would only add duplicates; real losses among them are found by
     * {@link #fastRetransmit} as results flow again, or by a later timeout.
     */
    private void retransmit(final long nowNs, final Outbox outbox) {
        long earliest = NO_DEADLINE;
        int resent = 0;
        for (long seq = oldestSeq; seq < nextSeq; seq++) {
            final int e = (int) seq & windowMask;
            if (entryDone[e]) {
                continue;
            }
            if (entryDeadlineNs[e] <= nowNs) {
                if (resent < MAX_RESENDS_PER_TIMEOUT) {
                    resend(seq, e, nowNs, outbox);
                    counters.increment(WorkerCounter.RETRANSMISSIONS);
                    resent++;
                } else {
                    entryDeadlineNs[e] = nowNs + rtt.backedOffRtoNs(entryRetries[e] + 1);
                }
            }
            earliest = Math.min(earliest, entryDeadlineNs[e]);
        }
        earliestDeadlineNs = earliest;
    }

    private void sendStep(final long seq, final RoundState st, final int t, final Outbox outbox) {
        final boolean valueStep = layout.isValueStep(t);
        final int chunk = layout.chunkOf(t);
        final int n = layout.elementCount(t);
        final int length = PacketFlyweight.dataLength(n);
        final RoundBuffers b = st.buffers;
        out.wrap(txBuffer, 0, length)
            .initHeader(PacketType.DATA)
            .jobId(ctx.jobId())
            .workerId(ctx.workerId())
            .seq(seq)
            .round(st.round)
            .chunk(chunk)
            .poolIndex(layout.slot(seq))
            .shadowSet(layout.shadowSet(seq))
            .configEpoch(knownEpoch)
            .computeTimeNs(st.computeNs)
            .elementCount(n);
        if (!valueStep) {
            out.exponent(PacketFlyweight.NO_EXPONENT).flags(Flags.EXPONENTS);
            for (int i = 0; i < n; i++) {
                txBuffer.putInt(PacketFlyweight.DATA_VALUES_OFFSET + 4 * i, b.localExp[chunk + i]);
            }
        } else {
            final int ahead = chunk + lookAhead;
            out.exponent(ahead < chunks ? b.localExp[ahead] : PacketFlyweight.NO_EXPONENT);
            final int agreed = b.agreedExp[chunk];
            final int local = b.localExp[chunk];
            final int saturated = BlockFloat.quantizeChunk(b.data, chunk * chunkElements, n, agreed, q, quantized,
                local > agreed || local == BlockFloat.MAX_EXPONENT);
            txInts.put(PacketFlyweight.DATA_VALUES_OFFSET >> 2, quantized, 0, n);
            int flags = Flags.VALUES;
            if (saturated > 0) {
                flags |= Flags.SATURATED;
                counters.add(WorkerCounter.SATURATED_VALUES, saturated);
            }
            out.flags(flags);
        }
        outbox.send(ctx.switchPort(), txBuffer, 0, length);
        counters.increment(WorkerCounter.PACKETS_OUT);
    }

    /** An int view of a receive buffer, kept while the transport hands over the same buffer. */
    private IntBuffer intView(final ByteBuffer buffer) {
        if (buffer != viewSource) {
            viewSource = buffer;
            view = buffer.duplicate().order(PacketFlyweight.BYTE_ORDER).clear().asIntBuffer();
        }
        return view;
    }

    private int chunkLength(final int chunk) {
        return layout.chunkLength(chunk);
    }

    /** Buffers for one round: recycled from released aggregates when their shape fits. */
    private RoundBuffers buffers() {
        RoundBuffers b;
        while ((b = pool.poll()) != null) {
            if (b.fits(chunks, ctx.elementsPerRound(), expSteps, bitmapWords())) {
                b.clear();
                return b;
            }
        }
        return new RoundBuffers(chunks, ctx.elementsPerRound(), expSteps, bitmapWords());
    }

    private int bitmapWords() {
        return (ctx.workers() + 63) >>> 6;
    }

    private void computeLocalExponents(final RoundState st) {
        for (int c = 0; c < chunks; c++) {
            st.buffers.localExp[c] = BlockFloat.exponentOf(st.buffers.data, c * chunkElements, chunkLength(c));
        }
    }

    private void growRounds() {
        final RoundState[] bigger = new RoundState[rounds.length * 2];
        for (final RoundState st : rounds) {
            if (st != null) {
                bigger[st.round & (bigger.length - 1)] = st;
            }
        }
        rounds = bigger;
    }

    private void fail(final WorkerException ex) {
        phase = Phase.FAILED;
        failure = ex;
        joined.completeExceptionally(ex);
        left.complete(null);
        for (final RoundState st : rounds) {
            if (st != null && st.future != null) {
                st.future.completeExceptionally(ex);
            }
        }
        for (final ClearanceWaiter waiter : waiters) {
            waiter.future.completeExceptionally(ex);
        }
        waiters.clear();
        for (final Object[] pending : beforeJoin) {
            ((CompletableFuture<?>) pending[1]).completeExceptionally(ex);
        }
        beforeJoin.clear();
    }
}
