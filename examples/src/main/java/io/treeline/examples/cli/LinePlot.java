package io.treeline.examples.cli;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;

/** A PNG line chart with a log2 x axis: one series per algorithm, as bandwidth plots are drawn. */
final class LinePlot {
  private static final Color[] PALETTE = {new Color(0x1f77b4), new Color(0xd62728),
      new Color(0x2ca02c), new Color(0xff7f0e), new Color(0x9467bd), new Color(0x8c564b),
      new Color(0x7f7f7f)};

  private final String title;
  private final String xLabel;
  private final String yLabel;
  private final Map<String, List<double[]>> series = new LinkedHashMap<>();
  private boolean linearX;

  LinePlot(String title, String xLabel, String yLabel) {
    this.title = title;
    this.xLabel = xLabel;
    this.yLabel = yLabel;
  }

  /** A linear x axis with integer ticks (epochs) instead of log2 sizes. */
  LinePlot linearX() {
    linearX = true;
    return this;
  }

  void add(String name, double x, double y) {
    series.computeIfAbsent(name, k -> new java.util.ArrayList<>()).add(new double[] {x, y});
  }

  void write(Path file) throws IOException {
    System.setProperty("java.awt.headless", "true");
    int w = 960;
    int h = 560;
    int left = 80;
    int right = 190;
    int top = 50;
    int bottom = 70;
    BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = img.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, w, h);
    double xMin = Double.MAX_VALUE;
    double xMax = -Double.MAX_VALUE;
    double yMax = 0;
    for (List<double[]> pts : series.values()) {
      for (double[] p : pts) {
        xMin = Math.min(xMin, log2(p[0]));
        xMax = Math.max(xMax, log2(p[0]));
        yMax = Math.max(yMax, p[1]);
      }
    }
    if (xMax <= xMin) {
      xMax = xMin + 1;
    }
    yMax = niceCeil(yMax <= 0 ? 1 : yMax * 1.05);
    int pw = w - left - right;
    int ph = h - top - bottom;
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    for (int i = 0; i <= 5; i++) {
      int y = top + ph - ph * i / 5;
      g.setColor(new Color(0xe6e6e6));
      g.drawLine(left, y, left + pw, y);
      g.setColor(Color.DARK_GRAY);
      String s = fmt(yMax * i / 5);
      g.drawString(s, left - 8 - g.getFontMetrics().stringWidth(s), y + 4);
    }
    int step = Math.max(1, (int) Math.ceil((xMax - xMin) / 12));
    for (int e = (int) Math.ceil(xMin); e <= xMax; e += step) {
      int x = left + (int) ((e - xMin) / (xMax - xMin) * pw);
      g.setColor(new Color(0xe6e6e6));
      g.drawLine(x, top, x, top + ph);
      g.setColor(Color.DARK_GRAY);
      String s = linearX ? Integer.toString(e) : sizeLabel(Math.pow(2, e));
      g.drawString(s, x - g.getFontMetrics().stringWidth(s) / 2, top + ph + 18);
    }
    g.setColor(Color.BLACK);
    g.drawRect(left, top, pw, ph);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 15));
    g.drawString(title, left, top - 18);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
    g.drawString(xLabel, left + pw / 2 - g.getFontMetrics().stringWidth(xLabel) / 2, h - 25);
    Graphics2D gy = (Graphics2D) g.create();
    gy.rotate(-Math.PI / 2);
    gy.drawString(yLabel, -(top + ph / 2 + gy.getFontMetrics().stringWidth(yLabel) / 2), 22);
    gy.dispose();
    int k = 0;
    for (Map.Entry<String, List<double[]>> e : series.entrySet()) {
      Color c = PALETTE[k % PALETTE.length];
      g.setColor(c);
      g.setStroke(new BasicStroke(2.2f));
      int px = -1;
      int py = -1;
      for (double[] p : e.getValue()) {
        int x = left + (int) ((log2(p[0]) - xMin) / (xMax - xMin) * pw);
        int y = top + ph - (int) (p[1] / yMax * ph);
        if (px >= 0) {
          g.drawLine(px, py, x, y);
        }
        g.fillOval(x - 3, y - 3, 6, 6);
        px = x;
        py = y;
      }
      int ly = top + 20 + 22 * k;
      g.drawLine(left + pw + 15, ly - 4, left + pw + 40, ly - 4);
      g.setColor(Color.BLACK);
      g.drawString(e.getKey(), left + pw + 46, ly);
      k++;
    }
    g.dispose();
    ImageIO.write(img, "png", file.toFile());
  }

  private double log2(double v) {
    return linearX ? v : Math.log(Math.max(v, 1)) / Math.log(2);
  }

  private static double niceCeil(double v) {
    double mag = Math.pow(10, Math.floor(Math.log10(v)));
    for (double m : new double[] {1, 2, 2.5, 5, 10}) {
      if (m * mag >= v) {
        return m * mag;
      }
    }
    return 10 * mag;
  }

  private static String fmt(double v) {
    return v >= 10 || v == 0 ? String.format("%.0f", v) : String.format("%.2f", v);
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
}
