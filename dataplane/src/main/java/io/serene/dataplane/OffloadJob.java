package io.serene.dataplane;

import java.util.List;

/**
 * What a data plane below the Java pipeline needs of one job to take over its DATA path
 * ({@link JobMirror#job}): the job's shape, its keys, its members and their ports, and its config
 * list (group 0, oldest entry first, each resolved to a count and a required set). {@code unsupported}
 * names what that list asks for that a release rule of required set and quorum alone cannot do
 * (several worker groups), or is null.
 *
 * @param index the job's place in the switch's tables
 * @param workerKeys per worker: its key (k0, k1), or zeros without a secret
 * @param joinNumbers per worker: the number of its last JOIN (its DATA numbers come after)
 * @param ports per worker: the transport port it joined from, -1 if not joined
 * @param sweepNs how often the timeout scanner sweeps the job's slots (TimeoutScanner's rule for its smallest timeout),
 *                or {@link io.serene.protocol.sync.SyncConfig#NO_TIMEOUT}: no entry has one
 */
public record OffloadJob(int index, int id, int workers, int elements, int chunks, int stepsPerRound,
                         long replyK0, long replyK1, int epoch, long[] joined, long[][] workerKeys, long[] joinNumbers,
                         int[] ports, List<Entry> entries, long sweepNs, String unsupported) {

    /** One config entry as the release rule reads it: from {@code firstRound}, bound, quorum (a count), timeout (ns, or
     * {@link io.serene.protocol.sync.SyncConfig#NO_TIMEOUT}), PSP's sample size (0: none), required workers. */
    public record Entry(int firstRound, int bound, int quorum, long timeoutNs, int sample, long[] required) {
    }
}
