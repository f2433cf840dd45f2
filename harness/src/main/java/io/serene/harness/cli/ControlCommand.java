package io.serene.harness.cli;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.serene.controlplane.ControlLoop;
import io.serene.controlplane.Controller;
import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyCompiler;
import io.serene.controlplane.TelemetrySample;
import io.serene.controlplane.rpc.ConfigEntry;
import io.serene.controlplane.rpc.CountersRequest;
import io.serene.controlplane.rpc.JobRequest;
import io.serene.controlplane.rpc.JobState;
import io.serene.controlplane.rpc.SchemaRequest;
import io.serene.controlplane.rpc.SwitchControlGrpc;
import io.serene.controlplane.rpc.Update;
import io.serene.controlplane.rpc.WatchRequest;
import io.serene.controlplane.rpc.WriteReply;
import io.serene.controlplane.rpc.WriteRequest;
import io.serene.worker.WorkerNode;
import io.serene.node.ControlAccess;
import io.serene.node.RemoteSwitchControl;
import io.serene.node.StallWatch;
import io.serene.node.SwitchControlService;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import javax.net.ssl.SSLException;

/** {@code serene control}: reads and hot-swaps a running switch's sync configs over gRPC. */
@Command(name = "control", mixinStandardHelpOptions = true,
    description = "Talks to a switch started with --control-port: show a job, watch it, install a sync config, read counters.",
    subcommands = {ControlCommand.Show.class, ControlCommand.Watch.class, ControlCommand.Install.class, ControlCommand.CountersCmd.class,
        ControlCommand.Apply.class, ControlCommand.Write.class, ControlCommand.Schema.class, ControlCommand.Health.class})
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

        @Option(names = "--token-file", description = "A file whose first line is the switch's control token "
            + "(serene switch --control-token-file); unset, SERENE_CONTROL_TOKEN.")
        Path tokenFile;

        @Option(names = "--tls-ca", description = "Connect with TLS, trusting this certificate (PEM): the switch's own, or its CA's.")
        Path tlsCa;

        ManagedChannel channel() {
            final InetSocketAddress target = WorkerNode.parseHostPort("--switch", address);
            final NettyChannelBuilder builder = NettyChannelBuilder.forAddress(target.getHostString(), target.getPort());
            if (tlsCa != null) {
                try {
                    builder.sslContext(GrpcSslContexts.forClient().trustManager(tlsCa.toFile()).build());
                } catch (final SSLException | IllegalArgumentException ex) {
                    throw new IllegalArgumentException("--tls-ca " + tlsCa + ": " + ex.getMessage(), ex);
                }
            } else {
                builder.usePlaintext();
            }
            final String token = tokenFile != null ? ControlAccess.readToken("--token-file", tokenFile) : System.getenv("SERENE_CONTROL_TOKEN");
            if (token != null && !token.isBlank()) {
                final Metadata headers = new Metadata();
                headers.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token.trim());
                builder.intercept(MetadataUtils.newAttachHeadersInterceptor(headers));
            }
            return builder.build();
        }

        /** Runs a call; an RPC error becomes a one-line message with the switch's reason. */
        <T> T call(final Function<SwitchControlGrpc.SwitchControlBlockingStub, T> rpc) {
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
        sb.append(" compute ms=[");
        for (int w = 0; w < s.getIterationNsCount(); w++) {
            sb.append(w == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.1f", s.getIterationNs(w) / 1e6));
        }
        sb.append("] finished rounds=").append(s.getFinishedRoundList()).append(" arrival offsets ms=[");
        for (int w = 0; w < s.getFinishedOffsetNsCount(); w++) {
            sb.append(w == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.1f", s.getFinishedOffsetNs(w) / 1e6));
        }
        sb.append(']');
        if (s.getWaitingForCount() > 0) {
            final double waited = Math.max(0, s.getTimeNs() - s.getWaitingSinceNs()) / 1e9;
            final BitSet waiting = new BitSet();
            s.getWaitingForList().forEach(waiting::set);
            sb.append(System.lineSeparator()).append(String.format(Locale.ROOT, "  round %d has waited %.1f s for %s%s",
                s.getReleasedRound() + 1, waited, StallWatch.workers(waiting),
                s.getStalled() ? " (STALLED)" : ""));
        }
        if (s.getSilentCount() > 0) {
            final BitSet silent = new BitSet();
            s.getSilentList().forEach(silent::set);
            sb.append(System.lineSeparator()).append("  silent: ").append(StallWatch.workers(silent)).append(" (failed or stopped?)");
        }
        final boolean grouped = s.getGroupsList().stream().anyMatch(g -> g != 0);
        if (grouped) {
            sb.append(" groups=").append(s.getGroupsList());
        }
        for (final ConfigEntry e : s.getEntriesList()) {
            sb.append(System.lineSeparator()).append(grouped ? "  group " + e.getGroup() + " from round " : "  from round ")
                .append(e.getFirstRound()).append(": ").append(e.getRule());
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

    @Command(name = "health", mixinStandardHelpOptions = true,
        description = "Asks the standard gRPC health service (grpc.health.v1) and prints its status; exit 0 only when SERVING.")
    static final class Health extends Target implements Callable<Integer> {
        @Option(names = "--service", defaultValue = "", description = "Service to ask about; empty: the whole server. "
            + "Default: the whole server.")
        String service;

        @Override
        public Integer call() {
            final ManagedChannel channel = channel();
            try {
                final HealthCheckResponse.ServingStatus status = HealthGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                    .check(HealthCheckRequest.newBuilder().setService(service).build()).getStatus();
                System.out.println(status);
                return status == HealthCheckResponse.ServingStatus.SERVING ? 0 : 1;
            } catch (final StatusRuntimeException ex) {
                throw failure(address, ex);
            } finally {
                channel.shutdownNow();
            }
        }
    }

    @Command(name = "schema", mixinStandardHelpOptions = true, description = "Prints the switch's tables, registers and counters.")
    static final class Schema extends Target implements Callable<Integer> {
        @Override
        public Integer call() {
            System.out.print(call(stub -> stub.readSchema(SchemaRequest.getDefaultInstance())).getText());
            return 0;
        }
    }

    @Command(name = "write", mixinStandardHelpOptions = true,
        description = {"Writes the job's sync_config and worker_group tables entry by entry, in order, and prints each result "
            + "code (OK, UNKNOWN_JOB, TOO_EARLY, DUPLICATE_ENTRY, NOT_FOUND, BAD_KEY, TABLE_FULL); exits 1 unless all are OK.",
            "sync_config: insert:ROUND=CONFIG, modify:ROUND=CONFIG, delete:ROUND, install:ROUND=CONFIG (the hot-swap write: "
                + "replaces the entries from ROUND on) (group 0), or ROUND@GROUP for another group.",
            "worker_group (before the job's first contribution): group:WORKER=GROUP (insert), regroup:WORKER=GROUP (modify), "
                + "ungroup:WORKER (delete).",
            "Example: serene control write --job 1 insert:200=ssp:2 modify:200=ssp:3 delete:200 insert:200@1=fastest:1"})
    static final class Write extends Target implements Callable<Integer> {
        @Parameters(paramLabel = "UPDATE", arity = "1..*",
            description = "insert:ROUND[@GROUP]=CONFIG, modify:ROUND[@GROUP]=CONFIG, delete:ROUND[@GROUP], "
                + "install:ROUND[@GROUP]=CONFIG, group:WORKER=GROUP, regroup:WORKER=GROUP or ungroup:WORKER")
        List<String> updates;

        @Override
        public Integer call() {
            final WriteRequest.Builder request = WriteRequest.newBuilder().setJob(job);
            for (final String text : updates) {
                request.addUpdates(parse(text));
            }
            final WriteReply reply = call(stub -> stub.write(request.build()));
            boolean ok = true;
            for (int i = 0; i < updates.size(); i++) {
                final String result = reply.getResults(i);
                System.out.println(updates.get(i) + ": " + result);
                ok &= result.equals("OK");
            }
            System.out.println("job " + job + ": config epoch " + reply.getEpoch());
            return ok ? 0 : 1;
        }

        static Update parse(final String text) {
            final int colon = text.indexOf(':');
            final String kind = colon < 0 ? "" : text.substring(0, colon).toLowerCase(Locale.ROOT);
            final String rest = colon < 0 ? "" : text.substring(colon + 1);
            final int eq = rest.indexOf('=');
            if (kind.equals("group") || kind.equals("regroup") || kind.equals("ungroup")) {
                return parseGroup(text, kind, rest, eq);
            }
            final String key = eq < 0 ? rest : rest.substring(0, eq);
            final int at = key.indexOf('@');
            final String round = at < 0 ? key : key.substring(0, at);
            final Update.Builder u = Update.newBuilder();
            if (at >= 0) {
                u.setGroup(number(text, key.substring(at + 1), "a group number"));
            }
            switch (kind) {
                case "insert":
                    u.setKind(Update.Kind.INSERT);
                    break;
                case "modify":
                    u.setKind(Update.Kind.MODIFY);
                    break;
                case "delete":
                    u.setKind(Update.Kind.DELETE);
                    break;
                case "install":
                    u.setKind(Update.Kind.INSTALL);
                    break;
                default:
                    throw new IllegalArgumentException("bad update '" + text + "': expected insert:ROUND[@GROUP]=CONFIG, "
                        + "modify:ROUND[@GROUP]=CONFIG, delete:ROUND[@GROUP], install:ROUND[@GROUP]=CONFIG, group:WORKER=GROUP, "
                        + "regroup:WORKER=GROUP or ungroup:WORKER");
            }
            if ((kind.equals("delete") && eq >= 0) || (!kind.equals("delete") && (eq < 0 || eq == rest.length() - 1))) {
                throw new IllegalArgumentException("bad update '" + text + "': " + (kind.equals("delete")
                    ? "delete takes only a round" : kind + " needs =CONFIG"));
            }
            u.setFirstRound(number(text, round, "a round number"));
            if (eq >= 0) {
                u.setConfig(rest.substring(eq + 1));
            }
            return u.build();
        }

        private static Update parseGroup(final String text, final String kind, final String rest, final int eq) {
            final Update.Builder u = Update.newBuilder()
                .setTable(Update.Table.WORKER_GROUP);
            final boolean delete = kind.equals("ungroup");
            if (delete ? eq >= 0 : eq < 0 || eq == rest.length() - 1) {
                throw new IllegalArgumentException("bad update '" + text + "': " + (delete ? "ungroup takes only a worker"
                    : kind + " needs WORKER=GROUP"));
            }
            u.setKind(delete ? Update.Kind.DELETE
                : kind.equals("group") ? Update.Kind.INSERT : Update.Kind.MODIFY);
            u.setWorker(number(text, delete ? rest : rest.substring(0, eq), "a worker number"));
            if (!delete) {
                u.setGroup(number(text, rest.substring(eq + 1), "a group number"));
            }
            return u.build();
        }

        private static int number(final String text, final String value, final String what) {
            try {
                final int n = Integer.parseInt(value.trim());
                if (n < 0) {
                    throw new NumberFormatException();
                }
                return n;
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("bad update '" + text + "': '" + value + "' is not " + what);
            }
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

        @Option(names = "--group", defaultValue = "0",
            description = "The worker group whose entries change (worker_group; 0: every worker without an entry). "
                + "Default: ${DEFAULT-VALUE}.")
        int group;

        @Override
        public Integer call() {
            final WriteReply reply = call(stub -> stub.write(WriteRequest.newBuilder().setJob(job).addUpdates(Update.newBuilder()
                .setKind(Update.Kind.INSTALL).setTable(Update.Table.SYNC_CONFIG).setFirstRound(firstRound).setGroup(group)
                .setConfig(config)).build()));
            final String result = reply.getResults(0);
            final String what = (group == 0 ? "" : "group " + group + ": ") + config;
            switch (result) {
                case "OK":
                    System.out.println("job " + job + ": " + what + " from round " + reply.getFirstRounds(0) + " (epoch " + reply.getEpoch() + ")");
                    return 0;
                case "UNKNOWN_JOB":
                    System.out.println("refused: UNKNOWN_JOB: the switch has no job " + job);
                    return 1;
                case "BAD_KEY":
                    System.out.println("refused: BAD_KEY: " + what + " does not fit job " + job + (group < 0 || group > 3 ? " (groups are 0..3)" : ""));
                    return 1;
                case "TOO_EARLY":
                    System.out.println("refused: TOO_EARLY: round " + reply.getFirstRounds(0) + " is below the earliest the switch allows now; "
                        + "leave --first-round out for that one");
                    return 1;
                default:
                    System.out.println("refused: " + result);
                    return 1;
            }
        }
    }

    /** A watch's interval, at least the switch's floor ({@link SwitchControlService#MIN_WATCH_INTERVAL_MS}). */
    static void requireWatchInterval(final int intervalMs) {
        if (intervalMs < SwitchControlService.MIN_WATCH_INTERVAL_MS) {
            throw new IllegalArgumentException("--interval-ms must be at least " + SwitchControlService.MIN_WATCH_INTERVAL_MS
                + " (the switch's floor), was " + intervalMs);
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
            requireWatchInterval(intervalMs);
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

    @Command(name = "apply", mixinStandardHelpOptions = true,
        description = "Runs a policy's controller (docs/policy.md) against the job on a remote switch: installs the policy's "
            + "start config, then evaluates the rules on every observed advance of R and hot-swaps through the switch.")
    static final class Apply extends Target implements Callable<Integer> {
        @Parameters(paramLabel = "FILE", description = "Policy file.")
        Path file;

        @Option(names = "--interval-ms", defaultValue = "20", description = "How often the switch reports the job. Default: ${DEFAULT-VALUE}.")
        int intervalMs;

        @Option(names = "--until-round", defaultValue = "-1",
            description = "Stop once R reaches this round (-1: when the job ends or on Ctrl-C). Default: ${DEFAULT-VALUE}.")
        int untilRound;

        @Option(names = "--wait-seconds", defaultValue = "30", description = "How long to wait for the job to appear. Default: ${DEFAULT-VALUE}.")
        int waitSeconds;

        @Override
        public Integer call() throws Exception {
            final Policy policy = PolicyCommand.load(file);
            PolicyCompiler.requireSwitchTelemetry(policy, "against a remote switch");
            requireWatchInterval(intervalMs);
            final ManagedChannel channel = channel();
            try {
                final SwitchControlGrpc.SwitchControlBlockingStub stub = SwitchControlGrpc.newBlockingStub(channel);
                final JobState first = awaitJob(stub);
                final int workers = first.getClocksCount();
                final RemoteSwitchControl remote = new RemoteSwitchControl(stub, job);
                final Controller controller = new Controller(policy, job, workers, remote);
                if (!policy.groups().isEmpty()) {
                    remote.writeGroups(controller.groupOf());
                }
                final int from = remote.earliestSwapRound();
                // the start entries as the compiler writes them, the default group's first (the worker groups went in above)
                for (final TableWrite write : PolicyCompiler.startWrites(policy, job, workers, from)) {
                    if (write.entry() instanceof SyncConfigEntry entry) {
                        final int g = entry.group();
                        System.out.println((g == 0 ? "policy " + policy.name() + " on job " + job + " (" + workers + " workers)"
                            : "  group " + policy.groupName(g) + " (" + g + ")") + ": start " + entry.config() + " from round " + from
                            + " (" + remote.write(write) + ")");
                    }
                }
                System.out.flush();
                final Iterator<JobState> states = stub.watchJob(WatchRequest.newBuilder().setJob(job).setIntervalMs(intervalMs).build());
                final int[] lastR = {first.getReleasedRound()};
                final ControlLoop loop = new ControlLoop(controller, () -> {
                    if (!states.hasNext()) {
                        return null;
                    }
                    final JobState s = states.next();
                    lastR[0] = Math.max(lastR[0], s.getReleasedRound());
                    return RemoteSwitchControl.telemetry(s);
                });
                // the first reading starts the round-time clock; only rounds released after it are evaluated
                loop.start(new TelemetrySample(first.getReleasedRound(), first.getReleasedAtNs(), new int[0], new long[0]));
                try {
                    List<Controller.Decision> fresh;
                    while ((fresh = loop.poll()) != null) {
                        for (final Controller.Decision d : fresh) {
                            System.out.println(d);
                        }
                        System.out.flush();
                        if (untilRound >= 0 && lastR[0] >= untilRound) {
                            break;
                        }
                    }
                } catch (final StatusRuntimeException ex) {
                    if (ex.getStatus().getCode() != io.grpc.Status.Code.NOT_FOUND) {
                        throw failure(address, ex);
                    }
                    System.out.println("job " + job + " ended");
                }
                System.out.println("stopped at R=" + lastR[0] + ": " + controller.decisions().size() + " config changes");
                return 0;
            } catch (final StatusRuntimeException ex) {
                throw failure(address, ex);
            } finally {
                channel.shutdownNow();
            }
        }

        private JobState awaitJob(final SwitchControlGrpc.SwitchControlBlockingStub stub) throws InterruptedException {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(waitSeconds);
            boolean told = false;
            while (true) {
                try {
                    return stub.readJob(JobRequest.newBuilder().setJob(job).build());
                } catch (final StatusRuntimeException ex) {
                    if (ex.getStatus().getCode() != io.grpc.Status.Code.NOT_FOUND || System.nanoTime() > deadline) {
                        throw ex;
                    }
                    if (!told) {
                        System.out.println("waiting up to " + waitSeconds + " s for job " + job + " to join");
                        System.out.flush();
                        told = true;
                    }
                    Thread.sleep(100);
                }
            }
        }
    }
}
