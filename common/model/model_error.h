// The one exception type for unreadable, corrupt or inconsistent model
// files (acoustic model, and any other reader in common/model/ that wants
// it). what() always starts with the file's name: "FILE: reason",
// "FILE:LINE: reason" for text formats, "FILE: offset N: reason" for binary
// ones.
#pragma once

#include <stdexcept>
#include <string>

namespace gpuspeech {

class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpuspeech
