package io.serene.training;

import io.serene.protocol.JoinPacket;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncRules;
import io.serene.training.data.Batches;
import io.serene.training.data.GlobalBatch;
import io.serene.worker.Aggregate;
import io.serene.worker.Arrivals;
import io.serene.worker.RoundPlan;
import io.serene.worker.RunClock;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerEngine;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * One worker's training loop over a joined {@link WorkerHost}. Each round: a batch of its seeded
 * shard (B images, or up to 2 B while rounds are released with fewer contributions, so a round
 * keeps about N x B: {@link GlobalBatch}), forward and backward, the flat gradient through the
 * switch, the aggregate averaged by contributor count back into the model, SGD with momentum.
 * Under a bound s the worker computes round r once round r - 1 - s is released and its aggregate
 * applied ({@link SyncRules#gateRound}), applying every later aggregate that has already arrived
 * first (under BSP: exactly round r - 1's, so every worker steps through the same models). A
 * worker that finds round r released without it (excluded, or beyond a quorum), before or while it
 * computed, skips it and takes its aggregate; the gradient it computed goes to the first round
 * still open under {@code fold}, or is dropped under {@code drop} and the next computed afresh.
 * With checkpoints it writes its state to disk every N rounds ({@link Checkpoint}) and keeps it in
 * memory after its two newest rounds that left nothing pending; a job the switch lost is joined
 * again from them ({@link #recover}), and a worker resumed from a checkpoint goes on after it.
 */
public final class TrainingLoop {
    private WorkerHost worker;
    private final DjlModel net;
    private final Supplier<Batches> freshBatches;
    private Batches batches;
    private final GlobalBatch sizes;
    private final RoundRecords log;
    /** The copies deferred evaluation evaluates (checkpoints carry them); null: evaluation during training. */
    private final ModelCopies copies;
    private final Evaluations evaluations;
    private final int total;
    private final LoopOptions options;
    /**
     * Read-my-writes: this worker's own gradients not yet in an applied aggregate (their sum: each
     * added as it is sent, taken out as its aggregate retires it, {@code Aggregate.ownRetiredInto}),
     * the rounds' bounds, and the model a round computed ahead is computed on.
     */
    private final float[] unreleased;
    private final float[] retired;
    private final AheadModel ahead;
    private int[] bounds;
    private float[] averaged;
    /**
     * The run's round that is round 0 of the job on the switch: 0, or the round after the checkpoint
     * a resumed worker went on from (its job is a new one, as a restarted collective's is).
     */
    private int base;
    /** The rounds sent and not yet applied, in order; the next round to apply. */
    private final ArrayDeque<CompletableFuture<Aggregate>> pending = new ArrayDeque<>();
    private int nextToApply;
    /** A gradient computed but not sent yet: its round was released while it was computed. */
    private Checkpoint.Held held;
    /** Under a timeout: back in step after a pause. */
    private final CatchUp catchUp;
    private long lastComputeNs;
    /** How many times slower than its rate the worker's modelled link carries now (a communication straggler). */
    private double linkSlowdown = 1.0;
    /** When this worker expects its pending aggregates (fresh waits, WBSP). */
    private final Arrivals arrivals = new Arrivals();
    /** The steps' times; on a modelled device (--step-time) each waited out, overruns counted for the fidelity verdict. */
    private final ModelledSteps steps;
    /** The run's clock. */
    private final RunClock clock;
    /** WBSP: the gradients computed while waiting for this round's clearance. */
    private final BusyGradients busy;
    /** Waits on the engine and the switch, with the run's timeout and clock. */
    private final LoopWaits waits;
    /** With checkpoints: the state at the start, and after the two newest rounds that left nothing pending. */
    private LoopSnapshot.Kept kept;

    /** {@code copies} null: evaluation during training, inside the measured times. */
    public TrainingLoop(final WorkerHost worker, final DjlModel net, final Supplier<Batches> batches, final GlobalBatch sizes,
                        final RoundRecords log, final ModelCopies copies, final float[] testPixels, final int[] testLabels,
                        final int total, final LoopOptions options) {
        this.worker = worker;
        this.net = net;
        this.freshBatches = batches;
        this.batches = batches.get();
        this.sizes = sizes;
        this.log = log;
        this.copies = copies;
        this.total = total;
        this.options = options;
        this.evaluations = new Evaluations(net, log, copies, testPixels, testLabels, total, worker.workers(), options);
        this.unreleased = new float[net.elements()];
        this.retired = new float[net.elements()];
        this.ahead = new AheadModel(net, options.settings(), worker.workers());
        this.busy = new BusyGradients(net.elements());
        this.clock = options.clock();
        this.steps = ModelledSteps.on(clock);
        this.waits = new LoopWaits(options.id(), options.settings().timeoutSeconds(), options.switchAddress(), clock, steps);
        this.catchUp = new CatchUp(waits, clock, log, options.settings().staleScale(), unreleased);
    }

    /**
     * Trains every round, then evaluates (deferred: the copies) and prints the worker's result line
     * and JSON (and returns the result). With checkpoints, a job the switch lost (it restarted, or a worker back from a
     * checkpoint rebuilds it) is joined again from the checkpoints: see {@link #recover}.
     */
    public WorkerResult run() throws Exception {
        averaged = new float[net.elements()];
        bounds = new int[total];
        if (recovers()) {
            // the start, which a rebuilt job sharing no checkpoint goes on from
            kept = new LoopSnapshot.Kept(net.elements());
            take(kept.start(), 0);
        }
        final Checkpoint resume = options.resumeFrom();
        if (resume != null) {
            held = restore(resume);
            lastComputeNs = resume.lastComputeNs();
            base = resume.roundsDone();
        } else {
            log.start();
        }
        nextToApply = base;
        while (true) {
            try {
                train();
                break;
            } catch (final LoopWaits.PlaceLost lost) {
                if (!recovers()) {
                    throw new IllegalStateException(lost.getMessage());
                }
                recover(lost);
            }
        }
        return finish();
    }

    /** Whether the worker joins a lost job again from its checkpoints (it writes them, and can make a new switch connection). */
    private boolean recovers() {
        return options.checkpointEvery() > 0 && options.rejoin() != null;
    }

    /** Trains from round {@link #base} to the last, every aggregate applied at the end. */
    private void train() throws InterruptedException, IOException {
        for (int round = base; round < total; round++) {
            log.beginRound(round);
            final double slowLink = options.profile().linkFactor(options.id(), round);
            if (slowLink != linkSlowdown) {
                worker.slowLink(slowLink);
                linkSlowdown = slowLink;
            }
            final int r = round;
            final int wire = round - base;
            final WorkerHost.RoundStart start = waits.await(worker.startRound(wire), "the config of round " + round);
            computeWhileWaiting(round, start);
            final int bound = waits.waitFor(start.cleared(), "clearance for round " + round);
            log.waited(round, clock.nanoTime() - log.roundStartNs(round));
            bounds[round] = bound;
            // required: every round up to r - 1 - s; then whatever else already arrived
            while (!pending.isEmpty() && (nextToApply <= SyncRules.gateRound(round, bound) || pending.peek().isDone())) {
                applyNext();
            }
            if (!pending.isEmpty() && held == null && options.settings().freshWait() == FreshWait.COMPUTE) {
                // a fresher model is allowed and costs no accuracy: wait for each pending aggregate until it
                // is late (a compute time past its typical arrival), then compute ahead
                while (!pending.isEmpty()) {
                    final long w0 = clock.nanoTime();
                    final boolean arrived = waits.waitUntil(pending.peek(), arrivals.lateNs(log.sendNs(nextToApply)));
                    log.waited(round, clock.nanoTime() - w0);
                    if (!arrived) {
                        break;
                    }
                    applyNext();
                }
            }
            if (recovers() && pending.isEmpty() && nextToApply == round && round > base) {
                // every round before this one applied, nothing pending: what a rebuilt job can go on from
                take(kept.next(), round);
            }
            final Checkpoint.Held before = held;
            held = catchUp.beforeRound(worker, round, wire, total - 1 - base, held, arrivals.typicalComputeNs());
            if (held != before) {
                lastComputeNs = before.reportedNs();
            }
            if (RoundPlan.computes(round, released(), held != null)) {
                held = compute(round, nextToApply, round);
            }
            final int released = released();
            final RoundPlan.HandIn handIn = RoundPlan.handIn(round, released, held == null ? RoundPlan.NONE : held.round(),
                RoundPlan.releasedWithout(round, released) ? lateMode(round) : null);
            if (handIn != RoundPlan.HandIn.CONTRIBUTE) {
                // released without this worker, before or while it computed: a contribution would only be
                // late; take the aggregate (drop: the next open round gets a gradient computed fresh, on
                // the model as it is then)
                if (handIn == RoundPlan.HandIn.DROP) {
                    log.dropped(round, held.batch(), held.elapsedNs(), held.injectedNs(), held.hostNs(), round - held.appliedBefore());
                    lastComputeNs = held.reportedNs();
                    held = null;
                } else {
                    log.skipped(round, round - nextToApply);
                }
                // gradients computed while waiting go with this worker's contribution to the round, which it has none of
                busy.clear();
                // reports its last compute time: it is still that slow
                pending.add(worker.skip(wire, lastComputeNs).whenComplete((a, e) -> log.released(r)));
            } else {
                log.computed(round, held.batch(), held.elapsedNs(), held.injectedNs(), held.hostNs(), round - held.appliedBefore(), held.loss());
                lastComputeNs = held.reportedNs();
                busy.mergeInto(held.gradient(), weightOf(held.round(), held.appliedBefore()), log, round);
                pending.add(worker.allreduce(wire, held.gradient(), lastComputeNs).whenComplete((a, e) -> log.released(r)));
                for (int i = 0; i < unreleased.length; i++) {
                    unreleased[i] += held.gradient()[i];
                }
                held = null;
            }
            catchUp.record(round);
            if (options.progressLines()) {
                // not printf: a formatter costs about a millisecond a round on a worker's quick JIT
                System.out.println("@progress " + (round + 1) + " " + net.lastLoss());
            }
            if (evaluations.afterRound(round)) {
                // evaluating during training is the host's work, not the modelled step's: the next step opens after it
                steps.waited();
            }
            if (options.checkpointEvery() > 0 && (round + 1) % options.checkpointEvery() == 0 && round + 1 < total) {
                // a checkpoint holds a model with nothing pending: every round up to this one applied
                while (!pending.isEmpty()) {
                    applyNext();
                }
                checkpoint(round);
                // nor is writing it
                steps.waited();
            }
        }
        while (!pending.isEmpty()) {
            applyNext();
        }
    }

    /** Evaluates (deferred: the copies), prints the result line and JSON. */
    private WorkerResult finish() throws IOException, InterruptedException {
        final long endNs = clock.nanoTime();
        final double endSeconds = log.seconds(endNs);
        final String modelHash = net.hash();
        final float finalLoss = net.lastLoss();
        evaluations.afterTraining(endNs);
        final WorkerResult result = new WorkerResult(options.id(), total, endSeconds - log.startSeconds(), log.startSeconds(), endSeconds,
            log.computeNs() / 1e9, log.injectedNs() / 1e9, log.skippedRounds(), log.droppedRounds(), log.samples(),
            options.settings().rebalance(), log.waitingNs() / 1e9, log.evaluationNs() / 1e9, copies != null, options.profile().toString(),
            finalLoss, log.finalAccuracy(), modelHash, options.settings().seed(), options.settings().device().modelled() ? steps.report() : null,
            worker.linkReport());
        result.printDone(System.out, options.settings().device());
        if (!clock.virtual()) {
            // for the launcher; a run in virtual time has the result itself
            System.out.println(Json.write(result));
        }
        System.out.flush();
        return result;
    }

    /**
     * Computes round {@code round}'s gradient on the model as it is (after {@code applied} rounds),
     * with the injected straggling of round {@code slowAs}.
     */
    private Checkpoint.Held compute(final int round, final int applied, final int slowAs) throws InterruptedException, IOException {
        final long c0 = options.settings().computeClock().nanos();
        steps.begin();
        final int batch = sizes.next();
        final float[] pixels = batches.next(batch);
        final long v0 = System.nanoTime();
        final boolean computingAhead = computesAhead(round, applied);
        final long predictNs = System.nanoTime() - v0;
        // the model's own buffer, not a copy: a gradient is held by nobody else when the next one is
        // computed (held is null then, the extras are summed at once, a snapshot copies it), and the
        // worker copied the last one it was given before this round's start (its calls run in order)
        final float[] gradient = computingAhead ? net.computeGradientAt(ahead.model(), pixels, batches.labels())
            : net.computeGradient(pixels, batches.labels());
        final TrainSettings t = options.settings();
        final ModelledSteps.Times times = steps.end(c0, t.computeClock(), t.device().stepNs(t.model(), batch, t.batch()),
            options.profile().factor(options.id(), slowAs), options.profile().pauseNs(options.id(), slowAs),
            computingAhead ? predictNs + net.lastViewNs() : 0);
        arrivals.computed(times.computeNs() + times.injectedNs());
        if (computingAhead && options.settings().delayCompensation() > 0) {
            compensateDelay(round, gradient);
        }
        final float weight = weightOf(round, applied);
        if (weight != 1f) {
            for (int i = 0; i < gradient.length; i++) {
                gradient[i] *= weight;
            }
        }
        return new Checkpoint.Held(gradient, round, batch, times.computeNs(), times.measuredNs(), times.injectedNs(), applied,
            net.lastLoss(), times.hostNs());
    }

    /**
     * Delay compensation (DC-ASGD, Zheng et al. 2017): applies the aggregates that arrived while
     * {@code gradient} was computed on {@link #ahead}'s model, and corrects it towards the model the
     * worker would compute on now ({@link AheadModel#compensate}). Nothing arrived: nothing changes.
     */
    private void compensateDelay(final int round, final float[] gradient) throws InterruptedException, IOException {
        if (pending.isEmpty() || !pending.peek().isDone()) {
            return;
        }
        ahead.keep();
        while (!pending.isEmpty() && pending.peek().isDone()) {
            applyNext();
        }
        if (!computesAhead(round, nextToApply)) {
            // every pending round applied: the model as it is
            ahead.toApplied();
        }
        ahead.compensate(gradient, options.settings().delayCompensation());
    }

    /** Whether round {@code round} is computed ahead of pending rounds (after {@code applied}), building the model into {@link #ahead}. */
    private boolean computesAhead(final int round, final int applied) {
        return ahead.build(round, applied, bounds, unreleased, averaged);
    }

    /** The weight {@code --stale-scale} gives a gradient: by the rounds pending when it was computed. */
    private float weightOf(final int round, final int applied) {
        return options.settings().staleScale().weight(round - applied);
    }

    /**
     * WBSP (worker-busy synchronous parallel): while round {@code round} waits for clearance, computes
     * more gradients (on the model it computes this round on, {@link #compute}) as long as another
     * one is expected to be done before the pending aggregate typically arrives, so a worker never
     * holds up a release it could have had; they wait in {@link #busy} for the round's own gradient.
     */
    private void computeWhileWaiting(final int round, final WorkerHost.RoundStart start) throws InterruptedException, IOException {
        while (RoundPlan.computesWhileWaiting(start.busy(), start.cleared().isDone(), held != null, !pending.isEmpty(), arrivals,
            clock.nanoTime(), pending.isEmpty() ? 0 : log.sendNs(nextToApply + pending.size() - 1))) {
            final Checkpoint.Held extra = compute(round, nextToApply, RoundPlan.slowAs(round));
            busy.add(extra.gradient(), weightOf(extra.round(), extra.appliedBefore()), extra.batch(), extra.elapsedNs(),
                extra.injectedNs(), extra.hostNs());
        }
    }

    /** R, as this worker last heard, in the run's rounds. */
    private int released() throws InterruptedException {
        return base + waits.await(worker.call(WorkerEngine::releasedRound), "the released round");
    }

    private LateMode lateMode(final int round) throws InterruptedException {
        return waits.await(worker.call(e -> e.lateModeFor(round - base)), "the late mode of round " + round);
    }

    /**
     * Joins the lost job again, rebuilding it: a new connection offers the rounds this worker can go
     * on after (its two newest snapshots in memory, its two newest checkpoints on disk); once every
     * worker joined, the switch names the most rounds all of them offered (0: the start), and this
     * worker goes back there and trains on as the job's new round 0. A worker the job went on
     * without offers what a restarted one does instead: the rounds any worker has a checkpoint after
     * (its own snapshots are older than the others'), taking a peer's model where it has none.
     */
    private void recover(final LoopWaits.PlaceLost lost) throws Exception {
        System.out.println(lost.getMessage() + "; joining again from " + (lost.behind ? "the workers'" : "its") + " checkpoints");
        System.out.flush();
        worker.close();
        final int workers = worker.workers();
        final int[] offered = lost.behind ? CheckpointDir.rejoinOffers(options.checkpointDir(), options.id(), workers, JoinPacket.MAX_OFFERS)
            : CheckpointDir.ownOffers(options.checkpointDir(), options.id(), JoinPacket.MAX_OFFERS,
                kept.rounds());
        worker = options.rejoin().join(offered);
        linkSlowdown = 1.0;
        final int first = waits.await(worker.call(WorkerEngine::firstRound), "the round the rebuilt job goes on after");
        pending.clear();
        final LoopSnapshot memory = kept.after(first);
        if (memory != null) {
            restore(memory);
        } else {
            // its own checkpoint after that round, or (a round it offered from a peer's) the peer's model
            final Checkpoint disk = Checkpoint.forRejoin(options.checkpointDir(), options.id(), workers, first);
            held = restore(disk);
            lastComputeNs = disk.lastComputeNs();
        }
        base = first;
        nextToApply = first;
        kept.forgetNewer();
        System.out.printf(Locale.ROOT, "worker %d: the job goes on after round %d (offered %s)%n", options.id(), first,
            Arrays.toString(offered));
        CheckpointDir.damaged(options.checkpointDir(), workers).forEach(d -> System.out.println("worker " + options.id() + ": passed over " + d));
        System.out.flush();
    }

    /** Keeps what a rebuilt job can go on from after {@code rounds} rounds in {@code into}. */
    private void take(final LoopSnapshot into, final int rounds) throws InterruptedException {
        into.take(rounds, net, unreleased, averaged, this::foldedInto, batches.drawn(), sizes.state(), held, lastComputeNs);
    }

    /** The values the engine will fold into the next round, copied into {@code into}. */
    private void foldedInto(final float[] into) throws InterruptedException {
        waits.await(worker.foldedInto(into), "the values to fold");
    }

    /** Takes this worker back to a snapshot in memory (the records and copies of later rounds forgotten). */
    private void restore(final LoopSnapshot s) throws IOException, InterruptedException {
        restoreTraining(s.parameters, s.velocity, s.steps, s.lastLoss, s.drawn, s.globalBatch, s.unreleasedCopy, s.averagedCopy, s.folded);
        held = s.heldGradient;
        lastComputeNs = s.computeNs;
        if (copies != null) {
            copies.truncate(s.roundsDone);
        }
        log.rewind(s.roundsDone, r -> !evaluations.recordWaits(r));
    }

    /**
     * The training state a snapshot or a checkpoint holds, put back: the model, the data position (a
     * fresh pass over the shard, moved on), the batch window, read-my-writes and what the engine folds.
     */
    private void restoreTraining(final float[] parameters, final float[] velocity, final int steps, final float loss, final long drawn,
                                 final int[] globalBatch, final float[] ownUnreleased, final float[] lastAverage, final float[] folded)
        throws InterruptedException {
        net.restore(parameters, velocity, steps, loss);
        batches = freshBatches.get();
        batches.skipTo(drawn);
        sizes.restore(globalBatch);
        System.arraycopy(ownUnreleased, 0, unreleased, 0, unreleased.length);
        System.arraycopy(lastAverage, 0, averaged, 0, averaged.length);
        busy.clear();
        waits.await(worker.fold(folded), "the values to fold");
    }

    /** Writes the checkpoint after {@code round} (every round up to it applied), reporting the file. */
    private void checkpoint(final int round) throws IOException, InterruptedException {
        final long t0 = System.nanoTime();
        final LoopSnapshot now = new LoopSnapshot(net.elements());
        take(now, round + 1);
        final Path file = Checkpoint.of(options.id(), worker.workers(), round, options.settings(), now, copies, log).write(options.checkpointDir());
        System.out.printf(Locale.ROOT, "worker %d: checkpoint after round %d in %s (%.1f ms)%n", options.id(), round + 1, file,
            (System.nanoTime() - t0) / 1e6);
        System.out.flush();
    }

    /**
     * Takes this worker back to a checkpoint (written by this worker id, with the same settings):
     * model, data position, batch window, read-my-writes, what its engine folds, the copies and the
     * records; returns the gradient it held, if any.
     */
    private Checkpoint.Held restore(final Checkpoint c) throws IOException, InterruptedException {
        c.requireFits(options.id(), worker.workers(), total, options.settings());
        restoreTraining(c.parameters(), c.velocity(), c.steps(), c.lastLoss(), c.drawn(), c.globalBatch(), c.unreleased(), c.averaged(),
            c.folded());
        if (copies != null) {
            copies.truncate(0);
            for (final Checkpoint.Copy copy : c.copies()) {
                copies.add(copy.parameters(), copy.round(), log.nanos(copy.takenSeconds()), copy.loss());
            }
        }
        log.restore(c.records(), r -> !evaluations.recordWaits(r));
        System.out.printf(Locale.ROOT, "worker %d: resumed from its checkpoint after round %d%n", options.id(), c.roundsDone());
        System.out.flush();
        return c.held();
    }

    /**
     * Waits for the oldest pending aggregate (round {@link #nextToApply}), steps the model with its
     * average and writes the round's record, unless the round is evaluated after training; the
     * last round is evaluated here when evaluation is not deferred.
     */
    private void applyNext() throws InterruptedException, IOException {
        final int round = nextToApply++;
        final float momentum = options.settings().momentumRule().momentum(net.momentum(), bounds[round]);
        final long t0 = clock.nanoTime();
        final Aggregate aggregate = waits.waitFor(pending.poll(), "the aggregate of round " + round);
        log.waited(round, clock.nanoTime() - t0);
        if (log.contributed(round)) {
            arrivals.arrived(log.sendNs(round), log.releaseNs(round));
        }
        aggregate.averageInto(averaged);
        sizes.applied(aggregate.contributorCount());
        aggregate.ownRetiredInto(retired);
        for (int i = 0; i < unreleased.length; i++) {
            unreleased[i] -= retired[i];
        }
        aggregate.release();
        net.applyGradient(averaged, momentum);
        evaluations.afterLastApplied(round);
        if (!evaluations.recordWaits(round)) {
            log.write(round);
        }
    }
}
