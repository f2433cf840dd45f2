package io.serene.worker.agent;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * The agent's control protocol, version {@value #VERSION} (docs/pytorch.md, "The agent's
 * protocol"): frames on a Unix stream socket, little-endian, each a 4-byte length of what follows,
 * a type byte and the type's fields. Gradients and aggregates do not cross the socket: they sit in
 * the shared file the WELCOME names, {@code elements} float32 from offset 0.
 */
public final class AgentFrames {
    /** "SRNA", the first field of a HELLO. */
    public static final int MAGIC = 0x414E5253;
    public static final int VERSION = 1;
    /** Client: magic, version (u16), rank, world, elements (i32 each). */
    public static final byte HELLO = 1;
    /** Agent: version (u16), elements (i32), the shared file's path, the sync config in force (strings). */
    public static final byte WELCOME = 2;
    /** Client: round, elements used, its compute time in microseconds (i32 each; 0: not reported); the gradient is in the shared file. */
    public static final byte ALLREDUCE = 3;
    /**
     * Agent: round, contributors, skipped (i32 each; skipped 1: the round was released without this rank before its gradient
     * came, which was dropped); the average is in the shared file.
     */
    public static final byte RESULT = 4;
    /** Client: round (i32). */
    public static final byte CLEARANCE = 5;
    /** Agent: round, the bound in force for it (i32 each), once this worker may compute the round. */
    public static final byte CLEARED = 6;
    /** Client: nothing; the agent answers CONFIG_IS. */
    public static final byte CONFIG = 7;
    /** Agent: the sync config in force for the next round (a string). */
    public static final byte CONFIG_IS = 8;
    /** Agent: what went wrong (a string); the agent closes the connection after it unless the request alone was refused. */
    public static final byte ERROR = 9;
    /** Client: it is done; the agent leaves the job and exits. */
    public static final byte BYE = 10;
    /** Client: nothing; the agent answers RELEASED_IS. */
    public static final byte RELEASED = 11;
    /** Agent: R, the highest round such that every round up to it is released, as the worker last heard (i32; -1: none yet). */
    public static final byte RELEASED_IS = 12;
    /** The longest frame either side accepts (a string field is at most 64 KiB). */
    static final int MAX_FRAME = 1 << 17;

    private AgentFrames() {
    }

    /** One frame read: its type and its fields (positioned after the type byte). */
    public record Frame(byte type, ByteBuffer body) {
        public int i32() {
            return body.getInt();
        }

        public int u16() {
            return Short.toUnsignedInt(body.getShort());
        }

        public String string() {
            final byte[] b = new byte[u16()];
            body.get(b);
            return new String(b, StandardCharsets.UTF_8);
        }
    }

    /** Reads frames into buffers of its own, reused: a frame's body is valid until the next read. */
    public static final class Reader {
        private final ByteBuffer head = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        private final ByteBuffer body = ByteBuffer.allocate(MAX_FRAME).order(ByteOrder.LITTLE_ENDIAN);

        /** Reads a whole frame; null at a clean end of stream before a frame, EOFException inside one. */
        public Frame read(final SocketChannel ch) throws IOException {
            head.clear();
            if (!fill(ch, head, true)) {
                return null;
            }
            final int length = head.flip().getInt();
            if (length < 1 || length > MAX_FRAME) {
                throw new IOException("a frame of " + length + " bytes (at most " + MAX_FRAME + "): not a Serene agent client");
            }
            body.clear().limit(length);
            fill(ch, body, false);
            body.flip();
            return new Frame(body.get(), body);
        }
    }

    private static boolean fill(final SocketChannel ch, final ByteBuffer into, final boolean endAllowed) throws IOException {
        while (into.hasRemaining()) {
            if (ch.read(into) < 0) {
                if (endAllowed && into.position() == 0) {
                    return false;
                }
                throw new EOFException("the connection ended inside a frame");
            }
        }
        return true;
    }

    /** A frame being written: {@link #i32}, {@link #u16}, {@link #string}, then {@link #send}. */
    public static final class Out {
        private final ByteBuffer buf = ByteBuffer.allocate(MAX_FRAME).order(ByteOrder.LITTLE_ENDIAN);

        public Out(final byte type) {
            reset(type);
        }

        /** Starts the frame anew as one of {@code type}. */
        public Out reset(final byte type) {
            buf.clear().putInt(0).put(type);
            return this;
        }

        public Out i32(final int v) {
            buf.putInt(v);
            return this;
        }

        public Out u16(final int v) {
            buf.putShort((short) v);
            return this;
        }

        public Out string(final String s) {
            final byte[] b = s.getBytes(StandardCharsets.UTF_8);
            final int n = Math.min(b.length, 0xFFFF);
            buf.putShort((short) n).put(b, 0, n);
            return this;
        }

        public void send(final SocketChannel ch) throws IOException {
            buf.putInt(0, buf.position() - 4).flip();
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
        }
    }
}
