package io.serene.harness.experiment;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyParser;
import io.serene.harness.cli.DemoCommand;
import io.serene.harness.cli.PolicyCommand;
import io.serene.protocol.sync.LateMode;
import io.serene.training.Json;
import io.serene.training.ModelKind;
import io.serene.transport.LinkModel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Experiment files, the resumable runner and the report, on simulated runs (seconds). */
class ExperimentTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SIM = String.join("\n",
        "name: t",
        "mode: sim",
        "workers: [8]",
        "rounds: 60",
        "policies: [bsp, 'ssp:2', {name: dynamic, policy: \"start bsp\\nwhen lag >= 2 for 2 rounds then ssp(2)\"}]",
        "stragglers: ['persistent:1:x3']",
        "seeds: [1, 2]",
        "quick: {seeds: [1], rounds: 30}");

    @Test
    void readsAGoodFileAndItsQuickOverrides() {
        final ExperimentSpec spec = ExperimentSpec.parse(SIM, null, false);
        assertThat(spec.name).isEqualTo("t");
        assertThat(spec.mode).isEqualTo("sim");
        assertThat(spec.workers).containsExactly(8);
        assertThat(spec.training.rounds()).isEqualTo(60);
        assertThat(spec.policies).extracting(p -> p.name).containsExactly("bsp", "ssp:2", "dynamic");
        assertThat(spec.policies.get(0).isBsp()).isTrue();
        assertThat(spec.seeds).containsExactly(1L, 2L);
        final ExperimentSpec quick = ExperimentSpec.parse(SIM, null, true);
        assertThat(quick.seeds).containsExactly(1L);
        assertThat(quick.training.rounds()).isEqualTo(30);
        final ExperimentSpec train = ExperimentSpec.parse("name: p\npolicies: [bsp]\nmodel: [mlp, cnn]\nepochs: 0.5", null, false);
        assertThat(train.mode).isEqualTo("train");
        assertThat(train.models).hasSize(2);
        assertThat(train.training.epochs()).isEqualTo(0.5);
        assertThat(train.training.rebalance()).as("default").isTrue();
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\nrebalance: false", null, false).training.rebalance()).isFalse();
        final ExperimentSpec ddp = ExperimentSpec.parse("name: d\nstepTime: 40ms\nworkers: [4, 8]\npolicies: [ddp, 'ddp-hook:bsp+exclude:N-1+drop']",
            null, false);
        assertThat(ddp.policies.get(0).hookSyncFor(4)).as("DDP over gloo").isNull();
        assertThat(ddp.policies.get(1).isDdp()).isTrue();
        assertThat(ddp.policies.get(1).isBsp()).isFalse();
        assertThat(ddp.policies.get(1).hookSyncFor(8)).isEqualTo("bsp+exclude:7+drop");
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\npytorch: train.py --model mlp", null, false).pytorch)
            .isEqualTo("train.py --model mlp");
        assertThat(train.training.deferredEval()).as("default").isTrue();
        assertThat(train.training.lrSchedule().text()).as("default").isEqualTo("constant");
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\nlrSchedule: cosine", null, false).training.lrSchedule().text()).isEqualTo("cosine");
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\nlrSchedule: cooldown", null, false).training.lrSchedule().text()).isEqualTo("cooldown");
        assertThat(train.training.staleMomentum().text()).as("default").isEqualTo("auto");
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\nstaleMomentum: fixed", null, false).training.staleMomentum().text()).isEqualTo("fixed");
        assertThat(train.training.computeClock().text()).as("default").isEqualTo("cpu");
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\ncomputeClock: wall", null, false).training.computeClock().text()).isEqualTo("wall");
        assertThat(train.workerJit.text()).as("default").isEqualTo("c1");
        assertThat(train.training.device().modelled()).as("default: the host's clock").isFalse();
        final ExperimentSpec modelled = ExperimentSpec.parse("name: p\npolicies: [bsp]\nstepTime: 40ms\nlinkRate: 100mbit\nlinkDelay: 50us"
            + "\nstragglers: ['link:1:x4,rounds=1-9']", null, false);
        assertThat(modelled.training.device().stepNs(ModelKind.MLP, 64, 64)).isEqualTo(40_000_000L);
        assertThat(modelled.training.link()).isEqualTo(LinkModel.parse("100mbit", "50us"));
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\nworkerJit: tiered", null, false).workerJit.text()).isEqualTo("tiered");
        assertThat(ExperimentSpec.parse("name: p\npolicies: [bsp]\ndeferredEval: false", null, false).training.deferredEval()).isFalse();
    }

    @Test
    void nInAPresetIsTheWorkerCountOfEachScenario() {
        final ExperimentSpec spec = ExperimentSpec.parse("name: t\nworkers: [4, 8]\npolicies: [bsp, 'fastest:N-1', 'bsp@0,fastest:N@10']",
            null, false);
        assertThat(spec.policies).extracting(p -> p.name).containsExactly("bsp", "fastest:N-1", "bsp@0,fastest:N@10");
        assertThat(spec.policies.get(1).syncFor(4)).isEqualTo("fastest:3");
        assertThat(spec.policies.get(1).syncFor(8)).isEqualTo("fastest:7");
        assertThat(spec.policies.get(2).syncFor(8)).isEqualTo("bsp@0,fastest:8@10");
        final ExperimentRunner runner = new ExperimentRunner(ExperimentSpec.parse(
            "name: t\nmode: sim\nrounds: 5\nworkers: [3]\npolicies: ['fastest:N-1']", null, false), Path.of("unused"), null);
        assertThat(runner.matrix()).extracting(r -> r.policy.syncFor(r.workers)).containsExactly("fastest:2");
    }

    @Test
    void paperYamlIsTheReproductionTheDocsDescribe() {
        final Path examples = Path.of(System.getProperty("user.dir")).resolveSibling("examples");
        final Path paper = examples.resolveSibling("experiments").resolve("paper.yaml");
        final ExperimentSpec full = ExperimentSpec.read(paper, false);
        assertThat(full.policies).extracting(p -> p.name)
            .containsExactly("bsp", "ssp:2", "ssp:4", "fastest:N-1", "psp:2", "psp:2,2", "wbsp", "timeout:50", "dynamic",
                "adaptive");
        assertThat(full.stragglers).containsExactly("persistent:3:x8", "moving:x8,rounds=30", "transient:p=0.1,x4");
        assertThat(new ExperimentRunner(full, Path.of("unused"), null).matrix()).hasSize(360);
        final ExperimentSpec quick = ExperimentSpec.read(paper, true);
        assertThat(new ExperimentRunner(quick, Path.of("unused"), null).matrix()).hasSize(30);
        assertThat(quick.policies.get(8).policy).as("--json's dynamic member")
            .isEqualTo(PolicyCommand.load(examples.resolve("dynamic.policy")));
        assertThat(quick.policies.get(9).policy).as("the demo's adaptive policy").isEqualTo(PolicyParser.parse(DemoCommand.ADAPTIVE));
    }

    @Test
    void goalYamlIsTheGoalsMeasurementTheDocsDescribe() {
        final Path examples = Path.of(System.getProperty("user.dir")).resolveSibling("examples");
        final ExperimentSpec goal = ExperimentSpec.read(examples.resolveSibling("experiments").resolve("goal.yaml"), false);
        assertThat(goal.policies).extracting(p -> p.name).containsExactly("bsp", "dynamic");
        assertThat(goal.policies.get(1).policy).as("paper.yaml's dynamic").isEqualTo(PolicyCommand.load(examples.resolve("dynamic.policy")));
        assertThat(goal.stragglers).containsExactly("persistent:3:x8", "moving:x8,rounds=30");
        assertThat(goal.training.evalEvery()).as("the time to 0.80 read every 10 rounds").isEqualTo(10);
        assertThat(goal.training.lrSchedule().text()).as("every final reading settled").isEqualTo("cooldown");
        assertThat(goal.workerJit.text()).as("as measured last").isEqualTo("c1");
        assertThat(goal.seeds).hasSize(6);
        assertThat(new ExperimentRunner(goal, Path.of("unused"), null).matrix()).hasSize(96);
    }

    @Test
    void autoIsAPolicyNameInAnExperiment() {
        final ExperimentSpec spec = ExperimentSpec.parse("name: a\nworkers: [4, 8]\npolicies: [bsp, auto]", null, false);
        assertThat(spec.policies).extracting(p -> p.name).containsExactly("bsp", "auto");
        assertThat(spec.policies.get(1).policy).isEqualTo(Policy.auto(Policy.Auto.DEFAULT_FLOOR_PERCENT));
    }

    @Test
    void cooldownYamlComparesFoldingAndDroppingUnderACooldown() {
        final Path examples = Path.of(System.getProperty("user.dir")).resolveSibling("examples");
        final ExperimentSpec cooldown = ExperimentSpec.read(examples.resolveSibling("experiments").resolve("cooldown.yaml"), false);
        assertThat(cooldown.training.lrSchedule().text()).isEqualTo("cooldown");
        assertThat(cooldown.training.computeClock().text()).as("as measured").isEqualTo("wall");
        assertThat(cooldown.workerJit.text()).as("as measured").isEqualTo("tiered");
        assertThat(cooldown.policies).extracting(p -> p.name).containsExactly("bsp", "dynamic", "dynamic-drop");
        assertThat(cooldown.policies.get(1).policy).as("dynamic as it was then")
            .isEqualTo(PolicyCommand.load(examples.resolve("dynamic-fold.policy")));
        final Policy drop = cooldown.policies.get(2).policy;
        assertThat(drop.rules()).extracting(r -> r.action.lateMode).containsOnly(LateMode.DROP, null);
        assertThat(cooldown.stragglers).containsExactly("persistent:3:x8", "moving:x8,rounds=30");
        assertThat(new ExperimentRunner(cooldown, Path.of("unused"), null).matrix()).hasSize(72);
    }

    @Test
    void theCommandLineSeedsReplaceTheFilesAfterQuickAndAreRecorded(@TempDir final Path dir) throws Exception {
        final Path file = dir.resolve("t.yaml");
        Files.writeString(file, SIM);
        final ExperimentSpec spec = ExperimentSpec.read(file, true, List.of(4, 5), Map.of());
        assertThat(spec.seeds).containsExactly(4L, 5L);
        assertThat(spec.training.rounds()).as("the quick overrides still apply").isEqualTo(30);
        assertThat(spec.text).endsWith("# command line: --seeds 4,5\n");
        assertThatThrownBy(() -> ExperimentSpec.read(file, false, List.of(), Map.of())).hasMessageContaining("--seeds needs at least one seed");
    }

    @Test
    void theCommandLineSetsReplaceKeysAfterQuickAndSeedsAndAreRecorded(@TempDir final Path dir) throws Exception {
        final Path file = dir.resolve("t.yaml");
        Files.writeString(file, "name: p\nmode: train\npolicies: [bsp]\nmodel: [mlp, cnn]\nworkers: [4, 8]\nepochs: 1\nseeds: [1, 2]\n");
        final Map<String, String> sets = new LinkedHashMap<>();
        sets.put("model", "[cnn]");
        sets.put("workers", "[8]");
        sets.put("rounds", "40");
        final ExperimentSpec spec = ExperimentSpec.read(file, false, List.of(3), sets);
        assertThat(spec.models).containsExactly(ModelKind.CNN);
        assertThat(spec.workers).containsExactly(8);
        assertThat(spec.seeds).containsExactly(3L);
        assertThat(spec.training.rounds()).as("rounds replace the file's epochs").isEqualTo(40);
        assertThat(spec.text).endsWith("# command line: --seeds 3 --set model=[cnn] --set workers=[8] --set rounds=40\n");
        assertThatThrownBy(() -> ExperimentSpec.read(file, false, null, Map.of("modle", "[cnn]")))
            .hasMessageContaining("--set modle=...: not a key of an experiment file");
        assertThatThrownBy(() -> ExperimentSpec.read(file, false, null, Map.of("quick", "{}"))).hasMessageContaining("not a key");
        assertThatThrownBy(() -> ExperimentSpec.read(file, false, null, Map.of("model", "[cnn")))
            .hasMessageContaining("--set model=[cnn: not valid YAML");
        assertThatThrownBy(() -> ExperimentSpec.read(file, false, null, Map.of("model", "[resnet]"))).hasMessageContaining("resnet");
    }

    @Test
    void badFilesGetClearErrors(@TempDir final Path dir) {
        bad("name: t\npolicies: [bsp]\nworkerz: 4", "unknown key 'workerz'");
        bad("name: t\nmode: real\npolicies: [bsp]", "'mode' must be train or sim, was 'real'");
        bad("name: t", "'policies' must be a non-empty list");
        bad("name: t\nworkers: [8, 4]\npolicies: [bsp]\nfaults: kill:5@10", "--faults: kill:5@10 names worker 5, the job has workers 0..3");
        bad("name: t\nmode: sim\nrounds: 10\npolicies: [bsp]\nfaults: kill:1@10", "'faults' kills worker processes: it applies to mode train only");
        bad("name: t\npolicies: ['ssp:x']", "policy 'ssp:x'");
        bad("name: t\nworkers: [2, 4]\npolicies: ['fastest:N-2']", "policy 'fastest:N-2': with 2 workers N-2 is 0, must be at least 1");
        bad("name: t\npolicies: ['fastest:N-x']", "policy 'fastest:N-x'");
        bad("name: t\npolicies: [bsp]\nrebalance: 3", "'rebalance' must be true or false, was 3");
        bad("name: t\npolicies: [bsp]\nlrSchedule: step", "'lrSchedule' must be constant, cosine or cooldown, was 'step'");
        bad("name: t\npolicies: [bsp]\nstaleMomentum: none", "'staleMomentum' must be auto, compensate or fixed, was 'none'");
        bad("name: t\npolicies: [bsp]\ncomputeClock: gpu", "'computeClock' must be cpu or wall, was 'gpu'");
        bad("name: t\npolicies: [bsp]\nworkerJit: c2", "'workerJit' must be c1 or tiered, was 'c2'");
        bad("name: t\npolicies: [bsp]\nstepTime: 40", "'stepTime': '40' is not a duration");
        bad("name: t\npolicies: [bsp]\nlinkRate: fast", "--link-rate: 'fast' is not a rate");
        bad("name: t\npolicies: [bsp]\nstragglers: ['link:1:x4,rounds=1-9']", "needs 'linkRate'");
        bad("name: t\npolicies: [bsp]\ndeferredEval: yes please", "'deferredEval' must be true or false, was \"yes please\"");
        bad("name: t\npolicies: [bsp, bsp]", "policy 'bsp' appears twice");
        bad("name: t\npolicies: [bsp]\nstragglers: [sometimes]", "unknown straggler profile part 'sometimes'");
        bad("name: t\npolicies: [bsp]\nepochs: 1\nrounds: 3", "give 'epochs' or 'rounds', not both");
        bad("name: t\nmode: sim\npolicies: [bsp]", "mode sim needs 'rounds'");
        bad("name: t\nmode: sim\nrounds: 10\npolicies: [bsp, ddp]", "policy 'ddp' (PyTorch DDP, the baseline) and 'ddp-hook:' train "
            + "the MLP on a modelled device");
        bad("name: t\npolicies: ['ddp-hook:bsp']", "need mode train, model mlp and a stepTime");
        bad("name: t\nmode: sim\nrounds: 10\npolicies: [bsp]\npytorch: train.py", "'pytorch' runs a script as each worker process");
        bad("name: t\nstepTime: 40ms\npolicies: ['ddp-hook:ssp:many']", "policy 'ddp-hook:ssp:many': ");
        bad("name: t\npolicies: [ddp]", "need mode train, model mlp and a stepTime");
        bad("name: t\nmodel: [mlp, cnn]\nstepTime: 40ms\npolicies: [ddp]", "need mode train, model mlp and a stepTime");
        bad("name: t\npolicies: [bsp]\nworkers: [0]", "'workers' must be in 1..64");
        bad("name: t\npolicies: [bsp]\nmodel: resnet", "unknown model 'resnet'");
        bad("name: t\npolicies: [{file: nowhere.policy}]", "cannot read policy file");
        bad("name: 'a b'\npolicies: [bsp]", "'name' must be letters");
        bad("name: t\npolicies: [bsp\nseeds: [1]", "line ");
        bad("- just\n- a list", "a YAML mapping");
        assertThatThrownBy(() -> ExperimentSpec.read(dir.resolve("missing.yaml"), false)).hasMessageContaining("no experiment file");
    }

    private static void bad(final String text, final String message) {
        assertThatThrownBy(() -> ExperimentSpec.parse(text, null, false)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(message);
    }

    private static double jctOf(final JsonNode runs, final String policy, final long seed) {
        for (final JsonNode run : runs) {
            if (run.path("policy").asText().equals(policy) && run.path("seed").asLong() == seed) {
                return run.path("jctSeconds").asDouble();
            }
        }
        throw new AssertionError("no run of " + policy + " seed " + seed);
    }

    @Test
    void aPairedSpeedupIsTheGeometricMeanOfEachSeedsRatioWithItsTInterval() {
        // ratios 2, 1 and 0.5 (logs ln2, 0, -ln2): geometric mean 1; the interval +-t(2) * ln2 / sqrt(3) on the logs
        final double[] paired = SeedStatistics.pairedSpeedup(Map.of(1L, 4.0, 2L, 3.0, 3L, 1.0, 9L, 5.0),
            Map.of(1L, 2.0, 2L, 3.0, 3L, 2.0, 4L, 7.0));
        final double half = 4.302652729911275 * Math.log(2) / Math.sqrt(3);
        assertThat(paired[0]).isCloseTo(1.0, org.assertj.core.api.Assertions.within(1e-12));
        assertThat(paired[1]).isCloseTo(Math.exp(-half), org.assertj.core.api.Assertions.within(1e-9));
        assertThat(paired[2]).isCloseTo(Math.exp(half), org.assertj.core.api.Assertions.within(1e-9));
        assertThat(SeedStatistics.pairedSpeedup(Map.of(1L, 4.0), Map.of(1L, 2.0))).as("one pair: no interval").isNull();
    }

    @Test
    void runsTheMatrixResumesAndWritesSummariesAndAReportThatAgree(@TempDir final Path dir) throws Exception {
        final ExperimentSpec spec = ExperimentSpec.parse(SIM, null, false);
        final ByteArrayOutputStream log = new ByteArrayOutputStream();
        final ExperimentRunner runner = new ExperimentRunner(spec, dir, new PrintStream(log, true, StandardCharsets.UTF_8));
        assertThat(runner.matrix()).hasSize(6);
        runner.run(false);
        assertThat(runner.executed()).isEqualTo(6);
        // resumable: a finished run is kept, a missing one runs again
        final Path one = runner.matrix().get(3).dir.resolve("summary.json");
        Files.delete(one);
        final ExperimentResult result = runner.run(false);
        assertThat(runner.executed()).isEqualTo(1);
        assertThat(Json.read(Files.readString(dir.resolve("summary.json")), ExperimentResult.class)).as("summary.json reads back as its type")
            .isEqualTo(result);
        assertThat(one).exists();

        final List<String> csv = Files.readAllLines(dir.resolve("summary.csv"));
        assertThat(csv).hasSize(7);
        assertThat(csv.get(0)).startsWith("scenario,model,workers,stragglers,policy,seed,jctSeconds");
        final List<ExperimentRow> rows = ExperimentRow.readCsv(dir.resolve("summary.csv"));
        assertThat(rows).hasSize(6);
        assertThat(Files.readAllLines(dir.resolve("scenarios.csv")).get(0))
            .startsWith("scenario,policy,seeds,jctSecondsMean,jctSecondsCi95Low,jctSecondsCi95High,")
            .endsWith(",accuracyWelchP,pairedSpeedup,pairedSpeedupCi95Low,pairedSpeedupCi95High,pairedTtaSpeedup,"
                + "pairedTtaSpeedupCi95Low,pairedTtaSpeedupCi95High");
        final JsonNode summary = JSON.readTree(Files.readString(dir.resolve("summary.json")));
        assertThat(summary.path("schemaVersion").asInt()).isEqualTo(2);
        assertThat(summary.path("baseline").asText()).isEqualTo("bsp");
        // the runs in summary.json are the CSV's rows
        for (int i = 0; i < rows.size(); i++) {
            assertThat(JSON.treeToValue(summary.path("runs").get(i), ExperimentRow.class)).isEqualTo(rows.get(i));
        }
        final JsonNode scenario = summary.path("scenarios").get(0);
        final JsonNode bsp = scenario.path("policies").path("bsp");
        final JsonNode ssp = scenario.path("policies").path("ssp:2");
        assertThat(bsp.path("speedupVsBsp").asDouble()).isEqualTo(1.0);
        assertThat(ssp.path("speedupVsBsp").asDouble()).isCloseTo(
            bsp.path("jctSeconds").path("mean").asDouble() / ssp.path("jctSeconds").path("mean").asDouble(),
            org.assertj.core.api.Assertions.within(1e-9));
        assertThat(summary.path("policies").path("dynamic").has("speedupVsBsp")).isTrue();
        // two seeds: a t-interval around each mean, and Welch's p against BSP
        final JsonNode jctSsp = ssp.path("jctSeconds");
        assertThat(jctSsp.path("ci95")).hasSize(2);
        assertThat(jctSsp.path("ci95").get(0).asDouble()).isLessThanOrEqualTo(jctSsp.path("mean").asDouble());
        assertThat(jctSsp.path("ci95").get(1).asDouble()).isGreaterThanOrEqualTo(jctSsp.path("mean").asDouble());
        assertThat(ssp.path("speedupWelchP").asDouble()).isBetween(0.0, 1.0);
        // and the speed-up paired by seed: the geometric mean of the two seeds' ratios, inside its interval
        final JsonNode runs = summary.path("runs");
        double logs = 0;
        for (final long seed : List.of(1L, 2L)) {
            logs += Math.log(jctOf(runs, "bsp", seed) / jctOf(runs, "ssp:2", seed));
        }
        final JsonNode paired = ssp.path("pairedSpeedup");
        assertThat(paired).hasSize(3);
        assertThat(paired.get(0).asDouble()).isCloseTo(Math.exp(logs / 2), org.assertj.core.api.Assertions.within(1e-9));
        assertThat(paired.get(1).asDouble()).isLessThanOrEqualTo(paired.get(0).asDouble());
        assertThat(paired.get(2).asDouble()).isGreaterThanOrEqualTo(paired.get(0).asDouble());
        assertThat(summary.path("runs")).hasSize(6);

        final String html = Files.readString(dir.resolve("report.html"));
        assertThat(html).startsWith("<!DOCTYPE html>").contains("<svg", "Scenario w8-persistent_1_x3", "name: t", "seeds [1, 2]")
            .doesNotContain("src=\"http", "href=\"http", "<script", "<link");
        // the table shows summary.json's values
        for (final String policy : List.of("bsp", "ssp:2", "dynamic")) {
            final JsonNode jct = scenario.path("policies").path(policy).path("jctSeconds");
            assertThat(html).contains(String.format(Locale.ROOT, "<td>%.2f &plusmn; %.2f <span class=\"ci\">[%.2f, %.2f]</span></td>",
                jct.path("mean").asDouble(), jct.path("std").asDouble(), jct.path("ci95").get(0).asDouble(), jct.path("ci95").get(1).asDouble()));
            assertThat(html).contains(String.format(Locale.ROOT, "<td>%.2fx <span class=\"p\">p=",
                scenario.path("policies").path(policy).path("speedupVsBsp").asDouble()));
        }
        assertThat(new String(log.toByteArray(), StandardCharsets.UTF_8)).contains("[4/6]", "done before, kept");
        // every chart also as its own SVG file, linked from the report
        try (java.util.stream.Stream<Path> files = Files.list(dir.resolve("charts"))) {
            final List<Path> svgs = files.toList();
            assertThat(svgs).as("one scenario: JCT and waiting").hasSize(2);
            for (final Path svg : svgs) {
                assertThat(Files.readString(svg)).startsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=");
                assertThat(html).contains("href=\"charts/" + svg.getFileName() + "\"");
            }
        }
    }

    @Test
    void aKeptRunMadeWithOtherSettingsIsAnErrorBeforeAnythingRuns(@TempDir final Path dir) throws Exception {
        final ExperimentSpec spec = ExperimentSpec.parse("name: t\nlrSchedule: cooldown\npolicies: [bsp]\nseeds: [1, 2]", null, false);
        final ExperimentRunner runner = new ExperimentRunner(spec, dir, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        final Path kept = runner.matrix().get(1).dir;
        Files.createDirectories(kept);
        Files.writeString(kept.resolve("summary.json"), "{\"run\": {\"lrSchedule\": \"constant\", \"computeClock\": \"cpu\"}}");
        assertThatThrownBy(() -> runner.run(false)).isInstanceOf(IllegalArgumentException.class)
            .hasMessage(kept + " was run with lrSchedule constant, the file says cooldown: use another --out, or delete that run to run it again");
        assertThat(runner.executed()).isZero();
        assertThat(runner.matrix().get(0).dir.resolve("summary.json")).doesNotExist();

        // a run from before the modelled clock existed was made on the host's
        final ExperimentSpec modelled = ExperimentSpec.parse("name: t\nstepTime: 40ms\npolicies: [bsp]", null, false);
        final ExperimentRunner again = new ExperimentRunner(modelled, dir.resolve("m"),
            new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        final Path old = again.matrix().get(0).dir;
        Files.createDirectories(old);
        Files.writeString(old.resolve("summary.json"), "{\"run\": {\"lrSchedule\": \"constant\"}}");
        assertThatThrownBy(() -> again.run(false)).hasMessageContaining("was run with stepTime 0, the file says 40ms");
    }

    @Test
    void chartsHaveTicksAtRoundNumbersGridlinesAndALegend() {
        final String chart = SvgChart.line("t (s)", "accuracy", List.of(new SvgChart.Series("bsp",
            List.of(new double[] {1, 0.5}, new double[] {2, 0.8}))), List.of(new double[] {1.5, 0}), 0.8, true);
        assertThat(chart).contains("<polyline", "stroke-dasharray=\"5,4\"", "target 0.80", ">bsp<", ">0.0</text>", ">2.0</text>",
            ">0.5</text>", ">0.8</text>", "stroke=\"#e4e4e4\"");
        final String bars = SvgChart.bars("waiting", List.of("worker 0", "worker 1"), List.of("bsp", "dynamic"),
            new double[][] {{1, 2}, {0.5, 0.25}}, new double[][][] {{{0.5, 1.5}, null}, {null, null}});
        // the background, 4 bars, 2 legend swatches; one whisker
        assertThat(bars.split("<rect", -1)).hasSize(1 + 1 + 4 + 2);
        assertThat(bars.split("<path", -1)).hasSize(2);
        assertThat(bars).contains("<title>dynamic, worker 1: 0.250</title>", ">worker 0</text>", ">2.0</text>");
        // categories too many for their width are thinned, not overprinted
        final List<String> many = new ArrayList<>();
        for (int k = 0; k < 60; k++) {
            many.add("staleness " + k);
        }
        final String thin = SvgChart.bars("n", many, List.of("ssp"), new double[][] {new double[60]}, null);
        assertThat(thin).contains(">staleness 0<").doesNotContain(">staleness 1<");
        // a legend name longer than the legend is shortened, the whole in its tooltip
        final String longName = "a-policy-name-far-too-long-for-the-legend";
        assertThat(SvgChart.bars("n", List.of("x"), List.of(longName), new double[][] {{1}}, null))
            .contains("<title>" + longName + "</title>", "\u2026</text>");
    }

    @Test
    void ticksAreRoundNumbersCoveringTheRange() {
        assertThat(SvgChart.ticks(0, 7.3, 6)).containsExactly(0.0, 2.0, 4.0, 6.0, 8.0);
        assertThat(SvgChart.ticks(0.42, 0.87, 5)).containsExactly(0.4, 0.5, 0.6, 0.7, 0.8, 0.9);
        assertThat(SvgChart.ticks(0, 1234, 5)).containsExactly(0.0, 500.0, 1000.0, 1500.0);
        assertThat(SvgChart.tickLabel(0.30000000000000004, SvgChart.ticks(0, 1, 5))).isEqualTo("0.3");
        assertThat(SvgChart.tickLabel(1500, SvgChart.ticks(0, 1234, 5))).isEqualTo("1500");
    }

    @Test
    void theCsvKeepsCommasQuotesAndLineBreaksInTheirCellsAndSmallValues(@TempDir final Path dir) throws Exception {
        final List<ExperimentRow> rows = List.of(
            new ExperimentRow("w4,trace", "mlp", 4, "trace:file=a \"b\".csv\r\nnext", "bsp+exclude:2", 3, 1.25e-7, null, 0.5, 0.1, 0.81, 2, "modelled"),
            new ExperimentRow("w4", null, 8, "none", "ssp:2", 4, 12.5, 10.0, 1e-12, 0.9, null, 0, "virtual"));
        ExperimentRow.writeCsv(dir.resolve("summary.csv"), rows);
        assertThat(ExperimentRow.readCsv(dir.resolve("summary.csv"))).isEqualTo(rows);
        assertThat(Files.readString(dir.resolve("summary.csv"))).contains("1.25E-7", "1.0E-12").doesNotContain("0.000000");
    }
}
