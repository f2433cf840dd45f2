package io.serene.systemtests;

import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code serene train} with {@code --metrics-port} and {@code --control-port}: /metrics scraped
 * during the run shows R rising and the workers' lag; a worker process paused (SIGSTOP) stalls the
 * BSP round, which the run's log and {@code serene control show} name; resumed (SIGCONT), the run
 * finishes. Multi-process: tagged slow.
 */
@Tag("slow")
class TrainObservabilitySystemTest {
    private static final Pattern METRICS = Pattern.compile("metrics on http://127\\.0\\.0\\.1:(\\d+)/metrics");
    private static final Pattern CONTROL = Pattern.compile("control on tcp (127\\.0\\.0\\.1:\\d+)");
    private static final Pattern RELEASED = Pattern.compile("serene_job_released_round\\{job=\"1\"} ([0-9.]+)");

    @Test
    @Timeout(240)
    void metricsFollowATrainingRunAndAPausedWorkerIsNamed(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final Process train = SereneProcess.start("train", "--workers", "2", "--rounds", "400", "--batch", "32",
            "--data", dir.toString(), "--seed", "4", "--out", dir.resolve("run").toString(), "--metrics-port", "0",
            "--control-port", "0", "--stall-seconds", "0.5");
        final List<String> lines = new CopyOnWriteArrayList<>();
        final Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(train.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    lines.add(line);
                }
            } catch (final Exception ignored) {
                // the process ended
            }
        });
        reader.setDaemon(true);
        reader.start();
        try {
            final String banner = await(lines, l -> l.contains("metrics on http://"), 60);
            final Matcher m = METRICS.matcher(banner);
            final Matcher c = CONTROL.matcher(banner);
            assertThat(m.find() && c.find()).as(banner).isTrue();
            final URI uri = URI.create("http://127.0.0.1:" + m.group(1) + "/metrics");

            final double first = awaitReleased(uri, 5, 60);
            Thread.sleep(500);
            final String text = scrape(uri);
            assertThat(released(text)).as("R rises").isGreaterThan(first);
            assertThat(text).contains("serene_worker_lag_rounds{job=\"1\",worker=\"1\"}", "serene_job_workers{job=\"1\"} 2.0");

            final ProcessHandle worker1 = train.toHandle().descendants()
                .filter(p -> commandLine(p).contains("\0--id\0" + "1\0"))
                .findFirst().orElseThrow(() -> new AssertionError("no worker 1 process"));
            signal("STOP", worker1);
            String stalledRound = null;
            try {
                // (a round may have waited at the start too, while the workers warmed up)
                final String stall = await(lines, l -> l.contains("has waited") && l.contains("for worker 1 ("), 30);
                final Matcher round = Pattern.compile("job 1: round (\\d+) has waited [0-9.]+ s for worker 1 \\(bound=0").matcher(stall);
                assertThat(round.find()).as(stall).isTrue();
                stalledRound = round.group(1);
                final Process show = SereneProcess.start("control", "show", "--switch", c.group(1), "--job", "1");
                final String shown = new String(show.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(show.waitFor(60, TimeUnit.SECONDS)).isTrue();
                assertThat(shown).containsPattern("round \\d+ has waited [0-9.]+ s for worker 1 \\(STALLED\\)");
                assertThat(scrape(uri)).contains("serene_job_stalled{job=\"1\"} 1.0", "serene_worker_awaited{job=\"1\",worker=\"1\"} 1.0");
            } finally {
                signal("CONT", worker1);
            }
            final String resumed = "job 1: round " + stalledRound + " released after";
            await(lines, l -> l.startsWith(resumed), 30);
            assertThat(train.waitFor(180, TimeUnit.SECONDS)).isTrue();
            reader.join(5_000);
            assertThat(train.exitValue()).as(String.join("\n", lines)).isZero();
            assertThat(lines).anySatisfy(l -> assertThat(l).contains("model hashes all equal"));
        } finally {
            train.destroyForcibly();
        }
    }

    /** The process's arguments, NUL-separated, from /proc (ProcessHandle.Info truncates long ones). */
    private static String commandLine(final ProcessHandle p) {
        try {
            return new String(Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline")), StandardCharsets.UTF_8);
        } catch (final Exception gone) {
            return "";
        }
    }

    private static void signal(final String name, final ProcessHandle p) throws Exception {
        final Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(p.pid())).inheritIO().start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -" + name).isTrue();
    }

    private static String await(final List<String> lines, final Predicate<String> match, final int seconds) throws Exception {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            final Optional<String> hit = lines.stream().filter(match).findFirst();
            if (hit.isPresent()) {
                return hit.get();
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no such line within " + seconds + " s in:\n" + String.join("\n", lines));
    }

    private static double awaitReleased(final URI uri, final double atLeast, final int seconds) throws Exception {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        double r = -1;
        while (System.nanoTime() < deadline) {
            r = released(scrape(uri));
            if (r >= atLeast) {
                return r;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("R stayed at " + r);
    }

    private static double released(final String text) {
        final Matcher m = RELEASED.matcher(text);
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    private static String scrape(final URI uri) throws Exception {
        final HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(uri).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body();
    }
}
