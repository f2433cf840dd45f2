package io.serene.harness.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code serene} command line: parses arguments and hands over to one subcommand. */
@Command(name = "serene", mixinStandardHelpOptions = true, version = "serene 0.1.0",
    description = "In-network gradient aggregation with dynamic hybrid synchronization.",
    subcommands = {TrainCommand.class, ExperimentCommand.class, SwitchCommand.class, WorkerCommand.class, AgentCommand.class, BenchCommand.class,
        SimCommand.class, PolicyCommand.class, ControlCommand.class, DemoCommand.class, CompareCommand.class, KeysCommand.class})
public final class Serene implements Runnable {
    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(final String[] args) {
        final Defaults defaults;
        try {
            defaults = Defaults.fromEnvironment();
        } catch (final RuntimeException ex) {
            System.err.println("serene: " + ex.getMessage());
            System.exit(2);
            return;
        }
        System.exit(commandLine(defaults).execute(args));
    }

    /** The configured command line with built-in defaults only (tests). */
    public static CommandLine commandLine() {
        return commandLine(new Defaults(java.util.Map.of(), null));
    }

    /** The configured command line taking unset options from {@code defaults} (launcher environment, defaults file). */
    public static CommandLine commandLine(final Defaults defaults) {
        final CommandLine cl = new CommandLine(new Serene());
        cl.setDefaultValueProvider(defaults);
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("serene: " + (ex.getMessage() != null ? ex.getMessage() : ex.toString()));
            return ex instanceof IllegalArgumentException ? 2 : 1;
        });
        return cl;
    }
}
