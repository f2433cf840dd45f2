package io.serene.dataplane;

import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;

/**
 * The release condition (docs/design.md, the synchronization contract), over the slot's bitmap: for every group with
 * members, under the entry the slot opened with, its required members and at least its quorum of
 * members (PSP: the round's seeded sample of them) contributed, or its timeout passed since the slot's first contribution; or a step of the
 * slot's round timed out and the slot holds every worker that release held (the latch); or, under
 * timeout configs, it holds every joined worker no timeout left out since it last contributed in
 * time (the late set). Reads registers only; {@link #recordTimeout} writes the latch and late set.
 */
final class ReleaseRule {
    /** Not yet releasable. */
    static final int NOT_DUE = 0;
    /** Releasable by the config's rule, the round's latch or the late set. */
    static final int DUE = 1;
    /** Releasable by the timeout alone. */
    static final int DUE_BY_TIMEOUT = 2;

    private final int words;
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final SlotPool slots;
    private final ReleaseRing releases;
    /** Scratch: a group's required members, and PSP's sample of them for a slot's round. */
    private final long[] requiredScratch;
    private final long[] sampleScratch;

    ReleaseRule(final int words, final JobRegisters jobs, final GroupTable groups, final ConfigTable configs,
                final SlotPool slots, final ReleaseRing releases) {
        this.words = words;
        this.jobs = jobs;
        this.groups = groups;
        this.configs = configs;
        this.slots = slots;
        this.releases = releases;
        this.requiredScratch = new long[words];
        this.sampleScratch = new long[words];
    }

    long bytes() {
        return 8L * (requiredScratch.length + sampleScratch.length);
    }

    /** {@link #NOT_DUE}, {@link #DUE} or {@link #DUE_BY_TIMEOUT} for slot idx of job j at {@code nowNs}. */
    int releasable(final int j, final int idx, final long nowNs) {
        if (releases.latched(j, slots.round[idx], slots.bitmap, idx * words) || onTimeWithoutTheLate(j, idx)) {
            return DUE;
        }
        boolean timedOut = false;
        final boolean single = groups.single(j);
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if (!groups.inUse(j, g)) {
                continue;
            }
            final int l = ConfigTable.list(j, g);
            final int e = slots.entry[idx * ConfigTable.GROUPS + g];
            final int m = l * words;
            final int count = single ? slots.count[idx] : slots.countIn(idx, groups.members, m);
            final boolean met = count >= configs.quorum(l, e, groups.members, m)
                && (configs.sample(l, e) > 0 ? hasSample(j, idx, l, e, m)
                    : configs.hasRequired(l, e, slots.bitmap, idx * words, groups.members, m));
            if (!met) {
                final long timeout = configs.timeoutNs(l, e);
                if (timeout == SyncConfig.NO_TIMEOUT || nowNs - slots.firstNs[idx] < timeout) {
                    return NOT_DUE;
                }
                timedOut = true;
            }
        }
        return timedOut ? DUE_BY_TIMEOUT : DUE;
    }

    /** PSP: whether the slot holds the round's seeded sample of the group's required members ({@link SyncRules#sample}). */
    private boolean hasSample(final int j, final int idx, final int l, final int e, final int m) {
        for (int w = 0; w < words; w++) {
            requiredScratch[w] = configs.requiredWord(l, e, w, groups.members, m);
        }
        SyncRules.sample(jobs.id[j], slots.round[idx], requiredScratch, 0, words, configs.sample(l, e), sampleScratch, 0);
        for (int w = 0; w < words; w++) {
            if ((slots.bitmap[idx * words + w] & sampleScratch[w]) != sampleScratch[w]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Records a release its timeout alone allowed: the workers it left out join the late set, and
     * its round's latch holds the workers it held (intersected with an earlier one of the round).
     */
    void recordTimeout(final int j, final int idx) {
        for (int w = 0; w < words; w++) {
            jobs.late[j * words + w] |= jobs.joined[j * words + w] & ~slots.bitmap[idx * words + w];
        }
        releases.latch(j, slots.round[idx], slots.bitmap, idx * words);
    }

    /**
     * Under a timeout config (every group's entry has one), whether the slot holds every joined
     * worker outside the late set, which is not empty: a worker a timeout left out is not waited
     * for again until it catches up.
     */
    private boolean onTimeWithoutTheLate(final int j, final int idx) {
        if (!jobs.anyLate(j) || slots.count[idx] == 0) {
            return false;
        }
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if (groups.inUse(j, g)
                && configs.timeoutNs(ConfigTable.list(j, g), slots.entry[idx * ConfigTable.GROUPS + g]) == SyncConfig.NO_TIMEOUT) {
                return false;
            }
        }
        for (int w = 0; w < words; w++) {
            final long need = jobs.joined[j * words + w] & ~jobs.late[j * words + w];
            if ((slots.bitmap[idx * words + w] & need) != need) {
                return false;
            }
        }
        return true;
    }
}
