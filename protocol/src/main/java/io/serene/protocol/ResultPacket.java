package io.serene.protocol;

/**
 * RESULT, switch to workers: the aggregate of one step. Body: contributor count, highest fully
 * released round R, bitmap words W, 4 reserved bytes, the job's lowest unreleased step ("open"
 * seq), the chunk's contributor bitmap (W words), the open step's contributors so far (W words, a
 * loss-recovery hint), then {@code element count} int32 values.
 */
public final class ResultPacket extends Packet<ResultPacket> {
    public static final int CONTRIBUTOR_COUNT_OFFSET = HEADER_LENGTH;
    public static final int RELEASED_ROUND_OFFSET = HEADER_LENGTH + 4;
    public static final int BITMAP_WORDS_OFFSET = HEADER_LENGTH + 8;
    public static final int RESERVED_OFFSET = HEADER_LENGTH + 12;
    public static final int OPEN_SEQ_OFFSET = HEADER_LENGTH + 16;
    public static final int BITMAP_OFFSET = HEADER_LENGTH + 24;

    /** Offset of the first value in a RESULT with {@code bitmapWords} words per bitmap. */
    public static int valuesOffset(final int bitmapWords) {
        return BITMAP_OFFSET + 16 * bitmapWords;
    }

    /** Length of a RESULT with {@code bitmapWords} words per bitmap and {@code elementCount} values. */
    public static int length(final int bitmapWords, final int elementCount) {
        return valuesOffset(bitmapWords) + 4 * elementCount;
    }

    @Override
    protected ResultPacket self() {
        return this;
    }

    public int contributorCount() {
        return buffer.getInt(offset + CONTRIBUTOR_COUNT_OFFSET);
    }

    public ResultPacket contributorCount(final int count) {
        buffer.putInt(offset + CONTRIBUTOR_COUNT_OFFSET, count);
        return this;
    }

    public int releasedRound() {
        return buffer.getInt(offset + RELEASED_ROUND_OFFSET);
    }

    public ResultPacket releasedRound(final int round) {
        buffer.putInt(offset + RELEASED_ROUND_OFFSET, round);
        return this;
    }

    public int bitmapWords() {
        return buffer.getInt(offset + BITMAP_WORDS_OFFSET);
    }

    /** Sets the bitmap word count (and zeroes the reserved field after it). */
    public ResultPacket bitmapWords(final int words) {
        buffer.putInt(offset + BITMAP_WORDS_OFFSET, words);
        buffer.putInt(offset + RESERVED_OFFSET, 0);
        return this;
    }

    public long bitmapWord(final int index) {
        return buffer.getLong(offset + BITMAP_OFFSET + 8 * index);
    }

    public ResultPacket bitmapWord(final int index, final long word) {
        buffer.putLong(offset + BITMAP_OFFSET + 8 * index, word);
        return this;
    }

    public long openSeq() {
        return buffer.getLong(offset + OPEN_SEQ_OFFSET);
    }

    public ResultPacket openSeq(final long seq) {
        buffer.putLong(offset + OPEN_SEQ_OFFSET, seq);
        return this;
    }

    /** Word i of the open step's contributors so far; needs {@link #bitmapWords()}. */
    public long openBitmapWord(final int index) {
        return buffer.getLong(offset + BITMAP_OFFSET + 8 * (bitmapWords() + index));
    }

    public ResultPacket openBitmapWord(final int index, final long word) {
        buffer.putLong(offset + BITMAP_OFFSET + 8 * (bitmapWords() + index), word);
        return this;
    }

    /** Offset (relative to the packet) of the first value; needs {@link #bitmapWords()}. */
    public int valuesOffset() {
        return valuesOffset(bitmapWords());
    }

    public int value(final int index) {
        return buffer.getInt(offset + valuesOffset() + 4 * index);
    }
}
