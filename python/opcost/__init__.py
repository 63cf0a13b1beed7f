"""opcost: what every PyTorch operator of your model costs on an NVIDIA GPU, in time and energy.

    import torch, torchvision, opcost
    model = torchvision.models.resnet50().cuda().eval()
    x = torch.randn(32, 3, 224, 224, device="cuda")
    inv = opcost.inventory(model, x)          # every ATen call with its module path and count
    print(inv.table()); inv.save("r50.json")  # `opcost measure --spec r50.json` measures it
    pred = opcost.predict(model, x, db="ops.db")
    val = opcost.validate(model, x, db="ops.db")
    m = opcost.measure("aten::addmm", self="bf16[3072]", mat1="bf16[1024,768]", mat2="bf16[768,3072]")
    opcost.sweep("conv2d-grid.yaml", db="ops.db")  # a grid or a model list, resumable
    with opcost.trace(model) as t:            # every kernel tied to its operator and layer
        model(x); t.step()
    print(t.table(group_by="layer")); t.export("r50.json.gz")  # for https://ui.perfetto.dev
    t = opcost.trace_model(model, x, energy=True, db="ops.db")  # energy per layer (on a GPU)
    print(t.table(group_by="layer", sort_by="energy"))
    val.plot(by="layer", metric="energy"); t.plot()  # matplotlib Figures (pip install 'opcost[plot]')
    opcost.report(val, "resnet50.html")       # one self-contained HTML page with charts
    cmp = opcost.compare(model, x, variants=("fp32", "bf16", "channels_last", "compile"))
    print(cmp.table(by="layer")); cmp.to_pandas()  # each variant vs the first, with 95% intervals
    print(opcost.fit(db="ops.db").table())   # a cost model per family, held-out errors (pip install 'opcost[fit]')
    opcost.estimate("aten::mm", "self=bf16[4096,4096] mat2=bf16[4096,4096]", db="ops.db")  # never measured

Progress and notes go to the ``opcost`` logger. Ctrl-C stops a run at once with
``KeyboardInterrupt``: the measurement in progress is dropped, what was stored stays.
"""

import torch  # noqa: F401  (loads LibTorch before the extension that links it)

from . import _core
from ._api import ModelError, inventory, measure, predict, validate
from ._compare import compare
from ._fit import Fit, FitError, estimate, fit
from ._core import DatabaseError, InputError, MeasurementAbandoned
from ._plot import plot
from ._report import report
from ._results import Comparison, Inventory, Measurement, MissingCall, OpEntry, Prediction
from ._sweep import SweepResult, SweepStatus, sweep, sweep_status
from ._trace import Schedule, Trace, schedule, trace, trace_model

__version__ = _core.__version__


def default_db() -> str:
    """The database used when ``db`` is left out: $OPCOST_DB, else ~/.local/share/opcost/opcost.db."""
    return _core.default_db_path()


__all__ = ["inventory", "predict", "validate", "measure", "sweep", "sweep_status", "trace", "trace_model", "schedule",
           "compare", "Comparison", "plot", "report", "fit", "estimate", "Fit", "FitError",
           "Trace",
           "Schedule", "default_db", "SweepResult",
           "SweepStatus", "Inventory", "Prediction", "Measurement",
           "OpEntry", "MissingCall", "ModelError", "InputError", "DatabaseError", "MeasurementAbandoned", "__version__"]
