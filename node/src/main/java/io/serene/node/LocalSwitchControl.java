package io.serene.node;

import io.serene.controlplane.Controller;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.Status;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;

import java.util.function.Consumer;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * A controller's switch in this process: its reads and writes run where the switch's state may be
 * touched ({@link OnSwitch}: on the switch's thread through its command queue, or directly in virtual
 * time), with the run's rounds translated to the job's (a job rebuilt from checkpoints counts from the
 * round it went on after, {@code base}). The other way to a switch is {@link RemoteSwitchControl}.
 */
public final class LocalSwitchControl implements Controller.SwitchControl {
    /** Runs a read or write of the switch where its state may be touched. */
    @FunctionalInterface
    public interface OnSwitch {
        <T> T call(Supplier<T> work);
    }

    private final SwitchPipeline pipeline;
    private final int job;
    private final IntSupplier base;
    private final OnSwitch onSwitch;
    private final Consumer<TableWrite> written;

    /** {@code written} (may be null) hears every write the switch took, in the job's rounds. */
    public LocalSwitchControl(final SwitchPipeline pipeline, final int job, final IntSupplier base, final OnSwitch onSwitch,
                              final Consumer<TableWrite> written) {
        this.pipeline = pipeline;
        this.job = job;
        this.base = base;
        this.onSwitch = onSwitch;
        this.written = written;
    }

    @Override
    public int earliestSwapRound() {
        return base.getAsInt() + onSwitch.call(() -> pipeline.earliestSwapRound(job));
    }

    @Override
    public Status write(final TableWrite write) {
        final TableWrite onJob = inJobRounds(write, base.getAsInt());
        final Status status = onSwitch.call(() -> pipeline.write(onJob));
        if (status == Status.OK && written != null) {
            written.accept(onJob);
        }
        return status;
    }

    /** A write in the run's rounds as the job counts them, from {@code base} on. */
    static TableWrite inJobRounds(final TableWrite write, final int base) {
        return base == 0 || !(write.entry() instanceof SyncConfigEntry e) ? write : write.atFirstRound(e.firstRound() - base);
    }
}
