#pragma once
// The work an operator call does, counted from its arguments' shapes: the first features of a
// cost model of calls never measured (issue 26), the same figures for a call measured, stored
// or only written down. Torch-free.
//
// FLOPs count a multiply-add as 2. Bytes are the least a call must move: each input read once,
// the output written once (a kernel that rereads from DRAM moves more; the cache decides). Only
// named arguments are read, as inventories and sweeps write them (`input=f32[...]`); a call
// given positionally, of an operator not counted here, or whose shapes do not fit together has
// no figure (nullopt), never a guessed one.
#include <optional>
#include <string_view>

#include "core/spec/op_call.h"

namespace opcost {

enum class OpFamily {
  kConvolution,  // aten::conv1d/conv2d/conv3d
  kMatmul,       // aten::mm, bmm, addmm, linear
  kElementwise,  // unary and binary pointwise operators, broadcasting
};
std::string_view family_name(OpFamily family);

struct CallWork {
  OpFamily family;
  double flops = 0;  // floating-point operations per call
  double bytes = 0;  // bytes read and written at least once per call
  double flop_per_byte() const { return bytes > 0 ? flops / bytes : 0; }
};

std::optional<CallWork> call_work(const OpCall& call);
// The same for a call as a row or an inventory writes it: the operator ("aten::conv2d") and its
// arguments' text. Text that does not parse has no figure either.
std::optional<CallWork> call_work(std::string_view op, std::string_view args);

}  // namespace opcost
