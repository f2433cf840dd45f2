package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A dead worker is a straggler too: {@code serene train --faults kill:W@R} kills a worker's process
 * once round R is released. Under a config that does not need it (fastest-2 of 3) the others finish
 * and the summary names the failure; under BSP the stall report names the worker the job waits for
 * and the run fails with a message naming the death; a policy on failed(worker) excludes it once the
 * failure detector names it. Multi-process: tagged slow.
 */
@Tag("slow")
class FaultSystemTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String[] train(final Path dir, final String out, final String policy, final String faults) {
        // long enough after the kill for the survivors to run well past the silence threshold (at least 1 s)
        return new String[] {"train", "--workers", "3", "--rounds", "200", "--batch", "32", "--eval-every", "20", "--data", dir.toString(),
            "--seed", "5", "--out", dir.resolve(out).toString(), "--policy", policy, "--faults", faults, "--timeout-seconds", "6",
            "--stall-seconds", "1", "--silence-rounds", "10"};
    }

    /** {@link #train} under the policy {@code text} (written to DIR/OUT.policy). */
    private static String[] trainWithPolicy(final Path dir, final String out, final String text, final String faults) throws IOException {
        final Path policy = dir.resolve(out + ".policy");
        Files.writeString(policy, text);
        final String[] args = train(dir, out, "bsp", faults);
        final String[] withPolicy = Arrays.copyOf(args, args.length + 2);
        withPolicy[args.length] = "--policy-file";
        withPolicy[args.length + 1] = policy.toString();
        return withPolicy;
    }

    @Test
    @Timeout(300)
    void aWorkerKilledUnderAQuorumLeavesTheOthersToFinishAndIsNamed(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 3_000, 200, 5);
        final Process p = SereneProcess.start(train(dir, "quorum", "fastest:2", "kill:2@15"));
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(240, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out + err).isZero();
        assertThat(out).contains("fault: killing worker 2 (kill:2@15, round ", "worker 2 died after");
        assertThat(out).as("the switch notices it is gone: under fastest-2 no round waits for it")
            .containsPattern("job 1: worker 2 silent for [0-9.]+ s, \\d+ round times");
        final JsonNode s = JSON.readTree(dir.resolve("quorum").resolve("summary.json").toFile());
        assertThat(s.path("failures")).hasSize(1);
        assertThat(s.path("failures").get(0).path("worker").asInt()).isEqualTo(2);
        assertThat(s.path("failures").get(0).path("cause").asText()).startsWith("killed by --faults kill:2@15 at round ");
        assertThat(s.path("failures").get(0).path("roundsDone").asInt()).isBetween(15, 199);
        assertThat(s.path("run").path("faults").asText()).isEqualTo("kill:2@15");
        assertThat(s.path("modelHashes")).as("the two survivors").hasSize(2);
        assertThat(s.path("modelHashes").get(0)).isEqualTo(s.path("modelHashes").get(1));
        assertThat(s.path("finalAccuracy").asDouble()).as("they trained on").isGreaterThan(0.5);
    }

    @Test
    @Timeout(300)
    void underBspTheRunStopsAtOnceSayingTheConfigCannotGoOnWithoutTheDeadWorker(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 3_000, 200, 5);
        final long start = System.nanoTime();
        final Process p = SereneProcess.start(train(dir, "bsp", "bsp", "kill:1@15"));
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(240, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out + err).isEqualTo(1);
        assertThat(err).contains("worker 1 died (killed by --faults kill:1@15 at round ", "cannot go on without it")
            .doesNotContain("Exception");
        assertThat(System.nanoTime() - start).as("no waiting out the others' timeout").isLessThan(TimeUnit.SECONDS.toNanos(60));
    }

    @Test
    @Timeout(300)
    void underAPolicyTheStallNamesTheDeadWorkerAndTheOthersGiveUpNamingTheDeath(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 3_000, 200, 5);
        final Process p = SereneProcess.start(trainWithPolicy(dir, "policy", "policy stays-bsp\nstart bsp\nwhen round >= 100000 then bsp\n",
            "kill:1@15"));
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(240, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out + err).isEqualTo(1);
        assertThat(out).containsPattern("job 1: round \\d+ has waited [0-9.]+ s for worker 1 \\(bound=0");
        assertThat(err).contains("after worker 1 died (killed by --faults kill:1@15 at round ").doesNotContain("Exception");
        assertThat(Files.readString(dir.resolve("policy").resolve("workers").resolve("worker-0.log"))).contains("no clearance for round");
    }

    @Test
    @Timeout(300)
    void aPolicyOnFailedWorkerExcludesTheDeadWorkerOnceTheDetectorNamesIt(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 3_000, 200, 5);
        // the timeout lets the round the dead worker was in go (a change applies only to rounds nobody started);
        // the exclusion then names it for good
        final Process p = SereneProcess.start(trainWithPolicy(dir, "survive",
            "policy survive\nstart bsp + timeout(300)\nwhen failed(worker) then exclude(worker) drop\n", "kill:1@15"));
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(240, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out + err).isZero();
        assertThat(out).containsPattern("job 1: worker 1 silent for [0-9.]+ s")
            .contains("worker 1: failed(worker) == 1 for 1 rounds (silent)");
        final JsonNode s = JSON.readTree(dir.resolve("survive").resolve("summary.json").toFile());
        assertThat(s.path("switches").get(0).path("to").asText()).contains("exclude:1");
        assertThat(s.path("failures").get(0).path("worker").asInt()).isEqualTo(1);
        assertThat(s.path("modelHashes")).as("the two survivors, equal").hasSize(2);
        assertThat(s.path("modelHashes").get(0)).isEqualTo(s.path("modelHashes").get(1));
    }

    @Test
    @Timeout(120)
    void aBadFaultPlanIsRefusedBeforeAnythingRuns(@TempDir final Path dir) throws Exception {
        SereneProcess.expectFailure(2, "--faults: kill:9@1 names worker 9, the job has workers 0..2", train(dir, "x", "bsp", "kill:9@1"));
        SereneProcess.expectFailure(2, "--faults: unknown fault 'explode:1'", train(dir, "x", "bsp", "explode:1"));
    }
}
