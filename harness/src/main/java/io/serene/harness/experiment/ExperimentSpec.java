package io.serene.harness.experiment;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyException;
import io.serene.controlplane.PolicyParser;
import io.serene.harness.cli.PolicyCommand;
import io.serene.launch.FaultPlan;
import io.serene.launch.RunSettings;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.ComputeClock;
import io.serene.training.ComputeOn;
import io.serene.training.DeviceModel;
import io.serene.training.FreshWait;
import io.serene.training.LrSchedule;
import io.serene.training.ModelKind;
import io.serene.training.StaleMomentum;
import io.serene.training.StaleScale;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainDefaults;
import io.serene.training.TrainSettings;
import io.serene.training.WorkerJit;
import io.serene.transport.LinkModel;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * An experiment file (YAML): what to run and how many times. Every value is checked when the file
 * is read, so a bad file fails before anything runs, naming the key.
 *
 * <pre>
 * name: paper
 * mode: train                  # train (real training) or sim (virtual time)
 * model: [mlp, cnn]            # train: mlp or cnn, or a list
 * workers: [4, 8]              # one number or a list
 * epochs: 1                    # or rounds: 300
 * targetAccuracy: 0.8          # train
 * evalEvery: 25                # train
 * rebalance: true              # train: batches grow while rounds have fewer contributions (default)
 * deferredEval: true           # train: evaluate copies of the model after training, off the clock (default)
 * lrSchedule: cosine           # train: constant (default), cosine decay to 0 over the run, or cooldown (the last 20%)
 * staleMomentum: fixed         # train: how rounds under an SSP bound are stepped (serene worker --stale-momentum)
 * freshWait: none              # train: compute ahead at once (default compute: wait up to a compute time; --fresh-wait)
 * delayCompensation: 0.04      # train: DC-ASGD's lambda for gradients computed ahead (default 0; --delay-compensation)
 * staleScale: none             # train: every gradient at full weight (default inverse: 1/(1+t) t rounds ahead; --stale-scale)
 * computeClock: wall           # train: the compute time workers report, cpu (default) or wall (serene worker --compute-clock)
 * stepTime: 40ms               # train: the modelled accelerator's step (default 0: the host's speed; serene worker --step-time)
 * linkRate: 100mbit            # train: a modelled link to the switch, paced in user space (default 0: none; --link-rate)
 * linkDelay: 50us              # train: its one-way delay (default 0; --link-delay)
 * workerJit: tiered            # train: the worker JVMs' JIT, c1 (default) or tiered (serene train --worker-jit)
 * link: shm                    # train: how workers reach the switch, udp (default) or shm (serene train --link)
 * clock: virtual               # train: virtual time, every worker in one process (default wall; serene train --clock)
 * policies:                    # presets, schedules (N: the worker count), or policy files
 *   - bsp
 *   - ssp:2
 *   - fastest:N-1
 *   - {name: dynamic, file: examples/adaptive.policy}
 *   - ddp                      # train: PyTorch DDP (gloo) instead of Serene, the same MLP, batches and steps (benchmarks/gloo/ddp.py)
 * stragglers: [persistent:3:x8, transient:p=0.05,x4]
 * seeds: [1, 2, 3]
 * quick: {workers: [4], seeds: [1], epochs: 0.5}   # what --quick replaces
 * </pre>
 */
public final class ExperimentSpec {

    private static final Set<String> KEYS = Set.of("name", "mode", "model", "workers", "epochs", "rounds", "targetAccuracy",
        "evalEvery", "deferredEval", "batch", "rebalance", "lr", "lrSchedule", "staleMomentum", "computeClock", "computeOn", "freshWait", "staleScale",
        "delayCompensation", "stepTime", "linkRate", "linkDelay", "workerJit", "link", "clock",
        "momentum", "computeMs", "policies", "stragglers", "seeds", "quick", "faults", "pytorch");

    public final String name;
    public final String mode;
    final List<ModelKind> models;
    final List<Integer> workers;
    /** How every run's workers train (its model, stragglers, seed and data are the run's); sim reads its rounds. */
    final TrainSettings training;
    final double targetAccuracy;
    /** train: c1 or tiered (serene train --worker-jit). */
    final WorkerJit workerJit;
    /** Train mode: the workers reach the switch over shared memory ({@code link: shm}) instead of UDP. */
    final boolean shm;
    /** A PyTorch script and its arguments the workers run ({@code serene train --pytorch}), or null. */
    final String pytorch;
    /** Train mode: virtual time ({@code clock: virtual}) instead of worker processes on this host's clock. */
    final boolean virtual;
    /** Train mode: faults every run injects ({@code kill:W@R}, as {@code serene train --faults}); "none" for none. */
    final String faults;
    final double computeMs;
    final List<PolicyRef> policies;
    final List<String> stragglers;
    public final List<Long> seeds;
    final String text;

    private ExperimentSpec(final JsonNode n, final Path base, final String text) {
        this.text = text;
        final Iterator<String> keys = n.fieldNames();
        while (keys.hasNext()) {
            final String key = keys.next();
            if (!KEYS.contains(key)) {
                throw new IllegalArgumentException("unknown key '" + key + "' (expected one of " + new TreeSet<>(KEYS) + ")");
            }
        }
        name = string(n, "name", null);
        if (name == null || !name.matches("[A-Za-z0-9_.-]+")) {
            throw new IllegalArgumentException("'name' must be letters, digits, '_', '.' or '-', was " + n.get("name"));
        }
        mode = string(n, "mode", "train");
        if (!mode.equals("train") && !mode.equals("sim")) {
            throw new IllegalArgumentException("'mode' must be train or sim, was '" + mode + "'");
        }
        final List<ModelKind> kinds = new ArrayList<>();
        for (final String m : strings(n, "model", List.of(TrainDefaults.MODEL))) {
            kinds.add(ModelKind.parse(m));
        }
        models = List.copyOf(kinds);
        workers = integers(n, "workers", List.of(TrainDefaults.workers()));
        for (final int w : workers) {
            if (w < 1 || w > 64) {
                throw new IllegalArgumentException("'workers' must be in 1..64, was " + w);
            }
        }
        if (n.has("epochs") && n.has("rounds")) {
            throw new IllegalArgumentException("give 'epochs' or 'rounds', not both");
        }
        final Double epochs = n.has("epochs") ? positive(n, "epochs") : null;
        final Integer rounds = n.has("rounds") ? (int) positive(n, "rounds") : null;
        if (mode.equals("sim") && rounds == null) {
            throw new IllegalArgumentException("mode sim needs 'rounds'");
        }
        targetAccuracy = n.has("targetAccuracy") ? number(n, "targetAccuracy") : TrainDefaults.targetAccuracy();
        if (!(targetAccuracy >= 0 && targetAccuracy <= 1)) {
            throw new IllegalArgumentException("'targetAccuracy' must be in 0..1, was " + targetAccuracy);
        }
        // a key left out keeps the one default (TrainSettings.Builder's)
        final TrainSettings.Builder t = TrainSettings.builder().rounds(rounds).epochs(epochs);
        if (n.has("rebalance")) {
            t.rebalance(flag(n, "rebalance"));
        }
        if (n.has("deferredEval")) {
            t.deferredEval(flag(n, "deferredEval"));
        }
        if (n.has("evalEvery")) {
            t.evalEvery((int) number(n, "evalEvery"));
        }
        if (n.has("batch")) {
            t.batch((int) positive(n, "batch"));
        }
        if (n.has("lr")) {
            t.learningRate((float) positive(n, "lr"));
        }
        if (n.has("momentum")) {
            t.momentum((float) number(n, "momentum"));
        }
        if (n.has("lrSchedule")) {
            t.lrSchedule(LrSchedule.parse("'lrSchedule'", string(n, "lrSchedule", null)));
        }
        if (n.has("staleMomentum")) {
            t.staleMomentum(StaleMomentum.parse("'staleMomentum'", string(n, "staleMomentum", null)));
        }
        if (n.has("computeOn")) {
            t.computeOn(ComputeOn.parse("'computeOn'", string(n, "computeOn", null)));
        }
        if (n.has("freshWait")) {
            t.freshWait(FreshWait.parse("'freshWait'", string(n, "freshWait", null)));
        }
        if (n.has("delayCompensation")) {
            t.delayCompensation((float) number(n, "delayCompensation"));
        }
        if (n.has("staleScale")) {
            t.staleScale(StaleScale.parse("'staleScale'", string(n, "staleScale", null)));
        }
        if (n.has("computeClock")) {
            t.computeClock(ComputeClock.parse("'computeClock'", string(n, "computeClock", null)));
        }
        if (n.has("linkRate") || n.has("linkDelay")) {
            t.link(LinkModel.parse(string(n, "linkRate", "0"), string(n, "linkDelay", "0")));
        }
        if (n.has("stepTime")) {
            // a step-time file beside the experiment file, else as given (a duration, or a file in the working directory)
            final String step = n.get("stepTime").asText().trim();
            t.device(DeviceModel.parse("'stepTime'", DeviceModel.namesFile(step) && base != null && Files.isRegularFile(base.resolve(step))
                ? base.resolve(step).toString() : step));
        }
        training = t.build();
        workerJit = WorkerJit.parse("'workerJit'", string(n, "workerJit", TrainDefaults.WORKER_JIT));
        shm = RunSettings.shmLink("'link'", string(n, "link", "udp"));
        pytorch = n.has("pytorch") ? n.get("pytorch").asText() : null;
        virtual = RunSettings.virtualClock("'clock'", string(n, "clock", "wall"));
        if (pytorch != null && (virtual || !mode.equals("train"))) {
            throw new IllegalArgumentException("'pytorch' runs a script as each worker process on this host's clock: it needs mode train "
                + "and clock wall");
        }
        faults = string(n, "faults", "none");
        if (!mode.equals("train") && !faults.equals("none")) {
            throw new IllegalArgumentException("'faults' kills worker processes: it applies to mode train only");
        }
        for (final int w : workers) {
            FaultPlan.parse(faults, w);
        }
        computeMs = n.has("computeMs") ? positive(n, "computeMs") : 10;
        policies = policies(n.get("policies"), base, workers);
        if (policies.stream().anyMatch(PolicyRef::isDdp) && !(mode.equals("train") && models.equals(List.of(ModelKind.MLP))
            && training.device().modelled())) {
            throw new IllegalArgumentException("policy 'ddp' (PyTorch DDP, the baseline) and 'ddp-hook:' train the MLP on a modelled "
                + "device: they need mode train, model mlp and a stepTime");
        }
        stragglers = strings(n, "stragglers", List.of(TrainDefaults.STRAGGLERS));
        for (final String s : stragglers) {
            for (final int w : workers) {
                if (StragglerProfile.parse(s, 1, w).slowsLinks() && !training.link().modelled()) {
                    throw new IllegalArgumentException("straggler profile '" + s + "' slows a link: it needs 'linkRate'");
                }
            }
        }
        final List<Long> seedList = new ArrayList<>();
        for (final int s : integers(n, "seeds", List.of((int) TrainDefaults.seed()))) {
            seedList.add((long) s);
        }
        seeds = List.copyOf(seedList);
    }

    /** Reads a file; {@code quick} applies its 'quick' overrides. Errors name the file and the key. */
    public static ExperimentSpec read(final Path file, final boolean quick) {
        return read(file, quick, null, Map.of());
    }

    /**
     * Reads a file as {@link #read(Path, boolean)} does, with its seeds replaced by {@code seeds}
     * (the command line's {@code --seeds}) unless null, and then each key of {@code sets} by its
     * value, YAML (the command line's {@code --set KEY=VALUE}, e.g. {@code model=[mlp]}); the
     * replacements are recorded with the file's text.
     */
    public static ExperimentSpec read(final Path file, final boolean quick, final List<Integer> seeds, final Map<String, String> sets) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("no experiment file " + file);
        }
        final String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read " + file + ": " + ex.getMessage());
        }
        final Map<String, String> overrides = new LinkedHashMap<>();
        final StringBuilder recorded = new StringBuilder();
        if (seeds != null) {
            if (seeds.isEmpty()) {
                throw new IllegalArgumentException("--seeds needs at least one seed");
            }
            final String joined = seeds.stream().map(String::valueOf).reduce((a, b) -> a + "," + b).orElse("");
            overrides.put("seeds", "[" + joined + "]");
            recorded.append(" --seeds ").append(joined);
        }
        for (final Map.Entry<String, String> e : sets.entrySet()) {
            if (!KEYS.contains(e.getKey()) || e.getKey().equals("quick")) {
                throw new IllegalArgumentException("--set " + e.getKey() + "=...: not a key of an experiment file (one of "
                    + new TreeSet<>(KEYS).stream().filter(k -> !k.equals("quick")).toList() + ")");
            }
            overrides.put(e.getKey(), e.getValue());
            recorded.append(" --set ").append(e.getKey()).append('=').append(e.getValue());
        }
        try {
            return parse(text, file.toAbsolutePath().getParent(), quick, overrides, recorded.toString());
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException(file + ": " + ex.getMessage());
        }
    }

    /** Parses YAML text; relative policy files resolve against {@code base} and then the working directory. */
    static ExperimentSpec parse(final String text, final Path base, final boolean quick) {
        return parse(text, base, quick, Map.of(), "");
    }

    private static ExperimentSpec parse(final String text, final Path base, final boolean quick, final Map<String, String> overrides,
                                        final String recorded) {
        final ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
        final JsonNode root;
        try {
            root = yaml.readTree(text);
        } catch (final JsonProcessingException ex) {
            final String where = ex.getLocation() == null ? "" : "line " + ex.getLocation().getLineNr() + ": ";
            throw new IllegalArgumentException(where + "not valid YAML: " + ex.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("an experiment file is a YAML mapping (name:, mode:, policies:, ...)");
        }
        JsonNode effective = root;
        if (quick && root.has("quick")) {
            final JsonNode quickOverrides = root.get("quick");
            if (!quickOverrides.isObject()) {
                throw new IllegalArgumentException("'quick' must be a mapping of keys to override");
            }
            final com.fasterxml.jackson.databind.node.ObjectNode copy = root.deepCopy();
            for (final Map.Entry<String, JsonNode> e : quickOverrides.properties()) {
                override(copy, e.getKey(), e.getValue());
            }
            effective = copy;
        }
        if (overrides.isEmpty()) {
            return new ExperimentSpec(effective, base, text);
        }
        final com.fasterxml.jackson.databind.node.ObjectNode copy = effective.deepCopy();
        for (final Map.Entry<String, String> e : overrides.entrySet()) {
            final JsonNode value;
            try {
                value = yaml.readTree(e.getValue());
            } catch (final JsonProcessingException ex) {
                throw new IllegalArgumentException("--set " + e.getKey() + "=" + e.getValue() + ": not valid YAML: " + ex.getOriginalMessage());
            }
            if (value == null || value.isMissingNode()) {
                throw new IllegalArgumentException("--set " + e.getKey() + "= needs a value");
            }
            override(copy, e.getKey(), value);
        }
        return new ExperimentSpec(copy, base, text + (text.endsWith("\n") ? "" : "\n") + "# command line:" + recorded + "\n");
    }

    /** Replaces one key of a file (epochs and rounds exclude each other: setting one drops the other). */
    private static void override(final com.fasterxml.jackson.databind.node.ObjectNode spec, final String key, final JsonNode value) {
        if (key.equals("epochs")) {
            spec.remove("rounds");
        } else if (key.equals("rounds")) {
            spec.remove("epochs");
        }
        spec.set(key, value);
    }

    private static List<PolicyRef> policies(final JsonNode n, final Path base, final List<Integer> workers) {
        if (n == null || !n.isArray() || n.isEmpty()) {
            throw new IllegalArgumentException("'policies' must be a non-empty list (bsp, ssp:2, {name: dynamic, file: FILE}, ...)");
        }
        final List<PolicyRef> out = new ArrayList<>();
        final Map<String, PolicyRef> byName = new LinkedHashMap<>();
        for (final JsonNode p : n) {
            final PolicyRef ref;
            final Policy builtIn = p.isTextual() ? PolicyParser.builtIn(p.asText()) : null;
            if (builtIn != null) {
                ref = new PolicyRef(builtIn.name(), null, null, builtIn);
            } else if (p.isTextual() && p.asText().equals(PolicyRef.DDP)) {
                ref = new PolicyRef(PolicyRef.DDP, "bsp", null, null);
            } else if (p.isTextual() && p.asText().startsWith(PolicyRef.DDP_HOOK)) {
                ref = new PolicyRef(p.asText(), p.asText().substring(PolicyRef.DDP_HOOK.length()), null, null);
                for (final int w : workers) {
                    try {
                        SyncConfigParser.parse(ref.syncFor(w));
                    } catch (final IllegalArgumentException ex) {
                        throw new IllegalArgumentException("policy '" + p.asText() + "': " + ex.getMessage());
                    }
                }
            } else if (p.isTextual()) {
                ref = new PolicyRef(p.asText(), p.asText(), null, null);
                for (final int w : workers) {
                    try {
                        SyncSchedule.parse(ref.syncFor(w));
                    } catch (final IllegalArgumentException ex) {
                        throw new IllegalArgumentException("policy '" + p.asText() + "': " + ex.getMessage());
                    }
                }
            } else if (p.isObject() && p.has("file")) {
                Path file = Path.of(p.get("file").asText());
                if (!file.isAbsolute() && base != null && Files.exists(base.resolve(file))) {
                    file = base.resolve(file);
                }
                final Policy policy;
                try {
                    policy = PolicyCommand.load(file);
                } catch (final PolicyException ex) {
                    throw new IllegalArgumentException("policy file " + file + ": " + ex.getMessage());
                }
                final String name = p.has("name") ? p.get("name").asText() : policy.name();
                ref = new PolicyRef(name, null, file, policy);
            } else if (p.isObject() && p.has("policy")) {
                final Policy policy = PolicyParser.parse(p.get("policy").asText());
                ref = new PolicyRef(p.has("name") ? p.get("name").asText() : policy.name(), null, null, policy);
            } else {
                throw new IllegalArgumentException("a policy is a sync config or schedule (bsp, ssp:2, 'bsp@0,ssp:3@100') or "
                    + "{name: NAME, file: FILE}, was " + p);
            }
            if (!ref.name.matches("[A-Za-z0-9_.:@,+=-]+")) {
                throw new IllegalArgumentException("policy name '" + ref.name + "' has characters a directory name cannot");
            }
            if (byName.put(ref.name, ref) != null) {
                throw new IllegalArgumentException("policy '" + ref.name + "' appears twice");
            }
            out.add(ref);
        }
        return List.copyOf(out);
    }

    private static String string(final JsonNode n, final String key, final String fallback) {
        final JsonNode v = n.get(key);
        if (v == null) {
            return fallback;
        }
        if (!v.isValueNode()) {
            throw new IllegalArgumentException("'" + key + "' must be a single value, was " + v);
        }
        return v.asText();
    }

    /** A true/false key, true when absent. */
    private static boolean flag(final JsonNode n, final String key) {
        if (!n.get(key).isBoolean()) {
            throw new IllegalArgumentException("'" + key + "' must be true or false, was " + n.get(key));
        }
        return n.get(key).asBoolean();
    }

    private static double number(final JsonNode n, final String key) {
        final JsonNode v = n.get(key);
        if (v == null || !v.isNumber()) {
            throw new IllegalArgumentException("'" + key + "' must be a number, was " + v);
        }
        return v.asDouble();
    }

    private static double positive(final JsonNode n, final String key) {
        final double v = number(n, key);
        if (!(v > 0)) {
            throw new IllegalArgumentException("'" + key + "' must be positive, was " + v);
        }
        return v;
    }

    private static List<Integer> integers(final JsonNode n, final String key, final List<Integer> fallback) {
        final JsonNode v = n.get(key);
        if (v == null) {
            return fallback;
        }
        final List<Integer> out = new ArrayList<>();
        for (final JsonNode e : v.isArray() ? v : List.of(v)) {
            if (!e.isIntegralNumber()) {
                throw new IllegalArgumentException("'" + key + "' must be a whole number or a list of them, was " + v);
            }
            out.add(e.asInt());
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("'" + key + "' is empty");
        }
        return List.copyOf(out);
    }

    private static List<String> strings(final JsonNode n, final String key, final List<String> fallback) {
        final JsonNode v = n.get(key);
        if (v == null) {
            return fallback;
        }
        final List<String> out = new ArrayList<>();
        for (final JsonNode e : v.isArray() ? v : List.of(v)) {
            if (!e.isValueNode()) {
                throw new IllegalArgumentException("'" + key + "' must be a string or a list of them, was " + v);
            }
            out.add(e.asText());
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("'" + key + "' is empty");
        }
        return List.copyOf(out);
    }
}
