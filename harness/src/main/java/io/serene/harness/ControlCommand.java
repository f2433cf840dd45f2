package io.serene.harness;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.serene.controlplane.rpc.ConfigEntry;
import io.serene.controlplane.rpc.CountersRequest;
import io.serene.controlplane.rpc.InstallConfigReply;
import io.serene.controlplane.rpc.InstallConfigRequest;
import io.serene.controlplane.rpc.JobRequest;
import io.serene.controlplane.rpc.JobState;
import io.serene.controlplane.rpc.SwitchControlGrpc;
import io.serene.controlplane.rpc.WatchRequest;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** {@code serene control}: reads and hot-swaps a running switch's sync configs over gRPC. */
@Command(name = "control", mixinStandardHelpOptions = true,
    description = "Talks to a switch started with --control-port: show a job, watch it, install a sync config, read counters.",
    subcommands = {ControlCommand.Show.class, ControlCommand.Watch.class, ControlCommand.Install.class, ControlCommand.CountersCmd.class})
public final class ControlCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** Options every subcommand shares. */
    static class Target {
        @Option(names = "--switch", defaultValue = "127.0.0.1:7001",
            description = "The switch's control address HOST:PORT. Default: ${DEFAULT-VALUE}.")
        String address;

        @Option(names = "--job", defaultValue = "1", description = "Job id. Default: ${DEFAULT-VALUE}.")
        int job;

        ManagedChannel channel() {
            final int colon = address.lastIndexOf(':');
            if (colon <= 0 || colon == address.length() - 1) {
                throw new IllegalArgumentException("--switch must be HOST:PORT, was '" + address + "'");
            }
            final int port;
            try {
                port = Integer.parseInt(address.substring(colon + 1));
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("--switch port is not a number: '" + address + "'");
            }
            return NettyChannelBuilder.forAddress(address.substring(0, colon), port).usePlaintext().build();
        }

        /** Runs a call; an RPC error becomes a one-line message with the switch's reason. */
        <T> T call(final java.util.function.Function<SwitchControlGrpc.SwitchControlBlockingStub, T> rpc) {
            final ManagedChannel channel = channel();
            try {
                return rpc.apply(SwitchControlGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS));
            } catch (final StatusRuntimeException ex) {
                throw failure(address, ex);
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /** An RPC error as one line with the switch's reason (and a hint when nothing answers). */
    static IllegalStateException failure(final String address, final StatusRuntimeException ex) {
        final io.grpc.Status status = ex.getStatus();
        return new IllegalStateException(address + ": " + status.getCode()
            + (status.getDescription() != null ? ": " + status.getDescription() : "")
            + (status.getCode() == io.grpc.Status.Code.UNAVAILABLE
                ? " (is a switch running there with --control-port?)" : ""));
    }

    /** One job's registers and config table as text. */
    static String format(final JobState s) {
        final StringBuilder sb = new StringBuilder();
        sb.append("job ").append(s.getJob()).append(": R=").append(s.getReleasedRound()).append(" epoch=").append(s.getEpoch())
            .append(" earliest swap round=").append(s.getEarliestSwapRound()).append(" clocks=").append(s.getClocksList());
        for (final ConfigEntry e : s.getEntriesList()) {
            sb.append(System.lineSeparator()).append("  from round ").append(e.getFirstRound()).append(": ").append(e.getRule());
        }
        return sb.toString();
    }

    @Command(name = "show", mixinStandardHelpOptions = true, description = "Prints the job's R, clocks, epoch and config table.")
    static final class Show extends Target implements Callable<Integer> {
        @Override
        public Integer call() {
            System.out.println(format(call(stub -> stub.readJob(JobRequest.newBuilder().setJob(job).build()))));
            return 0;
        }
    }

    @Command(name = "counters", mixinStandardHelpOptions = true, description = "Prints the switch's counters.")
    static final class CountersCmd extends Target implements Callable<Integer> {
        @Override
        public Integer call() {
            final Map<String, Long> values = new TreeMap<>(call(stub -> stub.readCounters(CountersRequest.getDefaultInstance()))
                .getValuesMap());
            values.forEach((k, v) -> System.out.println(k + " " + v));
            return 0;
        }
    }

    @Command(name = "install", mixinStandardHelpOptions = true,
        description = "Hot-swaps the job to CONFIG (docs/sync.md) from --first-round, by default the earliest safe round.")
    static final class Install extends Target implements Callable<Integer> {
        @Parameters(paramLabel = "CONFIG", description = "e.g. bsp, ssp:3, fastest:14+timeout:50, bsp+exclude:2")
        String config;

        @Option(names = "--first-round", defaultValue = "-1",
            description = "First round of the new config; -1: the earliest safe round. Default: ${DEFAULT-VALUE}.")
        int firstRound;

        @Override
        public Integer call() {
            final InstallConfigReply reply = call(stub -> stub.installConfig(InstallConfigRequest.newBuilder().setJob(job)
                .setFirstRound(firstRound).setConfig(config).build()));
            System.out.println("job " + job + ": " + config + " from round " + reply.getFirstRound() + " (epoch " + reply.getEpoch() + ")");
            return 0;
        }
    }

    @Command(name = "watch", mixinStandardHelpOptions = true, description = "Prints the job's state every interval until Ctrl-C "
        + "(or --count states).")
    static final class Watch extends Target implements Callable<Integer> {
        @Option(names = "--interval-ms", defaultValue = "1000", description = "Interval. Default: ${DEFAULT-VALUE}.")
        int intervalMs;

        @Option(names = "--count", defaultValue = "0", description = "Stop after N states (0: never). Default: ${DEFAULT-VALUE}.")
        int count;

        @Override
        public Integer call() {
            if (intervalMs <= 0) {
                throw new IllegalArgumentException("--interval-ms must be positive, was " + intervalMs);
            }
            final ManagedChannel channel = channel();
            try {
                final Iterator<JobState> states = SwitchControlGrpc.newBlockingStub(channel)
                    .watchJob(WatchRequest.newBuilder().setJob(job).setIntervalMs(intervalMs).build());
                int n = 0;
                while (states.hasNext() && (count == 0 || n < count)) {
                    System.out.println(format(states.next()));
                    System.out.flush();
                    n++;
                }
                return 0;
            } catch (final StatusRuntimeException ex) {
                throw failure(address, ex);
            } finally {
                channel.shutdownNow();
            }
        }
    }
}
