package io.serene.controlplane;

import io.serene.controlplane.PolicyToken.Kind;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Parses the policy language (docs/policy.md), one statement per line, {@code #} comments:
 * <pre>
 *   policy NAME
 *   group GROUP = WORKER (, WORKER)*
 *   start [GROUP:] CONFIG
 *   smooth N
 *   auto [floor P%]                                       (the controller chooses the config: no groups, no rules)
 *   when METRIC CMP NUMBER [for N rounds] [in [GROUP:] CONFIG] then ACTION
 *   when failed(worker) [for N rounds] then ACTION           (failed(worker) == 1)
 *
 *   METRIC := lag | round_time | round | waiting_share | staleness | slowdown(worker) | failed(worker)
 *   CMP    := &gt;= | &lt;= | &gt; | &lt; | ==
 *   ACTION := [GROUP:] CONFIG | exclude(worker) [fold|drop] | include(worker)
 *   CONFIG := PART (+ PART)*,  PART := bsp | asp | ssp(S) | psp(B) | psp(B, S) | wbsp | sample(B) | fastest(K)
 *                                     | quorum(K) | timeout(MS) | timeout(P%) | busy | fold | drop
 * </pre>
 * Errors are {@link PolicyException}s naming line and column.
 */
public final class PolicyParser {
    private static final Set<String> COMPARATORS = Set.of(">=", "<=", ">", "<", "==");


    private final String source;
    private final Map<String, Policy.Group> groups = new LinkedHashMap<>();
    private List<PolicyToken> tokens;
    private int pos;
    private int line;
    private int autoLine;

    private PolicyParser(final String source) {
        this.source = source;
    }

    public static Policy parse(final String source) {
        return new PolicyParser(source).policy();
    }

    /**
     * The built-in policy a {@code --policy} value or an experiment names ({@value Policy#AUTO}: the
     * {@code auto} policy with its default floor), or null if the text names none (a sync config).
     */
    public static Policy builtIn(final String text) {
        return text != null && text.trim().equals(Policy.AUTO) ? Policy.auto(Policy.Auto.DEFAULT_FLOOR_PERCENT) : null;
    }

    private Policy policy() {
        String name = null;
        SyncConfig start = null;
        final Map<Integer, SyncConfig> groupStarts = new HashMap<>();
        final List<Policy.Rule> rules = new ArrayList<>();
        int smoothing = 0;
        Policy.Auto auto = null;
        PolicyToken autoToken = null;
        PolicyToken ruleToken = null;
        final String[] lines = source.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            line = i + 1;
            tokens = PolicyToken.tokenize(source, line, lines[i]);
            pos = 0;
            if (peek().kind == Kind.END) {
                continue;
            }
            final PolicyToken first = next();
            switch (first.text) {
                case "policy":
                    if (name != null) {
                        throw error(first, "the policy is already named '" + name + "'");
                    }
                    name = expectWord("a policy name").text;
                    break;
                case "group":
                    group();
                    break;
                case "start": {
                    final Policy.Group g = groupPrefix();
                    if (g == null) {
                        if (start != null) {
                            throw error(first, "a policy has one start config (per group)");
                        }
                        start = startConfig();
                    } else {
                        if (groupStarts.containsKey(g.index)) {
                            throw error(first, "group " + g.name + " already has a start config");
                        }
                        groupStarts.put(g.index, startConfig());
                    }
                    break;
                }
                case "smooth":
                    if (smoothing != 0) {
                        throw error(first, "the policy already says smooth " + smoothing);
                    }
                    smoothing = smoothing();
                    break;
                case "auto":
                    if (auto != null) {
                        throw error(first, "the policy already says auto");
                    }
                    autoToken = first;
                    auto = auto();
                    break;
                case "when":
                    ruleToken = ruleToken == null ? first : ruleToken;
                    rules.add(rule());
                    break;
                default:
                    throw error(first, "expected 'policy', 'group', 'start', 'smooth', 'auto' or 'when', found " + first.describe());
            }
            if (peek().kind != Kind.END) {
                throw error(peek(), "unexpected " + peek().describe() + " after the statement");
            }
        }
        if (auto != null && (ruleToken != null || !groups.isEmpty())) {
            line = autoLine;
            throw error(autoToken, "an auto policy chooses the config itself: remove its "
                + (ruleToken != null ? "when rules" : "groups") + " or the auto line");
        }
        return new Policy(name == null ? "unnamed" : name, start == null ? SyncConfig.bsp() : start,
            new ArrayList<>(groups.values()), groupStarts, rules, smoothing == 0 ? Policy.DEFAULT_SMOOTHING : smoothing, auto);
    }

    /** {@code auto [floor P%]}: the floor is the share of the workers' samples every round keeps. */
    private Policy.Auto auto() {
        autoLine = line;
        if (peek().kind == Kind.END) {
            return new Policy.Auto(Policy.Auto.DEFAULT_FLOOR_PERCENT);
        }
        final PolicyToken floor = next();
        if (!floor.text.equals("floor")) {
            throw error(floor, "expected 'floor P%' or the end of the line after auto, found " + floor.describe());
        }
        final PolicyToken n = next();
        final int percent = n.kind == Kind.NUMBER && n.text.matches("[0-9]{1,3}") ? Integer.parseInt(n.text) : 0;
        if (percent < 1 || percent > 100 || !peek().text.equals("%")) {
            throw error(n, "expected the share of the samples every round keeps, 1% to 100%, found " + n.describe());
        }
        next();
        return new Policy.Auto(percent);
    }

    /** {@code smooth N}: slowdown(worker) reads the median of each worker's last N compute times. */
    private int smoothing() {
        final PolicyToken n = next();
        final int samples = n.kind == Kind.NUMBER && n.text.matches("[0-9]{1,3}") ? Integer.parseInt(n.text) : 0;
        if (samples < 1 || samples > Policy.MAX_SMOOTHING) {
            throw error(n, "expected the number of samples slowdown(worker) takes the median of, a whole number from 1 to "
                + Policy.MAX_SMOOTHING + ", found " + n.describe());
        }
        return samples;
    }

    /** {@code group NAME = W (, W)*}: a new group of workers no other group has. */
    private void group() {
        final PolicyToken name = expectWord("a group name");
        if (PolicyToken.RESERVED.contains(name.text)) {
            throw error(name, "'" + name.text + "' is reserved; choose another group name");
        }
        if (groups.containsKey(name.text)) {
            throw error(name, "group " + name.text + " is already declared");
        }
        if (groups.size() == Policy.MAX_GROUPS) {
            throw error(name, "at most " + Policy.MAX_GROUPS + " groups (besides " + Policy.DEFAULT_GROUP + ")");
        }
        expectSymbol("=");
        final BitSet workers = new BitSet();
        do {
            final PolicyToken n = next();
            if (n.kind != Kind.NUMBER || n.text.contains(".") || n.text.length() > 5) {
                throw error(n, "expected a worker id (a whole number) in group " + name.text + ", found " + n.describe());
            }
            final int w = Integer.parseInt(n.text);
            for (final Policy.Group other : groups.values()) {
                if (other.workers().get(w)) {
                    throw error(n, "worker " + w + " is already in group " + other.name);
                }
            }
            if (workers.get(w)) {
                throw error(n, "worker " + w + " is named twice");
            }
            workers.set(w);
        } while (peek().text.equals(",") && next() != null);
        groups.put(name.text, new Policy.Group(name.text, groups.size() + 1, workers));
    }

    /** An optional {@code GROUP:} before a config: the declared group, or null if none is named. */
    private Policy.Group groupPrefix() {
        if (peek().kind != Kind.WORD || pos + 1 >= tokens.size() || !tokens.get(pos + 1).text.equals(":")) {
            return null;
        }
        final PolicyToken name = next();
        next();
        final Policy.Group g = groups.get(name.text);
        if (g == null) {
            throw error(name, name.text.equals(Policy.DEFAULT_GROUP) ? "the default group takes configs without a prefix"
                : "unknown group '" + name.text + "'" + (groups.isEmpty() ? " (declare it first: group NAME = W1, W2)"
                    : " (declared: " + String.join(", ", groups.keySet()) + ")"));
        }
        return g;
    }

    private Policy.Rule rule() {
        final PolicyToken metricToken = expectWord("a metric (lag, slowdown(worker), failed(worker), round_time, round, waiting_share, "
            + "staleness)");
        final Policy.Metric metric;
        switch (metricToken.text) {
            case "lag":
                metric = Policy.Metric.LAG;
                break;
            case "round_time":
                metric = Policy.Metric.ROUND_TIME;
                break;
            case "round":
                metric = Policy.Metric.ROUND;
                break;
            case "waiting_share":
                metric = Policy.Metric.WAITING_SHARE;
                break;
            case "staleness":
                metric = Policy.Metric.STALENESS;
                break;
            case "slowdown":
                expectWorkerArgument();
                metric = Policy.Metric.SLOWDOWN;
                break;
            case "failed":
                expectWorkerArgument();
                metric = Policy.Metric.FAILED;
                break;
            default:
                throw error(metricToken, "unknown metric " + metricToken.describe()
                    + " (expected lag, slowdown(worker), failed(worker), round_time, waiting_share or staleness)");
        }
        // failed(worker) alone: failed(worker) == 1
        final boolean bare = metric == Policy.Metric.FAILED && !COMPARATORS.contains(peek().text);
        final PolicyToken cmp = bare ? null : next();
        final Policy.Comparator comparator;
        switch (bare ? "==" : cmp.text) {
            case ">=":
                comparator = Policy.Comparator.GE;
                break;
            case "<=":
                comparator = Policy.Comparator.LE;
                break;
            case ">":
                comparator = Policy.Comparator.GT;
                break;
            case "<":
                comparator = Policy.Comparator.LT;
                break;
            case "==":
                comparator = Policy.Comparator.EQ;
                break;
            default:
                throw error(cmp, "expected a comparison (>=, <=, >, <, ==) after '" + metric.text + "', found "
                    + cmp.describe());
        }
        final double threshold;
        if (bare) {
            threshold = 1;
        } else {
            final PolicyToken number = next();
            if (number.kind != Kind.NUMBER) {
                throw error(number, "expected a number after '" + cmp.text + "', found " + number.describe());
            }
            threshold = Double.parseDouble(number.text);
        }
        int rounds = 1;
        if (peek().text.equals("for")) {
            next();
            final PolicyToken n = next();
            if (n.kind != Kind.NUMBER || n.text.contains(".") || Integer.parseInt(n.text) < 1) {
                throw error(n, "expected a whole number of rounds >= 1 after 'for', found " + n.describe());
            }
            rounds = Integer.parseInt(n.text);
            final PolicyToken unit = next();
            if (!unit.text.equals("rounds") && !unit.text.equals("round")) {
                throw error(unit, "expected 'rounds' after 'for " + n.text + "', found " + unit.describe());
            }
        }
        SyncConfig in = null;
        Policy.Group inGroup = null;
        if (peek().text.equals("in")) {
            final PolicyToken inToken = next();
            if (metric.perWorker()) {
                throw error(inToken, "'in CONFIG' guards config rules; a per-worker rule applies in every config");
            }
            inGroup = groupPrefix();
            in = config();
        }
        final PolicyToken then = next();
        if (!then.text.equals("then")) {
            throw error(then, "expected 'then', 'for N rounds' or 'in CONFIG', found " + then.describe());
        }
        final PolicyToken actionStart = peek();
        final Policy.Action action;
        if (actionStart.text.equals("exclude") || actionStart.text.equals("include")) {
            next();
            expectWorkerArgument();
            if (!metric.perWorker()) {
                throw error(actionStart, actionStart.text + "(worker) needs a per-worker condition such as slowdown(worker)");
            }
            if (actionStart.text.equals("include")) {
                action = Policy.Action.include();
            } else {
                LateMode mode = LateMode.FOLD;
                if (peek().text.equals("drop") || peek().text.equals("fold")) {
                    mode = next().text.equals("drop") ? LateMode.DROP : LateMode.FOLD;
                }
                action = Policy.Action.exclude(mode);
            }
        } else {
            if (metric.perWorker()) {
                throw error(actionStart, "a per-worker condition needs exclude(worker) or include(worker), found "
                    + actionStart.describe());
            }
            final Policy.Group group = groupPrefix();
            action = group == null ? Policy.Action.config(config()) : Policy.Action.config(group, config());
        }
        return new Policy.Rule(metric, comparator, threshold, rounds, inGroup, in, action, line);
    }

    /** A start config: installed before any round is measured, so with no relative timeout. */
    private SyncConfig startConfig() {
        final PolicyToken at = peek();
        final SyncConfig config = config();
        if (config.timeoutPercent() != 0) {
            throw error(at, "a start config cannot have a relative timeout (timeout(" + config.timeoutPercent()
                + "%)): there is no round time before the first round; set it with a rule (when round >= 1 then "
                + config + ")");
        }
        return config;
    }

    private SyncConfig config() {
        SyncConfig config = null;
        int bases = 0;
        do {
            final PolicyToken part = expectWord("a config (bsp, asp, ssp(S), psp(B), psp(B, S), wbsp, fastest(K), quorum(K), sample(B), "
                + "timeout(MS), timeout(P%), busy, fold, drop)");
            switch (part.text) {
                case "bsp":
                case "asp":
                    bases++;
                    config = (config == null ? SyncConfig.bsp() : config)
                        .withBound(part.text.equals("bsp") ? 0 : SyncConfig.UNBOUNDED);
                    break;
                case "ssp":
                    bases++;
                    config = (config == null ? SyncConfig.bsp() : config).withBound(intArgument(part, 0));
                    break;
                case "psp": {
                    // psp(B): pBSP, psp(B, S): pSSP with bound S
                    bases++;
                    expectSymbol("(");
                    final int sample = number(part, 1);
                    int bound = 0;
                    if (peek().text.equals(",")) {
                        next();
                        bound = number(part, 0);
                    }
                    expectSymbol(")");
                    config = (config == null ? SyncConfig.bsp() : config).withBound(bound).withSample(sample);
                    break;
                }
                case "wbsp":
                    // WBSP: BSP's release rule, workers busy while they wait
                    bases++;
                    config = (config == null ? SyncConfig.bsp() : config).withBound(0).withBusy(true);
                    break;
                case "busy":
                    config = (config == null ? SyncConfig.bsp() : config).withBusy(true);
                    break;
                case "sample":
                    config = (config == null ? SyncConfig.bsp() : config).withSample(intArgument(part, 1));
                    break;
                case "fastest":
                    config = (config == null ? SyncConfig.bsp() : config).requiringNone().withQuorum(intArgument(part, 1));
                    break;
                case "quorum":
                    config = (config == null ? SyncConfig.bsp() : config).withQuorum(intArgument(part, 1));
                    break;
                case "timeout":
                    config = timeout(config == null ? SyncConfig.bsp() : config, part);
                    break;
                case "fold":
                case "drop":
                    config = (config == null ? SyncConfig.bsp() : config)
                        .withLateMode(part.text.equals("drop") ? LateMode.DROP : LateMode.FOLD);
                    break;
                default:
                    throw error(part, "unknown config " + part.describe()
                        + " (expected bsp, asp, ssp(S), psp(B), psp(B, S), wbsp, fastest(K), quorum(K), sample(B), timeout(MS), "
                        + "timeout(P%), busy, fold or drop)");
            }
            if (bases > 1) {
                throw error(part, "a config names at most one of bsp, asp, ssp, psp, wbsp");
            }
        } while (peek().text.equals("+") && next() != null);
        return config;
    }

    private int intArgument(final PolicyToken name, final int min) {
        expectSymbol("(");
        final int value = number(name, min);
        expectSymbol(")");
        return value;
    }

    /** A whole number >= {@code min} inside {@code name(...)}. */
    private int number(final PolicyToken name, final int min) {
        final PolicyToken n = next();
        if (n.kind != Kind.NUMBER || n.text.contains(".") || Long.parseLong(n.text) < min || Long.parseLong(n.text) > Integer.MAX_VALUE) {
            throw error(n, "expected a whole number >= " + min + " in " + name.text + "(...), found " + n.describe());
        }
        return Integer.parseInt(n.text);
    }

    /** {@code timeout(MS)}, or {@code timeout(P%)}: P% of the typical round time. */
    private SyncConfig timeout(final SyncConfig config, final PolicyToken name) {
        expectSymbol("(");
        final PolicyToken n = next();
        if (n.kind == Kind.NUMBER && peek().text.equals("%")) {
            next();
            if (n.text.contains(".") || n.text.length() > 4 || Integer.parseInt(n.text) < 1
                || Integer.parseInt(n.text) > SyncConfig.MAX_TIMEOUT_PERCENT) {
                throw error(n, "expected a whole percent of the round time from 1 to " + SyncConfig.MAX_TIMEOUT_PERCENT
                    + " in " + name.text + "(...%), found " + n.describe());
            }
            expectSymbol(")");
            return config.withTimeoutPercent(Integer.parseInt(n.text));
        }
        if (n.kind != Kind.NUMBER || Double.parseDouble(n.text) <= 0) {
            throw error(n, "expected milliseconds > 0 or a percent of the round time in " + name.text + "(...), found "
                + n.describe());
        }
        expectSymbol(")");
        return config.withTimeoutNs(Math.round(Double.parseDouble(n.text) * 1e6));
    }

    private PolicyToken expectWord(final String what) {
        final PolicyToken t = next();
        if (t.kind != Kind.WORD) {
            throw error(t, "expected " + what + ", found " + t.describe());
        }
        return t;
    }

    /** {@code (worker)}, after a per-worker metric or action. */
    private void expectWorkerArgument() {
        expectSymbol("(");
        expectKeyword("worker");
        expectSymbol(")");
    }

    private void expectKeyword(final String word) {
        final PolicyToken t = next();
        if (!t.text.equals(word)) {
            throw error(t, "expected '" + word + "', found " + t.describe());
        }
    }

    private void expectSymbol(final String symbol) {
        final PolicyToken t = next();
        if (!t.text.equals(symbol)) {
            throw error(t, "expected '" + symbol + "', found " + t.describe());
        }
    }

    private PolicyToken peek() {
        return tokens.get(pos);
    }

    private PolicyToken next() {
        final PolicyToken t = tokens.get(pos);
        if (t.kind != Kind.END) {
            pos++;
        }
        return t;
    }

    private PolicyException error(final PolicyToken at, final String message) {
        return new PolicyException(source, line, at.column, message);
    }
}
