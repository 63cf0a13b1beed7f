#pragma once
// The textual argument language shared by `opcost measure`, spec files and inventories:
//
//   input=f32[32,64,56,56]          a tensor: dtype and shape, seeded random data
//   x=f32[64,32]:stride[1,64]       ... with explicit strides (element units)
//   idx=i64[8,128]:range[0,50257]   ... integer values drawn from [low, high)
//   x=f32[64,64]:zeros[0.5]         ... half of the elements (at random places) zero
//   dets=f32[1000,4]:distinct[683]  ... values in 683 distinct groups (nms keeps 683 boxes)
//   x=f32[4]:cpu                    ... on an explicit device (default: the measured one)
//   key=bf16[8,197,768]:same[query] ... the very tensor given as the earlier argument `query`
//                                   (self-attention passes one tensor as query, key and value,
//                                   and its fused path is taken only then)
//   bias=None  padding=[1,1]  eps=1e-05  training=false  approximate=tanh
//   tensors=[f32[2,3],f32[2,3]]     a tensor list (aten::cat)
//   equation="bd,de->be"            a string: double-quoted where a bare word would not read back
//                                   as itself (escapes \" \\ \n \t \r \xHH; 'single' quotes read too)
//   alpha=1.5-2.0j                  a complex number (Python's spelling, 2.0j alone too)
//
// Every value formats to text that parses back to the same value (format_value, parse_value):
// an inventory's signature is stored as text and replayed from it, so nothing a model passes
// may lose its meaning on the way (a comma, a quote or a space inside a string included).
//
// Values are parsed into an untyped tree here (torch-free); the LibTorch adapter binds them
// to the operator's schema, which decides what a bare word or number means.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace opcost {

// Element type names accepted in tensor specs; canonical spelling first.
struct DtypeName {
  const char* canonical;   // "f32"
  const char* torch_name;  // "float32", used by the adapter to look up the ScalarType
  std::vector<const char*> aliases;
  int bytes;  // per element
};
const std::vector<DtypeName>& dtype_names();
// Bytes per element of a canonical dtype code; 4 for one the table lacks.
int dtype_bytes(std::string_view canonical);
// Canonical code for a dtype spelling ("float" -> "f32"), or nullopt.
std::optional<std::string> canonical_dtype(std::string_view name);

struct TensorSpec {
  std::string dtype;  // canonical code, e.g. "f32"
  std::vector<int64_t> shape;
  std::optional<std::vector<int64_t>> strides;
  std::optional<std::string> device;               // "cpu", "cuda", "cuda:1"
  std::optional<std::pair<double, double>> range;  // values drawn from [first, second)
  // This fraction of the elements, at seeded random places, is zero: energy depends on data.
  std::optional<double> zeros_fraction;
  // The values form this many distinct groups, where the op's output size depends on it (the
  // boxes torchvision's nms keeps: one per cluster of overlapping boxes).
  std::optional<int64_t> distinct;
  // The name of an earlier argument of the call whose tensor this one is (not a copy): an
  // operator may take another path when two of its arguments are one tensor.
  std::optional<std::string> same_as;
  bool operator==(const TensorSpec&) const = default;
};

struct ArgValue;
using ArgList = std::vector<ArgValue>;

struct ArgValue {
  struct None {
    bool operator==(const None&) const = default;
  };
  // A string: an enum-like name (mean, tanh, channels_last, bf16), a device, or any text. It is
  // written bare where it reads back as itself, else quoted ("bd,de->be", "None", "1.5").
  struct Word {
    std::string text;
    bool operator==(const Word&) const = default;
  };
  struct Complex {
    double real = 0;
    double imag = 0;
    bool operator==(const Complex&) const = default;
  };
  std::variant<None, bool, int64_t, double, Word, TensorSpec, ArgList, Complex> v;

  bool is_none() const { return std::holds_alternative<None>(v); }
  bool operator==(const ArgValue&) const = default;
};

// Syntax error in an argument value; `column` is a 0-based offset into the parsed text.
class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& what, std::size_t column) : std::runtime_error(what), column_(column) {}
  std::size_t column() const { return column_; }

 private:
  std::size_t column_;
};

// Lists nest at most this deep ([[f32[2]]] is 2): operators take values and lists of them, and
// the parser (and every walk of the tree it builds) recurses once per level, so hostile input
// such as 100000 '[' must fail with a message, not overflow the stack.
inline constexpr std::size_t kMaxListDepth = 32;
// The longest argument name ':same[name]' reads (ATen's are under 40 bytes).
inline constexpr std::size_t kMaxArgumentNameBytes = 128;

ArgValue parse_value(std::string_view text);
// Text that parse_value reads back as `v` (NaN aside, which compares unequal to itself).
std::string format_value(const ArgValue& v);
// A string as the language writes it: bare when that reads back as the same string, else in
// double quotes with every byte outside printable ASCII escaped (so a signature stays one line).
std::string format_string(std::string_view text);
std::string format_tensor(const TensorSpec& t);

}  // namespace opcost
