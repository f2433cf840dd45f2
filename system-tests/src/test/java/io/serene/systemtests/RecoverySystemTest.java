package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.serene.training.CheckpointDir;
import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Recovery under BSP ends with the model of the run without faults (docs/design.md invariant 7): a switch
 * that loses its state, a worker killed and brought back, a worker dying unplanned under
 * --max-restarts, and a run stopped and resumed with --resume; each time the job goes on from the
 * newest checkpoint every worker holds that reads clean (a damaged one is passed over). Under fastest:2, a worker brought back rejoins the others'
 * job, one the job went on without joins again by itself, and one that fell too far behind after
 * they finished is not brought back. Multi-process: tagged slow.
 */
@Tag("slow")
class RecoverySystemTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Path data;
    private static JsonNode clean;

    @TempDir
    static Path shared;

    private static List<String> train(final Path out, final String... more) {
        final List<String> args = new ArrayList<>(List.of("train", "--workers", "3", "--rounds", "90", "--batch", "32", "--eval-every", "20",
            "--data", data.toString(), "--seed", "5", "--policy", "bsp", "--out", out.toString(), "--timeout-seconds", "20"));
        args.addAll(List.of(more));
        return args;
    }

    /** Runs serene train to its end; its summary with what it printed as "stdout". */
    private static JsonNode run(final List<String> args) throws Exception {
        final Process p = SereneProcess.start(args.toArray(String[]::new));
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(180, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out + err).isZero();
        final ObjectNode s = (ObjectNode) JSON.readTree(Path.of(args.get(args.indexOf("--out") + 1)).resolve("summary.json").toFile());
        return s.put("stdout", out);
    }

    @BeforeAll
    static void aRunWithoutFaults() throws Exception {
        data = shared.resolve("data");
        FashionMnist.writeSynthetic(data, 3_000, 200, 5);
        clean = run(train(shared.resolve("clean")));
        assertThat(clean.path("modelsEqual").asBoolean()).isTrue();
    }

    private static void assertSameModelAsTheCleanRun(final JsonNode s) {
        assertThat(s.path("modelHashes")).as("every worker, bitwise the run without faults").hasSize(3);
        for (final JsonNode h : s.path("modelHashes")) {
            assertThat(h.asText()).isEqualTo(clean.path("modelHashes").get(0).asText());
        }
        assertThat(s.path("samplesPerWorker")).isEqualTo(clean.path("samplesPerWorker"));
    }

    @Test
    @Timeout(300)
    void aSwitchThatLosesItsStateCostsTimeNotTheModel(@TempDir final Path dir) throws Exception {
        final JsonNode s = run(train(dir.resolve("run"), "--checkpoint-every", "20", "--faults", "switch-restart@50"));
        assertSameModelAsTheCleanRun(s);
        assertThat(s.path("relaunches")).hasSize(1);
        // the workers rejoin by themselves, from the last round every one of them applied (kept in memory)
        assertThat(s.path("relaunches").get(0).path("fromRound").asInt()).isBetween(50, 70);
        assertThat(s.path("relaunches").get(0).path("planned").asBoolean()).isTrue();
        assertThat(s.path("stdout").asText()).contains("fault: the switch loses every job (switch-restart@50, round ",
            "the job was rebuilt from its workers' checkpoints: it goes on after round ", "the job went back to round ");
        assertThat(s.path("run").path("checkpointEvery").asInt()).isEqualTo(20);
    }

    @Test
    @Timeout(300)
    void aWorkerKilledUnderBspIsWaitedForThenBroughtBackAndTheJobEndsWithTheSameModel(@TempDir final Path dir) throws Exception {
        final JsonNode s = run(train(dir.resolve("run"), "--checkpoint-every", "20", "--faults", "kill:1@30,restart:1@45"));
        assertSameModelAsTheCleanRun(s);
        assertThat(s.path("failures")).hasSize(1);
        assertThat(s.path("failures").get(0).path("cause").asText()).startsWith("killed by --faults kill:1@30 at round ");
        assertThat(s.path("relaunches")).hasSize(1);
        // BSP cannot go on without worker 1: brought back at once, not at round 45
        assertThat(s.path("relaunches").get(0).path("reason").asText()).startsWith("worker 1 died (killed by --faults kill:1@30");
        assertThat(s.path("relaunches").get(0).path("fromRound").asInt()).isEqualTo(20);
    }

    @Test
    @Timeout(300)
    void aWorkerDyingUnplannedIsRelaunchedFromItsCheckpointUnderMaxRestarts(@TempDir final Path dir) throws Exception {
        final Path out = dir.resolve("run");
        final Process p = SereneProcess.start(train(out, "--checkpoint-every", "20", "--max-restarts", "1")
            .toArray(String[]::new));
        // once every worker holds its checkpoint after round 40, worker 2 dies (as an out-of-memory kill would)
        awaitCheckpoints(out, 40, p);
        final ProcessHandle victim = p.descendants().filter(h -> commandLine(h).contains(" --id 2 ")).findFirst().orElseThrow();
        victim.destroyForcibly();
        final String stdout = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(180, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(stdout + err).isZero();
        final JsonNode s = JSON.readTree(out.resolve("summary.json").toFile());
        assertThat(s.path("relaunches")).hasSize(1);
        assertThat(s.path("relaunches").get(0).path("planned").asBoolean()).isFalse();
        assertThat(s.path("relaunches").get(0).path("fromRound").asInt()).isGreaterThanOrEqualTo(40);
        assertSameModelAsTheCleanRun(s);
    }

    @Test
    @Timeout(300)
    void underAConfigThatGoesOnAWorkerBroughtBackTakesAPeersModelAndEveryWorkerEndsWithTheSameOne(@TempDir final Path dir)
        throws Exception {
        // checkpoints 10 rounds apart, so the others write and delete several while worker 1 is down and rejoins
        final List<String> args = train(dir.resolve("run"), "--checkpoint-every", "10", "--faults", "kill:1@20,restart:1@30");
        args.set(args.indexOf("bsp"), "fastest:2");
        // long enough for worker 1's JVM to be back before the others finish
        args.set(args.indexOf("90"), "1000");
        final JsonNode s = run(args);
        assertThat(s.path("modelHashes")).as("all three, worker 1 back").hasSize(3);
        assertThat(s.path("modelsEqual").asBoolean()).isTrue();
        assertThat(s.path("relaunches")).hasSize(1);
        // the others went on while worker 1 was down: the job goes back to a checkpoint they hold, worker 1 taking a peer's model
        // (if not, the run's and worker 1's output say why)
        final Path w1 = dir.resolve("run").resolve("workers").resolve("worker-1.log");
        assertThat(s.path("relaunches").get(0).path("fromRound").asInt()).as("the run's output:%n%s%nworker 1's:%n%s",
            s.path("stdout").asText(), Files.exists(w1) ? Files.readString(w1) : "(none)").isGreaterThan(20);
        assertThat(s.path("stdout").asText()).contains("worker 1 restarted");
    }

    @Test
    @Timeout(300)
    void aWorkerStoppedWhileTheJobWentOnWithoutItJoinsAgainFromTheWorkersCheckpointsByItself(@TempDir final Path dir)
        throws Exception {
        final Path out = dir.resolve("run");
        final StoppedRun run = stopWorker1(out, 1500);
        // the others go on without it (2 of 3 release a round), past the rounds whose results it holds
        Thread.sleep(3_000);
        final String stdout = run.resume();
        assertThat(stdout).contains("worker 1 fell too far behind job 1", "joining again from the workers' checkpoints");
        final JsonNode s = JSON.readTree(out.resolve("summary.json").toFile());
        assertThat(s.path("failures")).as("no process died: it rejoined by itself").isEmpty();
        assertThat(s.path("relaunches")).hasSize(1);
        // back to a checkpoint the others wrote while it was stopped, its model a peer's
        assertThat(s.path("relaunches").get(0).path("fromRound").asInt()).isGreaterThan(50);
        assertThat(s.path("modelHashes")).as("all three").hasSize(3);
        assertThat(s.path("modelsEqual").asBoolean()).isTrue();
    }

    @Test
    @Timeout(300)
    void aWorkerStoppedUntilTheOthersFinishedFailsSayingWhyAndIsNotBroughtBackToAJobThatIsOver(@TempDir final Path dir)
        throws Exception {
        final Path out = dir.resolve("run");
        final StoppedRun run = stopWorker1(out, 600, "--max-restarts", "1");
        // the others go on without it (2 of 3 release a round) to the end of training, and wait there to evaluate
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!recorded(out, 0, 598) || !recorded(out, 2, 598)) {
            assertThat(run.process().isAlive()).as("the run is still going").isTrue();
            assertThat(System.nanoTime()).as("workers 0 and 2 done").isLessThan(deadline);
            Thread.sleep(50);
        }
        final String stdout = run.resume();
        // its rounds' results are gone from the switch: it says why at once; joining again, it waits for the others in vain,
        // and once it gives up it is not started again
        assertThat(stdout).contains("worker 1 fell too far behind job 1", "(NACK STALE)",
            "worker 1 is not brought back: every other worker finished training, so there is no job left to rejoin");
        final JsonNode s = JSON.readTree(out.resolve("summary.json").toFile());
        assertThat(s.path("failures")).hasSize(1);
        assertThat(s.path("failures").get(0).path("worker").asInt()).isEqualTo(1);
        assertThat(s.path("relaunches")).isEmpty();
        assertThat(s.path("modelHashes")).as("the two that finished").hasSize(2);
        assertThat(s.path("modelsEqual").asBoolean()).isTrue();
    }

    /** A run under fastest:2 with checkpoints 50 rounds apart, worker 1's process stopped (SIGSTOP) once every worker wrote one. */
    private record StoppedRun(Process process, ProcessHandle stopped) {
        /** Lets worker 1 go on (SIGCONT) and waits for the run's end, which must succeed; what it printed. */
        String resume() throws IOException, InterruptedException {
            signal("CONT", stopped);
            final String stdout = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            final String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(process.waitFor(180, TimeUnit.SECONDS)).isTrue();
            assertThat(process.exitValue()).as(stdout + err).isZero();
            return stdout;
        }
    }

    private static StoppedRun stopWorker1(final Path out, final int rounds, final String... more) throws Exception {
        final List<String> args = train(out, "--checkpoint-every", "50");
        args.addAll(List.of(more));
        args.set(args.indexOf("bsp"), "fastest:2");
        args.set(args.indexOf("90"), "" + rounds);
        final Process p = SereneProcess.start(args.toArray(String[]::new));
        awaitCheckpoints(out, 50, p);
        final ProcessHandle stopped = p.descendants().filter(h -> commandLine(h).contains(" --id 1 ")).findFirst().orElseThrow();
        signal("STOP", stopped);
        return new StoppedRun(p, stopped);
    }

    /** Whether worker w's round records hold {@code round} (a round without evaluation: written when it ends). */
    private static boolean recorded(final Path out, final int w, final int round) throws IOException {
        final Path records = out.resolve("workers").resolve("worker-" + w + ".jsonl");
        return Files.exists(records) && Files.readString(records).contains("\"round\":" + round + ",");
    }

    /** Sends a signal (STOP, CONT) to a process. */
    private static void signal(final String name, final ProcessHandle h) throws IOException, InterruptedException {
        final Process kill = new ProcessBuilder("kill", "-" + name, "" + h.pid()).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -" + name + " " + h.pid()).isTrue();
    }

    @Test
    @Timeout(300)
    void aRunStoppedAndResumedEndsWithTheUninterruptedRunsModel(@TempDir final Path dir) throws Exception {
        final Path out = dir.resolve("run");
        final Process p = SereneProcess.start(train(out, "--checkpoint-every", "20").toArray(String[]::new));
        awaitCheckpoints(out, 60, p);
        p.destroy();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.descendants().filter(ProcessHandle::isAlive)).as("its workers stop with it").isEmpty();
        // worker 1's newest checkpoint every worker holds cut short (a disk that lost its tail): the run goes on from
        // the one before, saying so, and still ends with the uninterrupted run's model
        int newest = 0;
        for (int n = 20; n <= 90; n += 20) {
            final int round = n;
            if (java.util.stream.IntStream.range(0, 3).allMatch(w -> Files.exists(out.resolve("checkpoints")
                .resolve("worker-" + w + "-after-" + round + ".ckpt")))) {
                newest = round;
            }
        }
        assertThat(newest).isGreaterThanOrEqualTo(60);
        final Path cut = out.resolve("checkpoints").resolve("worker-1-after-" + newest + ".ckpt");
        Files.write(cut, java.util.Arrays.copyOf(Files.readAllBytes(cut), 1_000));
        final JsonNode s = run(train(out, "--checkpoint-every", "20", "--resume", out.toString()));
        assertSameModelAsTheCleanRun(s);
        assertThat(s.path("stdout").asText()).contains("passed over: " + cut, "is damaged",
            "the job goes on from its checkpoint after round " + (newest - 20));
        assertThat(Files.readAllLines(out.resolve("records.jsonl"))).as("every worker's every round, once").hasSize(3 * 90);
        // other settings than the checkpoints were written with: refused, naming the difference
        final List<String> other = new ArrayList<>(train(out, "--resume", out.toString(), "--lr", "0.3"));
        final Process q = SereneProcess.start(other.toArray(String[]::new));
        final String qOut = new String(q.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String qErr = new String(q.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(q.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(q.exitValue()).isEqualTo(1);
        assertThat(qOut + qErr).contains("the checkpoint was written with other training settings", "now --lr 0.3");
        Files.createDirectories(dir.resolve("empty"));
        SereneProcess.expectFailure(2, "--resume: no checkpoint every worker holds in", train(dir.resolve("empty"), "--resume",
            dir.resolve("empty").toString()).toArray(String[]::new));
    }

    /** A process's command line, its arguments separated by spaces (from /proc: ProcessHandle.Info cuts long ones short). */
    private static String commandLine(final ProcessHandle h) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", "" + h.pid(), "cmdline")), StandardCharsets.UTF_8).replace('\0', ' ');
        } catch (final IOException gone) {
            return "";
        }
    }

    /** Waits until every worker wrote its checkpoint after {@code roundsDone} rounds. */
    private static void awaitCheckpoints(final Path out, final int roundsDone, final Process p) throws IOException, InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (CheckpointDir.newestCommon(out.resolve("checkpoints"), 3) < roundsDone) {
            assertThat(p.isAlive()).as("the run is still going").isTrue();
            assertThat(System.nanoTime()).as("checkpoints after round " + roundsDone).isLessThan(deadline);
            Thread.sleep(50);
        }
    }
}
