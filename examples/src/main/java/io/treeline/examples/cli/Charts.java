package io.treeline.examples.cli;

import de.erichseifert.vectorgraphics2d.VectorGraphics2D;
import de.erichseifert.vectorgraphics2d.svg.SVGProcessor;
import de.erichseifert.vectorgraphics2d.util.PageSize;
import io.treeline.examples.mnist.Trainer;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.XYStyler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The figures the tools write, drawn with XChart: nccl-tests style bandwidth plots (time per
 * call and bus bandwidth against a log2 message-size axis, a line per algorithm or system) and
 * the training curves, each a row of panels under a title with the machine and the date in a
 * caption, as a PNG and an SVG beside it. A figure with nothing to draw is refused.
 */
final class Charts {
  private static final int PANEL_W = 640;
  private static final int PANEL_H = 460;
  private static final int TOP = 34;
  private static final int BOTTOM = 28;

  /** One measurement of a bandwidth figure. */
  record SizePoint(long bytes, double micros, double busbw) {
  }

  private Charts() {
  }

  /**
   * Time (log scale) and busbw against message size, a line per series; writes {@code png}
   * and the SVG beside it.
   */
  static List<Path> bandwidth(String title, String caption, Map<String, List<SizePoint>> series,
      Path png) throws IOException {
    Map<String, List<SizePoint>> s = new LinkedHashMap<>();
    series.forEach((k, v) -> {
      if (!v.isEmpty()) {
        s.put(k, v);
      }
    });
    if (s.isEmpty()) {
      throw new IllegalArgumentException("nothing to plot: no measurements for " + png);
    }
    XYChart time = panel("time per call", "message size", "time (us)");
    XYChart bw = panel("bus bandwidth", "message size", "busbw (GB/s)");
    time.getStyler().setYAxisLogarithmic(true);
    bw.getStyler().setYAxisDecimalPattern("0.###");
    for (XYChart c : List.of(time, bw)) {
      c.setCustomXAxisTickLabelsFormatter(Charts::log2Label);
    }
    for (Map.Entry<String, List<SizePoint>> e : s.entrySet()) {
      List<SizePoint> pts = e.getValue();
      double[] x = pts.stream().mapToDouble(p -> Math.log(Math.max(1, p.bytes())) / Math.log(2))
          .toArray();
      time.addSeries(e.getKey(), x, pts.stream().mapToDouble(p -> Math.max(1e-3, p.micros()))
          .toArray());
      bw.addSeries(e.getKey(), x, pts.stream().mapToDouble(SizePoint::busbw).toArray());
    }
    return write(title, caption, List.of(time, bw), png);
  }

  /** One row of the peers figure: one rank count and type, e.g. "4 ranks f32". */
  record PeerGroup(String name, Map<String, double[][]> medians, Map<String, double[][]> ratios) {
  }

  /**
   * Peers side by side (scripts/bench/peers.sh), a row per rank count and type: median time per
   * call against message size, a line per system ("treeline", "treeline-registered", "mpi",
   * "gloo"...), and each Treeline system's median over the faster peer's of the same ranks and
   * type, with the goal (0.9) drawn across. One row per group keeps a legend to the systems of
   * one shape instead of every system times every rank count.
   *
   * @param groups per row: series name to (bytes, median us) points, and to (bytes, ratio)
   * @param goal the ratio line to draw (0 for none)
   */
  static List<Path> peers(String title, String caption, List<PeerGroup> groups, double goal,
      Path png) throws IOException {
    if (groups.isEmpty() || groups.stream().allMatch(g -> g.medians().isEmpty())) {
      throw new IllegalArgumentException("nothing to plot: no measurements for " + png);
    }
    List<XYChart> panels = new ArrayList<>();
    for (PeerGroup g : groups) {
      XYChart time = panel("median time per call, " + g.name(), "message size", "time (us)");
      XYChart ratio = panel("Treeline / the faster peer, " + g.name(), "message size",
          "ratio (below 1: Treeline faster)");
      time.getStyler().setYAxisLogarithmic(true);
      ratio.getStyler().setYAxisLogarithmic(true);
      ratio.getStyler().setYAxisDecimalPattern("0.###");
      // ratios span less than a decade: label 0.2, 0.3, ... 2, not only 1; the legend below
      // the plot, where it hides no point (inside, it covered the lowest ratios)
      ratio.getStyler().setYAxisLogarithmicDecadeOnly(false);
      ratio.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
      for (XYChart c : List.of(time, ratio)) {
        c.setCustomXAxisTickLabelsFormatter(Charts::log2Label);
      }
      g.medians().forEach((k, v) -> time.addSeries(k, log2(v[0]), v[1]));
      double lo = Double.MAX_VALUE;
      double hi = -Double.MAX_VALUE;
      for (Map.Entry<String, double[][]> e : g.ratios().entrySet()) {
        double[] x = log2(e.getValue()[0]);
        ratio.addSeries(e.getKey(), x, e.getValue()[1]);
        if (x.length > 0) {
          lo = Math.min(lo, x[0]);
          hi = Math.max(hi, x[x.length - 1]);
        }
      }
      if (goal > 0 && lo <= hi) {
        XYSeries line = ratio.addSeries("goal " + goal, new double[] {lo, hi},
            new double[] {goal, goal});
        line.setMarker(SeriesMarkers.NONE);
        line.setLineColor(Color.GRAY);
        line.setLineStyle(new java.awt.BasicStroke(1.5f, java.awt.BasicStroke.CAP_BUTT,
            java.awt.BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
      }
      panels.add(time);
      panels.add(ratio);
    }
    return write(title, caption, panels, 2, png);
  }

  private static double[] log2(double[] bytes) {
    double[] x = new double[bytes.length];
    for (int i = 0; i < x.length; i++) {
      x[i] = Math.log(Math.max(1, bytes[i])) / Math.log(2);
    }
    return x;
  }

  /** Accuracy (train, test) and loss against the epoch; refused for no epochs. */
  static List<Path> training(String title, String caption, List<Trainer.Epoch> epochs, Path png)
      throws IOException {
    if (epochs.isEmpty()) {
      throw new IllegalArgumentException("nothing to plot: no epochs for " + png);
    }
    double[] x = epochs.stream().mapToDouble(Trainer.Epoch::epoch).toArray();
    XYChart acc = panel("accuracy", "epoch", "accuracy");
    acc.addSeries("test accuracy", x, epochs.stream().mapToDouble(Trainer.Epoch::testAccuracy)
        .toArray());
    acc.addSeries("train accuracy", x, epochs.stream()
        .mapToDouble(Trainer.Epoch::trainAccuracy).toArray());
    acc.getStyler().setLegendPosition(Styler.LegendPosition.InsideSE);
    XYChart loss = panel("training loss", "epoch", "mean cross-entropy");
    loss.addSeries("loss", x, epochs.stream().mapToDouble(Trainer.Epoch::loss).toArray());
    loss.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
    for (XYChart c : List.of(acc, loss)) {
      c.getStyler().setYAxisDecimalPattern("0.###");
      c.setCustomXAxisTickLabelsFormatter(v -> isWhole(v) ? Long.toString(Math.round(v)) : "");
    }
    return write(title, caption, List.of(acc, loss), png);
  }

  private static XYChart panel(String title, String xTitle, String yTitle) {
    XYChart c = new XYChartBuilder().width(PANEL_W).height(PANEL_H).title(title)
        .xAxisTitle(xTitle).yAxisTitle(yTitle).build();
    XYStyler st = c.getStyler();
    st.setChartBackgroundColor(Color.WHITE);
    st.setPlotBackgroundColor(Color.WHITE);
    st.setPlotBorderColor(Color.GRAY);
    st.setPlotGridLinesColor(new Color(0xe6e6e6));
    st.setLegendPosition(Styler.LegendPosition.InsideNW);
    st.setLegendBorderColor(Color.LIGHT_GRAY);
    st.setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
    st.setMarkerSize(6);
    st.setSeriesMarkers(new org.knowm.xchart.style.markers.Marker[] {SeriesMarkers.CIRCLE,
        SeriesMarkers.SQUARE, SeriesMarkers.DIAMOND, SeriesMarkers.TRIANGLE_UP,
        SeriesMarkers.TRIANGLE_DOWN, SeriesMarkers.CROSS, SeriesMarkers.PLUS});
    st.setChartTitleFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
    st.setChartTitleBoxVisible(false);
    st.setAntiAlias(true);
    return c;
  }

  /** The panels side by side under the title, the caption below; PNG and SVG. */
  private static List<Path> write(String title, String caption, List<XYChart> panels,
      Path png) throws IOException {
    return write(title, caption, panels, panels.size(), png);
  }

  /** The panels in rows of {@code cols} under the title, the caption below; PNG and SVG. */
  private static List<Path> write(String title, String caption, List<XYChart> panels, int cols,
      Path png) throws IOException {
    System.setProperty("java.awt.headless", "true");
    int rows = (panels.size() + cols - 1) / cols;
    int w = PANEL_W * cols;
    int h = TOP + PANEL_H * rows + BOTTOM;
    Path dir = png.toAbsolutePath().getParent();
    if (dir != null) {
      Files.createDirectories(dir);
    }
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING,
        RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
    paint(g, title, caption, panels, cols, w, h);
    g.dispose();
    ImageIO.write(img, "png", png.toFile());
    Path svg = png.resolveSibling(png.getFileName().toString().replaceFirst("\\.png$", "")
        + ".svg");
    VectorGraphics2D vg = new VectorGraphics2D();
    paint(vg, title, caption, panels, cols, w, h);
    try (OutputStream out = Files.newOutputStream(svg)) {
      new SVGProcessor().getDocument(vg.getCommands(), new PageSize(0, 0, w, h)).writeTo(out);
    }
    return List.of(png, svg);
  }

  private static void paint(Graphics2D g, String title, String caption, List<XYChart> panels,
      int cols, int w, int h) {
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, w, h);
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
    g.drawString(title, 12, 23);
    for (int i = 0; i < panels.size(); i++) {
      Graphics2D p = (Graphics2D) g.create();
      p.translate(i % cols * PANEL_W, TOP + i / cols * PANEL_H);
      p.clipRect(0, 0, PANEL_W, PANEL_H);
      panels.get(i).paint(p, PANEL_W, PANEL_H);
      p.dispose();
    }
    g.setColor(Color.DARK_GRAY);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    g.drawString(caption, 12, h - 10);
  }

  /** "64K" at 2^16 on a log2 axis; nothing between whole powers. */
  static String log2Label(double exponent) {
    return isWhole(exponent) ? sizeLabel(Math.pow(2, Math.rint(exponent))) : "";
  }

  private static boolean isWhole(double v) {
    return Math.abs(v - Math.rint(v)) < 1e-6;
  }

  static String sizeLabel(double bytes) {
    String[] u = {"B", "K", "M", "G", "T"};
    int i = 0;
    while (bytes >= 1024 && i < u.length - 1) {
      bytes /= 1024;
      i++;
    }
    return String.format("%.0f%s", bytes, u[i]);
  }

  /** "<machine>; <date>; <details>": what a figure's caption says. */
  static String caption(String machine, String details) {
    return Stream.of(machine, LocalDate.now().toString(), details)
        .filter(s -> s != null && !s.isEmpty()).reduce((a, b) -> a + "  |  " + b).orElse("");
  }

  /** This machine: the CPU model from /proc/cpuinfo, the cores, the OS and the JVM. */
  static String machine() {
    String cpu = null;
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) {
          cpu = line.substring(line.indexOf(':') + 1).trim().replaceAll("\\s+", " ");
          break;
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux: the architecture says enough
    }
    List<String> parts = new ArrayList<>();
    parts.add((cpu != null ? cpu : System.getProperty("os.arch")) + ", "
        + Runtime.getRuntime().availableProcessors() + " cores");
    parts.add(System.getProperty("os.name") + ", Java " + System.getProperty("java.version"));
    return String.join(", ", parts);
  }
}
