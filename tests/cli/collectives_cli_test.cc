// `stepscope collectives` through RunCli: the JSON document (schema, keys, null for what is not
// known), the text table, per-rank inputs, and bad input (exit 2 with a message naming it).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using testing::DataPath;

TEST(CollectivesCliTest, IsListedWithHelp) {
  EXPECT_NE(RunStepscope({"--help"}).out.find("  collectives "), std::string::npos);
  const CliResult help = RunStepscope({"collectives", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--link-peak"), std::string::npos);
}

TEST(CollectivesCliTest, JsonRowsOfAConstructedNcclTrace) {
  const CliResult r =
      RunStepscope({"collectives", DataPath("collectives/nccl_constructed.json"), "--json", "--link-peak", "100"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "stepscope.collectives/1");
  EXPECT_EQ(doc["link_peak"]["bytes_per_s"], 100e9);
  EXPECT_EQ(doc["link_peak"]["source"], "--link-peak");
  EXPECT_EQ(doc["totals"]["calls"], 5);
  EXPECT_EQ(doc["totals"]["exposed_ns"], 145000);
  ASSERT_EQ(doc["collectives"].size(), 5u);
  bool found_sized = false, found_unsized = false;
  for (const auto& row : doc["collectives"]) {
    for (const char* key : {"rank", "device", "name", "source", "algorithm", "dtype", "group_size", "count", "bytes",
                            "total_bytes", "time_ns", "exposed_ns", "algbw_bytes_per_s", "busbw_bytes_per_s",
                            "busbw_share_of_peak"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    EXPECT_EQ(row["rank"], 3);
    if (row["name"] == "all_reduce" && row["dtype"] == "Float") {
      found_sized = true;
      EXPECT_EQ(row["bytes"], 4194304);
      EXPECT_EQ(row["group_size"], 8);
      EXPECT_DOUBLE_EQ(row["busbw_bytes_per_s"].get<double>(), 4194304 / 100e-6 * 14 / 8);
      EXPECT_DOUBLE_EQ(row["busbw_share_of_peak"].get<double>(), 4194304 / 100e-6 * 14 / 8 / 100e9);
    }
    if (row["bytes"].is_null()) {
      found_unsized = true;
      EXPECT_TRUE(row["dtype"].is_null());
      EXPECT_TRUE(row["algbw_bytes_per_s"].is_null());
      EXPECT_TRUE(row["busbw_bytes_per_s"].is_null());
      EXPECT_EQ(row["time_ns"], 10000);
    }
  }
  EXPECT_TRUE(found_sized);
  EXPECT_TRUE(found_unsized);
}

TEST(CollectivesCliTest, TextOfTwoGlooRanks) {
  const CliResult r = RunStepscope({"collectives", DataPath("collectives/gloo_collectives_rank0.json.gz"),
                                    DataPath("collectives/gloo_collectives_rank1.json.gz")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("collectives 14 (14 with a size)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("link peak   unknown: pass --link-peak GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all_gather"), std::string::npos);
  // --rank keeps one rank's file.
  const CliResult one = RunStepscope({"collectives", DataPath("collectives/gloo_collectives_rank0.json.gz"),
                                      DataPath("collectives/gloo_collectives_rank1.json.gz"), "--rank", "1", "--json"});
  ASSERT_EQ(one.code, 0) << one.err;
  const nlohmann::json rows = nlohmann::json::parse(one.out)["collectives"];  // kept: the loop reads it
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) EXPECT_EQ(row["rank"], 1);
}

TEST(CollectivesCliTest, NoCollectivesIsSaid) {
  const CliResult r = RunStepscope({"collectives", DataPath("kineto/alexnet_launches.json")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note: no collectives in the trace"), std::string::npos) << r.out;
}

TEST(CollectivesCliTest, BadLinkPeakIsAUsageError) {
  for (const char* bad : {"fast", "0", "-3", "nan", "inf", "12x"}) {
    const CliResult r =
        RunStepscope({"collectives", DataPath("collectives/nccl_constructed.json"), "--link-peak", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find(std::string("--link-peak ") + bad), std::string::npos) << r.err;
  }
  const CliResult missing = RunStepscope({"collectives", DataPath("collectives/no_such_trace.json")});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no_such_trace.json"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace stepscope::cli
