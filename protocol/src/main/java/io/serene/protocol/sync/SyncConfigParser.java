package io.serene.protocol.sync;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * Parses sync configs ({@code ssp:2+timeout:50}) and schedules of them
 * ({@code bsp@0,ssp:3@100,fastest:14@200}). Errors name the bad part and what was expected.
 */
public final class SyncConfigParser {
    static final String EXPECTED = "expected bsp, ssp:S, asp, psp:B, psp:B,S, wbsp, fastest:K, quorum:K, sample:B, timeout:MS, "
        + "timeout:P%, exclude:W1,W2, busy, drop or fold";

    private SyncConfigParser() {
    }

    public static SyncConfig parse(final String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("empty sync config (" + EXPECTED + ")");
        }
        SyncConfig config = null;
        int base = 0;
        for (final String raw : text.split("\\+", -1)) {
            final String part = raw.trim();
            if (part.isEmpty()) {
                throw new IllegalArgumentException("empty part in sync config '" + text + "' (" + EXPECTED + ")");
            }
            final int colon = part.indexOf(':');
            final String name = colon < 0 ? part : part.substring(0, colon);
            final String arg = colon < 0 ? null : part.substring(colon + 1);
            switch (name) {
                case "bsp":
                case "asp":
                    noArgument(part, arg, text);
                    base++;
                    config = bound(config, name.equals("bsp") ? 0 : SyncConfig.UNBOUNDED);
                    break;
                case "ssp":
                    base++;
                    config = bound(config, integer(part, arg, text, 0));
                    break;
                case "psp": {
                    // psp:B (pBSP) or psp:B,S (pSSP): a sample of B, bound S
                    base++;
                    final String[] numbers = arg == null ? new String[0] : arg.split(",", -1);
                    if (numbers.length < 1 || numbers.length > 2) {
                        throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "' needs a sample size"
                            + " and an optional bound, as in psp:2 or psp:2,3");
                    }
                    final int sample = integer(part, numbers[0], text, 1);
                    config = bound(config, numbers.length == 2 ? integer(part, numbers[1], text, 0) : 0).withSample(sample);
                    break;
                }
                case "wbsp":
                    // WBSP: BSP's release rule, workers busy while they wait
                    noArgument(part, arg, text);
                    base++;
                    config = bound(config, 0).withBusy(true);
                    break;
                case "busy":
                    noArgument(part, arg, text);
                    config = orBsp(config).withBusy(true);
                    break;
                case "sample":
                    config = orBsp(config).withSample(integer(part, arg, text, 1));
                    break;
                case "fastest":
                    config = orBsp(config).requiringNone().withQuorum(integer(part, arg, text, 1));
                    break;
                case "quorum":
                    config = orBsp(config).withQuorum(integer(part, arg, text, 1));
                    break;
                case "timeout":
                    config = arg != null && arg.trim().endsWith("%")
                        ? orBsp(config).withTimeoutPercent(percent(part, arg, text))
                        : orBsp(config).withTimeoutNs(millis(part, arg, text));
                    break;
                case "exclude":
                    config = orBsp(config).excluding(workers(part, arg, text));
                    break;
                case "drop":
                case "fold":
                    noArgument(part, arg, text);
                    config = orBsp(config).withLateMode(name.equals("drop") ? LateMode.DROP : LateMode.FOLD);
                    break;
                default:
                    throw new IllegalArgumentException("unknown part '" + part + "' in sync config '" + text + "' ("
                        + EXPECTED + ")");
            }
            if (base > 1) {
                throw new IllegalArgumentException("sync config '" + text + "' names more than one of bsp, ssp, asp, psp, wbsp");
            }
        }
        return config;
    }

    /** A schedule {@code config@firstRound,...}; a bare config means {@code config@0}. */
    public static List<SyncSchedule.Entry> parseSchedule(final String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("empty schedule (expected CONFIG or CONFIG@ROUND,CONFIG@ROUND,...)");
        }
        final List<SyncSchedule.Entry> entries = new ArrayList<>();
        for (final String raw : text.split(",(?=[a-z])")) {
            final String item = raw.trim();
            final int at = item.lastIndexOf('@');
            final String configText = at < 0 ? item : item.substring(0, at);
            final int round;
            if (at < 0) {
                round = 0;
            } else {
                try {
                    round = Integer.parseInt(item.substring(at + 1).trim());
                } catch (final NumberFormatException ex) {
                    throw new IllegalArgumentException("bad first round '" + item.substring(at + 1) + "' in '" + item
                        + "' (expected CONFIG@ROUND with ROUND a whole number)");
                }
            }
            entries.add(new SyncSchedule.Entry(round, parse(configText)));
        }
        return entries;
    }

    private static SyncConfig orBsp(final SyncConfig config) {
        return config == null ? SyncConfig.bsp() : config;
    }

    private static SyncConfig bound(final SyncConfig config, final int bound) {
        return orBsp(config).withBound(bound);
    }

    private static void noArgument(final String part, final String arg, final String text) {
        if (arg != null) {
            throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "' takes no argument");
        }
    }

    private static int integer(final String part, final String arg, final String text, final int min) {
        if (arg == null || arg.isEmpty()) {
            throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "' needs a number, as in "
                + part + (part.endsWith(":") ? "" : ":") + "2");
        }
        try {
            final int value = Integer.parseInt(arg.trim());
            if (value < min) {
                throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "': the number must be >= "
                    + min);
            }
            return value;
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "': '" + arg
                + "' is not a whole number");
        }
    }

    private static long millis(final String part, final String arg, final String text) {
        if (arg == null || arg.isEmpty()) {
            throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "' needs milliseconds, as in timeout:50");
        }
        try {
            final BigDecimal ms = new BigDecimal(arg.trim());
            if (ms.signum() <= 0) {
                throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "': the timeout must be > 0");
            }
            return ms.movePointRight(6).longValueExact();
        } catch (final NumberFormatException | ArithmeticException ex) {
            throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "': '" + arg
                + "' is not a number of milliseconds");
        }
    }

    private static int percent(final String part, final String arg, final String text) {
        final String number = arg.trim().substring(0, arg.trim().length() - 1).trim();
        try {
            final int p = Integer.parseInt(number);
            if (p >= 1 && p <= SyncConfig.MAX_TIMEOUT_PERCENT) {
                return p;
            }
        } catch (final NumberFormatException ex) {
            // the message below
        }
        throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "': a relative timeout is a whole"
            + " percent of the round time from 1% to " + SyncConfig.MAX_TIMEOUT_PERCENT + "%, as in timeout:30%");
    }

    private static BitSet workers(final String part, final String arg, final String text) {
        if (arg == null || arg.isEmpty()) {
            throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "' needs worker ids, as in exclude:3,7");
        }
        final BitSet set = new BitSet();
        for (final String id : arg.split(",")) {
            try {
                final int w = Integer.parseInt(id.trim());
                if (w < 0) {
                    throw new NumberFormatException();
                }
                set.set(w);
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("'" + part + "' in sync config '" + text + "': '" + id
                    + "' is not a worker id");
            }
        }
        return set;
    }
}
