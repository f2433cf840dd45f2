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

import java.nio.ByteBuffer;
import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * The worker side of the aggregation protocol, sans-IO: joins the job, turns each round's
 * gradient into a stream of steps over the switch's slot pool, retransmits with an adaptive
 * timeout and exponential backoff, and reassembles released results into {@link Aggregate}s.
 *
 * <p>Steps of a round with C chunks of K elements and pool size P, with b = min(P, C) and
 * X = ceil(b / K):
 * <pre>
 *   step t &lt; X      : the exponents of chunks tK .. min(b, (t+1)K) - 1 (the switch takes maxima)
 *   step t = X + j  : values of chunk j, quantized with chunk j's agreed exponent, carrying the
 *                     exponent of chunk j + b in the header (look-ahead, as SwitchML does)
 * </pre>
 * Step numbers (seq) run on across rounds: seq = round * (X + C) + t. Step seq may be sent once
 * the result of seq - P has arrived (its slot is then free) and, for a value step, once the
 * chunk's exponent is agreed. Every worker derives the same numbering, so the switch sees the
 * same (seq, round, chunk) from all of them.
 *
 * <p>Single-threaded: the transport calls every method from its one thread.
 */
public final class WorkerEngine implements PacketEndpoint {
    private enum Phase { JOINING, READY, LEAVING, LEFT, FAILED }

    private static final class RoundWork {
        final int round;
        final float[] data;
        final CompletableFuture<Aggregate> future;
        final RoundBuffers buffers;
        int chunksDone;
        boolean saturated;

        RoundWork(final int round, final float[] data, final CompletableFuture<Aggregate> future,
                  final RoundBuffers buffers) {
            this.round = round;
            this.data = data;
            this.future = future;
            this.buffers = buffers;
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

    private final WorkerContext ctx;
    private final Counters<WorkerCounter> counters = new Counters<>(WorkerCounter.class);
    private final Consumer<Throwable> errorHandler;
    private final PacketFlyweight in = new PacketFlyweight();
    private final PacketFlyweight out = new PacketFlyweight();
    private final ByteBuffer txBuffer = PacketFlyweight.allocate(PacketFlyweight.dataLength(MAX_CHUNK_ELEMENTS));
    private final IntBuffer txInts = txBuffer.asIntBuffer();
    private final int[] quantized = new int[MAX_CHUNK_ELEMENTS];
    private ByteBuffer viewSource;
    private IntBuffer view;
    private final CompletableFuture<Void> joined = new CompletableFuture<>();
    /** Round buffers handed back by {@link Aggregate#release()}, from any thread. */
    private final Queue<RoundBuffers> pool = new ConcurrentLinkedQueue<>();
    private final CompletableFuture<Void> left = new CompletableFuture<>();
    private final int q;

    private Phase phase = Phase.JOINING;
    private long phaseDeadlineNs;
    private int attempts;
    private WorkerException failure;

    // known after JOIN_ACK
    private int poolSize;
    private int chunkElements;
    private int roundRing;
    private int chunks;
    private int lookAhead;
    private int expSteps;
    private int stepsPerRound;
    private int window;

    // window registers, indexed by seq & windowMask (a power of two >= the window, so the steps in
    // flight never share an entry); step seq - P is done whenever seq - window < oldestSeq
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

    // rounds: ring of submitted, not yet completed rounds
    private RoundWork[] rounds = new RoundWork[8];
    private int submittedRounds;
    private int completedRounds;

    private final RttEstimator rtt;

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

    public int completedRounds() {
        return completedRounds;
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

    /** The window's position, for diagnostics. */
    public String debugState() {
        return "phase=" + phase + ", nextSeq=" + nextSeq + ", oldestSeq=" + oldestSeq + ", submitted=" + submittedRounds
            + ", completed=" + completedRounds + ", earliestDeadline in " + (earliestDeadlineNs == NO_DEADLINE ? "never"
            : (earliestDeadlineNs - System.nanoTime()) / 1000 + " us") + ", rto=" + rtt.rtoNs() / 1000 + " us";
    }

    /** Smoothed round-trip time of a step (send to result), -1 before the first sample. */
    public long srttNs() {
        return rtt.srttNs();
    }

    /**
     * Contributes this worker's gradient for a round and returns the future aggregate. Rounds are
     * numbered 0, 1, 2, ... without gaps; the array is read until the future completes.
     */
    public CompletableFuture<Aggregate> allreduce(final int round, final float[] gradient) {
        return allreduce(round, gradient, null);
    }

    /**
     * {@link #allreduce(int, float[])} with the chunk exponents already computed by
     * {@link BlockFloat#chunkExponents} (on another thread, say) for {@link #chunkElements()}.
     */
    public CompletableFuture<Aggregate> allreduce(final int round, final float[] gradient, final byte[] chunkExponents) {
        final CompletableFuture<Aggregate> future = new CompletableFuture<>();
        if (phase == Phase.FAILED) {
            future.completeExceptionally(failure);
            return future;
        }
        if (phase == Phase.LEAVING || phase == Phase.LEFT) {
            future.completeExceptionally(new WorkerException("worker " + ctx.workerId() + " has left the job"));
            return future;
        }
        if (round != submittedRounds) {
            future.completeExceptionally(new WorkerException(
                "rounds must be submitted in order without gaps: expected round " + submittedRounds + ", got " + round));
            return future;
        }
        if (gradient.length != ctx.elementsPerRound()) {
            future.completeExceptionally(new WorkerException(
                "gradient has " + gradient.length + " elements, the job has " + ctx.elementsPerRound()));
            return future;
        }
        // before the JOIN_ACK the chunking is unknown; onJoinAck redoes the bookkeeping
        final RoundWork work = new RoundWork(round, gradient, future, buffers());
        if (chunkExponents != null && chunkExponents.length == chunks && chunkElements != 0) {
            System.arraycopy(chunkExponents, 0, work.buffers.localExp, 0, chunks);
        } else {
            computeLocalExponents(work);
        }
        if (submittedRounds - completedRounds == rounds.length) {
            growRounds();
        }
        rounds[round & (rounds.length - 1)] = work;
        submittedRounds++;
        return future;
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
                case READY:
                    pump(nowNs, outbox);
                    if (nowNs >= earliestDeadlineNs) {
                        retransmit(nowNs, outbox);
                    }
                    return earliestDeadlineNs;
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
        chunks = (ctx.elementsPerRound() + k - 1) / k;
        lookAhead = Math.min(p, chunks);
        expSteps = (lookAhead + k - 1) / k;
        stepsPerRound = expSteps + chunks;
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
        // rounds submitted before the join knew no chunking: redo their bookkeeping
        for (int r = completedRounds; r < submittedRounds; r++) {
            final RoundWork old = rounds[r & (rounds.length - 1)];
            final RoundWork work = new RoundWork(old.round, old.data, old.future, buffers());
            computeLocalExponents(work);
            rounds[r & (rounds.length - 1)] = work;
        }
        phase = Phase.READY;
        joined.complete(null);
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

    private void onResult(final long nowNs, final Outbox outbox) {
        if (phase != Phase.READY) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        final long seq = in.seq();
        openSeq = in.openSeq();
        openHasMine = (in.openBitmapWord(ctx.workerId() >>> 6) & (1L << (ctx.workerId() & 63))) != 0;
        if (seq < oldestSeq || seq >= nextSeq) {
            counters.increment(WorkerCounter.DUPLICATE_RESULTS);
            return;
        }
        final int e = (int) seq & windowMask;
        if (entrySeq[e] != seq || entryDone[e]) {
            counters.increment(WorkerCounter.DUPLICATE_RESULTS);
            return;
        }
        final int round = (int) (seq / stepsPerRound);
        final int t = (int) (seq % stepsPerRound);
        final RoundWork work = rounds[round & (rounds.length - 1)];
        final boolean valueStep = t >= expSteps;
        final int chunk = valueStep ? t - expSteps : t * chunkElements;
        final int n = valueStep ? chunkLength(chunk) : exponentCount(t);
        if (in.round() != round || in.chunk() != chunk || in.elementCount() != n
            || (in.flags() & Flags.PAYLOAD) != (valueStep ? Flags.VALUES : Flags.EXPONENTS)) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        counters.increment(WorkerCounter.RESULTS);
        entryDone[e] = true;
        if (entryRetries[e] == 0) {
            counters.increment(WorkerCounter.RTT_SAMPLES);
            rtt.sample(nowNs - entrySentNs[e]);
            minRttNs = Math.min(minRttNs, nowNs - entrySentNs[e]);
        }
        fastRetransmit(seq, entrySendStamp[e], nowNs, outbox);
        final ByteBuffer buffer = in.buffer();
        final int at = in.offset() + in.resultValuesOffset();
        if (!valueStep) {
            for (int i = 0; i < n; i++) {
                work.buffers.agreedExp[chunk + i] = (byte) buffer.getInt(at + 4 * i);
                work.buffers.expKnown[chunk + i] = true;
            }
        } else {
            if (chunk + lookAhead < chunks) {
                work.buffers.agreedExp[chunk + lookAhead] = in.exponent();
                work.buffers.expKnown[chunk + lookAhead] = true;
            }
            final int base = chunk * chunkElements;
            if ((at & 3) == 0) {
                intView(buffer).get(at >> 2, work.buffers.integerSums, base, n);
            } else {
                for (int i = 0; i < n; i++) {
                    work.buffers.integerSums[base + i] = buffer.getInt(at + 4 * i);
                }
            }
            work.buffers.chunkContributors[chunk] = in.contributorCount();
            final int words = in.bitmapWords();
            for (int w = 0; w < words; w++) {
                long bits = in.bitmapWord(w);
                while (bits != 0) {
                    work.buffers.contributors.set((w << 6) + Long.numberOfTrailingZeros(bits));
                    bits &= bits - 1;
                }
            }
            if (in.hasFlag(Flags.SATURATED)) {
                work.saturated = true;
            }
            work.chunksDone++;
            if (work.chunksDone == chunks) {
                completeRounds();
            }
        }
        while (oldestSeq < nextSeq && entryDone[(int) oldestSeq & windowMask]) {
            oldestSeq++;
        }
    }

    private void completeRounds() {
        while (completedRounds < submittedRounds) {
            final RoundWork work = rounds[completedRounds & (rounds.length - 1)];
            if (work.chunksDone != chunks) {
                return;
            }
            rounds[completedRounds & (rounds.length - 1)] = null;
            completedRounds++;
            counters.increment(WorkerCounter.ROUNDS_COMPLETED);
            final Aggregate aggregate = new Aggregate(work.round, chunkElements, q, ctx.elementsPerRound(), chunks,
                work.buffers, work.saturated, pool);
            work.future.complete(aggregate);
        }
    }

    private void pump(final long nowNs, final Outbox outbox) {
        while (true) {
            final long seq = nextSeq;
            if (seq - oldestSeq >= window) {
                return;
            }
            final int round = (int) (seq / stepsPerRound);
            if (round >= submittedRounds || round >= completedRounds + roundRing) {
                armTailProbe(nowNs);
                return;
            }
            // seq - oldestSeq < window <= P: the slot's previous use, seq - P, is done
            final int e = (int) seq & windowMask;
            final int t = (int) (seq % stepsPerRound);
            final RoundWork work = rounds[round & (rounds.length - 1)];
            if (t >= expSteps && !work.buffers.expKnown[t - expSteps]) {
                return;
            }
            entrySeq[e] = seq;
            entryDone[e] = false;
            entryRetries[e] = 0;
            entrySentNs[e] = nowNs;
            entrySendStamp[e] = ++sendStamp;
            entryDeadlineNs[e] = nowNs + rtt.rtoNs();
            earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
            sendStep(seq, work, t, outbox);
            nextSeq++;
            counters.increment(WorkerCounter.STEPS_SENT);
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
        entryRetries[e]++;
        entrySentNs[e] = nowNs;
        entrySendStamp[e] = ++sendStamp;
        entryDeadlineNs[e] = nowNs + rtt.backedOffRtoNs(entryRetries[e]);
        earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
        final int round = (int) (seq / stepsPerRound);
        sendStep(seq, rounds[round & (rounds.length - 1)], (int) (seq % stepsPerRound), outbox);
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

    private void sendStep(final long seq, final RoundWork work, final int t, final Outbox outbox) {
        final boolean valueStep = t >= expSteps;
        final int chunk = valueStep ? t - expSteps : t * chunkElements;
        final int n = valueStep ? chunkLength(chunk) : exponentCount(t);
        final int length = PacketFlyweight.dataLength(n);
        out.wrap(txBuffer, 0, length)
            .initHeader(PacketType.DATA)
            .jobId(ctx.jobId())
            .workerId(ctx.workerId())
            .seq(seq)
            .round(work.round)
            .chunk(chunk)
            .poolIndex((int) (seq % poolSize))
            .shadowSet((int) ((seq / poolSize) & 1))
            .elementCount(n);
        if (!valueStep) {
            out.exponent(PacketFlyweight.NO_EXPONENT).flags(Flags.EXPONENTS);
            for (int i = 0; i < n; i++) {
                txBuffer.putInt(PacketFlyweight.DATA_VALUES_OFFSET + 4 * i, work.buffers.localExp[chunk + i]);
            }
        } else {
            final int ahead = chunk + lookAhead;
            out.exponent(ahead < chunks ? work.buffers.localExp[ahead] : PacketFlyweight.NO_EXPONENT);
            final int agreed = work.buffers.agreedExp[chunk];
            final int local = work.buffers.localExp[chunk];
            final int saturated = BlockFloat.quantizeChunk(work.data, chunk * chunkElements, n, agreed, q, quantized,
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

    private void computeLocalExponents(final RoundWork work) {
        for (int c = 0; c < chunks; c++) {
            work.buffers.localExp[c] = BlockFloat.exponentOf(work.data, c * chunkElements, chunkLength(c));
        }
    }

    /** Buffers for one round: recycled from released aggregates when their shape fits. */
    private RoundBuffers buffers() {
        final int c = Math.max(chunks, 1);
        RoundBuffers b;
        while ((b = pool.poll()) != null) {
            if (b.fits(c, ctx.elementsPerRound())) {
                b.clear();
                return b;
            }
        }
        return new RoundBuffers(c, ctx.elementsPerRound());
    }

    /** An int view of a receive buffer, kept while the transport hands over the same buffer. */
    private IntBuffer intView(final ByteBuffer buffer) {
        if (buffer != viewSource) {
            viewSource = buffer;
            view = buffer.duplicate().order(PacketFlyweight.BYTE_ORDER).clear().asIntBuffer();
        }
        return view;
    }

    /** How many chunk exponents exponent step t carries. */
    private int exponentCount(final int t) {
        return Math.min(lookAhead, (t + 1) * chunkElements) - t * chunkElements;
    }

    private int chunkLength(final int chunk) {
        return Math.min(chunkElements, ctx.elementsPerRound() - chunk * chunkElements);
    }

    private void growRounds() {
        final RoundWork[] bigger = new RoundWork[rounds.length * 2];
        for (int r = completedRounds; r < submittedRounds; r++) {
            bigger[r & (bigger.length - 1)] = rounds[r & (rounds.length - 1)];
        }
        rounds = bigger;
    }

    private void fail(final WorkerException ex) {
        phase = Phase.FAILED;
        failure = ex;
        joined.completeExceptionally(ex);
        left.complete(null);
        for (int r = completedRounds; r < submittedRounds; r++) {
            final RoundWork work = rounds[r & (rounds.length - 1)];
            if (work != null) {
                work.future.completeExceptionally(ex);
            }
        }
    }
}
