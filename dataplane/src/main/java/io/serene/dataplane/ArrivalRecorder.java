package io.serene.dataplane;

import io.serene.protocol.Flags;
import io.serene.protocol.sync.SyncRules;

/**
 * What the switch records of each worker's arrivals, for telemetry, the policies'
 * {@code slowdown(worker)} and the {@code auto} policy's model: its compute time per round
 * (reported, or seen by the switch), its arrival offset in its newest round, and its last finished
 * round with both (JobRegisters); from its packets in time or late, and from its reports of rounds
 * released without it.
 */
final class ArrivalRecorder {
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final ReleaseRing releases;

    ArrivalRecorder(final JobRegisters jobs, final GroupTable groups, final ConfigTable configs, final ReleaseRing releases) {
        this.jobs = jobs;
        this.groups = groups;
        this.configs = configs;
        this.releases = releases;
    }

    /**
     * A worker's compute time for a round: what the worker reports in its DATA packets, if it does;
     * else as the switch sees it: from when it could start (its previous round's first packet, or
     * the release of the round its clearance waited for, whichever was later) to the first packet of
     * this round (exponents come first, and do not wait for other workers), one network delay included.
     */
    private void estimate(final int j, final int worker, final int round, final long nowNs, final long reportedNs) {
        final int w = jobs.worker(j, worker);
        final long previous = jobs.arrivalNs[w];
        jobs.arrivalNs[w] = nowNs;
        if (reportedNs > 0) {
            // the worker measured it: no network or scheduling delay in it, and right even when the
            // worker computed the gradient before its round opened (a round released without it)
            jobs.iterationNs[w] = reportedNs;
            return;
        }
        if (previous == JobRegisters.NO_ARRIVAL) {
            return;
        }
        long start = previous;
        final int l = ConfigTable.list(j, groups.of(j, worker));
        final long gate = SyncRules.gateRound(round, configs.bound(l, configs.entryFor(l, round)));
        if (releases.tracks(j, gate)) {
            start = Math.max(start, releases.releasedAtNs(j, gate));
        }
        jobs.iterationNs[w] = Math.max(0, nowNs - start);
    }

    /**
     * A packet of worker {@code worker}'s for {@code round} came, {@code afterNs} after its step's
     * first packet, in time or late: the first of a newer round (exponents or values) marks the end
     * of its computation and settles its last round (FinishedRounds); every one moves its arrival
     * offset in the round.
     */
    void arrived(final int j, final int worker, final int round, final long nowNs, final long afterNs, final long reportedNs) {
        final int w = jobs.worker(j, worker);
        if (round > jobs.arrivalRound[w]) {
            jobs.finishedRound[w] = jobs.arrivalRound[w];
            jobs.finishedComputeNs[w] = jobs.iterationNs[w];
            jobs.finishedOffsetNs[w] = jobs.offsetNs[w];
            jobs.offsetNs[w] = 0;
            jobs.arrivalRound[w] = round;
            estimate(j, worker, round, nowNs, reportedNs);
        }
        if (round == jobs.arrivalRound[w] && afterNs > jobs.offsetNs[w]) {
            jobs.offsetNs[w] = afterNs;
        }
    }

    /**
     * A joined worker's report (DATA with flag REPORT) of its compute time for a round released
     * without it: telemetry only (its finished round and compute estimate move, no arrival offset: it
     * was not sent to arrive), for a round already released, header only. Returns what to count:
     * REPORTS, or the drop it is.
     */
    SwitchCounter report(final int j, final int worker, final int round, final int elementCount, final int flags, final long nowNs,
                         final long reportedNs) {
        if (elementCount != 0 || (flags & Flags.PAYLOAD) != 0) {
            return SwitchCounter.DROP_BAD_ELEMENT_COUNT;
        }
        if (round < 0 || round > releases.releasedRound[j]) {
            // a round not released yet is reported by contributing to it; this one may not move its arrival round
            return SwitchCounter.DROP_BAD_STEP;
        }
        arrived(j, worker, round, nowNs, 0, reportedNs);
        return SwitchCounter.REPORTS;
    }
}
