package io.serene.harness.experiment;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The report's charts as standalone SVG (each also written to its own file, for papers): axes
 * with ticks at round numbers (1, 2 or 5 times a power of ten) and gridlines, axis titles, a
 * legend beside the plot, and labels placed so that none overlaps another: tick labels are spaced
 * by the tick step, category labels thinned to fit their width, legend names shortened to the
 * legend's width (the full name in a tooltip), the chart made taller when the legend needs it.
 */
final class SvgChart {
    static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf"};
    static final int W = 680;
    static final int H = 300;
    static final int LEFT = 70;
    static final int RIGHT = 170;
    static final int TOP = 20;
    static final int BOTTOM = 50;
    private static final int LEGEND_ROW = 16;
    /** Average glyph width of the 11 px sans-serif labels, generously: used to keep labels apart. */
    private static final double CHAR_PX = 6.6;
    private static final int LEGEND_CHARS = (int) ((RIGHT - 30) / CHAR_PX);

    /** A line of points. */
    static final class Series {
        final String name;
        final List<double[]> points;

        Series(final String name, final List<double[]> points) {
            this.name = name;
            this.points = points;
        }
    }

    private SvgChart() {
    }

    /** Ticks at round numbers covering [lo, hi], about {@code target} of them; the first at or below lo, the last at or above hi. */
    static List<Double> ticks(final double lo, final double hi, final int target) {
        final double span = hi > lo ? hi - lo : Math.max(1e-9, Math.abs(hi));
        final double raw = span / Math.max(1, target);
        final int exponent = (int) Math.floor(Math.log10(raw));
        final double magnitude = Math.pow(10, exponent);
        final double residual = raw / magnitude;
        final int mantissa = residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 5 ? 5 : 10;
        final double step = mantissa * magnitude;
        final List<Double> ticks = new ArrayList<>();
        final long first = (long) Math.floor(lo / step + 1e-9);
        for (long k = first; ticks.size() < 100; k++) {
            // k * mantissa * 10^exponent, exactly as the decimal reads (a division by 10^-exponent rounds once)
            final double t = exponent >= 0 ? k * mantissa * magnitude : k * mantissa / Math.pow(10, -exponent);
            ticks.add(t == 0 ? 0.0 : t);
            if (t >= hi - step * 1e-9) {
                break;
            }
        }
        if (ticks.size() < 2) {
            ticks.add(ticks.get(0) + step);
        }
        return ticks;
    }

    /** A tick's label: as many decimals as the step needs. */
    static String tickLabel(final double value, final List<Double> ticks) {
        final double step = ticks.size() > 1 ? ticks.get(1) - ticks.get(0) : 1;
        final int decimals = Math.max(0, (int) Math.ceil(-Math.log10(step) - 1e-9));
        return String.format(Locale.ROOT, "%." + Math.min(decimals, 6) + "f", value);
    }

    /** Marks are vertical dashed lines at x in the color of series (int) mark[1]; target a dotted horizontal line (NaN: none). */
    static String line(final String xLabel, final String yLabel, final List<Series> series, final List<double[]> marks,
                       final double target, final boolean unitRange) {
        double maxX = 0;
        double minY = Double.isNaN(target) ? Double.MAX_VALUE : target;
        double maxY = Double.isNaN(target) ? -Double.MAX_VALUE : target;
        for (final Series s : series) {
            for (final double[] p : s.points) {
                maxX = Math.max(maxX, p[0]);
                minY = Math.min(minY, p[1]);
                maxY = Math.max(maxY, p[1]);
            }
        }
        if (minY > maxY) {
            minY = 0;
            maxY = 1;
        }
        final List<Double> xt = ticks(0, maxX > 0 ? maxX : 1, 6);
        final List<Double> yt = ticks(unitRange ? Math.max(0, minY) : minY, unitRange ? Math.min(1, maxY) : maxY, 5);
        final Frame f = new Frame(xt, yt, series.size());
        final StringBuilder s = f.start();
        f.axes(s, xLabel, yLabel);
        if (!Double.isNaN(target)) {
            final double ty = f.y(target);
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"2,3\"/>"
                + "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555\" text-anchor=\"end\">target %s</text>", LEFT, ty,
                LEFT + f.plotW, ty, LEFT + f.plotW - 4, ty - 4, ReportWriter.fmt(target, 2)));
        }
        for (final double[] m : marks) {
            final double x = f.x(m[0]);
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"5,4\"/>",
                x, TOP, x, f.y0, COLORS[(int) m[1] % COLORS.length]));
        }
        for (int i = 0; i < series.size(); i++) {
            final Series ser = series.get(i);
            final StringBuilder pts = new StringBuilder();
            for (final double[] p : ser.points) {
                pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", f.x(p[0]), f.y(p[1])));
            }
            s.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>",
                COLORS[i % COLORS.length], pts.toString().trim()));
            f.legend(s, i, ser.name);
        }
        return s.append("</svg>\n").toString();
    }

    /**
     * Points, one series per name, against the diagonal y = x (a prediction against its measurement:
     * on the line, the prediction was right; above it, the measurement was larger).
     */
    static String scatter(final String xLabel, final String yLabel, final List<Series> series) {
        double max = 0;
        for (final Series s : series) {
            for (final double[] p : s.points) {
                max = Math.max(max, Math.max(p[0], p[1]));
            }
        }
        final List<Double> t = ticks(0, max > 0 ? max : 1, 5);
        final Frame f = new Frame(t, t, series.size());
        final StringBuilder s = f.start();
        f.axes(s, xLabel, yLabel);
        final double hi = t.get(t.size() - 1);
        s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"2,3\"/>",
            f.x(0), f.y(0), f.x(hi), f.y(hi)));
        for (int i = 0; i < series.size(); i++) {
            for (final double[] p : series.get(i).points) {
                s.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.7\"/>", f.x(p[0]),
                    f.y(p[1]), COLORS[i % COLORS.length]));
            }
            f.legend(s, i, series.get(i).name);
        }
        return s.append("</svg>\n").toString();
    }

    /**
     * Grouped bars: values[series][group]; {@code intervals[series][group]} (null, or null entries:
     * none) a {low, high} whisker on the bar.
     */
    static String bars(final String yLabel, final List<String> groups, final List<String> names, final double[][] values,
                       final double[][][] intervals) {
        double max = 0;
        for (int p = 0; p < values.length; p++) {
            for (int g = 0; g < values[p].length; g++) {
                max = Math.max(max, values[p][g]);
                if (intervals != null && intervals[p][g] != null) {
                    max = Math.max(max, intervals[p][g][1]);
                }
            }
        }
        final List<Double> yt = ticks(0, max > 0 ? max : 1, 5);
        final Frame f = new Frame(null, yt, names.size());
        final StringBuilder s = f.start();
        f.axes(s, "", yLabel);
        final double groupW = f.plotW / Math.max(1, groups.size());
        final double barW = groupW * 0.8 / Math.max(1, names.size());
        for (int g = 0; g < groups.size(); g++) {
            for (int p = 0; p < names.size(); p++) {
                final double v = g < values[p].length ? values[p][g] : 0;
                final double x = LEFT + g * groupW + groupW * 0.1 + p * barW;
                s.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s, %s: %s"
                    + "</title></rect>", x, f.y(v), barW, f.y0 - f.y(v), COLORS[p % COLORS.length],
                    ReportWriter.esc(names.get(p)), ReportWriter.esc(groups.get(g)), ReportWriter.fmt(v, 3)));
                if (intervals != null && intervals[p][g] != null) {
                    final double cx = x + barW / 2;
                    s.append(String.format(Locale.ROOT, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" stroke=\"#222\"/>",
                        cx, f.y(intervals[p][g][0]), f.y(intervals[p][g][1]), cx - 3, f.y(intervals[p][g][0]), cx + 3, cx - 3,
                        f.y(intervals[p][g][1]), cx + 3));
                }
            }
        }
        // category labels, thinned so that each has room for its text
        int longest = 1;
        for (final String g : groups) {
            longest = Math.max(longest, g.length());
        }
        final int every = Math.max(1, (int) Math.ceil((longest * CHAR_PX + 8) / groupW));
        for (int g = 0; g < groups.size(); g += every) {
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>",
                LEFT + g * groupW + groupW / 2, f.y0 + 15, ReportWriter.esc(groups.get(g))));
        }
        for (int p = 0; p < names.size(); p++) {
            f.legend(s, p, names.get(p));
        }
        return s.append("</svg>\n").toString();
    }

    /** A plot area with its scales: x numeric (xt) or categories (null), y numeric. */
    static final class Frame {
        final List<Double> xt;
        final List<Double> yt;
        final int height;
        final double plotW = W - LEFT - RIGHT;
        final double plotH;
        final double y0;

        Frame(final List<Double> xt, final List<Double> yt, final int legendEntries) {
            this.xt = xt;
            this.yt = yt;
            this.height = Math.max(H, TOP + LEGEND_ROW * legendEntries + BOTTOM);
            this.plotH = height - TOP - BOTTOM;
            this.y0 = TOP + plotH;
        }

        double x(final double v) {
            final double lo = xt.get(0);
            final double hi = xt.get(xt.size() - 1);
            return LEFT + (v - lo) / (hi - lo) * plotW;
        }

        double y(final double v) {
            final double lo = yt.get(0);
            final double hi = yt.get(yt.size() - 1);
            return y0 - (v - lo) / (hi - lo) * plotH;
        }

        StringBuilder start() {
            return new StringBuilder(String.format(Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">"
                    + "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>", W, height, W, height));
        }

        /** Gridlines and ticks for every tick, the axes, their titles. */
        void axes(final StringBuilder s, final String xLabel, final String yLabel) {
            for (final double t : yt) {
                final double y = y(t);
                s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                    + "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>", LEFT, y, LEFT + plotW, y, LEFT - 5,
                    y + 4, tickLabel(t, yt)));
            }
            if (xt != null) {
                for (final double t : xt) {
                    final double x = x(t);
                    s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                        + "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
                        + "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>", x, TOP, x, y0, x, y0, x,
                        y0 + 4, x, y0 + 16, tickLabel(t, xt)));
                }
            }
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>", LEFT, TOP, LEFT, y0));
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", LEFT, y0,
                LEFT + plotW, y0));
            if (!xLabel.isEmpty()) {
                s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">%s</text>",
                    LEFT + plotW / 2, y0 + 38, ReportWriter.esc(xLabel)));
            }
            s.append(String.format(Locale.ROOT, "<text x=\"16\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
                + "transform=\"rotate(-90 16 %.1f)\">%s</text>", TOP + plotH / 2, TOP + plotH / 2, ReportWriter.esc(yLabel)));
        }

        /** Legend entry i beside the plot; a name too long for the legend shortened, the whole in its tooltip. */
        void legend(final StringBuilder s, final int i, final String name) {
            final int x = W - RIGHT + 12;
            final int y = TOP + LEGEND_ROW * i;
            final String shown = name.length() <= LEGEND_CHARS ? name : name.substring(0, LEGEND_CHARS - 1) + "\u2026";
            s.append(String.format(Locale.ROOT, "<g><title>%s</title><rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                + "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text></g>", ReportWriter.esc(name), x, y, COLORS[i % COLORS.length], x + 14,
                y + 9, ReportWriter.esc(shown)));
        }
    }
}
