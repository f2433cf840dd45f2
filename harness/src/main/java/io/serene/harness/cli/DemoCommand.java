package io.serene.harness.cli;

import io.serene.controlplane.PolicyParser;
import io.serene.launch.RunSettings;
import io.serene.launch.RunSummary;
import io.serene.launch.TrainRun;
import io.serene.training.data.FashionMnist;
import io.serene.training.DeviceModel;
import io.serene.training.ModelKind;
import io.serene.training.TrainSettings;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code serene demo}: the embedded default. Finds (or, as root with apt, installs) Fashion-MNIST,
 * then trains the MLP on 4 worker processes through the switch with one persistent straggler, on
 * the modelled clock (a modelled device's step), under BSP, SSP and the adaptive policy, and prints
 * them side by side with each run's fidelity verdict.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = {"The embedded default: 4 worker processes train the MLP on Fashion-MNIST through the switch for one epoch, "
        + "each worker's step a modelled device's (30 ms a batch, the real compute inside it), worker 3 a persistent straggler "
        + "(4x the step), first under BSP, then SSP(2), then the adaptive policy (examples/adaptive.policy); the three side by "
        + "side: JCT, time to 80%% test accuracy, cumulative waiting, compute share, final accuracy, and whether the host kept "
        + "up with the modelled clock. Installs the dataset (apt-get install dataset-fashion-mnist) when run as root and it "
        + "is missing. About two minutes on 2 cores."})
public final class DemoCommand implements Callable<Integer> {
    /** examples/adaptive.policy, as the build puts it on the classpath (the demo runs from anywhere). */
    public static final String ADAPTIVE = adaptivePolicy();

    private static String adaptivePolicy() {
        try (InputStream in = DemoCommand.class.getResourceAsStream("/examples/adaptive.policy")) {
            if (in == null) {
                throw new IllegalStateException("examples/adaptive.policy is not on the classpath: rebuild (mvn install)");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    @Option(names = "--stragglers", defaultValue = "persistent:3:x4", description = "Straggler profile. Default: ${DEFAULT-VALUE}.")
    String stragglers;

    @Option(names = "--step-time", defaultValue = "30ms", description = "The modelled device's step (serene train --step-time; 0: "
        + "the host's clock). Default: ${DEFAULT-VALUE}.")
    String stepTime;

    @Option(names = "--epochs", defaultValue = "1", description = "Epochs per run. Default: ${DEFAULT-VALUE}.")
    double epochs;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of every run. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(names = "--data", description = "Fashion-MNIST directory. Default: /usr/share/datasets/fashion-mnist (installed if missing "
        + "and running as root).")
    Path data;

    @Option(names = "--out", description = "Directory for the three runs' records. Default: runs/demo-<date>-<time>.")
    Path out;

    @Override
    public Integer call() throws Exception {
        final PrintStream console = System.out;
        final Path dataDir = data != null ? data : FashionMnist.DEBIAN_DIR;
        if (data == null) {
            ensureDataset(console);
        }
        final Path base = out != null ? out : TrainCommand.defaultOut("demo");
        final String[] names = {"bsp", "ssp:2", "adaptive"};
        final List<RunSummary> summaries = new ArrayList<>();
        for (final String name : names) {
            console.println();
            console.println("== " + name + " ==");
            final RunSettings.Builder s = RunSettings.builder().workers(4)
                .training(TrainSettings.builder().model(ModelKind.MLP).stragglers(stragglers).epochs(epochs).seed(seed)
                    .device(DeviceModel.parse("--step-time", stepTime)).data(dataDir).build())
                .out(base.resolve(name.replace(':', '-')));
            if (name.equals("adaptive")) {
                s.policy(PolicyParser.parse(ADAPTIVE), null);
            } else {
                s.sync(name);
            }
            final RunSummary summary = new TrainRun(s.build(), console).run();
            summary.printHeadline(console);
            summaries.add(summary);
        }
        console.println();
        console.printf(Locale.ROOT, "4 workers, MLP, %s epoch(s), stragglers %s, seed %d, %s (records in %s)%n", fmt(epochs), stragglers,
            seed, stepTime.equals("0") ? "the host's clock" : "modelled step " + stepTime, base);
        console.printf("%-10s %9s %9s %12s %12s %9s %10s %9s  %s%n", "policy", "JCT (s)", "speed-up", "TTA 0.80 (s)", "waiting (s)",
            "compute", "accuracy", "switches", "clock");
        final double bspJct = summaries.get(0).jctSeconds();
        for (int i = 0; i < names.length; i++) {
            final RunSummary r = summaries.get(i);
            final Double tta = r.ttaSeconds();
            final RunSummary.Fidelity f = r.fidelity();
            console.printf(Locale.ROOT, "%-10s %9.2f %8.2fx %12s %12.2f %9.2f %10.4f %9d  %s%n", names[i], r.jctSeconds(),
                bspJct / r.jctSeconds(), tta == null ? "never" : String.format(Locale.ROOT, "%.2f", tta), r.cumulativeWaitingSeconds(),
                r.computeShare(), r.finalAccuracy(), r.modeSwitches(),
                !f.clock().equals("modelled") ? "host" : f.faithful() ? "modelled, faithful" : "modelled, NOT faithful");
        }
        return 0;
    }

    private static String fmt(final double v) {
        return v == Math.rint(v) ? String.valueOf((long) v) : String.valueOf(v);
    }

    /** Finds Fashion-MNIST where Debian installs it; installs the package when running as root with apt. */
    static void ensureDataset(final PrintStream console) throws IOException, InterruptedException {
        final Path dir = FashionMnist.DEBIAN_DIR;
        if (Files.isRegularFile(dir.resolve("train-images-idx3-ubyte.gz"))) {
            return;
        }
        final boolean root = "root".equals(System.getProperty("user.name"));
        final boolean apt = Files.isExecutable(Path.of("/usr/bin/apt-get"));
        if (!root || !apt) {
            throw new IllegalArgumentException("Fashion-MNIST is not in " + dir + ": install Debian's package " + FashionMnist.PACKAGE
                + " (sudo apt-get install " + FashionMnist.PACKAGE + ") or pass --data DIR");
        }
        console.println("Fashion-MNIST is not in " + dir + ": installing " + FashionMnist.PACKAGE + " with apt-get ...");
        if (run("apt-get", "install", "-y", "-q", FashionMnist.PACKAGE) != 0) {
            console.println("apt-get install failed; updating the package lists and trying again ...");
            if (run("apt-get", "update", "-q") != 0 || run("apt-get", "install", "-y", "-q", FashionMnist.PACKAGE) != 0) {
                throw new IllegalStateException("could not install " + FashionMnist.PACKAGE + " with apt-get (see its output above)");
            }
        }
    }

    private static int run(final String... command) throws IOException, InterruptedException {
        final ProcessBuilder pb = new ProcessBuilder(command).inheritIO();
        pb.environment().put("DEBIAN_FRONTEND", "noninteractive");
        return pb.start().waitFor();
    }
}
