package io.serene.transport;

/** Socket and batching options of a {@link UdpHost}; immutable, built with withers. */
public final class UdpOptions {
    private final int socketBufferBytes;
    private final boolean gso;
    private final boolean gro;
    private final FaultInjector faults;
    private final long reorderDelayNs;
    private final int maxPeers;

    private UdpOptions(final int socketBufferBytes, final boolean gso, final boolean gro, final FaultInjector faults,
                       final long reorderDelayNs, final int maxPeers) {
        this.socketBufferBytes = socketBufferBytes;
        this.gso = gso;
        this.gro = gro;
        this.faults = faults;
        this.reorderDelayNs = reorderDelayNs;
        this.maxPeers = maxPeers;
    }

    public static UdpOptions defaults() {
        return new UdpOptions(8 << 20, true, true, FaultInjector.none(), 300_000L, 4096);
    }

    /** SO_RCVBUF and SO_SNDBUF (the kernel caps them at net.core.rmem_max / wmem_max). */
    public UdpOptions socketBufferBytes(final int bytes) {
        return new UdpOptions(bytes, gso, gro, faults, reorderDelayNs, maxPeers);
    }

    /** Send runs of equal-sized packets to one peer as one GSO super-packet (epoll only). */
    public UdpOptions gso(final boolean enabled) {
        return new UdpOptions(socketBufferBytes, enabled, gro, faults, reorderDelayNs, maxPeers);
    }

    /** Receive coalesced runs of packets (epoll only). */
    public UdpOptions gro(final boolean enabled) {
        return new UdpOptions(socketBufferBytes, gso, enabled, faults, reorderDelayNs, maxPeers);
    }

    /** Faults applied to every packet this host sends. */
    public UdpOptions faults(final FaultInjector injector) {
        return new UdpOptions(socketBufferBytes, gso, gro, injector, reorderDelayNs, maxPeers);
    }

    /** How long a packet chosen for reordering is held back (uniform in [0, this)). */
    public UdpOptions reorderDelayNs(final long ns) {
        return new UdpOptions(socketBufferBytes, gso, gro, faults, ns, maxPeers);
    }

    /** The most distinct peer addresses the host learns; packets from further peers are dropped. */
    public UdpOptions maxPeers(final int peers) {
        return new UdpOptions(socketBufferBytes, gso, gro, faults, reorderDelayNs, peers);
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
