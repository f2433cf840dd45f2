package io.serene.transport;

/** Socket and batching options of a {@link UdpHost}; immutable, built with withers. */
public final class UdpOptions {
    private final int socketBufferBytes;
    private final boolean gso;
    private final boolean gro;
    private final FaultInjector faults;
    private final long reorderDelayNs;
    private final int maxPeers;
    private final long peerLeaseNs;

    private UdpOptions(final int socketBufferBytes, final boolean gso, final boolean gro, final FaultInjector faults,
                       final long reorderDelayNs, final int maxPeers, final long peerLeaseNs) {
        if (maxPeers < 1 || maxPeers > UdpHost.MAX_PEERS) {
            throw new IllegalArgumentException("maxPeers must be in 1.." + UdpHost.MAX_PEERS + ", was " + maxPeers);
        }
        if (peerLeaseNs < 0) {
            throw new IllegalArgumentException("peerLeaseNs must be >= 0 (0: never), was " + peerLeaseNs);
        }
        this.socketBufferBytes = socketBufferBytes;
        this.gso = gso;
        this.gro = gro;
        this.faults = faults;
        this.reorderDelayNs = reorderDelayNs;
        this.maxPeers = maxPeers;
        this.peerLeaseNs = peerLeaseNs;
    }

    public static UdpOptions defaults() {
        return new UdpOptions(8 << 20, true, true, FaultInjector.none(), 300_000L, 4096, 300_000_000_000L);
    }

    /** SO_RCVBUF and SO_SNDBUF (the kernel caps them at net.core.rmem_max / wmem_max). */
    public UdpOptions socketBufferBytes(final int bytes) {
        return new UdpOptions(bytes, gso, gro, faults, reorderDelayNs, maxPeers, peerLeaseNs);
    }

    /** Send runs of equal-sized packets to one peer as one GSO super-packet (epoll only). */
    public UdpOptions gso(final boolean enabled) {
        return new UdpOptions(socketBufferBytes, enabled, gro, faults, reorderDelayNs, maxPeers, peerLeaseNs);
    }

    /** Receive coalesced runs of packets (epoll only). */
    public UdpOptions gro(final boolean enabled) {
        return new UdpOptions(socketBufferBytes, gso, enabled, faults, reorderDelayNs, maxPeers, peerLeaseNs);
    }

    /** Faults applied to every packet this host sends. */
    public UdpOptions faults(final FaultInjector injector) {
        return new UdpOptions(socketBufferBytes, gso, gro, injector, reorderDelayNs, maxPeers, peerLeaseNs);
    }

    /** How long a packet chosen for reordering is held back (uniform in [0, this)). */
    public UdpOptions reorderDelayNs(final long ns) {
        return new UdpOptions(socketBufferBytes, gso, gro, faults, ns, maxPeers, peerLeaseNs);
    }

    /**
     * A peer not heard from for this long may give its place to a new one once the table is full
     * (the least recently heard first); 0: never. Default 300 s, as the switch's job lease.
     */
    public UdpOptions peerLeaseNs(final long ns) {
        return new UdpOptions(socketBufferBytes, gso, gro, faults, reorderDelayNs, maxPeers, ns);
    }

    public long peerLeaseNs() {
        return peerLeaseNs;
    }

    /** The most distinct peer addresses the host learns at once; packets from further peers are dropped (see {@link #peerLeaseNs}). */
    public UdpOptions maxPeers(final int peers) {
        return new UdpOptions(socketBufferBytes, gso, gro, faults, reorderDelayNs, peers, peerLeaseNs);
    }

    public int socketBufferBytes() {
        return socketBufferBytes;
    }

    public boolean gso() {
        return gso;
    }

    public boolean gro() {
        return gro;
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
