// Where a new stream runs when the caller leaves the device to us
// (device id -1: gpudecoder's device-id=-1, gpuspeech-transcribe
// --device-id -1): the device of the backend with the fewest streams open
// now, the lowest index among equals. Each Recognizer so placed holds a
// DeviceLease for its life; the count goes down when it goes.
//
// Written for any number of devices; with one device every stream lands on
// it. Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace gpuspeech {

class DevicePlacement {
 public:
  // `num_devices` >= 1 (std::invalid_argument otherwise).
  explicit DevicePlacement(int num_devices);
  DevicePlacement(const DevicePlacement&) = delete;
  DevicePlacement& operator=(const DevicePlacement&) = delete;

  int num_devices() const { return static_cast<int>(streams_.size()); }
  // The least-loaded device, counted as holding one more stream.
  int place();
  // Undoes one place() of `device` (std::invalid_argument for a device
  // with no stream placed).
  void release(int device);
  // Streams placed on each device now.
  std::vector<int> streams_per_device() const;

 private:
  mutable std::mutex mutex_;
  std::vector<int> streams_;
};

// One placed stream: releases its device when destroyed. Move-only.
class DeviceLease {
 public:
  DeviceLease() = default;
  explicit DeviceLease(DevicePlacement& placement)
      : placement_(&placement), device_(placement.place()) {}
  DeviceLease(DeviceLease&& other) noexcept { *this = std::move(other); }
  DeviceLease& operator=(DeviceLease&& other) noexcept;
  DeviceLease(const DeviceLease&) = delete;
  DeviceLease& operator=(const DeviceLease&) = delete;
  ~DeviceLease() { reset(); }

  bool held() const { return placement_ != nullptr; }
  int device() const { return device_; }
  void reset();

 private:
  DevicePlacement* placement_ = nullptr;
  int device_ = -1;
};

// The process's placement for backend `backend` ("cuda", "opencl") over
// `num_devices` devices, made on first use (later calls for the same
// backend get the same one; num_devices must then match: a machine does
// not grow GPUs while a process runs).
DevicePlacement& process_device_placement(const std::string& backend, int num_devices);

}  // namespace gpuspeech
