package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code serene train} end to end on a synthetic dataset: records, summary, JSON line, failures, no orphans. */
/** Multi-process: tagged slow (mvn -Pall runs it). */
@Tag("slow")
class TrainSystemTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    @Timeout(240)
    void trainsTwoWorkerProcessesAndWritesRecordsAndSummary(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final Path out = dir.resolve("run");
        final Process p = SereneProcess.start("train", "--workers", "2", "--rounds", "40", "--batch", "32", "--eval-every", "10",
            "--data", dir.toString(), "--seed", "3", "--out", out.toString(), "--stragglers", "persistent:1:x2",
            "--target-accuracy", "0.5", "--json");
        final String stdout = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(200, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(stdout).isZero();
        final String[] lines = stdout.strip().split("\n");
        final JsonNode last = JSON.readTree(lines[lines.length - 1]);
        for (final String field : List.of("finalAccuracy", "jctSeconds", "ttaSeconds", "cumulativeWaitingSeconds", "computeShare",
            "modelHashes", "seed")) {
            assertThat(last.has(field)).as(field + " in " + last).isTrue();
        }
        assertThat(last.get("seed").asLong()).isEqualTo(3);
        assertThat(last.get("finalAccuracy").asDouble()).as("learns the synthetic classes").isGreaterThan(0.5);
        assertThat(last.get("ttaSeconds").asDouble()).isPositive().isLessThanOrEqualTo(last.get("jctSeconds").asDouble());
        assertThat(last.get("modelHashes")).hasSize(2);
        assertThat(last.get("modelHashes").get(0)).as("BSP: both workers hold the same model").isEqualTo(last.get("modelHashes").get(1));
        assertThat(last.get("computeShare").asDouble()).isBetween(0.0, 1.0);
        assertThat(last.get("cumulativeWaitingSeconds").asDouble()).as("worker 0 waits for the 2x straggler").isPositive();
        assertThat(JSON.readTree(Files.readString(out.resolve("summary.json")))).isEqualTo(last);
        final JsonNode trace = JSON.readTree(out.resolve("trace.json").toFile());
        int computeSlices = 0;
        for (final JsonNode e : trace.path("traceEvents")) {
            computeSlices += e.path("name").asText().equals("compute") ? 1 : 0;
        }
        assertThat(computeSlices).as("trace.json: a compute slice per worker and round").isEqualTo(80);
        for (int w = 0; w < 2; w++) {
            final Path events;
            try (Stream<Path> files = Files.list(out.resolve("tensorboard").resolve("worker-" + w))) {
                events = files.findFirst().orElseThrow();
            }
            // TFRecord framing: 8-byte length, 4-byte CRC, the record, 4-byte CRC
            final ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(events)).order(ByteOrder.LITTLE_ENDIAN);
            int records = 0;
            while (b.remaining() >= 12) {
                final long length = b.getLong();
                b.position(b.position() + 4 + (int) length + 4);
                records++;
            }
            assertThat(b.remaining()).isZero();
            assertThat(records).as("TensorBoard events of worker " + w + ": version, config, 7 scalars a round, accuracies")
                .isGreaterThanOrEqualTo(2 + 40 * 7);
        }
        for (int w = 0; w < 2; w++) {
            assertThat(Files.readString(out.resolve("workers").resolve("worker-" + w + ".log"))).as("worker " + w + "'s log")
                .contains("worker " + w + "/2: mlp").contains("\"modelHash\"").doesNotContain("@progress");
        }

        final List<String> records = Files.readAllLines(out.resolve("records.jsonl"));
        assertThat(records).hasSize(80);
        int evaluated = 0;
        double injected0 = 0;
        double injected1 = 0;
        for (int i = 0; i < records.size(); i++) {
            final JsonNode r = JSON.readTree(records.get(i));
            assertThat(r.get("round").asInt()).as("sorted by round, then worker").isEqualTo(i / 2);
            assertThat(r.get("worker").asInt()).isEqualTo(i % 2);
            assertThat(r.get("staleness").asInt()).as("BSP: no staleness").isZero();
            assertThat(r.get("releaseSeconds").asDouble()).isGreaterThanOrEqualTo(r.get("sendSeconds").asDouble());
            assertThat(r.get("computeSeconds").asDouble()).isPositive();
            assertThat(r.get("batch").asInt()).as("BSP: every round has both workers, the batch stays 32").isEqualTo(32);
            if (r.get("worker").asInt() == 0) {
                injected0 += r.get("injectedSeconds").asDouble();
            } else {
                injected1 += r.get("injectedSeconds").asDouble();
            }
            if (!r.get("accuracy").isNull()) {
                evaluated++;
            }
        }
        assertThat(injected0).isZero();
        assertThat(injected1).as("worker 1 is the straggler").isPositive();
        assertThat(evaluated).as("rounds 9, 19, 29 and the final one, on both workers").isEqualTo(8);
        assertThat(last.get("accuracyCurve")).hasSize(4);
        assertThat(last.get("samplesPerWorker")).extracting(JsonNode::asLong).containsExactly(1280L, 1280L);
        assertThat(last.get("run").get("rebalance").asBoolean()).isTrue();
        assertThat(last.get("run").get("lrSchedule").asText()).isEqualTo("constant");
        assertThat(last.get("run").get("computeClock").asText()).isEqualTo("cpu");
    }

    @Test
    @Timeout(240)
    void roundsWithFewerContributionsGrowTheBatchUnlessRebalancingIsOff(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode on = fastestOneOfTwo(dir, "on");
        final JsonNode off = fastestOneOfTwo(dir, "off", "--no-rebalance", "--lr-schedule", "cosine");
        assertThat(on.get("run").get("rebalance").asBoolean()).isTrue();
        assertThat(off.get("run").get("rebalance").asBoolean()).isFalse();
        assertThat(off.get("run").get("lrSchedule").asText()).isEqualTo("cosine");
        assertThat(batchesOfWorker0(dir.resolve("off"))).as("off: always 32").containsOnly(32);
        final List<Integer> grown = batchesOfWorker0(dir.resolve("on"));
        assertThat(grown).as("on: worker 0 (fast, alone in most rounds) takes bigger batches, at most 64")
            .allMatch(b -> b >= 32 && b <= 64).anyMatch(b -> b > 32);
        assertThat(on.get("samplesPerWorker").get(0).asLong()).isEqualTo(grown.stream().mapToLong(b -> b).sum());
    }

    @Test
    @Timeout(240)
    void underDropAGradientWhoseRoundWasReleasedWithoutItIsDroppedNotHeld(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode fold = fastestOneOfTwo(dir, "fold");
        final JsonNode drop = oneOfTwo(dir, "drop", "fastest:1+drop");
        assertThat(fold.get("droppedRoundsPerWorker")).as("fold: the straggler's gradients are held for the next open round")
            .extracting(JsonNode::asInt).containsExactly(0, 0);
        // worker 0 is the fast one: released without it only when the host preempted it for a while
        // (two JVMs and the switch on 2 cores), seen once in a loaded full run
        assertThat(drop.get("droppedRoundsPerWorker").get(0).asInt()).as("worker 0 is hardly ever released without")
            .isLessThanOrEqualTo(2);
        final int dropped = drop.get("droppedRoundsPerWorker").get(1).asInt();
        assertThat(dropped).as("drop: the 8x straggler's gradients miss their rounds and are dropped").isPositive();
        long contributed = 0;
        int droppedRecords = 0;
        for (final String line : Files.readAllLines(dir.resolve("drop").resolve("records.jsonl"))) {
            final JsonNode r = JSON.readTree(line);
            if (r.get("worker").asInt() != 1) {
                continue;
            }
            if (r.get("dropped").asBoolean()) {
                droppedRecords++;
                assertThat(r.get("skipped").asBoolean()).as("a dropped round was computed, not skipped").isFalse();
                assertThat(r.get("computeSeconds").asDouble()).isPositive();
                assertThat(r.get("loss").isNull()).isTrue();
            } else if (!r.get("skipped").asBoolean()) {
                contributed += r.get("batch").asInt();
                assertThat(r.get("staleness").asInt()).as("drop: never a held, stale gradient").isZero();
            }
        }
        assertThat(droppedRecords).isEqualTo(dropped);
        assertThat(drop.get("samplesPerWorker").get(1).asLong()).as("dropped batches count in no samples").isEqualTo(contributed);
    }

    @Test
    @Timeout(240)
    void underWbspTheFastWorkerComputesWhileItWaitsAndModelsStayEqual(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode wbsp = oneOfTwo(dir, "wbsp", "wbsp");
        assertThat(wbsp.get("modelHashes").get(0).asText()).as("every worker applies the same aggregates")
            .isEqualTo(wbsp.get("modelHashes").get(1).asText());
        final long fast = wbsp.get("samplesPerWorker").get(0).asLong();
        final long straggler = wbsp.get("samplesPerWorker").get(1).asLong();
        // the 8x straggler is waited for: its aggregate comes soon after it sends (a few extra gradients while
        // its expectations form, or when the host preempted the fast worker)
        assertThat(straggler).as("the straggler hardly ever computes more").isBetween(30L * 32, 35L * 32);
        assertThat(fast).as("worker 0 fills its waits for the straggler with more gradients").isGreaterThan(2 * straggler);
        long records = 0;
        for (final String line : Files.readAllLines(dir.resolve("wbsp").resolve("records.jsonl"))) {
            final JsonNode r = JSON.readTree(line);
            if (r.get("worker").asInt() == 0) {
                assertThat(r.get("batch").asInt() % 32).as("whole batches").isZero();
                assertThat(r.get("staleness").asInt()).as("BSP's rounds: nothing pending when a round is computed").isZero();
                records += r.get("batch").asInt();
            }
        }
        assertThat(records).as("the records count every image").isEqualTo(fast);
    }

    @Test
    @Timeout(240)
    void deferredEvaluationScoresTheSameModelsAsEvaluatingDuringTraining(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode deferred = bsp(dir, "deferred");
        final JsonNode inline = bsp(dir, "inline", "--no-deferred-eval");
        assertThat(deferred.get("run").get("evaluation").asText()).isEqualTo("deferred");
        assertThat(inline.get("run").get("evaluation").asText()).isEqualTo("inline");
        assertThat(deferred.get("perRound").get("evaluationDeferred").asBoolean()).isTrue();
        assertThat(inline.get("perRound").get("evaluationDeferred").asBoolean()).isFalse();
        // BSP with one seed: the same models round by round, so the same accuracies, whenever evaluated
        assertThat(deferred.get("modelHashes")).isEqualTo(inline.get("modelHashes"));
        assertThat(deferred.get("finalAccuracy").asDouble()).isEqualTo(inline.get("finalAccuracy").asDouble());
        assertThat(deferred.get("accuracyCurve")).hasSize(3);
        for (int i = 0; i < 3; i++) {
            final JsonNode d = deferred.get("accuracyCurve").get(i);
            final JsonNode n = inline.get("accuracyCurve").get(i);
            assertThat(d.get("round").asInt()).isEqualTo(n.get("round").asInt());
            assertThat(d.get("accuracy").asDouble()).as("round " + d.get("round")).isEqualTo(n.get("accuracy").asDouble());
            assertThat(d.get("seconds").asDouble()).isLessThanOrEqualTo(deferred.get("jctSeconds").asDouble());
        }
        // deferred: a record's accuracy is stamped when the worker held the model, before it started the next round
        final List<String> records = Files.readAllLines(dir.resolve("deferred").resolve("records.jsonl"));
        assertThat(records).hasSize(60);
        final Map<String, Double> starts = new HashMap<>();
        for (final String line : records) {
            final JsonNode r = JSON.readTree(line);
            starts.put(r.get("worker").asInt() + "/" + r.get("round").asInt(), r.get("startSeconds").asDouble());
        }
        int evaluated = 0;
        for (final String line : records) {
            final JsonNode r = JSON.readTree(line);
            if (!r.get("accuracy").isNull() && r.get("round").asInt() < 29) {
                evaluated++;
                assertThat(r.get("evaluatedSeconds").asDouble())
                    .isLessThanOrEqualTo(starts.get(r.get("worker").asInt() + "/" + (r.get("round").asInt() + 1)));
            }
        }
        assertThat(evaluated).as("rounds 9 and 19 on both workers").isEqualTo(4);
    }

    @Test
    @Timeout(240)
    void overSharedMemoryBspTrainsTheSameModelsAsOverUdp(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode udp = bsp(dir, "udp");
        final JsonNode shm = bsp(dir, "shm", "--link", "shm");
        assertThat(udp.get("run").get("link").asText()).isEqualTo("udp");
        assertThat(shm.get("run").get("link").asText()).isEqualTo("shm");
        // BSP with one seed: every aggregate the same bit for bit, whichever link carried it
        assertThat(shm.get("modelHashes")).isEqualTo(udp.get("modelHashes"));
        assertThat(shm.get("finalAccuracy").asDouble()).isEqualTo(udp.get("finalAccuracy").asDouble());
        assertThat(Files.readString(dir.resolve("shm").resolve("workers").resolve("worker-0.log"))).doesNotContain("error");
    }

    private static JsonNode bsp(final Path data, final String name, final String... extra) throws Exception {
        final List<String> args = new ArrayList<>(List.of("train", "--workers", "2", "--rounds", "30", "--batch", "32",
            "--eval-every", "10", "--data", data.toString(), "--seed", "6", "--out", data.resolve(name).toString(), "--json"));
        args.addAll(List.of(extra));
        final String stdout = SereneProcess.expectSuccess(args);
        if (extra.length == 0) {
            assertThat(stdout).contains("all 2 workers finished training").contains("evaluating their copies of the model");
        }
        return SereneProcess.lastJsonLine(stdout);
    }

    /** The batch of every round worker 0 computed (not skipped). */
    private static List<Integer> batchesOfWorker0(final Path run) throws Exception {
        final List<Integer> out = new ArrayList<>();
        for (final String line : Files.readAllLines(run.resolve("records.jsonl"))) {
            final JsonNode r = JSON.readTree(line);
            if (r.get("worker").asInt() == 0 && !r.get("skipped").asBoolean()) {
                out.add(r.get("batch").asInt());
            }
        }
        assertThat(out).as("worker 0 computed most rounds").hasSizeGreaterThan(15);
        return out;
    }

    private static JsonNode fastestOneOfTwo(final Path data, final String name, final String... extra) throws Exception {
        return oneOfTwo(data, name, "fastest:1", extra);
    }

    private static JsonNode oneOfTwo(final Path data, final String name, final String policy, final String... extra) throws Exception {
        final List<String> args = new ArrayList<>(List.of("train", "--workers", "2", "--rounds", "30", "--batch", "32",
            "--eval-every", "0", "--policy", policy, "--stragglers", "persistent:1:x8", "--data", data.toString(), "--seed", "4",
            "--out", data.resolve(name).toString(), "--json"));
        args.addAll(List.of(extra));
        return SereneProcess.lastJsonLine(SereneProcess.expectSuccess(args));
    }

    @Test
    @Timeout(120)
    void badInputGetsAClearMessageAndANonZeroExit(@TempDir final Path dir) throws Exception {
        SereneProcess.expectFailure(2, "no dataset directory", "train", "--data", dir.resolve("missing").toString(),
            "--out", dir.resolve("o").toString());
        FashionMnist.writeSynthetic(dir, 100, 20, 5);
        final String data = dir.toString();
        SereneProcess.expectFailure(2, "unknown model 'resnet': expected mlp or cnn", "train", "--model", "resnet", "--data", data);
        SereneProcess.expectFailure(2, "unknown straggler profile part 'sometimes'", "train", "--stragglers", "sometimes", "--data", data);
        SereneProcess.expectFailure(2, "--workers must be in 1..64", "train", "--workers", "0", "--data", data);
        SereneProcess.expectFailure(2, "--lr-schedule must be constant, cosine or cooldown, was 'step'", "train", "--lr-schedule", "step",
            "--data", data);
        SereneProcess.expectFailure(2, "give --rounds or --epochs, not both", "train", "--rounds", "3", "--epochs", "1", "--data", data);
        SereneProcess.expectFailure(2, "ssp:x", "train", "--policy", "ssp:x", "--data", data);
        final Path bad = dir.resolve("bad.policy");
        Files.writeString(bad, "policy bad\nstart bsp\nwhen lag >= then ssp(4)\n");
        SereneProcess.expectFailure(2, "3:", "train", "--policy-file", bad.toString(), "--data", data);
    }

    @Test
    @Timeout(180)
    void stoppingTheLauncherStopsEveryWorker(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        for (final boolean kill : new boolean[] {false, true}) {
            final Process p = SereneProcess.start("train", "--workers", "2", "--rounds", "100000", "--batch", "16", "--eval-every", "0",
                "--data", dir.toString(), "--out", dir.resolve("run-" + kill).toString());
            // the workers are training once worker 0 recorded a round
            final Path records = dir.resolve("run-" + kill).resolve("workers").resolve("worker-0.jsonl");
            awaitFirstRecord(p, records);
            final List<ProcessHandle> workers = new ArrayList<>(p.descendants().toList());
            assertThat(workers).as("two worker processes").hasSizeGreaterThanOrEqualTo(2);
            if (kill) {
                p.destroyForcibly(); // SIGKILL: no shutdown hook; the workers see their stdin close
            } else {
                p.destroy(); // SIGTERM, as Ctrl-C: the shutdown hook stops them
            }
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(survivors(workers)).as("orphans after " + (kill ? "SIGKILL" : "SIGTERM"))
                .isEmpty();
        }
    }

    @Test
    @Timeout(180)
    void aFailingWorkerStopsTheRunWithItsLastOutputAndLeavesNoOrphans(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final Process p = SereneProcess.start("train", "--workers", "3", "--rounds", "100000", "--batch", "16", "--eval-every", "0",
            "--data", dir.toString(), "--out", dir.resolve("run").toString());
        final Path records = dir.resolve("run").resolve("workers").resolve("worker-0.jsonl");
        awaitFirstRecord(p, records);
        final List<ProcessHandle> workers = new ArrayList<>(p.descendants().toList());
        assertThat(workers).hasSizeGreaterThanOrEqualTo(3);
        workers.get(1).destroyForcibly();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the launcher gives up").isTrue();
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(err).isEqualTo(1);
        assertThat(err).containsPattern("worker \\d died \\(exit \\d+\\) and the job's sync config cannot go on without it")
            .doesNotContain("Exception");
        assertThat(survivors(workers)).as("orphans").isEmpty();
    }

    /** Waits until the run's worker wrote its first round record: the workers are training. */
    private static void awaitFirstRecord(final Process p, final Path records) throws Exception {
        final long started = System.nanoTime();
        while (!(Files.exists(records) && Files.size(records) > 0)) {
            if (!p.isAlive()) {
                throw new AssertionError("serene train ended early: " + new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
            }
            if (System.nanoTime() - started > TimeUnit.SECONDS.toNanos(90)) {
                // no orphans from a failed test either
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                throw new AssertionError("training did not start within 90 s: no record in " + records);
            }
            Thread.sleep(100);
        }
    }

    /** The processes still alive after up to 20 s. */
    private static List<ProcessHandle> survivors(final List<ProcessHandle> processes) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (processes.stream().anyMatch(ProcessHandle::isAlive) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        return processes.stream().filter(ProcessHandle::isAlive).toList();
    }
}
