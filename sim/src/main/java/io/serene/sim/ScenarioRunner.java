package io.serene.sim;

import io.serene.controlplane.ControlLoop;
import io.serene.controlplane.Controller;
import io.serene.controlplane.TelemetrySample;
import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.node.LocalSwitchControl;
import io.serene.node.SwitchView;
import io.serene.protocol.JobKeys;
import io.serene.protocol.Status;
import io.serene.protocol.sync.StepLayout;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.training.StragglerProfile;
import io.serene.transport.FaultInjector;
import io.serene.transport.InProcessNetwork;
import io.serene.worker.Aggregate;
import io.serene.worker.Arrivals;
import io.serene.worker.RoundPlan;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerCounter;
import io.serene.worker.WorkerEngine;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Runs the real switch and worker engines on the in-process transport in virtual time, with
 * modelled compute times (straggler profiles) and synthetic gradients, and checks docs/design.md's
 * invariants 1-5 on the way: every gradient chunk is counted once (included, or folded into a later
 * round, or dropped and reported); every worker receives the same aggregate for every round; no
 * worker starts a round beyond the bound in force; every release follows the config of its round;
 * and every round completes.
 *
 * <p>JCT is the virtual time from the start to the last round's release (as the first worker to
 * receive it sees it); a worker released from waiting for stragglers may finish its own compute
 * later ({@code allWorkersDone}). Waiting time is time blocked in clearance plus the wait for the
 * final aggregates; compute share is compute time over the workers' time until all are done.
 *
 * <p>Each worker loops: wait for clearance of round r, compute (base time x straggler factor),
 * contribute, go on with r + 1. What it does with a round is decided by {@link RoundPlan}, the rules
 * the training loop follows too: a round released without it (an excluded worker, one beyond a
 * quorum) before or while it computed it skips, keeping the gradient for the next open round (fold)
 * or dropping it (drop); under WBSP it computes while it waits. Sync configs come from the
 * schedule: its first entry is the switch's default for the job, the others are installed at the
 * start (and, with {@link Scenario#randomSwaps}, random further changes at random times, each from
 * the earliest round the switch allows).
 */
public final class ScenarioRunner {
    /** The job the simulated workers join (PSP seeds its samples with it, as the switch does). */
    private static final int JOB = 1;
    /** Wall time between progress lines. */
    private static final long PROGRESS_EVERY_NS = 5_000_000_000L;

    private final Scenario s;
    private final InProcessNetwork network;
    private final SwitchPipeline pipeline;
    private final int switchAddress;
    private final WorkerEngine[] engines;
    private final int[] addresses;
    private final StragglerProfile profile;
    private final SplittableRandom random;
    private final List<Throwable> errors = new ArrayList<>();
    /** The synthetic gradient of the round being handed in (the engine copies it). */
    private final float[] gradient;
    /** Workers that received every round's aggregate. */
    private int workersDone;
    /** Where progress goes (null: nowhere), how often the end check ran, and when progress was last printed (wall clock). */
    private PrintStream progress;
    private long progressChecks;
    private long lastProgressNs;
    /** Per worker group (0..3): the configs installed on the switch; per worker: its group. */
    private final SyncSchedule[] installed = new SyncSchedule[4];
    private final int[] groupOf;
    private final BitSet[] members;

    // per worker
    private final long[] waitingNs;
    private final long[] computeNs;
    private final long[] readySince;
    private final int[] finishedRounds;
    /** What every worker received, for the agreement and hot-swap checks. */
    private final DeliveryLog deliveries;
    private long stalenessSum;
    private long stalenessCount;
    /** Rounds a worker handed nothing in for (released without it), and the gradients it dropped then. */
    private long skippedRounds;
    private long sitOuts;
    private long droppedGradients;
    /** Per worker: the round of the gradient it holds ({@link RoundPlan#NONE}: none) and its compute time; rounds handed in. */
    private final int[] heldRound;
    private final long[] heldComputeNs;
    private final int[] handedIn;
    private int maxStaleness = Integer.MIN_VALUE;
    private int boundViolations;
    private long lastDeliveryNs;
    // the policy controller and its telemetry
    private final Controller controller;
    private final ControlLoop loop;
    private final long[] lastComputeNs;
    /** Per worker: when it expects its aggregates (WBSP), when it sent each round and its newest contribution. */
    private final Arrivals[] arrivals;
    private final long[][] sentNs;
    private final long[] lastSentNs;
    /** WBSP: gradients workers computed while they waited for clearance. */
    private long busyGradients;
    private int lastEvaluatedRound = -1;
    private long waitingAtEvaluation;
    private long computeAtEvaluation;
    private long stalenessAtEvaluation;
    private long startsAtEvaluation;
    /** When the first worker received the last round's aggregate: the last release, plus one hop. */
    private long lastRoundReleasedNs = Long.MAX_VALUE;

    public ScenarioRunner(final Scenario scenario) {
        scenario.validate();
        this.s = scenario;
        this.random = new SplittableRandom(s.seed);
        this.profile = StragglerProfile.parse(s.stragglers, s.seed, s.workers);
        this.network = new InProcessNetwork(new FaultInjector(s.seed ^ 0xFA17L, s.loss, s.duplication, s.reordering),
            s.latencyNs, s.jitterNs, 20 * s.latencyNs);
        this.groupOf = s.groupOf();
        this.members = s.members();
        final SyncConfig first = s.schedule.entries().get(0).config;
        // a pool for every round of the ring, no more: each worker's window is as large as the pool
        final int pool = Math.min(SwitchContext.MAX_POOL_SIZE,
            SwitchContext.DEFAULT_ROUND_RING * StepLayout.stepsPerRound(s.elements, s.chunkElements, SwitchContext.MAX_POOL_SIZE));
        final SwitchContext context = new SwitchContext().budgetBytes(64L << 20).maxJobs(1).maxPoolSize(pool)
            .maxWorkers(Math.max(64, s.workers)).chunkElements(s.chunkElements).roundRing(SwitchContext.DEFAULT_ROUND_RING).defaultSync(first)
            .defaultGroups(groupOf);
        for (int g = 0; g < installed.length; g++) {
            final SyncConfig start = s.policy != null && g <= s.policy.groups().size() ? s.policy.start(g) : first;
            context.groupSync(g, start);
            installed[g] = g == 0 || s.policy == null ? s.schedule : new SyncSchedule(List.of(new SyncSchedule.Entry(0, start)));
        }
        // a secret of the seed's: the same scenario signs the same way
        final byte[] secret = s.keyed ? ("the simulated job's secret, seed " + s.seed).getBytes(StandardCharsets.UTF_8) : null;
        this.pipeline = new SwitchPipeline(context.secret(secret).conclude(), errors::add);
        this.switchAddress = network.attach(pipeline);
        this.engines = new WorkerEngine[s.workers];
        this.addresses = new int[s.workers];
        for (int w = 0; w < s.workers; w++) {
            engines[w] = new WorkerEngine(new WorkerContext().jobId(JOB).workerId(w).workers(s.workers)
                .key(secret == null ? null : JobKeys.workerKey(JobKeys.jobSecret(secret, JOB), JOB, w))
                .elementsPerRound(s.elements).switchPort(switchAddress)
                .initialRtoNs(20 * s.latencyNs).minRtoNs(4 * s.latencyNs).maxRtoNs(2000 * s.latencyNs)
                .joinRetryNs(20 * s.latencyNs).maxJoinAttempts(1000), errors::add);
            addresses[w] = network.attach(engines[w]);
        }
        lastComputeNs = new long[s.workers];
        arrivals = Stream.generate(Arrivals::new).limit(s.workers).toArray(Arrivals[]::new);
        sentNs = new long[s.workers][s.rounds];
        lastSentNs = new long[s.workers];
        controller = s.policy == null ? null : new Controller(s.policy, JOB, s.workers,
            new LocalSwitchControl(pipeline, JOB, () -> 0, Supplier::get, write -> {
                final SyncConfigEntry e = (SyncConfigEntry) write.entry();
                installed[e.group()] = installed[e.group()].with(e.firstRound(), e.config());
                network.wake(switchAddress);
            }));
        loop = controller == null ? null : new ControlLoop(controller);
        waitingNs = new long[s.workers];
        computeNs = new long[s.workers];
        readySince = new long[s.workers];
        finishedRounds = new int[s.workers];
        deliveries = new DeliveryLog(s.workers, s.rounds);
        gradient = new float[s.elements];
        heldRound = new int[s.workers];
        Arrays.fill(heldRound, RoundPlan.NONE);
        heldComputeNs = new long[s.workers];
        handedIn = new int[s.workers];
    }

    /** Runs the scenario to the end and returns what it measured and checked. */
    public ScenarioResult run() {
        final long wallStart = System.nanoTime();
        // the first line comes after PROGRESS_EVERY_NS: a short run prints nothing
        lastProgressNs = wallStart;
        // join, then install the rest of the schedule before anyone computes
        network.runUntil(() -> Arrays.stream(engines).allMatch(e -> e.joined().isDone()), s.timeLimitNs);
        for (final WorkerEngine engine : engines) {
            if (engine.joined().isCompletedExceptionally()) {
                engine.joined().join();
            }
        }
        SwitchSetup.installLater(pipeline, JOB, s.schedule, members);
        network.wake(switchAddress);
        final long start = network.nowNs();
        for (int w = 0; w < s.workers; w++) {
            readySince[w] = start;
            startRound(w, 0);
        }
        for (int i = 0; i < s.randomSwaps; i++) {
            network.schedule(start + (long) (random.nextDouble() * s.rounds * s.computeNs), this::randomSwap);
        }
        final boolean done = network.runUntil(() -> allDelivered(), start + s.timeLimitNs);
        final long wallNs = System.nanoTime() - wallStart;
        return result(done, lastRoundReleasedNs - start, lastDeliveryNs - start, wallNs);
    }

    private boolean allDelivered() {
        if (progress != null && (++progressChecks & 0xFFFF) == 0 && System.nanoTime() - lastProgressNs >= PROGRESS_EVERY_NS) {
            reportProgress();
        }
        return workersDone == s.workers;
    }

    /** Prints a progress line to {@code out} every few seconds of wall time while the scenario runs. */
    public ScenarioRunner progress(final PrintStream out) {
        this.progress = out;
        return this;
    }

    private void reportProgress() {
        lastProgressNs = System.nanoTime();
        progress.printf(Locale.ROOT, "sim: round %d of %d released, %.3f s of virtual time, %,d events%n",
            pipeline.releasedRound(JOB) + 1, s.rounds, network.nowNs() / 1e9, network.eventsProcessed());
        progress.flush();
    }

    private void startRound(final int w, final int round) {
        final CompletableFuture<Void> cleared = engines[w].awaitClearance(round);
        busy(w, round, cleared);
        network.wake(addresses[w]);
    }

    /**
     * While round {@code round} waits for clearance, the worker computes another gradient whenever
     * {@link RoundPlan#computesWhileWaiting} says so (WBSP; the time is compute, not waiting), then
     * goes on with the round once it is cleared.
     */
    private void busy(final int w, final int round, final CompletableFuture<Void> cleared) {
        final long now = network.nowNs();
        if (!RoundPlan.computesWhileWaiting(engines[w].busyFor(round), cleared.isDone(), heldRound[w] != RoundPlan.NONE,
            handedIn[w] > finishedRounds[w], arrivals[w], now, lastSentNs[w])) {
            if (cleared.isDone()) {
                // cleared already (within the bound): no need to come back through the event queue
                onCleared(w, round);
            } else {
                // cleared inside the engine's packet handling: go on from the queue, outside it
                cleared.thenRun(() -> network.schedule(network.nowNs(), () -> onCleared(w, round)));
            }
            return;
        }
        final long duration = duration(w, RoundPlan.slowAs(round));
        computeNs[w] += duration;
        readySince[w] += duration;
        arrivals[w].computed(duration);
        busyGradients++;
        network.schedule(now + duration, () -> busy(w, round, cleared));
    }

    /** A worker's compute time for a round: the base time, jittered, times its straggler factor, and any straggler pause. */
    private long duration(final int w, final int round) {
        final double jitter = 1 + s.computeJitter * (2 * StragglerProfile.uniform(s.seed, 99, w, round) - 1);
        return (long) (s.computeNs * jitter * profile.factor(w, round)) + profile.pauseNs(w, round);
    }

    /** Round {@code round} is cleared: the worker computes its gradient ({@link RoundPlan#computes}), or hands in at once. */
    private void onCleared(final int w, final int round) {
        final long now = network.nowNs();
        waitingNs[w] += now - readySince[w];
        if (engines[w].foldsHeld(round, heldRound[w])) {
            // with the next contribution, as the training loop does
            engines[w].fold(SyntheticGradient.fill(gradient, s.seed, w, heldRound[w]));
            lastComputeNs[w] = heldComputeNs[w];
            heldRound[w] = RoundPlan.NONE;
        }
        final CompletableFuture<Boolean> sitOut = engines[w].sitOut(round, now, s.rounds - 1);
        if (!sitOut.isDone()) {
            // until the release, or (a release it did not hear of) the deadline: then it computes the round after all
            sitOuts++;
            final boolean[] gone = new boolean[1];
            final Runnable onRelease = () -> network.schedule(network.nowNs(), () -> goOn(w, round, now, gone, () -> handIn(w, round)));
            sitOut.thenRun(onRelease);
            network.schedule(RoundPlan.sitOutDeadlineNs(now, arrivals[w].typicalComputeNs()), () -> goOn(w, round, now, gone,
                () -> compute(w, round)));
            return;
        }
        compute(w, round);
    }

    /** Ends a sit-out once, the first of its release and its deadline: the time since {@code since} is waiting. */
    private void goOn(final int w, final int round, final long since, final boolean[] gone, final Runnable next) {
        if (!gone[0]) {
            gone[0] = true;
            waitingNs[w] += network.nowNs() - since;
            next.run();
        }
    }

    /** The worker computes round {@code round}'s gradient ({@link RoundPlan#computes}), or hands in at once. */
    private void compute(final int w, final int round) {
        final long now = network.nowNs();
        if (!RoundPlan.computes(round, engines[w].releasedRound(), heldRound[w] != RoundPlan.NONE)) {
            handIn(w, round);
            return;
        }
        final int released = pipeline.releasedRound(JOB);
        if (!SyncOracle.mayStart(round, released, installed[groupOf[w]].configFor(round).bound())) {
            boundViolations++;
        }
        // rounds still unreleased before this one; a straggler already past R (its rounds released
        // without it) counts 0
        final int staleness = SyncRules.staleness(round, released);
        maxStaleness = Math.max(maxStaleness, staleness);
        stalenessSum += staleness;
        stalenessCount++;
        final long duration = duration(w, round);
        computeNs[w] += duration;
        arrivals[w].computed(duration);
        network.schedule(now + duration, () -> {
            heldRound[w] = round;
            heldComputeNs[w] = duration;
            handIn(w, round);
        });
    }

    /**
     * Hands round {@code round} in as {@link RoundPlan#handIn} decides: the held gradient as the
     * round's contribution, or (released without the worker) nothing, the gradient kept for the next
     * open round or dropped; then waits for the aggregate and starts the next round. A skipped round
     * reports the worker's last compute time, as serene worker does (it is still that slow).
     */
    private void handIn(final int w, final int round) {
        final WorkerEngine engine = engines[w];
        final int released = engine.releasedRound();
        final RoundPlan.HandIn handIn = RoundPlan.handIn(round, released, heldRound[w],
            RoundPlan.releasedWithout(round, released) ? engine.lateModeFor(round) : null);
        final CompletableFuture<Aggregate> aggregate;
        if (handIn != RoundPlan.HandIn.SKIP) {
            // the held gradient goes (contributed or dropped): its compute time is the one reported
            lastComputeNs[w] = heldComputeNs[w];
            heldRound[w] = RoundPlan.NONE;
        }
        if (handIn == RoundPlan.HandIn.CONTRIBUTE) {
            sentNs[w][round] = network.nowNs();
            lastSentNs[w] = sentNs[w][round];
            aggregate = engine.allreduce(round, SyntheticGradient.fill(gradient, s.seed, w, round), null, lastComputeNs[w]);
        } else {
            droppedGradients += handIn == RoundPlan.HandIn.DROP ? 1 : 0;
            skippedRounds++;
            aggregate = engine.skip(round, lastComputeNs[w]);
        }
        handedIn[w]++;
        aggregate.whenComplete((a, failure) -> {
            if (failure != null) {
                errors.add(failure);
                return;
            }
            delivered(w, a);
        });
        network.wake(addresses[w]);
        readySince[w] = network.nowNs();
        if (round + 1 < s.rounds) {
            startRound(w, round + 1);
        }
    }

    private void delivered(final int w, final Aggregate aggregate) {
        final int round = aggregate.round();
        if (sentNs[w][round] != 0) {
            arrivals[w].arrived(sentNs[w][round], network.nowNs());
        }
        deliveries.delivered(w, aggregate);
        aggregate.release();
        if (++finishedRounds[w] == s.rounds) {
            workersDone++;
        }
        if (round == s.rounds - 1) {
            // after its last contribution a worker waits for the final aggregates
            waitingNs[w] += network.nowNs() - readySince[w];
            readySince[w] = network.nowNs();
        }
        lastDeliveryNs = Math.max(lastDeliveryNs, network.nowNs());
        evaluatePolicy();
        if (round == s.rounds - 1) {
            lastRoundReleasedNs = Math.min(lastRoundReleasedNs, network.nowNs());
        }
    }

    /** Hands the controller the telemetry of each newly released round. */
    private void evaluatePolicy() {
        final int released = pipeline.releasedRound(JOB);
        if (controller == null || released <= lastEvaluatedRound) {
            return;
        }
        lastEvaluatedRound = released;
        final int[] clocks = new int[s.workers];
        long waiting = 0;
        long compute = 0;
        for (int w = 0; w < s.workers; w++) {
            clocks[w] = pipeline.clock(1, w);
            waiting += waitingNs[w];
            compute += computeNs[w];
        }
        final long dw = waiting - waitingAtEvaluation;
        final long dc = compute - computeAtEvaluation;
        final long starts = stalenessCount - startsAtEvaluation;
        final double waitingShare = dw + dc == 0 ? 0 : (double) dw / (dw + dc);
        final double staleness = starts == 0 ? 0 : (double) (stalenessSum - stalenessAtEvaluation) / starts;
        waitingAtEvaluation = waiting;
        computeAtEvaluation = compute;
        stalenessAtEvaluation = stalenessSum;
        startsAtEvaluation = stalenessCount;
        loop.onSample(new TelemetrySample(released, pipeline.releasedAtNs(1, released), clocks, lastComputeNs.clone(),
            SwitchView.finished(pipeline, 1),
            waitingShare, staleness, new BitSet()));
    }

    private void randomSwap() {
        final int first = pipeline.earliestSwapRound(JOB) + random.nextInt(3);
        final SyncConfig config = RandomConfigs.draw(random, s.workers, s.computeNs);
        final int group = groupOf[random.nextInt(s.workers)];
        if (pipeline.installConfig(1, group, first, config) == Status.OK) {
            installed[group] = installed[group].with(first, config);
            network.wake(switchAddress);
        }
    }


    private ScenarioResult result(final boolean done, final long jctNs, final long allDoneNs, final long wallNs) {
        final ScenarioResult r = new ScenarioResult();
        r.seed = s.seed;
        r.completed = done;
        r.jctNs = done ? jctNs : allDoneNs;
        r.allWorkersDoneNs = allDoneNs;
        r.wallNs = wallNs;
        r.events = network.eventsProcessed();
        long waiting = 0;
        long compute = 0;
        long included = 0;
        long folded = 0;
        long dropped = 0;
        boolean resolvedOnce = true;
        for (int w = 0; w < s.workers; w++) {
            waiting += waitingNs[w];
            compute += computeNs[w];
            final long in = engines[w].counters().get(WorkerCounter.INCLUDED_CHUNKS);
            final long fo = engines[w].counters().get(WorkerCounter.FOLDED_CHUNKS);
            final long dr = engines[w].counters().get(WorkerCounter.DROPPED_CHUNKS);
            included += in;
            folded += fo;
            dropped += dr;
            final long chunks = (long) s.rounds * StepLayout.chunks(s.elements, s.chunkElements);
            resolvedOnce &= in + fo + dr == chunks;
        }
        r.cumulativeWaitingNs = waiting;
        r.computeShare = allDoneNs <= 0 ? 0 : (double) compute / ((double) s.workers * allDoneNs);
        r.included = included;
        r.folded = folded;
        r.dropped = dropped;
        r.refusals = pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND);
        r.late = pipeline.counters().get(SwitchCounter.DROP_LATE);
        r.reports = pipeline.counters().get(SwitchCounter.REPORTS);
        r.partialReleases = pipeline.counters().get(SwitchCounter.PARTIAL_RELEASES);
        r.timeoutReleases = pipeline.counters().get(SwitchCounter.TIMEOUT_RELEASES);
        r.configInstalls = pipeline.counters().get(SwitchCounter.CONFIG_INSTALLS);
        r.maxStaleness = maxStaleness;
        r.skippedRounds = skippedRounds;
        r.sitOuts = sitOuts;
        r.droppedGradients = droppedGradients;
        r.busyGradients = busyGradients;
        r.meanStaleness = stalenessCount == 0 ? 0 : (double) stalenessSum / stalenessCount;
        r.exactlyOnce = done && resolvedOnce && included == pipeline.counters().get(SwitchCounter.VALUE_CONTRIBUTIONS);
        r.agreement = done && deliveries.agreement();
        r.boundRespected = boundViolations == 0 && r.refusals == 0;
        r.hotSwapConsistent = done && deliveries.hotSwapConsistent(installed, members);
        r.errors = errors.size() + (int) pipeline.counters().get(SwitchCounter.ERRORS);
        r.schedule = ScenarioResult.schedules(installed, members);
        r.decisions = controller == null ? List.of() : controller.decisions();
        return r;
    }

    /** Per-worker counters and disagreeing rounds, for diagnosing a failed check. */
    public String diagnostics() {
        return SwitchSetup.diagnostics(engines, pipeline, deliveries, errors);
    }
}
