package io.serene.xdp;

import io.serene.dataplane.JobMirror;
import io.serene.dataplane.OffloadJob;
import io.serene.protocol.ReplayWindow;
import io.serene.protocol.sync.SyncConfig;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The bytes of the XDP program's map entries (serene_xdp.h's structs, for the program's dimensions), as
 * the control plane writes and reads them. Little-endian, as the host's; addresses and UDP ports in
 * network order, as in a packet. XdpLayoutTest holds these sizes to the C compiler's.
 */
final class XdpLayout {
    static final int SETTINGS = 16;
    static final int JOB = 40;
    static final int WORKER = 64;
    static final int PORT = 28;
    /** The counters' names, in the program's order (the Java switch's counter names where they mean the same). */
    static final String[] COUNTERS = {"PACKETS_IN", "PACKETS_OUT", "CONTRIBUTIONS", "VALUE_CONTRIBUTIONS", "RELEASES",
        "PARTIAL_RELEASES", "RESULTS_MULTICAST", "RESULTS_RETRANSMITTED", "DUPLICATES", "OVERFLOWS", "DROP_NOT_JOINED",
        "DROP_BAD_MAC", "DROP_REPLAYED", "DROP_BAD_ELEMENT_COUNT", "DROP_BAD_SLOT", "DROP_INCONSISTENT", "DROP_BAD_STEP",
        "DROP_BAD_EXPONENT", "DROP_AHEAD", "DROP_BEYOND_BOUND", "DROP_STALE", "DROP_LATE", "TIMEOUT_RELEASES", "DROP_FROZEN"};

    private final XdpDimensions dims;

    XdpLayout(final XdpDimensions dims) {
        this.dims = dims;
    }

    int entryBytes() {
        return 24 + 8 * dims.words();
    }

    int bankBytes() {
        return 8 + 8 * dims.words() + dims.entries() * entryBytes();
    }

    /** Where job_dyn's clocks start; then arrival rounds, finished rounds (int32), offsets, compute times, finished compute times and offsets (u64). */
    int clocksAt() {
        return 16 + 4 * dims.ring();
    }

    int offsetsAt() {
        return align8(clocksAt() + 12 * dims.workers());
    }

    /** Where job_dyn's late set starts; then the latch's rounds (int32 a ring place), then its held workers (W words a place). */
    int lateAt() {
        return offsetsAt() + 32 * dims.workers();
    }

    int latchRoundsAt() {
        return lateAt() + 8 * dims.words();
    }

    int latchAt() {
        return align8(latchRoundsAt() + 4 * dims.ring());
    }

    int newestAt() {
        return latchAt() + 8 * dims.ring() * dims.words();
    }

    int dynBytes() {
        return align8(newestAt() + 4);
    }

    int slotBytes() {
        return 56 + 16 * dims.words();
    }

    int counterBytes() {
        return 8 * COUNTERS.length;
    }

    private static int align8(final int n) {
        return (n + 7) & ~7;
    }

    static byte[] key(final int k) {
        return buffer(4).putInt(k).array();
    }

    private static ByteBuffer buffer(final int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    static byte[] settings(final InetAddress ip, final int port, final boolean keyed, final long number) {
        final ByteBuffer b = buffer(SETTINGS);
        b.put(ip.getAddress()).order(ByteOrder.BIG_ENDIAN).putShort((short) port).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort((short) (keyed ? 1 : 0)).putLong(number);
        return b.array();
    }

    static byte[] job(final OffloadJob job, final boolean active) {
        final ByteBuffer b = buffer(JOB);
        b.putInt(job.id()).putInt(active ? 1 : 0).putInt(job.workers()).putInt(job.elements()).putInt(job.chunks())
            .putInt(job.stepsPerRound()).putLong(job.replyK0()).putLong(job.replyK1());
        return b.array();
    }

    static byte[] inactiveJob() {
        return buffer(JOB).array();
    }

    byte[] bank(final OffloadJob job) {
        final int words = dims.words();
        final ByteBuffer b = buffer(bankBytes());
        b.putInt(job.epoch()).putInt(Math.min(job.entries().size(), dims.entries()));
        for (int w = 0; w < words; w++) {
            b.putLong(w < job.joined().length ? job.joined()[w] : 0);
        }
        for (int e = 0; e < Math.min(job.entries().size(), dims.entries()); e++) {
            final OffloadJob.Entry entry = job.entries().get(e);
            b.position(8 + 8 * words + e * entryBytes());
            b.putInt(entry.firstRound()).putInt(entry.bound()).putInt(entry.quorum()).putInt(entry.sample())
                .putLong(entry.timeoutNs() == SyncConfig.NO_TIMEOUT ? 0 : entry.timeoutNs());
            for (int w = 0; w < words; w++) {
                b.putLong(w < entry.required().length ? entry.required()[w] : 0);
            }
        }
        return b.array();
    }

    /** A new job's registers: no round released, step 0 open, every clock, arrival, finished and opened round -1, none late, no latch. */
    byte[] freshDyn() {
        final ByteBuffer b = buffer(dynBytes());
        b.putInt(0).putInt(-1).putLong(0);
        b.position(clocksAt());
        for (int w = 0; w < 3 * dims.workers(); w++) {
            b.putInt(-1);
        }
        b.position(latchRoundsAt());
        for (int r = 0; r < dims.ring(); r++) {
            b.putInt(Integer.MIN_VALUE);
        }
        b.putInt(newestAt(), -1);
        return b.array();
    }

    /** An empty slot (step -1, so any step opens it). */
    byte[] freshSlot() {
        final ByteBuffer b = buffer(slotBytes());
        b.putInt(0).putInt(0).putLong(-1L);
        return b.array();
    }

    /** A worker's key, its window over its DATA numbers starting at its JOIN's number (ReplayWindow.startAt's). */
    static byte[] worker(final long[] key, final long joinNumber) {
        final long[] highest = new long[1];
        final long[] seen = new long[ReplayWindow.WORDS];
        ReplayWindow.startAt(highest, seen, 0, joinNumber);
        final ByteBuffer b = buffer(WORKER);
        b.putInt(0).putInt(0).putLong(key[0]).putLong(key[1]).putLong(highest[0]);
        for (final long word : seen) {
            b.putLong(word);
        }
        return b.array();
    }

    static byte[] port(final int job, final int worker, final InetAddress ip, final int udpPort, final byte[] mac, final byte[] ownMac) {
        final ByteBuffer b = buffer(PORT);
        b.putInt(job).putInt(worker).put(ip.getAddress()).order(ByteOrder.BIG_ENDIAN).putShort((short) udpPort)
            .order(ByteOrder.LITTLE_ENDIAN).put(mac).put(ownMac).putShort((short) 0);
        return b.array();
    }

    /** A job's registers as read: R, the lowest open step, per worker its clock and arrival telemetry, the newest round opened. */
    JobMirror.Registers dyn(final byte[] value) {
        final ByteBuffer b = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
        final int n = dims.workers();
        final int[][] ints = new int[3][n];
        final long[][] longs = new long[4][n];
        for (int w = 0; w < n; w++) {
            for (int a = 0; a < 3; a++) {
                ints[a][w] = b.getInt(clocksAt() + 4 * (a * n + w));
            }
            for (int a = 0; a < 4; a++) {
                longs[a][w] = b.getLong(offsetsAt() + 8 * (a * n + w));
            }
        }
        return new JobMirror.Registers(b.getInt(4), b.getLong(8), ints[0], ints[1], longs[0], longs[1], ints[2], longs[2], longs[3],
            b.getInt(newestAt()));
    }

    /** The counters summed over the processors' values. */
    long[] counters(final byte[] value) {
        final ByteBuffer b = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
        final long[] sums = new long[COUNTERS.length];
        final int stride = counterBytes();
        for (int cpu = 0; cpu + stride <= value.length; cpu += stride) {
            for (int c = 0; c < sums.length; c++) {
                sums[c] += b.getLong(cpu + 8 * c);
            }
        }
        return sums;
    }
}
