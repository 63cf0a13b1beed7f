#include "python/estimate_bindings.h"

#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "core/estimate/call_work.h"
#include "core/estimate/cost_features.h"
#include "core/estimate/cost_model.h"
#include "core/measurement.h"
#include "core/predict/extent_match.h"
#include "core/spec/spec_file.h"
#include "core/store/cost_model_store.h"
#include "core/store/database.h"
#include "workflow/predict_estimates.h"

namespace py = pybind11;

namespace opcost {

namespace {

OpCall call_of(const std::string& op, const std::string& args) { return parse_call(op, split_call_line(args)); }

py::object from_json(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

}  // namespace

void bind_estimate(py::module_& m) {
  m.def("cost_feature_names", &cost_feature_names, "The cost model's features, in order");
  m.attr("COST_FEATURES_VERSION") = kCostFeaturesVersion;
  m.attr("TIME_FLOOR_US") = kTimeFloorUs;
  m.attr("POOLED_ENERGY_FLAG") = std::string(kPooledEnergyFlag);
  m.def(
      "cost_features",
      [](const std::string& op, const std::string& args, const std::string& cache_mode,
         const std::string& gpu_json) -> py::object {
        std::optional<CostFeatures> f;
        try {
          const auto j = nlohmann::json::parse(gpu_json);
          f = cost_features(call_of(op, args), cache_mode, gpu_profile_from_json(j.value("name", ""), j));
        } catch (const std::exception&) {  // ParseError, invalid_argument: no figure, as call_work
          return py::none();
        }
        if (!f) return py::none();
        py::dict d;
        d["family"] = std::string(family_name(f->family));
        d["flops"] = f->work.flops;
        d["bytes"] = f->work.bytes;
        d["roofline_us"] = f->roofline_us;
        d["base_us"] = f->base_us;
        d["base_power_W"] = f->base_power_W ? py::object(py::float_(*f->base_power_W)) : py::none();
        d["values"] = f->values;
        d["notes"] = f->notes;
        return d;
      },
      py::arg("op"), py::arg("args"), py::arg("cache_mode"), py::arg("gpu_json"),
      "The features of a call (cost_feature_names order) on a GPU's rates; None where its work has no figure");
  m.def("scaled_distance", &scaled_distance, py::arg("abs_ln_ratio"),
        "How far a scaled estimate reaches, of |ln(extent ratio)| (cost_model.h): its interval grows with it");
  m.def(
      "extent_pair",
      [](const std::string& op, const std::string& call_args, const std::string& row_args) -> py::object {
        std::optional<ExtentPair> pair;
        try {
          pair = extent_pair(call_of(op, call_args).args, call_of(op, row_args).args);
        } catch (const std::exception&) {  // arguments that do not parse: no pair
          return py::none();
        }
        if (!pair) return py::none();
        return py::make_tuple(pair->call, pair->row);
      },
      py::arg("op"), py::arg("call_args"), py::arg("row_args"),
      "(call's extent, row's extent) where two calls of `op` differ in one extent only (a batch, a "
      "sequence length: core/predict/extent_match.h), as --estimate scales a row to a call; else None");
  m.def(
      "call_work",
      [](const std::string& op, const std::string& args) -> py::object {
        const auto w = call_work(op, args);
        if (!w) return py::none();
        py::dict d;
        d["family"] = std::string(family_name(w->family));
        d["flops"] = w->flops;
        d["bytes"] = w->bytes;
        return d;
      },
      py::arg("op"), py::arg("args"), "A call's family, FLOPs and least bytes moved; None where not counted");

  py::class_<CostModel>(m, "CostModel")
      .def_static("from_text", &CostModel::from_text, py::arg("text"), py::arg("source"))
      .def_property_readonly("data_hash", &CostModel::data_hash)
      .def_property_readonly("coverage", &CostModel::coverage)
      .def_property_readonly("gpus",
                             [](const CostModel& c) {
                               std::vector<std::string> names;
                               for (const auto& [name, p] : c.gpus()) names.push_back(name);
                               return names;
                             })
      .def(
          "estimate",
          [](const CostModel& c, const std::string& op, const std::string& args, const std::string& cache_mode,
             const std::string& gpu, const std::string& db) {
            const OpCall call = call_of(op, args);
            return from_json(call_estimate_document(call, gpu, estimate_call(c, call, cache_mode, gpu, db)));
          },
          py::arg("op"), py::arg("args"), py::arg("cache_mode"), py::arg("gpu"), py::arg("db") = "",
          "An estimate's document (call_estimate_document), scaled from `db`'s row of the call at another size where "
          "it has one; ValueError where there is none");

  m.def("database_exists", &Database::exists, py::arg("location"), "Whether a database is there already");
  m.def("display_location", &display_location, py::arg("location"), "The database as messages name it");
  m.def(
      "store_cost_model",
      [](const std::string& db, const std::string& model_json) {
        Database d(db);
        return store_cost_model(d, model_json);
      },
      py::arg("db"), py::arg("model_json"), "Store a fitted model in the database's cost_models table: its id");
  m.def(
      "latest_cost_model",
      [](const std::string& db) -> py::object {
        if (!Database::exists(db)) return py::none();
        Database d(db, Database::Access::kReadOnly);
        const auto stored = latest_cost_model(d);
        if (!stored) return py::none();
        py::dict out;
        out["id"] = stored->id;
        out["created_at"] = stored->created_at;
        out["data_hash"] = stored->data_hash;
        out["model_json"] = stored->model_json;
        return out;
      },
      py::arg("db"), "The newest stored cost model {id, created_at, data_hash, model_json}, or None");
}

}  // namespace opcost
