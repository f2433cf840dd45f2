package io.serene.dataplane;

import io.serene.protocol.Flags;
import io.serene.protocol.sync.SyncConfig;
import org.junit.jupiter.api.Test;

import java.util.BitSet;

import static org.assertj.core.api.Assertions.assertThat;

/** The switch's blocks one at a time: registers in, verdicts out, with a fake clock. */
class SwitchBlocksTest {
    private static final int JOBS = 2;
    private static final int WORKERS = 4;
    private static final int WORDS = 1;
    private static final int K = 4;
    private static final int POOL = 8;
    private static final int RING = 8;

    private final JobRegisters jobs = new JobRegisters(JOBS, WORKERS, WORDS);
    private final GroupTable groups = new GroupTable(JOBS, WORKERS, WORDS);
    private final ConfigTable configs = new ConfigTable(JOBS, WORDS);
    private final SlotPool slots = new SlotPool(JOBS, POOL, WORDS, K);
    private final ReleaseRing releases = new ReleaseRing(JOBS, RING, WORDS);
    private final ReleaseRule rule = new ReleaseRule(WORDS, jobs, groups, configs, slots, releases);

    private void job(final SyncConfig config) {
        jobs.reset(0, 7, WORKERS, 16, 4);
        releases.reset(0, 0);
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            configs.reset(ConfigTable.list(0, g), config, WORKERS);
        }
        groups.reset(0, WORKERS, new int[0]);
        for (int w = 0; w < WORKERS; w++) {
            jobs.join(0, w, 100 + w);
        }
    }

    /** Opens slot 0 for step 0 at time 0 and adds the given workers' contributions. */
    private int slotWith(final int... workers) {
        final int idx = slots.index(0, 0L);
        slots.reset(idx, 0, 0, 0, K, Flags.VALUES);
        slots.firstNs[idx] = 0;
        slots.entry[idx * ConfigTable.GROUPS] = (byte) configs.entryFor(ConfigTable.list(0, 0), 0);
        for (final int w : workers) {
            slots.bitmap[idx] |= 1L << w;
            slots.count[idx]++;
        }
        return idx;
    }

    @Test
    void releaseRuleWaitsForEveryWorkerUnderBsp() {
        job(SyncConfig.bsp());
        assertThat(rule.releasable(0, slotWith(0, 1, 2), 1_000_000)).isEqualTo(ReleaseRule.NOT_DUE);
        assertThat(rule.releasable(0, slotWith(0, 1, 2, 3), 0)).isEqualTo(ReleaseRule.DUE);
    }

    @Test
    void releaseRuleTakesAQuorumOrTheRequiredSet() {
        job(SyncConfig.fastest(2));
        assertThat(rule.releasable(0, slotWith(3), 0)).isEqualTo(ReleaseRule.NOT_DUE);
        assertThat(rule.releasable(0, slotWith(1, 3), 0)).isEqualTo(ReleaseRule.DUE);
        final BitSet straggler = new BitSet();
        straggler.set(3);
        job(SyncConfig.bsp().excluding(straggler));
        assertThat(rule.releasable(0, slotWith(0, 1, 3), 0)).isEqualTo(ReleaseRule.NOT_DUE);
        assertThat(rule.releasable(0, slotWith(0, 1, 2), 0)).isEqualTo(ReleaseRule.DUE);
    }

    @Test
    void releaseRuleReleasesByTimeoutAloneAndThenLatchesTheRoundAndMarksTheLate() {
        job(SyncConfig.bsp().withTimeoutNs(50));
        final int idx = slotWith(0, 1);
        assertThat(rule.releasable(0, idx, 49)).isEqualTo(ReleaseRule.NOT_DUE);
        assertThat(rule.releasable(0, idx, 50)).isEqualTo(ReleaseRule.DUE_BY_TIMEOUT);
        rule.recordTimeout(0, idx);
        // workers 2 and 3 are late now; round 0's other steps go once they hold 0 and 1
        assertThat(jobs.late[0]).isEqualTo(0b1100L);
        assertThat(releases.latched(0, 0, new long[] {0b0011L}, 0)).isTrue();
        assertThat(releases.latched(0, 0, new long[] {0b0001L}, 0)).isFalse();
        assertThat(releases.latched(0, 1, new long[] {0b0011L}, 0)).isFalse();
    }

    @Test
    void releaseRingAdvancesROverConsecutiveFullRoundsOnly() {
        releases.reset(0, 0);
        releases.chunkReleased(0, 1, 2, 10);
        releases.chunkReleased(0, 1, 2, 11);
        assertThat(releases.releasedRound[0]).isEqualTo(-1);
        releases.chunkReleased(0, 0, 2, 12);
        releases.chunkReleased(0, 0, 2, 13);
        assertThat(releases.releasedRound[0]).isEqualTo(1);
        assertThat(releases.releasedAtNs(0, 0)).isEqualTo(13);
        assertThat(releases.releasedAtNs(0, 1)).isEqualTo(13);
        assertThat(releases.tracks(0, 2)).isFalse();
        assertThat(releases.releasedAtNs(0, 2)).isEqualTo(-1);
    }

    @Test
    void slotPoolSaturatesOutOfScaleAddsInsteadOfWrapping() {
        final int idx = slots.index(1, 3L);
        slots.reset(idx, 3, 0, 0, 2, Flags.VALUES);
        assertThat(SlotPool.outOfScale(new int[] {5, -5}, 2, 8)).isFalse();
        assertThat(SlotPool.outOfScale(new int[] {5, -9}, 2, 8)).isTrue();
        slots.add(idx, new int[] {Integer.MAX_VALUE - 1, Integer.MIN_VALUE + 1}, 2);
        assertThat(slots.saturatingAdd(idx, new int[] {5, -5}, 2)).isTrue();
        assertThat(slots.sums[idx * K]).isEqualTo(Integer.MAX_VALUE);
        assertThat(slots.sums[idx * K + 1]).isEqualTo(Integer.MIN_VALUE);
        assertThat(slots.saturatingAdd(idx, new int[] {-1, 1}, 2)).isFalse();
    }

    @Test
    void slotPoolReusesASlotOnlyAfterItsPreviousUseIsReleased() {
        final int first = slots.index(0, 2L);
        slots.reset(first, 2, 0, 2, K, Flags.VALUES);
        assertThat(slots.previousUseReleased(0, 1, 2, 2 + POOL)).isFalse();
        slots.released[first] = true;
        assertThat(slots.previousUseReleased(0, 1, 2, 2 + POOL)).isTrue();
        assertThat(slots.index(0, 2L + POOL)).isNotEqualTo(first);
        assertThat(slots.jobOf(slots.index(1, 5L))).isEqualTo(1);
    }

    @Test
    void timeoutScannerVisitsTheShareOfThePoolTheElapsedTimeAllows() {
        final TimeoutScanner scanner = new TimeoutScanner();
        assertThat(scanner.armed()).isFalse();
        configs.reset(ConfigTable.list(0, 0), SyncConfig.bsp().withTimeoutNs(4_000_000), WORKERS);
        scanner.update(configs);
        assertThat(scanner.armed()).isTrue();
        // sweep = 1 ms: the first call visits every slot, then a tenth of a sweep a tenth of them (+1)
        assertThat(scanner.visits(0, 1000)).isEqualTo(1000);
        assertThat(scanner.visits(100_000, 1000)).isEqualTo(101);
        assertThat(scanner.next(3)).isZero();
        assertThat(scanner.next(3)).isEqualTo(1);
        assertThat(scanner.next(3)).isEqualTo(2);
        assertThat(scanner.next(3)).isZero();
    }
}
