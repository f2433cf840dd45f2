package io.serene.dataplane;

import io.serene.protocol.Counters;
import io.serene.protocol.DataPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.Outbox;
import io.serene.protocol.Status;
import io.serene.protocol.sync.StepLayout;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;

import java.nio.ByteBuffer;

/**
 * The DATA path, a block of the switch: checks a contribution against its job, slot and round (each
 * refusal counted as its drop), aggregates it, answers duplicates and late ones with the released
 * result, and releases a chunk once its sync config says so: the result multicast to every joined
 * worker, signed. The timer's scan releases through {@link #releaseIfDue} too. On the switch thread.
 */
final class DataPath {
    private final Counters<SwitchCounter> counters;
    private final DataPacket data = new DataPacket();
    private final int poolSize;
    private final int chunkElements;
    private final int words;
    private final int ring;
    /** The ports of a multicast's recipients, filled for each release. */
    private final int[] multicastPorts;
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final SlotPool slots;
    private final ReleaseRing releases;
    private final ReleaseRule rule;
    private final SwitchAuth auth;
    private final Deparser deparser;
    private final JobLifecycle lifecycle;
    private final Aggregator aggregator;
    private final ArrivalRecorder arrivals;

    DataPath(final SwitchMemory memory, final Counters<SwitchCounter> counters, final JobRegisters jobs, final GroupTable groups,
             final ConfigTable configs, final SlotPool slots, final ReleaseRing releases, final ReleaseRule rule, final SwitchAuth auth,
             final Deparser deparser, final JobLifecycle lifecycle, final Aggregator aggregator, final ArrivalRecorder arrivals) {
        this.counters = counters;
        this.poolSize = memory.poolSize();
        this.chunkElements = memory.chunkElements();
        this.words = memory.bitmapWords();
        this.ring = memory.roundRing();
        this.multicastPorts = new int[words << 6];
        this.jobs = jobs;
        this.groups = groups;
        this.configs = configs;
        this.slots = slots;
        this.releases = releases;
        this.rule = rule;
        this.auth = auth;
        this.deparser = deparser;
        this.lifecycle = lifecycle;
        this.aggregator = aggregator;
        this.arrivals = arrivals;
    }

    /** A DATA packet (its header checked, its MAC and number admitted) of the job at index {@code job} in the job table (MISSING: none). */
    void onData(final ByteBuffer buffer, final int offset, final int length, final int job, final int port, final long nowNs,
                final Outbox outbox) {
        data.wrap(buffer, offset, length);
        final int j = lifecycle.jobOf(data, job, port, nowNs, outbox);
        if (j == JobTable.MISSING) {
            return;
        }
        final int worker = data.workerId();
        if (!jobs.isJoined(j, worker)) {
            counters.increment(SwitchCounter.DROP_NOT_JOINED);
            return;
        }
        if ((data.flags() & Flags.REPORT) != 0) {
            counters.increment(arrivals.report(j, worker, data.round(), data.elementCount(), data.flags(), nowNs, data.computeTimeNs()));
            return;
        }
        final int payload = data.flags() & Flags.PAYLOAD;
        final int n = data.elementCount();
        if (payload == Flags.PAYLOAD || (payload != 0 ? (n == 0 || n > chunkElements) : n != 0)) {
            counters.increment(SwitchCounter.DROP_BAD_ELEMENT_COUNT);
            return;
        }
        final long seq = data.seq();
        final int round = data.round();
        final int chunk = data.chunk();
        if (seq < 0 || round < 0 || chunk < 0 || chunk >= jobs.chunksPerRound[j]) {
            counters.increment(SwitchCounter.DROP_BAD_SLOT);
            return;
        }
        final int slot = StepLayout.slot(seq, poolSize);
        final int set = StepLayout.shadowSet(seq, poolSize);
        if (data.poolIndex() != slot || data.shadowSet() != set) {
            counters.increment(SwitchCounter.DROP_BAD_SLOT);
            return;
        }
        if (seq / StepLayout.stepsPerRound(jobs.elementsPerRound[j], chunkElements, poolSize) != round) {
            // a step claims a slot for its own round only (a bound check on another round's number proves nothing)
            counters.increment(SwitchCounter.DROP_BAD_STEP);
            return;
        }
        if (!aggregator.exponentsInRange(data, n, payload)) {
            counters.increment(SwitchCounter.DROP_BAD_EXPONENT);
            return;
        }
        final int idx = slots.index(j, set, slot);
        final long current = slots.seq[idx];
        if (seq > current) {
            final int l = ConfigTable.list(j, groups.of(j, worker));
            // invariant 2, enforced: the bound of the sender's group for round c
            if (!SyncRules.mayStart(round, releases.releasedRound[j], configs.bound(l, configs.entryFor(l, round)), ring)) {
                counters.increment(SwitchCounter.DROP_BEYOND_BOUND);
                nack(j, port, Status.AHEAD, outbox);
                return;
            }
            if (!slots.previousUseReleased(j, set, slot, seq)) {
                counters.increment(SwitchCounter.DROP_AHEAD);
                nack(j, port, Status.AHEAD, outbox);
                return;
            }
            slots.reset(idx, seq, round, chunk, n, payload);
            slots.firstNs[idx] = nowNs;
            for (int g = 0; g < ConfigTable.GROUPS; g++) {
                if (groups.inUse(j, g)) {
                    slots.entry[idx * ConfigTable.GROUPS + g] = (byte) configs.entryFor(ConfigTable.list(j, g), round);
                }
            }
            jobs.started[j] = true;
        } else if (seq < current) {
            counters.increment(SwitchCounter.DROP_STALE);
            nack(j, port, Status.STALE, outbox);
            return;
        }
        if (slots.round[idx] != round || slots.chunk[idx] != chunk || slots.length[idx] != n
            || (slots.flags[idx] & Flags.PAYLOAD) != payload) {
            counters.increment(SwitchCounter.DROP_INCONSISTENT);
            return;
        }
        if (slots.holds(idx, worker)) {
            counters.increment(SwitchCounter.DUPLICATES);
            if (slots.released[idx]) {
                counters.increment(SwitchCounter.RESULTS_RETRANSMITTED);
                sendResult(j, idx, port, Flags.RETRANSMIT, outbox);
            } else {
                // the loss was a peer's: this worker need not resend the step again
                nack(j, port, Status.HELD, outbox);
            }
            return;
        }
        if (slots.released[idx]) {
            // late: the answer is the released result itself, whose bitmap leaves this worker out
            // its compute time and arrival still tell how it is doing (a worker excluded or cut off is heard only so)
            final long since = nowNs - slots.firstNs[idx];
            arrivals.arrived(j, worker, round, nowNs, since, data.computeTimeNs());
            if (withinTimeout(j, idx, worker, since)) {
                // late only because the step went without the late set, yet within the timeout: caught up, waited for again
                jobs.late[j * words + (worker >>> 6)] &= ~(1L << (worker & 63));
            }
            counters.increment(SwitchCounter.DROP_LATE);
            counters.increment(SwitchCounter.RESULTS_RETRANSMITTED);
            sendResult(j, idx, port, Flags.RETRANSMIT, outbox);
            return;
        }
        aggregator.add(data, j, idx, worker, n, payload);
        // counted in time again: waited for again
        final long bit = 1L << (worker & 63);
        jobs.late[j * words + (worker >>> 6)] &= ~bit;
        final int w = jobs.worker(j, worker);
        if (payload == Flags.VALUES && round > jobs.workerClock[w]) {
            jobs.workerClock[w] = round;
        }
        arrivals.arrived(j, worker, round, nowNs, nowNs - slots.firstNs[idx], data.computeTimeNs());
        releaseIfDue(j, idx, nowNs, outbox);
    }

    /** Whether a contribution {@code sinceNs} after the slot's first came within the timeout of the worker's group's entry. */
    private boolean withinTimeout(final int j, final int idx, final int worker, final long sinceNs) {
        final int g = groups.of(j, worker);
        final long timeout = configs.timeoutNs(ConfigTable.list(j, g), slots.entry[idx * ConfigTable.GROUPS + g]);
        return timeout != SyncConfig.NO_TIMEOUT && sinceNs <= timeout;
    }

    /** Releases the slot if it is due; a release its timeout alone allowed latches its round and marks the late. */
    void releaseIfDue(final int j, final int idx, final long nowNs, final Outbox outbox) {
        final int due = rule.releasable(j, idx, nowNs);
        if (due == ReleaseRule.NOT_DUE) {
            return;
        }
        if (due == ReleaseRule.DUE_BY_TIMEOUT) {
            counters.increment(SwitchCounter.TIMEOUT_RELEASES);
            rule.recordTimeout(j, idx);
        }
        release(j, idx, nowNs, outbox);
    }

    private void release(final int j, final int idx, final long nowNs, final Outbox outbox) {
        slots.released[idx] = true;
        counters.increment(SwitchCounter.RELEASES);
        if (slots.count[idx] < jobs.workers[j]) {
            counters.increment(SwitchCounter.PARTIAL_RELEASES);
        }
        if ((slots.flags[idx] & Flags.VALUES) != 0) {
            releases.chunkReleased(j, slots.round[idx], jobs.chunksPerRound[j], nowNs);
        }
        advanceOpenSeq(j);
        final int length = deparser.result(jobs, releases, slots, j, idx, 0);
        int recipients = 0;
        for (int w = 0; w < words; w++) {
            long joined = jobs.joined[j * words + w];
            for (; joined != 0; joined &= joined - 1) {
                multicastPorts[recipients++] = jobs.workerPort[jobs.worker(j, (w << 6) + Long.numberOfTrailingZeros(joined))];
            }
        }
        auth.seal(deparser.buffer(), length, j);
        outbox.multicast(multicastPorts, recipients, deparser.buffer(), 0, length);
        counters.add(SwitchCounter.PACKETS_OUT, recipients);
        counters.increment(SwitchCounter.RESULTS_MULTICAST);
    }

    /** Moves the job's lowest open step past every step released in order. */
    private void advanceOpenSeq(final int j) {
        long open = jobs.openSeq[j];
        while (true) {
            final int idx = slots.index(j, open);
            if (slots.seq[idx] != open || !slots.released[idx]) {
                break;
            }
            open++;
        }
        jobs.openSeq[j] = open;
    }

    private void send(final int j, final int port, final int length, final Outbox outbox) {
        auth.seal(deparser.buffer(), length, j);
        outbox.send(port, deparser.buffer(), 0, length);
        counters.increment(SwitchCounter.PACKETS_OUT);
    }

    private void sendResult(final int j, final int idx, final int port, final int extraFlags, final Outbox outbox) {
        send(j, port, deparser.result(jobs, releases, slots, j, idx, extraFlags), outbox);
    }

    private void nack(final int j, final int port, final Status status, final Outbox outbox) {
        send(j, port, deparser.nack(data, status), outbox);
    }
}
