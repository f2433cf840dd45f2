package io.serene.dataplane;

import io.serene.dataplane.state.ConfigTable;
import io.serene.dataplane.state.GroupTable;
import io.serene.dataplane.state.JobRegisters;
import io.serene.dataplane.state.ReleaseRing;
import io.serene.protocol.sync.SyncRules;

/** Estimates each worker's compute time per round, for telemetry and the policies' {@code slowdown(worker)}. */
final class IterationEstimator {
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final ReleaseRing releases;

    IterationEstimator(final JobRegisters jobs, final GroupTable groups, final ConfigTable configs, final ReleaseRing releases) {
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
    void estimate(final int j, final int worker, final int round, final long nowNs, final long reportedNs) {
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
}
