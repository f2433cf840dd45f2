package io.serene.controlplane;

/** Where a {@link ControlLoop} reads a job's telemetry: the switch in-process, or a remote one over the control service. */
public interface TelemetrySource {
    /** The job's telemetry now; null once the job is gone. */
    TelemetrySample sample() throws Exception;
}
