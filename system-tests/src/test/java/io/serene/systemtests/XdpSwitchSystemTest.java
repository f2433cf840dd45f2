package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.serene.training.data.FashionMnist;
import io.serene.xdp.XdpBuild;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code serene train --switch xdp}: the switch's DATA path as the XDP program in this host's kernel, each
 * worker in its own network namespace. Root, clang and libbpf-dev (CI installs them); skips, saying which is
 * missing, without.
 */
@Tag("slow")
class XdpSwitchSystemTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @BeforeAll
    static void needsTheKernelsDataPath() {
        final String missing = XdpBuild.missing();
        Assumptions.assumeTrue(missing == null, missing);
    }

    @Test
    @Timeout(400)
    void bspOverTheXdpSwitchEndsWithTheJavaSwitchsModelWithAndWithoutLoss(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode java = train(dir, "java", "--policy", "bsp", "--switch", "java");
        final JsonNode xdp = train(dir, "xdp", "--policy", "bsp", "--switch", "xdp");
        assertThat(xdp.get("run").get("switch").asText()).isEqualTo("xdp");
        // invariant 7: integer aggregation, so one seed gives one model, bit for bit, whichever data plane summed it
        assertThat(xdp.get("modelHashes")).isEqualTo(java.get("modelHashes"));
        final JsonNode c = xdp.get("switchCounters");
        // 100 rounds of ceil(101,770 / 256) = 398 value steps and 2 exponent steps (398 exponents, 256 a step): all released in the kernel
        assertThat(c.get("xdp_releases").asLong()).isEqualTo(100L * 400);
        assertThat(c.get("xdp_results_multicast").asLong()).isEqualTo(100L * 400);
        assertThat(c.get("xdp_partial_releases").asLong()).isZero();
        assertThat(c.get("xdp_stray_data").asLong()).as("no DATA of a job the kernel holds reached the Java switch").isZero();
        assertThat(c.get("results_multicast").asLong()).as("the Java switch released nothing itself").isZero();
        // 1% of every worker's packets lost: retransmissions and the switch's idempotent slots still give the same model
        final JsonNode lossy = train(dir, "lossy", "--policy", "bsp", "--switch", "xdp", "--link-loss", "0.01");
        assertThat(lossy.get("run").get("linkLoss").asDouble()).isEqualTo(0.01);
        assertThat(lossy.get("modelHashes")).isEqualTo(java.get("modelHashes"));
        assertThat(lossy.get("switchCounters").get("xdp_duplicates").asLong()).as("the loss was recovered from").isPositive();
        assertNoNamespacesLeft();
    }

    @Test
    @Timeout(400)
    void sspBoundHoldsAndAHotSwapToBspTakesEffectAtItsRound(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode s = SereneProcess.lastJsonLine(SereneProcess.expectSuccess(command(dir, "ssp", 70, "--policy", "ssp:2@0,bsp@40",
            "--switch", "xdp", "--step-time", "15ms", "--stragglers", "persistent:1:x3")));
        int maxBefore = -1;
        for (final String line : Files.readAllLines(dir.resolve("ssp").resolve("records.jsonl"))) {
            final JsonNode r = JSON.readTree(line);
            final int round = r.get("round").asInt();
            final int staleness = r.get("staleness").asInt();
            if (round < 40) {
                assertThat(staleness).as("SSP(2): no worker starts round c before R >= c - 3, " + r).isLessThanOrEqualTo(2);
                maxBefore = Math.max(maxBefore, staleness);
            } else if (round > 42) {
                // rounds from 40 on are BSP's; the two after the swap may still see SSP's window close
                assertThat(staleness).as("BSP from round 40 on, " + r).isZero();
            }
        }
        assertThat(maxBefore).as("the fast worker ran ahead to the bound, so the bound was what held it").isEqualTo(2);
        assertThat(s.get("modelHashes").get(0)).as("after the last round every worker holds one model").isEqualTo(s.get("modelHashes").get(1));
        assertThat(s.get("switchCounters").get("xdp_drop_beyond_bound").asLong()).isZero();
    }

    @Test
    @Timeout(400)
    void aPolicyExcludesAStragglerFromTheTelemetryTheXdpProgramKeeps(@TempDir final Path dir) throws Exception {
        final JsonNode s = straggling(dir, "policy", "--policy-file", Path.of("..", "examples", "exclude-stragglers.policy").toString());
        // slowdown(worker) reads the compute times and clocks the program keeps: worker 3 is excluded, rounds go on without it
        assertThat(s.get("modeSwitches").asInt()).isPositive();
        assertThat(s.get("switchCounters").get("xdp_partial_releases").asLong()).isPositive();
        assertThat(s.get("modelHashes")).hasSize(4);
        for (final JsonNode hash : s.get("modelHashes")) {
            assertThat(hash).as("after the last round every worker holds one model").isEqualTo(s.get("modelHashes").get(0));
        }
    }

    @Test
    @Timeout(400)
    void aTimeoutReleasesWithoutTheStragglerInTheKernel(@TempDir final Path dir) throws Exception {
        final JsonNode s = straggling(dir, "timeout", "--policy", "bsp+timeout:30");
        final JsonNode c = s.get("switchCounters");
        // worker 3 computes for 80 ms a round: its first steps time out, then the late set lets rounds go on without it; the
        // scanner releases what timed out and the steps of a round whose latch a timeout set after they had all but worker 3
        assertThat(c.get("xdp_timeout_releases").asLong()).as("steps released by their timeout " + c).isPositive();
        assertThat(c.get("xdp_swept_results").asLong()).as("the program's timeout scanner released steps " + c).isPositive();
        assertThat(c.get("xdp_partial_releases").asLong()).as("steps released without worker 3 " + c).isGreaterThan(c.get("xdp_releases").asLong() / 2);
        assertThat(c.get("releases").asLong()).as("the Java switch released none " + c).isZero();
        assertThat(c.get("errors").asLong()).isZero();
        assertThat(s.get("skippedRoundsPerWorker").get(3).asInt()).as("the straggler sat rounds out").isPositive();
        for (final JsonNode hash : s.get("modelHashes")) {
            assertThat(hash).as("after the last round every worker holds one model").isEqualTo(s.get("modelHashes").get(0));
        }
    }

    @Test
    @Timeout(400)
    void forgedForeignAndMalformedPacketsAreDroppedAndCountedAndChangeNothing(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode clean = train(dir, "clean", "--policy", "bsp", "--switch", "xdp");
        final List<String> args = command(dir, "attacked", 100, "--policy", "bsp", "--switch", "xdp");
        final Process p = SereneProcess.start(args.toArray(new String[0]));
        final StringBuilder out = new StringBuilder();
        final Pattern namespace = Pattern.compile("XDP switch: \\d+ worker namespaces (\\S+)-w0");
        final Pattern address = Pattern.compile("switch on udp /([0-9.]+):(\\d+)");
        String ns = null;
        Process attack = null;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                out.append(line).append('\n');
                final Matcher n = namespace.matcher(line);
                if (n.find()) {
                    ns = n.group(1) + "-w1";
                }
                final Matcher a = address.matcher(line);
                if (a.find() && ns != null && attack == null) {
                    // from worker 1's namespace, until the run ends (8 s at most): DATA of the job under a made-up MAC, DATA of a job the switch
                    // does not have, and runts
                    attack = new ProcessBuilder("ip", "netns", "exec", ns, "/usr/bin/python3", "-c", ATTACK, a.group(1), a.group(2))
                        .redirectErrorStream(true).start();
                }
            }
        }
        assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out.toString()).isZero();
        assertThat(attack).as("the run said where its switch is: " + out).isNotNull();
        attack.waitFor(30, TimeUnit.SECONDS);
        assertThat(new String(attack.getInputStream().readAllBytes(), StandardCharsets.UTF_8)).contains("sent");
        final String[] lines = out.toString().strip().split("\n");
        final JsonNode attacked = JSON.readTree(lines[lines.length - 1]);
        assertThat(attacked.get("modelHashes")).as("nothing the attacker sent changed the model").isEqualTo(clean.get("modelHashes"));
        final JsonNode c = attacked.get("switchCounters");
        assertThat(c.get("xdp_drop_bad_mac").asLong()).as("forged DATA of a job the kernel holds: dropped there " + c).isPositive();
        assertThat(c.get("drop_truncated").asLong()).as("runts: up to the Java switch, counted there " + c).isPositive();
        assertThat(c.get("drop_bad_mac").asLong() + c.get("drop_unknown_job").asLong())
            .as("DATA of a job the switch does not have: counted by the Java switch " + c).isPositive();
        assertNoNamespacesLeft();
    }

    @Test
    @Timeout(400)
    void theAllreduceBenchRunsOverTheXdpSwitchExactlyAgainstGloo() throws Exception {
        SereneProcess.assumeGloo();
        final String out = SereneProcess.expectSuccess(List.of("bench", "allreduce", "--switch", "xdp", "--baseline", "gloo",
            "--workers", "2", "--elements", "20000", "--rounds", "3", "--warmup", "2", "--repeats", "1",
            "--gloo-script", Path.of("..", "benchmarks", "gloo", "allreduce.py").toString(), "--json"));
        assertThat(out).contains("processes in network namespaces, over UDP through the XDP switch", "XDP switch counters:");
        final JsonNode json = SereneProcess.lastJsonLine(out);
        assertThat(json.path("transport").asText()).isEqualTo("xdp");
        assertThat(json.path("chunkElements").asInt()).as("the XDP switch's chunk, jumbo").isEqualTo(8192);
        assertThat(json.path("allExact").asBoolean()).as("every worker's every aggregate exact, and gloo's").isTrue();
        assertThat(json.path("medianElementsPerSecond").asDouble()).isPositive();
        assertThat(json.path("medianCpuMsPerRound").asDouble()).isPositive();
        assertThat(json.path("baselineCpuMsPerRound").asDouble()).isPositive();
        assertNoNamespacesLeft();
    }

    @Test
    @Timeout(400)
    void serenesSwitchCommandServesWorkersInItsNamespacesToTheJavaSwitchsModel(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final int base = 17_000 + (int) (ProcessHandle.current().pid() % 1_000);
        final List<String> java = switchAndWorkers(dir, List.of("--port", "" + base), null);
        final List<String> xdp = switchAndWorkers(dir, List.of("--port", "" + (base + 1), "--xdp", "2"), Pattern.compile(
            "worker (\\d): ip netns exec (\\S+) serene worker --switch (\\S+) "));
        assertThat(xdp).as("BSP: the same model through either data plane").isEqualTo(java).hasSize(2);
        assertThat(xdp.get(0)).isEqualTo(xdp.get(1));
        assertNoNamespacesLeft();
    }

    /** {@code serene switch} with {@code options} and two {@code serene worker}s (in its namespaces, if it prints them); their models. */
    private static List<String> switchAndWorkers(final Path dir, final List<String> options, final Pattern placed) throws Exception {
        final List<String> args = new ArrayList<>(List.of("switch", "--sync", "bsp", "--stats-seconds", "0"));
        args.addAll(options);
        final Process sw = SereneProcess.start(args.toArray(new String[0]));
        try (BufferedReader in = new BufferedReader(new InputStreamReader(sw.getInputStream(), StandardCharsets.UTF_8))) {
            final List<List<String>> where = new ArrayList<>();
            final StringBuilder seen = new StringBuilder();
            for (String line = in.readLine(); line != null && where.size() < 2; line = in.readLine()) {
                seen.append(line).append('\n');
                final Matcher m = placed == null ? null : placed.matcher(line);
                if (m != null && m.find()) {
                    where.add(List.of(m.group(2), m.group(3)));
                } else if (placed == null && line.contains("switch listening on")) {
                    final String port = options.get(1);
                    where.add(List.of("", "127.0.0.1:" + port));
                    where.add(List.of("", "127.0.0.1:" + port));
                }
            }
            assertThat(where).as(seen.toString()).hasSize(2);
            final List<Process> workers = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                final List<String> prefix = where.get(w).get(0).isEmpty() ? List.of() : List.of("ip", "netns", "exec", where.get(w).get(0));
                workers.add(SereneProcess.startIn(prefix, "worker", "--switch", where.get(w).get(1), "--id", "" + w, "--workers", "2",
                    "--job", "3", "--rounds", "30", "--batch", "32", "--eval-every", "30", "--data", dir.toString(), "--seed", "9"));
            }
            final List<String> hashes = new ArrayList<>();
            for (final Process p : workers) {
                final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(p.waitFor(200, TimeUnit.SECONDS)).isTrue();
                assertThat(p.exitValue()).as(out + err).isZero();
                final Matcher m = Pattern.compile("\"modelHash\":\"([0-9a-f]{64})\"").matcher(out);
                assertThat(m.find()).as(out).isTrue();
                hashes.add(m.group(1));
            }
            return hashes;
        } finally {
            sw.destroy();
            assertThat(sw.waitFor(30, TimeUnit.SECONDS)).as("the switch ends on SIGTERM, removing what it set up").isTrue();
        }
    }

    private static final String ATTACK = String.join("\n",
        "import socket, struct, sys, time, os",
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
        "to = (sys.argv[1], int(sys.argv[2]))",
        "def data(job, seq, mac):",
        "    h = struct.pack('<HBBHHIHbBqiiiHHQQ', 0x5345, 4, 1, 1, 256, job, 0, -128, (seq // 64) & 1, seq, 0, seq, 0, seq % 64, 0,"
            + " 1 << 62, mac)",
        "    return h + os.urandom(1024)",
        "end = time.time() + 8; n = 0",
        "while time.time() < end:",
        "    try:",
        "        s.sendto(data(1, n % 64, 0x1234567 + n), to)",
        "        s.sendto(data(77, n % 64, 0x7654321 + n), to)",
        "        s.sendto(b'\\x45\\x53' + os.urandom(18), to)",
        "    except OSError:",
        "        break  # the run ended: its namespaces are gone",
        "    n += 1",
        "    time.sleep(0.005)",
        "print('sent', 3 * n)");

    /** 4 workers over the XDP switch for 60 rounds of 20 ms, worker 3 at 4x, under {@code policy} (its flag and value). */
    private static JsonNode straggling(final Path dir, final String name, final String... policy) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final List<String> args = new ArrayList<>(List.of("train", "--workers", "4", "--rounds", "60", "--batch", "32", "--eval-every", "30",
            "--data", dir.toString(), "--seed", "1", "--out", dir.resolve(name).toString(), "--json", "--switch", "xdp",
            "--stragglers", "persistent:3:x4", "--step-time", "20ms"));
        args.addAll(List.of(policy));
        return SereneProcess.lastJsonLine(SereneProcess.expectSuccess(args));
    }

    private static JsonNode train(final Path data, final String name, final String... extra) throws Exception {
        return SereneProcess.lastJsonLine(SereneProcess.expectSuccess(command(data, name, 100, extra)));
    }

    private static List<String> command(final Path data, final String name, final int rounds, final String... extra) {
        final List<String> args = new ArrayList<>(List.of("train", "--workers", "2", "--rounds", "" + rounds, "--batch", "32",
            "--eval-every", "50", "--data", data.toString(), "--seed", "1", "--out", data.resolve(name).toString(), "--json"));
        args.addAll(List.of(extra));
        return args;
    }

    private List<String> namespacesBefore;

    @BeforeEach
    void noteNamespaces() throws Exception {
        namespacesBefore = namespaces();
    }

    private void assertNoNamespacesLeft() throws Exception {
        assertThat(namespaces()).as("the runs removed their worker namespaces").isEqualTo(namespacesBefore);
    }

    private static List<String> namespaces() throws Exception {
        final Process p = new ProcessBuilder("ip", "netns", "list").start();
        final String list = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(10, TimeUnit.SECONDS);
        return list.lines().map(l -> l.split(" ")[0]).sorted().toList();
    }
}
