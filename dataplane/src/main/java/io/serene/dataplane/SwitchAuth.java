package io.serene.dataplane;

import io.serene.protocol.Counters;
import io.serene.protocol.JobKeys;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketAuth;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.ReplayWindow;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.function.LongSupplier;

/**
 * The switch's packet authentication (a block owning its registers): with a secret, every packet
 * a job's worker sends must carry a MAC under that worker's key and a packet number its replay
 * window has not taken, and every packet the switch sends is numbered and signed under the job's
 * reply key ({@link PacketAuth}, {@link JobKeys}). Keys are derived once, when a job is created,
 * into registers; a packet naming a job the switch does not have (a JOIN creating it, a packet
 * answered UNKNOWN_JOB) is checked under keys derived for it, which allocates (control path only).
 * Without a secret nothing is signed and nothing is checked.
 */
final class SwitchAuth {
    private final byte[] secret;
    private final Counters<SwitchCounter> counters;
    private final JobTable jobTable;
    private final JobRegisters jobs;
    /** [job * N + w]: the worker's key, and its replay window over the worker's packet numbers. */
    private final long[] k0;
    private final long[] k1;
    private final long[] highest;
    private final long[] seen;
    /** [job * N + w]: the number of the worker's last JOIN taken, which JOIN_ACKs to it echo (proof they are fresh). */
    private final long[] joinNumber;
    /** [job]: the job's reply key. */
    private final long[] r0;
    private final long[] r1;
    /** The next packet number the switch sends: from the clock's microseconds x 1024, so a restarted switch goes on above. */
    private long nextNumber;
    /** Where the numbers come from instead, when a data plane below numbers packets too (one counter for both); null: here. */
    private LongSupplier numbers;
    private final PacketHeader out = new PacketHeader();
    private JobKeys.WorkerKey derived;

    SwitchAuth(final byte[] secret, final int maxJobs, final int maxWorkers, final Counters<SwitchCounter> counters,
               final JobTable jobTable, final JobRegisters jobs) {
        this.secret = secret;
        this.counters = counters;
        this.jobTable = jobTable;
        this.jobs = jobs;
        k0 = new long[maxJobs * maxWorkers];
        k1 = new long[maxJobs * maxWorkers];
        highest = new long[maxJobs * maxWorkers];
        seen = new long[maxJobs * maxWorkers * ReplayWindow.WORDS];
        joinNumber = new long[maxJobs * maxWorkers];
        r0 = new long[maxJobs];
        r1 = new long[maxJobs];
        nextNumber = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now()) << 10;
    }

    /** Register bytes a worker of a job takes here: its key, replay window and last JOIN's number. */
    static final int WORKER_BYTES = 8 * (4 + ReplayWindow.WORDS);

    /** Register bytes (the reply keys are in SwitchMemory's job scalars). */
    long bytes() {
        return 8L * (k0.length + k1.length + highest.length + seen.length + joinNumber.length + r0.length + r1.length);
    }

    boolean keyed() {
        return secret != null;
    }

    /**
     * Job j's keys, derived when it is created ({@code carriedFrom}: the job index a rebuilt job was
     * at, whose replay windows it keeps, so packets of its workers from before the rebuild stay
     * refused; -1: a new job, windows empty).
     */
    void install(final int j, final int job, final int workers, final int carriedFrom) {
        final int base = jobs.worker(j, 0);
        if (carriedFrom >= 0 && carriedFrom != j) {
            final int from = jobs.worker(carriedFrom, 0);
            System.arraycopy(highest, from, highest, base, workers);
            System.arraycopy(seen, from * ReplayWindow.WORDS, seen, base * ReplayWindow.WORDS, workers * ReplayWindow.WORDS);
        } else if (carriedFrom < 0) {
            for (int w = 0; w < workers; w++) {
                ReplayWindow.reset(highest, seen, base + w);
            }
        }
        if (secret == null) {
            return;
        }
        final byte[] jobSecret = JobKeys.jobSecret(secret, job);
        final long[] reply = JobKeys.replyKey(jobSecret);
        r0[j] = reply[0];
        r1[j] = reply[1];
        for (int w = 0; w < workers; w++) {
            final long[] own = JobKeys.ownKey(jobSecret, w);
            k0[base + w] = own[0];
            k1[base + w] = own[1];
        }
    }

    /** What {@link #admit} found. */
    static final int ADMITTED = 0;
    static final int BAD_MAC = 1;
    static final int REPLAYED = 2;

    /**
     * Whether a packet may go on ({@link #ADMITTED}): its MAC is its worker's (for a job this switch
     * has, or one it would create) and, for a job it has, its number is new to the worker's window.
     * Else {@link #BAD_MAC} or {@link #REPLAYED}, the drop counted.
     */
    int admit(final Packet<?> in, final int j) {
        if (secret == null) {
            return ADMITTED;
        }
        if (!signed(in, j)) {
            counters.increment(SwitchCounter.DROP_BAD_MAC);
            return BAD_MAC;
        }
        if (j != JobTable.MISSING && in.workerId() < jobs.workers[j]
            && !ReplayWindow.take(highest, seen, jobs.worker(j, in.workerId()), in.packetNumber())) {
            counters.increment(SwitchCounter.DROP_REPLAYED);
            return REPLAYED;
        }
        return ADMITTED;
    }

    /** A MAC check alone, without the window (for a packet from a source the transport does not know yet). */
    boolean signedByWorker(final Packet<?> in) {
        return secret == null || signed(in, jobTable.get(in.jobId()));
    }

    /** Whether the packet carries its worker's MAC: under the registers' key for a worker job j has, else one derived for it. */
    private boolean signed(final Packet<?> in, final int j) {
        final int w = in.workerId();
        if (j == JobTable.MISSING || w >= jobs.workers[j]) {
            final JobKeys.WorkerKey key = derive(in.jobId(), w);
            return PacketAuth.verify(key.k0(), key.k1(), in);
        }
        final int i = jobs.worker(j, w);
        return PacketAuth.verify(k0[i], k1[i], in);
    }

    /** Records a JOIN taken from worker w of job j (the job's windows start with it if it was the first). */
    void joined(final int j, final int w, final Packet<?> join) {
        final int i = jobs.worker(j, w);
        joinNumber[i] = join.packetNumber();
        if (highest[i] < join.packetNumber()) {
            ReplayWindow.take(highest, seen, i, join.packetNumber());
        }
    }

    /** Worker w of job j's key (k0, k1); zeros without a secret. */
    long[] workerKey(final int j, final int w) {
        final int i = jobs.worker(j, w);
        return new long[] {k0[i], k1[i]};
    }

    /** Job j's reply key (r0, r1); zeros without a secret. */
    long[] replyKey(final int j) {
        return new long[] {r0[j], r1[j]};
    }

    /** The number of the last JOIN taken from worker w of job j. */
    long joinNumber(final int j, final int w) {
        return joinNumber[jobs.worker(j, w)];
    }

    /** Numbers and signs the packet of {@code length} bytes at the start of {@code tx}, for job index j (MISSING: by its job id). */
    void seal(final ByteBuffer tx, final int length, final int j) {
        out.wrap(tx, 0, length);
        if (secret == null) {
            out.packetNumber(number());
            return;
        }
        if (j == JobTable.MISSING) {
            final JobKeys.WorkerKey key = derive(out.jobId(), out.workerId());
            PacketAuth.seal(key.r0(), key.r1(), number(), out);
        } else {
            PacketAuth.seal(r0[j], r1[j], number(), out);
        }
    }

    private long number() {
        return numbers != null ? numbers.getAsLong() : nextNumber++;
    }

    /** Takes the switch's packet numbers from {@code source} from now on (a data plane below's counter). */
    void numbersFrom(final LongSupplier source) {
        numbers = source;
    }

    private JobKeys.WorkerKey derive(final int job, final int worker) {
        if (derived == null || derived.job() != job || derived.worker() != worker) {
            derived = JobKeys.workerKey(JobKeys.jobSecret(secret, job), job, worker);
        }
        return derived;
    }
}
