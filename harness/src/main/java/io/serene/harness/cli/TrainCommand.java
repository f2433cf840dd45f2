package io.serene.harness.cli;

import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyParser;
import io.serene.launch.RunSettings;
import io.serene.launch.RunSummary;
import io.serene.launch.TrainRun;
import io.serene.training.Json;
import io.serene.training.TrainDefaults;
import io.serene.training.WorkerJit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
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
    @Mixin
    TrainingOptions training = new TrainingOptions();

    @Option(names = "--workers", defaultValue = TrainDefaults.WORKERS, description = "Workers (one process each). Default: ${DEFAULT-VALUE}.")
    int workers;

    @Option(names = "--policy", defaultValue = TrainDefaults.POLICY, description = "Sync config or schedule (docs/sync.md): bsp, ssp:3, asp, "
        + "fastest:3, quorum:3, timeout:50, exclude:2+fold, 'bsp@0,ssp:3@100'; or auto: the controller chooses the config from what it measures "
        + "(docs/policy.md). Default: ${DEFAULT-VALUE}.")
    String policy;

    @Option(names = "--policy-file", description = "A policy (docs/policy.md) whose controller switches the config while training "
        + "runs; replaces --policy.")
    Path policyFile;

    @Option(names = "--worker-jit", defaultValue = TrainDefaults.WORKER_JIT, description = "The worker processes' JIT: c1: the quick compiler "
        + "only (the workers share this host: with C2 they compile on the cores they train on for the whole run); tiered: "
        + "the JVM's default. Default: ${DEFAULT-VALUE}.")
    String workerJit;

    @Option(names = "--target-accuracy", defaultValue = TrainDefaults.TARGET_ACCURACY, description = "Target test accuracy for the time to accuracy. "
        + "Default: ${DEFAULT-VALUE}.")
    double targetAccuracy;

    @Option(names = "--out", description = "Directory for records and summary. Default: runs/train-<date>-<time>.")
    Path out;

    @Option(names = "--control-port", defaultValue = "-1", description = "Serve the gRPC control service (serene control) on this "
        + "TCP port; -1: none. Default: ${DEFAULT-VALUE}.")
    int controlPort;

    @Mixin
    MonitorOptions monitorOptions = new MonitorOptions();

    @Option(names = "--link", defaultValue = "udp", description = "How the workers reach the switch on this host: udp (127.0.0.1) or "
        + "shm (shared-memory rings under /dev/shm). Default: ${DEFAULT-VALUE}.")
    String link;

    @Option(names = "--switch", defaultValue = "java", description = "The switch's data plane: java (the Java pipeline) or xdp "
        + "(its DATA path as an XDP program in this host's kernel, each worker in a network namespace behind a port of it; root, "
        + "clang and libbpf-dev; docs/xdp.md). Default: ${DEFAULT-VALUE}.")
    String dataPlane;

    @Option(names = "--faults", defaultValue = "none", description = "Faults to inject, comma-separated: kill:W@R kills worker W's "
        + "process once round R is released (the others go on if the sync config lets them; the summary names each failure); "
        + "restart:W@R brings it back once round R is released or as soon as the job waits for it, and switch-restart@R makes "
        + "the switch lose its state once round R is released: either relaunches the job from the newest checkpoint every worker "
        + "holds (--checkpoint-every; from the start without). E.g. kill:1@60,restart:1@80. Default: ${DEFAULT-VALUE}.")
    String faults;

    @Mixin
    CheckpointOptions checkpoints = new CheckpointOptions();

    @Option(names = "--max-restarts", defaultValue = "0", description = "When a worker dies (not by --faults), relaunch the job from "
        + "the newest checkpoint every worker holds, the dead worker with the others, at most this many times; 0: the others go on "
        + "if the sync config lets them, else the run stops. Default: ${DEFAULT-VALUE}.")
    int maxRestarts;

    @Option(names = "--resume", description = "Go on with the run in DIR (its --out) from the newest checkpoint every worker holds "
        + "there, with the same options it was started with; records and summary go to DIR.")
    Path resume;

    @Option(names = "--clock", defaultValue = "wall", description = "The run's clock: wall (worker processes on this host's clock, "
        + "a device modelled with --step-time or not) or virtual (every worker in this process, time the modelled device's and link's "
        + "only: exact and repeatable whatever the host does; needs --step-time and a fixed --policy). Default: ${DEFAULT-VALUE}.")
    String clock;

    @Option(names = "--pytorch", paramLabel = "'SCRIPT [ARGS]'", description = "Run a PyTorch training script (e.g. examples/pytorch/train.py) as "
        + "each worker process instead of Serene's worker: its gradients go through the switch by python/serene's client; it gets "
        + "torchrun's variables, the switch, the batches and modelled step times, and writes the run's records (docs/pytorch.md). "
        + "Needs Debian's python3-torch.")
    String pytorch;

    @Option(names = "--json", description = "End with the summary as one JSON line.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        final RunSettings.Builder builder = RunSettings.builder().workers(workers).training(training.settings())
            .workerJit(WorkerJit.parse("--worker-jit", workerJit)).targetAccuracy(targetAccuracy)
            .out(output()).controlPort(controlPort).checkpointEvery(checkpoints.every()).maxRestarts(maxRestarts).resume(resume != null)
            .metricsPort(monitorOptions.metricsPort).stallSeconds(monitorOptions.stallSeconds)
            .silenceRounds(monitorOptions.silenceRounds).faults(faults).shm(RunSettings.shmLink("--link", link))
            .xdp(RunSettings.xdpSwitch("--switch", dataPlane))
            .virtual(RunSettings.virtualClock("--clock", clock)).pytorch(pytorch);
        final Policy builtIn = PolicyParser.builtIn(policy);
        if (policyFile != null) {
            builder.policy(PolicyCommand.load(policyFile), policyFile.getFileName().toString());
        } else if (builtIn != null) {
            builder.policy(builtIn, builtIn.name());
        } else {
            builder.sync(policy);
        }
        final RunSettings settings = builder.build();
        final RunSummary summary = new TrainRun(settings, System.out).run();
        summary.printHeadline(System.out);
        System.out.println("summary in " + settings.out().resolve("summary.json"));
        if (json) {
            System.out.println(Json.write(summary));
        }
        return 0;
    }

    /** --out, or the run --resume goes on with, or a new directory under runs/. */
    private Path output() {
        if (resume == null) {
            return out != null ? out : defaultOut("train");
        }
        if (out != null && !out.toAbsolutePath().normalize().equals(resume.toAbsolutePath().normalize())) {
            throw new IllegalArgumentException("--resume " + resume + " writes into that run's directory; --out " + out + " names another");
        }
        if (!Files.isDirectory(resume)) {
            throw new IllegalArgumentException("--resume " + resume + ": no such run directory");
        }
        return resume;
    }

    /** runs/NAME-yyyyMMdd-HHmmss under the working directory. */
    static Path defaultOut(final String name) {
        return Path.of("runs", name + "-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }
}
