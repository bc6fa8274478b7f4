// A Sphinx acoustic model's model definition ("mdef"): its base
// (context-independent) phones, its triphones with their word positions,
// and for every phone the transition matrix and the senone of each emitting
// state. Both formats are read:
//
//   text "0.3" (SphinxTrain's output, e.g. pocketsphinx-testdata's an4 model)
//   binary "BMDF" (pocketsphinx_mdef_convert's output, e.g. Debian's en-us)
//
// docs/model-formats.md describes both. Phone ids follow the file: base
// phones are 0 .. num_base_phones()-1, triphones follow in file order.
//
// Triphone lookup follows pocketsphinx (bin_mdef.c):
//   phone_id()         filler contexts stand for SIL, then an exact match;
//   nearest_phone_id() phone_id(), else the same contexts at the other word
//                      positions (internal, begin, end, single: in that
//                      order), else with SIL for a filler context and for the
//                      context outside the word (left of a begin or single
//                      phone, right of an end or single phone) at the asked
//                      position and then at the others, else the base phone.
//                      A negative left or right context means "unknown" and
//                      gives the base phone at once.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model_error.h"

namespace gpuspeech {

// Sphinx's word positions, with Sphinx's numbering (the binary format
// stores these numbers).
enum class WordPosition : uint8_t {
  kInternal = 0,   // 'i'
  kBegin = 1,      // 'b'
  kEnd = 2,        // 'e'
  kSingle = 3,     // 's': a one-phone word
  kUndefined = 4,  // base phones ('-' in the text format)
};
constexpr int kNumWordPositions = 4;  // the defined ones
char word_position_char(WordPosition pos);

class ModelDefinition {
 public:
  // Parses text or binary (chosen by the first bytes); `name` stands for the
  // file in ModelError messages ("NAME:LINE: why" / "NAME: offset N: why").
  static ModelDefinition parse(const std::string& bytes, const std::string& name);
  static ModelDefinition parse_text(const std::string& text, const std::string& name);
  static ModelDefinition parse_binary(const std::string& bytes, const std::string& name);
  static ModelDefinition load(const std::string& path);

  int num_base_phones() const { return num_base_; }
  int num_triphones() const { return num_phones() - num_base_; }
  int num_phones() const { return static_cast<int>(phones_.size()); }
  int num_emitting_states() const { return num_emitting_; }
  int num_senones() const { return num_senones_; }
  int num_ci_senones() const { return num_ci_senones_; }
  int num_tmats() const { return num_tmats_; }
  int num_senone_sequences() const { return num_sequences_; }
  // The base phone "SIL", or -1 when the model has none.
  int silence_phone() const { return silence_; }
  bool binary_format() const { return binary_; }

  // Base phone id by name (case-sensitive), -1 if there is none.
  int base_phone_id(const std::string& name) const;
  const std::string& base_phone_name(int base) const { return base_names_.at(base); }

  bool is_base_phone(int phone) const { return phone >= 0 && phone < num_base_; }
  // Filler attribute: of the phone itself for a base phone, of its base
  // phone for a triphone.
  bool is_filler(int phone) const { return base_filler_[phones_.at(phone).base]; }
  int base_of(int phone) const { return phones_.at(phone).base; }
  // Contexts are base phone ids; -1 for a base phone.
  int left_of(int phone) const { return phones_.at(phone).left; }
  int right_of(int phone) const { return phones_.at(phone).right; }
  WordPosition position_of(int phone) const { return phones_.at(phone).pos; }
  int tmat_of(int phone) const { return phones_.at(phone).tmat; }
  int senone_sequence_of(int phone) const { return phones_.at(phone).sequence; }
  // Senone of emitting state `state` (0-based) of `phone`.
  int senone(int phone, int state) const;
  // All num_emitting_states() senones of `phone`.
  std::vector<int> senones_of(int phone) const;
  // "AA" for a base phone, "AA B C b" (base left right position) otherwise.
  std::string phone_name(int phone) const;

  // The triphone with exactly these contexts and position, or -1.
  int exact_phone_id(int base, int left, int right, WordPosition pos) const;
  // pocketsphinx's bin_mdef_phone_id: filler contexts replaced by SIL (when
  // the model has SIL), then exact; -1 if absent. Base phone if left or
  // right < 0.
  int phone_id(int base, int left, int right, WordPosition pos) const;
  // pocketsphinx's bin_mdef_phone_id_nearest (see the top of this file);
  // never -1 for a valid base.
  int nearest_phone_id(int base, int left, int right, WordPosition pos) const;

  // The base phone of the first phone (in id order) using `senone`, -1 if no
  // phone uses it (pocketsphinx's sen2cimap; it decides a PTM model's
  // codebook for each senone).
  int senone_base_phone(int senone) const { return senone_base_.at(senone); }
  // Senones shared between phones of different base phones (pocketsphinx
  // warns about these; the first phone's base wins above).
  int num_cross_base_senones() const { return cross_base_senones_; }

 private:
  struct Phone {
    int base = -1, left = -1, right = -1;
    WordPosition pos = WordPosition::kUndefined;
    int tmat = 0;
    int sequence = 0;  // index into sequences_
  };

  void add_base_phone(const std::string& name, bool filler);
  // Registers phones_.back() as a triphone; false if it is a duplicate.
  bool index_triphone(int phone_id);
  uint64_t key(int base, int left, int right, WordPosition pos) const;
  // Interns a senone sequence; returns its id.
  int intern_sequence(const int* senones);
  // Fills senone_base_ and the cross-base count; checks senone ranges.
  void finish_senone_maps();

  int num_base_ = 0;
  int num_emitting_ = 0;
  int num_senones_ = 0;
  int num_ci_senones_ = 0;
  int num_tmats_ = 0;
  int num_sequences_ = 0;
  int silence_ = -1;
  bool binary_ = false;
  std::vector<std::string> base_names_;
  std::vector<uint8_t> base_filler_;
  std::unordered_map<std::string, int> base_ids_;
  std::vector<Phone> phones_;
  // num_sequences_ x num_emitting_ senone ids.
  std::vector<int32_t> sequences_;
  std::unordered_map<std::string, int> sequence_ids_;  // text format only
  std::unordered_map<uint64_t, int> triphones_;
  std::vector<int32_t> senone_base_;
  int cross_base_senones_ = 0;

  friend class MdefTextParser;
  friend class MdefBinaryParser;
};

}  // namespace gpuspeech
