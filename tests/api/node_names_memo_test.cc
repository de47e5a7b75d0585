// NodeNamesMemo and RequestDocument's NodeNames cut: a /filter body decoded through the memo gives
// exactly what decoding the whole body gives (pod, names, errors), over random sequences of bodies
// whose NodeNames lists are edited as kube-scheduler's are (and in ways it never does).
#include "node_names_memo.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpufair/api/wire.h"

#include "request_document.h"
#include "test_support.h"

namespace gpufair::api {
namespace {

struct Decoded {
  bool parsed = false;
  std::string error;
  std::string pod;  // namespace/name/uid and annotations, as decoded
  bool nodesMode = false;
  std::vector<std::string> names;

  bool operator==(const Decoded&) const = default;
};

std::string describe(const Decoded& d) {
  std::string out = (d.parsed ? "parsed " : "not parsed ") + d.error + " pod=" + d.pod +
                    (d.nodesMode ? " nodes" : "") + " names=";
  for (const auto& n : d.names) out += "[" + n + "]";
  return out;
}

Decoded finish(detail::RequestDocument& document, bool fromMemo,
               const detail::NodeNamesMemo* memo) {
  Decoded out;
  if (!document.status().isOk()) {
    out.error = document.status().reason();
    return out;
  }
  out.parsed = true;
  ExtenderArgs& args = document.extenderArgs();
  if (auto status = decodeExtenderArgs(document.root(), args); !status.isOk()) {
    out.error = status.reason();
    return out;
  }
  if (fromMemo && document.namesTaken()) {
    EXPECT_TRUE(args.candidates.empty());
    const auto names = memo->names();
    args.candidates.assign(names.begin(), names.end());
  }
  out.pod = args.pod.ns + "/" + args.pod.name + "/" + args.pod.uid;
  for (const auto& [k, v] : args.pod.annotations) out.pod += " " + k + "=" + v;
  out.nodesMode = args.nodesMode;
  for (std::string_view n : args.candidates) out.names.emplace_back(n);
  return out;
}

Decoded decodeWhole(std::string_view body) {
  detail::RequestDocument document(body);
  return finish(document, false, nullptr);
}

Decoded decodeWithMemo(std::string_view body, detail::NodeNamesMemo& memo) {
  detail::RequestDocument document(body, memo);
  return finish(document, true, &memo);
}

// A list of names as JSON array text; `space` puts blanks around the separators.
std::string arrayText(const std::vector<std::string>& names, bool space) {
  std::string out = space ? "[ " : "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += space ? " ,\n " : ",";
    out += '"' + names[i] + '"';
  }
  out += space ? " ]" : "]";
  return out;
}

class BodyMaker {
 public:
  explicit BodyMaker(unsigned seed) : rng_(seed) {}

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }

  std::string freshName() { return "node-" + std::to_string(next_++) + (chance(20) ? "-gpu" : ""); }

  // A name as JSON string text (escaped when odd): what it decodes to does not matter here.
  std::string oddName() {
    switch (pick(6)) {
      case 0:
        return "node-\\u0041" + std::to_string(next_++);  // \u escape
      case 1:
        return "a\\\"b";  // an escaped quote
      case 2:
        return "back\\\\slash";
      case 3:
        return "n\xc3\xa9ud";  // UTF-8
      case 4:
        return "";  // an empty name
      default:
        return "NodeNames";
    }
  }

  void edit(std::vector<std::string>& names) {
    const int edits = pick(4);
    for (int e = 0; e < edits; ++e) {
      const auto size = static_cast<int>(names.size());
      switch (pick(9)) {
        case 0:
        case 1:
        case 2:  // a node fills and drops out (the usual change)
          if (size > 0) names.erase(names.begin() + pick(size));
          break;
        case 3:  // a node joins
          names.insert(names.begin() + pick(size + 1), freshName());
          break;
        case 4:  // two swap places
          if (size > 1) std::swap(names[pick(size)], names[pick(size)]);
          break;
        case 5:  // a duplicate
          if (size > 0) names.insert(names.begin() + pick(size + 1), names[pick(size)]);
          break;
        case 6:  // an odd one
          if (chance(30)) names.insert(names.begin() + pick(size + 1), oddName());
          break;
        case 7:  // the first or last goes
          if (size > 0) names.erase(chance(50) ? names.begin() : names.end() - 1);
          break;
        default:  // an unknown, longer or shorter name replaces one
          if (size > 0) names[pick(size)] = chance(50) ? "x" : "unknown-node-" + freshName();
          break;
      }
    }
    if (chance(2)) names.clear();
    if (chance(2)) {  // a fresh list
      names.clear();
      for (int i = pick(40); i > 0; --i) names.push_back(freshName());
    }
  }

  std::string podText() {
    std::string annotation = "plain";
    switch (pick(5)) {
      case 0:  // the text of a NodeNames member inside the pod
        annotation = "\\\"NodeNames\\\":[\\\"node-1\\\"]}";
        break;
      case 1:
        annotation = "say \\\"hi\\\" [x] {y}";
        break;
      default:
        break;
    }
    std::string pod = R"({"metadata":{"name":"p)" + std::to_string(pick(1000)) +
                      R"(","namespace":"team-a","uid":"u)" + std::to_string(pick(1000)) +
                      R"(","annotations":{"note":")" + annotation + "\"";
    if (chance(10)) pod += R"(,"NodeNames":["inside-the-pod"])";
    pod +=
        R"(}},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})";
    return pod;
  }

  // A whole ExtenderArgs body around `names`, usually as kube-scheduler writes it.
  std::string body(const std::vector<std::string>& names) {
    const std::string array = arrayText(names, chance(10));
    std::string key = "NodeNames";
    if (chance(5)) key = "nodeNames";
    if (chance(2)) key = "Node\\u004eames";
    const std::string pod = podText();
    switch (pick(40)) {
      case 0:
        return R"({"Pod":)" + pod + R"(,"Nodes":null,")" + key + R"(":null})";
      case 1:
        return R"({"Pod":)" + pod + R"(,"Nodes":{"items":[]}})";
      case 2:  // two NodeNames keys
        return R"({"Pod":)" + pod + R"(,"NodeNames":["a"],"nodenames":)" + array + "}";
      case 3:  // the names before the pod
        return "{\"" + key + "\":" + array + R"(,"Pod":)" + pod + "}";
      case 4:  // not a string in the list
        return R"({"Pod":)" + pod + R"(,"NodeNames":)" + array.substr(0, array.size() - 1) +
               (names.empty() ? "" : ",") + "7]}";
      case 5:  // cut short
        return (R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":)" + array + "}")
            .substr(0, static_cast<std::size_t>(pick(200)));
      case 6:  // something after the object
        return R"({"Pod":)" + pod + R"(,"NodeNames":)" + array + "} x";
      case 7:  // a bad pod
        return R"({"Pod":7,"NodeNames":)" + array + "}";
      case 8:  // more after the names, blanks around
        return " {\n \"Pod\" : " + pod + " , \"" + key + "\" : " + array +
               R"( , "Extra": {"NodeNames": [1]} } )";
      default:
        return R"({"Pod":)" + pod + R"(,"Nodes":null,")" + key + "\":" + array + "}";
    }
  }

 private:
  std::mt19937 rng_;
  int next_ = 0;
};

TEST(NodeNamesMemo, DecodesEditedListsExactlyAsAWholeDecode) {
  std::size_t taken = 0;
  std::size_t unchanged = 0;
  std::size_t fewRead = 0;
  std::size_t total = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    BodyMaker maker(seed);
    detail::NodeNamesMemo memo;
    std::vector<std::string> names;
    for (int i = 0; i < 30 + maker.pick(300); ++i) names.push_back(maker.freshName());
    for (int step = 0; step < 150; ++step) {
      if (maker.chance(60)) maker.edit(names);
      const std::string body = maker.body(names);
      const Decoded whole = decodeWhole(body);
      const Decoded memoized = decodeWithMemo(body, memo);
      ASSERT_EQ(memoized, whole) << "seed " << seed << " step " << step << "\nbody: " << body
                                 << "\nwhole: " << describe(whole)
                                 << "\nmemo:  " << describe(memoized);
      ++total;
      if (memoized.parsed && whole.error.empty() && memo.names().size() == whole.names.size()) {
        taken += 1;
        unchanged += memo.unchanged() ? 1 : 0;
        fewRead += !memo.unchanged() && memo.read() + 10 < whole.names.size() ? 1 : 0;
      }
    }
  }
  // The memo was used, for the same list and for lists read only where they changed.
  EXPECT_GT(taken, total / 2);
  EXPECT_GT(unchanged, total / 5);
  EXPECT_GT(fewRead, total / 20);
}

// version() is what /filter hands CandidatePositions as the list's id: an accepted take() with
// the version of the accepted take() before has its names, whatever came between (bodies not
// taken, edits); a changed list always has a new version, and changedFrom(), sameHead() and
// sameTail() say truly which of its names are the array's before.
TEST(NodeNamesMemo, AVersionSeenBeforeMeansTheSameNames) {
  std::size_t sameVersion = 0;
  std::size_t newVersion = 0;
  std::size_t changedFrom = 0;
  std::size_t keptByHeadAndTail = 0;
  std::size_t namesRead = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    BodyMaker maker(seed);
    detail::NodeNamesMemo memo;
    std::vector<std::string> names;
    for (int i = 0; i < 30 + maker.pick(100); ++i) names.push_back(maker.freshName());
    std::uint64_t lastVersion = 0;
    std::vector<std::string> lastNames;
    for (int step = 0; step < 150; ++step) {
      if (maker.chance(40)) maker.edit(names);
      const std::string body = maker.body(names);
      std::size_t begin = 0;
      std::size_t end = 0;
      const std::uint64_t before = memo.version();
      const std::vector<std::string> namesBefore(memo.names().begin(), memo.names().end());
      if (!memo.take(body, begin, end)) continue;
      const std::vector<std::string> now(memo.names().begin(), memo.names().end());
      if (memo.changedFrom() != 0) {
        // A changed array read against the one before: its head and tail are that one's.
        ASSERT_EQ(memo.changedFrom(), before);
        ASSERT_LE(memo.sameHead() + memo.sameTail(), now.size());
        ASSERT_LE(memo.sameHead() + memo.sameTail(), namesBefore.size());
        for (std::size_t i = 0; i < memo.sameHead(); ++i) ASSERT_EQ(now[i], namesBefore[i]);
        for (std::size_t i = 1; i <= memo.sameTail(); ++i) {
          ASSERT_EQ(now[now.size() - i], namesBefore[namesBefore.size() - i]) << "seed " << seed;
        }
        ++changedFrom;
        keptByHeadAndTail += memo.sameHead() + memo.sameTail();
        namesRead += now.size();
      }
      ASSERT_NE(memo.version(), 0u);
      if (memo.version() == lastVersion) {
        ASSERT_EQ(now, lastNames) << "seed " << seed << " step " << step;
        ++sameVersion;
      } else {
        ++newVersion;
      }
      if (now != lastNames) {
        ASSERT_NE(memo.version(), lastVersion) << "seed " << seed;
      }
      if (memo.unchanged()) {
        EXPECT_EQ(memo.version(), before);
      }
      lastVersion = memo.version();
      lastNames = now;
    }
  }
  EXPECT_GT(sameVersion, 100u);  // both happen often
  EXPECT_GT(newVersion, 100u);
  // Edited lists (fresh ones and other body layouts among them): names known from the list
  // before, often.
  EXPECT_GT(changedFrom, 100u);
  EXPECT_GT(keptByHeadAndTail * 5, namesRead);
}

// The fuzz corpus and the golden bodies, cut short at every length and with single bytes
// changed to JSON's structural characters, one memo throughout.
TEST(NodeNamesMemo, DecodesCutAndChangedCorpusBodiesAsAWholeDecode) {
  const std::string corpus = std::string(GPUFAIR_SOURCE_DIR) + "/tests/fuzz/corpus/";
  std::vector<std::string> bodies;
  for (const auto& entry : std::filesystem::directory_iterator(corpus + "fuzz_extender_request")) {
    std::ifstream in(entry.path(), std::ios::binary);
    bodies.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bodies.push_back(testsupport::readTestdata("filter_1000_node_names.json"));
  ASSERT_GE(bodies.size(), 7u);
  detail::NodeNamesMemo memo;
  std::mt19937 rng(7);
  constexpr std::string_view kBytes = "\"\\[]{},: a\n";
  std::size_t checked = 0;
  for (const auto& body : bodies) {
    // About 250 cuts per body (every length for the small ones): every cut decodes the body four
    // times, and under ASan at -O0 every length of the 13 kB bodies took over a minute.
    const std::size_t step = std::max<std::size_t>(1, body.size() / 250);
    for (std::size_t cut = 0; cut <= body.size(); cut += step) {
      for (int variant = 0; variant < 2; ++variant) {
        std::string text = body.substr(0, variant == 0 ? body.size() : cut);
        if (variant == 0 && !text.empty()) text[cut % text.size()] = kBytes[rng() % kBytes.size()];
        ASSERT_EQ(decodeWithMemo(text, memo), decodeWhole(text)) << text;
        ASSERT_EQ(decodeWithMemo(body, memo), decodeWhole(body));
        checked += 2;
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(NodeNamesMemo, ReadsOnlyTheNamesThatChanged) {
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("node-" + std::to_string(i));
  const std::string head = R"({"Pod":{"metadata":{"name":"p"}},"Nodes":null,"NodeNames":)";
  detail::NodeNamesMemo memo;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string body = head + arrayText(names, false) + "}";
  ASSERT_TRUE(memo.take(body, begin, end));
  EXPECT_EQ(memo.read(), 1000u);
  EXPECT_EQ(body.substr(begin, end - begin), arrayText(names, false));

  body = R"({"Pod":{"metadata":{"name":"another-pod"}},"Nodes":null,"NodeNames":)" +
         arrayText(names, false) + "}";
  ASSERT_TRUE(memo.take(body, begin, end));
  EXPECT_TRUE(memo.unchanged());
  EXPECT_EQ(memo.read(), 0u);

  for (std::size_t drop : {500u, 0u, 997u}) {
    names.erase(names.begin() + static_cast<std::ptrdiff_t>(drop));
    body = head + arrayText(names, false) + "}";
    ASSERT_TRUE(memo.take(body, begin, end)) << drop;
    EXPECT_FALSE(memo.unchanged());
    EXPECT_LE(memo.read(), 1u) << drop;
    // Every name it did not read is known to be the earlier array's, at its head or tail.
    EXPECT_NE(memo.changedFrom(), 0u);
    EXPECT_EQ(memo.sameHead() + memo.sameTail() + memo.read(), names.size()) << drop;
    ASSERT_EQ(memo.names().size(), names.size());
    for (std::size_t i = 0; i < names.size(); ++i) ASSERT_EQ(memo.names()[i], names[i]) << i;
    EXPECT_EQ(body.substr(begin, end - begin), arrayText(names, false));
  }
  names.insert(names.begin() + 10, "node-new");
  body = head + arrayText(names, false) + "}";
  ASSERT_TRUE(memo.take(body, begin, end));
  EXPECT_LE(memo.read(), 2u);
  ASSERT_EQ(memo.names().size(), names.size());
  EXPECT_EQ(memo.names()[10], "node-new");
}

// /filter lends the memo's names to the request instead of copying them (lend/giveBack). Given
// back or not (a request that ended without giving them back), the next take() has the names of
// its body, whether its array changed or not.
TEST(NodeNamesMemo, LentNamesComeBackOrAreMadeAgain) {
  std::vector<std::string> names;
  for (int i = 0; i < 300; ++i) names.push_back("node-" + std::to_string(i));
  const std::string head = R"({"Pod":{"metadata":{"name":"p"}},"Nodes":null,"NodeNames":)";
  detail::NodeNamesMemo memo;
  std::mt19937 rng(15);
  for (int step = 0; step < 200; ++step) {
    if (step % 3 == 1 && names.size() > 1) {  // else the same array again
      names.erase(names.begin() + static_cast<std::ptrdiff_t>(rng() % names.size()));
    }
    const std::string body = head + arrayText(names, false) + "}";
    std::size_t begin = 0;
    std::size_t end = 0;
    ASSERT_TRUE(memo.take(body, begin, end)) << step;
    ASSERT_EQ(memo.names().size(), names.size()) << step;
    for (std::size_t i = 0; i < names.size(); ++i) ASSERT_EQ(memo.names()[i], names[i]) << step;
    std::vector<std::string_view> lent;
    memo.lend(lent);
    EXPECT_TRUE(memo.names().empty()) << step;
    ASSERT_EQ(lent.size(), names.size()) << step;
    for (std::size_t i = 0; i < names.size(); ++i) ASSERT_EQ(lent[i], names[i]) << step;
    if (rng() % 2 == 0) {
      memo.giveBack(lent);
      EXPECT_TRUE(lent.empty()) << step;
      EXPECT_EQ(memo.names().size(), names.size()) << step;
    }
  }
}

}  // namespace
}  // namespace gpufair::api
