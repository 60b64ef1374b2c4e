package io.treeline.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TreelineCliTest {
  private record Result(int code, String out, String err) {
  }

  private static Result run(String... argv) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream saved = System.out;
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      int code = Treeline.run(argv, System.out, new PrintStream(err, true,
          StandardCharsets.UTF_8));
      return new Result(code, out.toString(StandardCharsets.UTF_8),
          err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(saved);
    }
  }

  @Test
  void planJsonHasBothTreesIndexedByNodeAsNcclBuildsThem() {
    Result r = run("plan", "--nodes", "5", "--gpus", "8", "--algo", "dbt", "--bytes", "1M",
        "--json");
    assertEquals(0, r.code, r.err);
    // 5 nodes, odd: tree 2 is tree 1 shifted by one; roots 0 and 1
    assertTrue(r.out.contains("\"trees\":[[{\"node\":0,\"parent\":-1,\"children\":[4]},"
        + "{\"node\":1,\"parent\":2,\"children\":[]},{\"node\":2,\"parent\":4,\"children\":"
        + "[1,3]},{\"node\":3,\"parent\":2,\"children\":[]},{\"node\":4,\"parent\":0,"
        + "\"children\":[2]}],[{\"node\":0,\"parent\":1,\"children\":[3]},{\"node\":1,"
        + "\"parent\":-1,\"children\":[0]}"), r.out);
    assertTrue(r.out.contains("\"ranks\":40"), r.out);
  }

  @Test
  void planVerifyPrintsWhatItProved() {
    Result r = run("plan", "--nodes", "4", "--gpus", "8", "--algo", "hierarchical", "--bytes",
        "1M", "--verify", "--no-steps");
    assertEquals(0, r.code, r.err);
    assertTrue(r.out.contains("verified: 32 ranks on 4 nodes"), r.out);
    assertTrue(r.out.contains("exactly once"), r.out);
    assertTrue(r.out.contains("across nodes per node: sent"), r.out);
    assertTrue(!r.out.contains("\nrank 0 "), "--no-steps lists no steps");
  }

  @Test
  void theGpuPathsPlanAcrossNodesStagesThroughTheHostAndIsProved() {
    Result r = run("plan", "--gpu", "--nodes", "3", "--gpus", "2", "--bytes", "1M",
        "--staging-chunk", "64K", "--verify");
    assertEquals(0, r.code, r.err);
    assertTrue(r.out.contains("plan hierarchical-staged allreduce: 3 nodes, 6 ranks"), r.out);
    // 1 MiB in 2 slices of 512 KiB, 8 stage chunks of 64 KiB each, 6 ranks
    assertTrue(r.out.contains("48 stage chunks in all, at most 8 per rank, each at most "
        + "64 KiB"), r.out);
    assertTrue(r.out.contains("stage-out    OUTPUT -> STAGE"), r.out);
    assertTrue(r.out.contains("verified: 6 ranks on 3 nodes"), r.out);
    Result one = run("plan", "--gpu", "--nodes", "1", "--gpus", "4", "--no-steps");
    assertTrue(one.out.contains("plan twoshot allreduce"), one.out);
    Result ring = run("plan", "--gpu", "--nodes", "2", "--algo", "ring");
    assertEquals(2, ring.code);
    assertTrue(ring.err.contains("across nodes the GPU path runs hierarchical"), ring.err);
    Result bc = run("plan", "--gpu", "--collective", "broadcast");
    assertEquals(2, bc.code);
    assertTrue(bc.err.contains("--gpu plans are allreduces"), bc.err);
  }

  @Test
  void mistakesExitWithCodeTwoAndSayWhatIsWrong() {
    Result r = run("plan", "--nodes", "2", "--algo", "oneshot");
    assertEquals(2, r.code);
    assertTrue(r.err.contains("runs inside one node"), r.err);
    Result u = run("plan", "--bogus");
    assertEquals(2, u.code);
    assertTrue(u.err.contains("Unknown option: '--bogus'"), u.err);
    Result s = run("plan", "--bytes", "lots");
    assertEquals(2, s.code);
    assertTrue(s.err.contains("'lots' is not a size like"), s.err);
    assertEquals(2, run("frobnicate").code);
  }

  @Test
  void theGpuBenchmarkWithoutAGpuSaysSoAndPlotsACsvFromAGpuMachine(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    org.junit.jupiter.api.Assumptions.assumeFalse(
        io.treeline.kernels.GpuDevices.list().available(), "this machine has a GPU");
    Result r = run("bench", "--device", "--ranks", "2");
    assertEquals(1, r.code, r.err);
    assertTrue(r.out.contains("no usable GPU here"), r.out);
    java.nio.file.Path csv = dir.resolve("in.csv");
    java.nio.file.Files.writeString(csv, "ranks,mode,gpus,sync,bytes,algo,chosen,time_us,"
        + "algbw_gbps,busbw_gbps,wrong\n2,threads,1,EVENTS,1024,oneshot,oneshot,40.0,0.03,0.03,0\n"
        + "2,threads,1,EVENTS,2048,oneshot,oneshot,41.0,0.05,0.05,0\n");
    Result p = run("bench", "--device", "--from-csv", csv.toString(), "--out", dir.toString());
    assertEquals(0, p.code, p.err);
    assertTrue(java.nio.file.Files.size(dir.resolve("bench-device-threads.png")) > 1000);
    assertTrue(java.nio.file.Files.exists(dir.resolve("bench-device-threads.svg")));
  }

  @Test
  void everyCommandHasHelpAndVersion() {
    for (String c : List.of("train", "plan", "bench", "bench device", "run", "topo")) {
      List<String> argv = new java.util.ArrayList<>(List.of(c.split(" ")));
      argv.add("--help");
      Result r = run(argv.toArray(new String[0]));
      assertEquals(0, r.code, r.err);
      assertTrue(r.out.contains("Usage: ./treeline " + c + " [OPTIONS]"), r.out);
      argv.set(argv.size() - 1, "--version");
      Result v = run(argv.toArray(new String[0]));
      assertEquals(0, v.code, v.err);
      assertTrue(v.out.startsWith("treeline 0.1.0-SNAPSHOT\nJava "), v.out);
    }
    Result d = run("bench", "--device", "--help");
    assertTrue(d.out.contains("Usage: ./treeline bench device"), d.out);
    Result top = run();
    assertEquals(2, top.code);
    assertTrue(top.out.contains("Commands:") && top.out.contains("train"), top.out);
  }

  @Test
  void theCompletionScriptIsBash() {
    Result r = run("completion");
    assertEquals(0, r.code, r.err);
    assertTrue(r.out.contains("complete -F _complete_treeline"), r.out);
    assertTrue(r.out.contains("--max-bytes"), r.out);
  }

  @Test
  void benchPrintsAnNcclTestsTableChecksResultsAndWritesCsvAndPng(@TempDir Path dir)
      throws Exception {
    Result r = run("bench", "--ranks-per-node", "3", "--algo", "auto,ring,twoshot",
        "--max-bytes", "64K", "--factor", "16", "--iters", "3", "--warmup", "1", "--dtype",
        "bf16", "--out", dir.toString());
    assertEquals(0, r.code, r.out + r.err);
    assertTrue(r.out.contains("#wrong"), r.out);
    assertTrue(r.out.contains("# out of bounds values : 0 OK"), r.out);
    List<String> csv = Files.readAllLines(dir.resolve("bench.csv"));
    assertTrue(csv.get(0).startsWith("size_bytes,count,dtype,op,algorithm"), csv.get(0));
    assertEquals(1 + 4 * 3, csv.size(), String.join("\n", csv)); // 8 B..32 KiB x 3 algos
    byte[] png = Files.readAllBytes(dir.resolve("bench.png"));
    assertEquals((byte) 0x89, png[0]);
    assertEquals('P', png[1]);
    assertTrue(Files.readString(dir.resolve("bench.svg")).contains("<svg"));
  }

  @Test
  void runStartsRanksAsSeparateJvmsAndTheirBenchIsCorrect(@TempDir Path dir) throws Exception {
    Result r = run("run", "--nodes", "2", "--ranks-per-node", "2", "--heap", "256m", "--",
        "bench", "-b", "8", "-e", "1M", "-f", "32", "-n", "3", "-w", "2", "--algo",
        "auto,ring,dbt", "--out", dir.toString());
    assertEquals(0, r.code, r.out + r.err);
    assertTrue(r.out.contains("multi-process"), r.out);
    assertTrue(r.out.contains("2 node(s), 4 ranks"), r.out);
    assertTrue(r.out.contains("# out of bounds values : 0 OK"), r.out);
    assertEquals(1 + 4 * 3, Files.readAllLines(dir.resolve("bench.csv")).size());
  }

  @Test
  void runWithoutACommandSaysHow() {
    Result r = run("run", "--nodes", "2");
    assertEquals(2, r.code);
    assertTrue(r.err.contains("put the command after --"), r.err);
  }
}
