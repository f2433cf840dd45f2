package io.serene.harness.cli;

import io.serene.training.Json;
import io.serene.harness.launch.TrainRun;
import io.serene.training.ModelKind;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainDefaults;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code serene train}: a data-parallel training job through the switch. The switch (and the
 * policy's controller) run in this process, each worker in its own; per-round records go to
 * {@code --out}, the summary to stdout and {@code --out}/summary.json.
 */
@Command(name = "train", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Trains a model data-parallel on Fashion-MNIST: a switch in this process, one worker process per worker, "
        + "synchronized by a sync config, schedule or policy, with injected stragglers.",
        "Writes DIR/workers/worker-I.jsonl and DIR/records.jsonl (one JSON line per worker and round: compute, injected and "
            + "waiting time, staleness, send and release time, loss, accuracy when evaluated) and DIR/summary.json (JCT, "
            + "time to the target accuracy, cumulative waiting, compute share, final accuracy, model hashes, mode switches)."})
public final class TrainCommand implements Callable<Integer> {
    @Option(names = "--workers", defaultValue = TrainDefaults.WORKERS, description = "Workers (one process each). Default: ${DEFAULT-VALUE}.")
    int workers;

    @Option(names = "--model", defaultValue = TrainDefaults.MODEL, description = "mlp (784-128-10) or cnn (LeNet-style). Default: ${DEFAULT-VALUE}.")
    String model;

    @Option(names = "--policy", defaultValue = TrainDefaults.POLICY, description = "Sync config or schedule (docs/sync.md): bsp, ssp:3, asp, "
        + "fastest:3, quorum:3, timeout:50, exclude:2+fold, 'bsp@0,ssp:3@100'. Default: ${DEFAULT-VALUE}.")
    String policy;

    @Option(names = "--policy-file", description = "A policy (docs/policy.md) whose controller switches the config while training "
        + "runs; replaces --policy.")
    Path policyFile;

    @Option(names = "--stragglers", defaultValue = TrainDefaults.STRAGGLERS, description = "Straggler profile (" + StragglerProfile.SYNTAX + "), "
        + "seeded, applied as extra compute time. Default: ${DEFAULT-VALUE}.")
    String stragglers;

    @Option(names = "--rounds", description = "Rounds (one batch per worker each).")
    Integer rounds;

    @Option(names = "--epochs", description = "Passes over each worker's shard (instead of --rounds). Default: 1 if neither is given.")
    Double epochs;

    @Option(names = "--batch", defaultValue = TrainDefaults.BATCH, description = "Batch size per worker. Default: ${DEFAULT-VALUE}.")
    int batch;

    @Option(names = "--rebalance", negatable = true, defaultValue = "true", fallbackValue = "true", description = "Workers keep a "
        + "round's samples near N x batch while rounds are released with fewer contributions (exclusion, fastest-k, timeouts): "
        + "their batch grows up to 2 x batch (serene worker --help). --no-rebalance: always batch. Default: on.")
    boolean rebalance;

    @Option(names = "--lr", defaultValue = TrainDefaults.LEARNING_RATE, description = "Learning rate. Default: ${DEFAULT-VALUE}.")
    float learningRate;

    @Option(names = "--momentum", defaultValue = TrainDefaults.MOMENTUM, description = "SGD momentum. Default: ${DEFAULT-VALUE}.")
    float momentum;

    @Option(names = "--lr-schedule", defaultValue = TrainDefaults.LR_SCHEDULE, description = "constant; cosine: the learning rate decays to "
        + "0 over the run's rounds along a half cosine; cooldown: constant, then down to 0 in a straight line over the last 20%% "
        + "of the rounds. Default: ${DEFAULT-VALUE}.")
    String lrSchedule;

    @Option(names = "--stale-momentum", defaultValue = TrainDefaults.STALE_MOMENTUM, description = "compensate: a round under a bound s > 0 "
        + "is applied with momentum max(0, m - s/(s+1)); fixed: always --momentum. Default: ${DEFAULT-VALUE}.")
    String staleMomentum;

    @Option(names = "--compute-clock", defaultValue = TrainDefaults.COMPUTE_CLOCK, description = "The compute time workers report to the switch "
        + "(slowdown(worker), lag): cpu: their training thread's processor time plus injected straggling, so a worker "
        + "preempted by the others on a shared host does not look slow; wall: elapsed time. Default: ${DEFAULT-VALUE}.")
    String computeClock;

    @Option(names = "--worker-jit", defaultValue = TrainDefaults.WORKER_JIT, description = "The worker processes' JIT: c1: the quick compiler "
        + "only (the workers share this host: with C2 they compile on the cores they train on for the whole run); tiered: "
        + "the JVM's default. Default: ${DEFAULT-VALUE}.")
    String workerJit;

    @Option(names = "--eval-every", defaultValue = TrainDefaults.EVAL_EVERY, description = "Test-set evaluation every E rounds (0: only at the end). "
        + "Default: ${DEFAULT-VALUE}.")
    int evalEvery;

    @Option(names = "--deferred-eval", negatable = true, defaultValue = "true", fallbackValue = "true", description = "Workers copy "
        + "the model at each evaluation round and evaluate the copies once all of them finished training, so evaluation takes "
        + "no time from training nor from JCT and time to accuracy (an accuracy is stamped with the time the model was held). "
        + "--no-deferred-eval: evaluate during training, inside the measured times. Default: on.")
    boolean deferredEval;

    @Option(names = "--target-accuracy", defaultValue = TrainDefaults.TARGET_ACCURACY, description = "Target test accuracy for the time to accuracy. "
        + "Default: ${DEFAULT-VALUE}.")
    double targetAccuracy;

    @Option(names = "--seed", defaultValue = TrainDefaults.SEED, description = "Seed of models, shards, batches and stragglers. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(names = "--out", description = "Directory for records and summary. Default: runs/train-<date>-<time>.")
    Path out;

    @Option(names = "--data", description = "Directory with the four Fashion-MNIST .gz files. Default: /usr/share/datasets/fashion-mnist "
        + "(apt-get install dataset-fashion-mnist).")
    Path data;

    @Option(names = "--control-port", defaultValue = "-1", description = "Serve the gRPC control service (serene control) on this "
        + "TCP port; -1: none. Default: ${DEFAULT-VALUE}.")
    int controlPort;

    @Option(names = "--timeout-seconds", defaultValue = TrainDefaults.TIMEOUT_SECONDS, description = "A worker gives up when a round does not complete in this "
        + "long. Default: ${DEFAULT-VALUE}.")
    int timeoutSeconds;

    @Option(names = "--json", description = "End with the summary as one JSON line.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        final TrainRun.Settings settings = new TrainRun.Settings();
        settings.workers = workers;
        settings.model = ModelKind.parse(model);
        if (policyFile != null) {
            settings.policy = PolicyCommand.load(policyFile);
            settings.policyLabel = policyFile.getFileName().toString();
        } else {
            settings.sync = policy;
        }
        settings.stragglers = stragglers;
        settings.rounds = rounds;
        settings.epochs = rounds == null && epochs == null ? Double.valueOf(1) : epochs;
        settings.batch = batch;
        settings.rebalance = rebalance;
        settings.learningRate = learningRate;
        settings.momentum = momentum;
        settings.lrSchedule = lrSchedule;
        settings.staleMomentum = staleMomentum;
        settings.computeClock = computeClock;
        settings.workerJit = workerJit;
        settings.evalEvery = evalEvery;
        settings.deferredEval = deferredEval;
        settings.targetAccuracy = targetAccuracy;
        settings.seed = seed;
        settings.out = out != null ? out : defaultOut("train");
        settings.data = data;
        settings.controlPort = controlPort;
        settings.timeoutSeconds = timeoutSeconds;
        final Map<String, Object> summary = new TrainRun(settings, System.out).run();
        TrainRun.print(System.out, summary);
        System.out.println("summary in " + settings.out.resolve("summary.json"));
        if (json) {
            System.out.println(Json.write(summary));
        }
        return 0;
    }

    /** runs/NAME-yyyyMMdd-HHmmss under the working directory. */
    static Path defaultOut(final String name) {
        return Path.of("runs", name + "-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }
}
