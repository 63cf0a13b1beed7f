// Values of replayed inputs (torch/input_values): data-dependent and value-constrained operators
// replay with inputs that are valid and cost what the model paid (a mask of the model's density,
// as many true elements as index_put_'s values, probabilities, boxes, bag offsets), and the
// observer records the values that matter in the signature.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "core/spec/arg_value.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "replay_test_support.h"
#include "torch/bind.h"
#include "torch/input_values.h"
#include "torch/observer.h"
#include "torch/replay.h"

using namespace opcost;

namespace {

using opcost::test_support::call_of;
using opcost::test_support::test_device;

BoundCall bound(const std::string& line, uint64_t seed = 0) { return bind_call(call_of(line), test_device(), seed); }

// The call replayed as a measurement replays it: bound, then called once (the op's own checks).
void replays(const std::string& line) {
  ReplayOptions o;
  o.device = test_device().str();
  EXPECT_NO_THROW(PreparedCall::prepare(call_of(line), o)) << line;
}

double true_share(const at::Tensor& mask) { return mask.to(at::kDouble).mean().item<double>(); }

// Greedy non-maximum suppression, as torchvision::nms does it (which the C++ tests cannot
// load): boxes in descending score order, each kept unless it overlaps a kept one by more than
// the threshold. The number kept.
int64_t reference_nms_kept(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  const at::Tensor order = std::get<1>(scores.sort(0, true));
  const at::Tensor sorted = boxes.index_select(0, order).to(at::kDouble).cpu().contiguous();
  const auto b = sorted.accessor<double, 2>();
  auto area = [&](int64_t i) { return (b[i][2] - b[i][0]) * (b[i][3] - b[i][1]); };
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < sorted.size(0); ++i) {
    bool suppressed = false;
    for (int64_t k : kept) {
      const double w = std::max(0.0, std::min(b[i][2], b[k][2]) - std::max(b[i][0], b[k][0]));
      const double h = std::max(0.0, std::min(b[i][3], b[k][3]) - std::max(b[i][1], b[k][1]));
      const double inter = w * h;
      if (inter / (area(i) + area(k) - inter) > iou_threshold) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) kept.push_back(i);
  }
  return int64_t(kept.size());
}

}  // namespace

// x[x > 0.9]: nonzero's, masked_select's and index's output is as long as the mask's true
// elements. A bool mask with :zeros[f] holds exactly that share of false elements (before,
// its seeded half-true data was zeroed further: :zeros[0.9] gave 5% true).
TEST(InputValues, ABoolMaskHasTheDensityItsSignatureSays) {
  for (double zeros : {0.9, 0.5, 0.02, 0.0, 1.0}) {
    const std::string spec = fmt::format("bool[100,100]:zeros[{}]", format_value(ArgValue{zeros}));
    auto b = bound("aten::index self=f32[100,100] indices=[" + spec + "]");
    const at::Tensor mask = b.inputs[1].toList().get(0).toOptional<at::Tensor>().value();
    EXPECT_EQ(mask.scalar_type(), at::kBool);
    EXPECT_NEAR(true_share(mask), 1 - zeros, 1e-9) << spec;
    auto n = bound("aten::nonzero self=" + spec);
    EXPECT_NEAR(true_share(n.inputs[0].toTensor()), 1 - zeros, 1e-9) << spec;
  }
  // Without :zeros a mask stays half true, at seeded places.
  auto fair = bound("aten::masked_select self=f32[10000] mask=bool[10000]");
  EXPECT_NEAR(true_share(fair.inputs[1].toTensor()), 0.5, 0.03);
  replays("aten::index self=f32[64,64] indices=[bool[64,64]:zeros[0.9]]");
  replays("aten::masked_select self=f32[64,64] mask=bool[64,64]:zeros[0.3]");
  replays("aten::nonzero self=f32[64,64]:zeros[0.75]");
}

// x[mask] = v with v of k elements: the mask must hold exactly k true elements, or index_put_
// refuses ("value tensor of shape [26] cannot be broadcast to indexing result of shape [139]").
TEST(InputValues, IndexPutWithABoolMaskGetsAsManyTrueElementsAsValues) {
  auto b = bound("aten::index_put_ self=f32[16,16] indices=[bool[16,16]] values=f32[26]");
  EXPECT_EQ(b.inputs[1].toList().get(0).toOptional<at::Tensor>()->sum().item<int64_t>(), 26);
  replays("aten::index_put_ self=f32[16,16] indices=[bool[16,16]] values=f32[26]");
  replays("aten::index_put_ self=f32[16,16] indices=[bool[16,16]:zeros[0.9]] values=f32[26]");
  replays("aten::index_put_ self=f32[8,16,4] indices=[bool[8,16]] values=f32[40,4]");
  replays("aten::index_put_ self=f32[8,16,4] indices=[None,bool[16]] values=f32[8,5,4]");
  replays("aten::index_put_ self=f32[16,16] indices=[bool[16,16]:zeros[0.8]] values=f32[] accumulate=true");
  replays("aten::masked_scatter self=f32[16] mask=bool[16] source=f32[4]");
  // The backward of h[h > 0] (the corpus's training step).
  replays("aten::_index_put_impl_ self=f32[4,16] indices=[bool[4,16]] values=f32[23] accumulate=true unsafe=true");
}

TEST(InputValues, ProbabilitiesAndRatesAreInTheirDomain) {
  auto m = bound("aten::multinomial self=f32[16,16] num_samples=2");
  EXPECT_GE(m.inputs[0].toTensor().min().item<float>(), 0.0f);
  replays("aten::multinomial self=f32[16,16] num_samples=2");
  replays("aten::multinomial self=f32[1000] num_samples=50 replacement=true");
  replays("aten::bernoulli self=f32[100]");
  replays("aten::bernoulli_.Tensor self=f32[100] p=f32[100]");
  replays("aten::binary_cross_entropy self=f32[100] target=f32[100]");
  replays("aten::poisson self=f32[100]");
  // An explicit :range still wins where the op allows it.
  auto r = bound("aten::multinomial self=f32[4,8]:range[1,2] num_samples=2");
  EXPECT_GE(r.inputs[0].toTensor().min().item<float>(), 1.0f);
}

// Indices stay inside the dimension they index, in-place variants included (aten::scatter_
// drew from [0, 16) and failed on a dimension of 4; on a GPU: a device-side assert).
TEST(InputValues, IndicesStayInsideWhatTheyIndex) {
  for (const std::string line :
       {"aten::scatter_ self=f32[4,4] dim=1 index=i64[4,4] src=f32[4,4]",
        "aten::scatter_add_ self=f32[4,4] dim=1 index=i64[4,4] src=f32[4,4]",
        "aten::scatter_reduce.two self=f32[4,4] dim=0 index=i64[4,4] src=f32[4,4] reduce=amax",
        "aten::index_add self=f32[4,3] dim=0 index=i64[10] source=f32[10,3]",
        "aten::index_copy self=f32[4,3] dim=0 index=i64[4] source=f32[4,3]",
        "aten::index_fill_.int_Scalar self=f32[4,3] dim=0 index=i64[4] value=1.0",
        "aten::take self=f32[4] index=i64[10]", "aten::put_ self=f32[4] index=i64[10] source=f32[10]",
        "aten::take_along_dim self=f32[4,4] indices=i64[4,2] dim=1",
        "aten::take_along_dim self=f32[2,3] indices=i64[5]",
        "aten::gather_backward grad=f32[4,2] self=f32[4,4] dim=1 index=i64[4,2] sparse_grad=false",
        "aten::index_select_backward grad=f32[4,3] self_sizes=[5,3] dim=0 index=i64[4]",
        "aten::embedding_renorm_ self=f32[5,3] indices=i64[8] max_norm=1.0 norm_type=2.0",
        "aten::index self=f32[3,20] indices=[None,i64[7]]",
        // The corpus's h2.index_put_((rows, zeros_like(rows)), ..., accumulate=True).
        "aten::index_put_ self=f32[4,16] indices=[i64[4],i64[4]] values=f32[4] accumulate=true"})
    replays(line);
  auto pool = bound(
      "aten::max_pool2d_with_indices_backward grad_output=f32[1,1,1,1] self=f32[1,1,2,2] kernel_size=[2,2] "
      "stride=[2,2] padding=[0,0] dilation=[1,1] ceil_mode=false indices=i64[1,1,64]");
  EXPECT_LT(pool.inputs.back().toTensor().max().item<int64_t>(), 4);  // a flat index into a 2x2 plane
}

TEST(InputValues, EmbeddingBagsAndRepeatsHaveValidStructure) {
  for (const std::string include_last : {"false", "true"}) {
    const std::string line =
        "aten::_embedding_bag weight=f32[10,4] indices=i64[20] offsets=i64[5] include_last_offset=" + include_last;
    auto b = bound(line);
    const at::Tensor offsets = b.inputs[2].toTensor();
    EXPECT_EQ(offsets[0].item<int64_t>(), 0) << line;
    EXPECT_TRUE(at::equal(offsets, std::get<0>(offsets.sort()))) << offsets;  // ascending
    EXPECT_LE(offsets.max().item<int64_t>(), 20);
    if (include_last == "true") EXPECT_EQ(offsets[4].item<int64_t>(), 20);
    replays(line);
  }
  replays(
      "aten::embedding_bag.padding_idx weight=f32[10,4] indices=i64[20] offsets=i64[4] scale_grad_by_freq=false "
      "mode=1 sparse=false per_sample_weights=None include_last_offset=false padding_idx=0");
  replays("aten::embedding weight=f32[50,8] indices=i64[4,8] padding_idx=0");
  replays(
      "aten::embedding_dense_backward grad_output=f32[4,8,8] indices=i64[4,8] num_weights=50 padding_idx=0 "
      "scale_grad_by_freq=false");
  auto r = bound("aten::repeat_interleave.self_Tensor self=f32[8] repeats=i64[8] dim=0 output_size=40");
  EXPECT_EQ(r.inputs[1].toTensor().sum().item<int64_t>(), 40);
  EXPECT_GE(r.inputs[1].toTensor().min().item<int64_t>(), 0);
  replays("aten::repeat_interleave.self_Tensor self=f32[8] repeats=i64[8] dim=0 output_size=40");
}

// nms over random normal data suppressed at random (x2 < x1 gives negative areas); its boxes
// are now valid and fall in clusters, one kept per cluster, whatever the threshold.
TEST(InputValues, NmsBoxesAreValidAndKeepTheNumberAsked) {
  at::Generator gen = at::detail::createCPUGenerator(7);
  for (double threshold : {0.1, 0.3, 0.5, 0.7, 0.9, 0.99})
    for (auto [n, kept] : {std::pair<int64_t, int64_t>{200, 37}, {64, 64}, {50, 1}}) {
      const at::Tensor boxes = nms_boxes(n, kept, threshold, gen, at::TensorOptions());
      ASSERT_EQ(boxes.sizes(), (at::IntArrayRef{n, 4}));
      EXPECT_TRUE((boxes.select(1, 2) > boxes.select(1, 0)).all().item<bool>());
      EXPECT_TRUE((boxes.select(1, 3) > boxes.select(1, 1)).all().item<bool>());
      EXPECT_EQ(reference_nms_kept(boxes, at::rand({n}, gen), threshold), kept) << n << " at " << threshold;
    }
  // Through a call's arguments: dets become such boxes (70% of them kept), scores stay random.
  const std::map<std::string, const ArgValue*> none;
  const ArgValue threshold{0.7};
  const std::map<std::string, const ArgValue*> given = {{"iou_threshold", &threshold}};
  const TensorSpec dets{"f32", {300, 4}};
  const std::string op = "torchvision::nms", arg = "dets";
  const at::Tensor boxes = draw_values(ArgPlace{op, arg, 0, given}, dets, at::kFloat, 1200, gen, at::TensorOptions());
  EXPECT_EQ(reference_nms_kept(boxes.view({300, 4}), at::rand({300}, gen), 0.7), default_nms_kept(300));
  // With the count the model's call kept (an inventory's :distinct[N]): exactly that many.
  const TensorSpec recorded = std::get<TensorSpec>(parse_value("f32[300,4]:distinct[41]").v);
  const at::Tensor as_recorded =
      draw_values(ArgPlace{op, arg, 0, given}, recorded, at::kFloat, 1200, gen, at::TensorOptions());
  EXPECT_EQ(reference_nms_kept(as_recorded.view({300, 4}), at::rand({300}, gen), 0.7), 41);
}

TEST(InputValues, RegionsLieInTheImageAndIndexItsBatch) {
  at::Generator gen = at::detail::createCPUGenerator(3);
  const ArgValue input{TensorSpec{"f32", {2, 8, 16, 32}}}, scale{0.25};
  const std::map<std::string, const ArgValue*> given = {{"input", &input}, {"spatial_scale", &scale}};
  const std::string op = "torchvision::roi_align", arg = "rois";
  const at::Tensor rois =
      draw_values(ArgPlace{op, arg, 0, given}, TensorSpec{"f32", {500, 5}}, at::kFloat, 2500, gen, at::TensorOptions())
          .view({500, 5});
  const at::Tensor batch = rois.select(1, 0);
  EXPECT_TRUE((batch >= 0).all().item<bool>() && (batch < 2).all().item<bool>());
  EXPECT_TRUE(at::equal(batch, batch.round()));
  EXPECT_TRUE((rois.select(1, 3) > rois.select(1, 1)).all().item<bool>());
  EXPECT_TRUE((rois.select(1, 4) > rois.select(1, 2)).all().item<bool>());
  EXPECT_LE(rois.select(1, 3).max().item<float>(), 32 / 0.25);  // image coordinates: the feature map / scale
  EXPECT_LE(rois.select(1, 4).max().item<float>(), 16 / 0.25);
}

TEST(InputValues, SummariesRecordWhatTheCostDependsOn) {
  const at::Tensor x = at::rand({100, 100}, at::detail::createCPUGenerator(1));
  const auto mask = value_summary("aten::index", "indices", x > 0.9);
  ASSERT_TRUE(mask.zeros_fraction);
  EXPECT_NEAR(*mask.zeros_fraction, 0.9, 0.015);
  EXPECT_DOUBLE_EQ(*mask.zeros_fraction * 100, std::round(*mask.zeros_fraction * 100));  // 2 digits
  EXPECT_TRUE(value_summary("aten::nonzero", "self", (x > 0.5).to(at::kFloat)).zeros_fraction);
  const at::Tensor ids = at::arange(3, 53, at::kLong);
  EXPECT_EQ(value_summary("aten::_unique2", "self", ids).range, (std::pair<int64_t, int64_t>{3, 53}));
  EXPECT_FALSE(value_summary("aten::one_hot", "self", ids, 60).range);  // its classes are given
  EXPECT_TRUE(value_summary("aten::one_hot", "self", ids, -1).range);
  EXPECT_EQ(value_summary("aten::relu", "self", x), ValueSummary{});  // values that do not matter
  EXPECT_EQ(value_summary("aten::add", "self", x > 0.5), ValueSummary{});
}

// x + x: the inventory says that both arguments are one tensor, and the replay binds them so
// (self-attention's fused path in aten::_native_multi_head_attention is taken only then).
TEST(InputValues, OneTensorGivenTwiceIsReplayedAsOneTensor) {
  const at::Tensor x = at::rand({6, 4}, at::detail::createCPUGenerator(7));
  const at::Tensor y = at::rand({6, 4}, at::detail::createCPUGenerator(8));
  Inventory inv = observe([&] {
    c10::InferenceMode guard;
    (void)at::add(x, x);
    (void)at::add(x, y);  // the same op and shapes: the observer's signature cache tells them apart
    (void)at::mul(x, y);
  });
  std::map<std::string, std::vector<std::string>> sig;
  for (const auto& e : inv.entries) sig[e.op].push_back(e.args);
  std::sort(sig["aten::add"].begin(), sig["aten::add"].end());
  ASSERT_EQ(sig["aten::add"],
            (std::vector<std::string>{"self=f32[6,4] other=f32[6,4]", "self=f32[6,4] other=f32[6,4]:same[self]"}));
  ASSERT_EQ(sig["aten::mul"], std::vector<std::string>{"self=f32[6,4] other=f32[6,4]"});
  const BoundCall same = bound("aten::add " + sig["aten::add"][1]);
  EXPECT_TRUE(same.inputs[1].toTensor().is_same(same.inputs[0].toTensor()));
  EXPECT_EQ(same.tensor_bytes, std::size_t(6 * 4 * 4));  // one tensor's storage
  const BoundCall two = bound("aten::mul " + sig["aten::mul"][0]);
  EXPECT_FALSE(two.inputs[1].toTensor().is_same(two.inputs[0].toTensor()));  // two tensors of one shape
  // The earlier argument's values' modifiers are its tensor's: the alias takes it as it is.
  const BoundCall ranged = bound("aten::add self=f32[6,4]:range[2,3] other=f32[6,4]:same[self]");
  EXPECT_TRUE(ranged.inputs[1].toTensor().is_same(ranged.inputs[0].toTensor()));
  // A cold replay copies the one tensor as one: as many input sets as for one tensor of its
  // bytes (ten of 96 bytes over a 960-byte footprint; counted twice, five).
  ReplayOptions o;
  o.device = test_device().str();
  o.cache_mode = "cold";
  o.cold_footprint_bytes = 10 * 6 * 4 * 4;
  EXPECT_EQ(PreparedCall::prepare(call_of("aten::add " + sig["aten::add"][1]), o)->input_sets(), 10u);
  EXPECT_EQ(PreparedCall::prepare(call_of("aten::add " + sig["aten::add"][0]), o)->input_sets(), 5u);
  // What cannot be one tensor says so, naming the argument.
  for (const auto& [line, expected] : std::vector<std::pair<std::string, std::string>>{
           {"aten::add self=f32[6,4] other=f32[6,4]:same[nope]", "names no tensor argument before 'other'"},
           {"aten::add self=f32[6,4]:same[other] other=f32[6,4]", "names no tensor argument before 'self'"},
           {"aten::add self=f32[6,4] other=f32[6,5]:same[self]", "write it as 'self' is, or drop ':same'"},
           {"aten::cat tensors=[f32[2],f32[2]:same[self]]", "not an item of a list"}}) {
    try {
      bound(line);
      ADD_FAILURE() << line << " bound";
    } catch (const ReplayError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << line << ": " << e.what();
    }
  }
}

// The model's x[x > 0.9]: the inventory's signature carries the mask's density, and its replay
// draws a mask of that density.
TEST(InputValues, TheInventoryRecordsAMasksDensityAndTheReplayHasIt) {
  const at::Tensor x = at::rand({200, 100}, at::detail::createCPUGenerator(5));
  const at::Tensor ids = at::randint(10, 30, {64}, at::detail::createCPUGenerator(6), at::kLong);
  Inventory inv = observe([&] {
    c10::InferenceMode guard;
    (void)x.index({x > 0.9});
    (void)at::nonzero(x < 0.25);
    (void)at::_unique2(ids);
    (void)at::relu(x);
  });
  std::map<std::string, std::string> sig;
  for (const auto& e : inv.entries) sig[e.op] = e.args;
  ASSERT_TRUE(sig.count("aten::index")) << inv.entries.size();
  EXPECT_TRUE(sig["aten::index"].find("indices=[bool[200,100]:zeros[0.9]]") != std::string::npos) << sig["aten::index"];
  EXPECT_TRUE(sig["aten::nonzero"].find("self=bool[200,100]:zeros[0.75]") != std::string::npos) << sig["aten::nonzero"];
  EXPECT_TRUE(sig["aten::_unique2"].find(":range[") != std::string::npos) << sig["aten::_unique2"];
  EXPECT_EQ(sig["aten::relu"], "self=f32[200,100]");
  auto b = bound("aten::index " + sig["aten::index"]);
  EXPECT_NEAR(true_share(b.inputs[1].toList().get(0).toOptional<at::Tensor>().value()), 0.1, 1e-9);
  auto u = bound("aten::_unique2 " + sig["aten::_unique2"]);
  EXPECT_GE(u.inputs[0].toTensor().min().item<int64_t>(), 10);
  EXPECT_LT(u.inputs[0].toTensor().max().item<int64_t>(), 30);
}
