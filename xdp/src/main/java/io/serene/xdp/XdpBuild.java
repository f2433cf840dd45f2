package io.serene.xdp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Compiles the XDP program for a switch's dimensions, and its driver, with the host's clang (Debian's
 * {@code clang} and {@code libbpf-dev}), into a cache directory named by the sources and dimensions; says
 * plainly what is missing where it cannot (not Linux, not root, no clang, no libbpf headers).
 */
public final class XdpBuild {
    static final String[] SOURCES = {"serene_xdp.h", "serene_xdp.c", "serene_xdp_driver.c"};
    private static final Path CACHE = Path.of(System.getProperty("java.io.tmpdir"), "serene-xdp");

    private XdpBuild() {
    }

    /** The program object and the driver, built. */
    public record Built(Path program, Path driver) {
    }

    /** Why the XDP switch cannot run on this host, or null if it can (as far as can be told before loading it). */
    public static String missing() {
        if (!System.getProperty("os.name", "").toLowerCase().contains("linux")) {
            return "the XDP switch runs on Linux only";
        }
        if (!"root".equals(System.getProperty("user.name"))) {
            return "the XDP switch needs root (it loads a BPF program and attaches it to network interfaces)";
        }
        if (which("clang") == null) {
            return "the XDP switch needs clang to compile its program: apt-get install clang libbpf-dev";
        }
        if (!Files.exists(Path.of("/usr/include/bpf/bpf_helpers.h"))) {
            return "the XDP switch needs libbpf's headers: apt-get install libbpf-dev";
        }
        if (which("ip") == null) {
            return "the XDP switch needs iproute2's ip";
        }
        return null;
    }

    /** Builds (or finds built) the program for {@code dims}. */
    public static Built build(final XdpDimensions dims) throws IOException {
        final String why = missing();
        if (why != null) {
            throw new IOException(why);
        }
        final byte[][] sources = new byte[SOURCES.length][];
        final MessageDigest digest = sha256();
        for (int i = 0; i < SOURCES.length; i++) {
            try (InputStream in = XdpBuild.class.getResourceAsStream(SOURCES[i])) {
                if (in == null) {
                    throw new IOException("missing resource " + SOURCES[i]);
                }
                sources[i] = in.readAllBytes();
            }
            digest.update(sources[i]);
        }
        digest.update(String.join(" ", dims.defines()).getBytes(StandardCharsets.UTF_8));
        final Path dir = CACHE.resolve(HexFormat.of().formatHex(digest.digest(), 0, 8));
        final Built built = new Built(dir.resolve("serene_xdp.o"), dir.resolve("serene-xdp-driver"));
        if (Files.exists(built.program()) && Files.exists(built.driver())) {
            return built;
        }
        final Path work = Files.createDirectories(CACHE).resolve(dir.getFileName() + ".tmp" + ProcessHandle.current().pid());
        Files.createDirectories(work);
        for (int i = 0; i < SOURCES.length; i++) {
            Files.write(work.resolve(SOURCES[i]), sources[i]);
        }
        final List<String> program = new ArrayList<>(List.of("clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu"));
        program.addAll(List.of(dims.defines()));
        program.addAll(List.of("-c", "serene_xdp.c", "-o", "serene_xdp.o"));
        run(work, program);
        run(work, List.of("clang", "-O2", "-o", "serene-xdp-driver", "serene_xdp_driver.c", "-lbpf"));
        try {
            Files.move(work, dir);
        } catch (final IOException raced) {
            // another switch built the same meanwhile: its copy serves
            if (!Files.exists(built.program())) {
                throw raced;
            }
        }
        return built;
    }

    private static void run(final Path dir, final List<String> command) throws IOException {
        final Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        final String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("compiling the XDP switch failed: " + String.join(" ", command) + "\n" + output);
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while compiling the XDP switch", ex);
        }
    }

    static Path which(final String command) {
        for (final String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            final Path p = Path.of(dir, command);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        for (final String dir : new String[] {"/usr/sbin", "/sbin", "/usr/bin"}) {
            final Path p = Path.of(dir, command);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (final NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }
}
