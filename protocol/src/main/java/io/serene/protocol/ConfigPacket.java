package io.serene.protocol;

/**
 * CONFIG, switch to workers: one entry of a job's sync-config table. Body: the entry's first round,
 * bound, quorum, late mode (its {@code LateMode} wire code), timeout in ns, bitmap words W, 4
 * reserved bytes, the required-workers bitmap (W words). The header's config epoch is the table's
 * epoch, its chunk field the entry's index and its element count the number of entries.
 */
public final class ConfigPacket extends Packet<ConfigPacket> {
    public static final int FIRST_ROUND_OFFSET = HEADER_LENGTH;
    public static final int BOUND_OFFSET = HEADER_LENGTH + 4;
    public static final int QUORUM_OFFSET = HEADER_LENGTH + 8;
    public static final int LATE_MODE_OFFSET = HEADER_LENGTH + 12;
    public static final int TIMEOUT_OFFSET = HEADER_LENGTH + 16;
    public static final int BITMAP_WORDS_OFFSET = HEADER_LENGTH + 24;
    public static final int BITMAP_OFFSET = HEADER_LENGTH + 32;

    /** Length of a CONFIG whose required bitmap has {@code bitmapWords} words. */
    public static int length(final int bitmapWords) {
        return BITMAP_OFFSET + 8 * bitmapWords;
    }

    @Override
    protected ConfigPacket self() {
        return this;
    }

    public int firstRound() {
        return buffer.getInt(offset + FIRST_ROUND_OFFSET);
    }

    public ConfigPacket firstRound(final int round) {
        buffer.putInt(offset + FIRST_ROUND_OFFSET, round);
        return this;
    }

    public int bound() {
        return buffer.getInt(offset + BOUND_OFFSET);
    }

    public ConfigPacket bound(final int bound) {
        buffer.putInt(offset + BOUND_OFFSET, bound);
        return this;
    }

    public int quorum() {
        return buffer.getInt(offset + QUORUM_OFFSET);
    }

    public ConfigPacket quorum(final int quorum) {
        buffer.putInt(offset + QUORUM_OFFSET, quorum);
        return this;
    }

    public int lateMode() {
        return buffer.getInt(offset + LATE_MODE_OFFSET);
    }

    public ConfigPacket lateMode(final int mode) {
        buffer.putInt(offset + LATE_MODE_OFFSET, mode);
        return this;
    }

    public long timeoutNs() {
        return buffer.getLong(offset + TIMEOUT_OFFSET);
    }

    public ConfigPacket timeoutNs(final long ns) {
        buffer.putLong(offset + TIMEOUT_OFFSET, ns);
        return this;
    }

    public int bitmapWords() {
        return buffer.getInt(offset + BITMAP_WORDS_OFFSET);
    }

    /** Sets the required bitmap's word count (and zeroes the reserved field after it). */
    public ConfigPacket bitmapWords(final int words) {
        buffer.putInt(offset + BITMAP_WORDS_OFFSET, words);
        buffer.putInt(offset + BITMAP_WORDS_OFFSET + 4, 0);
        return this;
    }

    public long requiredWord(final int index) {
        return buffer.getLong(offset + BITMAP_OFFSET + 8 * index);
    }

    public ConfigPacket requiredWord(final int index, final long word) {
        buffer.putLong(offset + BITMAP_OFFSET + 8 * index, word);
        return this;
    }
}
