#pragma once
// The canonical signature: the key that ties an inventory's entries, the database's rows, a
// sweep's items and a prediction's look-ups to one operator call. It is an operator, its
// overload and its arguments in canonical form (schema order, defaults omitted, each value as
// core/spec/arg_value formats it). Putting arguments into that form needs the operator's schema
// (torch/canonical_form.h); the form itself, its text and its hash are torch-free and live here.
//
// The hashes are stored beside every row: stable_hash and identity_key_text must never change,
// or stored databases stop matching (tests/unit/signature_test.cpp pins known values).
#include <string>
#include <string_view>

namespace opcost {

struct Signature {
  std::string op;        // qualified name: "aten::add"
  std::string overload;  // "Tensor"; "" for the default overload
  std::string args;      // canonical arguments, "name=value" joined by a space ("" for none)

  // "aten::add.Tensor", or "aten::relu" for the default overload.
  std::string display_name() const { return overload.empty() ? op : op + "." + overload; }
  bool operator==(const Signature&) const = default;
};

// "aten::add.Tensor self=f32[2] other=f32[2]" (the display name alone when there are no
// arguments): how inventories, reports and spec files write a call.
std::string to_string(const Signature& signature);

// Reads to_string's text back: the operator name (checked as check_op_name does; no namespace
// means aten) and its arguments, which must parse in the argument language and are kept as
// format_args writes them. Throws std::invalid_argument with one line naming the problem.
// Argument form only: whether the operator's schema would write the same arguments is the
// torch layer's question (canonical_signature in torch/replay.h).
Signature parse_signature(std::string_view text);

// The text a signature's hash is taken of: "<op>.<overload> <args>" (the dot stays for the
// default overload: "aten::relu. self=f32[4]"), as every stored row was keyed.
std::string identity_key_text(const Signature& signature);

// Stable 64-bit FNV-1a hash of a text, as 16 hex digits (stored beside each signature).
std::string stable_hash(std::string_view text);

// The hash of a canonical call that the database keys its rows by: every writer and every
// look-up goes through this one function, so the two can never drift apart.
std::string signature_hash(const Signature& signature);
std::string signature_hash(std::string_view op, std::string_view overload, std::string_view canonical_args);

}  // namespace opcost
