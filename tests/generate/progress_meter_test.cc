// Progress text: counts, rate and ETA, a bar on a terminal, throttled lines otherwise.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "experiments/generate/progress_meter.h"

namespace h2oflex::generate {
namespace {

std::string captured(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
  return s;
}

TEST(ProgressMeter, StatusShowsCountsRateAndEta) {
  std::FILE* f = std::tmpfile();
  ProgressMeter m(200, 50, false, 1e9, f);
  EXPECT_EQ(m.status(10.0), "50/200 (25.0%)  ETA --");
  m.advance(30, 600);  // 30 requests, 600 tokens this run
  // 600 tokens in 20 s = 30 tok/s; 120 left at 20/30 s each = 80 s.
  EXPECT_EQ(m.status(20.0), "80/200 (40.0%)  30.0 tok/s  ETA 1m20s");
  std::fclose(f);
}

TEST(ProgressMeter, LinesAreThrottledOffATerminal) {
  std::FILE* f = std::tmpfile();
  ProgressMeter m(10, 0, false, 3600.0, f);
  for (int i = 0; i < 10; ++i) m.advance(1, 5);
  m.finish();
  const std::string out = captured(f);
  // The first block prints, the rest fall within the interval, the end prints once.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_NE(out.find("generate: 10/10 (100.0%)"), std::string::npos) << out;
  std::fclose(f);
}

TEST(ProgressMeter, TerminalGetsABarRedrawnInPlace) {
  std::FILE* f = std::tmpfile();
  ProgressMeter m(4, 0, true, 10.0, f);
  m.advance(2, 8);
  m.advance(2, 8);
  m.finish();
  const std::string out = captured(f);
  EXPECT_NE(out.find("\r[###############...............] 2/4"), std::string::npos) << out;
  EXPECT_NE(out.find("\r[##############################] 4/4"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  std::fclose(f);
}

TEST(ProgressMeter, DurationFormats) {
  EXPECT_EQ(format_duration(44.6), "45s");
  EXPECT_EQ(format_duration(192), "3m12s");
  EXPECT_EQ(format_duration(7500), "2h05m");
  EXPECT_EQ(format_duration(-3), "0s");
}

}  // namespace
}  // namespace h2oflex::generate
