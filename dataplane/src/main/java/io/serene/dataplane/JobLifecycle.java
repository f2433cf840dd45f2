package io.serene.dataplane;

import io.serene.dataplane.state.ConfigTable;
import io.serene.dataplane.state.GroupTable;
import io.serene.dataplane.state.JobRegisters;
import io.serene.dataplane.state.JobTable;
import io.serene.dataplane.state.ReleaseRing;
import io.serene.dataplane.state.SlotPool;
import io.serene.protocol.Counters;
import io.serene.protocol.Flags;
import io.serene.protocol.JobTag;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.Status;
import io.serene.protocol.sync.StepLayout;

/**
 * Job lifecycle and membership, on the switch thread: a JOIN creates the job (from the context's
 * start configs and worker groups) or joins a worker to it and answers with the switch's limits
 * and the worker's config list; LEAVE frees the job once no worker is joined; CONFIG_REQUEST and
 * table changes send config lists. Every packet of a job must carry its tag ({@link JobTag}: derived
 * from the switch's secret if it has one, else the tag of the JOIN that created the job); a worker
 * joined from one address may join again from another only with the tag (a new incarnation).
 */
final class JobLifecycle {
    private final SwitchContext context;
    private final Counters<SwitchCounter> counters;
    private final JobTable jobTable;
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final SlotPool slots;
    private final ReleaseRing releases;
    private final TimeoutScanner scanner;
    private final Deparser deparser;
    private final int[] setupGroups;
    private final int maxJobs;
    private final int maxWorkers;
    private final int chunkElements;
    private final int words;
    private final int ring;
    private final byte[] secret;
    private final JobTag.Tagger tagger;

    JobLifecycle(final SwitchContext context, final SwitchMemory memory, final Counters<SwitchCounter> counters,
                 final JobTable jobTable, final JobRegisters jobs, final GroupTable groups, final ConfigTable configs,
                 final SlotPool slots, final ReleaseRing releases, final TimeoutScanner scanner, final Deparser deparser) {
        this.context = context;
        this.counters = counters;
        this.jobTable = jobTable;
        this.jobs = jobs;
        this.groups = groups;
        this.configs = configs;
        this.slots = slots;
        this.releases = releases;
        this.scanner = scanner;
        this.deparser = deparser;
        this.setupGroups = context.defaultGroups();
        this.maxJobs = memory.maxJobs();
        this.maxWorkers = memory.maxWorkers();
        this.chunkElements = memory.chunkElements();
        this.words = memory.bitmapWords();
        this.ring = memory.roundRing();
        this.secret = context.secret();
        this.tagger = secret == null ? null : new JobTag.Tagger(secret);
    }

    private void send(final int port, final int length, final Outbox outbox) {
        outbox.send(port, deparser.buffer(), 0, length);
        counters.increment(SwitchCounter.PACKETS_OUT);
    }

    void onJoin(final JoinPacket in, final int port, final long nowNs, final Outbox outbox) {
        counters.increment(SwitchCounter.JOINS);
        final int job = in.jobId();
        final int worker = in.workerId();
        final int workers = in.workerCount();
        final int elements = in.elementsPerRound();
        if (workers < 1 || workers > maxWorkers || worker >= workers || elements < 1) {
            refuseJoin(in, port, Status.BAD_KEY, outbox);
            return;
        }
        int j = jobTable.get(job);
        final long tag = j == JobTable.MISSING ? (tagger == null ? in.tag() : tagger.tag(job)) : jobs.tag[j];
        if (in.tag() != tag) {
            counters.increment(SwitchCounter.DROP_BAD_TAG);
            refuseJoin(in, port, Status.BAD_TAG, outbox);
            return;
        }
        if (j != JobTable.MISSING && in.incarnation() < jobs.incarnation[jobs.worker(j, worker)]) {
            // a newer incarnation of this worker (restarted) joined since: this one, a stopped process resumed or a
            // JOIN from an old socket delayed, may neither take the worker's place back nor rebuild the job
            counters.increment(SwitchCounter.JOINS_FENCED);
            refuseJoin(in, port, Status.FENCED, outbox);
            return;
        }
        final boolean rebuild = in.hasFlag(Flags.REBUILD);
        if (j != JobTable.MISSING && rebuild && !jobs.forming[j] && !jobs.joinedFrom(j, worker, port)) {
            // a worker back from a checkpoint (restarted, on a new address) rebuilds the job: its rounds in flight are
            // dropped, the others learn it from UNKNOWN_JOB and join again; only a holder of the job's secret may
            if (tag == JobTag.NONE) {
                refuseJoin(in, port, Status.IN_USE, outbox);
                return;
            }
            free(j);
            counters.increment(SwitchCounter.JOBS_REBUILT);
            j = JobTable.MISSING;
        }
        if (j == JobTable.MISSING) {
            if (!SwitchTables.setupFits(context, setupGroups, workers)) {
                refuseJoin(in, port, Status.BAD_KEY, outbox);
                return;
            }
            j = allocateJob(job, tag, workers, elements, nowNs);
            if (j == JobTable.MISSING) {
                refuseJoin(in, port, Status.TABLE_FULL, outbox);
                return;
            }
            jobs.forming[j] = rebuild;
            jobs.initiator[j] = rebuild ? worker : -1;
        } else if (jobs.workers[j] != workers || jobs.elementsPerRound[j] != elements) {
            refuseJoin(in, port, Status.SHAPE_MISMATCH, outbox);
            return;
        } else if (jobs.joinedElsewhere(j, worker, port)) {
            if (tag == JobTag.NONE) {
                // a worker is bound to the address it joined from: without a secret, nobody can prove to be it
                refuseJoin(in, port, Status.IN_USE, outbox);
                return;
            }
            // the job's tag proves the secret: the worker's new incarnation (a restart, a new address) takes its place
            counters.increment(SwitchCounter.REBINDS);
        }
        jobs.join(j, worker, port);
        jobs.incarnation[jobs.worker(j, worker)] = in.incarnation();
        jobs.lastHeardNs[j] = nowNs;
        if (jobs.forming[j]) {
            for (int i = 0; i < JoinPacket.MAX_OFFERS; i++) {
                jobs.offer(j, worker, i, rebuild ? in.offer(i) : -1);
            }
            if (worker == jobs.initiator[j]) {
                jobs.initiatorJoins[j]++;
            }
            // the job forms once every worker is in and the worker that began it joined again since: its first
            // offers were read before the others stopped (they go on until they hear the job is gone), so they
            // may all be older than every checkpoint the others still keep; its retry's are read after
            if (!jobs.allJoined(j) || jobs.initiatorJoins[j] < 2) {
                send(port, deparser.joinAck(job, tag, worker, Status.PENDING, workers, elements, ring, maxWorkers, 0), outbox);
                return;
            }
            // every worker is in: the job goes on after the most rounds all of them can go on after
            jobs.firstRound[j] = jobs.commonOffer(j);
            jobs.forming[j] = false;
            // the workers told PENDING hear it now, not at their next retry: the rounds the others release
            // meanwhile are multicast to them too, and a worker still joining drops what it receives
            for (int w = 0; w < workers; w++) {
                if (w != worker) {
                    acceptJoin(j, w, jobs.workerPort[jobs.worker(j, w)], outbox);
                }
            }
        }
        acceptJoin(j, worker, port, outbox);
    }

    /** Answers a worker of job j that it is in: the JOIN_ACK (with the job's first round), then its group's config list. */
    private void acceptJoin(final int j, final int worker, final int port, final Outbox outbox) {
        send(port, deparser.joinAck(jobs.id[j], jobs.tag[j], worker, Status.OK, jobs.workers[j], jobs.elementsPerRound[j], ring,
            maxWorkers, jobs.firstRound[j]), outbox);
        sendConfigs(j, worker, port, outbox);
    }

    /**
     * The job index of a packet naming a known job and a worker it has, from the address that worker
     * joined from (if it joined); else MISSING, the drop counted. A packet of a job this switch does
     * not have (it restarted, or the job's lease ran out) is answered UNKNOWN_JOB, so its worker stops
     * at once instead of waiting out its timeout: when the packet carries the job's tag (with a secret;
     * without one, always).
     */
    int jobOf(final Packet<?> in, final int port, final long nowNs, final Outbox outbox) {
        final int j = jobTable.get(in.jobId());
        if (j == JobTable.MISSING) {
            counters.increment(SwitchCounter.DROP_UNKNOWN_JOB);
            if (tagger == null || in.tag() == tagger.tag(in.jobId())) {
                send(port, deparser.nack(in, Status.UNKNOWN_JOB), outbox);
            }
            return JobTable.MISSING;
        }
        if (in.tag() != jobs.tag[j]) {
            counters.increment(SwitchCounter.DROP_BAD_TAG);
            return JobTable.MISSING;
        }
        if (jobs.forming[j]) {
            // the job is being rebuilt: the round this packet belongs to is gone; its worker joins again
            counters.increment(SwitchCounter.DROP_UNKNOWN_JOB);
            send(port, deparser.nack(in, Status.UNKNOWN_JOB), outbox);
            return JobTable.MISSING;
        }
        if (in.workerId() >= jobs.workers[j]) {
            counters.increment(SwitchCounter.DROP_BAD_WORKER);
            return JobTable.MISSING;
        }
        if (jobs.joinedElsewhere(j, in.workerId(), port)) {
            counters.increment(SwitchCounter.DROP_FOREIGN_PORT);
            return JobTable.MISSING;
        }
        if (jobs.isJoined(j, in.workerId())) {
            jobs.lastHeardNs[j] = nowNs;
        }
        return j;
    }

    void onConfigRequest(final Packet<?> in, final int port, final long nowNs, final Outbox outbox) {
        final int j = jobOf(in, port, nowNs, outbox);
        if (j == JobTable.MISSING) {
            return;
        }
        final int worker = in.workerId();
        counters.increment(SwitchCounter.CONFIG_REQUESTS);
        sendConfigs(j, worker, port, outbox);
    }

    /** Sends every entry of the worker's group's config list to one port (the worker's). */
    private void sendConfigs(final int j, final int worker, final int port, final Outbox outbox) {
        final int l = ConfigTable.list(j, groups.of(j, worker));
        final int entries = configs.entries(l);
        for (int i = 0; i < entries; i++) {
            send(port, deparser.config(configs, groups, jobs.id[j], jobs.tag[j], jobs.epoch[j], l, configs.at(l, i), i, entries), outbox);
        }
    }

    /** Multicasts the config tables changed since the last call to every joined worker. */
    void announceConfigs(final Outbox outbox) {
        for (int j = 0; j < maxJobs; j++) {
            if (!jobs.active[j] || !jobs.configDirty[j]) {
                continue;
            }
            jobs.configDirty[j] = false;
            for (int w = 0; w < words; w++) {
                long joined = jobs.joined[j * words + w];
                while (joined != 0) {
                    final int worker = (w << 6) + Long.numberOfTrailingZeros(joined);
                    joined &= joined - 1;
                    sendConfigs(j, worker, jobs.workerPort[jobs.worker(j, worker)], outbox);
                }
            }
        }
    }

    private void refuseJoin(final JoinPacket in, final int port, final Status status, final Outbox outbox) {
        counters.increment(SwitchCounter.JOIN_REFUSED);
        send(port, deparser.joinAck(in.jobId(), in.tag(), in.workerId(), status, in.workerCount(), in.elementsPerRound(), ring, maxWorkers,
            0), outbox);
    }

    private int allocateJob(final int job, final long tag, final int workers, final int elements, final long nowNs) {
        for (int j = 0; j < maxJobs; j++) {
            if (!jobs.active[j]) {
                jobs.reset(j, job, tag, workers, elements, StepLayout.chunks(elements, chunkElements));
                releases.reset(j, nowNs);
                // the context's worker groups (default: all in group 0); each group's list starts
                // with its start config
                for (int g = 0; g < ConfigTable.GROUPS; g++) {
                    configs.reset(ConfigTable.list(j, g), context.groupSync(g), workers);
                }
                groups.reset(j, workers, setupGroups);
                scanner.update(configs);
                slots.clearJob(j);
                jobTable.put(job, j);
                counters.increment(SwitchCounter.JOBS_CREATED);
                return j;
            }
        }
        return JobTable.MISSING;
    }

    void onLeave(final Packet<?> in, final int port, final Outbox outbox) {
        counters.increment(SwitchCounter.LEAVES);
        final int j = jobTable.get(in.jobId());
        final int worker = in.workerId();
        if (j != JobTable.MISSING && in.tag() != jobs.tag[j]) {
            // only a holder of the job's secret may take a worker out of it
            counters.increment(SwitchCounter.DROP_BAD_TAG);
            return;
        }
        if (j != JobTable.MISSING && worker < jobs.workers[j] && jobs.joinedElsewhere(j, worker, port)) {
            // only the worker itself may leave
            counters.increment(SwitchCounter.DROP_FOREIGN_PORT);
            return;
        }
        if (j != JobTable.MISSING && worker < jobs.workers[j] && jobs.leave(j, worker)) {
            free(j);
            counters.increment(SwitchCounter.JOBS_FREED);
        }
        send(port, deparser.leaveAck(in), outbox);
    }

    /** Frees every job (a restart's loss of state). */
    void loseAll() {
        for (int j = 0; j < jobs.active.length; j++) {
            if (jobs.active[j]) {
                free(j);
            }
        }
    }

    private void free(final int j) {
        jobs.active[j] = false;
        jobTable.remove(jobs.id[j]);
    }

    /**
     * Frees the jobs whose lease ran out (no joined worker heard from for {@code leaseNs}); returns
     * when the next lease runs out, or {@link Long#MAX_VALUE} if none can (leases off, or no job).
     */
    long expire(final long nowNs, final long leaseNs) {
        if (leaseNs <= 0) {
            return Long.MAX_VALUE;
        }
        long next = Long.MAX_VALUE;
        for (int j = 0; j < jobs.active.length; j++) {
            if (!jobs.active[j]) {
                continue;
            }
            final long end = jobs.lastHeardNs[j] + leaseNs;
            if (nowNs >= end) {
                free(j);
                counters.increment(SwitchCounter.JOBS_EXPIRED);
            } else {
                next = Math.min(next, end);
            }
        }
        return next;
    }
}
