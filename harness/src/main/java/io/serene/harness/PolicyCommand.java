package io.serene.harness;

import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyException;
import io.serene.controlplane.PolicyParser;
import io.serene.protocol.SyncConfig;
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
    static Policy load(final Path file) {
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
            System.out.println(file + ": OK, policy " + policy.name() + " with " + policy.rules().size() + " rules");
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

        @Override
        public Integer call() {
            final Policy policy = load(file);
            System.out.println("policy " + policy.name() + " for " + workers + " workers");
            System.out.println("initial entry: first round 0, " + entry(policy.start()));
            for (final Policy.Rule rule : policy.rules()) {
                final String what;
                switch (rule.action.kind) {
                    case EXCLUDE:
                        what = "entry with that worker removed from the required set (late mode "
                            + rule.action.lateMode.name().toLowerCase(java.util.Locale.ROOT) + ")";
                        break;
                    case INCLUDE:
                        what = "entry with that worker required again";
                        break;
                    default:
                        what = entry(rule.action.config);
                        break;
                }
                System.out.println("line " + rule.line + ": when " + rule.condition() + ": install from the earliest safe round "
                    + what);
            }
            return 0;
        }

        private String entry(final SyncConfig config) {
            final SyncConfig.Resolved r = config.resolve(workers);
            return "{config " + config + ", bound " + (r.bound == SyncConfig.UNBOUNDED ? "unbounded" : r.bound)
                + ", required " + r.required + ", quorum " + r.quorum + ", timeout "
                + (r.timeoutNs == SyncConfig.NO_TIMEOUT ? "none" : r.timeoutNs / 1e6 + " ms") + ", late "
                + r.lateMode.name().toLowerCase(java.util.Locale.ROOT) + "}";
        }
    }
}
