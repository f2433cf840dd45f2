package io.serene.training;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.stream.Stream;

/**
 * A directory of checkpoints ({@link Checkpoint}, one file a worker and round): which rounds each
 * worker has, which files read clean (each read once while it stays the same), the newest round every
 * worker holds, and what a restarted worker offers to go on after.
 */
public final class CheckpointDir {
    private static final Map<Path, Long> CLEAN = new ConcurrentHashMap<>();
    private static final Map<Path, Map.Entry<Long, String>> DAMAGED = new ConcurrentHashMap<>();

    private CheckpointDir() {
    }

    /** The rounds done of worker w's checkpoints in {@code dir}, oldest first (none if the directory is missing). */
    public static List<Integer> rounds(final Path dir, final int worker) throws IOException {
        final List<Integer> rounds = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return rounds;
        }
        try (Stream<Path> files = Files.list(dir)) {
            files.forEach(f -> {
                final Matcher m = Checkpoint.NAME.matcher(f.getFileName().toString());
                if (m.matches() && Integer.parseInt(m.group(1)) == worker) {
                    rounds.add(Integer.parseInt(m.group(2)));
                }
            });
        }
        rounds.sort(null);
        return rounds;
    }

    /** The rounds done of worker w's checkpoints in {@code dir} that read clean ({@link #damage}), oldest first. */
    public static List<Integer> cleanRounds(final Path dir, final int worker) throws IOException {
        final List<Integer> clean = new ArrayList<>();
        for (final int r : rounds(dir, worker)) {
            if (damage(Checkpoint.file(dir, worker, r)) == null) {
                clean.add(r);
            }
        }
        return clean;
    }

    /**
     * Why a checkpoint file does not read clean (cut short, damaged, foreign, gone), or null if it
     * does. A file read once is not read again while its size and time stay the same.
     */
    public static String damage(final Path file) {
        final long stamp;
        try {
            stamp = Files.size(file) * 31 + Files.getLastModifiedTime(file).toMillis();
        } catch (final IOException ex) {
            return ex.getMessage() == null ? file + ": " + ex : ex.getMessage();
        }
        final Long clean = CLEAN.get(file);
        if (clean != null && clean == stamp) {
            return null;
        }
        final Map.Entry<Long, String> known = DAMAGED.get(file);
        if (known != null && known.getKey() == stamp) {
            return known.getValue();
        }
        try {
            Checkpoint.read(file);
            CLEAN.put(file, stamp);
            return null;
        } catch (final IOException ex) {
            final String why = ex.getMessage() == null ? file + ": " + ex : ex.getMessage();
            DAMAGED.put(file, Map.entry(stamp, why));
            return why;
        }
    }

    /** What is wrong with each of workers 0..workers-1's checkpoints in {@code dir} that does not read clean (none: empty). */
    public static List<String> damaged(final Path dir, final int workers) throws IOException {
        final List<String> why = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            for (final int r : rounds(dir, w)) {
                final String d = damage(Checkpoint.file(dir, w, r));
                if (d != null) {
                    why.add(d);
                }
            }
        }
        return why;
    }

    /**
     * The rounds worker w can go on after by itself (newest first, at most {@code max}): those it holds
     * in memory ({@code inMemory}, rounds done) and those it has a clean checkpoint after in {@code dir}.
     */
    public static int[] ownOffers(final Path dir, final int w, final int max, final int... inMemory) throws IOException {
        final TreeSet<Integer> rounds = new TreeSet<>(Comparator.reverseOrder());
        for (final int r : inMemory) {
            rounds.add(r);
        }
        rounds.addAll(cleanRounds(dir, w));
        return rounds.stream().filter(r -> r > 0).limit(max).mapToInt(Integer::intValue).toArray();
    }

    /**
     * The rounds worker w can go on after when it rejoins (newest first, at most {@code max}): those
     * any worker of the job has a checkpoint after in {@code dir} (see {@link #forRejoin}, which takes
     * one of them that reads clean), but none whose own checkpoint worker w has and does not read
     * clean: going on after it would take a peer's model with w's older data position, off the path
     * of the run without the fault, where an older round every worker holds exactly keeps to it. By
     * the other workers' files' names only, read for every JOIN: the others go on while a restarted
     * worker reads, and offers older than every checkpoint they still keep would send the job back to
     * its start (w's own few files are read once each, {@link #damage}).
     */
    public static int[] rejoinOffers(final Path dir, final int w, final int workers, final int max) throws IOException {
        final TreeSet<Integer> rounds = new TreeSet<>(Comparator.reverseOrder());
        for (int p = 0; p < workers; p++) {
            rounds.addAll(rounds(dir, p));
        }
        for (final int r : rounds(dir, w)) {
            if (damage(Checkpoint.file(dir, w, r)) != null) {
                rounds.remove(r);
            }
        }
        return rounds.stream().limit(max).mapToInt(Integer::intValue).toArray();
    }

    /**
     * The most rounds done that every worker 0..workers-1 has a checkpoint after in {@code dir} that
     * reads clean, or 0 if there is none ({@link #damaged} says what was passed over).
     */
    public static int newestCommon(final Path dir, final int workers) throws IOException {
        List<Integer> common = null;
        for (int w = 0; w < workers; w++) {
            final List<Integer> mine = cleanRounds(dir, w);
            if (common == null) {
                common = new ArrayList<>(mine);
            } else {
                common.retainAll(mine);
            }
        }
        return common == null || common.isEmpty() ? 0 : common.get(common.size() - 1);
    }

    /** Floats in bulk (a model is hundreds of thousands), big-endian as the rest. */
}
