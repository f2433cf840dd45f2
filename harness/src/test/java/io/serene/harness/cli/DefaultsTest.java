package io.serene.harness.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Where unset options come from: the flag, then the launcher's environment, then the defaults file, then the built-in default. */
class DefaultsTest {
    private static WorkerCommand worker(final Defaults defaults, final String... args) {
        final CommandLine cl = Serene.commandLine(defaults);
        final CommandLine.ParseResult parsed = cl.parseArgs(args);
        return (WorkerCommand) parsed.subcommand().commandSpec().userObject();
    }

    @Test
    void aLauncherEnvironmentGivesTheWorkerItsRankWorldSizeAndSwitch() {
        final WorkerCommand w = worker(new Defaults(Map.of("RANK", "3", "WORLD_SIZE", "8", "SERENE_SWITCH", "10.0.0.1:7000"), null), "worker");
        assertThat(w.id).isEqualTo(3);
        assertThat(w.workers).isEqualTo(8);
        assertThat(w.switchAddress).isEqualTo("10.0.0.1:7000");
        assertThat(w.job).isEqualTo(1);
    }

    @Test
    void anAgentUnderTorchrunTakesItsRankAndSizeButNotTheRendezvousAsItsSwitch() {
        final Map<String, String> torchrun = Map.of("RANK", "1", "WORLD_SIZE", "4", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500");
        AgentCommand a = (AgentCommand) Serene.commandLine(new Defaults(torchrun, null)).parseArgs("agent").subcommand().commandSpec().userObject();
        assertThat(a.id).isEqualTo(1);
        assertThat(a.workers).isEqualTo(4);
        assertThat(a.switchAddress).as("MASTER_ADDR:MASTER_PORT is the client's own process group").isEqualTo("127.0.0.1:7000");
        final Map<String, String> withSwitch = Map.of("RANK", "1", "WORLD_SIZE", "4", "SERENE_SWITCH", "10.0.0.2:7000", "SERENE_JOB", "3");
        a = (AgentCommand) Serene.commandLine(new Defaults(withSwitch, null)).parseArgs("agent").subcommand().commandSpec().userObject();
        assertThat(a.switchAddress).isEqualTo("10.0.0.2:7000");
        assertThat(a.job).isEqualTo(3);
        assertThat(AgentCommand.defaultSocket(3, 1).getFileName()).hasToString("serene-agent-3-1.sock");
    }

    @Test
    void slurmAndTorchrunNamesAreUnderstoodAndFlagsWin() {
        final Defaults slurm = new Defaults(Map.of("SLURM_PROCID", "2", "SLURM_NTASKS", "4", "MASTER_ADDR", "node7", "MASTER_PORT", "7100"), null);
        WorkerCommand w = worker(slurm, "worker");
        assertThat(w.id).isEqualTo(2);
        assertThat(w.workers).isEqualTo(4);
        assertThat(w.switchAddress).isEqualTo("node7:7100");
        w = worker(slurm, "worker", "--id", "0", "--switch", "h:1");
        assertThat(w.id).isZero();
        assertThat(w.switchAddress).isEqualTo("h:1");
        // MASTER_ADDR without MASTER_PORT names no switch: the built-in default stays
        w = worker(new Defaults(Map.of("MASTER_ADDR", "node7"), null), "worker");
        assertThat(w.switchAddress).isEqualTo("127.0.0.1:7000");
        assertThat(w.id).isNull();
    }

    @Test
    void theDefaultsFileFillsWhatTheEnvironmentDoesNotQualifiedKeysFirst(@TempDir final Path dir) throws Exception {
        final Path file = dir.resolve("serene.properties");
        Files.writeString(file, "worker.switch = 10.1.1.1:7000\nswitch = 10.9.9.9:9\nid = 5\nworker.job=4\n# a comment\n");
        WorkerCommand w = worker(new Defaults(Map.of(), file), "worker");
        assertThat(w.switchAddress).as("worker.switch beats the bare key").isEqualTo("10.1.1.1:7000");
        assertThat(w.id).isEqualTo(5);
        assertThat(w.job).isEqualTo(4);
        w = worker(new Defaults(Map.of("RANK", "1"), file), "worker", "--job", "6");
        assertThat(w.id).as("the environment beats the file").isEqualTo(1);
        assertThat(w.job).as("the flag beats both").isEqualTo(6);
        final SwitchCommand s = (SwitchCommand) Serene.commandLine(new Defaults(Map.of("RANK", "1"), file)).parseArgs("switch")
            .subcommand().commandSpec().userObject();
        assertThat(s.port).as("launcher variables are the worker's only").isEqualTo(7000);
    }
}
