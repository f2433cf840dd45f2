package io.serene.node;

import io.serene.controlplane.Controller;
import io.serene.controlplane.FinishedRounds;
import io.serene.controlplane.TelemetrySample;
import io.serene.controlplane.rpc.JobRequest;
import io.serene.controlplane.rpc.JobState;
import io.serene.controlplane.rpc.SwitchControlGrpc;
import io.serene.controlplane.rpc.WriteReply;
import io.serene.controlplane.rpc.WriteRequest;
import io.serene.protocol.Status;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;

import java.util.BitSet;
import java.util.concurrent.TimeUnit;

/**
 * A controller's view of a switch reached through its control service: reads the job and writes
 * tables over gRPC, each write encoded by {@link TableWriteCodec}, as {@link SwitchControlService}
 * decodes it; and a job state read from the service as the controller's telemetry.
 */
public final class RemoteSwitchControl implements Controller.SwitchControl {
    private static final long DEADLINE_SECONDS = 10;
    private final SwitchControlGrpc.SwitchControlBlockingStub stub;
    private final int job;

    public RemoteSwitchControl(final SwitchControlGrpc.SwitchControlBlockingStub stub, final int job) {
        this.stub = stub;
        this.job = job;
    }

    @Override
    public int earliestSwapRound() {
        return stub.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS).readJob(JobRequest.newBuilder().setJob(job).build())
            .getEarliestSwapRound();
    }

    /** The write through the service's Write call, answered with its result code. */
    @Override
    public Status write(final TableWrite write) {
        final WriteReply reply = stub.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
            .write(WriteRequest.newBuilder().setJob(job).addUpdates(TableWriteCodec.encode(write)).build());
        return Status.valueOf(reply.getResults(0));
    }

    /**
     * Puts every worker w in group {@code groupOf[w]} (insert, or modify if it has an entry); refused
     * (TOO_EARLY) once a worker of the job contributed, which fails with what to do instead.
     */
    public void writeGroups(final int[] groupOf) {
        for (int w = 0; w < groupOf.length; w++) {
            final WorkerGroupEntry entry = WorkerGroupEntry.builder().job(job).worker(w).group(groupOf[w]).build();
            Status result = write(TableWrite.insert(entry));
            if (result == Status.DUPLICATE_ENTRY) {
                result = write(TableWrite.modify(entry));
            }
            if (result != Status.OK) {
                throw new IllegalStateException("cannot put worker " + w + " in group " + groupOf[w] + ": " + result
                    + (result == Status.TOO_EARLY ? " (worker groups are fixed once a worker of the job contributed: apply the "
                        + "policy before the workers start their first round)" : ""));
            }
        }
    }

    /** A job state the service sent, as the controller's telemetry (its silent workers as failed). */
    public static TelemetrySample telemetry(final JobState s) {
        final BitSet failed = new BitSet();
        s.getSilentList().forEach(failed::set);
        return new TelemetrySample(s.getReleasedRound(), s.getReleasedAtNs(),
            s.getClocksList().stream().mapToInt(Integer::intValue).toArray(),
            s.getIterationNsList().stream().mapToLong(Long::longValue).toArray(),
            new FinishedRounds(s.getFinishedRoundList().stream().mapToInt(Integer::intValue).toArray(),
                s.getFinishedComputeNsList().stream().mapToLong(Long::longValue).toArray(),
                s.getFinishedOffsetNsList().stream().mapToLong(Long::longValue).toArray())).withFailed(failed);
    }
}
