package io.serene.training;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.CheckedOutputStream;

/**
 * A training worker's state after it applied its first {@code roundsDone} rounds, with nothing pending: the model
 * (parameters, velocity, steps), the data position, the global-batch window, its own writes not yet
 * in an applied aggregate (read-my-writes) and what its engine folds into the next round, a gradient
 * held for the next open round, the copies for deferred evaluation and the round records so far. A
 * worker resumed from it trains on bitwise as the one that wrote it would have, given the same
 * aggregates: under BSP a run stopped and resumed ends with the uninterrupted run's model.
 *
 * <p>Files: {@code DIR/worker-I-after-N.ckpt} (N: rounds done) (binary, big-endian, a CRC-32 last), written to a
 * temporary file of the writer's own, synced to the disk, moved into place and the directory synced,
 * all under a lock on the directory (one writer at a time, across processes), so a worker killed
 * while writing, or the host losing power after, leaves the previous checkpoints whole. A worker
 * keeps its newest {@link #KEEP}; a run resumes from the newest round every worker has a checkpoint
 * after that reads clean ({@link #newestCommon}), so a damaged newest one costs a checkpoint
 * interval, not the run.
 */
public record Checkpoint(int worker, int workers, int roundsDone, String settings, float[] parameters, float[] velocity, int steps,
                         float lastLoss, long drawn, int[] globalBatch, float[] unreleased, float[] averaged, float[] folded,
                         Held held, long lastComputeNs, List<Copy> copies, RoundRecords.Saved records) {
    private static final int MAGIC = 0x53434b50; // "SCKP"
    private static final int VERSION = 2;
    /** Checkpoints kept per worker: the newest common round is among them (a worker back late reads a peer's). */
    public static final int KEEP = 3;
    static final Pattern NAME = Pattern.compile("worker-(\\d+)-after-(\\d+)\\.ckpt");
    /** A writer's temporary file ({@link Files#createTempFile} puts digits between the dots). */
    private static final Pattern TEMPORARY = Pattern.compile("worker-\\d+-after-\\d+\\.ckpt\\.\\d+\\.tmp");
    /** The lock file in a checkpoint directory: writers take turns on it. */
    static final String LOCK = ".serene-checkpoints.lock";
    /**
     * This process's writers take turns here first: a file lock belongs to the process, and a
     * second thread asking for it would get an error, not a wait.
     */
    private static final Object WRITERS = new Object();
    /** Checkpoints that read clean, with the size and time they had then (a checkpoint is never rewritten in place). */

    /**
     * A gradient computed but not sent yet (its round was released while it was computed), kept for
     * the next open round (fold), with how it was made: {@code measuredNs} the compute time on the
     * reported clock without injected straggling (with a modelled device: the modelled step, as
     * {@code elapsedNs}), {@code appliedBefore} the rounds applied to the model it was computed on,
     * {@code hostNs} the host's real compute time.
     */
    public record Held(float[] gradient, int round, int batch, long elapsedNs, long measuredNs, long injectedNs, int appliedBefore,
                       float loss, long hostNs) {
        /** What the worker reports to the switch as its compute time. */
        public long reportedNs() {
            return measuredNs + injectedNs;
        }

        /** The same gradient's record over another array (a copy of it). */
        public Held withGradient(final float[] other) {
            return new Held(other, round, batch, elapsedNs, measuredNs, injectedNs, appliedBefore, loss, hostNs);
        }
    }

    /**
     * Worker {@code id}'s checkpoint after round {@code round} (every round up to it applied): the
     * state taken into {@code now}, the copies for deferred evaluation (null: none) and the records.
     */
    static Checkpoint of(final int id, final int workers, final int round, final TrainSettings settings, final LoopSnapshot now,
                         final ModelCopies copies, final RoundRecords log) {
        final List<Copy> saved = new ArrayList<>();
        for (int i = 0; copies != null && i < copies.size(); i++) {
            saved.add(new Copy(copies.round(i), log.seconds(copies.takenNs(i)), copies.loss(i), copies.parameters(i).clone()));
        }
        return new Checkpoint(id, workers, round + 1, settingsOf(settings), now.parameters, now.velocity, now.steps, now.lastLoss,
            now.drawn, now.globalBatch, now.unreleasedCopy, now.averagedCopy, now.folded, now.heldGradient, now.computeNs, saved,
            log.save(round));
    }

    /** The settings a checkpoint must be resumed with: everything that shapes the model's steps and the records. */
    public static String settingsOf(final TrainSettings settings) {
        final List<String> a = new ArrayList<>(settings.arguments());
        // how long a worker waits before giving up shapes nothing it computes
        final int t = a.indexOf("--timeout-seconds");
        if (t >= 0) {
            a.subList(t, t + 2).clear();
        }
        return String.join(" ", a);
    }

    /**
     * Checks that worker {@code id} of {@code workers}, in a run of {@code total} rounds with these
     * settings, may go on from this checkpoint; else an error naming what differs.
     */
    public void requireFits(final int id, final int jobWorkers, final int total, final TrainSettings now) {
        if (worker != id || workers != jobWorkers || roundsDone < 1 || roundsDone >= total) {
            throw new IllegalArgumentException("checkpoint of worker " + worker + " of " + workers + " after round " + roundsDone
                + " does not fit worker " + id + " of " + jobWorkers + " in a run of " + total + " rounds");
        }
        final String mine = settingsOf(now);
        if (!settings.equals(mine)) {
            final List<String> a = List.of(settings.split(" --"));
            final List<String> b = List.of(mine.split(" --"));
            final List<String> diff = new ArrayList<>();
            a.stream().filter(x -> !b.contains(x)).forEach(x -> diff.add("checkpoint --" + x.replaceFirst("^--", "")));
            b.stream().filter(x -> !a.contains(x)).forEach(x -> diff.add("now --" + x.replaceFirst("^--", "")));
            throw new IllegalArgumentException("the checkpoint was written with other training settings: " + String.join(", ", diff)
                + "; resume with the settings of the run that wrote it");
        }
    }

    /** A copy of the model for deferred evaluation. */
    public record Copy(int round, double takenSeconds, float loss, float[] parameters) {
    }

    /** The file of worker w's checkpoint after its first {@code roundsDone} rounds. */
    public static Path file(final Path dir, final int worker, final int roundsDone) {
        return dir.resolve("worker-" + worker + "-after-" + roundsDone + ".ckpt");
    }

    /**
     * Writes this checkpoint into {@code dir} (atomically and durably: see the class) and deletes the
     * worker's checkpoints older than the newest {@link #KEEP}, and temporary files writers killed
     * mid-write left behind.
     */
    public Path write(final Path dir) throws IOException {
        Files.createDirectories(dir);
        final Path target = file(dir, worker, roundsDone);
        synchronized (WRITERS) {
            try (FileChannel lockFile = FileChannel.open(dir.resolve(LOCK), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                final FileLock lock = lockFile.lock();
                try {
                    writeLocked(dir, target);
                } finally {
                    lock.release();
                }
            }
        }
        return target;
    }

    /** {@link #write}, with the directory's lock held. */
    private void writeLocked(final Path dir, final Path target) throws IOException {
        // under the lock no one else writes: a temporary file here is a dead writer's
        try (Stream<Path> files = Files.list(dir)) {
            for (final Path f : (Iterable<Path>) files::iterator) {
                if (TEMPORARY.matcher(f.getFileName().toString()).matches()) {
                    Files.deleteIfExists(f);
                }
            }
        }
        final Path tmp = Files.createTempFile(dir, target.getFileName() + ".", ".tmp");
        try {
            writeTo(tmp);
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
        syncDirectory(dir);
        final List<Integer> rounds = CheckpointDir.rounds(dir, worker);
        for (int i = 0; i < rounds.size() - KEEP; i++) {
            Files.deleteIfExists(file(dir, worker, rounds.get(i)));
        }
    }

    /** Syncs a directory's entries (the move of a file into it) to the disk (Linux opens a directory for this). */
    private static void syncDirectory(final Path dir) throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    /** The checkpoint's bytes into {@code tmp}, synced to the disk before it is closed. */
    private void writeTo(final Path tmp) throws IOException {
        final CRC32 crc = new CRC32();
        try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
             OutputStream raw = Channels.newOutputStream(channel);
             DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new CheckedOutputStream(raw, crc), 1 << 16))) {
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.writeInt(worker);
            out.writeInt(workers);
            out.writeInt(roundsDone);
            out.writeUTF(settings);
            floats(out, parameters);
            floats(out, velocity);
            out.writeInt(steps);
            out.writeFloat(lastLoss);
            out.writeLong(drawn);
            ints(out, globalBatch);
            floats(out, unreleased);
            floats(out, averaged);
            floats(out, folded);
            out.writeBoolean(held != null);
            if (held != null) {
                floats(out, held.gradient);
                out.writeInt(held.round);
                out.writeInt(held.batch);
                out.writeLong(held.elapsedNs);
                out.writeLong(held.measuredNs);
                out.writeLong(held.injectedNs);
                out.writeInt(held.appliedBefore);
                out.writeFloat(held.loss);
                out.writeLong(held.hostNs);
            }
            out.writeLong(lastComputeNs);
            out.writeInt(copies.size());
            for (final Copy c : copies) {
                out.writeInt(c.round);
                out.writeDouble(c.takenSeconds);
                out.writeFloat(c.loss);
                floats(out, c.parameters);
            }
            final RoundRecords.Saved r = records;
            doubles(out, r.start());
            longs(out, r.waitingNs());
            longs(out, r.computeNs());
            longs(out, r.injectedNs());
            doubles(out, r.send());
            doubles(out, r.release());
            ints(out, r.staleness());
            ints(out, r.batch());
            floats(out, r.loss());
            booleans(out, r.skipped());
            booleans(out, r.dropped());
            doubles(out, r.accuracy());
            doubles(out, r.evaluated());
            out.writeLong(r.evaluationNs());
            out.writeDouble(r.trainingStartSeconds());
            longs(out, r.hostComputeNs());
            out.flush();
            // the CRC of everything before it, written past the checked stream
            final long sum = crc.getValue();
            final DataOutputStream tail = new DataOutputStream(raw);
            tail.writeLong(sum);
            tail.flush();
            channel.force(true);
        }
    }

    /** Reads a checkpoint file; a damaged or foreign file is an error naming it. */
    public static Checkpoint read(final Path file) throws IOException {
        final byte[] bytes = Files.readAllBytes(file);
        if (bytes.length < 8) {
            throw new IOException(file + " is not a Serene checkpoint (" + bytes.length + " bytes)");
        }
        final CRC32 crc = new CRC32();
        crc.update(bytes, 0, bytes.length - 8);
        final long stored = ByteBuffer.wrap(bytes, bytes.length - 8, 8).getLong();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new ByteArrayInputStream(bytes, 0, bytes.length - 8)))) {
            if (in.readInt() != MAGIC) {
                throw new IOException(file + " is not a Serene checkpoint");
            }
            final int version = in.readInt();
            if (version != VERSION) {
                throw new IOException(file + " is a checkpoint of format " + version + "; this Serene reads format " + VERSION);
            }
            if (stored != crc.getValue()) {
                throw new IOException(file + " is damaged (its CRC does not match)");
            }
            final int worker = in.readInt();
            final int workers = in.readInt();
            final int roundsDone = in.readInt();
            final String settings = in.readUTF();
            final float[] parameters = floats(in);
            final float[] velocity = floats(in);
            final int steps = in.readInt();
            final float lastLoss = in.readFloat();
            final long drawn = in.readLong();
            final int[] globalBatch = ints(in);
            final float[] unreleased = floats(in);
            final float[] averaged = floats(in);
            final float[] folded = floats(in);
            Held held = null;
            if (in.readBoolean()) {
                held = new Held(floats(in), in.readInt(), in.readInt(), in.readLong(), in.readLong(), in.readLong(), in.readInt(),
                    in.readFloat(), in.readLong());
            }
            final long lastComputeNs = in.readLong();
            final int n = in.readInt();
            final List<Copy> copies = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                copies.add(new Copy(in.readInt(), in.readDouble(), in.readFloat(), floats(in)));
            }
            final RoundRecords.Saved records = new RoundRecords.Saved(doubles(in), longs(in), longs(in), longs(in), doubles(in),
                doubles(in), ints(in), ints(in), floats(in), booleans(in), booleans(in), doubles(in), doubles(in), in.readLong(),
                in.readDouble(), longs(in));
            return new Checkpoint(worker, workers, roundsDone, settings, parameters, velocity, steps, lastLoss, drawn, globalBatch, unreleased,
                averaged, folded, held, lastComputeNs, copies, records);
        } catch (final EOFException ex) {
            throw new IOException(file + " is cut short", ex);
        }
    }

    /**
     * What worker w goes on from after round {@code n} when it rejoins: its own checkpoint after n, or,
     * if it has none (it was down while the others went on), a peer's model after n (parameters,
     * velocity, steps, batch window, last average: every worker applies the same aggregates, so these
     * are the job's) with its own data position, round records and model copies from its newest own
     * checkpoint before n (or the start), and nothing of its own pending.
     */
    public static Checkpoint forRejoin(final Path dir, final int w, final int workers, final int n) throws IOException {
        // a missing file is damage too: "gone"
        if (CheckpointDir.damage(file(dir, w, n)) == null) {
            return read(file(dir, w, n));
        }
        Checkpoint peer = null;
        for (int p = 0; p < workers && peer == null; p++) {
            if (p != w && CheckpointDir.damage(file(dir, p, n)) == null) {
                peer = read(file(dir, p, n));
            }
        }
        if (peer == null) {
            throw new IOException("no worker has a checkpoint after round " + n + " that reads clean in " + dir);
        }
        Checkpoint own = null;
        for (final int r : CheckpointDir.cleanRounds(dir, w)) {
            if (r < n) {
                own = read(file(dir, w, r));
            }
        }
        final int elements = peer.parameters().length;
        final RoundRecords.Saved records = own != null ? own.records() : new RoundRecords.Saved(new double[0], new long[0], new long[0],
            new long[0], new double[0], new double[0], new int[0], new int[0], new float[0], new boolean[0], new boolean[0], new double[0],
            new double[0], 0, peer.records().trainingStartSeconds(), new long[0]);
        return new Checkpoint(w, workers, n, peer.settings(), peer.parameters(), peer.velocity(), peer.steps(), peer.lastLoss(),
            own != null ? own.drawn() : 0, peer.globalBatch(), new float[elements], peer.averaged(), new float[elements], null,
            own != null ? own.lastComputeNs() : 0, own != null ? own.copies() : List.of(), records);
    }

    private static void floats(final DataOutputStream out, final float[] a) throws IOException {
        out.writeInt(a.length);
        final ByteBuffer bytes = ByteBuffer.allocate(4 * a.length);
        bytes.asFloatBuffer().put(a);
        out.write(bytes.array());
    }

    private static float[] floats(final DataInputStream in) throws IOException {
        final float[] a = new float[length(in)];
        final byte[] bytes = new byte[4 * a.length];
        in.readFully(bytes);
        ByteBuffer.wrap(bytes).asFloatBuffer().get(a);
        return a;
    }

    private static void doubles(final DataOutputStream out, final double[] a) throws IOException {
        out.writeInt(a.length);
        for (final double v : a) {
            out.writeDouble(v);
        }
    }

    private static double[] doubles(final DataInputStream in) throws IOException {
        final double[] a = new double[length(in)];
        for (int i = 0; i < a.length; i++) {
            a[i] = in.readDouble();
        }
        return a;
    }

    private static void longs(final DataOutputStream out, final long[] a) throws IOException {
        out.writeInt(a.length);
        for (final long v : a) {
            out.writeLong(v);
        }
    }

    private static long[] longs(final DataInputStream in) throws IOException {
        final long[] a = new long[length(in)];
        for (int i = 0; i < a.length; i++) {
            a[i] = in.readLong();
        }
        return a;
    }

    private static void ints(final DataOutputStream out, final int[] a) throws IOException {
        out.writeInt(a.length);
        for (final int v : a) {
            out.writeInt(v);
        }
    }

    private static int[] ints(final DataInputStream in) throws IOException {
        final int[] a = new int[length(in)];
        for (int i = 0; i < a.length; i++) {
            a[i] = in.readInt();
        }
        return a;
    }

    private static void booleans(final DataOutputStream out, final boolean[] a) throws IOException {
        out.writeInt(a.length);
        for (final boolean v : a) {
            out.writeBoolean(v);
        }
    }

    private static boolean[] booleans(final DataInputStream in) throws IOException {
        final boolean[] a = new boolean[length(in)];
        for (int i = 0; i < a.length; i++) {
            a[i] = in.readBoolean();
        }
        return a;
    }

    /** An array length from the file; a negative or absurd one means the file is not what it claims. */
    private static int length(final DataInputStream in) throws IOException {
        final int n = in.readInt();
        if (n < 0 || n > (1 << 28)) {
            throw new IOException("a checkpoint array of " + n + " entries");
        }
        return n;
    }
}
