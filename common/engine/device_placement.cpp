// Least-loaded device placement (device_placement.h).
#include "common/engine/device_placement.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

namespace gpuspeech {

DevicePlacement::DevicePlacement(int num_devices) {
  if (num_devices < 1)
    throw std::invalid_argument("device placement: needs at least one device, got " +
                                std::to_string(num_devices));
  streams_.assign(static_cast<size_t>(num_devices), 0);
}

int DevicePlacement::place() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t best = 0;
  for (size_t d = 1; d < streams_.size(); ++d)
    if (streams_[d] < streams_[best]) best = d;
  ++streams_[best];
  return static_cast<int>(best);
}

void DevicePlacement::release(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device < 0 || static_cast<size_t>(device) >= streams_.size() || streams_[device] == 0)
    throw std::invalid_argument("device placement: release of device " + std::to_string(device) +
                                ", which holds no placed stream");
  --streams_[device];
}

std::vector<int> DevicePlacement::streams_per_device() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return streams_;
}

DeviceLease& DeviceLease::operator=(DeviceLease&& other) noexcept {
  if (this != &other) {
    reset();
    placement_ = std::exchange(other.placement_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void DeviceLease::reset() {
  if (placement_ != nullptr) placement_->release(device_);
  placement_ = nullptr;
  device_ = -1;
}

DevicePlacement& process_device_placement(const std::string& backend, int num_devices) {
  static std::mutex mutex;
  // Never destroyed: leases may be released during static destruction.
  static auto* placements = new std::map<std::string, std::unique_ptr<DevicePlacement>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<DevicePlacement>& p = (*placements)[backend];
  if (!p) p = std::make_unique<DevicePlacement>(num_devices);
  if (p->num_devices() != num_devices)
    throw std::logic_error("device placement for " + backend + ": made for " +
                           std::to_string(p->num_devices()) + " devices, asked for " +
                           std::to_string(num_devices));
  return *p;
}

}  // namespace gpuspeech
