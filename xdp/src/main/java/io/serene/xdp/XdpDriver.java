package io.serene.xdp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The XDP switch's driver process (serene_xdp_driver.c): it loads the program, attaches it to the switch's
 * ports, and writes and reads its maps for the Java side, one command a line. It detaches every port when
 * its stdin closes, so a switch process that dies, however, leaves no program attached. Not thread-safe:
 * the switch thread's.
 */
public final class XdpDriver implements AutoCloseable {
    private static final HexFormat HEX = HexFormat.of();
    private final Process process;
    private final Writer in;
    private final BufferedReader out;
    private final int processors;

    private XdpDriver(final Process process) throws IOException {
        this.process = process;
        this.in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.US_ASCII);
        this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII));
        final String ready = out.readLine();
        if (ready == null || !ready.startsWith("ready ")) {
            final String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            throw new IOException("the XDP driver did not start: " + lastLines(err, 40));
        }
        this.processors = Integer.parseInt(ready.substring(6).trim());
        // its verifier log, if any, is not read again: let it drain
        final Thread drain = new Thread(() -> {
            try {
                process.getErrorStream().transferTo(System.err);
            } catch (final IOException ignored) {
                // the driver ended
            }
        }, "xdp-driver-stderr");
        drain.setDaemon(true);
        drain.start();
    }

    /** Starts the driver of a built program (loading it into the kernel). */
    public static XdpDriver start(final XdpBuild.Built built) throws IOException {
        return new XdpDriver(new ProcessBuilder(List.of(built.driver().toString(), built.program().toString())).start());
    }

    /** Possible processors (a per-processor map's value is this many values). */
    public int processors() {
        return processors;
    }

    /** Attaches the pipeline to the interface {@code ifindex} and adds it to the ports results go out of. */
    public void port(final int ifindex) throws IOException {
        expectOk(call("port " + ifindex), "port " + ifindex);
    }

    public void put(final String map, final byte[] key, final byte[] value) throws IOException {
        expectOk(call("put " + map + " " + HEX.formatHex(key) + " " + HEX.formatHex(value)), "put " + map);
    }

    public void delete(final String map, final byte[] key) throws IOException {
        expectOk(call("del " + map + " " + HEX.formatHex(key)), "del " + map);
    }

    /** An entry's value (a per-processor map's: every processor's, one after the other, each rounded up to 8 bytes). */
    public byte[] get(final String map, final byte[] key) throws IOException {
        final String answer = call("get " + map + " " + HEX.formatHex(key));
        if (answer.startsWith("error")) {
            throw new IOException("XDP driver: get " + map + ": " + answer);
        }
        return HEX.parseHex(answer);
    }

    /** An entry's value read under its spin lock, as the program reads it between its own lock and unlock. */
    public byte[] getLocked(final String map, final byte[] key) throws IOException {
        final String answer = call("getl " + map + " " + HEX.formatHex(key));
        if (answer.startsWith("error")) {
            throw new IOException("XDP driver: getl " + map + ": " + answer);
        }
        return HEX.parseHex(answer);
    }

    /** What one of the object's programs did with {@code packet} (BPF_PROG_TEST_RUN): its verdict and the packet after. */
    public record Run(int verdict, byte[] packet) {
    }

    public Run run(final String program, final byte[] packet) throws IOException {
        final String answer = call("run " + program + " " + HEX.formatHex(packet));
        if (answer.startsWith("error")) {
            throw new IOException("XDP driver: run " + program + ": " + answer);
        }
        final int space = answer.indexOf(' ');
        return new Run(Integer.parseInt(answer.substring(0, space)), HEX.parseHex(answer, space + 1, answer.length()));
    }

    /** The switch's next packet number, from the counter the program numbers its packets with. */
    public long number() throws IOException {
        final String answer = call("number");
        if (answer.startsWith("error")) {
            throw new IOException("XDP driver: " + answer);
        }
        return Long.parseUnsignedLong(answer);
    }

    /** The kernel's run count and run time (ns) of the pipeline and of the per-port program, in that order. */
    public long[] stats() throws IOException {
        final String answer = call("stats");
        if (answer.startsWith("error")) {
            throw new IOException("XDP driver: " + answer);
        }
        final String[] parts = answer.trim().split(" ");
        final long[] out = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = Long.parseUnsignedLong(parts[i]);
        }
        return out;
    }

    /**
     * The timeout scanner over the slots of the job in place {@code place} (serene_sweep, on a packet of {@code size}
     * bytes, the job's longest DATA): the RESULT (its UDP payload) of each slot it released, in order.
     */
    public List<byte[]> sweep(final int place, final int size) throws IOException {
        final List<byte[]> results = new ArrayList<>();
        for (String answer = call("sweep " + place + " " + size); !"ok".equals(answer); answer = next()) {
            if (!answer.startsWith("result ")) {
                throw new IOException("XDP driver: sweep: " + answer);
            }
            results.add(HEX.parseHex(answer, 7, answer.length()));
        }
        return results;
    }

    private String call(final String command) throws IOException {
        in.write(command);
        in.write('\n');
        in.flush();
        return next();
    }

    private String next() throws IOException {
        final String answer = out.readLine();
        if (answer == null) {
            throw new IOException("the XDP driver ended (exit " + (process.isAlive() ? "?" : process.exitValue()) + ")");
        }
        return answer;
    }

    private static void expectOk(final String answer, final String what) throws IOException {
        if (!"ok".equals(answer)) {
            throw new IOException("XDP driver: " + what + ": " + answer);
        }
    }

    private static String lastLines(final String text, final int n) {
        final String[] lines = text.split("\n");
        return String.join("\n", Arrays.copyOfRange(lines, Math.max(0, lines.length - n), lines.length));
    }

    /** Detaches every port and unloads the program. */
    @Override
    public void close() {
        try {
            in.close();
        } catch (final IOException ignored) {
            // the driver is gone already
        }
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroy();
                process.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (final InterruptedException ex) {
            process.destroy();
            Thread.currentThread().interrupt();
        }
    }
}
