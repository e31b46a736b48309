// Candidates as data: text round trip, parsing errors, defaults, canonical form, Choices.
#include "compiler/search/candidate.h"

#include <gtest/gtest.h>

namespace luminal::compiler::search {
namespace {

const ChoicePoint kMatmul{"matmul@17", {"cublaslt", "generated"}, "matmul 64x64x64 f32"};
const ChoicePoint kAlgo{"algo@3", {"0", "1", "2"}, "cuBLASLt algorithm"};

TEST(Candidate, ToStringIsKeyOrderedAndParsesBack) {
  const Candidate c{{{"matmul@17", "generated"}, {"algo@3", "2"}}};
  EXPECT_EQ(c.to_string(), "algo@3=2,matmul@17=generated");
  EXPECT_EQ(Candidate::parse(c.to_string()), c);
  EXPECT_EQ(Candidate{}.to_string(), "");
  EXPECT_EQ(Candidate::parse(""), Candidate{});
}

TEST(Candidate, ParseRejectsMalformedText) {
  for (const char* bad : {"a", "a=", "=b", "a=b,", ",a=b", "a=b,,c=d", "a=b=c", "a=b,a=c",
                          "a=b, c=d", "a b=c", "a=b\n"})
    EXPECT_FALSE(Candidate::parse(bad).has_value()) << "'" << bad << "'";
  EXPECT_TRUE(Candidate::parse("a=b,c=d").has_value());
}

TEST(Candidate, PickFallsBackToTheDefaultForAnUnknownOptionOrKey) {
  EXPECT_EQ((Candidate{{{"matmul@17", "generated"}}}.pick(kMatmul)), "generated");
  EXPECT_EQ((Candidate{{{"matmul@17", "magic"}}}.pick(kMatmul)), "cublaslt");
  EXPECT_EQ((Candidate{{{"other", "generated"}}}.pick(kMatmul)), "cublaslt");
  EXPECT_THROW((void)Candidate{}.pick(ChoicePoint{"empty", {}, ""}), std::invalid_argument);
}

TEST(Candidate, CanonicalDropsDefaultsUnknownOptionsAndUnknownKeys) {
  const Candidate c{{{"matmul@17", "cublaslt"}, {"algo@3", "9"}, {"gone@1", "x"}}};
  EXPECT_EQ(canonical(c, {kMatmul, kAlgo}), Candidate{});
  const Candidate d{{{"matmul@17", "generated"}, {"algo@3", "1"}, {"gone@1", "x"}}};
  EXPECT_EQ(canonical(d, {kMatmul, kAlgo}).to_string(), "algo@3=1,matmul@17=generated");
}

TEST(Candidate, HashIsEqualForEqualCanonicalFormsAndDiffersOtherwise) {
  const Candidate a{{{"matmul@17", "generated"}, {"algo@3", "0"}}};
  const Candidate b{{{"matmul@17", "generated"}}};
  EXPECT_NE(a.hash(), b.hash());  // spelled defaults differ as text...
  EXPECT_EQ(canonical(a, {kMatmul, kAlgo}).hash(),
            canonical(b, {kMatmul, kAlgo}).hash());  // ...not as plans
  EXPECT_NE(b.hash(), (Candidate{{{"algo@3", "1"}}}.hash()));
  EXPECT_NE(b.hash(), Candidate{}.hash());
  EXPECT_EQ(Candidate{}.hash(), 0xcbf29ce484222325ull);  // FNV-1a of "": a fixed, portable value
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

TEST(Choices, RecordsEachPointOnceAndUsedSpellsDefaults) {
  Choices ch(Candidate{{{"algo@3", "2"}, {"unasked@0", "x"}}});
  EXPECT_EQ(ch.choose(kMatmul), "cublaslt");
  EXPECT_EQ(ch.choose(kAlgo), "2");
  // A second ask, even with other options, keeps the first answer and records nothing new.
  EXPECT_EQ(ch.choose(ChoicePoint{"algo@3", {"0", "1"}, ""}), "2");
  ASSERT_EQ(ch.points().size(), 2u);
  EXPECT_EQ(ch.points()[0].key, "matmul@17");
  EXPECT_EQ(ch.points()[1].key, "algo@3");
  EXPECT_EQ(ch.used().to_string(), "algo@3=2,matmul@17=cublaslt");
  EXPECT_EQ(canonical(ch.used(), ch.points()).to_string(), "algo@3=2");
  EXPECT_THROW(ch.choose(ChoicePoint{"empty", {}, ""}), std::invalid_argument);
}

TEST(Choices, TheDefaultCandidateAnswersOptionZero) {
  Choices ch;
  EXPECT_EQ(ch.choose(kAlgo), "0");
  EXPECT_EQ(canonical(ch.used(), ch.points()), Candidate{});
}

}  // namespace
}  // namespace luminal::compiler::search
