package io.serene.protocol.sync;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Objects;

/**
 * A barrier rule (docs/design.md, the synchronization contract): bound s, the workers whose contributions a release
 * requires, a quorum k, a timeout t since a chunk's first contribution, and what happens to late
 * contributions. Immutable. The worker count is not part of it: {@link #resolve(int)} turns "every
 * worker" and "a quorum of all" into concrete sets and counts for a job.
 *
 * <p>Textual form ({@link SyncConfigParser}): {@code bsp}, {@code ssp:S}, {@code asp},
 * {@code fastest:K}, {@code timeout:MS}, {@code timeout:P%}, {@code exclude:W1,W2}, {@code drop},
 * {@code fold}, {@code sample:B} (PSP; {@code psp:B} and {@code psp:B,S} are short for
 * {@code bsp+sample:B} and {@code ssp:S+sample:B}), {@code busy} (WBSP; {@code wbsp} is short for
 * {@code bsp+busy}), combined with {@code +}, for example
 * {@code ssp:2+timeout:50}.
 *
 * <p>A relative timeout ({@code timeout:30%}: 30% of the job's typical round time) is a policy's:
 * the controller turns it into milliseconds from the round times it sees ({@link #withTimeoutNs})
 * before it installs the config; the switch and a schedule take only absolute timeouts, and
 * {@link #resolve} refuses a relative one.
 */
public final class SyncConfig {
    /** Bound of the asynchronous preset: no worker ever waits for clearance. */
    public static final int UNBOUNDED = Integer.MAX_VALUE;
    /** Timeout meaning "never". */
    public static final long NO_TIMEOUT = Long.MAX_VALUE;
    /** Quorum meaning "as many as the required set" (every worker, by default). */
    public static final int QUORUM_OF_REQUIRED = -1;

    /** The largest relative timeout, in percent of the typical round time. */
    public static final int MAX_TIMEOUT_PERCENT = 1000;

    public static final SyncConfig BSP = new SyncConfig(0, null, false, QUORUM_OF_REQUIRED, NO_TIMEOUT, 0, LateMode.FOLD, 0, false);

    private final int bound;
    private final BitSet excluded;
    private final boolean noneRequired;
    private final int quorum;
    private final long timeoutNs;
    /** A relative timeout in percent of the typical round time (0: none); never together with {@link #timeoutNs}. */
    private final int timeoutPercent;
    private final LateMode lateMode;
    /** PSP: a release waits for a seeded sample of this many of the required workers per round (0: for all of them). */
    private final int sample;
    /**
     * WBSP (worker-busy synchronous parallel, Yang et al. 2024): a worker waiting for clearance keeps
     * computing gradients on the model it has and sends their mean with its next contribution. The
     * switch's release rule is unchanged; the flag reaches the workers with the config table.
     */
    private final boolean busy;

    private SyncConfig(final int bound, final BitSet excluded, final boolean noneRequired, final int quorum,
                       final long timeoutNs, final int timeoutPercent, final LateMode lateMode, final int sample, final boolean busy) {
        this.bound = bound;
        this.excluded = excluded == null ? new BitSet() : (BitSet) excluded.clone();
        this.noneRequired = noneRequired;
        this.quorum = quorum;
        this.timeoutNs = timeoutNs;
        this.timeoutPercent = timeoutPercent;
        this.lateMode = lateMode;
        this.sample = sample;
        this.busy = busy;
    }

    public static SyncConfig bsp() {
        return BSP;
    }

    public static SyncConfig ssp(final int bound) {
        if (bound < 0) {
            throw new IllegalArgumentException("staleness bound must be >= 0, was " + bound);
        }
        return BSP.withBound(bound);
    }

    public static SyncConfig asp() {
        return BSP.withBound(UNBOUNDED);
    }

    /** Fastest-k: no worker is required, any k contributions release a chunk. */
    public static SyncConfig fastest(final int k) {
        return BSP.requiringNone().withQuorum(k);
    }

    /** No worker is required: the quorum (or the timeout) alone releases a chunk. */
    public SyncConfig requiringNone() {
        return new SyncConfig(bound, excluded, true, quorum, timeoutNs, timeoutPercent, lateMode, sample, busy);
    }

    public SyncConfig withBound(final int s) {
        return new SyncConfig(s, excluded, noneRequired, quorum, timeoutNs, timeoutPercent, lateMode, sample, busy);
    }

    /** A chunk is released this long after its first contribution, whoever contributed. */
    public SyncConfig withTimeoutNs(final long ns) {
        if (ns <= 0) {
            throw new IllegalArgumentException("timeout must be > 0, was " + ns + " ns");
        }
        return new SyncConfig(bound, excluded, noneRequired, quorum, ns, 0, lateMode, sample, busy);
    }

    /** The same config without a timeout (absolute or relative). */
    public SyncConfig withoutTimeout() {
        return new SyncConfig(bound, excluded, noneRequired, quorum, NO_TIMEOUT, 0, lateMode, sample, busy);
    }

    /**
     * A chunk is released {@code percent}% of the job's typical round time after its first
     * contribution: a policy's controller measures the round time and installs the config with
     * the timeout in milliseconds.
     */
    public SyncConfig withTimeoutPercent(final int percent) {
        if (percent < 1 || percent > MAX_TIMEOUT_PERCENT) {
            throw new IllegalArgumentException("a relative timeout must be 1% to " + MAX_TIMEOUT_PERCENT + "% of the round time, was "
                + percent + "%");
        }
        return new SyncConfig(bound, excluded, noneRequired, quorum, NO_TIMEOUT, percent, lateMode, sample, busy);
    }

    /** Releases no longer wait for these workers (their contributions still count when in time). */
    public SyncConfig excluding(final BitSet workers) {
        final BitSet union = (BitSet) excluded.clone();
        union.or(workers);
        return new SyncConfig(bound, union, noneRequired, quorum, timeoutNs, timeoutPercent, lateMode, sample, busy);
    }

    public SyncConfig withQuorum(final int k) {
        if (k < 1 && k != QUORUM_OF_REQUIRED) {
            throw new IllegalArgumentException("quorum must be >= 1, was " + k);
        }
        return new SyncConfig(bound, excluded, noneRequired, k, timeoutNs, timeoutPercent, lateMode, sample, busy);
    }

    /**
     * PSP (probabilistic synchronous parallel, Wang et al. 2017): a release waits for a seeded
     * sample of {@code b} of the required workers, drawn per round ({@link SyncRules#sample}), instead
     * of all of them; the quorum is the sample's size unless one is given. With bound 0 pBSP, with
     * s &gt; 0 pSSP.
     */
    public SyncConfig withSample(final int b) {
        if (b < 1) {
            throw new IllegalArgumentException("a PSP sample must be >= 1 worker, was " + b);
        }
        return new SyncConfig(bound, excluded, noneRequired, quorum, timeoutNs, timeoutPercent, lateMode, b, busy);
    }

    /** WBSP on ({@code true}) or off: see {@link #busy()}. */
    public SyncConfig withBusy(final boolean on) {
        return new SyncConfig(bound, excluded, noneRequired, quorum, timeoutNs, timeoutPercent, lateMode, sample, on);
    }

    /**
     * WBSP: workers waiting for clearance keep computing on their model and send the mean of those
     * gradients with their next contribution (the release rule is unchanged).
     */
    public boolean busy() {
        return busy;
    }

    /** The PSP sample size; 0 when releases wait for every required worker. */
    public int sample() {
        return sample;
    }

    public SyncConfig withLateMode(final LateMode mode) {
        return new SyncConfig(bound, excluded, noneRequired, quorum, timeoutNs, timeoutPercent, Objects.requireNonNull(mode), sample, busy);
    }

    public int bound() {
        return bound;
    }

    public long timeoutNs() {
        return timeoutNs;
    }

    /** Fails, naming the policy form, if the timeout is relative: the switch and schedules take milliseconds. */
    public SyncConfig requireAbsolute() {
        if (timeoutPercent != 0) {
            throw new IllegalArgumentException("timeout:" + timeoutPercent + "% is relative to the round time, which only a"
                + " policy's controller measures: use it in a policy file (when round >= 1 then bsp + timeout("
                + timeoutPercent + "%))");
        }
        return this;
    }

    /** The relative timeout in percent of the typical round time; 0 when there is none. */
    public int timeoutPercent() {
        return timeoutPercent;
    }

    public LateMode lateMode() {
        return lateMode;
    }

    public BitSet excluded() {
        return (BitSet) excluded.clone();
    }

    public boolean noneRequired() {
        return noneRequired;
    }

    public int quorum() {
        return quorum;
    }

    /** The concrete rule for a job of {@code workers} workers; fails naming what does not fit. */
    public Resolved resolve(final int workers) {
        final BitSet all = new BitSet();
        all.set(0, workers);
        return resolve(workers, all);
    }

    /**
     * The concrete rule for one group of a job's workers ({@code members}, a subset of the job's
     * {@code workers}): required are the members not excluded (none for fastest-k), the quorum
     * counts contributions from members. An excluded worker outside the group changes nothing here.
     * A group may need nothing (every member excluded: releases do not wait for it), the whole job
     * may not; an empty group takes any config (it is checked again when it gets members). Fails
     * naming what does not fit.
     */
    public Resolved resolve(final int workers, final BitSet members) {
        requireAbsolute();
        final BitSet required = requiredOf(members);
        final String misfit = misfit(workers, members, required);
        if (misfit != null) {
            throw new IllegalArgumentException(misfit);
        }
        return new Resolved(bound, required, Math.max(quorumOf(required), 0), timeoutNs, lateMode, sample);
    }

    /** Why this config does not fit a group ({@code members}) of a job of {@code workers} workers, as {@link #resolve} says it; null if it fits. */
    public String misfit(final int workers, final BitSet members) {
        return misfit(workers, members, requiredOf(members));
    }

    private String misfit(final int workers, final BitSet members, final BitSet required) {
        if (excluded.length() > workers) {
            return "excluded worker " + (excluded.length() - 1) + " is not in a job of " + workers + " workers";
        }
        final int size = members.cardinality();
        if (sample > 0 && noneRequired) {
            return "a PSP sample needs required workers to draw from, and fastest-k requires none";
        }
        if (sample > 0 && size == workers && sample > required.cardinality()) {
            return "PSP sample " + sample + " exceeds the " + required.cardinality() + " required workers";
        }
        final int k = quorumOf(required);
        if (size > 0 && k > size) {
            return "quorum " + k + " exceeds the " + (size == workers ? "job's " : "group's ") + size + " workers";
        }
        if (size == workers && k < 1 && timeoutNs == NO_TIMEOUT) {
            return "nothing would ever release a chunk: no required worker, no quorum, no timeout";
        }
        return null;
    }

    /** The members a release waits for: those not excluded (none for fastest-k). */
    private BitSet requiredOf(final BitSet members) {
        final BitSet required = new BitSet();
        if (!noneRequired) {
            required.or(members);
            required.andNot(excluded);
        }
        return required;
    }

    /** The contributions a release needs, given the required members. */
    private int quorumOf(final BitSet required) {
        return quorum != QUORUM_OF_REQUIRED ? quorum : sample > 0 ? Math.min(sample, required.cardinality()) : required.cardinality();
    }

    /** The rule for one job: required workers as a set, quorum as a count. */
    public static final class Resolved {
        public final int bound;
        public final BitSet required;
        public final int quorum;
        public final long timeoutNs;
        public final LateMode lateMode;
        /** PSP's sample size (0: every required worker). */
        public final int sample;

        Resolved(final int bound, final BitSet required, final int quorum, final long timeoutNs, final LateMode lateMode,
                 final int sample) {
            this.bound = bound;
            this.required = required;
            this.quorum = quorum;
            this.timeoutNs = timeoutNs;
            this.lateMode = lateMode;
            this.sample = sample;
        }

        /** The workers a release of round {@code round} waits for: the required set, or PSP's sample of it ({@link SyncRules#sample}). */
        public BitSet requiredFor(final long seed, final int round) {
            if (sample == 0) {
                return (BitSet) required.clone();
            }
            final int words = Math.max(1, (required.length() + 63) / 64);
            final long[] from = Arrays.copyOf(required.toLongArray(), words);
            final long[] out = new long[words];
            SyncRules.sample(seed, round, from, 0, words, sample, out, 0);
            return BitSet.valueOf(out);
        }
    }

    @Override
    public boolean equals(final Object o) {
        if (!(o instanceof SyncConfig)) {
            return false;
        }
        final SyncConfig c = (SyncConfig) o;
        return bound == c.bound && noneRequired == c.noneRequired && quorum == c.quorum && timeoutNs == c.timeoutNs
            && timeoutPercent == c.timeoutPercent && lateMode == c.lateMode && sample == c.sample && busy == c.busy
            && excluded.equals(c.excluded);
    }

    @Override
    public int hashCode() {
        return Objects.hash(bound, excluded, noneRequired, quorum, timeoutNs, timeoutPercent, lateMode, sample, busy);
    }

    /** The canonical text, which {@link SyncConfigParser} parses back to an equal config. */
    @Override
    public String toString() {
        final StringBuilder sb = new StringBuilder();
        if (noneRequired) {
            sb.append(bound == 0 ? "bsp" : bound == UNBOUNDED ? "asp" : "ssp:" + bound);
            sb.append("+fastest:").append(quorum);
        } else {
            sb.append(bound == 0 ? "bsp" : bound == UNBOUNDED ? "asp" : "ssp:" + bound);
            if (sample > 0) {
                sb.append("+sample:").append(sample);
            }
            if (quorum != QUORUM_OF_REQUIRED) {
                sb.append("+quorum:").append(quorum);
            }
        }
        if (!excluded.isEmpty()) {
            sb.append("+exclude:");
            sb.append(excluded.stream().mapToObj(Integer::toString).reduce((a, b) -> a + "," + b).orElse(""));
        }
        if (timeoutNs != NO_TIMEOUT) {
            sb.append("+timeout:").append(formatMillis(timeoutNs));
        }
        if (timeoutPercent != 0) {
            sb.append("+timeout:").append(timeoutPercent).append('%');
        }
        if (lateMode == LateMode.DROP) {
            sb.append("+drop");
        }
        if (busy) {
            sb.append("+busy");
        }
        return sb.toString();
    }

    private static String formatMillis(final long ns) {
        if (ns % 1_000_000 == 0) {
            return Long.toString(ns / 1_000_000);
        }
        return BigDecimal.valueOf(ns, 6).stripTrailingZeros().toPlainString();
    }
}
