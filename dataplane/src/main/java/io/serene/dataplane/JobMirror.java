package io.serene.dataplane;

import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.StepLayout;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The pipeline's side of a data plane below it that takes its jobs' DATA path (the XDP program):
 * each job's tables as they stand, to be written below, and the registers the data plane below
 * keeps (R, the lowest open step, the workers' clocks), written back here so telemetry, the stall
 * watch and hot-swap rounds read them as they would the Java path's. Switch thread only; allocates
 * (control path).
 */
public final class JobMirror {
    private final SwitchMemory memory;
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final ReleaseRing releases;
    private final SwitchAuth auth;

    JobMirror(final SwitchMemory memory, final JobRegisters jobs, final GroupTable groups, final ConfigTable configs,
              final ReleaseRing releases, final SwitchAuth auth) {
        this.memory = memory;
        this.jobs = jobs;
        this.groups = groups;
        this.configs = configs;
        this.releases = releases;
        this.auth = auth;
    }

    /** The switch's packets are numbered by {@code source} from now on: the data plane below's counter, which it numbers its own by. */
    public void numbersFrom(final LongSupplier source) {
        auth.numbersFrom(source);
    }

    /** Places in the job table. */
    public int places() {
        return jobs.active.length;
    }

    /** The job at place j, or null if the place is free or the job is still being formed. */
    public OffloadJob job(final int j) {
        if (!jobs.active[j] || jobs.forming[j]) {
            return null;
        }
        final int words = memory.bitmapWords();
        final int workers = jobs.workers[j];
        final long[][] keys = new long[workers][];
        final long[] joinNumbers = new long[workers];
        final int[] ports = new int[workers];
        for (int w = 0; w < workers; w++) {
            keys[w] = auth.workerKey(j, w);
            joinNumbers[w] = auth.joinNumber(j, w);
            ports[w] = jobs.isJoined(j, w) ? jobs.workerPort[jobs.worker(j, w)] : -1;
        }
        final long[] joined = new long[words];
        System.arraycopy(jobs.joined, j * words, joined, 0, words);
        final int l = ConfigTable.list(j, 0);
        final int m = groups.membersAt(j, 0);
        final List<OffloadJob.Entry> entries = new ArrayList<>();
        String unsupported = groups.single(j) ? null : "worker groups";
        long minTimeoutNs = SyncConfig.NO_TIMEOUT;
        for (int i = 0; i < configs.entries(l); i++) {
            final int e = configs.at(l, i);
            final long[] required = new long[words];
            for (int w = 0; w < words; w++) {
                required[w] = configs.requiredWord(l, e, w, groups.members, m);
            }
            entries.add(new OffloadJob.Entry(configs.firstRound(l, e), configs.bound(l, e), configs.quorum(l, e, groups.members, m),
                configs.timeoutNs(l, e), configs.sample(l, e), required));
            minTimeoutNs = Math.min(minTimeoutNs, configs.timeoutNs(l, e));
        }
        final long[] reply = auth.replyKey(j);
        return new OffloadJob(j, jobs.id[j], workers, jobs.elementsPerRound[j], jobs.chunksPerRound[j],
            StepLayout.stepsPerRound(jobs.elementsPerRound[j], memory.chunkElements(), memory.poolSize()),
            reply[0], reply[1], jobs.epoch[j], joined, keys, joinNumbers, ports, entries, TimeoutScanner.sweepNs(minTimeoutNs), unsupported);
    }

    /**
     * A job's registers as a data plane below keeps them: R, the lowest open step, and per worker its clock
     * and what {@link ArrivalRecorder} keeps (its newest round heard, its arrival offset there, its compute
     * time, and its last finished round with both).
     */
    public record Registers(int releasedRound, long openSeq, int[] clocks, int[] arrivalRound, long[] offsetNs, long[] iterationNs,
                            int[] finishedRound, long[] finishedComputeNs, long[] finishedOffsetNs, int newestRound) {
    }

    /**
     * The registers the data plane below keeps for the job at place j, read there: R moves up to its R
     * (each round passed now), the lowest open step and each worker's clock up to theirs; a worker's arrival
     * telemetry is taken where it heard of a newer round (reports still come to this pipeline), its offset
     * in the same round where larger. A value below this pipeline's own is left alone.
     */
    public void pulled(final int j, final Registers r, final long nowNs) {
        if (!jobs.active[j]) {
            return;
        }
        releases.passTo(j, r.releasedRound(), nowNs);
        // a hot-swap's round comes after every round the data plane below let open (JobRegisters.newestArrival)
        jobs.openedBelow[j] = Math.max(jobs.openedBelow[j], r.newestRound());
        jobs.openSeq[j] = Math.max(jobs.openSeq[j], r.openSeq());
        for (int w = 0; w < Math.min(r.clocks().length, jobs.workers[j]); w++) {
            final int i = jobs.worker(j, w);
            if (r.clocks()[w] > jobs.workerClock[i]) {
                jobs.workerClock[i] = r.clocks()[w];
                jobs.started[j] = true;
            }
            if (r.arrivalRound()[w] > jobs.arrivalRound[i]) {
                jobs.arrivalRound[i] = r.arrivalRound()[w];
                jobs.offsetNs[i] = r.offsetNs()[w];
                jobs.iterationNs[i] = r.iterationNs()[w];
                jobs.finishedRound[i] = r.finishedRound()[w];
                jobs.finishedComputeNs[i] = r.finishedComputeNs()[w];
                jobs.finishedOffsetNs[i] = r.finishedOffsetNs()[w];
            } else if (r.arrivalRound()[w] == jobs.arrivalRound[i]) {
                jobs.offsetNs[i] = Math.max(jobs.offsetNs[i], r.offsetNs()[w]);
            }
        }
    }
}
