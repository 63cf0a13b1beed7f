#pragma once
// The work an operator call does, counted from its arguments' shapes: the first features of a
// cost model of calls never measured (issue 26), the same figures for a call measured, stored
// or only written down. Torch-free.
//
// FLOPs count a multiply-add as 2. Bytes are the least a call must move: each input read once,
// the output written once (a kernel that rereads from DRAM moves more; the cache decides). Only
// named arguments are read, as inventories and sweeps write them (`input=f32[...]`, by ATen's
// schema names; an argument left out takes the schema's default); a call given positionally, of
// an operator not counted here, or whose shapes do not fit together has no figure (nullopt),
// never a guessed one. A view (reshape, transpose, ...) has a figure: zero FLOPs and zero bytes.
//
// Where an operator's FLOPs are not multiply-adds, they are a documented constant per element
// (softmax 5, normalization 5 plus 1 each for a weight and a bias, ...: see each family's file).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

enum class OpFamily {
  kConvolution,    // aten::conv1d/conv2d/conv3d, convolution_backward
  kMatmul,         // aten::mm, bmm, addmm, linear, matmul
  kElementwise,    // unary and binary pointwise operators, broadcasting; fills, new tensors, arange
  kAttention,      // aten::scaled_dot_product_attention, _native_multi_head_attention
  kNormalization,  // layer, batch, group and RMS norms, layer and batch norm backward
  kReduction,      // sum, mean, amax/amin, max/min, var/std, all/any, softmax, log_softmax, softmax backward
  kPooling,        // 2-d max, average and adaptive pooling, max pooling backward
  kEmbedding,      // aten::embedding, embedding backward
  kDataMovement,   // copies, to, cat/stack, pad, roll, index/index_select/gather, dropout, and
                   // views (zero work)
};
// "convolution", "matmul", "elementwise", "attention", "normalization", "reduction", "pooling",
// "embedding", "data_movement".
std::string_view family_name(OpFamily family);

struct CallWork {
  OpFamily family;
  double flops = 0;  // floating-point operations per call
  double bytes = 0;  // bytes read and written at least once per call
  // The dtype of a call that has no tensor argument (zeros, arange: what it writes); "" else,
  // where the call's first tensor says it.
  std::string dtype = {};
  double flop_per_byte() const { return bytes > 0 ? flops / bytes : 0; }
};

std::optional<CallWork> call_work(const OpCall& call);
// The same for a call as a row or an inventory writes it: the operator ("aten::conv2d") and its
// arguments' text. Text that does not parse has no figure either.
std::optional<CallWork> call_work(std::string_view op, std::string_view args);

// Every operator call_work counts ("aten::conv2d", ...), each once, grouped by family.
std::vector<std::string_view> counted_operators();
// The family an operator's figures belong to, whatever its arguments; nullopt for one not counted.
// (aten::max and aten::min with a tensor `other` are pointwise: their figure says kElementwise.)
std::optional<OpFamily> family_of(std::string_view op);

}  // namespace opcost
