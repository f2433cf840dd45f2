package io.serene.dataplane;

import io.serene.protocol.sync.SyncConfig;

import java.util.Arrays;
import java.util.BitSet;

/**
 * Who a job's next round needs, for telemetry, stall reports and failure handling (reads
 * registers only; switch thread): the workers it waits for, and whether it can be released without
 * a given worker at all.
 */
final class NextRound {
    private final int words;
    private final int poolSize;
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final SlotPool slots;
    private final ReleaseRing releases;

    NextRound(final int words, final int poolSize, final JobRegisters jobs, final GroupTable groups, final ConfigTable configs,
              final SlotPool slots, final ReleaseRing releases) {
        this.words = words;
        this.poolSize = poolSize;
        this.jobs = jobs;
        this.groups = groups;
        this.configs = configs;
        this.slots = slots;
        this.releases = releases;
    }

    /**
     * The workers round R + 1 of job j waits for (allocates): the workers, joined or not, missing
     * from some step of the round the switch holds unreleased, among those their group's entry for
     * the round requires (all of a group's missing members when its entry requires none: a quorum, a
     * sample, asynchronous). Empty when no worker has started the round (the workers compute, or are
     * done).
     */
    BitSet waitingFor(final int j) {
        final int next = releases.releasedRound[j] + 1;
        final BitSet missing = new BitSet();
        for (int set = 0; set < 2; set++) {
            for (int slot = 0; slot < poolSize; slot++) {
                final int idx = slots.index(j, set, slot);
                if (slots.seq[idx] == SlotPool.NO_SEQ || slots.released[idx] || slots.round[idx] != next) {
                    continue;
                }
                for (int w = 0; w < jobs.workers[j]; w++) {
                    if (!slots.holds(idx, w)) {
                        missing.set(w);
                    }
                }
            }
        }
        final BitSet waiting = new BitSet();
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if (!groups.inUse(j, g)) {
                continue;
            }
            final int l = ConfigTable.list(j, g);
            final BitSet members = BitSet.valueOf(Arrays.copyOfRange(groups.members, l * words, (l + 1) * words));
            final BitSet required = configs.required(l, configs.entryFor(l, next), groups.members, l * words);
            final BitSet group = (BitSet) missing.clone();
            group.and(required.isEmpty() ? members : required);
            waiting.or(group);
        }
        return waiting;
    }

    /**
     * Whether a round of job j cannot be released without the worker, by its group's entry for the
     * round: the entry requires it, or its quorum is every member of the group, and it has no timeout.
     */
    boolean cannotGoOnWithout(final int j, final int worker, final int round) {
        final int l = ConfigTable.list(j, groups.of(j, worker));
        final int e = configs.entryFor(l, round);
        if (configs.timeoutNs(l, e) != SyncConfig.NO_TIMEOUT) {
            return false;
        }
        final int m = l * words;
        int members = 0;
        for (int w = 0; w < words; w++) {
            members += Long.bitCount(groups.members[m + w]);
        }
        final boolean required = (configs.requiredWord(l, e, worker >>> 6, groups.members, m) & (1L << (worker & 63))) != 0;
        return required || configs.quorum(l, e, groups.members, m) >= members;
    }
}
