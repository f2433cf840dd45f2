package io.serene.transport;

/** Ring sizes and fault injection of a {@link ShmHost}; immutable, built with withers. */
public final class ShmOptions {
    private final int inboundRingBytes;
    private final FaultInjector faults;
    private final long reorderDelayNs;
    private final int maxPeers;

    private ShmOptions(final int inboundRingBytes, final FaultInjector faults, final long reorderDelayNs,
                       final int maxPeers) {
        if (Integer.bitCount(inboundRingBytes) != 1 || inboundRingBytes < (1 << 16)) {
            throw new IllegalArgumentException("a ring's size must be a power of two of at least 64 KiB, was "
                + inboundRingBytes);
        }
        if (maxPeers < 1) {
            throw new IllegalArgumentException("maxPeers must be >= 1, was " + maxPeers);
        }
        this.inboundRingBytes = inboundRingBytes;
        this.faults = faults;
        this.reorderDelayNs = reorderDelayNs;
        this.maxPeers = maxPeers;
    }

    /** 32 MiB rings (each peer's two: its packets to the switch and the switch's to it), no faults. */
    public static ShmOptions defaults() {
        return new ShmOptions(32 << 20, FaultInjector.none(), 300_000L, 4096);
    }

    /**
     * Bytes of each of a peer's two rings (a power of two; the file is this plus the ring's trailer).
     * A packet that finds its ring full is dropped and counted, as a full socket buffer drops one.
     */
    public ShmOptions inboundRingBytes(final int bytes) {
        return new ShmOptions(bytes, faults, reorderDelayNs, maxPeers);
    }

    /** Faults applied to every packet this host sends (the same injector as UDP's). */
    public ShmOptions faults(final FaultInjector injector) {
        return new ShmOptions(inboundRingBytes, injector, reorderDelayNs, maxPeers);
    }

    /** How long a packet chosen for reordering is held back (uniform in [0, this)). */
    public ShmOptions reorderDelayNs(final long ns) {
        return new ShmOptions(inboundRingBytes, faults, ns, maxPeers);
    }

    /** The most peers a serving host maps at once; packets from further peers are dropped and counted. */
    public ShmOptions maxPeers(final int peers) {
        return new ShmOptions(inboundRingBytes, faults, reorderDelayNs, peers);
    }

    public int inboundRingBytes() {
        return inboundRingBytes;
    }

    /** A ring file's length: the ring plus its trailer (the reader's and the writer's positions). */
    public int inboundFileBytes() {
        return SpscRing.fileBytes(inboundRingBytes);
    }

    public FaultInjector faults() {
        return faults;
    }

    public long reorderDelayNs() {
        return reorderDelayNs;
    }

    public int maxPeers() {
        return maxPeers;
    }
}
