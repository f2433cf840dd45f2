package io.serene.harness.cli;

import io.serene.protocol.JobKeys;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerNode;
import io.serene.worker.agent.AgentServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code serene agent}: a worker agent for one local client (Serene's Python package, a DDP
 * communication hook): it joins the job on the client's behalf and runs the Java worker engine,
 * serving the client on a Unix socket and a shared file (docs/pytorch.md).
 */
@Command(name = "agent", mixinStandardHelpOptions = true,
    description = "Joins a job on behalf of one local client (python/serene) and runs the worker engine for it; exits when the client goes.")
public final class AgentCommand implements Callable<Integer> {
    @Mixin
    SecretOption secret = new SecretOption();

    @Option(names = "--switch", defaultValue = "127.0.0.1:7000", description = "The switch's UDP address HOST:PORT, or shm:DIRECTORY; "
        + "unset, from SERENE_SWITCH. Default: ${DEFAULT-VALUE}.")
    String switchAddress;

    @Option(names = "--job", defaultValue = "1", description = "Job id; unset, from SERENE_JOB. Default: ${DEFAULT-VALUE}.")
    int job;

    @Option(names = "--id", description = "The client's rank, 0..N-1; unset, from RANK, SLURM_PROCID or JOB_COMPLETION_INDEX.")
    Integer id;

    @Option(names = "--workers", description = "Ranks in the job (N); unset, from WORLD_SIZE or SLURM_NTASKS.")
    Integer workers;

    @Option(names = "--socket", description = "The Unix socket to serve the client on. Default: /tmp/serene-agent-JOB-RANK.sock "
        + "(where the Python client looks).")
    Path socket;

    @Option(names = "--timeout-seconds", defaultValue = "120", description = "Longest wait for a join, a round's aggregate or a "
        + "clearance before the client is told it failed. Default: ${DEFAULT-VALUE}.")
    int timeoutSeconds;

    @Option(names = "--wait-seconds", defaultValue = "60", description = "How long to wait for the client to connect. Default: ${DEFAULT-VALUE}.")
    int waitSeconds;

    @Option(names = "--exit-with-parent", description = "Exit when standard input closes (the Python client starts its agent so).")
    boolean exitWithParent;

    /** Where a client of rank {@code rank} in job {@code job} finds its agent by default (python/serene/client.py says the same). */
    static Path defaultSocket(final int job, final int rank) {
        return Path.of(System.getProperty("java.io.tmpdir"), "serene-agent-" + job + "-" + rank + ".sock");
    }

    @Override
    public Integer call() throws Exception {
        Defaults.requireMember("serene agent", id, workers);
        final Path path = socket != null ? socket : defaultSocket(job, id);
        final var key = secret.keyOf(job, id);
        try (WorkerNode node = WorkerNode.to("--switch", switchAddress);
             AgentServer agent = AgentServer.listen(path, id, workers, timeoutSeconds, elements -> join(node, key, elements))) {
            if (exitWithParent) {
                watchParent(agent);
            }
            System.out.println("agent: rank " + id + " of " + workers + ", job " + job + " at " + switchAddress + ", serving " + path);
            System.out.flush();
            System.out.println("agent: " + agent.serve(waitSeconds));
        }
        return 0;
    }

    private WorkerHost join(final WorkerNode node, final JobKeys.WorkerKey key, final int elements) {
        final WorkerContext context = new WorkerContext().jobId(job).key(key).workerId(id).workers(workers).elementsPerRound(elements);
        final WorkerHost host = node.connect(context, ex -> System.err.println("agent " + id + " error: " + ex));
        try {
            node.awaitJoin(host, id, job, timeoutSeconds);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while joining");
        } catch (final RuntimeException ex) {
            host.close();
            throw ex;
        }
        return host;
    }

    /** The client that started this agent is gone when its end of standard input closes: the agent ends too. */
    private static void watchParent(final AgentServer agent) {
        final Thread watcher = new Thread(() -> {
            try (InputStream in = System.in) {
                while (in.read() >= 0) {
                    // a client has nothing to say here; read to the end
                }
            } catch (final IOException ignored) {
                // treated as the end
            }
            try {
                agent.close();
            } catch (final IOException ignored) {
                // ending anyway
            }
            Runtime.getRuntime().halt(3);
        }, "parent-watch");
        watcher.setDaemon(true);
        watcher.start();
    }
}
