// Tiny XLA FFI CPU kernels for jaxdiag's JXB020-JXB022 samples (samples/ffi_kernels.py compiles this file).
//
// CumsumRows is batch-aware: it treats every leading dimension as a batch of rows and the last dimension as
// the row, so vmap's extra leading axis ("expand_dims", "broadcast_all") is handled. CumsumFlat loops over the
// whole buffer as one row: correct for one example, silently wrong when vmap hands it a batch in one buffer.
// AddBias is elementwise and requires x and bias to have the same number of elements: fine with "broadcast_all",
// but under "expand_dims" an unbatched bias arrives as (1, n) while x is (B, n), and the guard reports it (an
// unguarded kernel would read past the end of the bias buffer).
#include <cstdint>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// The length of one row: the last dimension (a scalar is one row of length 1).
static int64_t RowLength(ffi::Buffer<ffi::F32>& x) {
  auto dims = x.dimensions();
  return dims.size() == 0 ? 1 : dims.back();
}

static void Cumsum(const float* in, float* out, int64_t n) {
  float total = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    total += in[i];
    out[i] = total;
  }
}

static ffi::Error CumsumRowsImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  const int64_t n = RowLength(x);
  const int64_t total = static_cast<int64_t>(x.element_count());
  for (int64_t row = 0; n > 0 && row < total / n; ++row) {
    Cumsum(x.typed_data() + row * n, y->typed_data() + row * n, n);
  }
  return ffi::Error::Success();
}

static ffi::Error CumsumFlatImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  Cumsum(x.typed_data(), y->typed_data(), static_cast<int64_t>(x.element_count()));
  return ffi::Error::Success();
}

static ffi::Error AddBiasImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> bias,
                              ffi::ResultBuffer<ffi::F32> y) {
  if (x.element_count() != bias.element_count()) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                      "AddBias: x and bias must have the same number of elements, got " +
                          std::to_string(x.element_count()) + " and " + std::to_string(bias.element_count()));
  }
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] = x.typed_data()[i] + bias.typed_data()[i];
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(CumsumRows, CumsumRowsImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(CumsumFlat, CumsumFlatImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(AddBias, AddBiasImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
