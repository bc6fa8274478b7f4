// Shared recognition resources (common/engine/): recognizers with the same
// model, dictionary and grammar hold one copy of them; the copy lives as
// long as a stream holds it; a failed load caches nothing; a grammar file
// replaced on disk is loaded afresh; streams on shared resources decode in
// parallel threads exactly what one stream decodes alone. Installed en-us
// model, goforward and cards from pocketsphinx-testdata (suite 'reference').
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/engine/resource_cache.h"
#include "common/engine/stream_count.h"
#include "common/engine/stream_maker.h"
#ifdef GPUSPEECH_HAVE_CUDA
#include "common/search/cuda_search_graph.h"
#endif
#include "common/engine/recognizer.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

using testing::BackendForTest;

std::string en_us_root() { return testing::model_dir() + "/en-us"; }
bool have_file(const std::string& path) { return std::ifstream(path).good(); }

RecognizerConfig jsgf_config(const std::string& grammar) {
  RecognizerConfig c = RecognizerConfig::en_us_defaults(en_us_root());
  c.grammar_kind = GrammarKind::kJsgf;
  c.grammar = grammar;
  c.scoring_backend = "cpu";
  c.search_backend = "cpu";
  c.cache_dir = "-";
  return c;
}

class ResourceSharing : public ::testing::Test {
 protected:
  void SetUp() override {
    gram_ = testing::audio_dir() + "/goforward.gram";
    raw_ = testing::audio_dir() + "/goforward.raw";
    cards_gram_ = testing::audio_dir() + "/cards/cards.gram";
    if (!have_file(gram_) || !have_file(raw_) || !have_file(en_us_root() + "/en-us/mdef"))
      GTEST_SKIP() << "pocketsphinx-testdata or pocketsphinx-en-us not installed";
  }
  std::string gram_, raw_, cards_gram_;
};

TEST_F(ResourceSharing, SameFilesShareOneCopyWhileHeld) {
  const size_t before = recognition_resources_alive();
  std::string log_a, log_b;
  auto a = std::make_unique<Recognizer>(jsgf_config(gram_), &log_a);
  auto b = std::make_unique<Recognizer>(jsgf_config(gram_), &log_b);
  EXPECT_EQ(a->resources().get(), b->resources().get());
  EXPECT_EQ(&a->graph(), &b->graph());
  EXPECT_EQ(&a->acoustic_model(), &b->acoustic_model());
  EXPECT_EQ(recognition_resources_alive(), before + 1);
  EXPECT_FALSE(a->resources_were_shared());
  EXPECT_TRUE(b->resources_were_shared());
  EXPECT_NE(log_b.find("shared with the streams already using them"), std::string::npos) << log_b;
  EXPECT_EQ(log_a.find("shared with"), std::string::npos) << log_a;
  // The second stream's log still says what the resources are.
  EXPECT_NE(log_b.find("acoustic model: "), std::string::npos) << log_b;

  // Options that change the graph make another copy; per-stream options
  // (beam, backend, n-best) do not.
  RecognizerConfig other = jsgf_config(gram_);
  other.graph.language_weight = 7.0f;
  Recognizer c(other);
  EXPECT_NE(c.resources().get(), a->resources().get());
  RecognizerConfig per_stream = jsgf_config(gram_);
  per_stream.search.max_active = 20000;
  per_stream.nbest = 3;
  Recognizer d(per_stream);
  EXPECT_EQ(d.resources().get(), a->resources().get());

  // The copy outlives the first holder and goes with the last.
  std::weak_ptr<const RecognitionResources> weak = a->resources();
  a.reset();
  EXPECT_FALSE(weak.expired());
  b.reset();
  EXPECT_FALSE(weak.expired());  // d still holds it
}

TEST_F(ResourceSharing, LastStreamFreesTheCopyAndTheNextLoadsAgain) {
  std::weak_ptr<const RecognitionResources> weak;
  const RecognitionResources* first = nullptr;
  {
    Recognizer a(jsgf_config(gram_));
    weak = a.resources();
    first = a.resources().get();
  }
  EXPECT_TRUE(weak.expired());
  std::string log;
  Recognizer b(jsgf_config(gram_), &log);
  EXPECT_EQ(log.find("shared with"), std::string::npos) << log;
  (void)first;
}

TEST_F(ResourceSharing, FailedLoadCachesNothingAndFailsEveryTime) {
  const std::string missing = ::testing::TempDir() + "/no-such-grammar.gram";
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      Recognizer r(jsgf_config(missing));
      FAIL() << "a missing grammar loaded";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    }
  }
}

TEST_F(ResourceSharing, GrammarReplacedOnDiskIsLoadedAfresh) {
  const std::string path = ::testing::TempDir() + "/gpuspeech-sharing-" +
                           std::to_string(::getpid()) + ".gram";
  auto write = [&](const std::string& body) {
    std::ofstream out(path, std::ios::trunc);
    out << "#JSGF V1.0;\ngrammar g;\npublic <g> = " << body << ";\n";
  };
  write("go forward ten meters");
  Recognizer a(jsgf_config(path));
  // Another file (a new inode, as an editor's save makes), same name.
  ASSERT_EQ(std::remove(path.c_str()), 0);
  write("go backward ten meters");
  Recognizer b(jsgf_config(path));
  EXPECT_NE(a.resources().get(), b.resources().get());
  const AudioData audio = read_raw_s16le_file(raw_, 16000);
  const int64_t n = static_cast<int64_t>(audio.samples.size());
  EXPECT_EQ(a.recognize(audio.samples.data(), n).text(), "go forward ten meters");
  EXPECT_EQ(b.recognize(audio.samples.data(), n).text(), "go backward ten meters");
  std::remove(path.c_str());
}

// Streams on one copy, each on its own thread, several utterances each:
// every result (words, word times, confidences) equals the same file
// decoded by a lone recognizer.
TEST_F(ResourceSharing, ParallelStreamsDecodeWhatOneStreamDecodes) {
  std::vector<std::string> wavs;
  for (const char* id : {"001", "002", "003", "004", "005"}) {
    const std::string w = testing::audio_dir() + "/cards/" + id + ".wav";
    if (have_file(w)) wavs.push_back(w);
  }
  if (wavs.empty() || !have_file(cards_gram_)) GTEST_SKIP() << "cards set not installed";
  std::vector<AudioData> audio;
  for (const std::string& w : wavs) audio.push_back(read_wav_file(w));

  RecognizerConfig config = jsgf_config(cards_gram_);
  std::vector<Hypothesis> alone;
  {
    Recognizer lone(config);
    for (const AudioData& a : audio)
      alone.push_back(
          lone.recognize(a.samples.data(), static_cast<int64_t>(a.samples.size())).best);
  }
  constexpr int kStreams = 4;
  std::vector<std::unique_ptr<Recognizer>> streams;
  for (int k = 0; k < kStreams; ++k) streams.push_back(std::make_unique<Recognizer>(config));
  for (int k = 1; k < kStreams; ++k)
    ASSERT_EQ(streams[k]->resources().get(), streams[0]->resources().get());
  std::vector<std::vector<Hypothesis>> got(kStreams);
  std::vector<std::thread> threads;
  for (int k = 0; k < kStreams; ++k)
    threads.emplace_back([&, k] {
      // Each stream starts at another file and goes round twice.
      for (size_t i = 0; i < 2 * audio.size(); ++i) {
        const AudioData& a = audio[(k + i) % audio.size()];
        got[k].push_back(
            streams[k]->recognize(a.samples.data(), static_cast<int64_t>(a.samples.size())).best);
      }
    });
  for (std::thread& t : threads) t.join();
  for (int k = 0; k < kStreams; ++k)
    for (size_t i = 0; i < got[k].size(); ++i) {
      const Hypothesis& want = alone[(k + i) % audio.size()];
      const Hypothesis& h = got[k][i];
      ASSERT_EQ(h.words.size(), want.words.size()) << "stream " << k << " utterance " << i;
      EXPECT_EQ(h.text(), want.text());
      EXPECT_EQ(h.cost, want.cost);
      for (size_t w = 0; w < h.words.size(); ++w) {
        EXPECT_EQ(h.words[w].start_frame, want.words[w].start_frame);
        EXPECT_EQ(h.words[w].end_frame, want.words[w].end_frame);
        EXPECT_EQ(h.words[w].confidence, want.words[w].confidence);
      }
    }
}

// make_streams: streams made on several threads, in order, on the given
// resources, each decoding what a stream made alone decodes; a bad config
// fails the call with the streams' error.
TEST_F(ResourceSharing, StreamsMadeConcurrentlyShareAndAgree) {
  const RecognizerConfig config = jsgf_config(gram_);
  Recognizer first(config);
  const AudioData audio = read_raw_s16le_file(raw_, 16000);
  const int64_t n = static_cast<int64_t>(audio.samples.size());
  const Hypothesis want = first.recognize(audio.samples.data(), n).best;
  std::vector<std::unique_ptr<Recognizer>> made =
      make_streams(first.resources(), config, 5, /*threads=*/3);
  ASSERT_EQ(made.size(), 5u);
  for (const auto& r : made) {
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->resources().get(), first.resources().get());
    EXPECT_EQ(r->recognize(audio.samples.data(), n).best.text(), want.text());
  }
  RecognizerConfig bad = config;
  bad.nbest = -1;
  EXPECT_THROW(make_streams(first.resources(), bad, 3, 2), std::invalid_argument);
}

// Concurrent first loads of one key load it once: every stream gets the
// same copy.
TEST_F(ResourceSharing, ConcurrentFirstLoadsLoadOnce) {
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<Recognizer>> recs(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k)
    threads.emplace_back([&, k] {
      try {
        recs[k] = std::make_unique<Recognizer>(jsgf_config(gram_));
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int k = 0; k < kThreads; ++k) {
    ASSERT_TRUE(recs[k]) << errors[k];
    EXPECT_EQ(recs[k]->resources().get(), recs[0]->resources().get());
  }
}

// The constructor on resources the caller holds takes their model and
// grammar, whatever the config says.
TEST_F(ResourceSharing, StreamOnGivenResourcesUsesThem) {
  Recognizer a(jsgf_config(gram_));
  RecognizerConfig c = jsgf_config(cards_gram_);
  Recognizer b(a.resources(), c);
  EXPECT_EQ(b.resources().get(), a.resources().get());
  EXPECT_EQ(b.config().grammar, gram_);
  const AudioData audio = read_raw_s16le_file(raw_, 16000);
  EXPECT_EQ(b.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size())).text(),
            "go forward ten meters");
  EXPECT_THROW(Recognizer(nullptr, c), std::invalid_argument);
}

// Device id -1 on the CPU backend: nothing to place, device 0, and the
// stream decodes as any other; an id below -1 is refused.
TEST_F(ResourceSharing, DeviceMinusOneOnTheCpu) {
  RecognizerConfig c = jsgf_config(gram_);
  c.device_id = -1;
  Recognizer r(c);
  EXPECT_EQ(r.config().device_id, 0);
  const AudioData audio = read_raw_s16le_file(raw_, 16000);
  EXPECT_EQ(r.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size())).text(),
            "go forward ten meters");
  c.device_id = -2;
  EXPECT_THROW(Recognizer{c}, std::invalid_argument);
}

// The tools' default stream count on real recognizers (stream_count.h):
// with the cpu search a stream per core, at most one per file.
TEST_F(ResourceSharing, DefaultStreamCountIsAStreamPerCoreOnTheCpu) {
  const RecognizerConfig c = jsgf_config(gram_);
  Recognizer first(c);
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(default_stream_count(first, c, 1000), std::min<size_t>(cores, 1000));
  EXPECT_EQ(default_stream_count(first, c, 1), 1u);
  EXPECT_EQ(default_stream_count(first, c, 0), 1u);
}

// With the cuda search: as many as the device's free memory holds.
TEST_F(ResourceSharing, DefaultStreamCountFillsTheDeviceWithTheCudaSearch) {
  const BackendForTest cuda = testing::backend_for_test("cuda");
  if (cuda.backend == nullptr) {
    if (cuda.required) FAIL() << cuda.problem;
    GTEST_SKIP() << cuda.problem;
  }
  RecognizerConfig c = jsgf_config(gram_);
  c.scoring_backend = "cuda";
  c.search_backend = "cuda";
  Recognizer first(c);
  ASSERT_STREQ(first.search_backend(), "cuda");
  const int64_t free = backend_device_memory("cuda", first.config().device_id).free;
  ASSERT_GT(free, 0) << "the driver gave no free memory for the device in use";
  const size_t n = default_stream_count(first, c, 100000);
  // Free memory may move a little between the two readings.
  const size_t want = std::max<size_t>(1, device_stream_count({free}));
  EXPECT_LE(n, want + 2);
  EXPECT_GE(n + 2, want);
  if (free > 2 * kDeviceMemoryReserveBytes) {
    EXPECT_GT(n, 1u);
  }
  EXPECT_EQ(default_stream_count(first, c, 3), std::min<size_t>(n, 3));
}

// CUDA streams on shared resources search one device copy of the graph
// (made by the first, an attachment of the resources) and decode what the
// CPU decodes, on parallel threads.
TEST_F(ResourceSharing, CudaStreamsShareTheDeviceGraph) {
  const BackendForTest cuda = testing::backend_for_test("cuda");
  if (cuda.backend == nullptr) {
    if (cuda.required) FAIL() << cuda.problem;
    GTEST_SKIP() << cuda.problem;
  }
#ifdef GPUSPEECH_HAVE_CUDA
  RecognizerConfig c = jsgf_config(gram_);
  c.scoring_backend = "cuda";
  c.search_backend = "cuda";
  const AudioData audio = read_raw_s16le_file(raw_, 16000);
  const int64_t n = static_cast<int64_t>(audio.samples.size());
  Recognizer cpu(jsgf_config(gram_));
  const Hypothesis want = cpu.recognize(audio.samples.data(), n).best;
  constexpr int kStreams = 3;
  std::vector<std::unique_ptr<Recognizer>> streams;
  for (int k = 0; k < kStreams; ++k) streams.push_back(std::make_unique<Recognizer>(c));
  bool made_again = false;
  const std::shared_ptr<const CudaSearchGraph> g =
      streams[0]->resources()->attachment<CudaSearchGraph>("cuda-search-graph:0", [&] {
        made_again = true;
        return CudaSearchGraph::upload(streams[0]->graph(), 0);
      });
  EXPECT_FALSE(made_again) << "the streams did not leave their device graph with the resources";
  EXPECT_EQ(g->host_graph(), &streams[0]->graph());
  std::vector<Hypothesis> got(kStreams);
  std::vector<std::thread> threads;
  for (int k = 0; k < kStreams; ++k)
    threads.emplace_back([&, k] { got[k] = streams[k]->recognize(audio.samples.data(), n).best; });
  for (std::thread& t : threads) t.join();
  for (int k = 0; k < kStreams; ++k) {
    EXPECT_EQ(got[k].text(), want.text()) << "stream " << k;
    ASSERT_EQ(got[k].words.size(), want.words.size());
    for (size_t w = 0; w < want.words.size(); ++w) {
      EXPECT_EQ(got[k].words[w].start_frame, want.words[w].start_frame);
      EXPECT_EQ(got[k].words[w].end_frame, want.words[w].end_frame);
    }
  }
#endif
}

}  // namespace
}  // namespace gpuspeech
