package io.serene.harness.cli;

import io.serene.training.data.Batches;
import io.serene.training.ComputeClock;
import io.serene.training.DjlModel;
import io.serene.training.data.FashionMnist;
import io.serene.training.data.GlobalBatch;
import io.serene.training.LrSchedule;
import io.serene.training.ModelCopies;
import io.serene.training.ModelKind;
import io.serene.training.RoundRecords;
import io.serene.training.StaleMomentum;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainDefaults;
import io.serene.training.TrainingLoop;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.UdpWorker;
import io.serene.worker.WorkerContext;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code serene worker}: one training worker (one JVM: PyTorch allows one gradient collector per
 * process): parses its options, loads its shard and the test set, joins the job through the
 * switch and runs the {@link TrainingLoop}.
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
                awaitJoin(worker);
                System.out.println("worker " + id + "/" + workers + ": " + kind + " with " + net.elements() + " parameters, shard of "
                    + shard.length + " images, " + total + " rounds, seed " + seed);
                System.out.flush();
                final GlobalBatch sizes = new GlobalBatch(batch, workers, rebalance);
                final ModelCopies copies = deferredEval ? ModelCopies.forRun(total, evalEvery, net.elements()) : null;
                final TrainingLoop.Options options = new TrainingLoop.Options(id, evalEvery, stale, profile, clock, progressLines,
                    rebalance, seed, timeoutSeconds, switchAddress, evalWhenTold ? toldToEvaluate : null);
                new TrainingLoop(worker, net, new Batches(dataset.train, shard, batch, sizes.max(), seed * 31 + id), sizes, log,
                    copies, testPixels, testLabels, total, options).run();
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

    /**
     * Reads standard input: the line 'evaluate' lets deferred evaluation start (--eval-when-told);
     * its end means the launcher is gone (--exit-with-parent: the JVM halts; otherwise evaluation
     * is let go, so nothing waits for a line that cannot come).
     */
    private void watchStdin() {
        final Thread watcher = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("evaluate")) {
                        toldToEvaluate.complete(null);
                    }
                }
            } catch (final IOException ignored) {
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

    private void awaitJoin(final UdpWorker worker) throws InterruptedException {
        try {
            worker.joined().get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (final TimeoutException ex) {
            throw new IllegalStateException("worker " + id + ": no join job " + job + " at " + switchAddress + " within "
                + timeoutSeconds + " s (is the switch at " + switchAddress + " running?)");
        } catch (final ExecutionException ex) {
            throw new IllegalStateException("worker " + id + ": join job " + job + " at " + switchAddress + " failed: "
                + ex.getCause().getMessage());
        }
    }
}
