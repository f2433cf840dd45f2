package io.serene.launch.output;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.zip.CRC32C;

/**
 * A TensorBoard event file ({@code events.out.tfevents.*}): TFRecord framing (length, masked
 * CRC-32C of the length, the record, masked CRC-32C of the record) around {@code tensorflow.Event}
 * protocol buffers, encoded here field by field: {@code wall_time} (1, double), {@code step} (2),
 * {@code file_version} (3) in the first record, and {@code summary} (5) holding one
 * {@code Summary.Value}: a {@code simple_value} (2) scalar, or a string tensor (8) with the text
 * plugin's metadata (9) for text. TensorBoard, tbparse and TensorFlow's summary iterator read it.
 */
public final class TensorBoardWriter implements AutoCloseable {
    private static final int MASK_DELTA = 0xa282ead8;
    private static final int DT_STRING = 7;
    private final OutputStream out;
    private final Path file;

    /** Creates {@code dir} and a new event file in it, stamped with {@code wallSeconds}. */
    public TensorBoardWriter(final Path dir, final double wallSeconds) throws IOException {
        Files.createDirectories(dir);
        file = dir.resolve(String.format(Locale.ROOT, "events.out.tfevents.%d.serene", (long) wallSeconds));
        out = Files.newOutputStream(file);
        final Proto event = new Proto().fixed64(1, Double.doubleToLongBits(wallSeconds)).string(3, "brain.Event:2");
        record(event.bytes());
    }

    public Path file() {
        return file;
    }

    /** A scalar at a step (TensorBoard's Scalars tab; tags with a '/' are grouped by their prefix). */
    public void scalar(final String tag, final long step, final double wallSeconds, final double value) throws IOException {
        final Proto v = new Proto().string(1, tag).fixed32(2, Float.floatToIntBits((float) value));
        event(step, wallSeconds, v);
    }

    /** A text at a step (TensorBoard's Text tab). */
    public void text(final String tag, final long step, final double wallSeconds, final String value) throws IOException {
        final Proto pluginData = new Proto().string(1, "text");
        final Proto metadata = new Proto().message(1, pluginData);
        final Proto tensor = new Proto().varint(1, DT_STRING).message(2, new Proto()).bytes(8, value.getBytes(StandardCharsets.UTF_8));
        final Proto v = new Proto().string(1, tag).message(8, tensor).message(9, metadata);
        event(step, wallSeconds, v);
    }

    private void event(final long step, final double wallSeconds, final Proto value) throws IOException {
        final Proto summary = new Proto().message(1, value);
        record(new Proto().fixed64(1, Double.doubleToLongBits(wallSeconds)).varint(2, step).message(5, summary).bytes());
    }

    private void record(final byte[] data) throws IOException {
        final ByteBuffer header = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        header.putLong(data.length);
        header.putInt(masked(header.array(), 0, 8));
        out.write(header.array());
        out.write(data);
        final ByteBuffer footer = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        footer.putInt(masked(data, 0, data.length));
        out.write(footer.array());
    }

    /** TFRecord's masked CRC-32C. */
    static int masked(final byte[] data, final int offset, final int length) {
        final CRC32C crc = new CRC32C();
        crc.update(data, offset, length);
        final int c = (int) crc.getValue();
        return ((c >>> 15) | (c << 17)) + MASK_DELTA;
    }

    @Override
    public void close() throws IOException {
        out.close();
    }

    /** A protocol buffer message being encoded (fields in the order written). */
    static final class Proto {
        private final ByteArrayOutputStream b = new ByteArrayOutputStream();

        Proto varint(final int field, final long value) {
            key(field, 0);
            raw(value);
            return this;
        }

        Proto fixed64(final int field, final long value) {
            key(field, 1);
            for (int i = 0; i < 8; i++) {
                b.write((int) (value >>> (8 * i)));
            }
            return this;
        }

        Proto fixed32(final int field, final int value) {
            key(field, 5);
            for (int i = 0; i < 4; i++) {
                b.write(value >>> (8 * i));
            }
            return this;
        }

        Proto bytes(final int field, final byte[] value) {
            key(field, 2);
            raw(value.length);
            b.writeBytes(value);
            return this;
        }

        Proto string(final int field, final String value) {
            return bytes(field, value.getBytes(StandardCharsets.UTF_8));
        }

        Proto message(final int field, final Proto value) {
            return bytes(field, value.bytes());
        }

        byte[] bytes() {
            return b.toByteArray();
        }

        private void key(final int field, final int wireType) {
            raw(((long) field << 3) | wireType);
        }

        private void raw(final long value) {
            long v = value;
            while ((v & ~0x7FL) != 0) {
                b.write((int) ((v & 0x7F) | 0x80));
                v >>>= 7;
            }
            b.write((int) v);
        }
    }
}
