// base/units.h: the text of each unit's boundaries and rounding, which reports, panes and the
// trainer's progress lines share (the CLI goldens hold the same text).
#include "base/units.h"

#include <gtest/gtest.h>

namespace stepscope {
namespace {

TEST(UnitsTest, DurationsHaveFixedDigitsPerUnit) {
  EXPECT_EQ(FormatDuration(int64_t{0}), "0 ns");
  EXPECT_EQ(FormatDuration(int64_t{999}), "999 ns");
  EXPECT_EQ(FormatDuration(int64_t{1000}), "1.0 us");
  EXPECT_EQ(FormatDuration(int64_t{12345}), "12.3 us");
  EXPECT_EQ(FormatDuration(int64_t{999999}), "1000.0 us");
  EXPECT_EQ(FormatDuration(int64_t{1234567}), "1.235 ms");
  EXPECT_EQ(FormatDuration(int64_t{2000000000}), "2.000 s");
  EXPECT_EQ(FormatDuration(int64_t{-1500}), "-1.5 us");
}

TEST(UnitsTest, SignedDurationsCarryTheirSign) {
  EXPECT_EQ(FormatSignedDuration(-7972613), "-7.973 ms");
  EXPECT_EQ(FormatSignedDuration(1500), "1.5 us");
  EXPECT_EQ(FormatSignedDuration(1500, /*plus_sign=*/true), "+1.5 us");
  EXPECT_EQ(FormatSignedDuration(-1500, /*plus_sign=*/true), "-1.5 us");
  EXPECT_EQ(FormatSignedDuration(0, /*plus_sign=*/true), "0 ns");
  EXPECT_EQ(FormatSignedDuration(-999), "-999 ns");
}

TEST(UnitsTest, DoubleDurationsRoundToTheNearestNanosecond) {
  EXPECT_EQ(FormatDuration(999.4), "999 ns");
  EXPECT_EQ(FormatDuration(999.5), "1.0 us");
  EXPECT_EQ(FormatDuration(-0.5), "-1 ns");
}

TEST(UnitsTest, SignificantDurationsKeepThreeDigits) {
  EXPECT_EQ(FormatDurationSignificant(830), "830 ns");
  EXPECT_EQ(FormatDurationSignificant(12500), "12.50 us");
  EXPECT_EQ(FormatDurationSignificant(1250000), "1.250 ms");
  EXPECT_EQ(FormatDurationSignificant(250e6), "250.0 ms");
  EXPECT_EQ(FormatDurationSignificant(2e9), "2.000 s");
}

TEST(UnitsTest, TimeAtUsesTheUnitOfTenSteps) {
  EXPECT_EQ(FormatTimeAt(2.5e6, 500e3), "2.5 ms");
  EXPECT_EQ(FormatTimeAt(250e3, 50e3), "250 us");
  EXPECT_EQ(FormatTimeAt(-1e-9, 1e6), "0 ms");
}

TEST(UnitsTest, ClockDurationsRoundToTheSecond) {
  EXPECT_EQ(FormatClockDuration(41.6), "42s");
  EXPECT_EQ(FormatClockDuration(185), "3m05s");
  EXPECT_EQ(FormatClockDuration(3725), "1h02m");
}

TEST(UnitsTest, BytesUseBinaryUnits) {
  EXPECT_EQ(FormatBytes(830), "830 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(12 * 1024 + 512), "12.5 KiB");
  EXPECT_EQ(FormatBytes(3 << 19), "1.50 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(FormatBytes(-2048), "-2.0 KiB");
}

TEST(UnitsTest, SiPrefixesKeepThreeSignificantDigits) {
  EXPECT_EQ(FormatSi(830, "B/s"), "830 B/s");
  EXPECT_EQ(FormatSi(1234567, "FLOP/s"), "1.23 MFLOP/s");
  EXPECT_EQ(FormatSi(1.23e13, "FLOP"), "12.3 TFLOP");
  EXPECT_EQ(FormatSi(989.4e12, "FLOP/s"), "989 TFLOP/s");
  EXPECT_EQ(FormatSi(0, "FLOP"), "0 FLOP");
  EXPECT_EQ(FormatSi(-2500, "B"), "-2.5 kB");
  // Just under a prefix: three digits round it up to the next prefix's "1", not "1e+03".
  EXPECT_EQ(FormatSi(999.7, "FLOP"), "1 kFLOP");
  EXPECT_EQ(FormatSi(999.7e9, "B/s"), "1 TB/s");
  EXPECT_EQ(FormatSi(999.4e9, "B/s"), "999 GB/s");
  EXPECT_EQ(FormatSi(5e21, "FLOP"), "5e+03 EFLOP");  // beyond the last prefix
  EXPECT_EQ(FormatSi(1e3, ""), "1 k");
}

TEST(UnitsTest, DurationUnitsFollowTheMagnitude) {
  EXPECT_STREQ(DurationUnitFor(999).name, "ns");
  EXPECT_STREQ(DurationUnitFor(-1000).name, "us");
  EXPECT_STREQ(DurationUnitFor(1e6).name, "ms");
  EXPECT_DOUBLE_EQ(DurationUnitFor(1e9).ns, 1e9);
}

}  // namespace
}  // namespace stepscope
