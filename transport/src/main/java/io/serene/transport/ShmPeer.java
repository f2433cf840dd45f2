package io.serene.transport;

import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A peer's id, port and two rings with the mappings behind them: down, the switch's packets to
 * the peer; up, the peer's to the switch. A connecting host keeps its own as one (port 0).
 */
record ShmPeer(int id, int port, Path downFile, Path upFile, SpscRing down, MappedByteBuffer downMap,
               SpscRing up, MappedByteBuffer upMap, ByteBuffer downView, ByteBuffer upView) {
    ShmPeer(final int id, final int port, final Path downFile, final Path upFile, final MappedByteBuffer downMap,
            final MappedByteBuffer upMap) {
        this(id, port, downFile, upFile, new SpscRing(new UnsafeBuffer(downMap)), downMap, new SpscRing(new UnsafeBuffer(upMap)), upMap,
            downMap.duplicate().order(ByteOrder.LITTLE_ENDIAN), upMap.duplicate().order(ByteOrder.LITTLE_ENDIAN));
    }

    /** The serving host maps the two rings a peer created before its hello; null if they are missing or cannot be rings. */
    static ShmPeer mapExisting(final Path directory, final int id) {
        final Path down = ShmFiles.downFile(directory, id);
        final Path up = ShmFiles.upFile(directory, id);
        if (!Files.isRegularFile(down) || !Files.isRegularFile(up)) {
            return null;
        }
        MappedByteBuffer downMap = null;
        MappedByteBuffer upMap = null;
        try {
            downMap = IoUtil.mapExistingFile(down.toFile(), "peer ring");
            upMap = IoUtil.mapExistingFile(up.toFile(), "peer ring");
            return new ShmPeer(id, -1, down, up, downMap, upMap);
        } catch (final RuntimeException ex) {
            if (downMap != null) {
                IoUtil.unmap(downMap);
            }
            if (upMap != null) {
                IoUtil.unmap(upMap);
            }
            return null;
        }
    }

    /** This peer under the port the serving host numbered it with. */
    ShmPeer withPort(final int number) {
        return new ShmPeer(id, number, downFile, upFile, down, downMap, up, upMap, downView, upView);
    }

    void unmap() {
        IoUtil.unmap(downMap);
        IoUtil.unmap(upMap);
    }

    void delete() {
        IoUtil.deleteIfExists(downFile.toFile());
        IoUtil.deleteIfExists(upFile.toFile());
    }
}
