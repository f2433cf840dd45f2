package io.serene.harness.cli;

import io.serene.protocol.JobKeys;
import io.serene.protocol.JoinPacket;
import io.serene.training.Checkpoint;
import io.serene.training.CheckpointDir;
import io.serene.training.DjlModel;
import io.serene.training.LoopOptions;
import io.serene.training.ModelCopies;
import io.serene.training.RoundRecords;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainSettings;
import io.serene.training.TrainingLoop;
import io.serene.training.data.Batches;
import io.serene.training.data.FashionMnist;
import io.serene.training.data.GlobalBatch;
import io.serene.worker.RunClock;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerNode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * {@code serene worker}: one training worker (one JVM: PyTorch allows one gradient collector per
 * process): parses its options, loads its shard and the test set, joins the job through the
 * switch and runs the {@link TrainingLoop}.
 */
@Command(name = "worker", mixinStandardHelpOptions = true,
    description = "Runs one training worker against a switch (serene switch) on Fashion-MNIST.")
public final class WorkerCommand implements Callable<Integer> {
    /** Passes run on blank images before a job on a modelled device starts (DjlModel#warmUpSteps). */
    private static final int WARM_UP_STEPS = 20;

    @Mixin
    TrainingOptions training = new TrainingOptions();

    @Mixin
    CheckpointOptions checkpoints = new CheckpointOptions();

    @Mixin
    SecretOption secret = new SecretOption();

    @Option(names = "--checkpoint-dir", description = "Directory of this worker's checkpoints (worker-I-after-N.ckpt; needed by "
        + "--checkpoint-every and --resume-after).")
    Path checkpointDir;

    @Option(names = "--resume-after", description = "Go on from this worker's checkpoint after round N in --checkpoint-dir, as a "
        + "new job on the switch whose round 0 is the run's round N (every worker of the job resumes after the same round).")
    Integer resumeAfter;

    @Option(names = "--rejoin", description = "Join by rebuilding the job from the workers' checkpoints (a worker restarted "
        + "while its job runs, or after the switch restarted): this worker offers the rounds any worker has checkpoints after in "
        + "--checkpoint-dir (where it has none of its own, it takes a peer's model: every worker applies the same aggregates); "
        + "once every worker joined, the job goes on after the most rounds all of them can go on after, the others going back "
        + "there by themselves (they need --checkpoint-every).")
    boolean rejoin;

    @Option(names = "--switch", defaultValue = "127.0.0.1:7000", description = "The switch's UDP address HOST:PORT, or shm:DIRECTORY "
        + "for a switch on this host serving shared memory (serene switch --shm DIRECTORY); "
        + "unset, from SERENE_SWITCH or MASTER_ADDR:MASTER_PORT. Default: ${DEFAULT-VALUE}.")
    String switchAddress;

    @Option(names = "--job", defaultValue = "1", description = "Job id; unset, from SERENE_JOB. Default: ${DEFAULT-VALUE}.")
    int job;

    @Option(names = "--id", description = "This worker's id, 0..N-1; unset, from RANK, SLURM_PROCID or JOB_COMPLETION_INDEX (required one way or the other).")
    Integer id;

    @Option(names = "--workers", description = "Workers in the job (N); unset, from WORLD_SIZE or SLURM_NTASKS (required one way or the other).")
    Integer workers;

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

    @Option(names = "--evaluation-share", hidden = true, paramLabel = "DIR", description = "With deferred evaluation: share the "
        + "evaluations of bit-identical models with the run's other workers on this host through DIR (serene train: each model "
        + "evaluated once, not once per worker).")
    Path evaluationShare;

    @Option(names = "--start-when-told", hidden = true, description = "Print '@joined' once joined and start training once a line "
        + "'start' arrives on standard input (serene train: once every worker joined, so no worker trains alone while another JVM "
        + "still starts).")
    boolean startWhenTold;

    /** Completed by the line 'start' on standard input (or its end), under --start-when-told. */
    private final CompletableFuture<Void> toldToStart = new CompletableFuture<>();

    /** Completed by the line 'evaluate' on standard input (or its end), under --eval-when-told. */
    private final CompletableFuture<Void> toldToEvaluate = new CompletableFuture<>();

    @Override
    public Integer call() throws Exception {
        final TrainSettings t = training.settings();
        Defaults.requireMember("serene worker", id, workers);
        final int every = checkpoints.every();
        if ((every > 0 || resumeAfter != null || rejoin) && checkpointDir == null) {
            throw new IllegalArgumentException("--checkpoint-every, --resume-after and --rejoin need --checkpoint-dir");
        }
        if (rejoin && resumeAfter != null) {
            throw new IllegalArgumentException("--rejoin agrees with the other workers on the round to go on after; --resume-after "
                + "names one: give one of them");
        }
        Checkpoint resume = resumeAfter == null ? null : readCheckpoint(checkpointDir, id, resumeAfter);
        final JobKeys.WorkerKey key = secret.keyOf(job, id);
        if (exitWithParent || evalWhenTold || startWhenTold) {
            watchStdin();
        }
        final StragglerProfile profile = t.profile(workers);
        final FashionMnist dataset = FashionMnist.load(t.data());
        final int[] shard = dataset.train.shard(id, workers, t.seed());
        final int total = t.roundsFor(shard.length);
        final float[] testPixels = dataset.test.allImages();
        final int[] testLabels = dataset.test.allLabels();
        try (DjlModel net = new DjlModel(t.model(), t.batch(), t.learningRate(), t.momentum(), t.seed());
             WorkerNode node = WorkerNode.to("--switch", switchAddress);
             RoundRecords log = new RoundRecords(id, total, records, epochMs, t.device().modelled())) {
            t.lrSchedule().applyTo(net, total);
            final Function<Supplier<int[]>, WorkerHost> connect = offers -> {
                final WorkerContext context = new WorkerContext().link(t.link()).jobId(job).key(key).workerId(id).workers(workers)
                    .elementsPerRound(net.elements()).rebuild(offers).maxJoinAttempts(rejoinAttempts(t.timeoutSeconds(), offers));
                return node.connect(context, ex -> System.err.println("worker " + id + " error: " + ex));
            };
            // the connection in use: a job the switch lost is joined again on a new one (TrainingLoop.recover)
            // read anew for every JOIN: the others' checkpoints move on while the rebuilt job waits for them
            final Supplier<int[]> offered = rejoin ? () -> rejoinOffers(checkpointDir, id, workers) : null;
            if (t.device().modelled()) {
                // warm before the clock starts: a cold first step would overrun its modelled time
                net.warmUpSteps(t.batch(), WARM_UP_STEPS);
            }
            final WorkerHost[] live = {connect.apply(offered)};
            try {
                node.awaitJoin(live[0], id, job, t.timeoutSeconds());
                if (rejoin) {
                    final int first = live[0].call(e -> e.firstRound()).get(t.timeoutSeconds(), TimeUnit.SECONDS);
                    resume = first == 0 ? null : Checkpoint.forRejoin(checkpointDir, id, workers, first);
                    System.out.printf(Locale.ROOT, "worker %d: rejoined, the job goes on after round %d (offered %s)%n", id, first,
                        Arrays.toString(offered.get()));
                    CheckpointDir.damaged(checkpointDir, workers).forEach(d -> System.out.println("worker " + id + ": passed over " + d));
                }
                if (startWhenTold) {
                    System.out.println("@joined");
                    System.out.flush();
                    toldToStart.get();
                }
                System.out.println("worker " + id + "/" + workers + ": " + t.model() + " with " + net.elements() + " parameters, shard of "
                    + shard.length + " images, " + total + " rounds, seed " + t.seed());
                System.out.flush();
                final GlobalBatch sizes = new GlobalBatch(t.batch(), workers, t.rebalance());
                final ModelCopies copies = t.deferredEval() ? ModelCopies.forRun(total, t.evalEvery(), net.elements()) : null;
                final LoopOptions options = new LoopOptions(id, t, profile, progressLines, switchAddress,
                    evalWhenTold ? toldToEvaluate : null, checkpointDir, every, resume, rounds -> {
                        live[0] = connect.apply(() -> rounds);
                        node.awaitJoin(live[0], id, job, t.timeoutSeconds());
                        return live[0];
                    }, evaluationShare, RunClock.HOST);
                new TrainingLoop(live[0], net, () -> Batches.ofWorker(dataset.train, id, workers, t.batch(), sizes.max(), t.seed()), sizes,
                    log, copies, testPixels, testLabels, total, options).run();
            } finally {
                live[0].close();
            }
        }
        return 0;
    }

    /**
     * Reads standard input: the line 'start' lets training start (--start-when-told), the line
     * 'evaluate' lets deferred evaluation start (--eval-when-told);
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
                    } else if (line.trim().equals("start")) {
                        toldToStart.complete(null);
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
            toldToStart.complete(null);
        }, "stdin-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    /**
     * JOIN attempts (100 ms apart): a plain JOIN the default budget; a REBUILD JOIN, whose job forms only
     * once every worker is back, for as long as the worker waits for anything (--timeout-seconds).
     */
    private static int rejoinAttempts(final int timeoutSeconds, final Supplier<int[]> offers) {
        return offers == null ? new WorkerContext().maxJoinAttempts() : Math.max(50, timeoutSeconds * 10);
    }

    /** {@link Checkpoint#rejoinOffers}, unchecked (read on the engine's thread for each JOIN). */
    private static int[] rejoinOffers(final Path dir, final int w, final int workers) {
        try {
            return CheckpointDir.rejoinOffers(dir, w, workers, JoinPacket.MAX_OFFERS);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Worker w's checkpoint after round n, or an error naming what is missing and what is there. */
    private static Checkpoint readCheckpoint(final Path dir, final int w, final int n) throws IOException {
        final Path file = Checkpoint.file(dir, w, n);
        if (!Files.exists(file)) {
            throw new IllegalArgumentException("--resume-after " + n + ": no checkpoint " + file + " (worker " + w + " has checkpoints after "
                + "rounds " + CheckpointDir.rounds(dir, w) + ")");
        }
        return Checkpoint.read(file);
    }
}
