// `gpufair simulate` as users run it: exit codes, messages and output files.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "commands.h"
#include "sim/sim_testing.h"

namespace gpufair::app {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run(std::vector<std::string> args) {
  std::ostringstream out, err;
  auto* oldOut = std::cout.rdbuf(out.rdbuf());
  auto* oldErr = std::cerr.rdbuf(err.rdbuf());
  const int code = runSimulate(args);
  std::cout.rdbuf(oldOut);
  std::cerr.rdbuf(oldErr);
  return {code, out.str(), err.str()};
}

class SimulateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per process and test: several builds (or a repeated test) may run at once.
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        ::testing::TempDir() + "/simulate_cli." + std::to_string(::getpid()) + "." + info->name();
    std::filesystem::create_directories(dir_);
    nodes_ = dir_ + "/nodes.csv";
    pods_ = dir_ + "/pods.csv";
    std::ofstream(nodes_) << "sn,cpu_milli,memory_mib,gpu,model\n"
                             "n1,64000,262144,2,P100\nn2,96000,393216,8,G2\nn3,32000,131072,4,T4\n";
    std::ofstream(pods_) << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                            "p0,8000,16384,1,1000,\np1,4000,8192,1,500,\np2,16000,65536,4,1000,\n"
                            "p3,2000,4096,0,0,\np4,6000,12288,1,250,T4\n";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::vector<std::string> csv(std::vector<std::string> more) const {
    std::vector<std::string> a{"--nodes", nodes_, "--pods", pods_, "--quiet"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  // `simulate --over-time ARGS --json FILE`: the JSON written (the run must succeed).
  nlohmann::json overTime(std::vector<std::string> args) const {
    const std::string out = dir_ + "/over-time.json";
    args.insert(args.end(), {"--quiet", "--over-time", "--json", out});
    const Outcome o = run(args);
    EXPECT_EQ(o.code, 0) << o.err;
    std::ifstream json(out);
    return nlohmann::json::parse(json);
  }
  std::string dir_, nodes_, pods_;
};

// The longest wait of the pods of one size ("8", "4", ...) in one replay of the JSON; -1: none.
double maxWait(const nlohmann::json& replay, const std::string& size) {
  for (const auto& w : replay["waitSeconds"]) {
    if (w["size"] == size) return w["max"].get<double>();
  }
  return -1.0;
}

TEST_F(SimulateCli, PrintsTheTableAndWritesJsonAndSvg) {
  const std::string json = dir_ + "/out.json", svg = dir_ + "/out.svg";
  Outcome o =
      run(csv({"--policy", "fgd,bestfit", "--seeds", "1-3", "--json", json, "--plot", svg}));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("median of 3 seeds"));
  EXPECT_THAT(o.out, HasSubstr("fgd"));
  EXPECT_THAT(o.out, HasSubstr("bestfit"));
  EXPECT_EQ(o.err, "") << "--quiet";
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["policies"].size(), 2u);
  EXPECT_EQ(j["policies"][0]["runs"].size(), 3u);
  std::ifstream s(svg);
  std::string text((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("</svg>"));
}

TEST_F(SimulateCli, SummaryLineWithoutQuiet) {
  Outcome o = run({"--nodes", nodes_, "--pods", pods_, "--seeds", "5", "--policy", "random"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.err, HasSubstr("gpufair simulate: 1 run ("));
}

TEST_F(SimulateCli, UsageErrorsExitTwo) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{"--quiet"}, "no input"},
      {{"--nodes", "x.csv"}, "--nodes and --pods go together"},
      {csv({"--seeds", "9-1"}), "range \"9-1\" goes down"},
      {csv({"--seeds", "a,b"}), "is not a seed"},
      {csv({"--policy", "fgd,magic"}), "unknown policy \"magic\""},
      {csv({"--load", "lots"}), "--load \"lots\""},
      {csv({"--sampling", "twice"}), "--sampling must be inflate or resample"},
      {csv({"--bogus"}), "unknown flag --bogus"},
      {csv({"--cluster", "c.yaml"}), "not both"},
      {csv({"--path", "fast"}), "path \"fast\" is not one of paper, service, service-given"},
      {csv({"--path", "paper,paper"}), "path paper given twice"},
      {csv({"--filter-mode", "some"}), "--filter-mode: filter mode must be all, best or top-N"},
      {csv({"--offered-load", "1"}), "--offered-load needs --over-time"},
      {csv({"--over-time", "--offered-load", "x"}), "--offered-load \"x\""},
      {csv({"--consolidate", "on"}), "--consolidate needs --over-time"},
      {csv({"--inflate", "2"}), "--inflate needs --over-time"},
      {csv({"--over-time", "--consolidate", "maybe"}), "--consolidate \"maybe\": expected off"},
      {csv({"--over-time", "--movable-share", "2"}), "--movable-share \"2\" is not a number"},
      {csv({"--over-time", "--resume", "later"}), "--resume \"later\": expected full"},
      {csv({"--over-time", "--reclaim", "x"}), "--reclaim \"x\": expected on or off"},
      {csv({"--over-time", "--inflate", "0.5"}), "--inflate \"0.5\" is not a number"},
  };
  for (const auto& c : cases) {
    Outcome o = run(c.args);
    EXPECT_EQ(o.code, 2) << c.message;
    EXPECT_THAT(o.err, HasSubstr(c.message));
  }
}

TEST_F(SimulateCli, InputErrorsExitOne) {
  Outcome missing = run({"--nodes", dir_ + "/none.csv", "--pods", pods_});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("cannot read " + dir_ + "/none.csv"));

  const std::string bad = dir_ + "/bad.csv";
  std::ofstream(bad) << "name,num_gpu,gpu_milli\nok,1,500\nbroken,1,x\n";
  Outcome badRow = run({"--nodes", nodes_, "--pods", bad});
  EXPECT_EQ(badRow.code, 1);
  EXPECT_THAT(badRow.err, HasSubstr(bad + ":3: column gpu_milli"));

  const std::string cpuOnly = dir_ + "/cpu.csv";
  std::ofstream(cpuOnly) << "name,num_gpu\nc,0\n";
  Outcome noGpu = run({"--nodes", nodes_, "--pods", cpuOnly});
  EXPECT_EQ(noGpu.code, 1);
  EXPECT_THAT(noGpu.err, HasSubstr("no pod of the workload requests a GPU"));

  Outcome unwritable = run(csv({"--seeds", "1", "--json", dir_ + "/no/such/dir/x.json"}));
  EXPECT_EQ(unwritable.code, 1);
  EXPECT_THAT(unwritable.err, HasSubstr("cannot write"));
}

// Both paths on the same seeds, and the difference between them.
TEST_F(SimulateCli, ComparesTheServicePathWithThePaperMode) {
  Outcome o = run(csv({"--policy", "fgd", "--seeds", "1-2", "--path", "paper,service"}));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("fgd (paper)"));
  EXPECT_THAT(o.out, HasSubstr("fgd (service)"));
  EXPECT_THAT(o.out, HasSubstr("difference to the paper mode"));
  EXPECT_THAT(o.out, HasSubstr("fgd (service) - paper:"));
  Outcome queues = run(csv({"--queues", dir_ + "/none.yaml"}));
  EXPECT_EQ(queues.code, 1);
  EXPECT_THAT(queues.err, HasSubstr("--queues: "));
}

TEST_F(SimulateCli, OverTimeNeedsTimesAndReports) {
  Outcome noTimes = run(csv({"--over-time"}));
  EXPECT_EQ(noTimes.code, 1);
  EXPECT_THAT(noTimes.err, HasSubstr(pods_ + ":1: no creation_time and deletion_time columns"));

  const std::string timed = dir_ + "/timed.csv";
  std::ofstream(timed)
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
         "a,1000,1024,8,1000,0,100\nb,1000,1024,8,1000,10,50\n"
         "c,1000,1024,4,1000,20,30\nd,1000,1024,1,500,30,90\n";
  Outcome o = run({"--nodes", nodes_, "--pods", timed, "--quiet", "--over-time", "--policy",
                   "fgd,bestfit", "--json", dir_ + "/t.json", "--plot", dir_ + "/t.svg"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("wait from arrival to start"));
  EXPECT_THAT(o.out, HasSubstr("bestfit"));
  std::ifstream json(dir_ + "/t.json");
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["schema"], "gpufair.simulate.time/v1");
  ASSERT_EQ(j["policies"].size(), 2u);
  EXPECT_EQ(j["policies"][0]["pods"], 4);
  std::ifstream svg(dir_ + "/t.svg");
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("</svg>"));
}

// The seed layout over time: spread puts the two 4-GPU pods a and b on different 8-GPU nodes;
// big (8 GPUs) arrives at 10. Without consolidation it waits for them to leave at 1000. With it,
// serve's controller runs at 20 (every 10 s of trace time): it evicts one of them (movable: all
// pods), holds the freed node for big and the other node for the replacement; both start at 20.
// The replacement runs its whole 1000 s again (to 1020), or with --resume remaining what was
// left (to 1000).
TEST_F(SimulateCli, OverTimeConsolidationMovesOnePodForTheWaitingOne) {
  const std::string nodes = dir_ + "/two.csv";
  std::ofstream(nodes) << "sn,cpu_milli,memory_mib,gpu,model\n"
                          "n1,64000,262144,8,A\nn2,64000,262144,8,A\n";
  const std::string timed = dir_ + "/timed.csv";
  std::ofstream(timed)
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
         "a,1000,1024,4,1000,0,1000\nb,1000,1024,4,1000,0,1000\n"
         "big,1000,1024,8,1000,10,110\n";
  auto replay = [&](std::vector<std::string> more) {
    std::vector<std::string> a{"--nodes", nodes, "--pods", timed, "--policy", "spread"};
    a.insert(a.end(), more.begin(), more.end());
    return overTime(a);
  };
  auto bigWait = [](const nlohmann::json& p) { return maxWait(p, "8"); };
  const auto both = replay({"--consolidate", "on,off", "--movable-share", "1"});
  ASSERT_EQ(both["policies"].size(), 2u);
  const auto& on = both["policies"][0];
  const auto& off = both["policies"][1];
  EXPECT_EQ(on["policy"], "spread+consolidate");
  EXPECT_EQ(off["policy"], "spread");
  EXPECT_EQ(bigWait(off), 990) << "waits for a and b to leave";
  EXPECT_EQ(off["evictions"], 0);
  EXPECT_EQ(bigWait(on), 10) << "placed at the first round after its arrival";
  EXPECT_EQ(on["moves"], 1);
  EXPECT_EQ(on["evictions"], 1);
  EXPECT_EQ(on["placed"], 3) << "every pod ran, the moved one again";
  EXPECT_EQ(on["neverRestarted"], 0);
  EXPECT_EQ(on["restartWaitSeconds"]["max"], 0) << "its replacement started on its held node";
  EXPECT_EQ(on["spanSeconds"], 1020);
  EXPECT_EQ(on["lostGpuSeconds"], 4 * 20) << "4 GPUs for the 20 s it had run";
  EXPECT_THAT(both["control"].get<std::string>(), HasSubstr("consolidation"));

  const auto resumed =
      replay({"--consolidate", "on", "--movable-share", "1", "--resume", "remaining"});
  EXPECT_EQ(resumed["policies"][0]["spanSeconds"], 1000) << "resumes its last 980 s";
  EXPECT_EQ(resumed["policies"][0]["lostGpuSeconds"], 0);

  const auto pinned = replay({"--consolidate", "on"});
  EXPECT_EQ(pinned["policies"][0]["moves"], 0) << "nothing is movable: no label, nothing borrowed";
  EXPECT_EQ(bigWait(pinned["policies"][0]), 990);
}

// --queues over time: each pod goes to the queue its name hashes to (queueFor: "a" and "c" to
// queue a, "b" to queue b), so quotas play as in serve. Queue a's limit makes c wait for a to
// leave although 4 GPUs are free; without the file (one queue holding the cluster) it does not.
// With a limit of 8, queue a borrows b's idle GPUs for c; when b's pod arrives (within its
// deserved quota), reclaim (--reclaim on, the default with --queues) evicts the borrowed c at the
// next round and b starts; c's replacement (still in queue a) waits for b to leave.
TEST_F(SimulateCli, OverTimeQueuesFromAFileMakeQuotasAndReclaimPlay) {
  const std::string node = dir_ + "/one.csv";
  std::ofstream(node) << "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,8,A\n";
  const std::string header =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n";
  const std::string limited = dir_ + "/limited.csv";
  std::ofstream(limited) << header << "a,1000,1024,4,1000,0,100\nc,1000,1024,4,1000,10,110\n";
  const std::string queues = dir_ + "/queues.yaml";
  std::ofstream(queues) << "queues:\n- name: a\n  namespaces: [a]\n  gpu: {deserved: 4, limit: 4}\n"
                           "- name: b\n  namespaces: [b]\n  gpu: {deserved: 4}\n";
  const std::vector<std::string> limitedRun{"--nodes", node,       "--pods",
                                            limited,   "--policy", "bestfit"};
  const auto oneQueue = overTime(limitedRun);
  EXPECT_EQ(maxWait(oneQueue["policies"][0], "4"), 0);
  EXPECT_EQ(oneQueue["queues"], "one queue holding the cluster");
  std::vector<std::string> withQueues = limitedRun;
  withQueues.insert(withQueues.end(), {"--queues", queues});
  const auto quota = overTime(withQueues);
  EXPECT_EQ(maxWait(quota["policies"][0], "4"), 90) << "c waits for a: queue a at its limit";
  EXPECT_EQ(quota["queues"], "queues from " + queues);

  std::ofstream(queues, std::ios::trunc)
      << "queues:\n- name: a\n  namespaces: [a]\n  gpu: {deserved: 4, limit: 8}\n"
         "- name: b\n  namespaces: [b]\n  gpu: {deserved: 4}\n";
  const std::string borrowed = dir_ + "/borrowed.csv";
  std::ofstream(borrowed) << header
                          << "a,1000,1024,4,1000,0,1000\nc,1000,1024,4,1000,1,1001\n"
                             "b,1000,1024,4,1000,10,110\n";
  std::vector<std::string> reclaimRun{"--nodes",  node,      "--pods",   borrowed,
                                      "--policy", "bestfit", "--queues", queues};
  const auto reclaimed = overTime(reclaimRun)["policies"][0];
  EXPECT_EQ(reclaimed["evictions"], 1);
  EXPECT_EQ(maxWait(reclaimed, "4"), 10) << "b starts at the round at 20";
  EXPECT_EQ(reclaimed["placed"], 3);
  EXPECT_EQ(reclaimed["spanSeconds"], 1120) << "c runs again from 120, when b leaves";
  reclaimRun.insert(reclaimRun.end(), {"--reclaim", "off"});
  const auto kept = overTime(reclaimRun)["policies"][0];
  EXPECT_EQ(kept["evictions"], 0);
  EXPECT_EQ(maxWait(kept, "4"), 990) << "b waits for a to leave";
}

// A list that cannot offer the load asked however fast it arrives: an error naming --inflate;
// inflated, it can.
TEST_F(SimulateCli, OverTimeOfferedLoadBeyondTheListNeedsInflate) {
  const std::string timed = dir_ + "/timed.csv";
  std::ofstream(timed)
      << "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
         "a,1000,1024,1,1000,0,100\nb,1000,1024,1,1000,50,150\n"
         "c,1000,1024,1,1000,100,200\n";
  std::vector<std::string> a{"--nodes", nodes_,        "--pods",         timed,
                             "--quiet", "--over-time", "--offered-load", "0.5"};
  Outcome o = run(a);
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("cannot offer --offered-load 0.5"));
  EXPECT_THAT(o.err, HasSubstr("--inflate"));
  a.insert(a.end(), {"--inflate", "5"});
  Outcome inflated = run(a);
  EXPECT_EQ(inflated.code, 0) << inflated.err;
  const std::size_t at = inflated.out.find("offered ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::stod(inflated.out.substr(at + 8)), 0.5);
  EXPECT_THAT(inflated.out, HasSubstr("/15 ")) << "5 x the 3 pods";
}

TEST_F(SimulateCli, HelpExitsZero) {
  Outcome o = run({"--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_THAT(o.out, HasSubstr("--seeds"));
}

}  // namespace
}  // namespace gpufair::app
