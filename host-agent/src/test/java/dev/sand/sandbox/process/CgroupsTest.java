package dev.sand.sandbox.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Finding this machine's cgroups and writing a sandbox's limits (on a directory standing in). */
class CgroupsTest {
  private static final String V1 =
      """
      31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
      32 31 0:29 / %1$s/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
      35 31 0:32 / %1$s/memory rw,relatime - cgroup cgroup rw,memory
      41 31 0:38 / %1$s/unified rw,relatime - cgroup2 cgroup2 rw
      """;

  /** A hybrid machine whose v2 mount has no cpu or memory (this one) uses the v1 hierarchies. */
  @Test
  void of_hybridWithoutV2Controllers_usesV1CpuAndMemory(@TempDir Path root) throws Exception {
    Files.createDirectories(root.resolve("unified"));
    Files.writeString(root.resolve("unified/cgroup.controllers"), "hugetlb\n");

    Optional<Cgroups> found = Cgroups.of(V1.formatted(root), "sand-ab", new StringBuilder());

    assertThat(found).isPresent();
    assertThat(found.get().version()).isEqualTo(Cgroups.Version.V1);
    assertThat(found.get().parents())
        .containsExactly(root.resolve("cpu,cpuacct/sand-ab"), root.resolve("memory/sand-ab"));
  }

  /** A v2 mount that offers cpu and memory wins; one parent serves both. */
  @Test
  void of_v2WithCpuAndMemory_usesTheUnifiedHierarchy(@TempDir Path root) throws Exception {
    Files.writeString(root.resolve("cgroup.controllers"), "cpuset cpu io memory pids\n");
    String mountinfo = "30 23 0:26 / " + root + " rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

    Optional<Cgroups> found = Cgroups.of(mountinfo, "sand-ab", new StringBuilder());

    assertThat(found.get().version()).isEqualTo(Cgroups.Version.V2);
    assertThat(found.get().parents()).containsExactly(root.resolve("sand-ab"));
  }

  /** Without either, nothing is found, and the reason names what is missing. */
  @Test
  void of_noUsableCgroups_saysWhy() {
    StringBuilder why = new StringBuilder();

    Optional<Cgroups> found = Cgroups.of("30 23 0:26 / /proc rw - proc proc rw\n", "sand-ab", why);

    assertThat(found).isEmpty();
    assertThat(why.toString()).contains("no cgroup v2 mount").contains("cpu: null");
  }

  /** v1: the weight becomes cpu.shares (100 → 1024), the quota cfs_quota_us, memory in bytes. */
  @Test
  void create_v1_writesSharesQuotaAndMemory(@TempDir Path root) throws Exception {
    Files.createDirectories(root.resolve("unified"));
    Cgroups cgroups = Cgroups.of(V1.formatted(root), "sand-ab", new StringBuilder()).get();

    Cgroups.Box box = cgroups.create("proc-thumbs-1", new Cgroups.Limits(50, 1.5, 300));

    Path cpu = root.resolve("cpu,cpuacct/sand-ab/proc-thumbs-1");
    Path memory = root.resolve("memory/sand-ab/proc-thumbs-1");
    assertThat(box.dirs()).containsExactly(cpu, memory);
    assertThat(box.memory()).isEqualTo(memory);
    assertThat(Files.readString(cpu.resolve("cpu.shares"))).isEqualTo("512");
    assertThat(Files.readString(cpu.resolve("cpu.cfs_quota_us"))).isEqualTo("150000");
    assertThat(Files.readString(cpu.resolve("cpu.cfs_period_us"))).isEqualTo("100000");
    assertThat(Files.readString(memory.resolve("memory.limit_in_bytes")))
        .isEqualTo(String.valueOf(300L * 1024 * 1024));
  }

  /** v2: cpu and memory are delegated to the sandboxes; weight, quota, memory and no swap. */
  @Test
  void create_v2_delegatesControllersAndWritesLimits(@TempDir Path root) throws Exception {
    Files.writeString(root.resolve("cgroup.controllers"), "cpu memory\n");
    Files.writeString(root.resolve("cgroup.subtree_control"), "");
    Files.createDirectories(root.resolve("sand-ab"));
    Files.writeString(root.resolve("sand-ab/cgroup.subtree_control"), "cpu memory\n");
    String mountinfo = "30 23 0:26 / " + root + " rw - cgroup2 cgroup2 rw\n";
    Cgroups cgroups = Cgroups.of(mountinfo, "sand-ab", new StringBuilder()).get();
    Path dir = root.resolve("sand-ab/b");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("memory.swap.max"), "max");

    Cgroups.Box box = cgroups.create("b", new Cgroups.Limits(200, 1, 64));

    assertThat(box.dirs()).containsExactly(dir);
    assertThat(Files.readString(root.resolve("cgroup.subtree_control"))).isEqualTo("+cpu +memory");
    assertThat(Files.readString(dir.resolve("cpu.weight"))).isEqualTo("200");
    assertThat(Files.readString(dir.resolve("cpu.max"))).isEqualTo("100000 100000");
    assertThat(Files.readString(dir.resolve("memory.max")))
        .isEqualTo(String.valueOf(64L * 1024 * 1024));
    assertThat(Files.readString(dir.resolve("memory.swap.max"))).isEqualTo("0");
  }

  /** The pids of a cgroup are read from its cgroup.procs; a removed cgroup has none. */
  @Test
  void pids_readsCgroupProcs(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("cgroup.procs"), "12\n345\n");

    assertThat(Cgroups.pids(dir)).containsExactly(12L, 345L);
    assertThat(Cgroups.pids(dir.resolve("gone"))).isEqualTo(List.of());
  }
}
