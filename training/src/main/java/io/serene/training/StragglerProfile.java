package io.serene.training;

import io.serene.protocol.Units;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Seeded straggler injection: a slowdown factor (at least 1) for each worker and round, by which
 * a worker's step is multiplied (the modelled step when a device is modelled, else the host's
 * compute time), and a pause of its own that some parts add. Stateless: the factor of (worker,
 * round) depends only on the seed, so every process of a job computes the same schedule, in any order.
 *
 * <pre>
 *   none                      no stragglers
 *   persistent:W:xF           worker W is always F times slower
 *   transient:p=P,xF          each worker, each round, with probability P, F times slower
 *   transient:p=P,xF,rounds=L spells: each worker, in each stretch of L rounds (its stretches start at a
 *                             seeded offset of its own), with probability P, F times slower all through it
 *   moving:xF,rounds=L        one worker at a time is F times slower, drawn anew every L rounds
 *                             (persistent:W:xF's straggler, moving; needs the job's worker count)
 *   heavytail:alpha=A         every worker and round: a Pareto(A) factor (heavy-tailed times)
 *   classes:0-3=x1,4-7=x2.5   mixed hardware: workers in each range are that much slower
 *   trace:FILE                factors from a file of lines "worker,round,factor" (rounds cycle)
 *   slow:p=P,pause=A-B        Serene's slow pattern: each worker, each step, with probability P, pauses
 *                             U[A, B] times its step on top of it (factor 1 + U[A, B])
 *   failure:W,p=P,pause=D     Serene's failure pattern: worker W pauses for the duration D (240s) once, at
 *                             the first step whose draw falls under P (geometric, so stateless)
 *   link:W:xF,rounds=A-B      a communication straggler: worker W's modelled link (--link-rate) carries F
 *                             times slower through rounds A..B
 * </pre>
 * Parts combine with {@code +}; their factors multiply.
 */
public final class StragglerProfile {
    public static final String SYNTAX = "none, persistent:W:xF, transient:p=P,xF[,rounds=L], moving:xF,rounds=L, heavytail:alpha=A, classes:A-B=xF,..., "
        + "trace:FILE, slow:p=P,pause=A-B, failure:W,p=P,pause=D, link:W:xF,rounds=A-B (combined with +)";

    /** One part of a profile: a factor, and for some a pause of its own. */
    private interface Part {
        double factor(long seed, int worker, int round);

        default long pauseNs(final long seed, final int worker, final int round) {
            return 0;
        }

        default double linkFactor(final long seed, final int worker, final int round) {
            return 1.0;
        }

        default boolean slowsLinks() {
            return false;
        }
    }

    /** Added to a part's stream for a second draw of the same (worker, round). */
    private static final int SECOND_DRAW = 1 << 20;

    private final String text;
    private final long seed;
    private final List<Part> parts;

    private StragglerProfile(final String text, final long seed, final List<Part> parts) {
        this.text = text;
        this.seed = seed;
        this.parts = parts;
    }

    /**
     * Parses a profile for a job of unknown size: its syntax is checked, but a moving part, which
     * needs the size ({@link #parse(String, long, int)}), fails when asked for a factor.
     */
    public static StragglerProfile parse(final String text, final long seed) {
        return parse(text, seed, 0);
    }

    /** Parses a profile for a job of {@code workers} workers; errors name the bad part and the syntax. */
    public static StragglerProfile parse(final String text, final long seed, final int workers) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("empty straggler profile (expected " + SYNTAX + ")");
        }
        final List<Part> parts = new ArrayList<>();
        int index = 0;
        for (final String raw : text.split("\\+")) {
            final String part = raw.trim();
            final int stream = index++;
            final int colon = part.indexOf(':');
            final String kind = (colon < 0 ? part : part.substring(0, colon)).toLowerCase(Locale.ROOT);
            final String arg = colon < 0 ? "" : part.substring(colon + 1);
            switch (kind) {
                case "none":
                    break;
                case "persistent":
                    parts.add(persistent(part, arg));
                    break;
                case "transient":
                    parts.add(transientPart(part, arg, stream));
                    break;
                case "moving":
                    parts.add(moving(part, arg, stream, workers));
                    break;
                case "heavytail":
                    parts.add(heavyTail(part, arg, stream));
                    break;
                case "classes":
                    parts.add(classes(part, arg));
                    break;
                case "trace":
                    parts.add(trace(part, arg));
                    break;
                case "slow":
                    parts.add(slow(part, arg, stream));
                    break;
                case "failure":
                    parts.add(failure(part, arg, stream));
                    break;
                case "link":
                    parts.add(link(part, arg));
                    break;
                default:
                    throw new IllegalArgumentException("unknown straggler profile part '" + part + "' (expected "
                        + SYNTAX + ")");
            }
        }
        return new StragglerProfile(text, seed, parts);
    }

    /** How many times slower than its base compute time the worker is in this round (at least 1). */
    public double factor(final int worker, final int round) {
        double f = 1.0;
        for (final Part part : parts) {
            f *= part.factor(seed, worker, round);
        }
        return f;
    }

    /** A pause in the worker's round on top of its factor, in nanoseconds (0 for most profiles). */
    public long pauseNs(final int worker, final int round) {
        long ns = 0;
        for (final Part part : parts) {
            ns += part.pauseNs(seed, worker, round);
        }
        return ns;
    }

    /** How many times slower than its modelled rate the worker's link carries in this round (at least 1). */
    public double linkFactor(final int worker, final int round) {
        double f = 1.0;
        for (final Part part : parts) {
            f *= part.linkFactor(seed, worker, round);
        }
        return f;
    }

    /** Whether a part slows links (it needs a modelled link to slow). */
    public boolean slowsLinks() {
        return parts.stream().anyMatch(Part::slowsLinks);
    }

    public long seed() {
        return seed;
    }

    @Override
    public String toString() {
        return text;
    }

    private static Part persistent(final String part, final String arg) {
        final String[] fields = arg.split(":");
        if (fields.length != 2) {
            throw bad(part, "persistent:W:xF, as in persistent:3:x3");
        }
        final int worker = worker(part, fields[0]);
        final double factor = factor(part, fields[1]);
        return (seed, w, round) -> w == worker ? factor : 1.0;
    }

    private static Part transientPart(final String part, final String arg, final int stream) {
        final String[] fields = arg.split(",");
        if (fields.length < 2 || fields.length > 3 || !fields[0].trim().startsWith("p=")) {
            throw bad(part, "transient:p=P,xF or transient:p=P,xF,rounds=L, as in transient:p=0.05,x4");
        }
        final double p = probability(part, fields[0].trim().substring(2));
        final double factor = factor(part, fields[1]);
        final int length = fields.length == 3 ? spellLength(part, fields[2].trim()) : 1;
        if (length == 1) {
            return (seed, w, round) -> uniform(seed, stream, w, round) < p ? factor : 1.0;
        }
        // a worker's stretches start at its own offset in [0, L), so spells do not all begin together;
        // the offset's draw (round -1) is apart from every stretch's (stretch numbers are >= 0)
        return (seed, w, round) -> {
            final long offset = (long) (uniform(seed, stream, w, -1) * length);
            final int stretch = (int) ((round + offset) / length);
            return uniform(seed, stream, w, stretch) < p ? factor : 1.0;
        };
    }

    private static Part moving(final String part, final String arg, final int stream, final int workers) {
        final String[] fields = arg.split(",");
        if (fields.length != 2) {
            throw bad(part, "moving:xF,rounds=L, as in moving:x8,rounds=30");
        }
        final double factor = factor(part, fields[0]);
        final int length = spellLength(part, fields[1].trim());
        if (workers <= 0) {
            // parsed for its syntax alone (TrainSettings checks a profile before it knows the job's size)
            return (seed, w, round) -> {
                throw new IllegalStateException("straggler profile part '" + part + "' needs the job's worker count");
            };
        }
        return (seed, w, round) -> {
            final int stretch = round / length;
            return w == (int) (uniform(seed, stream, 0, stretch) * workers) ? factor : 1.0;
        };
    }

    private static Part slow(final String part, final String arg, final int stream) {
        final String[] fields = arg.split(",");
        if (fields.length != 2 || !fields[0].trim().startsWith("p=") || !fields[1].trim().startsWith("pause=")) {
            throw bad(part, "slow:p=P,pause=A-B, as in slow:p=0.15,pause=0.5-2.0 (a pause of U[A, B] steps)");
        }
        final double p = probability(part, fields[0].trim().substring(2));
        final String[] range = fields[1].trim().substring(6).split("-");
        if (range.length != 2) {
            throw bad(part, "a range of steps A-B, as in pause=0.5-2.0");
        }
        final double from = number(part, range[0]);
        final double to = number(part, range[1]);
        if (!(from >= 0 && to >= from) || Double.isInfinite(to)) {
            throw bad(part, "a range of steps A-B with 0 <= A <= B, not '" + fields[1].trim() + "'");
        }
        // the pause's length is drawn apart from whether there is one (a stream of its own)
        return (seed, w, round) -> uniform(seed, stream, w, round) < p
            ? 1 + from + (to - from) * uniform(seed, stream + SECOND_DRAW, w, round) : 1.0;
    }

    private static Part failure(final String part, final String arg, final int stream) {
        final String[] fields = arg.split(",");
        if (fields.length != 3 || !fields[1].trim().startsWith("p=") || !fields[2].trim().startsWith("pause=")) {
            throw bad(part, "failure:W,p=P,pause=D, as in failure:0,p=0.01,pause=240s");
        }
        final int worker = worker(part, fields[0]);
        final double p = probability(part, fields[1].trim().substring(2));
        final long pauseNs;
        try {
            pauseNs = Units.durationNs("pause", fields[2].trim().substring(6));
        } catch (final IllegalArgumentException ex) {
            throw bad(part, "a pause with a unit, as in pause=240s or pause=500ms, not '" + fields[2].trim() + "'");
        }
        // the first step whose draw falls under p, drawn at once: a geometric number of steps
        return new Part() {
            @Override
            public double factor(final long seed, final int w, final int round) {
                return 1.0;
            }

            @Override
            public long pauseNs(final long seed, final int w, final int round) {
                return w == worker && round == firstFailure(seed, stream, w, p) ? pauseNs : 0;
            }
        };
    }

    private static Part link(final String part, final String arg) {
        final String[] fields = arg.split(",");
        final String[] head = fields[0].split(":");
        if (fields.length != 2 || head.length != 2 || !fields[1].trim().startsWith("rounds=")) {
            throw bad(part, "link:W:xF,rounds=A-B, as in link:2:x10,rounds=50-80");
        }
        final int worker = worker(part, head[0]);
        final double factor = factor(part, head[1]);
        final String[] range = fields[1].trim().substring(7).split("-");
        if (range.length != 2) {
            throw bad(part, "a range of rounds A-B, as in rounds=50-80");
        }
        final int from = whole(part, range[0], "a round");
        final int to = whole(part, range[1], "a round");
        if (to < from) {
            throw bad(part, "a range of rounds A-B with A <= B, not '" + fields[1].trim() + "'");
        }
        return new Part() {
            @Override
            public double factor(final long seed, final int w, final int round) {
                return 1.0;
            }

            @Override
            public double linkFactor(final long seed, final int w, final int round) {
                return w == worker && round >= from && round <= to ? factor : 1.0;
            }

            @Override
            public boolean slowsLinks() {
                return true;
            }
        };
    }

    /** The first round at which a draw of probability p succeeds (geometric from one uniform; never for p = 0). */
    static long firstFailure(final long seed, final int stream, final int worker, final double p) {
        if (p <= 0) {
            return -1;
        }
        if (p >= 1) {
            return 0;
        }
        return (long) Math.floor(Math.log1p(-uniform(seed, stream, worker, -1)) / Math.log1p(-p));
    }

    private static double probability(final String part, final String text) {
        final double p = number(part, text);
        if (!(p >= 0 && p <= 1)) {
            throw bad(part, "a probability p in [0, 1], not '" + text.trim() + "'");
        }
        return p;
    }

    private static int spellLength(final String part, final String field) {
        if (!field.startsWith("rounds=")) {
            throw bad(part, "rounds=L, as in rounds=30, not '" + field + "'");
        }
        try {
            final int length = Integer.parseInt(field.substring(7).trim());
            if (length < 1) {
                throw new NumberFormatException();
            }
            return length;
        } catch (final NumberFormatException ex) {
            throw bad(part, "a spell length of whole rounds >= 1, not '" + field + "'");
        }
    }

    private static Part heavyTail(final String part, final String arg, final int stream) {
        if (!arg.startsWith("alpha=")) {
            throw bad(part, "heavytail:alpha=A, as in heavytail:alpha=2.5");
        }
        final double alpha = number(part, arg.substring(6));
        if (!(alpha > 0)) {
            throw bad(part, "alpha > 0");
        }
        // Pareto with minimum 1: F = U^(-1/alpha), U uniform in (0, 1]
        return (seed, w, round) -> Math.pow(1.0 - uniform(seed, stream, w, round), -1.0 / alpha);
    }

    private static Part classes(final String part, final String arg) {
        final List<int[]> ranges = new ArrayList<>();
        final List<Double> factors = new ArrayList<>();
        for (final String item : arg.split(",")) {
            final String[] kv = item.split("=");
            if (kv.length != 2) {
                throw bad(part, "classes:A-B=xF,..., as in classes:0-3=x1,4-7=x2");
            }
            final String[] range = kv[0].split("-");
            final int from = worker(part, range[0]);
            final int to = range.length == 2 ? worker(part, range[1]) : from;
            if (range.length > 2 || to < from) {
                throw bad(part, "a worker range A-B with A <= B");
            }
            ranges.add(new int[] {from, to});
            factors.add(factor(part, kv[1]));
        }
        return (seed, w, round) -> {
            for (int i = 0; i < ranges.size(); i++) {
                if (w >= ranges.get(i)[0] && w <= ranges.get(i)[1]) {
                    return factors.get(i);
                }
            }
            return 1.0;
        };
    }

    private static Part trace(final String part, final String arg) {
        final Path file = Path.of(arg);
        final List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read straggler trace '" + arg + "': " + ex.getMessage());
        }
        final Map<Long, Double> factors = new HashMap<>();
        int maxRound = -1;
        for (int n = 0; n < lines.size(); n++) {
            final String line = lines.get(n).trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            final String[] fields = line.split("[,\\s]+");
            if (fields.length != 3) {
                throw new IllegalArgumentException("straggler trace " + arg + " line " + (n + 1)
                    + ": expected 'worker,round,factor', got '" + line + "'");
            }
            try {
                final int w = Integer.parseInt(fields[0]);
                final int round = Integer.parseInt(fields[1]);
                final double f = Double.parseDouble(fields[2]);
                if (w < 0 || round < 0 || !(f >= 1.0) || Double.isInfinite(f)) {
                    throw new NumberFormatException();
                }
                factors.put(((long) w << 32) | round, f);
                maxRound = Math.max(maxRound, round);
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("straggler trace " + arg + " line " + (n + 1)
                    + ": worker and round must be whole numbers >= 0 and the factor a number >= 1, got '" + line + "'");
            }
        }
        if (factors.isEmpty()) {
            throw new IllegalArgumentException("straggler trace " + arg + " has no entries");
        }
        final int period = maxRound + 1;
        return (seed, w, round) -> factors.getOrDefault(((long) w << 32) | (round % period), 1.0);
    }

    private static int worker(final String part, final String text) {
        return whole(part, text, "a worker id");
    }

    /** A whole number >= 0 (a worker id, a round), else an error saying which was expected. */
    private static int whole(final String part, final String text, final String what) {
        try {
            final int n = Integer.parseInt(text.trim());
            if (n < 0) {
                throw new NumberFormatException();
            }
            return n;
        } catch (final NumberFormatException ex) {
            throw bad(part, what + ", not '" + text + "'");
        }
    }

    private static double factor(final String part, final String text) {
        final String t = text.trim();
        if (!t.startsWith("x")) {
            throw bad(part, "a slowdown written xF, as in x3, not '" + text + "'");
        }
        final double f = number(part, t.substring(1));
        if (!(f >= 1.0) || Double.isInfinite(f)) {
            throw bad(part, "a slowdown factor >= 1, not '" + text + "'");
        }
        return f;
    }

    private static double number(final String part, final String text) {
        try {
            return Double.parseDouble(text.trim());
        } catch (final NumberFormatException ex) {
            throw bad(part, "a number, not '" + text + "'");
        }
    }

    private static IllegalArgumentException bad(final String part, final String expected) {
        return new IllegalArgumentException("bad straggler profile part '" + part + "': expected " + expected);
    }

    /**
     * A uniform draw in [0, 1) from (seed, stream, worker, round) alone (SplitMix64 finalizer). The
     * seed and stream are mixed before the worker and round join them: added unmixed, seed s at round
     * r + 1 drew what seed s + 1 drew at round r, so seeds were shifted copies of each other.
     */
    public static double uniform(final long seed, final int stream, final int worker, final int round) {
        long z = mix(seed + 0x9E3779B97F4A7C15L * (1 + stream));
        z = mix(z ^ ((long) worker << 32 | (round & 0xFFFF_FFFFL)));
        z = mix(z + 0x9E3779B97F4A7C15L);
        return (z >>> 11) * 0x1.0p-53;
    }

    /** SplitMix64's finalizer: a well-spread 64-bit value from any 64-bit input. */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
