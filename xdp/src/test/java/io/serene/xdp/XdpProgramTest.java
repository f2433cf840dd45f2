package io.serene.xdp;

import io.serene.dataplane.OffloadJob;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The XDP program itself, run on crafted packets in the kernel (BPF_PROG_TEST_RUN through the driver): one job of two
 * workers, chunks of 8 elements, one step a round, no keys. Skips where the program cannot be built and loaded (not
 * root, no clang or libbpf-dev).
 */
class XdpProgramTest {
    private static final int XDP_DROP = 1;
    private static final int XDP_TX = 3;
    private static final int XDP_REDIRECT = 4;
    private static final int NET = 42;
    private static final int HDR = 56;
    private static final int K = 8;
    private static final int PORT = 4242;
    private static final XdpDimensions DIMS = new XdpDimensions(1, 2, 4, K, 4, 2);
    private static XdpDriver driver;
    private static InetAddress switchIp;
    private final XdpLayout layout = new XdpLayout(DIMS);

    @BeforeAll
    static void load() throws IOException {
        final String missing = XdpBuild.missing();
        Assumptions.assumeTrue(missing == null, missing);
        driver = XdpDriver.start(XdpBuild.build(DIMS));
        switchIp = InetAddress.getByName("10.77.1.1");
    }

    @AfterAll
    static void unload() {
        if (driver != null) {
            driver.close();
        }
    }

    /** A fresh job with the config {@code timeoutNs} (or none): BSP over both workers. */
    private void job(final long timeoutNs) throws IOException {
        job(new OffloadJob.Entry(0, 0, 2, timeoutNs, 0, new long[] {3}));
    }

    private void job(final OffloadJob.Entry entry) throws IOException {
        final OffloadJob job = new OffloadJob(0, 7, 2, K, 1, 1, 0, 0, 1, new long[] {3}, new long[][] {{0, 0}, {0, 0}}, new long[] {0, 0},
            new int[] {0, 1}, List.of(entry), SyncConfig.NO_TIMEOUT, null);
        driver.put("settings", XdpLayout.key(0), XdpLayout.settings(switchIp, PORT, false, 1));
        driver.put("job_static", XdpLayout.key(0), XdpLayout.job(job, true));
        driver.put("job_bank", XdpLayout.key(0), layout.bank(job));
        driver.put("bank_in_use", XdpLayout.key(0), XdpLayout.key(0));
        driver.put("job_dyn", XdpLayout.key(0), layout.freshDyn());
        driver.put("job_frozen", XdpLayout.key(0), XdpLayout.key(0));
        for (int s = 0; s < 2 * DIMS.pool(); s++) {
            driver.put("slots", XdpLayout.key(s), layout.freshSlot());
        }
    }

    @BeforeEach
    void fresh() throws IOException {
        job(SyncConfig.NO_TIMEOUT);
    }

    /** A DATA packet of worker w for round r (its step r, chunk 0), each value v. */
    private static byte[] data(final int w, final int r, final int v) {
        final ByteBuffer b = ByteBuffer.allocate(NET + HDR + 4 * K);
        b.position(12);
        b.putShort((short) 0x0800);
        b.put((byte) 0x45).put((byte) 0).putShort((short) (20 + 8 + HDR + 4 * K)).putInt(0).put((byte) 64).put((byte) 17).putShort((short) 0);
        b.put(new byte[] {10, 77, 1, (byte) (w + 2)}).put(switchIp.getAddress());
        b.putShort((short) 5000).putShort((short) PORT).putShort((short) (8 + HDR + 4 * K)).putShort((short) 0);
        b.order(ByteOrder.LITTLE_ENDIAN);
        b.putShort((short) 0x5345).put((byte) 4).put((byte) 1).putShort((short) 1).putShort((short) K);
        b.putInt(7).putShort((short) w).put((byte) 0).put((byte) ((r / DIMS.pool()) & 1));
        b.putLong(r).putInt(r).putInt(0).putInt(0).putShort((short) (r % DIMS.pool())).putShort((short) 0).putLong(r * 2L + w + 1).putLong(0);
        for (int i = 0; i < K; i++) {
            b.putInt(v);
        }
        return b.array();
    }

    private static int type(final XdpDriver.Run run) {
        return run.packet()[NET + 3];
    }

    private long counter(final String name) throws IOException {
        return layout.counters(driver.get("counters", XdpLayout.key(0)))[List.of(XdpLayout.COUNTERS).indexOf(name)];
    }

    private int sum(final XdpDriver.Run result, final int i) {
        return ByteBuffer.wrap(result.packet()).order(ByteOrder.LITTLE_ENDIAN).getInt(NET + HDR + 40 + 4 * i);
    }

    @Test
    void bothWorkersReleaseTheirExactSumToEveryPort() throws IOException {
        assertThat(driver.run("serene_switch", data(0, 0, 5)).verdict()).as("taken, waiting for worker 1").isEqualTo(XDP_DROP);
        final XdpDriver.Run held = driver.run("serene_switch", data(0, 0, 5));
        assertThat(held.verdict()).as("a resend of a step still open: answered, not added again").isEqualTo(XDP_TX);
        assertThat(type(held)).as("a NACK").isEqualTo(7);
        assertThat(ByteBuffer.wrap(held.packet()).order(ByteOrder.LITTLE_ENDIAN).getShort(NET + 38)).as("HELD").isEqualTo((short) 15);
        final XdpDriver.Run result = driver.run("serene_switch", data(1, 0, -2));
        assertThat(result.verdict()).as("released: the RESULT to every port").isEqualTo(XDP_REDIRECT);
        assertThat(type(result)).isEqualTo(2);
        for (int i = 0; i < K; i++) {
            assertThat(sum(result, i)).isEqualTo(3);
        }
    }

    @Test
    void aFrozenJobOpensNoNewRoundButFinishesTheOpenOne() throws IOException {
        final long before = counter("DROP_FROZEN");
        driver.put("job_frozen", XdpLayout.key(0), XdpLayout.key(1));
        final XdpDriver.Run refused = driver.run("serene_switch", data(0, 0, 1));
        assertThat(refused.verdict()).as("no round opened yet: round 0 may not open").isEqualTo(XDP_TX);
        assertThat(type(refused)).as("a NACK").isEqualTo(7);
        assertThat(ByteBuffer.wrap(refused.packet()).order(ByteOrder.LITTLE_ENDIAN).getShort(NET + 38)).as("AHEAD: send again").isEqualTo((short) 5);
        assertThat(counter("DROP_FROZEN")).isEqualTo(before + 1);

        driver.put("job_frozen", XdpLayout.key(0), XdpLayout.key(0));
        assertThat(driver.run("serene_switch", data(0, 0, 1)).verdict()).isEqualTo(XDP_DROP);
        driver.put("job_frozen", XdpLayout.key(0), XdpLayout.key(1));
        assertThat(layout.dyn(driver.getLocked("job_dyn", XdpLayout.key(0))).newestRound()).as("what a hot-swap's round comes after").isZero();
        assertThat(driver.run("serene_switch", data(1, 0, 1)).verdict()).as("round 0 was open: it finishes").isEqualTo(XDP_REDIRECT);
        assertThat(type(driver.run("serene_switch", data(0, 1, 1)))).as("round 1 waits for the thaw").isEqualTo(7);
        driver.put("job_frozen", XdpLayout.key(0), XdpLayout.key(0));
        assertThat(driver.run("serene_switch", data(0, 1, 1)).verdict()).isEqualTo(XDP_DROP);
    }

    @Test
    void pspWaitsForTheRoundsSampleAsTheJavaSwitchDrawsIt() throws IOException {
        job(new OffloadJob.Entry(0, 0, 1, SyncConfig.NO_TIMEOUT, 1, new long[] {3}));
        for (int round = 0; round < 4; round++) {
            final long[] sample = new long[1];
            SyncRules.sample(7, round, new long[] {3}, 0, 1, 1, sample, 0);
            final int drawn = Long.numberOfTrailingZeros(sample[0]);
            final XdpDriver.Run result = driver.run("serene_switch", data(drawn, round, 1));
            assertThat(result.verdict()).as("round " + round + ": worker " + drawn + " is the sample, the release").isEqualTo(XDP_REDIRECT);
            assertThat(ByteBuffer.wrap(result.packet()).order(ByteOrder.LITTLE_ENDIAN).getInt(NET + 56)).isEqualTo(1);
            assertThat(type(driver.run("serene_switch", data(1 - drawn, round, 1)))).as("the other one came late").isEqualTo(2);
        }
    }

    /** The program loads (the verifier takes it) for dimensions unlike the system tests': many workers, a ring of 17, K = 1 or 8,192. */
    @ParameterizedTest
    @CsvSource({"2, 130, 61, 8192, 17, 8", "1, 2, 3, 1, 3, 8"})
    void theKernelTakesTheProgramForOtherDimensions(final int jobs, final int workers, final int pool, final int chunk, final int ring,
                                                     final int entries) throws IOException {
        XdpDriver.start(XdpBuild.build(new XdpDimensions(jobs, workers, pool, chunk, ring, entries))).close();
    }

    @Test
    void theScannerReleasesATimedOutStepAndTheLateSetTheNextOnes() throws Exception {
        job(200_000_000L);
        final int size = NET + HDR + 4 * K;
        assertThat(driver.run("serene_switch", data(0, 0, 4)).verdict()).isEqualTo(XDP_DROP);
        assertThat(driver.sweep(0, size)).as("within its timeout: nothing due").isEmpty();
        Thread.sleep(300);
        final long timeouts = counter("TIMEOUT_RELEASES");
        final List<byte[]> swept = driver.sweep(0, size);
        assertThat(swept).as("past its timeout: released without worker 1").hasSize(1);
        final ByteBuffer r = ByteBuffer.wrap(swept.get(0)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(r.get(3)).as("a RESULT").isEqualTo((byte) 2);
        assertThat(r.getInt(56)).as("one contributor").isEqualTo(1);
        assertThat(r.getLong(80)).as("worker 0 alone").isEqualTo(1L);
        assertThat(r.getInt(HDR + 40)).isEqualTo(4);
        assertThat(counter("TIMEOUT_RELEASES")).isEqualTo(timeouts + 1);
        assertThat(driver.run("serene_switch", data(0, 1, 4)).verdict()).as("worker 1 is late: round 1 goes without it").isEqualTo(XDP_REDIRECT);
        assertThat(type(driver.run("serene_switch", data(1, 0, 4)))).as("worker 1's round 0, late: the released result again").isEqualTo(2);
    }
}
