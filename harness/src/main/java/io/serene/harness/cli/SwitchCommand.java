package io.serene.harness.cli;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.launch.XdpPlane;
import io.serene.node.ControlAccess;
import io.serene.node.ControlServer;
import io.serene.node.Ports;
import io.serene.node.SilenceWatch;
import io.serene.node.StallWatch;
import io.serene.node.SwitchNode;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.transport.PacketHost;
import io.serene.transport.UdpHost;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** {@code serene switch}: runs the software switch as its own process until interrupted. */
@Command(name = "switch", mixinStandardHelpOptions = true,
    description = "Runs the switch data plane on a UDP port until Ctrl-C. Jobs are created by the workers' JOIN.")
public final class SwitchCommand implements Callable<Integer> {
    @Option(names = "--port", defaultValue = "7000", description = "UDP port. Default: ${DEFAULT-VALUE}.")
    int port;

    @Option(names = "--bind", defaultValue = "0.0.0.0", description = "Address to bind. Default: ${DEFAULT-VALUE}.")
    String bind;

    @Option(names = "--shm", description = "Serve workers on this host over shared memory in DIR (e.g. /dev/shm/serene-7000; "
        + "they join with --switch shm:DIR) instead of UDP.")
    Path shm;

    @Option(names = "--also-udp", description = "With --shm: serve UDP on --bind and --port too, for workers on other hosts "
        + "(one job may have workers on both links).")
    boolean alsoUdp;

    @Option(names = "--budget", defaultValue = "16777216", description = "Memory budget in bytes. Default: ${DEFAULT-VALUE}.")
    long budget;

    @Option(names = "--max-jobs", defaultValue = "4", description = "Concurrent jobs. Default: ${DEFAULT-VALUE}.")
    int maxJobs;

    @Option(names = "--max-workers", defaultValue = "64", description = "Workers per job. Default: ${DEFAULT-VALUE}.")
    int maxWorkers;

    @Option(names = "--chunk-elements", defaultValue = "256", description = "Elements per packet (K). Default: ${DEFAULT-VALUE}.")
    int chunkElements;

    @Option(names = "--sync", defaultValue = "asp", description = "Sync config every new job starts with (docs/sync.md), "
        + "e.g. bsp, ssp:3, fastest:14+timeout:50. Default: ${DEFAULT-VALUE} (every chunk waits for every worker; "
        + "workers held back only by the release ring).")
    String sync;

    @Option(names = "--job-lease-seconds", defaultValue = SwitchContext.DEFAULT_JOB_LEASE_TEXT, description = "Free a job none of whose workers was heard "
        + "from for this long (JOINs nobody follows cannot fill the job table for good); 0: never. Default: ${DEFAULT-VALUE}.")
    double jobLeaseSeconds;

    @Option(names = "--stats-seconds", defaultValue = "5", description = "Print counters every N seconds (0: never). Default: ${DEFAULT-VALUE}.")
    int statsSeconds;

    @Option(names = "--control-port", defaultValue = "-1", description = "TCP port of the gRPC control service "
        + "(serene control, docs/policy.md); -1: none. Default: ${DEFAULT-VALUE}.")
    int controlPort;

    @Option(names = "--control-bind", defaultValue = "127.0.0.1", description = "Address the control service binds; "
        + "one other than loopback needs --control-token-file. Default: ${DEFAULT-VALUE}.")
    String controlBind;

    @Option(names = "--control-token-file", description = "A file whose first line is the token control callers must present "
        + "(serene control --token-file); required to bind the control service beyond loopback.")
    Path controlTokenFile;

    @Option(names = "--control-cert", description = "The control service's TLS certificate chain (PEM); with --control-key, "
        + "callers connect with TLS (serene control --tls-ca).")
    Path controlCert;

    @Option(names = "--control-key", description = "The private key of --control-cert (PKCS#8 PEM).")
    Path controlKey;

    @Mixin
    MonitorOptions monitorOptions = new MonitorOptions();

    @Mixin
    SecretOption secret = new SecretOption();

    @Option(names = "--metrics-bind", defaultValue = "127.0.0.1", description = "Address /metrics binds. Default: ${DEFAULT-VALUE}.")
    String metricsBind;

    @Option(names = "--xdp", paramLabel = "WORKERS", description = "Run the switch's DATA path as the XDP program in this host's "
        + "kernel, with a port, and a network namespace, for each of WORKERS workers (root, clang, libbpf-dev; docs/xdp.md); "
        + "prints the namespaces and the address: run worker W under 'ip netns exec NAMESPACE'. Replaces --bind.")
    Integer xdpWorkers;

    @Option(names = "--nio", description = "Use plain NIO instead of native epoll.")
    boolean nio;

    private static void log(final String line) {
        System.out.println(line);
        System.out.flush();
    }

    @Override
    public Integer call() throws Exception {
        if (!(jobLeaseSeconds >= 0) || Double.isInfinite(jobLeaseSeconds)) {
            throw new IllegalArgumentException("--job-lease-seconds must be a finite number >= 0 (0: never), was " + jobLeaseSeconds);
        }
        final SwitchContext context = new SwitchContext().budgetBytes(budget).maxJobs(maxJobs).maxWorkers(maxWorkers)
            .chunkElements(chunkElements).defaultSync(SyncConfigParser.parse(sync))
            .jobLeaseNs((long) (jobLeaseSeconds * 1e9)).secret(secret.switchSecret()).conclude();
        Ports.require("--port", port);
        Ports.optional("--control-port", controlPort);
        final int metricsPort = monitorOptions.metricsPort();
        final StallWatch stalls = monitorOptions.stalls();
        final SilenceWatch silence = monitorOptions.silence();
        final ControlAccess access = new ControlAccess(controlTokenFile == null ? null
            : ControlAccess.readToken("--control-token-file", controlTokenFile), controlCert, controlKey);
        final SwitchPipeline pipeline = new SwitchPipeline(context,
            ex -> System.err.println("switch error: " + ex));
        final CountDownLatch stop = new CountDownLatch(1);
        final CountDownLatch closed = new CountDownLatch(1);
        final SwitchNode.Builder plan = SwitchNode.builder(pipeline).udp(bind, port, !nio).alsoUdp(alsoUdp)
            .watches(stalls, silence).log(SwitchCommand::log).metrics(metricsBind, metricsPort).control(controlBind, controlPort, access);
        if (xdpWorkers != null && (shm != null || xdpWorkers < 1 || xdpWorkers > maxWorkers)) {
            throw new IllegalArgumentException("--xdp takes 1.." + maxWorkers + " workers (--max-workers) and no --shm, was " + xdpWorkers);
        }
        try (XdpPlane xdp = xdpWorkers == null ? null : XdpPlane.create(xdpWorkers);
             SwitchNode node = (shm != null ? plan.shm(shm) : xdp != null
                 ? xdp.serve(plan, port, SwitchCommand::log, ex -> System.err.println("switch error: " + ex)) : plan).open()) {
            final PacketHost host = node.host();
            node.start();
            final ControlServer server = node.controlServer();
            System.out.println(context.memory());
            System.out.println("switch listening on " + node.describe() + ", new jobs start with " + context.defaultSync());
            for (int w = 0; xdp != null && w < xdpWorkers; w++) {
                System.out.println("worker " + w + ": ip netns exec " + xdp.namespace(w) + " serene worker --switch " + node.address()
                    + " --id " + w + " --workers " + xdpWorkers + " ...");
            }
            if (context.secret() == null && node.servesBeyondLoopback()) {
                System.out.println("warning: serving beyond this host without a secret (--secret-file): whoever reaches the port can "
                    + "join a job first, or take a joined worker's place; give the switch and its workers a secret");
            }
            if (server != null) {
                System.out.println("control service on tcp " + server.address() + (access.tls() ? " with TLS" : "")
                    + (access.token() != null ? ", callers need the token" : "") + " (grpc health and reflection too)");
            }
            if (node.metrics() != null) {
                System.out.println("metrics on http://" + metricsBind + ":" + node.metrics().port() + "/metrics");
            }
            System.out.flush();
            // on a signal, let the switch close its link (a shared-memory ring is a file to remove) before the JVM ends
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                stop.countDown();
                try {
                    closed.await(5, TimeUnit.SECONDS);
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            }));
            while (!stop.await(statsSeconds > 0 ? statsSeconds : 3600, TimeUnit.SECONDS)) {
                if (statsSeconds > 0) {
                    System.out.println("counters: " + host.call(() -> pipeline.counters().toString()).get()
                        + ", jobs=" + host.call(pipeline::activeJobs).get() + (host instanceof UdpHost udp
                        ? ", peers refused (table full)=" + udp.droppedPeers() + ", peers expired=" + udp.expiredPeers()
                        + ", sources refused (bad header)=" + udp.refusedSources()
                        : ", " + host.batchingStats()));
                }
            }
        } finally {
            closed.countDown();
        }
        return 0;
    }
}
