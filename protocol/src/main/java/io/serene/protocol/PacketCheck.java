package io.serene.protocol;

/** Outcome of validating a packet's header and length before anything reads its body. */
public enum PacketCheck {
    OK,
    TRUNCATED,
    BAD_MAGIC,
    BAD_VERSION,
    BAD_TYPE,
    BAD_LENGTH
}
