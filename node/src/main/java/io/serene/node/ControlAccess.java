package io.serene.node;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.health.v1.HealthGrpc;

import java.io.IOException;
import java.net.InetAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;

/**
 * Who may use the control port: on loopback anyone on the host (as before); anywhere else only a
 * caller presenting the token ({@code authorization: Bearer TOKEN}), optionally over TLS. The health
 * service answers without a token (probes have none). The caller's address is kept for the log of
 * table writes.
 *
 * @param token    the token callers must present, or null (allowed on loopback only)
 * @param certFile the server's TLS certificate chain (PEM), or null for plaintext
 * @param keyFile  its private key (PKCS#8 PEM), or null
 */
public record ControlAccess(String token, Path certFile, Path keyFile) {
    /** The caller's address, in the context of a call. */
    static final Context.Key<SocketAddress> CALLER = Context.key("serene-control-caller");
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    /** Anyone on this host, no TLS. */
    public static final ControlAccess LOCAL = new ControlAccess(null, null, null);

    public ControlAccess {
        if ((certFile == null) != (keyFile == null)) {
            throw new IllegalArgumentException("TLS needs both --control-cert and --control-key");
        }
        for (final Path f : new Path[] {certFile, keyFile}) {
            if (f != null && !Files.isReadable(f)) {
                throw new IllegalArgumentException((f == certFile ? "--control-cert " : "--control-key ") + f + " does not exist or cannot be read");
            }
        }
        if (token != null && token.isBlank()) {
            throw new IllegalArgumentException("the control token is empty");
        }
    }

    /** A token from a file (its first line, trimmed); a missing or empty file is an error naming it. */
    public static String readToken(final String option, final Path file) {
        try {
            final String text = Files.readString(file, StandardCharsets.UTF_8).lines().findFirst().orElse("").trim();
            if (text.isEmpty()) {
                throw new IllegalArgumentException(option + " " + file + " is empty");
            }
            return text;
        } catch (final IOException ex) {
            throw new IllegalArgumentException(option + " " + file + " cannot be read: " + ex.getMessage(), ex);
        }
    }

    /** Refuses a non-loopback bind without a token: the service changes the sums' rules, so strangers must not reach it. */
    void checkBind(final String bind) throws IOException {
        if (token == null && !InetAddress.getByName(bind).isLoopbackAddress()) {
            throw new IllegalArgumentException("--control-bind " + bind + " is reachable from other hosts: give it a token "
                + "(--control-token-file), or bind 127.0.0.1");
        }
    }

    public boolean tls() {
        return certFile != null;
    }

    /** Checks the token (except for health checks) and records the caller. */
    ServerInterceptor interceptor() {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, R> call, final Metadata headers,
                                                              final ServerCallHandler<Q, R> next) {
                final boolean health = call.getMethodDescriptor().getServiceName() != null
                    && call.getMethodDescriptor().getServiceName().equals(HealthGrpc.SERVICE_NAME);
                if (token != null && !health && !matches(headers.get(AUTHORIZATION))) {
                    call.close(Status.UNAUTHENTICATED.withDescription("missing or wrong control token (serene control --token-file)"),
                        new Metadata());
                    return new ServerCall.Listener<>() { };
                }
                final Context context = Context.current().withValue(CALLER, call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
                return Contexts.interceptCall(context, call, headers, next);
            }
        };
    }

    private boolean matches(final String presented) {
        final byte[] want = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
        final byte[] got = presented == null ? new byte[0] : presented.getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(want, got);
    }
}
