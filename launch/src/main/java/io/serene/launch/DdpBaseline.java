package io.serene.launch;

import io.serene.dataplane.SwitchPipeline;
import io.serene.node.SwitchNode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.training.Json;
import io.serene.training.ModelKind;
import io.serene.training.ModelledSteps;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainSettings;
import io.serene.training.data.Batches;
import io.serene.training.data.FashionMnist;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What users would run instead of Serene, as a run of an experiment: PyTorch DDP over gloo
 * ({@code benchmarks/gloo/ddp.py}), the same MLP, optimizer, learning rate and momentum, every
 * worker's batches drawn as Serene's worker draws them ({@link Batches#ofWorker}) and its steps as
 * long as Serene's modelled device makes them, stragglers included
 * ({@link ModelledSteps#modelledNs}): serene writes both into a plan file the script reads. Its
 * summary has the fields of a Serene run's, so a report puts it in a row beside the policies.
 */
public final class DdpBaseline {
    /** Debian's Python, which has its python3-torch. */
    public static final String PYTHON = "/usr/bin/python3";
    /** The plan file in a run's directory. */
    static final String PLAN = "ddp-plan.bin";

    private final RunSettings s;
    private final String python;
    private final Path script;
    /** The sync config of the switch DDP's buckets go through (python/serene's hook), or null: gloo. */
    private final SyncConfig hookSync;

    /** DDP over gloo ({@code hookSync} null) or through Serene's switch under {@code hookSync}. */
    public DdpBaseline(final RunSettings settings, final String python, final String hookSync) {
        this(settings, python, PythonScript.shipped(Path.of("benchmarks", "gloo", "ddp.py")), hookSync);
    }

    DdpBaseline(final RunSettings settings, final String python, final Path script, final String hookSync) {
        final TrainSettings t = settings.training();
        if (t.model() != ModelKind.MLP || !t.device().modelled()) {
            throw new IllegalArgumentException("the DDP baseline trains the MLP on a modelled device: model mlp and a stepTime");
        }
        this.s = settings;
        this.python = python;
        this.script = script;
        this.hookSync = hookSync == null ? null : SyncConfigParser.parse(hookSync);
    }

    /** Trains, writes the run's summary.json (and the plan) into the run's directory and returns the summary. */
    public RunSummary run() throws IOException, InterruptedException {
        final TrainSettings t = s.training();
        final FashionMnist dataset = FashionMnist.load(t.data());
        final int rounds = t.roundsFor(dataset.train.size() / s.workers());
        Files.createDirectories(s.out());
        final Path plan = s.out().resolve(PLAN);
        final double modelledSeconds = writePlan(plan, dataset.train, t, s.workers(), rounds);
        final long timeout = Math.round(modelledSeconds / s.workers() * 3) + 300;
        final List<String> args = new ArrayList<>(List.of("--plan", plan.toString(), "--data",
            t.data().toString(), "--lr", "" + t.learningRate(), "--momentum", "" + t.momentum(), "--eval-every", "" + t.evalEvery(),
            "--seed", "" + t.seed(), "--workers", "" + s.workers()));
        final Result r;
        if (hookSync == null) {
            r = Json.read(PythonScript.run("the DDP baseline", python, script, args, timeout), Result.class);
        } else {
            // the run's switch, without a secret: the script's agents are started by its ranks, which get no key
            final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
            try (SwitchNode sw = SwitchNode.builder(new SwitchPipeline(TrainRun.switchContext(s, hookSync, null), errors::add)).open()) {
                args.addAll(List.of("--comm", "serene", "--switch", sw.address(), "--agent-command", WorkerCommandLine.agent()));
                r = Json.read(PythonScript.run("DDP through Serene's hook", python, script, args, timeout), Result.class);
            }
            if (!errors.isEmpty()) {
                throw new IllegalStateException("the switch reported " + errors.size() + " errors, first: " + errors.get(0));
            }
        }
        final RunSummary summary = summary(r, modelledSeconds, rounds);
        Files.writeString(s.out().resolve("summary.json"), Json.write(summary) + "\n", StandardCharsets.UTF_8);
        return summary;
    }

    /** The script's line: what rank 0 measured and evaluated. */
    record Result(int workers, int rounds, int batch, double jctSeconds, List<RunSummary.CurvePoint> accuracyCurve, double finalAccuracy,
                  double finalLoss, long steps, long overrunSteps, double communicationSeconds, long skippedSteps, String torch) {
    }

    /**
     * Writes the plan: workers, rounds and batch (int32 each), then per worker its rounds' batches
     * (int32 indexes into the training set), then per worker its rounds' modelled step times
     * (float64 seconds), little-endian. Returns the sum of every step's modelled time (seconds).
     */
    static double writePlan(final Path file, final FashionMnist.Split train, final TrainSettings t, final int workers, final int rounds)
        throws IOException {
        final int batch = t.batch();
        final StragglerProfile profile = t.profile(workers);
        final long stepNs = t.device().stepNs(t.model(), batch, batch);
        double total = 0;
        try (OutputStream raw = Files.newOutputStream(file);
             DataOutputStream out = new DataOutputStream(new BufferedOutputStream(raw, 1 << 16))) {
            final ByteBuffer le = ByteBuffer.allocate(Math.max(12, 4 * batch)).order(ByteOrder.LITTLE_ENDIAN);
            le.putInt(workers).putInt(rounds).putInt(batch);
            out.write(le.array(), 0, 12);
            final int[] indexes = new int[batch];
            for (int w = 0; w < workers; w++) {
                final Batches batches = Batches.ofWorker(train, w, workers, batch, batch, t.seed());
                for (int round = 0; round < rounds; round++) {
                    batches.nextIndexes(batch, indexes);
                    le.clear();
                    le.asIntBuffer().put(indexes);
                    out.write(le.array(), 0, 4 * batch);
                }
            }
            final ByteBuffer d = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            for (int w = 0; w < workers; w++) {
                for (int round = 0; round < rounds; round++) {
                    final double seconds = ModelledSteps.modelledNs(stepNs, profile.factor(w, round), profile.pauseNs(w, round)) / 1e9;
                    total += seconds;
                    d.clear();
                    d.putDouble(seconds);
                    out.write(d.array());
                }
            }
        }
        return total;
    }

    /** A summary with a Serene run's fields; the clock is the modelled device's, faithful if few steps overran it. */
    private RunSummary summary(final Result r, final double modelledSeconds, final int rounds) {
        final Double tta = TrainSummary.timeToTarget(r.accuracyCurve(), s.targetAccuracy(), r.finalAccuracy(), r.jctSeconds());
        final double share = r.steps() == 0 ? 0 : (double) r.overrunSteps() / r.steps();
        final boolean faithful = share <= TrainSummary.FAITHFUL_OVERRUN_SHARE;
        final String verdict = String.format(Locale.ROOT, "PyTorch %s DDP (%s) on this host's clock, every step padded to the modelled "
            + "%s: %d of %d steps overran it (%.1f%%)%s; communication (the allreduce and the wait for the slowest peer in it) on this "
            + "host's loopback", r.torch(), comm(), t().device().text(), r.overrunSteps(), r.steps(), 100 * share,
            faithful ? "" : ": NOT faithful, the host's compute took longer than the modelled step");
        final RunSummary.Fidelity fidelity = new RunSummary.Fidelity("modelled", t().device().text(), r.steps(), r.overrunSteps(), share,
            0, 0, "none", 0, 0, 0, 0, 0, null, faithful, verdict);
        final double perWorker = r.communicationSeconds() / s.workers();
        final List<Double> waiting = new ArrayList<>();
        final List<Integer> zeros = new ArrayList<>();
        final List<Long> samples = new ArrayList<>();
        for (int w = 0; w < s.workers(); w++) {
            waiting.add(perWorker);
            zeros.add(0);
            samples.add((long) rounds * r.batch());
        }
        final int n = s.workers() * rounds;
        final Map<String, Object> run = new LinkedHashMap<>(s.trainingSummary());
        run.put("workers", s.workers());
        run.put("policy", hookSync == null ? "ddp" : "ddp-hook:" + hookSync);
        run.put("baseline", "PyTorch " + r.torch() + " DistributedDataParallel, " + comm() + ", " + s.workers() + " processes on this host");
        if (hookSync != null) {
            run.put("skippedSteps", r.skippedSteps());
        }
        return new RunSummary(Json.SCHEMA_VERSION, r.finalAccuracy(), r.jctSeconds(), s.targetAccuracy(), tta, r.communicationSeconds(),
            r.jctSeconds() > 0 ? modelledSeconds / (s.workers() * r.jctSeconds()) : 0, List.of(), true, List.of(r.finalAccuracy()),
            r.finalLoss(), null, new RunSummary.Staleness(0, 0, Map.of("0", n)), r.accuracyCurve(), waiting, zeros, zeros, samples, 0,
            List.of(), List.of(), List.of(), run, Map.of(), t().seed(), fidelity);
    }

    private String comm() {
        return hookSync == null ? "gloo" : "its buckets through Serene's switch under " + hookSync;
    }

    private TrainSettings t() {
        return s.training();
    }
}
