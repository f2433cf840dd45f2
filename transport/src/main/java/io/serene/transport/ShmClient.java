package io.serene.transport;

import io.serene.protocol.PacketEndpoint;
import org.agrona.IoUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;

/**
 * The connecting side of a shared-memory link (a worker): it creates its two rings, says hello in
 * the switch's control ring, writes its packets into its up ring, and reads its down ring, where a
 * multicast comes as a reference into the switch's broadcast buffer that it parses in place.
 */
public final class ShmClient extends ShmHost {
    /** This host's id in the switch's control ring. */
    private final int id;
    /** Its rings: the switch's packets to it and its own to the switch. */
    private final ShmPeer own;
    /** The broadcast buffer as this host parses packets in it. */
    private final ByteBuffer broadcastView;

    private ShmClient(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory, final ShmOptions options,
                      final int id, final MappedByteBuffer controlMap, final ShmPeer own, final MappedByteBuffer broadcastMap) {
        super(poller, endpoint, directory, options, controlMap, broadcastMap);
        this.id = id;
        this.own = own;
        this.broadcastView = broadcastMap.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    static ShmClient connect(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
                             final ShmOptions options) {
        final MappedByteBuffer switchMap = ShmFiles.mapLiveSwitchRing(directory);
        MappedByteBuffer broadcastMap = null;
        final int id;
        try {
            broadcastMap = ShmFiles.mapBroadcast(directory);
            id = ShmFiles.claimPeerId(directory);
        } catch (final RuntimeException ex) {
            IoUtil.unmap(switchMap);
            if (broadcastMap != null) {
                IoUtil.unmap(broadcastMap);
            }
            throw ex;
        }
        final Path down = ShmFiles.downFile(directory, id);
        final Path up = ShmFiles.upFile(directory, id);
        MappedByteBuffer downMap = null;
        final MappedByteBuffer upMap;
        try {
            downMap = ShmFiles.mapOwnFile(down, options.inboundFileBytes());
            ShmFiles.createFile(up);
            upMap = ShmFiles.mapOwnFile(up, options.inboundFileBytes());
        } catch (final RuntimeException ex) {
            IoUtil.unmap(switchMap);
            IoUtil.unmap(broadcastMap);
            if (downMap != null) {
                IoUtil.unmap(downMap);
            }
            IoUtil.deleteIfExists(down.toFile());
            IoUtil.deleteIfExists(up.toFile());
            throw ex;
        }
        final ShmPeer own = new ShmPeer(id, 0, down, up, downMap, upMap);
        final ShmClient host = new ShmClient(poller, endpoint, directory, options, id, switchMap, own, broadcastMap);
        if (!host.control.write(id << 1, new UnsafeBuffer(new byte[1]), 0, 1)) {
            own.unmap();
            IoUtil.unmap(switchMap);
            IoUtil.unmap(broadcastMap);
            own.delete();
            throw new IllegalStateException("the switch at shm:" + directory + " takes no hellos (its control ring "
                + directory.resolve(ShmFiles.SWITCH_RING) + " is full)");
        }
        host.start();
        return host;
    }

    @Override
    int readIn() {
        return read(own.down(), own.port(), own.downView(), own.downFile());
    }

    @Override
    boolean onReference(final int port, final MutableDirectBuffer buffer, final int index, final int length) {
        final int packetLength = length == BroadcastBuffer.REFERENCE_LENGTH ? buffer.getInt(index + 8) : -1;
        final int at = BroadcastBuffer.indexOf(buffer.getLong(index), packetLength, broadcastView.capacity());
        if (packetLength < 0 || at < 0) {
            badReferences.incrementAndGet();
            return true;
        }
        endpoint.onPacket(port, broadcastView, at, packetLength, System.nanoTime(), outbox);
        return true;
    }

    @Override
    SpscRing ringOf(final int port) {
        return port == 0 ? own.up() : null;
    }

    @Override
    void release() {
        control.write((id << 1) | 1, new UnsafeBuffer(new byte[1]), 0, 1);
        IoUtil.unmap(controlMap);
        IoUtil.unmap(broadcastMap);
        own.unmap();
        own.delete();
    }
}
