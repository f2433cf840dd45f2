package io.serene.systemtests;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.grpc.stub.StreamObserver;
import io.serene.controlplane.rpc.JobState;
import io.serene.controlplane.rpc.SwitchControlGrpc;
import io.serene.controlplane.rpc.Update;
import io.serene.controlplane.rpc.WatchRequest;
import io.serene.controlplane.rpc.WriteRequest;
import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.node.ControlAccess;
import io.serene.node.ControlServer;
import io.serene.node.StallWatch;
import io.serene.node.SwitchControlService;
import io.serene.protocol.sync.SyncConfig;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerCounter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A switch with its gRPC control service and two UDP workers; {@code serene control} reads the
 * job, hot-swaps it from BSP to SSP while it trains, and is refused with a clear reason for bad
 * configs, unknown jobs and unsafe first rounds.
 */
class RemoteControlSystemTest {
    private static final int JOB = 9;



    @Test
    @Timeout(120)
    void theControlServiceIsBoundedWatchIntervalsStreamsAndUpdatesPerWrite() throws Exception {
        try (ControlledSwitch sw = new ControlledSwitch();
             WorkerHost worker = WorkerHost.start(new WorkerContext().jobId(JOB).workerId(0).workers(1).elementsPerRound(100),
                 sw.host.localAddress(), new InetSocketAddress("127.0.0.1", 0), sw.workerLoop, UdpOptions.defaults(), sw.errors::add)) {
            worker.joined().get(20, TimeUnit.SECONDS);
            final ControlServer server = ControlServer.start(sw.service, "127.0.0.1", 0);
            final ManagedChannel channel = NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
            try {
                final SwitchControlGrpc.SwitchControlStub async = SwitchControlGrpc.newStub(channel);
                final SwitchControlGrpc.SwitchControlBlockingStub blocking = SwitchControlGrpc.newBlockingStub(channel);
                // below the floor: refused, by the switch and by the CLI before it asks
                assertThatThrownBy(() -> blocking.watchJob(WatchRequest.newBuilder().setJob(JOB).setIntervalMs(5).build()).hasNext())
                    .hasMessageContaining("INVALID_ARGUMENT").hasMessageContaining("at least 10 ms");
                final Object[] r = InProcess.cli("control", "watch", "--count", "1", "--interval-ms", "5", "--switch", server.address(),
                    "--job", "" + JOB);
                assertThat(r[0]).isEqualTo(2);
                assertThat((String) r[1]).contains("--interval-ms must be at least 10");
                // the cap: the 17th stream open at once is refused; one closed makes room
                final List<CompletableFuture<Throwable>> ends = new ArrayList<>();
                final List<io.grpc.Context.CancellableContext> contexts = new ArrayList<>();
                for (int i = 0; i <= SwitchControlService.MAX_WATCH_STREAMS; i++) {
                    final CompletableFuture<Throwable> end = new CompletableFuture<>();
                    final CompletableFuture<Void> first = new CompletableFuture<>();
                    final io.grpc.Context.CancellableContext context = io.grpc.Context.current().withCancellation();
                    contexts.add(context);
                    context.run(() -> async.watchJob(WatchRequest.newBuilder().setJob(JOB).setIntervalMs(20).build(),
                        new StreamObserver<JobState>() {
                            @Override
                            public void onNext(final JobState value) {
                                first.complete(null);
                            }

                            @Override
                            public void onError(final Throwable t) {
                                first.complete(null);
                                end.complete(t);
                            }

                            @Override
                            public void onCompleted() {
                                end.complete(null);
                            }
                        }));
                    first.get(10, TimeUnit.SECONDS);
                    ends.add(end);
                }
                assertThat(ends.get(SwitchControlService.MAX_WATCH_STREAMS).get(10, TimeUnit.SECONDS))
                    .hasMessageContaining("RESOURCE_EXHAUSTED").hasMessageContaining("16 watch streams are open");
                for (int i = 0; i < SwitchControlService.MAX_WATCH_STREAMS; i++) {
                    assertThat(ends.get(i)).as("stream %d still open", i).isNotDone();
                }
                contexts.get(0).cancel(null);
                final CompletableFuture<Void> again = new CompletableFuture<>();
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!again.isDone() && System.nanoTime() < deadline) {
                    // the server hears of the cancel a moment later
                    try {
                        blocking.withDeadlineAfter(2, TimeUnit.SECONDS).watchJob(WatchRequest.newBuilder().setJob(JOB).setIntervalMs(20).build())
                            .next();
                        again.complete(null);
                    } catch (final io.grpc.StatusRuntimeException ex) {
                        Thread.sleep(50);
                    }
                }
                assertThat(again).as("room again after a stream closed").isDone();
                contexts.forEach(c -> c.cancel(null));
                // a write of more updates than a job's whole table could hold
                final WriteRequest.Builder big = WriteRequest.newBuilder().setJob(JOB);
                for (int i = 0; i <= SwitchControlService.MAX_UPDATES_PER_WRITE; i++) {
                    big.addUpdates(Update.newBuilder().setTable(Update.Table.SYNC_CONFIG).setKind(Update.Kind.INSERT).setFirstRound(100 + i)
                        .setConfig("bsp"));
                }
                assertThatThrownBy(() -> blocking.write(big.build())).hasMessageContaining("INVALID_ARGUMENT")
                    .hasMessageContaining("at most 256 updates, this one 257");
                assertThat(sw.errors).isEmpty();
            } finally {
                channel.shutdownNow();
                server.close();
            }
        }
    }

    /**
     * 500 watchers ask for the job at the floor interval: 16 stream, the rest are refused, and the switch's thread does one
     * job read a state, so watching costs it at most {@code MAX_WATCH_STREAMS} reads each {@code MIN_WATCH_INTERVAL_MS}
     * however many ask. Checked by count, not by time; the round times quiet and watched are printed (this host's clock).
     */
    @Test
    @Timeout(180)
    void fiveHundredWatchersAtTheFloorGetSixteenStreamsOfOneReadAnInterval() throws Exception {
        final int workers = 2;
        try (ControlledSwitch sw = new ControlledSwitch()) {
            final List<WorkerHost> hosts = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                hosts.add(WorkerHost.start(new WorkerContext().jobId(JOB).workerId(w).workers(workers).elementsPerRound(20_000),
                    sw.host.localAddress(), new InetSocketAddress("127.0.0.1", 0), sw.workerLoop, UdpOptions.defaults(), sw.errors::add));
            }
            final ControlServer server = ControlServer.start(sw.service, "127.0.0.1", 0);
            final ManagedChannel channel = NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
            try {
                for (final WorkerHost h : hosts) {
                    h.joined().get(20, TimeUnit.SECONDS);
                }
                final int[] round = {0};
                roundTimes(hosts, round, 200); // warm-up
                final SwitchControlGrpc.SwitchControlStub async = SwitchControlGrpc.newStub(channel);
                final java.util.concurrent.atomic.AtomicLong states = new java.util.concurrent.atomic.AtomicLong();
                final java.util.concurrent.atomic.AtomicLong refused = new java.util.concurrent.atomic.AtomicLong();
                final List<Long> quiet = new ArrayList<>();
                final List<Long> watched = new ArrayList<>();
                // three blocks: the streams' slots come back once their watchers cancel
                for (int block = 0; block < 3; block++) {
                    quiet.addAll(roundTimes(hosts, round, 1_000));
                    final long refusedBefore = refused.get();
                    final long statesBefore = states.get();
                    final long opened = System.nanoTime();
                    final io.grpc.Context.CancellableContext context = io.grpc.Context.current().withCancellation();
                    context.run(() -> {
                        for (int i = 0; i < 500; i++) {
                            async.watchJob(WatchRequest.newBuilder().setJob(JOB).setIntervalMs(SwitchControlService.MIN_WATCH_INTERVAL_MS)
                                .build(), new StreamObserver<JobState>() {
                                    @Override
                                    public void onNext(final JobState value) {
                                        states.incrementAndGet();
                                    }

                                    @Override
                                    public void onError(final Throwable t) {
                                        if (t.getMessage().contains("RESOURCE_EXHAUSTED")) {
                                            refused.incrementAndGet();
                                        }
                                    }

                                    @Override
                                    public void onCompleted() {
                                    }
                                });
                        }
                    });
                    final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while ((refused.get() - refusedBefore < 500 - SwitchControlService.MAX_WATCH_STREAMS
                        || states.get() - statesBefore < 10L * SwitchControlService.MAX_WATCH_STREAMS) && System.nanoTime() < deadline) {
                        Thread.sleep(10);
                    }
                    watched.addAll(roundTimes(hosts, round, 1_000));
                    context.cancel(null);
                    // the server hears of the cancels a moment later: the block ends when no state comes
                    long last = -1;
                    while (states.get() != last) {
                        last = states.get();
                        Thread.sleep(50);
                    }
                    final double elapsedMs = (System.nanoTime() - opened) / 1e6;
                    final long served = states.get() - statesBefore;
                    final long bound = SwitchControlService.MAX_WATCH_STREAMS
                        * ((long) (elapsedMs / SwitchControlService.MIN_WATCH_INTERVAL_MS) + 1);
                    final String what = String.format(java.util.Locale.ROOT, "block %d: %d states (one switch read each) in %.0f ms "
                        + "of watching, %d watchers refused", block, served, elapsedMs, refused.get() - refusedBefore);
                    System.out.println(what);
                    assertThat(refused.get() - refusedBefore).as(what).isEqualTo(500 - SwitchControlService.MAX_WATCH_STREAMS);
                    assertThat(served).as(what + ": the watchers were served").isGreaterThanOrEqualTo(10L * SwitchControlService.MAX_WATCH_STREAMS);
                    assertThat(served).as(what + ": at most one read per stream and interval").isLessThanOrEqualTo(bound);
                }
                System.out.printf(java.util.Locale.ROOT, "median round on this host's clock, not asserted: quiet %.3f ms, watched %.3f ms%n",
                    median(quiet) / 1e6, median(watched) / 1e6);
            } finally {
                channel.shutdownNow();
                server.close();
                hosts.forEach(WorkerHost::close);
            }
            assertThat(sw.errors).isEmpty();
        }
    }

    /** Runs {@code rounds} rounds on every worker (each its own gradient); each round's wall time. */
    private static List<Long> roundTimes(final List<WorkerHost> hosts, final int[] round, final int rounds) throws Exception {
        final List<Long> times = new ArrayList<>();
        final float[] gradient = new float[20_000];
        for (int r = 0; r < rounds; r++) {
            final long start = System.nanoTime();
            final List<CompletableFuture<io.serene.worker.Aggregate>> all = new ArrayList<>();
            for (final WorkerHost h : hosts) {
                all.add(h.allreduce(round[0], gradient));
            }
            for (final CompletableFuture<io.serene.worker.Aggregate> f : all) {
                f.get(20, TimeUnit.SECONDS).release();
            }
            round[0]++;
            times.add(System.nanoTime() - start);
        }
        return times;
    }

    private static double median(final List<Long> values) {
        final List<Long> sorted = new ArrayList<>(values);
        java.util.Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    /** A switch on UDP with its control service, and a transport for workers; what went wrong on either, in {@code errors}. */
    private static final class ControlledSwitch implements AutoCloseable {
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20)
            .defaultSync(SyncConfig.bsp()).conclude(), errors::add);
        final UdpTransport switchLoop = UdpTransport.create(1, true);
        final UdpTransport workerLoop = UdpTransport.create(1, true);
        final UdpHost host;
        final SwitchControlService service;

        ControlledSwitch() throws Exception {
            host = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
            service = new SwitchControlService(host::call, pipeline);
        }

        @Override
        public void close() {
            service.close();
            host.close();
            workerLoop.close();
            switchLoop.close();
        }
    }

    @Test
    @Timeout(120)
    void controlCliReadsAndHotSwapsARunningJob() throws Exception {
        try (ControlledSwitch sw = new ControlledSwitch()) {
            final List<Throwable> errors = sw.errors;
            final SwitchPipeline pipeline = sw.pipeline;
            final ControlServer server = ControlServer.start(sw.service, "127.0.0.1", 0);
            final String target = server.address();
            final List<WorkerHost> workers = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                workers.add(WorkerHost.start(new WorkerContext().jobId(JOB).workerId(w).workers(2).elementsPerRound(1_000),
                    sw.host.localAddress(), new InetSocketAddress("127.0.0.1", 0), sw.workerLoop, UdpOptions.defaults(), errors::add));
            }
            try {
                for (final WorkerHost w : workers) {
                    w.joined().get(20, TimeUnit.SECONDS);
                }
                InProcess.rounds(workers, 1_000, 0, 3, 0);

                Object[] r = InProcess.cli("control", "show", "--switch", target, "--job", "" + JOB);
                assertThat(r[0]).as((String) r[1]).isEqualTo(0);
                assertThat((String) r[1]).contains("job 9: R=2 epoch=0").contains("clocks=[2, 2]")
                    .contains("from round 0: bound=0 required={0, 1} quorum=2");

                r = InProcess.cli("control", "install", "ssp:2", "--switch", target, "--job", "" + JOB);
                assertThat(r[0]).as((String) r[1]).isEqualTo(0);
                assertThat((String) r[1]).contains("job 9: ssp:2 from round 4 (epoch 1)");
                InProcess.rounds(workers, 1_000, 3, 8, 0);
                for (final WorkerHost w : workers) {
                    assertThat(w.call(e -> e.configEpoch()).get()).isEqualTo(1);
                }
                r = InProcess.cli("control", "show", "--switch", target, "--job", "" + JOB);
                assertThat((String) r[1]).contains("R=7 epoch=1 earliest swap round=11 clocks=[7, 7] compute ms=[")
                    .contains("] finished rounds=[6, 6] arrival offsets ms=[")
                    .contains("from round 0: bound=0 required={0, 1} quorum=2 timeout=none late=fold")
                    .contains("from round 4: bound=2 required={0, 1} quorum=2 timeout=none late=fold");

                r = InProcess.cli("control", "install", "ssp:x", "--switch", target, "--job", "" + JOB);
                assertThat(r[0]).isEqualTo(1);
                assertThat((String) r[1]).contains("INVALID_ARGUMENT");
                r = InProcess.cli("control", "install", "bsp+exclude:5", "--switch", target, "--job", "" + JOB);
                assertThat(r[0]).isEqualTo(1);
                assertThat((String) r[1]).contains("BAD_KEY").contains("does not fit job 9");
                r = InProcess.cli("control", "install", "bsp", "--switch", target, "--job", "42");
                assertThat((String) r[1]).contains("UNKNOWN_JOB").contains("no job 42");
                r = InProcess.cli("control", "install", "bsp", "--first-round", "1", "--switch", target, "--job", "" + JOB);
                assertThat((String) r[1]).contains("TOO_EARLY").contains("round 1 is below the earliest");
                r = InProcess.cli("control", "show", "--switch", "nonsense", "--job", "" + JOB);
                assertThat(r[0]).isEqualTo(2);
                assertThat((String) r[1]).contains("--switch must be HOST:PORT");

                r = InProcess.cli("control", "watch", "--count", "2", "--interval-ms", "20", "--switch", target, "--job", "" + JOB);
                assertThat(r[0]).as((String) r[1]).isEqualTo(0);
                assertThat(((String) r[1]).split("job 9: R=7", -1)).hasSize(3);

                r = InProcess.cli("control", "counters", "--switch", target);
                assertThat((String) r[1]).contains("config_installs 1");

                // table writes through the switch's command queue, one result code each
                r = InProcess.cli("control", "write", "--switch", target, "--job", "" + JOB, "insert:40=ssp:1", "insert:40=asp",
                    "modify:40=bsp+timeout:30", "insert:50=fastest:1", "delete:50", "delete:60", "insert:3=bsp", "insert:45=exclude:5",
                    "insert:40@1=fastest:1", "insert:40@7=bsp", "group:1=1");
                assertThat(r[0]).as("not every write took").isEqualTo(1);
                assertThat((String) r[1]).contains("insert:40=ssp:1: OK", "insert:40=asp: DUPLICATE_ENTRY", "modify:40=bsp+timeout:30: OK",
                    "insert:50=fastest:1: OK", "delete:50: OK", "delete:60: NOT_FOUND", "insert:3=bsp: TOO_EARLY",
                    "insert:45=exclude:5: BAD_KEY", "insert:40@1=fastest:1: OK", "insert:40@7=bsp: BAD_KEY",
                    "group:1=1: TOO_EARLY", "config epoch 6");
                r = InProcess.cli("control", "write", "--switch", target, "--job", "" + JOB, "insert:70=ssp:y");
                assertThat((String) r[1]).contains("INVALID_ARGUMENT");
                r = InProcess.cli("control", "write", "--switch", target, "--job", "" + JOB, "upsert:70=bsp");
                assertThat(r[0]).isEqualTo(2);
                assertThat((String) r[1]).contains("bad update 'upsert:70=bsp'");
                r = InProcess.cli("control", "write", "--switch", target, "--job", "" + JOB, "group:1");
                assertThat(r[0]).isEqualTo(2);
                assertThat((String) r[1]).contains("bad update 'group:1': group needs WORKER=GROUP");
                InProcess.rounds(workers, 1_000, 8, 12, 0);
                for (final WorkerHost w : workers) {
                    assertThat(w.call(e -> e.configEpoch()).get()).as("workers follow the written table").isEqualTo(6);
                }
                r = InProcess.cli("control", "show", "--switch", target, "--job", "" + JOB);
                assertThat((String) r[1]).contains("from round 40: bound=0 required={0, 1} quorum=2 timeout=30.0ms late=fold")
                    .doesNotContain("from round 50");
                r = InProcess.cli("control", "schema", "--switch", target);
                assertThat(r[0]).isEqualTo(0);
                assertThat((String) r[1]).contains("table sync_config", "key    group", "key    first_round", "table worker_group",
                    "register released_round", "drop_late");
                r = InProcess.cli("control", "health", "--switch", target);
                assertThat(r[0]).as((String) r[1]).isEqualTo(0);
                assertThat((String) r[1]).contains("SERVING");
                r = InProcess.cli("control", "health", "--switch", target, "--service", "serene.control.SwitchControl");
                assertThat((String) r[1]).contains("SERVING");
                r = InProcess.cli("control", "health", "--switch", target, "--service", "nothing.Here");
                assertThat((String) r[1]).contains("NOT_FOUND");
                assertThat(reflectedServices(target)).contains("serene.control.SwitchControl", "grpc.health.v1.Health");
            } finally {
                workers.forEach(WorkerHost::close);
                server.close();
            }
            assertThat(errors).isEmpty();
        }
    }

    @Test
    @Timeout(120)
    void aTokenAndTlsGuardTheControlPortAndEveryWriteIsLoggedWithItsCaller(@TempDir final Path dir) throws Exception {
        final Path cert = dir.resolve("cert.pem");
        final Path key = dir.resolve("key.pem");
        final Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.toString(),
            "-out", cert.toString(), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost")
            .redirectErrorStream(true).start();
        final String made = new String(openssl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(openssl.waitFor(60, TimeUnit.SECONDS) && openssl.exitValue() == 0).as(made).isTrue();
        final Path token = dir.resolve("token");
        Files.writeString(token, "s3cret-token\n");
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final List<String> log = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20)
            .defaultSync(SyncConfig.bsp()).conclude(), errors::add);
        try (UdpTransport switchLoop = UdpTransport.create(1, true);
             UdpTransport workerLoop = UdpTransport.create(1, true);
             UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             SwitchControlService service = new SwitchControlService(switchHost::call, pipeline, new StallWatch(5), log::add)) {
            assertThatThrownBy(() -> ControlServer.start(service, "0.0.0.0", 0, ControlAccess.LOCAL))
                .hasMessageContaining("--control-bind 0.0.0.0 is reachable from other hosts: give it a token");
            final ControlServer server = ControlServer.start(service, "127.0.0.1", 0,
                new ControlAccess(ControlAccess.readToken("--control-token-file", token), cert, key));
            final WorkerHost worker = WorkerHost.start(new WorkerContext().jobId(JOB + 5).workerId(0).workers(1).elementsPerRound(100),
                switchHost.localAddress(), new InetSocketAddress("127.0.0.1", 0), workerLoop, UdpOptions.defaults(), errors::add);
            try {
                worker.joined().get(20, TimeUnit.SECONDS);
                final String target = server.address();
                final String job = "" + (JOB + 5);
                Object[] r = InProcess.cli("control", "show", "--switch", target, "--job", job, "--tls-ca", cert.toString());
                assertThat((String) r[1]).contains("UNAUTHENTICATED", "missing or wrong control token");
                r = InProcess.cli("control", "show", "--switch", target, "--job", job);
                assertThat(r[0]).as("plaintext to a TLS port").isEqualTo(1);
                r = InProcess.cli("control", "health", "--switch", target, "--tls-ca", cert.toString());
                assertThat((String) r[1]).as("probes need no token").contains("SERVING");
                r = InProcess.cli("control", "show", "--switch", target, "--job", job, "--tls-ca", cert.toString(), "--token-file", token.toString());
                assertThat(r[0]).as((String) r[1]).isEqualTo(0);
                assertThat((String) r[1]).contains("job 14: R=-1");
                r = InProcess.cli("control", "write", "--switch", target, "--job", job, "--tls-ca", cert.toString(), "--token-file", token.toString(),
                    "insert:50=ssp:1");
                assertThat((String) r[1]).contains("insert:50=ssp:1: OK");
                r = InProcess.cli("control", "install", "bsp", "--first-round", "60", "--switch", target, "--job", job, "--tls-ca", cert.toString(),
                    "--token-file", token.toString());
                assertThat(r[0]).as((String) r[1]).isEqualTo(0);
                assertThat(log).anySatisfy(l -> assertThat(l).startsWith("control: 127.0.0.1:").contains("wrote job 14: ", ": OK"));
                assertThat(log).anySatisfy(l -> assertThat(l).startsWith("control: 127.0.0.1:")
                    .contains("wrote job 14: ").contains("sync_config{job=14, first_round=60} -> bsp: OK"));
                assertThat(log).as("refused calls write nothing").hasSize(2);
            } finally {
                worker.close();
                server.close();
            }
            assertThat(errors).isEmpty();
        }
    }

    /** The service names the server's reflection service lists, as grpcurl's {@code list} asks for them. */
    private static List<String> reflectedServices(final String target) throws Exception {
        final ManagedChannel channel = NettyChannelBuilder.forTarget(target).usePlaintext().build();
        try {
            final CompletableFuture<List<String>> names = new CompletableFuture<>();
            final StreamObserver<ServerReflectionRequest> requests = ServerReflectionGrpc.newStub(channel)
                .serverReflectionInfo(new StreamObserver<ServerReflectionResponse>() {
                    @Override
                    public void onNext(final ServerReflectionResponse r) {
                        names.complete(r.getListServicesResponse().getServiceList().stream().map(ServiceResponse::getName).toList());
                    }

                    @Override
                    public void onError(final Throwable t) {
                        names.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                    }
                });
            requests.onNext(ServerReflectionRequest.newBuilder().setListServices("").build());
            final List<String> result = names.get(10, TimeUnit.SECONDS);
            requests.onCompleted();
            return result;
        } finally {
            channel.shutdownNow();
        }
    }

    @Test
    @Timeout(120)
    void controlApplyPutsAPolicysWorkerGroupsOnTheSwitchAndChangesAGroupsConfig() throws Exception {
        // the groups are fixed from the first contribution: the workers start once the policy put them there
        applyPolicy("policy tiers\ngroup old = 2\nstart bsp\n"
            + "when lag >= 2 for 3 rounds in old: bsp then old: bsp + timeout(10)\n", JOB + 2, true, (printed, folded, target) -> {
                assertThat((String) printed[1]).contains("policy tiers on job 11 (3 workers): start bsp")
                    .contains("group old (1): start bsp from round")
                    .contains("old: bsp -> old: bsp+timeout:10 (lag >= 2 for 3 rounds in old: bsp");
                assertThat(folded).as("the old group's late chunks were folded").isPositive();
                final Object[] show = InProcess.cli("control", "show", "--switch", target, "--job", "" + (JOB + 2));
                assertThat((String) show[1]).contains("groups=[0, 0, 1]", "group 1 from round", "timeout=10.0ms");
            });
    }

    @Test
    @Timeout(120)
    void controlApplyExcludesAStragglerTheSwitchMeasured() throws Exception {
        applyPolicy("policy exclude-slow\nstart bsp\nwhen slowdown(worker) > 4 for 3 rounds then exclude(worker) fold\n",
            JOB + 1, false, (printed, folded, target) -> {
                assertThat((String) printed[1]).contains("policy exclude-slow on job 10 (3 workers): start bsp")
                    .contains("bsp -> bsp+exclude:2 (worker 2: slowdown(worker) > 4 for 3 rounds")
                    .contains("1 config changes");
                assertThat(folded).as("the excluded worker's late chunks were folded").isPositive();
            });
    }

    /** Checks on a `control apply` run: what it printed, the chunks the straggler folded, the control address. */
    private interface ApplyCheck {
        void check(Object[] printed, long foldedByStraggler, String target) throws Exception;
    }

    /**
     * Runs `serene control apply` with a policy against a switch (BSP) with a control service and 3 UDP
     * workers of {@code job} training 60 rounds, worker 2 computing 60 ms a round and the others 2 ms;
     * with {@code awaitGroups} the workers start only once worker 2 is in group 1. Then checks.
     */
    private void applyPolicy(final String policyText, final int job, final boolean awaitGroups, final ApplyCheck check)
        throws Exception {
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20)
            .defaultSync(SyncConfig.bsp()).conclude(), errors::add);
        final Path policy = Files.createTempFile("serene", ".policy");
        Files.writeString(policy, policyText);
        final int workers = 3;
        final int rounds = 60;
        try (UdpTransport switchLoop = UdpTransport.create(1, true);
             UdpTransport workerLoop = UdpTransport.create(1, true);
             UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             SwitchControlService service = new SwitchControlService(switchHost::call, pipeline)) {
            final ControlServer server = ControlServer.start(service, "127.0.0.1", 0);
            final String target = server.address();
            final CompletableFuture<Object[]> apply = CompletableFuture.supplyAsync(() -> InProcess.cli("control", "apply",
                policy.toString(), "--switch", target, "--job", "" + job, "--until-round", "" + (rounds - 10),
                "--interval-ms", "10"));
            final List<WorkerHost> udpWorkers = new ArrayList<>();
            final List<CompletableFuture<Void>> loops = new ArrayList<>();
            try {
                for (int w = 0; w < workers; w++) {
                    udpWorkers.add(WorkerHost.start(new WorkerContext().jobId(job).workerId(w).workers(workers)
                            .elementsPerRound(1_000), switchHost.localAddress(), new InetSocketAddress("127.0.0.1", 0),
                        workerLoop, UdpOptions.defaults(), errors::add));
                }
                for (int w = 0; w < workers; w++) {
                    final WorkerHost worker = udpWorkers.get(w);
                    final long computeMs = w == workers - 1 ? 60 : 2;
                    loops.add(CompletableFuture.runAsync(() -> {
                        try {
                            worker.joined().get(20, TimeUnit.SECONDS);
                            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                            while (awaitGroups && switchHost.call(() -> pipeline.group(job, 2)).get() != 1
                                && System.nanoTime() < deadline) {
                                Thread.sleep(5);
                            }
                            final float[] g = new float[1_000];
                            for (int round = 0; round < rounds; round++) {
                                worker.awaitClearance(round).get(60, TimeUnit.SECONDS);
                                Thread.sleep(computeMs);
                                worker.allreduce(round, g).get(60, TimeUnit.SECONDS);
                            }
                        } catch (final Exception ex) {
                            throw new IllegalStateException(ex);
                        }
                    }));
                }
                final Object[] r = apply.get(90, TimeUnit.SECONDS);
                System.out.println("serene control apply printed:\n" + r[1]);
                assertThat(r[0]).as((String) r[1]).isEqualTo(0);
                for (final CompletableFuture<Void> loop : loops) {
                    loop.get(90, TimeUnit.SECONDS);
                }
                final long folded = udpWorkers.get(workers - 1).call(e -> e.counters().get(
                    WorkerCounter.FOLDED_CHUNKS)).get();
                check.check(r, folded, target);
            } finally {
                udpWorkers.forEach(WorkerHost::close);
                server.close();
                Files.deleteIfExists(policy);
            }
            assertThat(errors).isEmpty();
        }
    }
}
