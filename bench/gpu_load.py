#!/usr/bin/env python3
"""A busy neighbour for bench/run_neighbour_energy: bf16 GEMMs of 8192³ back to back on this
process's GPU (CUDA_VISIBLE_DEVICES picks it), the heaviest steady load a sweep of GEMMs puts on
a board, until SIGTERM. Touches READY once the GPU is warm; on SIGTERM writes REPORT (JSON: the
GPU's name and UUID, the seconds it ran, the products done, TFLOP/s), so that the check can show
its neighbours were loaded the whole time.

    CUDA_VISIBLE_DEVICES=1 python3 bench/gpu_load.py READY REPORT
"""

import json
import signal
import sys
import time
from pathlib import Path


def main() -> None:
    import torch

    ready, report = Path(sys.argv[1]), Path(sys.argv[2])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    for _ in range(20):
        torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    ready.touch()
    products, started = 0, time.monotonic()
    while not stop:
        for _ in range(20):  # about 30 ms of work between checks for SIGTERM
            torch.mm(a, b, out=c)
        torch.cuda.synchronize()
        products += 20
    seconds = time.monotonic() - started
    props = torch.cuda.get_device_properties(0)
    report.write_text(json.dumps({
        "gpu": props.name, "uuid": str(getattr(props, "uuid", "")), "seconds": round(seconds, 2),
        "products": products, "tflop_per_s": round(2 * n ** 3 * products / seconds / 1e12, 1)}, indent=2))


if __name__ == "__main__":
    main()
