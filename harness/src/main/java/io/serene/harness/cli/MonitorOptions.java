package io.serene.harness.cli;

import io.serene.node.Ports;
import io.serene.node.SilenceWatch;
import io.serene.node.StallWatch;
import picocli.CommandLine.Option;

/** The options {@code serene switch} and {@code serene train} share for watching the switch: /metrics and stall reports. */
final class MonitorOptions {
    @Option(names = "--metrics-port", defaultValue = "-1", description = "TCP port serving Prometheus metrics at /metrics (counters, "
        + "per-job R and stalls, per-worker clock and lag, round times; docs/observability.md); 0: any free port; -1: none. "
        + "Default: ${DEFAULT-VALUE}.")
    int metricsPort;

    @Option(names = "--stall-seconds", defaultValue = StallWatch.DEFAULT, description = "Report a round that waits longer than this, "
        + "naming the workers it waits for (log, metrics, serene control show, train's progress line); 0: never. "
        + "Default: ${DEFAULT-VALUE}.")
    double stallSeconds;

    @Option(names = "--silence-rounds", defaultValue = SilenceWatch.DEFAULT, description = "Report a worker silent (failed or "
        + "stopped?) once it has not contributed for this many typical round times (at least 1 s) while its job needs it or "
        + "goes on without it; 0: never. Default: ${DEFAULT-VALUE}.")
    double silenceRounds;

    /** The port, checked. */
    int metricsPort() {
        return Ports.optional("--metrics-port", metricsPort);
    }

    /** The failure detector (its constructor checks the setting). */
    SilenceWatch silence() {
        return new SilenceWatch(silenceRounds);
    }

    /** The stall watch (its constructor checks the threshold). */
    StallWatch stalls() {
        return new StallWatch(stallSeconds);
    }
}
