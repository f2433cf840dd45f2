package io.serene.transport;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.unix.SegmentedDatagramPacket;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.netty.util.internal.PlatformDependent;
import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * One UDP socket serving one sans-IO {@link PacketEndpoint} on one event loop thread (the single
 * writer of the endpoint's state). Peers are numbered in order of first contact (or
 * {@link #addPeer}); the endpoint sees and uses those numbers as ports. Sends are batched until the
 * end of a read burst, a timer or a task, then flushed together (sendmmsg on epoll); runs of
 * equal-sized packets to one peer go out as one GSO super-packet when enabled.
 */
public final class UdpHost implements PacketHost {
    /** Peers a host can hold at once ({@link PeerPorts}). */
    public static final int MAX_PEERS = PeerPorts.MAX_PEERS;

    private final PacketEndpoint endpoint;
    private final UdpOptions options;
    private final boolean gso;
    private final String kind;
    private final Map<InetSocketAddress, Integer> portByAddress = new HashMap<>();
    private final List<InetSocketAddress> addressByPort = new ArrayList<>();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong droppedPeers = new AtomicLong();
    private final AtomicLong expiredPeers = new AtomicLong();
    /** Packets from new sources their endpoint did not admit ({@link PacketEndpoint#admits}): no peer entry for them. */
    private final AtomicLong refusedSources = new AtomicLong();
    /** Per peer index: when it was last heard from. */
    private long[] peerHeardNs = new long[16];
    /** Per peer index: the channel its packets last came in on, the one that answers it ({@link #channels}). */
    private int[] peerChannel = new int[16];
    /**
     * The host's sockets: [0] the one bound; with a wildcard bind (epoll), one more per local address a
     * packet came to, bound on first sight of it, so each peer is answered from the address it sent
     * to (a wildcard socket answers from the address the routing picks, which a peer that sent to
     * another of the host's addresses takes for a stranger's).
     */
    private Channel[] channels = new Channel[1];
    private int channelCount = 1;
    private final Map<InetAddress, Integer> channelByAddress = new HashMap<>();
    private final Set<InetAddress> binding = new HashSet<>();
    private Bootstrap bootstrap;
    private boolean perAddress;
    private final PeerPorts ports = new PeerPorts();
    private final Outbox outbox = this::send;
    private final FaultInjector faults;
    private final ByteBuffer receiveBuffer = ByteBuffer.allocateDirect(65536).order(ByteOrder.LITTLE_ENDIAN);
    private final long receiveAddress = GsoRuns.UNSAFE_COPY ? PlatformDependent.directBufferAddress(receiveBuffer) : 0;
    private final AtomicLong oversized = new AtomicLong();
    // written by the event loop thread only; read by others for statistics
    private volatile long packetsSent;
    private volatile long datagramsWritten;
    private volatile long packetsReceived;
    private volatile long readBursts;
    private volatile Channel channel;
    private volatile EventLoop loop;
    private ScheduledFuture<?> timer;
    private long timerAtNs = PacketEndpoint.NO_DEADLINE;
    private volatile Throwable lastError;

    /** Pending GSO runs, one per peer, flushed together at the end of a burst. */
    private final GsoRuns runs = new GsoRuns(this::writeRun);

    private UdpHost(final PacketEndpoint endpoint, final UdpOptions options, final boolean gso, final String kind) {
        this.endpoint = endpoint;
        this.kind = kind;
        this.options = options;
        this.gso = gso;
        this.faults = options.faults();
    }

    static UdpHost bind(final UdpTransport transport, final PacketEndpoint endpoint, final InetSocketAddress local,
                        final UdpOptions options, final InetSocketAddress... peers) {
        final boolean gso = transport.isEpoll() && options.gso();
        final UdpHost host = new UdpHost(endpoint, options, gso, transport.kind());
        for (final InetSocketAddress peer : peers) {
            host.portOf(peer);
        }
        final Bootstrap bootstrap = new Bootstrap()
            .group(transport.group())
            .channel(transport.channelClass())
            .option(ChannelOption.SO_RCVBUF, options.socketBufferBytes())
            .option(ChannelOption.SO_SNDBUF, options.socketBufferBytes())
            .option(ChannelOption.RECVBUF_ALLOCATOR, receiveAllocator(transport.isEpoll() && options.gro()))
            .handler(host.new Handler(0));
        if (transport.isEpoll() && options.gro()) {
            bootstrap.option(EpollChannelOption.UDP_GRO, true);
        }
        host.perAddress = transport.isEpoll() && local.getAddress().isAnyLocalAddress();
        if (host.perAddress) {
            // every packet's destination address, and a socket per address beside the wildcard one on the same port
            bootstrap.option(EpollChannelOption.IP_RECVORIGDSTADDR, true).option(ChannelOption.SO_REUSEADDR, true);
        }
        host.bootstrap = bootstrap;
        // the channel and its loop are the host's from registration on, before bind() returns (Handler)
        bootstrap.bind(local).syncUninterruptibly();
        host.execute(() -> { });
        return host;
    }

    private static FixedRecvByteBufAllocator receiveAllocator(final boolean gro) {
        // a GRO read can hold a 64 KiB run of packets; keep reading until the socket is empty
        // instead of stopping after one datagram that did not fill the buffer
        final FixedRecvByteBufAllocator allocator = new FixedRecvByteBufAllocator(gro ? 65536 : 2048);
        allocator.respectMaybeMoreData(false);
        // about one GRO run per read burst: larger bursts delay the flush of what they produce
        allocator.maxMessagesPerRead(64);
        return allocator;
    }

    public InetSocketAddress localAddress() {
        return (InetSocketAddress) channel.localAddress();
    }

    /** Registers a peer and returns its port number (the same number on every call for one address). */
    public int addPeer(final InetSocketAddress address) {
        return call(() -> portOf(address)).join();
    }

    /** The address of the peer known as {@code port}, or null (the host's thread: its endpoint's). */
    public InetSocketAddress peerAddress(final int port) {
        return port >= 0 && port < addressByPort.size() ? addressByPort.get(port) : null;
    }

    public boolean usesGso() {
        return gso;
    }

    /** Packets handed to the socket, and the datagram writes (GSO runs count once) they took. */
    @Override
    public String batchingStats() {
        return String.format("sent %d packets in %d writes (%.1f/write), received %d in %d bursts (%.1f/burst)",
            packetsSent, datagramsWritten, packetsSent / Math.max(1.0, datagramsWritten), packetsReceived, readBursts,
            packetsReceived / Math.max(1.0, readBursts));
    }

    @Override
    public String kind() {
        return kind;
    }

    @Override
    public long errors() {
        return errors.get();
    }

    public long droppedPeers() {
        return droppedPeers.get();
    }

    /** Packets from sources it did not know that its endpoint did not admit (no peer entry was made for them). */
    public long refusedSources() {
        return refusedSources.get();
    }

    /** Peers that gave their place to a new one after their lease ran out. */
    public long expiredPeers() {
        return expiredPeers.get();
    }

    @Override
    public Throwable lastError() {
        return lastError;
    }

    @Override
    public void execute(final Runnable task) {
        loop.execute(() -> {
            try {
                task.run();
            } catch (final RuntimeException | Error ex) {
                onError(ex);
            }
            runTimer();
        });
    }

    @Override
    public <T> CompletableFuture<T> call(final Supplier<T> function) {
        final CompletableFuture<T> future = new CompletableFuture<>();
        loop.execute(() -> {
            try {
                future.complete(function.get());
            } catch (final RuntimeException | Error ex) {
                future.completeExceptionally(ex);
            }
            runTimer();
        });
        return future;
    }

    @Override
    public void close() {
        if (channel != null) {
            // the per-address sockets are created on the event loop: closed there, then the bound one
            if (loop != null && !loop.isShuttingDown()) {
                loop.submit(() -> {
                    for (int i = 1; i < channelCount; i++) {
                        if (channels[i] != null) {
                            channels[i].close();
                        }
                    }
                }).syncUninterruptibly();
            }
            channel.close().syncUninterruptibly();
        }
    }

    /** The local addresses this host answers from a socket of their own (besides the one it was bound to). */
    public List<InetAddress> answeringAddresses() {
        return call(() -> List.copyOf(channelByAddress.keySet())).join();
    }

    /**
     * The channel a packet that came in on channel {@code arrived} for {@code recipient} is answered
     * from: the socket of the recipient's address, bound now if this wildcard host has none yet (the
     * wildcard socket answers until it is up).
     */
    private int answeringChannel(final int arrived, final InetSocketAddress recipient) {
        if (!perAddress || arrived != 0 || recipient == null || recipient.getAddress().isAnyLocalAddress()) {
            return arrived;
        }
        final InetAddress address = recipient.getAddress();
        final Integer known = channelByAddress.get(address);
        if (known != null) {
            return known;
        }
        if (binding.add(address)) {
            final int index = channelCount++;
            if (index == channels.length) {
                channels = Arrays.copyOf(channels, 2 * index);
            }
            final int port = ((InetSocketAddress) channel.localAddress()).getPort();
            bootstrap.clone(loop).handler(new Handler(index)).bind(new InetSocketAddress(address, port)).addListener(f -> {
                if (f.isSuccess()) {
                    channelByAddress.put(address, index);
                } else {
                    // answered from the wildcard socket, as before
                    onError(f.cause());
                }
            });
        }
        return 0;
    }

    /** The channel that answers peer index {@code peer}. */
    private Channel channelOf(final int peer) {
        final Channel c = channels[peerChannel[peer]];
        return c != null ? c : channel;
    }

    /**
     * The port number of a peer (heard from now), assigning one to a new address: a free index, or,
     * with the table full, the index of the least recently heard peer whose lease ran out (its port
     * number is retired: the index comes back with the next generation, so nothing still holding the
     * old number reaches the new peer); -1 if none is free.
     */
    private int portOf(final InetSocketAddress address) {
        final long now = System.nanoTime();
        final Integer port = portByAddress.get(address);
        if (port != null) {
            peerHeardNs[PeerPorts.index(port)] = now;
            return port;
        }
        int index = addressByPort.size();
        if (index >= options.maxPeers()) {
            index = idlest(now);
            if (index < 0) {
                return -1;
            }
            runs.flush(index);
            portByAddress.remove(addressByPort.get(index));
            addressByPort.set(index, address);
            ports.reuse(index);
            expiredPeers.incrementAndGet();
        } else {
            addressByPort.add(address);
            if (index >= peerHeardNs.length) {
                peerHeardNs = Arrays.copyOf(peerHeardNs, 2 * peerHeardNs.length);
                peerChannel = Arrays.copyOf(peerChannel, peerHeardNs.length);
            }
        }
        peerHeardNs[index] = now;
        peerChannel[index] = 0;
        final int assigned = ports.port(index);
        portByAddress.put(address, assigned);
        return assigned;
    }

    /** The least recently heard peer whose lease ran out, or -1 (leases off, or every peer heard from within its lease). */
    private int idlest(final long now) {
        if (options.peerLeaseNs() <= 0) {
            return -1;
        }
        int idlest = -1;
        for (int i = 0; i < addressByPort.size(); i++) {
            if (now - peerHeardNs[i] >= options.peerLeaseNs() && (idlest < 0 || peerHeardNs[i] < peerHeardNs[idlest])) {
                idlest = i;
            }
        }
        return idlest;
    }

    private void onError(final Throwable ex) {
        errors.incrementAndGet();
        lastError = ex;
    }

    private void runTimer() {
        final long now = System.nanoTime();
        try {
            final long deadline = endpoint.onTimer(now, outbox);
            schedule(deadline, now);
        } catch (final RuntimeException | Error ex) {
            onError(ex);
        }
        flush();
    }

    private void schedule(final long deadline, final long now) {
        if (deadline == PacketEndpoint.NO_DEADLINE || deadline >= timerAtNs) {
            return;
        }
        if (timer != null) {
            timer.cancel(false);
        }
        timerAtNs = deadline;
        timer = loop.schedule(() -> {
            timer = null;
            timerAtNs = PacketEndpoint.NO_DEADLINE;
            runTimer();
        }, Math.max(0, deadline - now), TimeUnit.NANOSECONDS);
    }

    private void send(final int port, final ByteBuffer buffer, final int offset, final int length) {
        final int peer = PeerPorts.index(port);
        if (!ports.current(port, addressByPort.size())) {
            // never known, or a number retired with its peer's lease
            droppedPeers.incrementAndGet();
            return;
        }
        final int copies = faults.isActive() ? faults.copies() : 1;
        for (int c = 0; c < copies; c++) {
            if (faults.isActive() && faults.reorder()) {
                final ByteBuf late = copyOf(buffer, offset, length);
                final InetSocketAddress to = addressByPort.get(peer);
                final Channel out = channelOf(peer);
                loop.schedule(() -> {
                    out.writeAndFlush(new DatagramPacket(late, to));
                }, faults.nextLong(options.reorderDelayNs()), TimeUnit.NANOSECONDS);
            } else if (gso) {
                runs.append(channel.alloc(), peer, buffer, offset, length);
                packetsSent++;
            } else {
                final Channel out = channelOf(peer);
                out.write(new DatagramPacket(copyOf(buffer, offset, length), addressByPort.get(peer)), out.voidPromise());
                packetsSent++;
                datagramsWritten++;
            }
        }
    }

    /** Writes a peer's run as one GSO packet, or a plain one if it holds one segment; {@code peer}: the peer's index. */
    private void writeRun(final int peer, final ByteBuf run, final int segment, final int count) {
        final InetSocketAddress to = addressByPort.get(peer);
        final Channel out = channelOf(peer);
        datagramsWritten++;
        if (count == 1) {
            out.write(new DatagramPacket(run, to), out.voidPromise());
        } else {
            out.write(new SegmentedDatagramPacket(run, segment, to), out.voidPromise());
        }
    }

    private void flush() {
        runs.flushAll();
        channel.flush();
        for (int i = 1; i < channelCount; i++) {
            if (channels[i] != null) {
                channels[i].flush();
            }
        }
    }

    private ByteBuf copyOf(final ByteBuffer buffer, final int offset, final int length) {
        final ByteBuf copy = channel.alloc().directBuffer(length);
        GsoRuns.writeInto(copy, buffer, offset, length);
        return copy;
    }

    private final class Handler extends ChannelInboundHandlerAdapter {
        /** Which of the host's channels this handler reads ({@link #channels}). */
        private final int index;

        Handler(final int index) {
            this.index = index;
        }

        /**
         * The channel, known here on the event loop before its first read: peers already sending to the
         * address (a switch restarted under its workers) may be read, and answered, before bind() returns.
         */
        @Override
        public void channelRegistered(final ChannelHandlerContext ctx) {
            channels[index] = ctx.channel();
            if (index == 0) {
                channel = ctx.channel();
                loop = ctx.channel().eventLoop();
            }
            ctx.fireChannelRegistered();
        }

        @Override
        public void channelRead(final ChannelHandlerContext ctx, final Object msg) {
            if (!(msg instanceof DatagramPacket)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            final DatagramPacket packet = (DatagramPacket) msg;
            try {
                final ByteBuf content = packet.content();
                final int length = content.readableBytes();
                if (length > receiveBuffer.capacity()) {
                    oversized.incrementAndGet();
                    return;
                }
                // one copy into the poller's own buffer: cheaper than a ByteBuffer view per packet
                if (GsoRuns.UNSAFE_COPY && content.hasMemoryAddress()) {
                    PlatformDependent.copyMemory(content.memoryAddress() + content.readerIndex(), receiveAddress, length);
                } else {
                    content.getBytes(content.readerIndex(), receiveBuffer.clear().limit(length));
                    receiveBuffer.clear();
                }
                packetsReceived++;
                // a new source gets a peer entry only for a packet its endpoint admits
                if (!portByAddress.containsKey(packet.sender()) && !endpoint.admits(receiveBuffer, 0, length)) {
                    refusedSources.incrementAndGet();
                    return;
                }
                final int port = portOf(packet.sender());
                if (port < 0) {
                    droppedPeers.incrementAndGet();
                    return;
                }
                peerChannel[PeerPorts.index(port)] = answeringChannel(index, packet.recipient());
                endpoint.onPacket(port, receiveBuffer, 0, length, System.nanoTime(), outbox);
            } catch (final RuntimeException | Error ex) {
                onError(ex);
            } finally {
                packet.release();
            }
        }

        @Override
        public void channelReadComplete(final ChannelHandlerContext ctx) {
            readBursts++;
            runTimer();
        }

        @Override
        public void exceptionCaught(final ChannelHandlerContext ctx, final Throwable cause) {
            onError(cause);
        }
    }
}
