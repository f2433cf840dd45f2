package io.serene.xdp;

/**
 * A switch port of the XDP switch: the interface a worker sits behind ({@code ifindex}), its own MAC and the
 * worker's, which the per-port program puts on each copy of a result.
 */
public record XdpPort(int ifindex, byte[] ownMac, byte[] peerMac) {
}
