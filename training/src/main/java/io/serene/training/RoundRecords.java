package io.serene.training;

import io.serene.worker.RunClock;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;
import java.util.function.IntPredicate;

/**
 * One training worker's per-round record: when the round started, how long the worker was blocked
 * (clearance for the round, then the wait for the round's aggregate), compute time (measured and
 * injected), the batch size, staleness (earlier rounds whose aggregate the model did not hold when
 * the gradient was computed), when the gradient was sent and the aggregate arrived, loss and test
 * accuracy. Written as JSON lines (one per round, when the round's aggregate is applied; with
 * deferred evaluation an evaluated round's after training) on a time axis shared by all workers of
 * a run: seconds since a wall-clock origin.
 */
public final class RoundRecords implements AutoCloseable {
    private final int worker;
    private final Path file;
    private BufferedWriter out;
    private final long originMicros;
    private final long baseMicros;
    private final long baseNs;
    private final long[] startNs;
    private final long[] waitingNs;
    private final long[] computeNs;
    private final long[] injectedNs;
    /** The host's real compute of each round's gradients (with a modelled device, inside {@link #computeNs}'s modelled time). */
    private final long[] hostComputeNs;
    /** Whether a device is modelled: compute times are modelled, and the records carry the host's beside them. */
    private final boolean modelled;
    private final long[] sendNs;
    private final long[] releaseNs;
    private final int[] staleness;
    private final int[] batch;
    private final float[] loss;
    private final boolean[] skipped;
    private final boolean[] dropped;
    private final double[] accuracy;
    private final long[] evaluatedNs;
    private long trainingStartNs;
    /** The run's clock: every time here is on it. */
    private final RunClock clock;
    private long evaluationNs;

    /**
     * @param file where to write the lines, or null to keep only the totals
     * @param originMs the time axis' origin (ms since 1970), or null for now
     */
    public RoundRecords(final int worker, final int rounds, final Path file, final Long originMs) throws IOException {
        this(worker, rounds, file, originMs, false);
    }

    /** @param modelled whether a device is modelled (the records then carry the host's compute beside the modelled one) */
    public RoundRecords(final int worker, final int rounds, final Path file, final Long originMs, final boolean modelled) throws IOException {
        this(worker, rounds, file, originMs, modelled, RunClock.HOST);
    }

    /**
     * Records on {@code clock}: on the host's, the axis' origin is {@code originMs} (null: now); in
     * virtual time, the run's time 0.
     */
    public RoundRecords(final int worker, final int rounds, final Path file, final Long originMs, final boolean modelled,
                        final RunClock clock) throws IOException {
        this.worker = worker;
        this.modelled = modelled;
        this.clock = clock;
        if (clock.virtual()) {
            // the run's time 0 is the axis' origin
            this.baseNs = 0;
            this.baseMicros = 0;
            this.originMicros = 0;
        } else {
            final Instant now = Instant.now();
            this.baseNs = clock.nanoTime();
            this.baseMicros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
            this.originMicros = originMs != null ? originMs * 1_000L : baseMicros;
        }
        this.file = file;
        this.out = file == null ? null : Files.newBufferedWriter(file, StandardCharsets.UTF_8);
        startNs = new long[rounds];
        waitingNs = new long[rounds];
        computeNs = new long[rounds];
        injectedNs = new long[rounds];
        hostComputeNs = new long[rounds];
        sendNs = new long[rounds];
        releaseNs = new long[rounds];
        staleness = new int[rounds];
        batch = new int[rounds];
        loss = new float[rounds];
        skipped = new boolean[rounds];
        dropped = new boolean[rounds];
        accuracy = new double[rounds];
        evaluatedNs = new long[rounds];
        Arrays.fill(accuracy, Double.NaN);
        if (out != null) {
            // Jackson builds a record's serializer on first use: most of a second on a worker's quick
            // JIT with the other workers on the cores; here, before the job starts, not in round 1
            Json.write(new RoundRecord(worker, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, false, 0f, 0.0, 0.0, 0.0));
        }
    }

    /**
     * The records of rounds 0..{@code round} for a checkpoint, times on the shared axis (so they
     * mean the same in the process that resumes).
     */
    public Saved save(final int round) {
        final int n = round + 1;
        final double[] start = new double[n];
        final double[] send = new double[n];
        final double[] release = new double[n];
        final double[] evaluated = new double[n];
        for (int r = 0; r < n; r++) {
            start[r] = seconds(startNs[r]);
            send[r] = seconds(sendNs[r]);
            release[r] = seconds(releaseNs[r]);
            evaluated[r] = seconds(evaluatedNs[r]);
        }
        return new Saved(start, Arrays.copyOf(waitingNs, n), Arrays.copyOf(computeNs, n), Arrays.copyOf(injectedNs, n), send, release,
            Arrays.copyOf(staleness, n), Arrays.copyOf(batch, n), Arrays.copyOf(loss, n), Arrays.copyOf(skipped, n),
            Arrays.copyOf(dropped, n), Arrays.copyOf(accuracy, n), evaluated, evaluationNs, startSeconds(), Arrays.copyOf(hostComputeNs, n));
    }

    /**
     * Takes back the records a checkpoint saved and writes the lines of its rounds (those whose
     * evaluation is deferred excepted: {@code writeNow} false), so the file holds what it held at
     * the checkpoint; training goes on from the next round.
     */
    public void restore(final Saved saved, final IntPredicate writeNow) throws IOException {
        final int n = saved.start().length;
        if (n > startNs.length) {
            throw new IllegalArgumentException("a checkpoint holds " + n + " rounds' records, the run has " + startNs.length);
        }
        for (int r = 0; r < n; r++) {
            startNs[r] = nanos(saved.start()[r]);
            sendNs[r] = nanos(saved.send()[r]);
            releaseNs[r] = nanos(saved.release()[r]);
            evaluatedNs[r] = nanos(saved.evaluated()[r]);
        }
        System.arraycopy(saved.waitingNs(), 0, waitingNs, 0, n);
        System.arraycopy(saved.computeNs(), 0, computeNs, 0, n);
        System.arraycopy(saved.injectedNs(), 0, injectedNs, 0, n);
        System.arraycopy(saved.hostComputeNs(), 0, hostComputeNs, 0, Math.min(n, saved.hostComputeNs().length));
        System.arraycopy(saved.staleness(), 0, staleness, 0, n);
        System.arraycopy(saved.batch(), 0, batch, 0, n);
        System.arraycopy(saved.loss(), 0, loss, 0, n);
        System.arraycopy(saved.skipped(), 0, skipped, 0, n);
        System.arraycopy(saved.dropped(), 0, dropped, 0, n);
        System.arraycopy(saved.accuracy(), 0, accuracy, 0, n);
        evaluationNs = saved.evaluationNs();
        trainingStartNs = nanos(saved.trainingStartSeconds());
        rewind(n, writeNow);
    }

    /**
     * Forgets every round from {@code roundsDone} on (the job goes on after that many rounds again)
     * and writes the file anew with the lines of the rounds before it ({@code writeNow}: those whose
     * evaluation is not deferred).
     */
    public void rewind(final int roundsDone, final IntPredicate writeNow) throws IOException {
        for (int r = roundsDone; r < startNs.length; r++) {
            startNs[r] = 0;
            waitingNs[r] = 0;
            computeNs[r] = 0;
            injectedNs[r] = 0;
            hostComputeNs[r] = 0;
            sendNs[r] = 0;
            releaseNs[r] = 0;
            staleness[r] = 0;
            batch[r] = 0;
            loss[r] = 0;
            skipped[r] = false;
            dropped[r] = false;
            accuracy[r] = Double.NaN;
            evaluatedNs[r] = 0;
        }
        if (out == null) {
            return;
        }
        out.close();
        out = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
        for (int r = 0; r < roundsDone; r++) {
            if (writeNow.test(r)) {
                write(r);
            }
        }
    }

    /** A checkpoint's part of the records: rounds 0..n-1, times in seconds on the shared axis. */
    public record Saved(double[] start, long[] waitingNs, long[] computeNs, long[] injectedNs, double[] send, double[] release,
                        int[] staleness, int[] batch, float[] loss, boolean[] skipped, boolean[] dropped, double[] accuracy,
                        double[] evaluated, long evaluationNs, double trainingStartSeconds, long[] hostComputeNs) {
    }

    /** The run's clock at a time on the shared axis (the inverse of {@link #seconds}, to the microsecond). */
    public long nanos(final double seconds) {
        return baseNs + (Math.round(seconds * 1e6) + originMicros - baseMicros) * 1_000L;
    }

    /** Seconds on the shared axis at {@code nanoTime}. */
    public double seconds(final long nanoTime) {
        return (baseMicros + (nanoTime - baseNs) / 1_000 - originMicros) / 1e6;
    }

    /** The run's clock now: every time here is on it. */
    public long clockNs() {
        return clock.nanoTime();
    }

    double now() {
        return seconds(clock.nanoTime());
    }

    public void start() {
        trainingStartNs = clock.nanoTime();
    }

    public double startSeconds() {
        return seconds(trainingStartNs);
    }

    public void beginRound(final int round) {
        startNs[round] = clock.nanoTime();
    }

    public long roundStartNs(final int round) {
        return startNs[round];
    }

    /** Blocked time charged to a round: its clearance, or the wait for its aggregate. */
    public void waited(final int round, final long ns) {
        waitingNs[round] += ns;
    }

    public void computed(final int round, final int images, final long measuredNs, final long extraNs, final long hostNs, final int stale,
                         final float roundLoss) {
        batch[round] = images;
        computeNs[round] = measuredNs;
        injectedNs[round] = extraNs;
        hostComputeNs[round] = hostNs;
        staleness[round] = stale;
        loss[round] = roundLoss;
        sendNs[round] = clock.nanoTime();
    }

    /** More gradients of the round (WBSP: computed while waiting for clearance): their images and times join its own. */
    public void alsoComputed(final int round, final int images, final long measuredNs, final long extraNs, final long hostNs) {
        batch[round] += images;
        computeNs[round] += measuredNs;
        injectedNs[round] += extraNs;
        hostComputeNs[round] += hostNs;
    }

    /** The round was released without this worker before it started it: not computed, only applied. */
    public void skipped(final int round, final int stale) {
        skipped[round] = true;
        staleness[round] = stale;
        loss[round] = Float.NaN;
        sendNs[round] = clock.nanoTime();
    }

    /**
     * The worker computed the round, but it was released without it before the gradient was sent,
     * under a late mode of drop: the gradient is dropped, counted here and in no sample count.
     */
    public void dropped(final int round, final int images, final long measuredNs, final long extraNs, final long hostNs, final int stale) {
        computed(round, images, measuredNs, extraNs, hostNs, stale, Float.NaN);
        dropped[round] = true;
    }

    public int droppedRounds() {
        return count(dropped);
    }

    public int skippedRounds() {
        return count(skipped);
    }

    private static int count(final boolean[] rounds) {
        int n = 0;
        for (final boolean b : rounds) {
            n += b ? 1 : 0;
        }
        return n;
    }

    /** When the worker sent its gradient for the round (or skipped it), on the run's clock; 0 before. */
    public long sendNs(final int round) {
        return sendNs[round];
    }

    /** When the round's aggregate arrived, on the run's clock; 0 before. */
    public long releaseNs(final int round) {
        return releaseNs[round];
    }

    /** Whether the worker contributed a gradient to the round (neither skipped nor dropped it). */
    public boolean contributed(final int round) {
        return sendNs[round] != 0 && !skipped[round] && !dropped[round];
    }

    /** The round's aggregate arrived (called on the transport's thread, before the waiting thread resumes). */
    public void released(final int round) {
        releaseNs[round] = clock.nanoTime();
    }

    /** Time spent evaluating on the test set (not compute: it is no part of a round's gradient). */
    public void evaluating(final long ns) {
        evaluationNs += ns;
    }

    public long evaluationNs() {
        return evaluationNs;
    }

    /**
     * The test accuracy of the model a worker held at round {@code round}, and when it held it
     * (on the run's clock: when it was evaluated, or when it was copied for evaluating later).
     */
    public void evaluated(final int round, final double value, final long atNs) {
        accuracy[round] = value;
        evaluatedNs[round] = atNs;
    }

    /** The accuracy evaluated for the last round (NaN before that). */
    public double finalAccuracy() {
        return accuracy[accuracy.length - 1];
    }

    /** Images in the gradients this worker sent. */
    public long samples() {
        long n = 0;
        for (int r = 0; r < batch.length; r++) {
            n += dropped[r] ? 0 : batch[r];
        }
        return n;
    }

    public long computeNs() {
        return Arrays.stream(computeNs).sum();
    }

    public long injectedNs() {
        return Arrays.stream(injectedNs).sum();
    }

    public long waitingNs() {
        return Arrays.stream(waitingNs).sum();
    }

    /** Writes the round's line (once its aggregate is applied, and its accuracy known if it is evaluated). */
    public void write(final int round) throws IOException {
        if (out == null) {
            return;
        }
        final boolean noLoss = skipped[round] || dropped[round];
        final boolean evaluated = !Double.isNaN(accuracy[round]);
        final RoundRecord line = new RoundRecord(worker, round, seconds(startNs[round]), computeNs[round] / 1e9, injectedNs[round] / 1e9,
            waitingNs[round] / 1e9, staleness[round], batch[round], seconds(sendNs[round]), seconds(releaseNs[round]), skipped[round],
            dropped[round], noLoss ? null : loss[round], evaluated ? accuracy[round] : null,
            evaluated ? seconds(evaluatedNs[round]) : null, modelled ? hostComputeNs[round] / 1e9 : null);
        out.write(Json.write(line));
        out.newLine();
        out.flush();
    }

    @Override
    public void close() throws IOException {
        if (out != null) {
            out.close();
        }
    }
}
