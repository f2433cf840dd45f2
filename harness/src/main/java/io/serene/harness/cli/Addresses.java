package io.serene.harness.cli;

import java.net.InetSocketAddress;

/** Command-line addresses. */
final class Addresses {
    private Addresses() {
    }

    /** Parses {@code HOST:PORT} given to {@code option}; anything else is a clear error naming the option. */
    static InetSocketAddress parse(final String option, final String address) {
        final int colon = address.lastIndexOf(':');
        try {
            if (colon > 0) {
                return InetSocketAddress.createUnresolved(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
            }
        } catch (final IllegalArgumentException ex) {
            // a port that is not a number or out of range: the message below
        }
        throw new IllegalArgumentException(option + " must be HOST:PORT, was '" + address + "'");
    }
}
