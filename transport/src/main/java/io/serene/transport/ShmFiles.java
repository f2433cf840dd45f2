package io.serene.transport;

import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.MappedByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The files of a shared-memory link in its directory (docs/deploy.md): their names, creating them
 * as the user's own (directory 0700, files 0600), mapping them, and the checks a host makes before
 * it serves or connects (is a switch there, alive, of this version).
 */
final class ShmFiles {
    static final String SWITCH_RING = "switch.ring";
    static final String BROADCAST = "switch.bcast";
    /** A serving host stamps its ring this often; a ring not stamped for {@link #STALE_MS} has no server. */
    static final long HEARTBEAT_NS = 100_000_000L;
    static final long STALE_MS = 3_000;
    /** Ids fit in a message type with one bit to spare (the goodbye bit) and stay positive. */
    private static final int MAX_ID = 1 << 29;

    private ShmFiles() {
    }

    /** The ring a peer reads: the switch's packets to it. */
    static Path downFile(final Path directory, final int id) {
        return directory.resolve("peer-" + id + ".ring");
    }

    /** The ring a peer writes: its packets to the switch. */
    static Path upFile(final Path directory, final int id) {
        return directory.resolve("peer-" + id + ".up");
    }

    static void createDirectory(final Path directory) {
        try {
            if (!Files.isDirectory(directory)) {
                Files.createDirectories(directory,
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot create " + directory, ex);
        }
    }

    /** Sizes a file this host just created (empty, the user's own) and maps it. */
    static MappedByteBuffer mapOwnFile(final Path file, final int bytes) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(bytes);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot size " + file, ex);
        }
        return IoUtil.mapExistingFile(file.toFile(), "ring");
    }

    static void createFile(final Path file) {
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot create " + file, ex);
        }
    }

    /** Before serving: refuses if a live switch stamps the control ring there, else removes a dead one's. */
    static void removeStaleSwitch(final Path directory) {
        final Path file = directory.resolve(SWITCH_RING);
        if (!Files.exists(file)) {
            return;
        }
        final MappedByteBuffer old = IoUtil.mapExistingFile(file.toFile(), "switch ring");
        try {
            final long beat = new ManyToOneRingBuffer(new UnsafeBuffer(old)).consumerHeartbeatTime();
            if (System.currentTimeMillis() - beat < STALE_MS) {
                throw new IllegalStateException("another switch serves shm:" + directory + " (its ring " + file
                    + " was stamped " + (System.currentTimeMillis() - beat) + " ms ago)");
            }
        } finally {
            IoUtil.unmap(old);
        }
        IoUtil.delete(file.toFile(), false);
    }

    /** Before connecting: the live switch's control ring, mapped; a clear error if there is none. */
    static MappedByteBuffer mapLiveSwitchRing(final Path directory) {
        final Path switchFile = directory.resolve(SWITCH_RING);
        if (!Files.isRegularFile(switchFile)) {
            throw new IllegalArgumentException("no switch serves shm:" + directory + " (no " + switchFile + ")");
        }
        final MappedByteBuffer switchMap = IoUtil.mapExistingFile(switchFile.toFile(), "switch ring");
        final long age = System.currentTimeMillis() - new ManyToOneRingBuffer(new UnsafeBuffer(switchMap)).consumerHeartbeatTime();
        if (age > STALE_MS) {
            IoUtil.unmap(switchMap);
            throw new IllegalArgumentException("no switch serves shm:" + directory + " (its ring was last stamped "
                + age / 1000 + " s ago)");
        }
        return switchMap;
    }

    /** The switch's broadcast buffer, mapped to read; a clear error if it is missing or not of this version. */
    static MappedByteBuffer mapBroadcast(final Path directory) {
        final Path broadcastFile = directory.resolve(BROADCAST);
        final MappedByteBuffer broadcastMap;
        try {
            broadcastMap = IoUtil.mapExistingFile(broadcastFile.toFile(), "broadcast buffer");
        } catch (final RuntimeException ex) {
            throw new IllegalArgumentException("no switch serves shm:" + directory + " (cannot map " + broadcastFile + ": "
                + ex.getMessage() + ")", ex);
        }
        if (Integer.bitCount(broadcastMap.capacity()) != 1) {
            IoUtil.unmap(broadcastMap);
            throw new IllegalArgumentException("shm:" + directory + " has a broadcast buffer of " + broadcastMap.capacity()
                + " bytes, not a power of two: not a switch of this version");
        }
        return broadcastMap;
    }

    /** A fresh peer id whose down ring this call created (empty); another peer's id is drawn again. */
    static int claimPeerId(final Path directory) {
        while (true) {
            final int id = ThreadLocalRandom.current().nextInt(1, MAX_ID);
            final Path down = downFile(directory, id);
            try {
                Files.createFile(down, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                return id;
            } catch (final FileAlreadyExistsException ex) {
                // another peer's id: draw again
            } catch (final IOException ex) {
                throw new UncheckedIOException("cannot create " + down, ex);
            }
        }
    }
}
