package io.serene.dataplane;

import io.serene.protocol.Counters;
import io.serene.protocol.Flags;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.Status;
import io.serene.protocol.sync.StepLayout;

/**
 * Job lifecycle and membership, on the switch thread: a JOIN creates the job (from the context's
 * start configs and worker groups) or joins a worker to it and answers with the switch's limits
 * and the worker's config list; LEAVE frees the job once no worker is joined; CONFIG_REQUEST and
 * table changes send config lists. With a secret, every packet here passed {@link SwitchAuth} (its
 * worker's MAC, a number new to its window) and every packet sent is signed; a worker joined from one
 * address may join again from another only then (a new incarnation); without one, never.
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
    private final SwitchAuth auth;
    /** Where a new job's entries are written. */
    private final SwitchTables tables;

    JobLifecycle(final SwitchContext context, final SwitchMemory memory, final Counters<SwitchCounter> counters,
                 final JobTable jobTable, final JobRegisters jobs, final GroupTable groups, final ConfigTable configs,
                 final SlotPool slots, final ReleaseRing releases, final TimeoutScanner scanner, final Deparser deparser,
                 final SwitchAuth auth, final SwitchTables tables) {
        this.tables = tables;
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
        this.auth = auth;
    }

    /** Signs the packet composed for job index j (MISSING: a job this switch does not have) and sends it. */
    private void send(final int j, final int port, final int length, final Outbox outbox) {
        auth.seal(deparser.buffer(), length, j);
        outbox.send(port, deparser.buffer(), 0, length);
        counters.increment(SwitchCounter.PACKETS_OUT);
    }

    void onJoin(final JoinPacket in, final int port, final long nowNs, final Outbox outbox) {
        counters.increment(SwitchCounter.JOINS);
        final int job = in.jobId();
        final int worker = in.workerId();
        final int workers = in.workerCount();
        final int elements = in.elementsPerRound();
        int j = jobTable.get(job);
        if (workers < 1 || workers > maxWorkers || worker >= workers || elements < 1) {
            refuseJoin(in, j, port, Status.BAD_KEY, outbox);
            return;
        }
        if (j != JobTable.MISSING && in.incarnation() < jobs.incarnation[jobs.worker(j, worker)]) {
            // a newer incarnation of this worker (restarted) joined since: this one, a stopped process resumed or a
            // JOIN from an old socket delayed, may neither take the worker's place back nor rebuild the job
            counters.increment(SwitchCounter.JOINS_FENCED);
            refuseJoin(in, j, port, Status.FENCED, outbox);
            return;
        }
        final boolean rebuild = in.hasFlag(Flags.REBUILD);
        int rebuiltFrom = -1;
        if (j != JobTable.MISSING && rebuild && !jobs.forming[j] && !jobs.joinedFrom(j, worker, port)) {
            // a worker back from a checkpoint (restarted, on a new address) rebuilds the job: its rounds in flight are
            // dropped, the others learn it from UNKNOWN_JOB and join again; only a worker with its key may
            if (!auth.keyed()) {
                refuseJoin(in, j, port, Status.IN_USE, outbox);
                return;
            }
            free(j);
            counters.increment(SwitchCounter.JOBS_REBUILT);
            rebuiltFrom = j;
            j = JobTable.MISSING;
        }
        if (j == JobTable.MISSING) {
            if (!SwitchTables.setupFits(context, setupGroups, workers)) {
                refuseJoin(in, j, port, Status.BAD_KEY, outbox);
                return;
            }
            j = allocateJob(job, workers, elements, nowNs, rebuiltFrom);
            if (j == JobTable.MISSING) {
                refuseJoin(in, j, port, Status.TABLE_FULL, outbox);
                return;
            }
            jobs.forming[j] = rebuild;
            jobs.initiator[j] = rebuild ? worker : -1;
        } else if (jobs.workers[j] != workers || jobs.elementsPerRound[j] != elements) {
            refuseJoin(in, j, port, Status.SHAPE_MISMATCH, outbox);
            return;
        } else if (jobs.joinedElsewhere(j, worker, port)) {
            if (!auth.keyed()) {
                // a worker is bound to the address it joined from: without a secret, nobody can prove to be it
                refuseJoin(in, j, port, Status.IN_USE, outbox);
                return;
            }
            // the worker's MAC proves its key: its new incarnation (a restart, a new address) takes its place
            counters.increment(SwitchCounter.REBINDS);
        }
        jobs.join(j, worker, port);
        auth.joined(j, worker, in);
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
                send(j, port, deparser.joinAck(job, worker, Status.PENDING, workers, elements, ring, maxWorkers, 0,
                    in.packetNumber()), outbox);
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
        send(j, port, deparser.joinAck(jobs.id[j], worker, Status.OK, jobs.workers[j], jobs.elementsPerRound[j], ring,
            maxWorkers, jobs.firstRound[j], auth.joinNumber(j, worker)), outbox);
        sendConfigs(j, worker, port, outbox);
    }

    /**
     * The job index of a packet naming a known job (j: its index as the job table has it, MISSING if
     * none) and a worker it has, from the address that worker joined from (if it joined); else
     * MISSING, the drop counted. A packet of a job this switch does
     * not have (it restarted, or the job's lease ran out) is answered UNKNOWN_JOB, so its worker stops
     * at once instead of waiting out its timeout (with a secret, it passed its worker's MAC already).
     */
    int jobOf(final Packet<?> in, final int j, final int port, final long nowNs, final Outbox outbox) {
        if (j == JobTable.MISSING) {
            counters.increment(SwitchCounter.DROP_UNKNOWN_JOB);
            send(j, port, deparser.nack(in, Status.UNKNOWN_JOB), outbox);
            return JobTable.MISSING;
        }
        if (jobs.forming[j]) {
            // the job is being rebuilt: the round this packet belongs to is gone; its worker joins again
            counters.increment(SwitchCounter.DROP_UNKNOWN_JOB);
            send(j, port, deparser.nack(in, Status.UNKNOWN_JOB), outbox);
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

    void onConfigRequest(final Packet<?> in, final int job, final int port, final long nowNs, final Outbox outbox) {
        final int j = jobOf(in, job, port, nowNs, outbox);
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
            send(j, port, deparser.config(configs, groups, jobs.id[j], jobs.epoch[j], l, configs.at(l, i), i, entries), outbox);
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

    /**
     * A packet of job index j signed with its worker's key but numbered below that worker's window: from an
     * address the worker no longer joins from, an older incarnation (a stopped process resumed after its
     * replacement joined) or a replay, answered FENCED so the former stops at once; from its own address,
     * nothing (a packet delayed past the window).
     */
    void onStaleNumber(final Packet<?> in, final int j, final int port, final Outbox outbox) {
        if (jobs.joinedElsewhere(j, in.workerId(), port)) {
            send(j, port, deparser.nack(in, Status.FENCED), outbox);
        }
    }

    /** Refuses a JOIN (j: its job's index, MISSING if none), answering with the status. */
    void refuseJoin(final JoinPacket in, final int j, final int port, final Status status, final Outbox outbox) {
        counters.increment(SwitchCounter.JOIN_REFUSED);
        send(j, port, deparser.joinAck(in.jobId(), in.workerId(), status, in.workerCount(), in.elementsPerRound(), ring, maxWorkers,
            0, in.packetNumber()), outbox);
    }

    /** A new job's registers ({@code rebuiltFrom}: the index the job had before a rebuild, whose replay windows it keeps; -1: none). */
    private int allocateJob(final int job, final int workers, final int elements, final long nowNs, final int rebuiltFrom) {
        for (int j = 0; j < maxJobs; j++) {
            if (!jobs.active[j]) {
                jobs.reset(j, job, workers, elements, StepLayout.chunks(elements, chunkElements));
                auth.install(j, job, workers, rebuiltFrom);
                releases.reset(j, nowNs);
                // the context's worker groups (default: all in group 0), each group's list starting with its start config
                tables.startJob(j, workers);
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
        if (j != JobTable.MISSING && worker < jobs.workers[j] && jobs.joinedElsewhere(j, worker, port)) {
            // only the worker itself may leave
            counters.increment(SwitchCounter.DROP_FOREIGN_PORT);
            return;
        }
        if (j != JobTable.MISSING && worker < jobs.workers[j] && jobs.leave(j, worker)) {
            free(j);
            counters.increment(SwitchCounter.JOBS_FREED);
        }
        send(j, port, deparser.leaveAck(in), outbox);
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
