package io.serene.node;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.serene.controlplane.rpc.SwitchControlGrpc;

import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * The gRPC server on the control port: the switch's control service with the standard health
 * service ({@code grpc.health.v1}; SERVING for the whole server and for {@code serene.control.SwitchControl})
 * and server reflection, so {@code grpcurl} and a Kubernetes gRPC probe talk to it without the proto.
 */
public final class ControlServer implements AutoCloseable {
    private final Server server;
    private final HealthStatusManager health;
    private final String bind;

    private ControlServer(final Server server, final HealthStatusManager health, final String bind) {
        this.server = server;
        this.health = health;
        this.bind = bind;
    }

    /** Starts the server on {@code bind:port} (port 0: any free one), open to anyone on this host. */
    public static ControlServer start(final SwitchControlService control, final String bind, final int port) throws IOException {
        return start(control, bind, port, ControlAccess.LOCAL);
    }

    /** Starts the server with an access rule: a token (required off loopback), TLS. */
    public static ControlServer start(final SwitchControlService control, final String bind, final int port, final ControlAccess access)
        throws IOException {
        access.checkBind(bind);
        final HealthStatusManager health = new HealthStatusManager();
        final NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(bind, port))
            .addService(ServerInterceptors.intercept(control, access.interceptor()))
            .addService(health.getHealthService())
            .addService(ServerInterceptors.intercept(ProtoReflectionServiceV1.newInstance(), access.interceptor()));
        if (access.tls()) {
            builder.useTransportSecurity(access.certFile().toFile(), access.keyFile().toFile());
        }
        final Server server = builder.build().start();
        health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.SERVING);
        health.setStatus(SwitchControlGrpc.SERVICE_NAME, ServingStatus.SERVING);
        return new ControlServer(server, health, bind);
    }

    /** {@code host:port} as a client names it. */
    public String address() {
        return bind + ":" + server.getPort();
    }

    @Override
    public void close() {
        health.enterTerminalState();
        server.shutdownNow();
    }
}
