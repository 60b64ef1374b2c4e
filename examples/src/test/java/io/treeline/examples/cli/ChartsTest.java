package io.treeline.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.examples.mnist.Trainer;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChartsTest {
  private static final Duration QUICK = Duration.ofSeconds(30);

  private static void assertFigure(Path png) throws Exception {
    BufferedImage img = ImageIO.read(png.toFile());
    assertEquals(1280, img.getWidth());
    Path svg = png.resolveSibling(png.getFileName().toString().replace(".png", ".svg"));
    String s = Files.readString(svg);
    assertTrue(s.contains("<svg") && s.contains("</svg>"), s.substring(0, 200));
  }

  @Test
  void aBandwidthFigureHasBothPanelsAsPngAndSvg(@TempDir Path dir) throws Exception {
    Path png = dir.resolve("b.png");
    List<Path> written = Charts.bandwidth("t", Charts.caption("test machine", "x"), Map.of(
        "ring", List.of(new Charts.SizePoint(8, 20, 0.001), new Charts.SizePoint(1 << 20, 400,
            5.2), new Charts.SizePoint(64 << 20, 9000, 14)),
        "dbt", List.of(new Charts.SizePoint(8, 15, 0.002), new Charts.SizePoint(1 << 20, 350,
            6.1))), png);
    assertEquals(List.of(png, dir.resolve("b.svg")), written);
    assertFigure(png);
    String svg = Files.readString(dir.resolve("b.svg"));
    assertTrue(svg.contains(">t</text>") && svg.contains("test machine"), "title and caption");
    assertTrue(svg.split("<path").length > 100, "two panels of lines, ticks and glyphs");
  }

  /**
   * peers.sh's CSV: a figure with a row of time and ratio panels per shape, and the ratios
   * Treeline / peer.
   */
  @Test
  void thePeersFigureDrawsTheCsvAndPrintsTreelineOverEachPeer(@TempDir Path dir)
      throws Exception {
    Path csv = dir.resolve("peers.csv");
    Files.writeString(csv, "system,dtype,ranks,bytes,iters,median_us,p99_us,wrong\n"
        + "treeline,f32,2,8,200,3.0,9.0,0\ntreeline,f32,2,4096,200,6.0,12.0,0\n"
        + "mpi,f32,2,8,200,1.5,2.0,0\nmpi,f32,2,4096,200,12.0,20.0,0\n"
        + "gloo,f32,2,8,200,150.0,900.0,0\ntreeline,bf16,2,8,200,4.0,8.0,0\n");
    Path png = dir.resolve("peers.png");
    PrintStream old = System.out;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setOut(new PrintStream(buf, true, "UTF-8"));
    try {
      PeersChart.main(new String[] {csv.toString(), png.toString(), "test machine"});
    } finally {
      System.setOut(old);
    }
    assertFigure(png);
    String out = buf.toString("UTF-8");
    assertTrue(out.contains("treeline/mpi 2 ranks f32: 8B=2.00 4K=0.50"), out);
    assertTrue(out.contains("treeline/gloo 2 ranks f32: 8B=0.02"), out);
    // the ratio panel's line: over the faster peer at each size (MPI at 8 B and 4 KiB here)
    assertTrue(out.contains("treeline/faster 2 ranks f32: 8B=2.00 4K=0.50"), out);
    // a row of panels per rank count and type: bf16 (Treeline only) above f32
    assertEquals(34 + 2 * 460 + 28, ImageIO.read(png.toFile()).getHeight());
    assertTrue(!out.contains("bf16:"), "no peer has bf16 here: " + out);
  }

  @Test
  void onePointRendersAndNothingIsRefusedWithoutHanging(@TempDir Path dir) throws Exception {
    Path one = dir.resolve("one.png");
    assertTimeoutPreemptively(QUICK, () -> Charts.bandwidth("one", "c", Map.of("ring",
        List.of(new Charts.SizePoint(1024, 10, 1))), one));
    assertFigure(one);
    Path epoch = dir.resolve("epoch.png");
    assertTimeoutPreemptively(QUICK, () -> Charts.training("one epoch", "c", List.of(
        new Trainer.Epoch(1, 0.5, 0.8, 0.79, 1000, 0.1, 2, 2)), epoch));
    assertFigure(epoch);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> assertTimeoutPreemptively(QUICK, () -> Charts.training("none", "c", List.of(),
            dir.resolve("none.png"))));
    assertTrue(e.getMessage().contains("nothing to plot"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> assertTimeoutPreemptively(QUICK,
        () -> Charts.bandwidth("none", "c", Map.of("ring", List.of()), dir.resolve("n.png"))));
    assertTrue(e.getMessage().contains("nothing to plot"), e.getMessage());
    assertTrue(!Files.exists(dir.resolve("none.png")) && !Files.exists(dir.resolve("n.png")));
  }

  @Test
  void theTrainingCurvesOfARunAreWrittenWithTheirCsv(@TempDir Path dir) throws Exception {
    List<Trainer.Epoch> h = List.of(new Trainer.Epoch(1, 0.6, 0.78, 0.80, 9000, 0.2, 3, 3),
        new Trainer.Epoch(2, 0.4, 0.85, 0.84, 9500, 0.2, 3, 6));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    TrainCommand.write(dir, h, 2, "CPU", Trainer.Options.defaults(), new PrintStream(out));
    assertEquals(3, Files.readAllLines(dir.resolve("train.csv")).size());
    assertFigure(dir.resolve("train.png"));
    assertTrue(out.toString().contains("train.svg"), out.toString());
  }

  @Test
  void sizesAndDurationsReadTheirUnits() {
    assertEquals(64L << 20, Units.bytes("64M"));
    assertEquals(512L << 10, Units.bytes("512KiB"));
    assertEquals(1L << 20, Units.bytes("1mb"));
    assertEquals(8, Units.bytes("8"));
    assertEquals(Duration.ofSeconds(60), Units.duration("60"));
    assertEquals(Duration.ofMillis(500), Units.duration("500ms"));
    assertEquals(Duration.ofMinutes(2), Units.duration("2min"));
    assertEquals(Duration.ofMinutes(2), Units.duration("2m"));
    assertEquals("3M", Units.bytesText(3L << 20));
    assertEquals("1000", Units.bytesText(1000));
    assertEquals("64M", Charts.log2Label(26));
    assertEquals("", Charts.log2Label(2.5));
  }
}
