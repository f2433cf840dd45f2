package io.serene.harness.cli;

import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyCompiler;
import io.serene.controlplane.PolicyException;
import io.serene.controlplane.PolicyParser;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code serene policy check|compile FILE}: the policy language's front end. */
@Command(name = "policy", mixinStandardHelpOptions = true, description = "Checks or compiles a policy file (docs/policy.md).",
    subcommands = {PolicyCommand.Check.class, PolicyCommand.Compile.class})
public final class PolicyCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** Reads and parses a policy file; a syntax error becomes exit code 2 with line:column and a caret. */
    public static Policy load(final Path file) {
        final String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read policy file " + file + ": " + ex.getMessage());
        }
        try {
            return PolicyParser.parse(text);
        } catch (final PolicyException ex) {
            throw new IllegalArgumentException(file + ":" + ex.getMessage());
        }
    }

    @Command(name = "check", mixinStandardHelpOptions = true, description = "Reports the first error (line:column) or OK.")
    static final class Check implements Callable<Integer> {
        @Parameters(paramLabel = "FILE")
        Path file;

        @Override
        public Integer call() {
            final Policy policy = load(file);
            final int groups = policy.groups().size();
            System.out.println(file + ": OK, policy " + policy.name() + " with " + policy.rules().size() + " rules"
                + (groups == 0 ? "" : " and " + groups + (groups == 1 ? " worker group" : " worker groups"))
                + (policy.smoothing() == Policy.DEFAULT_SMOOTHING ? "" : ", slowdown(worker) over the median of the last "
                    + policy.smoothing() + (policy.smoothing() == 1 ? " sample" : " samples")));
            return 0;
        }
    }

    @Command(name = "compile", mixinStandardHelpOptions = true,
        description = "Prints the switch table entries the policy writes for a job of N workers.")
    static final class Compile implements Callable<Integer> {
        @Parameters(paramLabel = "FILE")
        Path file;

        @Option(names = "--workers", defaultValue = "16", description = "Workers of the job. Default: ${DEFAULT-VALUE}.")
        int workers;

        @Option(names = "--job", defaultValue = "1", description = "Job id in the entries. Default: ${DEFAULT-VALUE}.")
        int job;

        @Override
        public Integer call() {
            if (workers <= 0) {
                throw new IllegalArgumentException("--workers must be positive, was " + workers);
            }
            final Policy policy = load(file);
            try {
                System.out.print(PolicyCompiler.render(policy, job, workers));
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException(file + ": " + ex.getMessage());
            }
            return 0;
        }
    }
}
