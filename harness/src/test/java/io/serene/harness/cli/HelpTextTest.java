package io.serene.harness.cli;

import io.serene.launch.TrainRun;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class HelpTextTest {
    @Test
    void shouldPrintEveryCommandsHelpWithoutAWarning() {
        final List<CommandLine> commands = new ArrayList<>();
        collect(new CommandLine(new Serene()), commands);
        assertThat(commands).hasSizeGreaterThan(9);
        final PrintStream err = System.err;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            for (final CommandLine command : commands) {
                final ByteArrayOutputStream help = new ByteArrayOutputStream();
                command.usage(new PrintStream(help, true, StandardCharsets.UTF_8));
                assertThat(help.toString(StandardCharsets.UTF_8)).as(command.getCommandName()).contains("Usage:");
            }
        } finally {
            System.setErr(err);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8)).doesNotContain("WARN");
    }

    /** serene train starts its workers as {@code serene worker} through this main class. */
    @Test
    void workerProcessesRunThisCommandLine() {
        assertThat(TrainRun.WORKER_MAIN).isEqualTo(Serene.class.getName());
    }

    private static void collect(final CommandLine command, final List<CommandLine> into) {
        into.add(command);
        for (final CommandLine sub : command.getSubcommands().values()) {
            collect(sub, into);
        }
    }
}
