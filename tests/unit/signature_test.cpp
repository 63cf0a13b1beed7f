// The canonical signature's text and hash, and the typed cache mode and device: the torch-free
// half of what keys every stored row (core/spec/signature, cache_mode, device_spec).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "core/spec/cache_mode.h"
#include "core/spec/device_spec.h"
#include "core/spec/signature.h"

using namespace opcost;

namespace {

// The message of the std::invalid_argument that `f` throws ("" when it throws none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Hashes taken from the build before the signature had its own module (op_call.cpp's
// signature_hash at 2dc573c+): stored databases key their rows by these very values.
TEST(Signature, HashesAsStoredDatabasesKeyThem) {
  EXPECT_EQ(signature_hash("aten::add", "Tensor", "self=f32[2,3] other=f32[2,3]"), "aab8fa58ea4fe611");
  EXPECT_EQ(signature_hash("aten::conv2d", "", "input=f32[32,64,56,56] weight=f32[64,64,3,3] padding=[1,1]"),
            "ac4ff7be811b1de2");
  EXPECT_EQ(signature_hash("aten::relu", "", "self=f32[1024]"), "84bb2f82d7fc83ae");
  EXPECT_EQ(signature_hash("aten::einsum", "", R"(equation="bd,de->be" tensors=[f32[2,3],f32[3,4]])"),
            "67e91a0de731151b");
  EXPECT_EQ(signature_hash("aten::embedding", "", "weight=f32[50257,768] indices=i64[8,128]:range[0,50257]"),
            "9c01d83f9e8bed06");
  EXPECT_EQ(stable_hash("abc"), "e71fa2190541574b");
  EXPECT_EQ(stable_hash(""), "cbf29ce484222325");  // FNV-1a's offset basis
}

TEST(Signature, HashOfTheStructIsTheHashOfItsParts) {
  const Signature s{"aten::add", "Tensor", "self=f32[2,3] other=f32[2,3]"};
  EXPECT_EQ(signature_hash(s), "aab8fa58ea4fe611");
  EXPECT_EQ(identity_key_text(s), "aten::add.Tensor self=f32[2,3] other=f32[2,3]");
  // The default overload keeps its dot: that is how every stored row was keyed.
  EXPECT_EQ(identity_key_text({"aten::relu", "", "self=f32[1024]"}), "aten::relu. self=f32[1024]");
  EXPECT_NE(signature_hash({"aten::relu", "", "self=f32[4]"}), signature_hash({"aten::relu", "", "self=f32[5]"}));
}

TEST(Signature, PrintsAndParsesBack) {
  for (const Signature& s : {Signature{"aten::add", "Tensor", "self=f32[2,3] other=f32[2,3] alpha=2"},
                             Signature{"aten::relu", "", "self=f32[4]:stride[2]"},
                             Signature{"aten::einsum", "", R"(equation="b d, d e" tensors=[f32[2,3],f32[3,4]])"},
                             Signature{"aten::embedding", "", "weight=f32[9,4] indices=i64[2]:range[0.0,9.0]"},
                             Signature{"aten::_local_scalar_dense", "", ""},
                             Signature{"torchvision::nms", "", "dets=f32[10,4]:distinct[7] iou_threshold=0.5"}}) {
    const std::string text = to_string(s);
    EXPECT_EQ(parse_signature(text), s) << text;
    EXPECT_EQ(signature_hash(parse_signature(text)), signature_hash(s)) << text;
  }
  EXPECT_EQ(to_string({"aten::add", "Tensor", "self=f32[2]"}), "aten::add.Tensor self=f32[2]");
  EXPECT_EQ(to_string({"aten::relu", "", ""}), "aten::relu");
}

TEST(Signature, ParsingWritesArgumentsInCanonicalText) {
  // A name without a namespace is aten's; extra spaces and spellings are normalised.
  const Signature s = parse_signature("add.Tensor self=float32[2,3]   other=f32[2,3]");
  EXPECT_EQ(s.op, "aten::add");
  EXPECT_EQ(s.overload, "Tensor");
  EXPECT_EQ(s.args, "self=f32[2,3] other=f32[2,3]");
}

TEST(Signature, RefusesTextThatIsNoSignature) {
  EXPECT_NE(refusal([] { parse_signature("aten::add\nrm -rf self=f32[2]"); }).find("is not an operator name"),
            std::string::npos);
  const std::string bad_arg = refusal([] { parse_signature("aten::relu self=f32[2"); });
  EXPECT_NE(bad_arg.find("argument 'self'"), std::string::npos) << bad_arg;
  EXPECT_EQ(bad_arg.find('\n'), std::string::npos) << bad_arg;
  EXPECT_NE(refusal([] { parse_signature(""); }), "");
}

TEST(CacheMode, ColdInputSetsSpanTheFootprintWithinTheirBounds) {
  EXPECT_EQ(cold_input_sets(512 * 1024, 1 << 20), 2u);         // exactly twice
  EXPECT_EQ(cold_input_sets(300 * 1024, 1 << 20), 4u);         // rounded up: 3.4 sets
  EXPECT_EQ(cold_input_sets(1 << 20, 1 << 20), 2u);            // at least 2: one to read, one to evict
  EXPECT_EQ(cold_input_sets(64, std::size_t(1) << 30), 256u);  // at most 256
  EXPECT_EQ(cold_input_sets(0, 1 << 20), 1u);                  // nothing to rotate
  EXPECT_EQ(cold_input_sets(4096, 0), 2u);
}

TEST(CacheMode, ParsesAndPrintsEachForm) {
  EXPECT_EQ(parse_cache_mode("warm"), CacheMode::warm());
  EXPECT_TRUE(parse_cache_mode("warm").is_warm());
  EXPECT_EQ(parse_cache_mode("cold"), CacheMode::cold());
  EXPECT_TRUE(parse_cache_mode("cold").rotates_all());
  const CacheMode some = parse_cache_mode("cold:weight,bias");
  EXPECT_EQ(some.kind, CacheMode::Kind::cold_args);
  EXPECT_EQ(some.arguments, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_FALSE(some.is_warm());
  EXPECT_FALSE(some.rotates_all());
  for (const char* text : {"warm", "cold", "cold:mat2", "cold:weight,bias", "cold:_x1"})
    EXPECT_EQ(to_string(parse_cache_mode(text)), text);
}

TEST(CacheMode, RefusesInOneLineNamingTheTextAndTheFix) {
  EXPECT_EQ(refusal([] { parse_cache_mode("tepid"); }),
            "unknown cache mode 'tepid' (use warm, cold, or cold:<argument>,...)");
  EXPECT_EQ(refusal([] { parse_cache_mode("tepid", "--cache"); }),
            "--cache: unknown cache mode 'tepid' (use warm, cold, or cold:<argument>,...)");
  EXPECT_EQ(refusal([] { parse_cache_mode("cold:"); }),
            "cache mode 'cold:' names no argument (use cold:<argument>,...)");
  EXPECT_EQ(refusal([] { parse_cache_mode("cold:a,,b"); }),
            "cache mode 'cold:a,,b' names an empty argument (use cold:<argument>,...)");
  EXPECT_NE(refusal([] { parse_cache_mode("cold:a,"); }).find("names an empty argument"), std::string::npos);
  EXPECT_NE(refusal([] { parse_cache_mode("cold:1x"); }).find("'1x' is not an argument name"), std::string::npos);
  // Hostile text: a newline or kilobytes never reach the message as such.
  const std::string two_lines = refusal([] { parse_cache_mode("cold:a\nb"); });
  EXPECT_EQ(two_lines.find('\n'), std::string::npos) << two_lines;
  const std::string huge = refusal([] { parse_cache_mode("cold:" + std::string(5000, 'a')); });
  EXPECT_NE(huge.find("over the 1024 accepted"), std::string::npos) << huge.substr(0, 200);
  EXPECT_LT(huge.size(), 400u);
  EXPECT_NE(refusal([] { parse_cache_mode("Warm"); }), "");
  EXPECT_NE(refusal([] { parse_cache_mode(""); }), "");
}

TEST(DeviceSpec, ParsesAndPrintsEachForm) {
  EXPECT_TRUE(parse_device_spec("auto").is_auto());
  EXPECT_TRUE(parse_device_spec("cpu").is_cpu());
  EXPECT_TRUE(parse_device_spec("cuda").is_cuda());
  EXPECT_FALSE(parse_device_spec("cuda").index);
  const DeviceSpec second = parse_device_spec("cuda:1");
  EXPECT_TRUE(second.is_cuda());
  EXPECT_EQ(second.index, 1);
  EXPECT_FALSE(parse_device_spec("auto").is_cuda());
  for (const char* text : {"auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:127"})
    EXPECT_EQ(to_string(parse_device_spec(text)), text);
  EXPECT_EQ(device_kind_name(parse_device_spec("cuda:3")), "cuda");
  EXPECT_EQ(device_kind_name(DeviceSpec::cpu()), "cpu");
}

TEST(DeviceSpec, RefusesInOneLineNamingTheTextAndTheFix) {
  EXPECT_EQ(refusal([] { parse_device_spec("gpu"); }), "unknown device 'gpu' (use auto, cpu, cuda or cuda:N)");
  EXPECT_EQ(refusal([] { parse_device_spec("gpu", "--device"); }),
            "--device: unknown device 'gpu' (use auto, cpu, cuda or cuda:N)");
  for (const char* text : {"cuda:", "cuda:-1", "cuda:128", "cuda:1x", "cuda:0001", "CPU", "", "cuda :0"})
    EXPECT_NE(refusal([&] { parse_device_spec(text); }), "") << text;
  const std::string two_lines = refusal([] { parse_device_spec("cpu\nrm -rf /"); });
  EXPECT_EQ(two_lines.find('\n'), std::string::npos) << two_lines;
}
