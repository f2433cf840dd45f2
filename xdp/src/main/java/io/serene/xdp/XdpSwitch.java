package io.serene.xdp;

import io.serene.dataplane.JobMirror;
import io.serene.dataplane.OffloadJob;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.Flags;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketCheck;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.sync.SyncConfig;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The XDP switch: the Java pipeline as the control and slow path (its CPU port) over the XDP program's
 * DATA path. The program takes every well-formed DATA packet of a job it holds; everything else comes up
 * to the pipeline on the same address (JOIN, LEAVE, CONFIG requests, reports, and what the program
 * cannot parse, which the pipeline counts). After each packet and timer the pipeline handled, each job's
 * tables it holds are written into the program's maps ({@link JobMirror#job}, only what changed; a
 * config list into the bank not in use, then the bank flipped), before any packet it answered leaves
 * (the transport sends at the end of the burst); every {@link #PULL_NS} the program's R, open step and
 * clocks are read back into the pipeline ({@link JobMirror#pulled}) for telemetry, the stall watch and
 * hot-swap rounds. The pipeline's own packets take their numbers from the program's counter, so a
 * worker's replay window sees one sequence. Switch thread only.
 */
public final class XdpSwitch implements PacketEndpoint, AutoCloseable {
    static final long PULL_NS = 10_000_000L;
    private static final String JOB_STATIC = "job_static";
    /** Ethernet, IPv4 without options and UDP before a Serene packet. */
    private static final int NET = 42;

    private final SwitchPipeline pipeline;
    private final JobMirror mirror;
    private final XdpDriver driver;
    private final XdpDimensions dims;
    private final XdpLayout layout;
    private final IntFunction<InetSocketAddress> peers;
    private final Function<InetAddress, XdpPort> ports;
    private final Consumer<String> log;
    /** Where a failure to reach the program goes (the driver gone, a map refused): the switch's errors, which end a run. */
    private final Consumer<Throwable> errors;
    private final PacketHeader header = new PacketHeader();
    /** What each map entry holds as last written, by map and key: only changes are written. */
    private final Map<String, byte[]> written = new HashMap<>();
    /** Per place: the id of the job the program holds there, or -1; its bank in use; the port of each of its workers. */
    private final int[] held;
    private final int[] bank;
    private final int[][] portOf;
    private final boolean[] warned;
    /** Per place: how often its timeout scanner sweeps (SyncConfig.NO_TIMEOUT: never), when next, and its workers' ports. */
    private final long[] sweepNs;
    private final long[] nextSweepNs;
    private final int[][] recipients;
    private long nextPullNs;
    private long strayData;
    private long sweptResults;

    /**
     * The XDP switch over {@code pipeline}, its program started by {@code driver} on {@code ports} (interface
     * indexes), serving {@code address}; {@code peers} names the transport's ports, {@code portOfWorker} the
     * switch port a worker's address sits behind.
     */
    public XdpSwitch(final SwitchPipeline pipeline, final XdpDriver driver, final InetSocketAddress address, final List<Integer> switchPorts,
                     final IntFunction<InetSocketAddress> peers, final Function<InetAddress, XdpPort> portOfWorker,
                     final Consumer<String> log, final Consumer<Throwable> errors) throws IOException {
        this.pipeline = pipeline;
        this.mirror = pipeline.mirror();
        this.driver = driver;
        this.dims = XdpDimensions.of(pipeline.memory());
        this.layout = new XdpLayout(dims);
        this.peers = peers;
        this.ports = portOfWorker;
        this.log = log;
        this.errors = errors;
        final int places = mirror.places();
        held = new int[places];
        Arrays.fill(held, -1);
        bank = new int[places];
        portOf = new int[places][];
        warned = new boolean[places];
        sweepNs = new long[places];
        Arrays.fill(sweepNs, SyncConfig.NO_TIMEOUT);
        nextSweepNs = new long[places];
        recipients = new int[places][];
        // the program's numbers go on above every number the pipeline sent so far (its own start from the clock, x1024)
        final long number = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now()) << 10;
        driver.put("settings", XdpLayout.key(0), XdpLayout.settings(address.getAddress(), address.getPort(),
            pipeline.context().secret() != null, number));
        for (int j = 0; j < places; j++) {
            driver.put(JOB_STATIC, XdpLayout.key(j), XdpLayout.inactiveJob());
        }
        for (final int ifindex : switchPorts) {
            driver.port(ifindex);
        }
        mirror.numbersFrom(() -> {
            try {
                return driver.number();
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
        });
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length, final long nowNs, final Outbox out) {
        if (stray(buffer, offset, length)) {
            strayData++;
            return;
        }
        pipeline.onPacket(port, buffer, offset, length, nowNs, out);
        below(this::sync);
    }

    @Override
    public boolean admits(final ByteBuffer buffer, final int offset, final int length) {
        return pipeline.admits(buffer, offset, length);
    }

    @Override
    public long onTimer(final long nowNs, final Outbox out) {
        // the program's registers first, and fresh whenever table writes wait: a hot-swap's first round is chosen from them,
        // past every round the program let open; frozen meanwhile, it lets no newer round open until the write is in
        final boolean writes = pipeline.commands().pending();
        if (writes) {
            below(() -> freeze(true));
        }
        if (nowNs >= nextPullNs || writes) {
            below(() -> pull(nowNs));
            nextPullNs = nowNs + PULL_NS;
        }
        final long next = pipeline.onTimer(nowNs, out);
        below(this::sync);
        if (writes) {
            below(() -> freeze(false));
        }
        long sweep = Long.MAX_VALUE;
        for (int j = 0; j < held.length; j++) {
            if (held[j] >= 0 && sweepNs[j] != SyncConfig.NO_TIMEOUT) {
                if (nowNs >= nextSweepNs[j]) {
                    final int place = j;
                    below(() -> sweep(place, out));
                    nextSweepNs[j] = nowNs + sweepNs[j];
                }
                sweep = Math.min(sweep, nextSweepNs[j]);
            }
        }
        return Math.min(Math.min(next, nextPullNs), sweep);
    }

    /**
     * The program's timeout scanner over the slots of the job in place j (TimeoutScanner's, as a packet generator
     * would run it): each slot it releases comes back as its RESULT, sealed and numbered in the kernel, which goes to
     * the job's workers from the switch's address, as the pipeline's own packets do.
     */
    private void sweep(final int j, final Outbox out) {
        try {
            for (final byte[] result : driver.sweep(j, NET + Packet.HEADER_LENGTH + 4 * dims.chunkElements())) {
                out.multicast(recipients[j], recipients[j].length, ByteBuffer.wrap(result), 0, result.length);
                sweptResults++;
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Work on the program's maps; a failure goes to the switch's errors (an endpoint must not throw). */
    private void below(final Runnable work) {
        try {
            work.run();
        } catch (final RuntimeException ex) {
            errors.accept(new IllegalStateException("XDP switch: " + ex.getMessage(), ex));
        }
    }

    /** DATA (no report) of a job the program holds, which came up: not the pipeline's to aggregate. */
    private boolean stray(final ByteBuffer buffer, final int offset, final int length) {
        header.wrap(buffer, offset, length);
        if (header.check() != PacketCheck.OK || header.type() != PacketType.DATA || header.hasFlag(Flags.REPORT)) {
            return false;
        }
        for (final int id : held) {
            if (id == header.jobId()) {
                return true;
            }
        }
        return false;
    }

    /** DATA packets of jobs the program holds that came up to the pipeline anyway (dropped). */
    public long strayData() {
        return strayData;
    }

    /** Writes every job's tables that changed into the program's maps. */
    private void sync() {
        try {
            for (int j = 0; j < held.length; j++) {
                sync(j, mirror.job(j));
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private void sync(final int j, final OffloadJob job) throws IOException {
        final byte[] key = XdpLayout.key(j);
        if (job == null) {
            if (held[j] >= 0) {
                write(JOB_STATIC, j, XdpLayout.inactiveJob());
                dropPorts(j);
                held[j] = -1;
            }
            return;
        }
        final boolean fresh = held[j] != job.id();
        if (fresh) {
            if (held[j] >= 0) {
                write(JOB_STATIC, j, XdpLayout.inactiveJob());
                dropPorts(j);
            }
            driver.put("job_dyn", key, layout.freshDyn());
            write("job_frozen", j, XdpLayout.key(0));
            final byte[] slot = layout.freshSlot();
            for (int s = 0; s < 2 * dims.pool(); s++) {
                driver.put("slots", XdpLayout.key((j * 2) * dims.pool() + s), slot);
            }
            for (int w = 0; w < dims.workers(); w++) {
                written.remove("worker_key/" + (j * dims.workers() + w));
            }
            written.remove("job_bank/" + (2 * j));
            written.remove("job_bank/" + (2 * j + 1));
            bank[j] = 0;
            driver.put("bank_in_use", key, XdpLayout.key(0));
            portOf[j] = new int[job.workers()];
            Arrays.fill(portOf[j], -1);
            warned[j] = false;
        }
        if (job.unsupported() != null && !warned[j]) {
            warned[j] = true;
            log.accept("XDP switch: job " + job.id() + "'s configs ask for " + job.unsupported()
                + ", which the XDP program does not do: it releases by group 0's config list alone");
        }
        for (int w = 0; w < job.workers(); w++) {
            write("worker_key", j * dims.workers() + w, XdpLayout.worker(job.workerKeys()[w], job.joinNumbers()[w]));
        }
        final byte[] entries = layout.bank(job);
        if (fresh) {
            write("job_bank", 2 * j, entries);
        } else if (!Arrays.equals(entries, written.get("job_bank/" + (2 * j + bank[j])))) {
            // the bank not in use, then the flip: the program never reads a half-written list
            bank[j] ^= 1;
            write("job_bank", 2 * j + bank[j], entries);
            driver.put("bank_in_use", key, XdpLayout.key(bank[j]));
        }
        for (int w = 0; w < job.workers(); w++) {
            syncPort(j, job, w);
        }
        write(JOB_STATIC, j, XdpLayout.job(job, true));
        held[j] = job.id();
        if (sweepNs[j] != job.sweepNs()) {
            sweepNs[j] = job.sweepNs();
            nextSweepNs[j] = 0;
        }
        recipients[j] = Arrays.stream(job.ports()).filter(p -> p >= 0).toArray();
    }

    private void syncPort(final int j, final OffloadJob job, final int w) throws IOException {
        final InetSocketAddress at = job.ports()[w] < 0 ? null : peers.apply(job.ports()[w]);
        final XdpPort port = at == null ? null : ports.apply(at.getAddress());
        final int ifindex = port == null ? -1 : port.ifindex();
        if (portOf[j][w] != ifindex) {
            if (portOf[j][w] >= 0) {
                forget("ports", portOf[j][w]);
            }
            if (port == null && at != null) {
                log.accept("XDP switch: worker " + w + " of job " + job.id() + " at " + at + " is behind none of the switch's ports");
            }
            portOf[j][w] = ifindex;
        }
        if (port != null) {
            write("ports", ifindex, XdpLayout.port(job.id(), w, at.getAddress(), at.getPort(), port.peerMac(), port.ownMac()));
        }
    }

    private void dropPorts(final int j) throws IOException {
        if (portOf[j] == null) {
            return;
        }
        for (int w = 0; w < portOf[j].length; w++) {
            if (portOf[j][w] >= 0) {
                forget("ports", portOf[j][w]);
                portOf[j][w] = -1;
            }
        }
    }

    /** Writes entry {@code key} of a map unless it holds {@code value} already. */
    private void write(final String map, final int key, final byte[] value) throws IOException {
        final String at = map + "/" + key;
        if (!Arrays.equals(written.get(at), value)) {
            driver.put(map, XdpLayout.key(key), value);
            written.put(at, value);
        }
    }

    /** Deletes entry {@code key} of a (hash) map. */
    private void forget(final String map, final int key) throws IOException {
        driver.delete(map, XdpLayout.key(key));
        written.remove(map + "/" + key);
    }

    /** Freezes every job the program holds (no new round opens), or thaws them. */
    private void freeze(final boolean frozen) {
        try {
            for (int j = 0; j < held.length; j++) {
                if (held[j] >= 0) {
                    write("job_frozen", j, XdpLayout.key(frozen ? 1 : 0));
                }
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Reads the program's R, open steps, clocks and newest round opened back into the pipeline (under the job's lock, as the program sets them). */
    private void pull(final long nowNs) {
        try {
            for (int j = 0; j < held.length; j++) {
                if (held[j] >= 0) {
                    mirror.pulled(j, layout.dyn(driver.getLocked("job_dyn", XdpLayout.key(j))), nowNs);
                }
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** The program's counters, by name (switch thread). */
    public Map<String, Long> counters() throws IOException {
        final long[] sums = layout.counters(driver.get("counters", XdpLayout.key(0)));
        final Map<String, Long> named = new LinkedHashMap<>();
        for (int c = 0; c < sums.length; c++) {
            named.put(XdpLayout.COUNTERS[c], sums[c]);
        }
        named.put("STRAY_DATA", strayData);
        // releases the timeout scanner made (the rest of TIMEOUT_RELEASES came with a late DATA packet)
        named.put("SWEPT_RESULTS", sweptResults);
        // the kernel's own accounting of the programs (kernel.bpf_stats): packets run and nanoseconds spent
        final long[] stats = driver.stats();
        named.put("PIPELINE_RUNS", stats[0]);
        named.put("PIPELINE_NS", stats[1]);
        named.put("PORT_RUNS", stats[2]);
        named.put("PORT_NS", stats[3]);
        return named;
    }

    /** Detaches the program from every port and unloads it. */
    @Override
    public void close() {
        driver.close();
    }
}
