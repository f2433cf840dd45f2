package io.serene.transport;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.serene.protocol.PacketEndpoint;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * UDP over Netty: native epoll (batched sendmmsg/recvmmsg, UDP GSO/GRO where the kernel has them)
 * with a plain NIO fallback. Owns the event loop threads; {@link #bind} puts a sans-IO endpoint on
 * a socket, served by one of those threads.
 */
public final class UdpTransport implements AutoCloseable {
    private final EventLoopGroup group;
    private final boolean epoll;

    private UdpTransport(final int threads, final boolean preferEpoll) {
        this.epoll = preferEpoll && Epoll.isAvailable();
        final IoHandlerFactory factory = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        this.group = new MultiThreadIoEventLoopGroup(threads, factory);
    }

    /** A transport with {@code threads} event loop threads; epoll when preferred and available. */
    public static UdpTransport create(final int threads, final boolean preferEpoll) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, was " + threads);
        }
        return new UdpTransport(threads, preferEpoll);
    }

    public boolean isEpoll() {
        return epoll;
    }

    /** Which I/O flavour runs: "epoll" or "nio". */
    public String kind() {
        return epoll ? "epoll" : "nio";
    }

    Class<? extends Channel> channelClass() {
        return epoll ? EpollDatagramChannel.class : NioDatagramChannel.class;
    }

    EventLoopGroup group() {
        return group;
    }

    /**
     * Binds a socket at {@code local} (port 0: any free port) and serves the endpoint on it. The
     * given peers get ports 0, 1, ... in order before the endpoint's first timer call, so an
     * endpoint that sends at once (a worker's JOIN) already reaches them.
     */
    public UdpHost bind(final PacketEndpoint endpoint, final InetSocketAddress local, final UdpOptions options,
                        final InetSocketAddress... peers) {
        return UdpHost.bind(this, endpoint, local, options, peers);
    }

    @Override
    public void close() {
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
