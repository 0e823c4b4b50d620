// `h2oflex run` on hostile files and options (issue 14): every case is refused up front with
// exit code 2 and a message naming the culprit, and leaves no file behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using h2oflex::testing_support::Outcome;

class RunFiles : public h2oflex::testing_support::ScratchDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir() / name) << text;
    return dir() / name;
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  Outcome run(const std::string& args) { return h2oflex::testing_support::run_h2oflex(args); }
  // Exit 2 with `message`, before any generation, and nothing new in the scratch directory.
  void expect_refused(const std::string& args, const std::string& message) {
    size_t before = 0;
    for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(dir())) ++before;
    const Outcome o = run(args);
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find(message), std::string::npos) << "expected '" << message << "' in:\n"
                                                         << o.output;
    EXPECT_EQ(o.output.find("generating"), std::string::npos) << "work started:\n" << o.output;
    size_t after = 0;
    for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(dir())) ++after;
    EXPECT_EQ(after, before) << "a file was left behind";
  }
  static constexpr const char* kConfig = "model: opt-125m\nprompt_len: 4\ngen_len: 2\n";
};

// Defect 3: the result document must not overwrite the config, directly or through a link.
TEST_F(RunFiles, JsonOntoTheConfigIsRefused) {
  const fs::path cfg = write("c.yaml", kConfig);
  expect_refused("run " + cfg.string() + " --json " + cfg.string(), "are the same file");
  fs::create_symlink(cfg, dir() / "link.json");
  expect_refused("run " + cfg.string() + " --json " + (dir() / "link.json").string(),
                 "are the same file");
  EXPECT_EQ(read(cfg), kConfig);
}

// Defect 11: a directory, a missing directory, a directory that cannot take files.
TEST_F(RunFiles, UnwritableJsonIsRefusedBeforeTheRun) {
  const fs::path cfg = write("c.yaml", kConfig);
  fs::create_directories(dir() / "sub");
  expect_refused("run " + cfg.string() + " --json " + (dir() / "sub").string(), "is a directory");
  expect_refused("run " + cfg.string() + " --json " + (dir() / "no" / "r.json").string(),
                 "does not exist");
  // Not even root can create files in /proc.
  expect_refused("run " + cfg.string() + " --json /proc/h2oflex-result.json",
                 "cannot create files in '/proc'");
  EXPECT_FALSE(fs::exists(dir() / "sub.tmp"));
}

// Defect 8: a key given twice (yaml-cpp would keep the first silently).
TEST_F(RunFiles, DuplicateKeysAreRefusedWithBothLines) {
  const fs::path cfg = write("c.yaml", "model: opt-125m\ngen_len: 2\nprompt_len: 4\ngen_len: 3\n");
  expect_refused("run " + cfg.string(), "duplicate key 'gen_len' at line 2, column 1 and line 4");
  const fs::path nested = write("n.yaml", "model: opt-125m\nkv: {policy: h2o, policy: full}\n");
  expect_refused("run " + nested.string(), "duplicate key 'policy'");
}

// Defect 10: the hardware section is checked without a policy too.
TEST_F(RunFiles, HardwareIsValidatedWithoutAPolicy) {
  const fs::path cfg = write("c.yaml", kConfig);
  expect_refused("run " + cfg.string() + " --set hardware=5", "hardware: expected a mapping");
  expect_refused("run " + cfg.string() + " --set hardware.dsk_path=/tmp", "hardware.dsk_path");
  expect_refused("run " + cfg.string() + " --set hardware.host_mem=lots", "hardware.host_mem");
}

// Defect 12: disk_path missing, a file, or not writable: exit 2 naming the key, before loading.
TEST_F(RunFiles, BadDiskPathIsRefusedNamingTheKey) {
  const fs::path cfg = write("c.yaml", kConfig);
  const fs::path file = write("afile", "");
  for (const std::string& p : {(dir() / "missing").string(), file.string(), std::string("/proc")}) {
    expect_refused("run " + cfg.string() + " --set hardware.disk_path=" + p,
                   "hardware.disk_path '" + p + "'");
  }
}

// Defect 13: a config or hardware profile that is a directory.
TEST_F(RunFiles, DirectoryAsConfigOrProfileIsNamed) {
  fs::create_directories(dir() / "conf.d");
  expect_refused("run " + (dir() / "conf.d").string(),
                 "config file '" + (dir() / "conf.d").string() + "' is a directory");
  const fs::path cfg = write("c.yaml", std::string(kConfig) + "policy: auto\nhardware_profile: " +
                                           (dir() / "conf.d").string() + "\n");
  expect_refused("run " + cfg.string(), "hardware profile '" + (dir() / "conf.d").string());
}

// Defect 14: heavy + recent ratios over 1 would keep the whole prompt yet report h2o.
TEST_F(RunFiles, H2oRatiosOverOneAreRefused) {
  const fs::path cfg = write(
      "c.yaml", std::string(kConfig) + "kv: {policy: h2o, heavy_ratio: 0.6, recent_ratio: 0.5}\n");
  expect_refused("run " + cfg.string(), "exceeds 1");
}

// Defect 16: a whole text file given as a profile is quoted and cut, not echoed.
TEST_F(RunFiles, GarbageProfileIsNotEchoed) {
  std::string passwd;
  for (int i = 0; i < 200; ++i)
    passwd += "user" + std::to_string(i) + ":x:1000:1000::/home:/bin/sh\n";
  const fs::path prof = write("profile.yaml", passwd);
  const fs::path cfg = write(
      "c.yaml", std::string(kConfig) + "policy: auto\nhardware_profile: " + prof.string() + "\n");
  const Outcome o = run("run " + cfg.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_LT(o.output.size(), 1500u) << o.output;
  EXPECT_NE(o.output.find("bytes in all"), std::string::npos) << o.output;
}

// Defect 17: an error caused by --set names the --set, not the file.
TEST_F(RunFiles, SetErrorsNameTheSet) {
  const fs::path cfg = write("c.yaml", kConfig);
  expect_refused("run " + cfg.string() + " --set gen_len=many",
                 "--set gen_len=many (over " + cfg.string() + "): key 'gen_len'");
  // The file's own error is still the file's.
  const fs::path bad = write("b.yaml", "model: opt-125m\ngen_len: many\n");
  const Outcome o = run("run " + bad.string() + " --set seed=2");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.output.find(bad.string() + ": key 'gen_len'"), std::string::npos) << o.output;
}

// Found by the run_config fuzz target: structure yaml-cpp refuses with a bare exception (exit 1,
// no file named) is bad input like any other.
TEST_F(RunFiles, KeysThatAreNotNamesAndSetIntoAScalarAreInputErrors) {
  const fs::path cfg = write("c.yaml", kConfig);
  expect_refused("run " + cfg.string() + " --set model.a=1",
                 "--set model.a=1: 'model' holds a value, not a mapping");
  const fs::path list_key = write("k.yaml", std::string(kConfig) + "? [a]\n: 1\n");
  expect_refused("run " + list_key.string(), "a key that is not a name (line 4)");
  const fs::path nested = write("n.yaml", std::string(kConfig) + "hardware: {? [a] : 1}\n");
  expect_refused("run " + nested.string(), "hardware: a key that is not a name");
}

// Found by the run_config fuzz target: a lone "," made the duplicate-key scan loop forever.
TEST_F(RunFiles, MalformedYamlDoesNotHang) {
  const fs::path cfg = write("comma.yaml", ",");
  const Outcome o = run("run " + cfg.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
}

// The same check guards every command's outputs: plan's --json onto its --hardware profile.
TEST_F(RunFiles, PlanJsonOntoTheProfileIsRefused) {
  const fs::path hw = dir() / "hw.yaml";
  fs::copy_file(fs::path(H2OFLEX_SOURCE_DIR) / "experiments/hardware/local_cpu.yaml", hw);
  const std::string before = read(hw);
  expect_refused("plan --model opt-125m --hardware " + hw.string() + " --json " + hw.string(),
                 "are the same file");
  EXPECT_EQ(read(hw), before);
}

}  // namespace
