package io.serene.launch;

import io.serene.protocol.JobKeys;
import io.serene.training.TrainSettings;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The worker processes of {@code serene train --pytorch SCRIPT}: Debian's Python running the script
 * as a rank of a PyTorch job, with what torchrun would set and the run's settings in its environment
 * (python/serene/run.py reads them and answers as {@code serene worker} does). Its gradients go
 * through the switch by python/serene's client, whose agent it starts with {@link WorkerCommandLine#agent()}.
 */
final class PytorchRanks {
    /** The plan file in a run's directory: every rank's batches and modelled step times. */
    static final String PLAN = "pytorch-plan.bin";

    private PytorchRanks() {
    }

    /** Fails, saying what to install, unless Debian's Python has PyTorch and numpy, and the script is there. */
    static void check(final List<String> pytorch) throws IOException, InterruptedException {
        final Path script = Path.of(pytorch.get(0));
        if (!Files.isRegularFile(script)) {
            throw new IllegalArgumentException("--pytorch: no script at " + script);
        }
        final Process probe = new ProcessBuilder(DdpBaseline.PYTHON, "-c", "import torch.distributed, numpy").redirectErrorStream(true).start();
        probe.getInputStream().readAllBytes();
        if (!probe.waitFor(60, TimeUnit.SECONDS) || probe.exitValue() != 0) {
            throw new IllegalArgumentException("--pytorch needs PyTorch and numpy at " + DdpBaseline.PYTHON + ": apt-get install python3-torch");
        }
    }

    /** A free TCP port on 127.0.0.1 for the ranks' own process group (torchrun's MASTER_PORT). */
    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress("127.0.0.1", 0));
            return socket.getLocalPort();
        }
    }

    static List<String> command(final RunSettings s) {
        final List<String> command = new ArrayList<>(List.of(DdpBaseline.PYTHON, "-u", Path.of(s.pytorch().get(0)).toAbsolutePath().toString()));
        command.addAll(s.pytorch().subList(1, s.pytorch().size()));
        return command;
    }

    /** Rank w's environment: torchrun's variables, the switch and its key, and the run's settings. */
    static Map<String, String> environment(final RunSettings s, final RunFiles files, final int w, final int rounds,
                                           final String switchAddress, final long epochMs, final String key, final int masterPort) {
        final TrainSettings t = s.training();
        final Map<String, String> env = new HashMap<>();
        env.put("RANK", "" + w);
        env.put("LOCAL_RANK", "" + w);
        env.put("WORLD_SIZE", "" + s.workers());
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", "" + masterPort);
        env.put("SERENE_SWITCH", switchAddress);
        env.put("SERENE_JOB", "" + s.job());
        env.put(JobKeys.SECRET_ENV, key);
        env.put("SERENE_AGENT_COMMAND", WorkerCommandLine.agent());
        env.put("SERENE_AGENT_SOCKET", files.out().resolve("workers").resolve("agent-" + w + ".sock").toAbsolutePath().toString());
        env.put("SERENE_PLAN", files.out().resolve(PLAN).toAbsolutePath().toString());
        env.put("SERENE_ROUNDS", "" + rounds);
        env.put("SERENE_BATCH", "" + t.batch());
        env.put("SERENE_SEED", "" + t.seed());
        env.put("SERENE_LR", "" + t.learningRate());
        env.put("SERENE_MOMENTUM", "" + t.momentum());
        env.put("SERENE_EVAL_EVERY", "" + t.evalEvery());
        env.put("SERENE_DATA", t.data().toAbsolutePath().toString());
        env.put("SERENE_STRAGGLERS", t.stragglers());
        env.put("SERENE_STEP_TIME", t.device().text());
        env.put("SERENE_STEP_SECONDS", String.format(Locale.ROOT, "%.9f", t.device().stepNs(t.model(), t.batch(), t.batch()) / 1e9));
        env.put("SERENE_RECORDS", files.recordsFile(w).toAbsolutePath().toString());
        env.put("SERENE_EPOCH_MS", "" + epochMs);
        env.put("SERENE_EVALUATIONS", files.evaluationShare().toAbsolutePath().toString());
        return env;
    }
}
