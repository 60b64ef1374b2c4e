package io.treeline.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every bad command line of the fault campaign (issue 16) and more: refused before anything
 * runs, exit code 2, one line that names the option, then the command's synopsis.
 */
class BadCommandLineTest {
  static Stream<Arguments> badCommandLines() {
    return Stream.of(
        // issue 16's list
        bad("train --epochs 0", "--epochs must be between 1 and 10000, not 0"),
        bad("run --nodes 0 -- bench", "--nodes must be between 1 and 64, not 0"),
        bad("run --ranks-per-node 0 -- bench", "--ranks-per-node must be between 1 and 64"),
        bad("run --nodes -1 -- bench", "--nodes must be between 1 and 64, not -1"),
        bad("run --nodes 2147483647 -- bench", "--nodes must be between 1 and 64"),
        bad("bench -n -5", "-n/--iters must be between 1 and 1000000, not -5"),
        bad("bench -b 1M -e 8", "-b/--min-bytes 1M is larger than -e/--max-bytes 8"),
        bad("bench -b 2G", "-b/--min-bytes 2G is too large"),
        bad("bench -e 2G", "-e/--max-bytes 2G is too large"),
        bad("bench -e 4G", "-e/--max-bytes 4G is too large"),
        bad("train --batch 0", "--batch must be between 1 and 60000, not 0"),
        bad("train --hidden -5", "--hidden must be between 1 and 16384, not -5"),
        bad("train --hidden 0", "--hidden must be between 1 and 16384, not 0"),
        bad("train --lr NaN", "option '--lr': 'NaN' is not a finite number"),
        // the same kinds of mistake elsewhere
        bad("run --nodes 65 -- bench", "--nodes must be between 1 and 64, not 65"),
        bad("run --ranks-per-node 3,0,2 -- bench", "--ranks-per-node must be between 1 and 64"),
        bad("run --ranks-per-node 3,x -- bench", "--ranks-per-node takes whole numbers"),
        bad("run --nodes 64 --ranks-per-node 64 -- bench", "ranks in all must be between 1 "
            + "and 256, not 4096"),
        bad("run --heap 16M -- bench", "--heap 16M is too small"),
        bad("run --timeout 0 -- bench", "--timeout must be between 1s and 7d"),
        bad("run --nodes 2", "nothing to run: put the command after --"),
        bad("run --nodes two -- bench", "option '--nodes': 'two' is not an int"),
        bad("bench --nodes 0", "--nodes must be between 1 and 64, not 0"),
        bad("bench --nodes 2147483647", "--nodes must be between 1 and 64"),
        bad("bench --nodes 16 --ranks-per-node 32", "must be between 1 and 256, not 512"),
        bad("bench -e 99999999999999999999", "is too large a size"),
        bad("bench -e 16777216T", "is too large a size"),
        bad("bench -e 1.5M", "'1.5M' is not a size like 8, 64K, 1M or 4G"),
        bad("bench -f 1", "-f/--factor must be between 2 and 1024, not 1"),
        bad("bench -w -1", "-w/--warmup must be between 0 and 1000000, not -1"),
        bad("bench --chunk 8", "--chunk 8 is too small"),
        bad("bench --timeout soon", "'soon' is not a duration"),
        bad("bench --timeout 0", "--timeout must be between 100ms and"),
        bad("bench --algo ring,butterfly", "--algo takes a comma list of auto, ring"),
        bad("bench --nodes 2 --algo oneshot", "--algo oneshot runs inside one node"),
        bad("bench -d f8", "option '--dtype': unknown data type 'f8'"),
        bad("bench -o mean", "option '--op': unknown reduce op 'mean'"),
        bad("bench --bogus", "Unknown option: '--bogus'"),
        bad("bench --device --ranks 0", "--ranks must be between 1 and 64, not 0"),
        bad("bench --device -b 1M -e 8", "-b/--min-bytes 1M is larger than -e/--max-bytes 8"),
        bad("bench device -e 32G", "-e/--max-bytes 32G is too large"),
        bad("bench device --threads 2", "--threads must be between 0 and 1, not 2"),
        bad("bench device --algo ring", "--algo takes a comma list of oneshot, twoshot, auto"),
        bad("train --epochs -1", "--epochs must be between 1 and 10000, not -1"),
        bad("train --batch 100 --ranks 3", "--batch 100 is not a multiple of the 3 ranks"),
        bad("train --ranks 0", "--ranks must be between 1 and 64, not 0"),
        bad("train --ranks 65", "--ranks must be between 1 and 64, not 65"),
        bad("train --hidden 64,0", "--hidden must be between 1 and 16384, not 0"),
        bad("train --hidden 64,,32", "--hidden takes whole numbers separated by commas"),
        bad("train --hidden 1,1,1,1,1,1,1,1,1", "--hidden (layers) must be between 1 and 8"),
        bad("train --lr -0.1", "--lr must be above 0.0 and at most 10.0, not -0.1"),
        bad("train --lr 0", "--lr must be above 0.0"),
        bad("train --lr Infinity", "'Infinity' is not a finite number"),
        bad("train --lr fast", "'fast' is not a number"),
        bad("train --momentum 1", "--momentum must be at least 0 and below 1, not 1.0"),
        bad("train --momentum NaN", "'NaN' is not a finite number"),
        bad("train --limit 10", "--limit 10 is less than one --batch (128)"),
        bad("train --limit -1", "--limit must be at least 0, not -1"),
        bad("train --target 1.5", "--target must be above 0.0 and at most 1.0, not 1.5"),
        bad("train --mllib-budget 0", "--mllib-budget must be between 1s and"),
        bad("train --gpu --cpu", "--gpu and --cpu exclude each other"),
        bad("train --cpu --no-overlap", "--no-overlap is an option of the GPU job"),
        bad("plan --nodes 0", "--nodes must be between 1 and 4096, not 0"),
        bad("plan --gpus 0", "--gpus must be between 1 and 1024, not 0"),
        bad("plan --ranks-per-node 4,0,3", "--ranks-per-node must be between 1 and 1024"),
        bad("plan --bytes 0", "--bytes 0 is too small"),
        bad("plan --bytes 2T", "--bytes 2T is too large"),
        bad("plan --bytes 1G --chunk 64", "makes more than 65536 chunks"),
        bad("plan --bytes 6 --dtype f32", "--bytes 6 is not a whole number of float32"),
        bad("plan --rank 8", "--rank must be between 0 and 7, not 8"),
        bad("plan --collective broadcast --root -1", "--root must be between 0 and 7, not -1"),
        bad("plan --collective gossip", "--collective: unknown collective 'gossip'"),
        bad("plan --algo butterfly", "option '--algo': unknown algorithm 'butterfly'"),
        bad("plan --nodes 2 --algo oneshot", "--algo oneshot runs inside one node"),
        bad("topo --ipc-timeout 0", "--ipc-timeout must be between 1s and 1h"),
        bad("topo --topo-file /nonexistent/topo.txt", "--topo-file /nonexistent/topo.txt: no "
            + "such readable file"),
        bad("topo --gpus-file /nonexistent/gpus.csv --probe-ipc", "do not combine with a "
            + "captured"),
        bad("frobnicate", "Unmatched argument at index 0: 'frobnicate'"));
  }

  private static Arguments bad(String line, String message) {
    return Arguments.of(line, message);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCommandLines")
  void isRefusedUpFrontWithExitTwoAndOneLineNamingTheOption(String line, String message) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    // nothing may start: a refused command returns at once (train --epochs 0 used to spin)
    int code = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> Treeline.run(
        line.split(" "), new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8)));
    String e = err.toString(StandardCharsets.UTF_8);
    assertEquals(2, code, line + " -> " + e + out);
    String[] lines = e.split("\n");
    String command = line.split(" ")[0];
    assertTrue(lines[0].startsWith("treeline" + (command.equals("frobnicate") ? "" : " "
        + command)) && lines[0].contains(message), line + " -> " + e);
    assertTrue(e.contains("Usage: ./treeline"), e);
    assertTrue(e.contains("--help lists the options."), e);
    assertEquals("", out.toString(StandardCharsets.UTF_8), "nothing ran: " + line);
  }
}
