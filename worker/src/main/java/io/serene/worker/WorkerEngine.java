package io.serene.worker;

import io.serene.protocol.ConfigPacket;
import io.serene.protocol.Counters;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.PacketCheck;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.RttEstimator;
import io.serene.protocol.Status;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.StepLayout;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The worker side of the aggregation protocol, sans-IO: joins the job, turns each round's
 * gradient into a stream of steps over the switch's slot pool ({@link StepLayout}), recovers
 * losses, follows the job's sync configs, and reassembles released results into
 * {@link Aggregate}s.
 *
 * <pre>
 *   allreduce(round, g) --> late ledger folds in --> round assembler (buffers)
 *   pump: cleared (clearance over the config replica)? window room (send window)? --> step encoder --> DATA
 *   RESULT --> send window (RTT, fast retransmit) --> round assembler --> late ledger (own part missed)
 *          --> complete rounds delivered in order
 * </pre>
 *
 * <p>Synchronization (docs/design.md, the synchronization contract): the switch sends the job's config table (bound s,
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
    private final WorkerContext ctx;
    private final Counters<WorkerCounter> counters = new Counters<>(WorkerCounter.class);
    private final Consumer<Throwable> errorHandler;
    private final PacketHeader in = new PacketHeader();
    private final ResultPacket result = new ResultPacket();
    private final JoinPacket join = new JoinPacket();
    private final ConfigPacket configPacket = new ConfigPacket();
    private final RttEstimator rtt;
    private final ConfigReplica config = new ConfigReplica();
    private final Clearance clearance = new Clearance(config);
    private final SendWindow window;
    private final RoundAssembler assembler;
    private final LateLedger ledger;
    private final StepEncoder encoder;
    private final WorkerAuth auth;
    /** What to send next, and the sending. */
    private final StepPump pump;

    private final JoinHandshake membership;

    // known after JOIN_ACK
    private StepLayout layout;

    private int submittedRounds;
    private int firstRound;

    public WorkerEngine(final WorkerContext context, final Consumer<Throwable> errorHandler) {
        this.ctx = context.conclude();
        this.errorHandler = errorHandler;
        final int q = BlockFloat.scaleBits(ctx.workers());
        this.rtt = new RttEstimator(ctx.initialRtoNs(), ctx.minRtoNs(), ctx.maxRtoNs());
        this.assembler = new RoundAssembler(counters, ctx.elementsPerRound(), ctx.workers(), q);
        this.ledger = new LateLedger(counters, ctx.elementsPerRound());
        this.encoder = new StepEncoder(ctx, counters, q);
        this.auth = new WorkerAuth(ctx);
        this.membership = new JoinHandshake(ctx);
        this.window = new SendWindow(counters, rtt, new SendWindow.Resender() {
            @Override
            public boolean needsResult(final long seq) {
                return layout.round(seq) >= assembler.baseRound();
            }

            @Override
            public void resend(final long seq, final Outbox outbox) {
                pump.sendStep(seq, assembler.state(layout.round(seq)), layout.step(seq), outbox);
            }
        });
        this.pump = new StepPump(ctx, counters, window, config, clearance, assembler, ledger, encoder, auth);
    }

    public WorkerContext context() {
        return ctx;
    }

    public Counters<WorkerCounter> counters() {
        return counters;
    }

    /** Completes when the switch accepted the JOIN; fails when it refused or never answered. */
    public CompletableFuture<Void> joined() {
        return membership.joined();
    }

    /** Rounds delivered to the caller (all before this one are complete). */
    public int completedRounds() {
        return assembler.baseRound();
    }

    /** The run's round the job's round 0 is, as the JOIN_ACK named it (0 for a job not rebuilt from checkpoints). */
    public int firstRound() {
        return firstRound;
    }

    /** The highest round R such that every round up to it is released, as this worker last heard. */
    public int releasedRound() {
        return clearance.releasedRound();
    }

    /** The epoch of the config table this worker holds, -1 before the first. */
    public int configEpoch() {
        return config.knownEpoch();
    }

    /** The sync config in force for a round as this worker knows the config table, in words (engine thread). */
    public String configFor(final int round) {
        return config.describe(round);
    }

    public int poolSize() {
        return layout == null ? 0 : layout.poolSize();
    }

    /** Elements per chunk (the JOIN_ACK's); readable from any thread once {@link #joined()} completed (that orders the write first). */
    public int chunkElements() {
        if (!membership.joined().isDone() || membership.joined().isCompletedExceptionally()) {
            throw new IllegalStateException("worker " + ctx.workerId() + " has not joined");
        }
        return layout.chunkElements();
    }

    /** The window's position, for diagnostics. */
    public String debugState() {
        return "phase=" + membership.phase() + ", nextSeq=" + window.nextSeq() + ", oldestSeq=" + window.oldestSeq() + ", submitted="
            + submittedRounds + ", completed=" + assembler.baseRound() + ", R=" + clearance.releasedRound() + ", epoch="
            + config.knownEpoch() + "/" + config.seenEpoch() + ", rto=" + rtt.rtoNs() / 1000 + " us";
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
        return enqueue(round, gradient, chunkExponents, computeNs);
    }

    /**
     * Skips a round this worker computed nothing for (it was released without it, say): the
     * round is submitted with a zero gradient, so late values folded so far travel on with it,
     * and its aggregate is returned as for any round. {@code computeNs} is reported as for
     * {@link #allreduce(int, float[], byte[], long)}.
     */
    public CompletableFuture<Aggregate> skip(final int round, final long computeNs) {
        return enqueue(round, null, null, computeNs);
    }

    /** Takes a round (a null gradient: skipped) once admitted; holds it while joining. */
    private CompletableFuture<Aggregate> enqueue(final int round, final float[] gradient, final byte[] chunkExponents,
                                                 final long computeNs) {
        final CompletableFuture<Aggregate> future = new CompletableFuture<>();
        if (!membership.admits(round, submittedRounds, future)) {
            return future;
        }
        if (gradient != null && gradient.length != ctx.elementsPerRound()) {
            future.completeExceptionally(new WorkerException(
                "gradient has " + gradient.length + " elements, the job has " + ctx.elementsPerRound()));
        } else if (membership.phase() == JoinHandshake.Phase.JOINING) {
            // the chunking is known only from the JOIN_ACK: keep the round until then
            membership.hold(gradient == null ? null : gradient.clone(), future, computeNs);
        } else {
            submit(round, gradient, chunkExponents, computeNs, future);
        }
        return future;
    }

    /** Submits a round; a null gradient submits zeros. */
    private void submit(final int round, final float[] gradient, final byte[] chunkExponents, final long computeNs,
                        final CompletableFuture<Aggregate> future) {
        assembler.submit(assembler.state(round), gradient, chunkExponents, computeNs, future, ledger);
        submittedRounds++;
    }

    /**
     * Completes once this worker may start computing {@code round}: it holds the current config
     * table and R &gt;= round - s - 1 for the bound s in force for that round (at most the release
     * ring ahead of R). Call on the engine's thread.
     */
    public CompletableFuture<Void> awaitClearance(final int round) {
        if (membership.phase() == JoinHandshake.Phase.FAILED) {
            return CompletableFuture.failedFuture(membership.failure());
        }
        return clearance.await(round, membership.phase() == JoinHandshake.Phase.READY);
    }

    /**
     * Copies what this worker will fold into its next submitted round (its values late for rounds
     * released without them, under fold) into {@code into}; for a checkpoint.
     */
    public void foldedInto(final float[] into) {
        ledger.copyInto(into);
    }

    /** Adds values to fold into the next submitted round: a checkpoint's {@link #foldedInto}, in a new engine. */
    public void fold(final float[] values) {
        if (values.length != ctx.elementsPerRound()) {
            throw new IllegalArgumentException("folded values have " + values.length + " elements, the job " + ctx.elementsPerRound());
        }
        ledger.add(values);
    }

    /** The bound in force for a round, as this worker knows the config table (UNBOUNDED before it knows). */
    public int boundFor(final int round) {
        return config.boundFor(round);
    }

    /** Whether round {@code round} is WBSP's (see {@code SyncConfig.busy()}); engine thread. */
    public boolean busyFor(final int round) {
        return config.busyFor(round);
    }

    /** The late mode in force for a round, as this worker knows the config table (fold before it knows). */
    public LateMode lateModeFor(final int round) {
        return config.lateModeFor(round);
    }

    /** {@link RoundPlan#foldsHeld} for open round {@code round}, with R and the round's timeout as this worker knows them. */
    public boolean foldsHeld(final int round, final int heldRound) {
        return RoundPlan.foldsHeld(round, clearance.releasedRound(), heldRound, config.timeoutNsFor(round));
    }

    /**
     * {@code SyncRules.sitsOut} at {@code nowNs} (the run's clock), with R, when it was heard, the
     * newest round released without this worker and the round's timeout as this worker knows them, in a job whose last round is {@code lastRound}:
     * completes with true once the round it sits out is released, or at once with false.
     */
    public CompletableFuture<Boolean> sitOut(final int round, final long nowNs, final int lastRound) {
        if (membership.phase() == JoinHandshake.Phase.FAILED) {
            return CompletableFuture.failedFuture(membership.failure());
        }
        return clearance.sitOut(round, nowNs, config.timeoutNsFor(round), lastRound);
    }

    /** Leaves the job; completes when the switch acknowledged or after the join retry budget. */
    public CompletableFuture<Void> leave() {
        return membership.leave();
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                         final long nowNs, final Outbox outbox) {
        counters.increment(WorkerCounter.PACKETS_IN);
        if (port != ctx.switchPort()) {
            // only the switch speaks to a worker: a RESULT, CONFIG or JOIN_ACK from anyone else could change its model
            counters.increment(WorkerCounter.DROP_FOREIGN);
            return;
        }
        try {
            in.wrap(buffer, offset, length);
            if (in.check() != PacketCheck.OK || in.jobId() != ctx.jobId()) {
                counters.increment(WorkerCounter.DROP_MALFORMED);
                return;
            }
            final WorkerCounter refused = auth.check(in);
            if (refused != null) {
                // from the switch's address but not signed by it (spoofed, or another job's), or a replay
                counters.increment(refused);
                return;
            }
            switch (in.type()) {
                case RESULT:
                    result.wrap(buffer, offset, length);
                    onResult(nowNs, outbox);
                    break;
                case CONFIG:
                    configPacket.wrap(buffer, offset, length);
                    onConfig();
                    break;
                case JOIN_ACK:
                    join.wrap(buffer, offset, length);
                    onJoinAck();
                    break;
                case NACK:
                    counters.increment(WorkerCounter.NACKS);
                    final Status status = Status.fromCode(in.status());
                    if (status == Status.STALE && membership.phase() == JoinHandshake.Phase.READY) {
                        window.onStale(in.seq(), nowNs);
                    } else if (status == Status.HELD && membership.phase() == JoinHandshake.Phase.READY) {
                        window.onHeld(in.seq());
                    } else if (status == Status.FENCED) {
                        fail(WorkerException.fenced(ctx.workerId()));
                    } else if (status == Status.UNKNOWN_JOB && membership.phase() == JoinHandshake.Phase.READY) {
                        fail(WorkerException.jobGone(ctx.jobId()));
                    }
                    break;
                case LEAVE_ACK:
                    if (membership.phase() == JoinHandshake.Phase.LEAVING && in.workerId() == ctx.workerId()) {
                        membership.leftJob();
                    }
                    break;
                default:
                    counters.increment(WorkerCounter.DROP_UNEXPECTED);
                    break;
            }
            if (membership.phase() == JoinHandshake.Phase.READY) {
                pump.pump(nowNs, outbox, submittedRounds);
                assembler.deliver(submittedRounds, window.nextSeq());
                clearance.wake();
            }
        } catch (final RuntimeException ex) {
            counters.increment(WorkerCounter.ERRORS);
            errorHandler.accept(ex);
        }
    }

    @Override
    public long onTimer(final long nowNs, final Outbox outbox) {
        try {
            switch (membership.phase()) {
                case JOINING:
                    return retryControl(nowNs, outbox, PacketType.JOIN);
                case LEAVING:
                    return retryControl(nowNs, outbox, PacketType.LEAVE);
                case READY: {
                    long next = NO_DEADLINE;
                    if (!config.fresh()) {
                        // asked again every join-retry interval (at most) until the table is current
                        if (config.requestDue(nowNs)) {
                            pump.send(encoder.configRequest(config.knownEpoch()), outbox);
                            counters.increment(WorkerCounter.CONFIG_REQUESTS);
                            config.requested(nowNs, Math.max(ctx.minRtoNs(), Math.min(ctx.joinRetryNs(), rtt.rtoNs())));
                        }
                        next = config.requestAtNs();
                    }
                    pump.pump(nowNs, outbox, submittedRounds);
                    if (nowNs >= window.earliestDeadlineNs()) {
                        window.retransmit(nowNs, outbox);
                    }
                    assembler.deliver(submittedRounds, window.nextSeq());
                    clearance.wake();
                    final long lost = window.lostSeq(nowNs);
                    if (lost >= 0) {
                        fail(WorkerException.fellBehind(ctx.workerId(), ctx.jobId(), lost, firstRound + layout.round(lost)));
                        return NO_DEADLINE;
                    }
                    return Math.min(next, Math.min(window.earliestDeadlineNs(), window.staleDeadlineNs()));
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
        final int due = membership.due(nowNs);
        if (due < 0) {
            return membership.deadlineNs();
        }
        if (due == 0) {
            if (type == PacketType.JOIN) {
                fail(WorkerException.joinUnanswered(ctx.workerId(), ctx.jobId(), membership.attempts(),
                    counters.get(WorkerCounter.DROP_BAD_MAC), auth.keyed()));
            } else {
                membership.leftJob();
            }
            return NO_DEADLINE;
        }
        if (type == PacketType.JOIN) {
            counters.increment(WorkerCounter.JOIN_ATTEMPTS);
        }
        pump.send(encoder.control(type), outbox);
        return membership.sent(nowNs);
    }

    private void onJoinAck() {
        if (membership.phase() != JoinHandshake.Phase.JOINING || join.workerId() != ctx.workerId()) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        if (Status.fromCode(join.status()) == Status.PENDING) {
            membership.pending();
            return;
        }
        final WorkerException refused = membership.refusal(join);
        if (refused != null) {
            fail(refused);
            return;
        }
        final int p = join.poolSize();
        firstRound = join.round();
        layout = new StepLayout(ctx.elementsPerRound(), join.chunkElements(), p);
        clearance.ring(join.roundRing());
        assembler.layout(layout);
        pump.layout(layout);
        window.allocate(Math.min(p, ctx.maxWindow()));
        for (final JoinHandshake.EarlyRound early : membership.takeHeld()) {
            submit(submittedRounds, early.gradient(), null, early.computeNs(), early.future());
        }
        membership.ready();
    }

    /** One entry of the job's config table; the table is taken once every entry of its epoch arrived. */
    private void onConfig() {
        final int before = config.knownEpoch();
        if (!config.onConfig(configPacket)) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
        } else if (config.justCompleted(before)) {
            counters.increment(WorkerCounter.CONFIG_UPDATES);
        }
    }

    private void onResult(final long nowNs, final Outbox outbox) {
        if (membership.phase() != JoinHandshake.Phase.READY) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        final long seq = result.seq();
        if (!assembler.matches(result)) {
            counters.increment(WorkerCounter.DROP_UNEXPECTED);
            return;
        }
        final int round = layout.round(seq);
        final int t = layout.step(seq);
        final boolean valueStep = layout.isValueStep(t);
        final int chunk = layout.chunkOf(t);
        final int n = layout.elementCount(t);
        config.seen(result.configEpoch());
        clearance.released(result.releasedRound(), nowNs);
        final int me = ctx.workerId();
        final boolean mine = (result.bitmapWord(me >>> 6) & (1L << (me & 63))) != 0;
        window.hint(result.openSeq(), (result.openBitmapWord(me >>> 6) & (1L << (me & 63))) != 0);
        // this worker's own step, if in flight
        window.onResult(seq, nowNs, outbox);
        // the switch releases no round beyond R + ring, so anything further is not a result of this job
        if (round < assembler.baseRound() || !clearance.plausible(round)) {
            counters.increment(WorkerCounter.DUPLICATE_RESULTS);
            return;
        }
        if (!mine) {
            clearance.leftOut(round);
        }
        final RoundAssembler.RoundState st = assembler.state(round);
        if (!assembler.take(result, st, t, chunk, n)) {
            counters.increment(WorkerCounter.DUPLICATE_RESULTS);
            return;
        }
        counters.increment(WorkerCounter.RESULTS);
        if (!valueStep) {
            return;
        }
        if (mine) {
            st.buffers.mineResolved[chunk] = true;
            counters.increment(WorkerCounter.INCLUDED_CHUNKS);
        } else if (st.submitted && seq < window.nextSeq() && !st.buffers.mineResolved[chunk]) {
            // sent, but released without it: it reached the switch too late, or not at all
            pump.resolveLate(st, chunk);
        }
    }

    private void fail(final WorkerException ex) {
        membership.fail(ex);
        assembler.fail(ex);
        clearance.fail(ex);
    }
}
