package io.serene.harness;

import picocli.CommandLine.Command;

import java.util.concurrent.Callable;

/** {@code serene demo}: the embedded default, an exact allreduce of 4 workers through the switch over UDP. */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = "Runs the embedded default: a switch and 4 workers over UDP on 127.0.0.1 with 1%% injected loss, "
        + "aggregating 1M-element gradients for 5 rounds, checked exact, against a raw UDP echo.")
public final class DemoCommand implements Callable<Integer> {
    @Override
    public Integer call() throws Exception {
        return new picocli.CommandLine(new BenchCommand.Allreduce()).execute(
            "--workers", "4", "--elements", "1000000", "--rounds", "5", "--loss", "0.01", "--seed", "7");
    }
}
