package io.serene.sim;

import io.serene.controlplane.Controller;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.Json;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What a run measured. */
public final class ScenarioResult {
    public long seed;
    public boolean completed;
    public long jctNs;
    public long allWorkersDoneNs;
    public long wallNs;
    public long events;
    public long cumulativeWaitingNs;
    public double computeShare;
    public int maxStaleness;
    public double meanStaleness;
    /** Rounds workers handed nothing in for: released without them before they started, or while they computed. */
    public long skippedRounds;
    /** Rounds a worker behind by more than the timeout sat out, waiting for their release (RoundPlan.sitsOut). */
    public long sitOuts;
    /** Gradients computed for a round released meanwhile and dropped (late mode drop). */
    public long droppedGradients;
    /** WBSP: gradients workers computed while they waited for clearance (sent with their next contribution). */
    public long busyGradients;
    public long included;
    public long folded;
    public long dropped;
    public long refusals;
    public long late;
    /** Reports of compute times for rounds released without their workers (DATA with flag REPORT). */
    public long reports;
    public long partialReleases;
    public long timeoutReleases;
    public long configInstalls;
    public boolean exactlyOnce;
    public boolean agreement;
    public boolean boundRespected;
    public boolean hotSwapConsistent;
    public int errors;
    public String schedule;
    public List<Controller.Decision> decisions = List.of();

    /** The schedules the groups followed, as text: group 0's, then each other group with members. */
    static String schedules(final SyncSchedule[] installed, final BitSet[] members) {
        final StringBuilder schedule = new StringBuilder(installed[0].toString());
        for (int g = 1; g < members.length; g++) {
            if (!members[g].isEmpty()) {
                schedule.append(" | group ").append(g).append(' ').append(members[g]).append(": ").append(installed[g]);
            }
        }
        return schedule.toString();
    }

    public boolean allChecks() {
        return completed && exactlyOnce && agreement && boundRespected && hotSwapConsistent && errors == 0;
    }

    public Map<String, Object> toJson() {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("schemaVersion", Json.SCHEMA_VERSION);
        m.put("jct", jctNs / 1e9);
        m.put("allWorkersDone", allWorkersDoneNs / 1e9);
        m.put("cumulativeWaiting", cumulativeWaitingNs / 1e9);
        m.put("computeShare", computeShare);
        m.put("maxStaleness", maxStaleness);
        m.put("meanStaleness", meanStaleness);
        m.put("skippedRounds", skippedRounds);
        m.put("droppedGradients", droppedGradients);
        m.put("sitOuts", sitOuts);
        m.put("busyGradients", busyGradients);
        m.put("exactlyOnce", exactlyOnce);
        m.put("agreement", agreement);
        m.put("boundRespected", boundRespected);
        m.put("hotSwapConsistent", hotSwapConsistent);
        m.put("completed", completed);
        m.put("seed", seed);
        m.put("included", included);
        m.put("folds", folded);
        m.put("drops", dropped);
        m.put("refusals", refusals);
        m.put("late", late);
        m.put("partialReleases", partialReleases);
        m.put("timeoutReleases", timeoutReleases);
        m.put("configInstalls", configInstalls);
        m.put("errors", errors);
        m.put("events", events);
        m.put("eventsPerSecond", events / (wallNs / 1e9));
        m.put("schedule", schedule);
        m.put("modeSwitches", decisions.size());
        final List<Map<String, Object>> switches = new ArrayList<>();
        for (final Controller.Decision d : decisions) {
            final Map<String, Object> e = new LinkedHashMap<>();
            e.put("round", d.firstRound);
            e.put("from", d.from);
            e.put("to", d.to);
            e.put("reason", d.reason);
            switches.add(e);
        }
        m.put("switches", switches);
        return m;
    }
}
