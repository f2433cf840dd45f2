package io.serene.sim;

import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.worker.WorkerEngine;

import java.util.BitSet;
import java.util.List;

/** The simulated switch's schedule installed before anyone computes, and what a failed check prints. */
final class SwitchSetup {
    private SwitchSetup() {
    }

    /**
     * Installs every entry of {@code schedule} after its first in every group with members (group 0
     * always) of job {@code job}; a refused entry is an error naming the earliest round allowed.
     */
    static void installLater(final SwitchPipeline pipeline, final int job, final SyncSchedule schedule, final BitSet[] members) {
        final List<SyncSchedule.Entry> entries = schedule.entries();
        for (int i = 1; i < entries.size(); i++) {
            for (int g = 0; g < members.length; g++) {
                if (g > 0 && members[g].isEmpty()) {
                    continue;
                }
                final Status status = pipeline.installConfig(job, g, entries.get(i).firstRound, entries.get(i).config);
                if (status != Status.OK) {
                    throw new IllegalArgumentException("cannot install '" + entries.get(i) + "': " + status
                        + (status == Status.TOO_EARLY ? " (the earliest round the switch allows now is "
                        + pipeline.earliestSwapRound(job) + ")" : ""));
                }
            }
        }
    }

    /** Per-worker counters and states, the switch's counters, the disagreeing rounds and the errors, a line each. */
    static String diagnostics(final WorkerEngine[] engines, final SwitchPipeline pipeline, final DeliveryLog deliveries,
                              final List<Throwable> errors) {
        final StringBuilder sb = new StringBuilder();
        for (int w = 0; w < engines.length; w++) {
            sb.append("worker ").append(w).append(": ").append(engines[w].counters()).append(" | ")
                .append(engines[w].debugState()).append('\n');
        }
        sb.append("switch: ").append(pipeline.counters()).append('\n');
        deliveries.describeDisagreements(sb);
        errors.forEach(e -> sb.append("error: ").append(e).append('\n'));
        return sb.toString();
    }
}
