// Device as a value: equality and ordering by (kind, index), names, parsing, and the old
// spellings (Device::CPU, Device::CUDA = cuda:0). Needs no GPU.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/tensor.h"

namespace h2oflex {
namespace {

TEST(Device, OldSpellingsAreCpuAndCudaZero) {
  static_assert(Device::CPU == Device::cpu());
  static_assert(Device::CUDA == Device::cuda(0));
  static_assert(Device::CUDA == Device::cuda());
  static_assert(Device{} == Device::CPU);  // a default Device is the host
  EXPECT_TRUE(Device::CPU.is_cpu());
  EXPECT_FALSE(Device::CPU.is_cuda());
  EXPECT_TRUE(Device::CUDA.is_cuda());
  EXPECT_EQ(Device::CUDA.index, 0);
  EXPECT_EQ(Device::cuda(3).kind, DeviceKind::CUDA);
  EXPECT_EQ(Device::cuda(3).index, 3);
}

TEST(Device, EqualityLooksAtKindAndIndex) {
  const Device cpu = Device::CPU, gpu0 = Device::cuda(0), gpu1 = Device::cuda(1);
  EXPECT_EQ(gpu1, Device::cuda(1));
  EXPECT_NE(cpu, gpu0);
  EXPECT_NE(gpu0, gpu1);
  EXPECT_NE(cpu, gpu1);
  // An ordering, so a Device can key a map (one entry per device of a multi-stage run).
  std::map<Device, int> per_device{{gpu1, 1}, {cpu, -1}, {gpu0, 0}};
  EXPECT_EQ(per_device.begin()->first, cpu);
  EXPECT_EQ(per_device.at(gpu1), 1);
  EXPECT_LT(gpu0, gpu1);
}

TEST(Device, Names) {
  EXPECT_EQ(Device::CPU.name(), "cpu");
  EXPECT_EQ(Device::CUDA.name(), "cuda:0");
  EXPECT_EQ(Device::cuda(1).name(), "cuda:1");
  EXPECT_EQ(Device::cuda(12).name(), "cuda:12");
}

TEST(Device, ParseIsTheInverseOfName) {
  for (const Device d : {Device::CPU, Device::cuda(0), Device::cuda(1), Device::cuda(15)}) {
    EXPECT_EQ(parse_device(d.name()), d) << d.name();
  }
  EXPECT_EQ(parse_device("cuda"), Device::CUDA);
}

TEST(Device, ParseRejectsWhatIsNotADevice) {
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:+1", "cuda:1x", "cuda:x",
                          "cuda:1:2", " cpu", "cuda:99999999999"}) {
    EXPECT_THROW(parse_device(bad), InputError) << "'" << bad << "'";
  }
  try {
    parse_device("tpu:0");
    FAIL() << "tpu:0 parsed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tpu:0"), std::string::npos) << e.what();
  }
}

TEST(Device, TensorsCarryTheFullDevice) {
  EXPECT_EQ(Tensor::zeros({2}, DType::F32).device(), Device::CPU);
  // A view of (pretend) memory on cuda:1 keeps its index through slicing and reshaping.
  float bytes[6] = {};
  const Tensor t = Tensor::wrap(bytes, {3, 2}, DType::F32, Device::cuda(1));
  EXPECT_EQ(t.device(), Device::cuda(1));
  EXPECT_NE(t.device(), Device::CUDA);
  EXPECT_EQ(t.slice(1, 3).device(), Device::cuda(1));
  EXPECT_EQ(t.reshape({6}).device(), Device::cuda(1));
  EXPECT_THROW(t.clone(), InternalError);  // device tensors are not cloned on the host
}

}  // namespace
}  // namespace h2oflex
