package io.serene.protocol;

/**
 * The header alone: what a receiver wraps first, to {@link #check()} a packet and read its type
 * before handing it to the flyweight of its body; and the whole of the header-only packets (LEAVE,
 * LEAVE_ACK, NACK, CONFIG_REQUEST).
 */
public final class PacketHeader extends Packet<PacketHeader> {
    @Override
    protected PacketHeader self() {
        return this;
    }
}
