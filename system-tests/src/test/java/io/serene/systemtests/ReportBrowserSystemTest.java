package io.serene.systemtests;

import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A train-mode experiment's report opened in headless Chromium (Debian's {@code chromium}), as a
 * browser shows it: every chart renders (each standalone SVG file parses), and no two labels of a
 * chart overlap, measured with the browser's own text boxes by a script the test adds to a copy of
 * the report (the report itself has none). Multi-process: tagged slow; skipped with a message when
 * there is no Chromium ({@code apt-get install chromium}).
 */
@Tag("slow")
class ReportBrowserSystemTest {
    private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    /** Counts, per inline SVG, pairs of text elements whose rendered boxes intersect; puts the totals in the title. */
    private static final String CHECK = "<script>window.addEventListener('load',()=>{let svgs=document.querySelectorAll('svg');"
        + "let overlaps=[];svgs.forEach((svg,i)=>{let boxes=[...svg.querySelectorAll('text')].map(t=>[t,t.getBoundingClientRect()])"
        + ".filter(b=>b[1].width>0);for(let a=0;a<boxes.length;a++)for(let b=a+1;b<boxes.length;b++){let p=boxes[a][1],q=boxes[b][1];"
        + "if(p.left<q.right-0.5&&q.left<p.right-0.5&&p.top<q.bottom-0.5&&q.top<p.bottom-0.5)overlaps.push(i+':'+boxes[a][0].textContent"
        + "+'|'+boxes[b][0].textContent);}});document.title='svgs='+svgs.length+' overlaps='+overlaps.length+' '+overlaps.join(';');});"
        + "</script>";

    @Test
    @Timeout(600)
    void theReportRendersInChromiumWithNoOverlappingLabels(@TempDir final Path dir) throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(CHROMIUM), "no Chromium at /usr/bin/chromium (apt-get install chromium): browser check skipped");
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final Path spec = dir.resolve("browser.yaml");
        Files.writeString(spec, "name: browser\nmode: train\nmodel: [mlp]\nworkers: [2]\nrounds: 40\nbatch: 32\nevalEvery: 10\n"
            + "policies: [bsp, ssp:2]\nstragglers: [persistent:1:x3]\nseeds: [1, 2]\n");
        final Path out = dir.resolve("out");
        final Process experiment = SereneProcess.start("experiment", spec.toString(), "--out", out.toString(), "--data", dir.toString());
        final String printed = new String(experiment.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
            + new String(experiment.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(experiment.waitFor(400, TimeUnit.SECONDS)).isTrue();
        assertThat(experiment.exitValue()).as(printed).isZero();

        final String report = Files.readString(out.resolve("report.html"));
        assertThat(report).contains("<span class=\"ci\">[", "<span class=\"p\">p=").doesNotContain("<script");
        final Path checked = out.resolve("report-check.html");
        Files.writeString(checked, report.replace("</body>", CHECK + "</body>"));
        final String dom = chromium(checked);
        final Matcher title = Pattern.compile("<title>svgs=(\\d+) overlaps=(\\d+)([^<]*)</title>").matcher(dom);
        assertThat(title.find()).as("the check script ran: " + dom.substring(0, Math.min(400, dom.length()))).isTrue();
        // one scenario: accuracy, waiting, staleness, and a timeline per policy
        assertThat(Integer.parseInt(title.group(1))).isEqualTo(5);
        assertThat(Integer.parseInt(title.group(2))).as("overlapping labels:" + title.group(3)).isZero();

        try (Stream<Path> files = Files.list(out.resolve("charts"))) {
            final List<Path> svgs = files.toList();
            assertThat(svgs).hasSize(5);
            for (final Path svg : svgs) {
                final String rendered = chromium(svg);
                assertThat(rendered).as(svg.getFileName() + " parses as SVG").startsWith("<svg").doesNotContain("parsererror");
            }
        }
    }

    /** The DOM headless Chromium renders from a file. */
    private static String chromium(final Path file) throws Exception {
        final Process p = new ProcessBuilder(CHROMIUM.toString(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
            "--dump-dom", file.toUri().toString()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        final String dom = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return dom;
    }
}
