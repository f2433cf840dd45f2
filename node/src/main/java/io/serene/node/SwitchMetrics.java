package io.serene.node;

import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.serene.dataplane.SwitchCounter;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code /metrics} in the Prometheus text format (the Prometheus Java client 1.x), made from the
 * {@link SwitchMonitor}'s latest view, so a scrape never touches the data plane: every counter
 * ({@code serene_switch_*_total}, drops as {@code serene_switch_dropped_packets_total{reason}}),
 * per job R, the config epoch and the config in force, how long the next round has waited and
 * whether it is stalled, per worker its clock, lag, compute estimate and whether the next round
 * waits for it, and the round-time histogram.
 */
public final class SwitchMetrics implements MultiCollector, AutoCloseable {
    private static final String DROP = "DROP_";
    private final SwitchMonitor monitor;
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Histogram rounds = Histogram.builder().name("serene_job_round_seconds")
        .help("Time between R passing a round and the round before it").labelNames("job")
        .classicOnly().classicExponentialUpperBounds(0.001, 2, 16).withoutExemplars().build();
    private final HTTPServer server;

    private SwitchMetrics(final SwitchMonitor monitor, final String bind, final int port) throws IOException {
        this.monitor = monitor;
        registry.register(this);
        registry.register(rounds);
        monitor.addListener((job, round, seconds) -> rounds.labelValues(Integer.toString(job)).observe(seconds));
        server = HTTPServer.builder().hostname(bind).port(port).registry(registry).buildAndStart();
    }

    /** Serves {@code /metrics} on {@code bind:port} (0: any free port). */
    public static SwitchMetrics serve(final SwitchMonitor monitor, final String bind, final int port) throws IOException {
        return new SwitchMetrics(monitor, bind, port);
    }

    public int port() {
        return server.getPort();
    }

    @Override
    public MetricSnapshots collect() {
        final SwitchView view = monitor.latest();
        final List<MetricSnapshot> out = new ArrayList<>();
        if (view == null) {
            return new MetricSnapshots(out);
        }
        final CounterSnapshot.Builder drops = CounterSnapshot.builder().name("serene_switch_dropped_packets")
            .help("Packets the switch dropped, by reason");
        for (final Map.Entry<SwitchCounter, Long> e : view.counters().entrySet()) {
            final String name = e.getKey().name().toLowerCase(Locale.ROOT);
            if (e.getKey().name().startsWith(DROP)) {
                drops.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder()
                    .labels(Labels.of("reason", name.substring(DROP.length()))).value(e.getValue()).build());
            } else {
                out.add(CounterSnapshot.builder().name("serene_switch_" + name).help("Switch counter " + name)
                    .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(e.getValue()).build()).build());
            }
        }
        out.add(drops.build());
        out.add(CounterSnapshot.builder().name("serene_worker_silences").help("Times the failure detector reported a worker silent "
            + "(failed or stopped?)").dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(monitor.silence().reported())
            .build()).build());
        final Map<String, GaugeSnapshot.Builder> gauges = new LinkedHashMap<>();
        gauge(gauges, "serene_switch_jobs", "Jobs the switch holds", Labels.EMPTY, view.jobs().size());
        for (final SwitchView.Job job : view.jobs()) {
            final Labels j = Labels.of("job", Integer.toString(job.job()));
            gauge(gauges, "serene_job_released_round", "R: every round up to it is released", j, job.releasedRound());
            gauge(gauges, "serene_job_workers", "Workers in the job", j, job.clocks().length);
            gauge(gauges, "serene_job_config_epoch", "Config table writes that took", j, job.epoch());
            gauge(gauges, "serene_job_waiting_seconds", "How long round R + 1 has waited", j, job.waitedNs(view.timeNs()) / 1e9);
            gauge(gauges, "serene_job_stalled", "1 when round R + 1 has waited longer than the stall threshold", j,
                monitor.stalls().stalled(job, view.timeNs()) ? 1 : 0);
            gauge(gauges, "serene_job_unseen_round_times", "Rounds whose release time left the ring between two reads", j,
                monitor.unseenRounds(job.job()));
            for (int g = 0; g < job.configs().size(); g++) {
                gauge(gauges, "serene_job_sync_config_info", "The config entry in force for round R + 1, per worker group",
                    j.add("config", job.configs().get(g)), 1);
            }
            for (int w = 0; w < job.clocks().length; w++) {
                final Labels jw = j.add("worker", Integer.toString(w));
                gauge(gauges, "serene_worker_clock", "The highest round the worker contributed to", jw, job.clocks()[w]);
                gauge(gauges, "serene_worker_lag_rounds", "Rounds the worker is behind the job's fastest", jw, job.lag(w));
                gauge(gauges, "serene_worker_compute_seconds", "The worker's compute time per round, as reported or estimated", jw,
                    job.iterationNs()[w] / 1e9);
                gauge(gauges, "serene_worker_awaited", "1 when round R + 1 waits for the worker", jw, job.waitingFor().get(w) ? 1 : 0);
                gauge(gauges, "serene_worker_silent", "1 while the worker is reported silent (failed or stopped?)", jw,
                    monitor.silence().silent(job.job(), w) ? 1 : 0);
            }
        }
        gauges.values().forEach(b -> out.add(b.build()));
        return new MetricSnapshots(out);
    }

    private static void gauge(final Map<String, GaugeSnapshot.Builder> gauges, final String name, final String help,
                              final Labels labels, final double value) {
        gauges.computeIfAbsent(name, n -> GaugeSnapshot.builder().name(n).help(help))
            .dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels).value(value).build());
    }

    @Override
    public void close() {
        server.close();
    }
}
