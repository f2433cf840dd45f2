package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.Flags;
import io.serene.protocol.Packet;
import io.serene.protocol.ResultPacket;
import io.serene.protocol.sync.StepLayout;

import java.nio.ByteBuffer;
import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The rounds this worker knows, from the oldest not yet delivered on: their released parts
 * (agreed exponents, integer sums, contributor bitmaps), taken from RESULT packets once each, and
 * the delivery of complete rounds in order as {@link Aggregate}s. Round buffers come back from
 * released aggregates, from any thread, and are reused when their shape fits.
 */
final class RoundAssembler {
    /** One round as this worker knows it: released parts, and its own gradient once submitted. */
    static final class RoundState {
        final int round;
        final RoundBuffers buffers;
        CompletableFuture<Aggregate> future;
        boolean submitted;
        int chunksReleased;
        int expStepsReleased;
        boolean saturated;
        /** The compute time the caller reported for this round (sent in every DATA packet; 0: none). */
        long computeNs;

        RoundState(final int round, final RoundBuffers buffers) {
            this.round = round;
            this.buffers = buffers;
        }
    }

    private final Counters<WorkerCounter> counters;
    private final int elements;
    private final int words;
    private final int q;
    /** Round buffers handed back by {@link Aggregate#release()}, from any thread. */
    private final Queue<RoundBuffers> pool = new ConcurrentLinkedQueue<>();
    private StepLayout layout;
    private RoundState[] rounds = new RoundState[16];
    private int baseRound;
    private ByteBuffer viewSource;
    private IntBuffer view;

    RoundAssembler(final Counters<WorkerCounter> counters, final int elements, final int workers, final int q) {
        this.counters = counters;
        this.elements = elements;
        this.words = (workers + 63) >>> 6;
        this.q = q;
    }

    /** The job's step layout, known from the JOIN_ACK. */
    void layout(final StepLayout stepLayout) {
        this.layout = stepLayout;
    }

    /** Rounds delivered to the caller (all before this one are complete). */
    int baseRound() {
        return baseRound;
    }

    /** The state of a round at or after the base round, created (with recycled buffers) on first use. */
    RoundState state(final int round) {
        if (round < baseRound) {
            throw new IllegalStateException("round " + round + " was already delivered (next is " + baseRound + ")");
        }
        while (round - baseRound >= rounds.length) {
            grow();
        }
        RoundState st = rounds[round & (rounds.length - 1)];
        if (st == null) {
            st = new RoundState(round, buffers());
            rounds[round & (rounds.length - 1)] = st;
        }
        return st;
    }

    private RoundState existing(final int round) {
        if (round < baseRound || round - baseRound >= rounds.length) {
            return null;
        }
        final RoundState st = rounds[round & (rounds.length - 1)];
        return st != null && st.round == round ? st : null;
    }

    /** Whether step seq has been released (rounds already delivered are). */
    boolean stepReleased(final long seq) {
        final int round = layout.round(seq);
        if (round < baseRound) {
            return true;
        }
        final RoundState st = existing(round);
        if (st == null) {
            return false;
        }
        final int t = layout.step(seq);
        return layout.isValueStep(t) ? st.buffers.chunkReleased[layout.chunkOf(t)] : st.buffers.expStepReleased[t];
    }

    /** Whether a result is of the step its seq names: its round, chunk, element count and payload as the layout says. */
    boolean matches(final ResultPacket in) {
        final long seq = in.seq();
        if (seq < 0) {
            return false;
        }
        final int t = layout.step(seq);
        return in.round() == layout.round(seq) && in.chunk() == layout.chunkOf(t) && in.elementCount() == layout.elementCount(t)
            && (in.flags() & Flags.PAYLOAD) == (layout.isValueStep(t) ? Flags.VALUES : Flags.EXPONENTS);
    }

    /**
     * Takes a submitted round into its buffers: the gradient (null: zeros) with the late values the
     * ledger folds in, each chunk's exponent (given, unless values were folded in or none were given),
     * the compute time it reports and the future its aggregate completes.
     */
    void submit(final RoundState st, final float[] gradient, final byte[] chunkExponents, final long computeNs,
                final CompletableFuture<Aggregate> future, final LateLedger ledger) {
        st.computeNs = computeNs;
        final float[] data = st.buffers.data;
        if (gradient == null) {
            Arrays.fill(data, 0f);
        } else {
            System.arraycopy(gradient, 0, data, 0, data.length);
        }
        if (ledger.foldInto(data) || gradient == null || chunkExponents == null || chunkExponents.length != layout.chunks()) {
            StepEncoder.localExponents(layout, st.buffers);
        } else {
            System.arraycopy(chunkExponents, 0, st.buffers.localExp, 0, layout.chunks());
        }
        st.future = future;
        st.submitted = true;
    }

    /**
     * Takes the released part a RESULT packet carries into its round (already checked against the
     * layout: step t of {@code st}'s round, its chunk and element count). False if it was taken
     * before (a duplicate).
     */
    boolean take(final ResultPacket in, final RoundState st, final int t, final int chunk, final int n) {
        final RoundBuffers b = st.buffers;
        final ByteBuffer buffer = in.buffer();
        final int at = in.offset() + in.valuesOffset();
        if (!layout.isValueStep(t)) {
            if (b.expStepReleased[t]) {
                return false;
            }
            b.expStepReleased[t] = true;
            st.expStepsReleased++;
            for (int i = 0; i < n; i++) {
                b.agreedExp[chunk + i] = (byte) buffer.getInt(at + 4 * i);
                b.expKnown[chunk + i] = true;
            }
            return true;
        }
        if (b.chunkReleased[chunk]) {
            return false;
        }
        b.chunkReleased[chunk] = true;
        st.chunksReleased++;
        final int ahead = chunk + layout.lookAhead();
        if (ahead < layout.chunks()) {
            b.agreedExp[ahead] = in.exponent();
            b.expKnown[ahead] = true;
        }
        final int base = chunk * layout.chunkElements();
        if ((at & 3) == 0) {
            intView(buffer).get(at >> 2, b.integerSums, base, n);
        } else {
            for (int i = 0; i < n; i++) {
                b.integerSums[base + i] = buffer.getInt(at + 4 * i);
            }
        }
        b.chunkContributors[chunk] = in.contributorCount();
        // a worker beyond the job's size is no worker of it: words past the job's are not kept
        final int packetWords = Math.min(in.bitmapWords(), b.words);
        for (int w = 0; w < packetWords; w++) {
            b.chunkBitmaps[chunk * b.words + w] = in.bitmapWord(w);
        }
        if (in.hasFlag(Flags.SATURATED)) {
            st.saturated = true;
        }
        return true;
    }

    /**
     * Hands out complete rounds in order, up to {@code submitted}: every chunk and every exponent step
     * released (the sums are read at the agreed exponents) and every own step passed ({@code nextSeq}
     * beyond the round).
     */
    void deliver(final int submitted, final long nextSeq) {
        while (baseRound < submitted) {
            final RoundState st = rounds[baseRound & (rounds.length - 1)];
            // every own step sent is not enough: a worker that missed a round's exponent results (multicast
            // while it was still joining, or lost) sent its exponent step again and waits for the answer
            if (st == null || st.chunksReleased < layout.chunks() || st.expStepsReleased < layout.exponentSteps()
                || nextSeq < layout.firstSeq(baseRound + 1)) {
                return;
            }
            rounds[baseRound & (rounds.length - 1)] = null;
            baseRound++;
            counters.increment(WorkerCounter.ROUNDS_COMPLETED);
            st.future.complete(new Aggregate(st.round, layout.chunkElements(), q, elements, layout.chunks(), st.buffers,
                st.saturated, pool));
        }
    }

    /** Fails every round's future. */
    void fail(final Throwable ex) {
        for (final RoundState st : rounds) {
            if (st != null && st.future != null) {
                st.future.completeExceptionally(ex);
            }
        }
    }

    /** An int view of a receive buffer, kept while the transport hands over the same buffer. */
    private IntBuffer intView(final ByteBuffer buffer) {
        if (buffer != viewSource) {
            viewSource = buffer;
            view = buffer.duplicate().order(Packet.BYTE_ORDER).clear().asIntBuffer();
        }
        return view;
    }

    /** Buffers for one round: recycled from released aggregates when their shape fits. */
    private RoundBuffers buffers() {
        RoundBuffers b;
        while ((b = pool.poll()) != null) {
            if (b.fits(layout.chunks(), elements, layout.exponentSteps(), words)) {
                b.clear();
                return b;
            }
        }
        return new RoundBuffers(layout.chunks(), elements, layout.exponentSteps(), words);
    }

    private void grow() {
        final RoundState[] bigger = new RoundState[rounds.length * 2];
        for (final RoundState st : rounds) {
            if (st != null) {
                bigger[st.round & (bigger.length - 1)] = st;
            }
        }
        rounds = bigger;
    }
}
