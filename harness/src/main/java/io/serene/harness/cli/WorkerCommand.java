package io.serene.harness.cli;

import io.serene.harness.Json;
import io.serene.harness.launch.ComputeClock;
import io.serene.harness.launch.ModelCopies;
import io.serene.harness.launch.RoundRecords;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncRules;
import io.serene.training.Batches;
import io.serene.training.DjlModel;
import io.serene.training.FashionMnist;
import io.serene.training.GlobalBatch;
import io.serene.training.LrSchedule;
import io.serene.training.ModelKind;
import io.serene.training.StaleMomentum;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainDefaults;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.Aggregate;
import io.serene.worker.UdpWorker;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerEngine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code serene worker}: one training worker (one JVM: PyTorch allows one gradient collector per
 * process). Each round: a batch of its seeded shard (B images, or up to 2 B while rounds are
 * released with fewer contributions, so a round keeps about N x B: {@link GlobalBatch}), forward
 * and backward, the flat gradient through the switch, the aggregate averaged by contributor count
 * back into the model, SGD with momentum. Under a bound s the worker computes round r once round r - 1 - s is released and
 * its aggregate applied, applying every later aggregate that has already arrived first (under BSP:
 * exactly round r - 1's, so every worker steps through the same models). A worker that finds
 * round r released without it (excluded, or beyond a quorum), before or while it computed, sends
 * nothing for it and takes its aggregate, catching up with the others; the gradient it computed goes
 * to the first round still open (late chunks are still folded or dropped, as the config says).
 */
@Command(name = "worker", mixinStandardHelpOptions = true,
    description = "Runs one training worker against a switch (serene switch) on Fashion-MNIST.")
public final class WorkerCommand implements Callable<Integer> {
    @Option(names = "--switch", defaultValue = "127.0.0.1:7000", description = "The switch's UDP address HOST:PORT. Default: ${DEFAULT-VALUE}.")
    String switchAddress;

    @Option(names = "--job", defaultValue = "1", description = "Job id. Default: ${DEFAULT-VALUE}.")
    int job;

    @Option(names = "--id", required = true, description = "This worker's id, 0..N-1.")
    int id;

    @Option(names = "--workers", required = true, description = "Workers in the job (N).")
    int workers;

    @Option(names = "--model", defaultValue = TrainDefaults.MODEL, description = "mlp or cnn. Default: ${DEFAULT-VALUE}.")
    String model;

    @Option(names = "--rounds", description = "Rounds (one batch each). Default: 200, or what --epochs gives.")
    Integer rounds;

    @Option(names = "--epochs", description = "Passes over this worker's shard instead of --rounds: rounds = E x ceil(shard / batch).")
    Double epochs;

    @Option(names = "--batch", defaultValue = TrainDefaults.BATCH, description = "Batch size. Default: ${DEFAULT-VALUE}.")
    int batch;

    @Option(names = "--rebalance", negatable = true, defaultValue = "true", fallbackValue = "true", description = "Keep a "
        + "round's samples near N x batch when rounds are released with fewer contributions (exclusion, fastest-k, timeouts): "
        + "the next batch is batch x N / the mean contributions of the last " + GlobalBatch.WINDOW + " applied rounds, at most "
        + "2 x batch (under BSP always batch). --no-rebalance: always batch. Default: on.")
    boolean rebalance;

    @Option(names = "--lr", defaultValue = TrainDefaults.LEARNING_RATE, description = "Learning rate. Default: ${DEFAULT-VALUE}.")
    float learningRate;

    @Option(names = "--momentum", defaultValue = TrainDefaults.MOMENTUM, description = "SGD momentum. Default: ${DEFAULT-VALUE}.")
    float momentum;

    @Option(names = "--lr-schedule", defaultValue = TrainDefaults.LR_SCHEDULE, description = "constant; cosine: the learning rate decays to "
        + "0 over the run's rounds along a half cosine; cooldown: constant, then down to 0 in a straight line over the last 20%% "
        + "of the rounds (by applied step, the same on every worker). Default: ${DEFAULT-VALUE}.")
    String lrSchedule;

    @Option(names = "--stale-momentum", defaultValue = TrainDefaults.STALE_MOMENTUM, description = "compensate: a round computed under a "
        + "bound s > 0 is applied with momentum max(0, m - s/(s+1)) (asynchrony acts as momentum of its own; the bound is "
        + "agreed, so every worker takes the same step); fixed: always --momentum. Default: ${DEFAULT-VALUE}.")
    String staleMomentum;

    @Option(names = "--compute-clock", defaultValue = TrainDefaults.COMPUTE_CLOCK, description = "The compute time this worker reports to the switch "
        + "(what slowdown(worker) and lag read): cpu: the processor time its training thread spent on the gradient, plus any "
        + "injected straggling; time the OS gave to other processes is not in it, so with more worker processes than cores a "
        + "preempted worker does not look slow (on a host of its own the two agree); wall: elapsed time, preemption included "
        + "(a worker slowed by a co-located job shows as slow). Records keep the elapsed time either way. Default: ${DEFAULT-VALUE}.")
    String computeClock;

    @Option(names = "--eval-every", defaultValue = TrainDefaults.EVAL_EVERY,
        description = "Evaluate on the test set every E rounds (0: only at the end). Default: ${DEFAULT-VALUE}.")
    int evalEvery;

    @Option(names = "--deferred-eval", negatable = true, defaultValue = "true", fallbackValue = "true", description = "Copy the "
        + "model at each evaluation round (with the time) and evaluate the copies on the test set after training, so evaluation "
        + "takes no time from training nor from the measured times (every worker holds the same sequence of models). "
        + "--no-deferred-eval: evaluate during training, inside the measured times. Default: on.")
    boolean deferredEval;

    @Option(names = "--data", description = "Directory with the four Fashion-MNIST .gz files. Default: " + "/usr/share/datasets/fashion-mnist")
    Path data;

    @Option(names = "--seed", defaultValue = TrainDefaults.SEED, description = "Seed of the model, the shards and the batches. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(names = "--stragglers", defaultValue = TrainDefaults.STRAGGLERS, description = "Straggler profile, as in serene sim "
        + "(" + StragglerProfile.SYNTAX + "): this worker "
        + "sleeps (F - 1) times its measured compute time after each gradient. Default: ${DEFAULT-VALUE}.")
    String stragglers;

    @Option(names = "--timeout-seconds", defaultValue = TrainDefaults.TIMEOUT_SECONDS,
        description = "Give up if the switch does not answer a round for this long. Default: ${DEFAULT-VALUE}.")
    int timeoutSeconds;

    @Option(names = "--records", description = "Write one JSON line per round to this file (compute, waiting, staleness, "
        + "release time, loss, accuracy when evaluated).")
    Path records;

    @Option(names = "--epoch-ms", description = "Wall-clock origin (ms since 1970) of the times in records and results; "
        + "serene train passes its own so all workers share one time axis. Default: when this worker starts.")
    Long epochMs;

    @Option(names = "--progress-lines", hidden = true, description = "Print '@progress ROUND LOSS' after every round (for serene train).")
    boolean progressLines;

    @Option(names = "--exit-with-parent", hidden = true, description = "Exit when standard input closes (serene train: no orphans).")
    boolean exitWithParent;

    @Option(names = "--eval-when-told", hidden = true, description = "With deferred evaluation: print '@trained' after training "
        + "and evaluate once a line 'evaluate' arrives on standard input (serene train: once every worker trained, so evaluating "
        + "takes no processor from a worker still training).")
    boolean evalWhenTold;

    /** Completed by the line 'evaluate' on standard input (or its end), under --eval-when-told. */
    private final CompletableFuture<Void> toldToEvaluate = new CompletableFuture<>();

    /** Model copies for deferred evaluation at most take this much heap (the workers run with -Xmx512m). */
    public static final long COPY_BUDGET_BYTES = 192L << 20;

    @Override
    public Integer call() throws Exception {
        final ModelKind kind = ModelKind.parse(model);
        if (workers <= 0 || id < 0 || id >= workers) {
            throw new IllegalArgumentException("--id must be in 0.." + (workers - 1) + " and --workers positive, were " + id + " and " + workers);
        }
        if (batch <= 0 || evalEvery < 0 || (rounds != null && rounds <= 0) || (epochs != null && !(epochs > 0))) {
            throw new IllegalArgumentException("--rounds, --epochs and --batch must be positive and --eval-every >= 0");
        }
        if (rounds != null && epochs != null) {
            throw new IllegalArgumentException("give --rounds or --epochs, not both");
        }
        final LrSchedule schedule = LrSchedule.parse("--lr-schedule", lrSchedule);
        final StaleMomentum stale = StaleMomentum.parse("--stale-momentum", staleMomentum);
        final ComputeClock clock = ComputeClock.parse("--compute-clock", computeClock);
        if (exitWithParent || evalWhenTold) {
            watchStdin();
        }
        final StragglerProfile profile = StragglerProfile.parse(stragglers, seed, workers);
        final InetSocketAddress parsed = Addresses.parse("--switch", switchAddress);
        final InetSocketAddress target = new InetSocketAddress(parsed.getHostString(), parsed.getPort());
        final FashionMnist dataset = FashionMnist.load(data != null ? data : FashionMnist.DEBIAN_DIR);
        final int[] shard = dataset.train.shard(id, workers, seed);
        final int total = roundsFor(shard.length, batch, rounds, epochs);
        final float[] testPixels = new float[dataset.test.size() * DjlModel.PIXELS];
        final int[] testLabels = new int[dataset.test.size()];
        for (int i = 0; i < testLabels.length; i++) {
            dataset.test.image(i, testPixels, i * DjlModel.PIXELS);
            testLabels[i] = dataset.test.label(i);
        }
        try (DjlModel net = new DjlModel(kind, batch, learningRate, momentum, seed);
             UdpTransport transport = UdpTransport.create(1, true);
             RoundRecords log = new RoundRecords(id, total, records, epochMs)) {
            schedule.applyTo(net, total);
            final UdpWorker worker = UdpWorker.start(new WorkerContext().jobId(job).workerId(id).workers(workers)
                .elementsPerRound(net.elements()), target, new InetSocketAddress(0), transport, UdpOptions.defaults(),
                ex -> System.err.println("worker " + id + " error: " + ex));
            try {
                await(worker.joined(), "join job " + job + " at " + switchAddress);
                System.out.println("worker " + id + "/" + workers + ": " + kind + " with " + net.elements() + " parameters, shard of "
                    + shard.length + " images, " + total + " rounds, seed " + seed);
                System.out.flush();
                final GlobalBatch sizes = new GlobalBatch(batch, workers, rebalance);
                final ModelCopies copies = deferredEval ? ModelCopies.forRun(total, evalEvery, net.elements()) : null;
                train(worker, net, new Batches(dataset.train, shard, batch, sizes.max(), seed * 31 + id), sizes, profile, total,
                    log, testPixels, testLabels, copies, clock, stale);
            } finally {
                worker.close();
            }
        }
        return 0;
    }

    /** Rounds for a run: --rounds, or E passes over the shard, or 200. */
    public static int roundsFor(final int shard, final int batch, final Integer rounds, final Double epochs) {
        if (rounds != null) {
            return rounds;
        }
        if (epochs == null) {
            return 200;
        }
        final long perEpoch = (shard + batch - 1) / batch;
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, Math.round(epochs * perEpoch)));
    }

    private void train(final UdpWorker worker, final DjlModel net, final Batches batches, final GlobalBatch sizes,
                       final StragglerProfile profile, final int total, final RoundRecords log, final float[] testPixels,
                       final int[] testLabels, final ModelCopies copies, final ComputeClock clock, final StaleMomentum stale)
        throws Exception {
        final float[] averaged = new float[net.elements()];
        final ArrayDeque<CompletableFuture<Aggregate>> pending = new ArrayDeque<>();
        final int[] bounds = new int[total];
        // a gradient computed but not sent yet: its round was released while it was computed
        float[] held = null;
        int heldBatch = 0;
        int heldRound = -1;
        long heldNs = 0;
        long heldReportedNs = 0;
        long heldExtraNs = 0;
        int heldApplied = 0;
        float heldLoss = Float.NaN;
        long lastComputeNs = 0;
        final long start = System.nanoTime();
        log.start();
        int nextToApply = 0;
        for (int round = 0; round < total; round++) {
            log.beginRound(round);
            await(worker.awaitClearance(round), "clearance for round " + round);
            log.waited(round, System.nanoTime() - log.roundStartNs(round));
            final int r = round;
            final int bound = await(worker.call(e -> e.boundFor(r)), "the bound of round " + round);
            bounds[round] = bound;
            // required: every round up to r - 1 - s; then whatever else already arrived
            while (!pending.isEmpty() && (nextToApply <= SyncRules.gateRound(round, bound) || pending.peek().isDone())) {
                final int next = nextToApply++;
                applyNext(pending, next, stale.momentum(net.momentum(), bounds[next]), net, averaged, sizes, log, total, testPixels, testLabels, copies);
            }
            if (held == null && released(worker) < round) {
                final long c0 = clock.nanos();
                final long t0 = System.nanoTime();
                heldBatch = sizes.next();
                held = net.computeGradient(batches.next(heldBatch), batches.labels()).clone();
                heldNs = System.nanoTime() - t0;
                heldReportedNs = clock.nanos() - c0;
                // the injected straggling stays a multiple of the elapsed time, whichever clock is reported
                heldExtraNs = Math.max(0, (long) ((profile.factor(id, round) - 1) * heldNs));
                if (heldExtraNs > 0) {
                    LockSupport.parkNanos(heldExtraNs);
                }
                heldApplied = nextToApply;
                heldRound = round;
                heldLoss = net.lastLoss();
            }
            if (released(worker) >= round) {
                // released without this worker (it is excluded, or beyond a quorum), before or while it
                // computed: a contribution would only be late; take the aggregate, and keep the gradient
                // for the first round still open (fold) or drop it (drop: the next open round gets a
                // gradient computed fresh, on the model as it is then)
                if (held != null && heldRound == round && lateMode(worker, round) == LateMode.DROP) {
                    log.dropped(round, heldBatch, heldNs, heldExtraNs, round - heldApplied);
                    lastComputeNs = heldReportedNs + heldExtraNs;
                    // the next gradient's computation sets the held fields anew
                    held = null;
                } else {
                    log.skipped(round, round - nextToApply);
                }
                // reports its last compute time: it is still that slow
                pending.add(worker.skip(round, lastComputeNs).whenComplete((a, e) -> log.released(r)));
            } else {
                log.computed(round, heldBatch, heldNs, heldExtraNs, round - heldApplied, heldLoss);
                lastComputeNs = heldReportedNs + heldExtraNs;
                pending.add(worker.allreduce(round, held, lastComputeNs).whenComplete((a, e) -> log.released(r)));
                held = null;
                heldNs = 0;
                heldReportedNs = 0;
                heldExtraNs = 0;
            }
            if (progressLines) {
                System.out.printf(Locale.ROOT, "@progress %d %.5f%n", round + 1, net.lastLoss());
            }
            if (evaluatedAt(round, total) && round + 1 < total) {
                if (copies != null) {
                    copies.take(net, round);
                } else {
                    final double accuracy = evaluate(net, log, round, testPixels, testLabels);
                    printEvaluated(round, net.lastLoss(), accuracy);
                }
            }
        }
        while (!pending.isEmpty()) {
            final int next = nextToApply++;
            applyNext(pending, next, stale.momentum(net.momentum(), bounds[next]), net, averaged, sizes, log, total, testPixels, testLabels, copies);
        }
        final long endNs = System.nanoTime();
        final double seconds = (endNs - start) / 1e9;
        final double endSeconds = log.seconds(endNs);
        final String modelHash = net.hash();
        final float finalLoss = net.lastLoss();
        if (copies != null) {
            evaluateCopies(net, copies, log, total, endNs, testPixels, testLabels);
        }
        final double accuracy = log.finalAccuracy();
        System.out.printf(Locale.ROOT, "worker %d done: %d rounds in %.2f s (compute %.2f s, injected straggling %.2f s, waiting %.2f s), "
            + "loss %.4f, accuracy %.4f, model %s%n", id, total, seconds, log.computeNs() / 1e9, log.injectedNs() / 1e9,
            log.waitingNs() / 1e9, finalLoss, accuracy, modelHash);
        final Map<String, Object> json = new LinkedHashMap<>();
        json.put("worker", id);
        json.put("rounds", total);
        json.put("seconds", seconds);
        json.put("startSeconds", log.startSeconds());
        json.put("endSeconds", endSeconds);
        json.put("computeSeconds", log.computeNs() / 1e9);
        json.put("injectedSeconds", log.injectedNs() / 1e9);
        json.put("skippedRounds", log.skippedRounds());
        json.put("droppedRounds", log.droppedRounds());
        json.put("samples", log.samples());
        json.put("rebalance", rebalance);
        json.put("waitingSeconds", log.waitingNs() / 1e9);
        json.put("evaluationSeconds", log.evaluationNs() / 1e9);
        json.put("deferredEvaluation", copies != null);
        json.put("stragglers", profile.toString());
        json.put("finalLoss", (double) finalLoss);
        json.put("finalAccuracy", accuracy);
        json.put("modelHash", modelHash);
        json.put("seed", seed);
        System.out.println(Json.write(json));
        System.out.flush();
    }

    /**
     * Deferred evaluation, after training (under --eval-when-told once the launcher says every
     * worker trained): the final model first, then each copy; then the records of the evaluated
     * rounds (the others were written as their rounds were applied). An accuracy is stamped with
     * the time the worker held the model.
     */
    private void evaluateCopies(final DjlModel net, final ModelCopies copies, final RoundRecords log, final int total,
                                final long endNs, final float[] testPixels, final int[] testLabels)
        throws InterruptedException, java.io.IOException {
        if (evalWhenTold) {
            System.out.println("@trained");
            System.out.flush();
            try {
                toldToEvaluate.get();
            } catch (final ExecutionException ex) {
                throw new IllegalStateException(ex.getCause());
            }
        }
        evaluateHeld(net, log, total - 1, testPixels, testLabels, endNs);
        for (int i = 0; i < copies.size(); i++) {
            net.loadParameters(copies.parameters(i));
            final int round = copies.round(i);
            final double accuracy = evaluateHeld(net, log, round, testPixels, testLabels, copies.takenNs(i));
            printEvaluated(round, copies.loss(i), accuracy);
        }
        for (int round = 0; round < total; round++) {
            if (evaluatedAt(round, total)) {
                log.write(round);
            }
        }
    }

    private void printEvaluated(final int round, final float loss, final double accuracy) {
        System.out.printf(Locale.ROOT, "worker %d round %d loss %.4f accuracy %.4f%n", id, round + 1, loss, accuracy);
        System.out.flush();
    }

    private int released(final UdpWorker worker) throws InterruptedException {
        return await(worker.call(WorkerEngine::releasedRound), "the released round");
    }

    private LateMode lateMode(final UdpWorker worker, final int round) throws InterruptedException {
        return await(worker.call(e -> e.lateModeFor(round)), "the late mode of round " + round);
    }

    /**
     * Waits for the oldest pending aggregate (round {@code round}), steps the model with its
     * average and writes the round's record, unless the round is evaluated after training; the
     * last round is evaluated here when evaluation is not deferred.
     */
    private void applyNext(final ArrayDeque<CompletableFuture<Aggregate>> pending, final int round, final float momentum, final DjlModel net,
                           final float[] averaged, final GlobalBatch sizes, final RoundRecords log, final int total,
                           final float[] testPixels, final int[] testLabels, final ModelCopies copies)
        throws InterruptedException, java.io.IOException {
        final long t0 = System.nanoTime();
        final Aggregate aggregate = await(pending.poll(), "the aggregate of round " + round);
        log.waited(round, System.nanoTime() - t0);
        aggregate.averageInto(averaged);
        sizes.applied(aggregate.contributorCount());
        aggregate.release();
        net.applyGradient(averaged, momentum);
        if (copies == null && round == total - 1) {
            evaluate(net, log, round, testPixels, testLabels);
        }
        if (copies == null || !evaluatedAt(round, total)) {
            log.write(round);
        }
    }

    /** Whether the model is evaluated at {@code round}: every --eval-every rounds, and at the last. */
    private boolean evaluatedAt(final int round, final int total) {
        return round == total - 1 || (evalEvery > 0 && (round + 1) % evalEvery == 0);
    }

    /** Test accuracy of the model now, recorded for the round at the time it was evaluated. */
    private static double evaluate(final DjlModel net, final RoundRecords log, final int round, final float[] testPixels,
                                   final int[] testLabels) {
        final double accuracy = score(net, log, testPixels, testLabels);
        log.evaluated(round, accuracy, System.nanoTime());
        return accuracy;
    }

    /** Test accuracy of the model, recorded for the round at {@code heldNs} (when the worker held this model). */
    private static double evaluateHeld(final DjlModel net, final RoundRecords log, final int round, final float[] testPixels,
                                       final int[] testLabels, final long heldNs) {
        final double accuracy = score(net, log, testPixels, testLabels);
        log.evaluated(round, accuracy, heldNs);
        return accuracy;
    }

    /** Test accuracy of the model; the time it took counts as evaluation. */
    private static double score(final DjlModel net, final RoundRecords log, final float[] testPixels, final int[] testLabels) {
        final long t0 = System.nanoTime();
        final double accuracy = net.accuracy(testPixels, testLabels);
        log.evaluating(System.nanoTime() - t0);
        return accuracy;
    }

    /**
     * Reads standard input: the line 'evaluate' lets deferred evaluation start (--eval-when-told);
     * its end means the launcher is gone (--exit-with-parent: the JVM halts; otherwise evaluation
     * is let go, so nothing waits for a line that cannot come).
     */
    private void watchStdin() {
        final Thread watcher = new Thread(() -> {
            try (java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("evaluate")) {
                        toldToEvaluate.complete(null);
                    }
                }
            } catch (final java.io.IOException ignored) {
                // treated as the end
            }
            if (exitWithParent) {
                System.err.println("worker " + id + ": launcher gone, stopping");
                Runtime.getRuntime().halt(3);
            }
            toldToEvaluate.complete(null);
        }, "stdin-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    private <T> T await(final java.util.concurrent.CompletableFuture<T> future, final String what) throws InterruptedException {
        try {
            return future.get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (final TimeoutException ex) {
            throw new IllegalStateException("worker " + id + ": no " + what + " within " + timeoutSeconds + " s (is the switch at "
                + switchAddress + " running?)");
        } catch (final ExecutionException ex) {
            throw new IllegalStateException("worker " + id + ": " + what + " failed: " + ex.getCause().getMessage());
        }
    }
}
