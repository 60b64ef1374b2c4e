package io.treeline.examples.cli;

import io.treeline.examples.mnist.Trainer;
import java.io.PrintStream;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarConsumer;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * A progress bar (me.tongfei:progressbar) on one terminal line of stderr, cleared when the task
 * ends so that the plain result lines stay as they are; nothing at all when stdout is not a
 * terminal (a pipe, a file, a rank under ./treeline run), where only the plain lines are
 * printed.
 */
final class Progress implements AutoCloseable {
  private static final Progress NONE = new Progress(null);

  private final ProgressBar bar;

  private Progress(ProgressBar bar) {
    this.bar = bar;
  }

  /** Whether bars are drawn: stdout is a terminal. */
  static boolean enabled() {
    return System.console() != null;
  }

  /** A bar that draws nothing. */
  static Progress none() {
    return NONE;
  }

  /** A bar for {@code max} steps named {@code task}, or one that does nothing. */
  static Progress start(String task, long max) {
    if (!enabled()) {
      return NONE;
    }
    return new Progress(new ProgressBarBuilder().setTaskName(task).setInitialMax(max)
        .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(250)
        .setConsumer(new Line(System.err, 78)).clearDisplayOnFinish().build());
  }

  void step() {
    if (bar != null) {
      bar.step();
    }
  }

  @Override
  public void close() {
    if (bar != null) {
      bar.close();
    }
  }

  /** The training loop's epochs, a bar each. */
  static Trainer.Progress epochs() {
    if (!enabled()) {
      return null;
    }
    return new Trainer.Progress() {
      private Progress current = NONE;

      @Override
      public void epochStarted(int epoch, int epochs, int steps) {
        current = start("epoch " + epoch + "/" + epochs, steps);
      }

      @Override
      public void stepped() {
        current.step();
      }

      @Override
      public void epochEnded() {
        current.close();
        current = NONE;
      }
    };
  }

  /** Draws on one line with carriage returns; clearing blanks it. */
  private static final class Line implements ProgressBarConsumer {
    private final PrintStream out;
    private final int width;

    Line(PrintStream out, int width) {
      this.out = out;
      this.width = width;
    }

    @Override
    public int getMaxRenderedLength() {
      return width;
    }

    @Override
    public void accept(String rendered) {
      out.print("\r" + (rendered.length() > width ? rendered.substring(0, width) : rendered));
      out.flush();
    }

    @Override
    public void clear() {
      out.print("\r" + " ".repeat(width) + "\r");
      out.flush();
    }

    @Override
    public void close() {
      out.flush();
    }
  }
}
