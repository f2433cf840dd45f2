package io.serene.node;

/** The one check of a port option: 0..65535 (0: any free port), and -1 (none) where the service is optional. */
public final class Ports {
    private Ports() {
    }

    /** A port that must be given. */
    public static int require(final String option, final int port) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException(option + " must be in 0..65535, was " + port);
        }
        return port;
    }

    /** The port of an optional service: -1 for none. */
    public static int optional(final String option, final int port) {
        if (port < -1 || port > 65535) {
            throw new IllegalArgumentException(option + " must be in 0..65535 (or -1: none), was " + port);
        }
        return port;
    }
}
