package io.serene.node;

import io.serene.controlplane.FinishedRounds;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What the switch holds at one instant, read on its own thread through the command queue (so
 * it is consistent and the data plane is never touched from outside): its counters and, per job,
 * R, the workers' clocks and compute estimates, the config in force and who the next round waits
 * for. Telemetry, stall reports and {@code /metrics} are all made from it.
 *
 * @param timeNs   the switch's clock when it was read
 * @param counters every data-plane counter
 * @param jobs     the jobs the switch holds
 */
public record SwitchView(long timeNs, Map<SwitchCounter, Long> counters, List<Job> jobs) {
    /**
     * One job.
     *
     * @param waitingSinceNs  when R took its value (or the job was created, before the first release)
     * @param releaseNs       when R passed each round in {@code firstTimedRound..releasedRound}, ascending
     * @param configs         per worker group with members, the config entry in force for round R + 1
     * @param waitingFor      the workers round R + 1 waits for (from the contributor bitmaps)
     * @param heardRounds     per worker, the newest round the switch heard of from it ({@link SwitchPipeline#heardRound})
     */
    public record Job(int job, int releasedRound, long waitingSinceNs, int epoch, int[] clocks, long[] iterationNs, int[] groups,
                      List<String> configs, BitSet waitingFor, int firstTimedRound, long[] releaseNs, int[] heardRounds) {
        /** A job whose workers were heard of in no round beyond their clocks. */
        public Job(final int job, final int releasedRound, final long waitingSinceNs, final int epoch, final int[] clocks,
                   final long[] iterationNs, final int[] groups, final List<String> configs, final BitSet waitingFor,
                   final int firstTimedRound, final long[] releaseNs) {
            this(job, releasedRound, waitingSinceNs, epoch, clocks, iterationNs, groups, configs, waitingFor, firstTimedRound, releaseNs,
                clocks.clone());
        }

        /** The newest round worker w was heard of in: its clock, or a round it came late to or reported (a live worker left out). */
        public int heard(final int w) {
            return Math.max(clocks[w], heardRounds[w]);
        }

        /** How long round R + 1 has waited at {@code nowNs}. */
        public long waitedNs(final long nowNs) {
            return Math.max(0, nowNs - waitingSinceNs);
        }

        /** The highest clock of the job's workers (-1 before any contribution). */
        public int fastestClock() {
            int max = -1;
            for (final int c : clocks) {
                max = Math.max(max, c);
            }
            return max;
        }

        /** How many rounds worker w is behind the fastest. */
        public int lag(final int w) {
            return clocks[w] < 0 ? Math.max(0, fastestClock() + 1) : fastestClock() - clocks[w];
        }
    }

    /** Reads the view; call on the switch's thread. {@code sinceRound}: per job, the first round whose release time to include. */
    public static SwitchView read(final SwitchPipeline p, final long nowNs, final Map<Integer, Integer> sinceRound) {
        final Map<SwitchCounter, Long> counters = p.counters().snapshot();
        final List<Job> jobs = new ArrayList<>();
        for (final int id : p.jobIds()) {
            jobs.add(readJob(p, id, sinceRound.getOrDefault(id, 0)));
        }
        return new SwitchView(nowNs, counters, jobs);
    }

    /** One job's view, with release times from {@code sinceRound} on; null for an unknown job. Call on the switch's thread. */
    public static Job readJob(final SwitchPipeline p, final int id, final int sinceRound) {
        final int n = p.workers(id);
        if (n < 0) {
            return null;
        }
        final int released = p.releasedRound(id);
        final int[] clocks = new int[n];
        final long[] iterationNs = new long[n];
        final int[] groups = new int[n];
        final int[] heard = new int[n];
        for (int w = 0; w < n; w++) {
            clocks[w] = p.clock(id, w);
            heard[w] = p.heardRound(id, w);
            iterationNs[w] = p.iterationNs(id, w);
            groups[w] = p.group(id, w);
        }
        final List<String> configs = new ArrayList<>();
        int group = -1;
        String inForce = null;
        for (final SwitchPipeline.ConfigRow row : p.configEntries(id)) {
            if (row.group() != group) {
                if (inForce != null) {
                    configs.add(inForce);
                }
                group = row.group();
                inForce = null;
            }
            if (inForce == null || row.firstRound() <= released + 1) {
                inForce = (row.group() == 0 ? "" : "group " + row.group() + ": ") + row.rule();
            }
        }
        if (inForce != null) {
            configs.add(inForce);
        }
        // the release times still in the ring, from the first round the caller has not seen
        int first = Math.max(0, sinceRound);
        while (first <= released && p.releasedAtNs(id, first) < 0) {
            first++;
        }
        final long[] releaseNs = new long[Math.max(0, released - first + 1)];
        for (int r = first; r <= released; r++) {
            releaseNs[r - first] = p.releasedAtNs(id, r);
        }
        return new Job(id, released, p.waitingSinceNs(id), p.configEpoch(id), clocks, iterationNs, groups, configs,
            p.waitingFor(id), first, releaseNs, heard);
    }

    /** Each worker's last finished round with its compute time and arrival offset there (NONE for an unknown job). Call on the switch's thread. */
    public static FinishedRounds finished(final SwitchPipeline p, final int id) {
        final int n = p.workers(id);
        if (n < 0) {
            return FinishedRounds.NONE;
        }
        final int[] rounds = new int[n];
        final long[] computeNs = new long[n];
        final long[] offsetNs = new long[n];
        for (int w = 0; w < n; w++) {
            rounds[w] = p.finishedRound(id, w);
            computeNs[w] = p.finishedComputeNs(id, w);
            offsetNs[w] = p.finishedOffsetNs(id, w);
        }
        return new FinishedRounds(rounds, computeNs, offsetNs);
    }

    /** Reads the view through the switch's command queue (from any thread). */
    public static SwitchView request(final SwitchPipeline p, final Map<Integer, Integer> sinceRound) throws Exception {
        return p.commands().submit(q -> read(q, System.nanoTime(), sinceRound)).get(5, TimeUnit.SECONDS);
    }
}
