package io.serene.launch;

import io.serene.controlplane.Policy;
import io.serene.node.Ports;
import io.serene.node.SilenceWatch;
import io.serene.node.StallWatch;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.TrainDefaults;
import io.serene.training.TrainSettings;
import io.serene.training.WorkerJit;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code serene train} runs, as one immutable value: the job's shape and synchronization
 * around the workers' {@link TrainSettings}. Built by {@code serene train}, {@code serene demo} and
 * the experiment runner alike; {@link Builder#build()} is the one validation.
 *
 * @param sync        a sync config or schedule (docs/sync.md); unused when {@code policy} is set
 * @param policy      a policy run by the controller, or null
 * @param policyLabel the name the run reports for {@code policy} (null: the policy's own)
 * @param out         the directory for records and summary
 * @param controlPort the TCP port of the gRPC control service, -1 for none
 * @param metricsPort the TCP port of {@code /metrics}, -1 for none
 * @param stallSeconds report a round waiting longer than this (0: never)
 * @param silenceRounds report a worker silent after this many typical round times (0: never)
 * @param faults      faults to inject
 * @param checkpointEvery each worker checkpoints every this many rounds (0: never)
 * @param maxRestarts relaunches from the newest checkpoint allowed when a worker dies unplanned and the job cannot go on without it
 * @param resume      go on from the newest checkpoint every worker holds in {@code out}
 * @param quiet       print only failures (serene experiment prints one line per run)
 * @param shm         the workers reach the switch over shared memory (they share its host) instead of UDP
 * @param xdp         the switch's DATA path is the XDP program in this host's kernel, each worker in a network
 *                    namespace behind its own port of it ({@code serene train --switch xdp}; docs/xdp.md)
 * @param virtual     the run's clock is virtual time: every worker in this process, the switch and the network
 *                    in-process, time the modelled device's and link's ({@link VirtualRun}); else worker
 *                    processes on this host's clock
 * @param pytorch     a PyTorch training script and its arguments, which each worker process runs instead of
 *                    {@code serene worker} ({@code serene train --pytorch}; its gradients through Serene's agent), or null
 */
public record RunSettings(int workers, TrainSettings training, String sync, Policy policy, String policyLabel, WorkerJit workerJit,
                          double targetAccuracy, Path out, int controlPort, int metricsPort, double stallSeconds, double silenceRounds,
                          FaultPlan faults, int checkpointEvery, int maxRestarts, boolean resume,
                          int job, boolean quiet, boolean shm, boolean xdp, boolean virtual, List<String> pytorch) {
    /** Validates; called by {@link Builder#build()}. */
    public RunSettings {
        if (workers <= 0 || workers > 64) {
            throw new IllegalArgumentException("--workers must be in 1..64, was " + workers);
        }
        if (training == null || workerJit == null || out == null) {
            throw new IllegalArgumentException("training settings, worker JIT and output directory must be set");
        }
        if (!(targetAccuracy >= 0 && targetAccuracy <= 1)) {
            throw new IllegalArgumentException("--target-accuracy must be in 0..1, was " + targetAccuracy);
        }
        Ports.optional("--control-port", controlPort);
        Ports.optional("--metrics-port", metricsPort);
        new StallWatch(stallSeconds);
        new SilenceWatch(silenceRounds);
        if (faults == null || faults.faults().stream().anyMatch(f -> f.worker() >= workers)) {
            throw new IllegalArgumentException("--faults must name workers of the job (0.." + (workers - 1) + "), was " + faults);
        }
        if (checkpointEvery < 0) {
            throw new IllegalArgumentException("--checkpoint-every must be >= 0 (0: no checkpoints), was " + checkpointEvery);
        }
        if (maxRestarts < 0) {
            throw new IllegalArgumentException("--max-restarts must be >= 0, was " + maxRestarts);
        }
        if (policy == null) {
            SyncSchedule.parse(sync).configFor(0).resolve(workers);
        }
        training.profile(workers);
        if (pytorch != null && pytorch.isEmpty()) {
            throw new IllegalArgumentException("--pytorch needs a script");
        }
        if (xdp && (shm || virtual || pytorch != null)) {
            throw new IllegalArgumentException("--switch xdp runs Serene's workers over UDP on this host's clock: it takes no --link shm, "
                + "--clock virtual or --pytorch");
        }
        if (xdp && policy != null && (!policy.groups().isEmpty() || policy.auto() != null)) {
            throw new IllegalArgumentException("--switch xdp has one worker group and no auto model: policy " + policy.name()
                + " needs " + (policy.auto() != null ? "auto" : "worker groups"));
        }
        if (pytorch != null && (virtual || checkpointEvery > 0 || resume || !faults.faults().isEmpty())) {
            throw new IllegalArgumentException("--pytorch runs the script's processes on this host's clock, without Serene's checkpoints: "
                + "it takes no --clock virtual, --checkpoint-every, --resume or --faults");
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The policy's name as the run reports it: the label, the policy's own name, or the sync config. */
    public String policyName() {
        return policy != null ? (policyLabel != null ? policyLabel : policy.name()) : sync;
    }

    /** Whether a {@code --link} value ({@code flag} names it in the error) is shared memory: udp or shm. */
    public static boolean shmLink(final String flag, final String value) {
        if (!"udp".equals(value) && !"shm".equals(value)) {
            throw new IllegalArgumentException(flag + " must be udp (127.0.0.1) or shm (shared memory), was " + value);
        }
        return "shm".equals(value);
    }

    /** Whether a {@code --switch} value ({@code flag} names it in the error) is the XDP data plane: java or xdp. */
    public static boolean xdpSwitch(final String flag, final String value) {
        if (!"java".equals(value) && !"xdp".equals(value)) {
            throw new IllegalArgumentException(flag + " must be java (the Java pipeline) or xdp (the XDP program in the kernel), was " + value);
        }
        return "xdp".equals(value);
    }

    /** Whether a clock's name ({@code flag} names it in the error) is virtual time: wall or virtual. */
    public static boolean virtualClock(final String flag, final String value) {
        if (!"wall".equals(value) && !"virtual".equals(value)) {
            throw new IllegalArgumentException(flag + " must be wall (this host's clock) or virtual (virtual time), was " + value);
        }
        return "virtual".equals(value);
    }

    /** How the workers train, as a run's summary records it (its "run" member, after the job's shape). */
    public Map<String, Object> trainingSummary() {
        final Map<String, Object> m = new LinkedHashMap<>(training.summary());
        m.put("clock", virtual ? "virtual" : "wall");
        m.put("link", virtual ? "in-process" : shm ? "shm" : "udp");
        m.put("switch", xdp ? "xdp" : "java");
        m.put("workerJit", workerJit.text());
        m.put("faults", faults.toString());
        m.put("checkpointEvery", checkpointEvery);
        return m;
    }

    /** Fluent setters over {@link TrainDefaults}; {@link #build()} validates. */
    public static final class Builder {
        private int workers = TrainDefaults.workers();
        private TrainSettings training = TrainSettings.builder().build();
        private String sync = TrainDefaults.POLICY;
        private Policy policy;
        private String policyLabel;
        private WorkerJit workerJit = WorkerJit.parse("--worker-jit", TrainDefaults.WORKER_JIT);
        private double targetAccuracy = TrainDefaults.targetAccuracy();
        private Path out;
        private int controlPort = -1;
        private int metricsPort = -1;
        private double stallSeconds = StallWatch.DEFAULT_SECONDS;
        private double silenceRounds = SilenceWatch.DEFAULT_ROUNDS;
        private int job = 1;
        private boolean quiet;
        private String faults = "none";
        private int checkpointEvery;
        private int maxRestarts;
        private boolean resume;
        private boolean shm;
        private boolean xdp;
        private boolean virtual;
        private List<String> pytorch;

        private Builder() {
        }

        public Builder workers(final int value) {
            workers = value;
            return this;
        }

        public Builder training(final TrainSettings value) {
            training = value;
            return this;
        }

        /** A sync config or schedule; clears a policy. */
        public Builder sync(final String value) {
            sync = value;
            policy = null;
            policyLabel = null;
            return this;
        }

        /** A policy for the controller, reported as {@code label} (null: its own name). */
        public Builder policy(final Policy value, final String label) {
            policy = value;
            policyLabel = label;
            return this;
        }

        public Builder workerJit(final WorkerJit value) {
            workerJit = value;
            return this;
        }

        public Builder targetAccuracy(final double value) {
            targetAccuracy = value;
            return this;
        }

        public Builder out(final Path value) {
            out = value;
            return this;
        }

        public Builder controlPort(final int value) {
            controlPort = value;
            return this;
        }

        public Builder metricsPort(final int value) {
            metricsPort = value;
            return this;
        }

        public Builder stallSeconds(final double value) {
            stallSeconds = value;
            return this;
        }

        public Builder silenceRounds(final double value) {
            silenceRounds = value;
            return this;
        }

        /** Faults as {@code --faults} takes them, checked against the worker count when built. */
        public Builder faults(final String value) {
            faults = value;
            return this;
        }

        public Builder checkpointEvery(final int value) {
            checkpointEvery = value;
            return this;
        }

        public Builder maxRestarts(final int value) {
            maxRestarts = value;
            return this;
        }

        /** Go on from the newest checkpoint every worker holds in the output directory. */
        public Builder resume(final boolean value) {
            resume = value;
            return this;
        }

        /** Shared memory between the switch and its workers instead of UDP on 127.0.0.1. */
        public Builder xdp(final boolean value) {
            xdp = value;
            return this;
        }

        public Builder shm(final boolean value) {
            shm = value;
            return this;
        }

        /** Virtual time (true) or this host's clock (false, the default). */
        public Builder virtual(final boolean value) {
            virtual = value;
            return this;
        }

        /** A PyTorch script and its arguments, one string split at spaces, that the worker processes run (null: {@code serene worker}). */
        public Builder pytorch(final String value) {
            pytorch = value == null ? null : List.of(value.trim().split("\\s+"));
            return this;
        }

        public Builder quiet(final boolean value) {
            quiet = value;
            return this;
        }

        public RunSettings build() {
            final RunSettings settings = new RunSettings(workers, training, sync, policy, policyLabel, workerJit, targetAccuracy, out,
                controlPort, metricsPort, stallSeconds, silenceRounds, FaultPlan.parse(faults, workers), checkpointEvery, maxRestarts,
                resume, job, quiet, shm, xdp, virtual, pytorch);
            if (virtual) {
                VirtualRun.check(settings);
            }
            return settings;
        }
    }
}
