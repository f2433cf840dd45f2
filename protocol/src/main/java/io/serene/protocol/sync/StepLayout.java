package io.serene.protocol.sync;

/**
 * How a job's rounds map onto steps and the switch's slot pool, written once for the switch, the
 * worker and the simulator. A round of E elements has C = ceil(E / K) chunks of K elements; with
 * pool size P, b = min(P, C) and X = ceil(b / K):
 * <pre>
 *   step t &lt; X      : the exponents of chunks tK .. min(b, (t+1)K) - 1 (the switch takes maxima)
 *   step t = X + j  : values of chunk j, carrying the exponent of chunk j + b (look-ahead)
 *
 *   seq  = round * (X + C) + t          (steps run on across rounds)
 *   slot = seq mod P,  shadow set = (seq / P) mod 2
 * </pre>
 * A slot's previous use is step seq - P, of the other shadow set: it must be released before the
 * slot takes seq. Immutable; no allocation after construction.
 */
public final class StepLayout {
    private final int poolSize;
    private final int chunkElements;
    private final int elements;
    private final int chunks;
    private final int lookAhead;
    private final int exponentSteps;
    private final int stepsPerRound;

    public StepLayout(final int elements, final int chunkElements, final int poolSize) {
        if (elements < 1 || chunkElements < 1 || poolSize < 1) {
            throw new IllegalArgumentException("elements " + elements + ", chunk elements " + chunkElements
                + " and pool size " + poolSize + " must be positive");
        }
        this.poolSize = poolSize;
        this.chunkElements = chunkElements;
        this.elements = elements;
        this.chunks = chunks(elements, chunkElements);
        this.lookAhead = Math.min(poolSize, chunks);
        this.exponentSteps = (lookAhead + chunkElements - 1) / chunkElements;
        this.stepsPerRound = stepsPerRound(elements, chunkElements, poolSize);
    }

    /** X + C for a job of {@code elements} (the switch's check that a step claims a slot for its own round; no allocation). */
    public static int stepsPerRound(final int elements, final int chunkElements, final int poolSize) {
        final int chunks = chunks(elements, chunkElements);
        return (Math.min(poolSize, chunks) + chunkElements - 1) / chunkElements + chunks;
    }

    /** Chunks of a round of {@code elements} in chunks of {@code chunkElements}: ceil(E / K). */
    public static int chunks(final int elements, final int chunkElements) {
        return (int) ((elements + (long) chunkElements - 1) / chunkElements);
    }

    /** The pool slot step seq uses: seq mod P. */
    public static int slot(final long seq, final int poolSize) {
        return (int) (seq % poolSize);
    }

    /** The shadow set step seq uses: (seq / P) mod 2. */
    public static int shadowSet(final long seq, final int poolSize) {
        return (int) ((seq / poolSize) & 1);
    }

    /** The step that used seq's slot before it (the other shadow set), or -1 if none: seq - P. */
    public static long previousUse(final long seq, final int poolSize) {
        return seq >= poolSize ? seq - poolSize : -1;
    }

    public int poolSize() {
        return poolSize;
    }

    public int chunkElements() {
        return chunkElements;
    }

    public int elements() {
        return elements;
    }

    /** C: chunks per round. */
    public int chunks() {
        return chunks;
    }

    /** b = min(P, C): how many chunks ahead a value step carries the next exponent. */
    public int lookAhead() {
        return lookAhead;
    }

    /** X: exponent steps at the start of each round. */
    public int exponentSteps() {
        return exponentSteps;
    }

    /** X + C. */
    public int stepsPerRound() {
        return stepsPerRound;
    }

    /** The first step of a round. */
    public long firstSeq(final int round) {
        return (long) round * stepsPerRound;
    }

    public long seq(final int round, final int step) {
        return firstSeq(round) + step;
    }

    public int round(final long seq) {
        return (int) (seq / stepsPerRound);
    }

    /** The step's index t within its round. */
    public int step(final long seq) {
        return (int) (seq % stepsPerRound);
    }

    public boolean isValueStep(final int step) {
        return step >= exponentSteps;
    }

    /** The chunk field of a step: the value step's chunk, or the first chunk whose exponent an exponent step carries. */
    public int chunkOf(final int step) {
        return isValueStep(step) ? step - exponentSteps : step * chunkElements;
    }

    /** The element count of a step's payload: its chunk's length, or the exponents it carries. */
    public int elementCount(final int step) {
        return isValueStep(step) ? chunkLength(step - exponentSteps) : exponentCount(step);
    }

    /** How many chunk exponents exponent step t carries. */
    public int exponentCount(final int step) {
        return Math.min(lookAhead, (step + 1) * chunkElements) - step * chunkElements;
    }

    /** Elements of a chunk (the last may be short). */
    public int chunkLength(final int chunk) {
        return Math.min(chunkElements, elements - chunk * chunkElements);
    }

    public int slot(final long seq) {
        return slot(seq, poolSize);
    }

    public int shadowSet(final long seq) {
        return shadowSet(seq, poolSize);
    }
}
