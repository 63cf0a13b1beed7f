"""Does an operator run faster in a model than alone because its input was just written there?
(issue 11: mnist-cnn b1024 fp16-autocast's loops measure 286 µs of kernels where the model
traces 260 µs; relu 17.8 vs 12.4 µs, the second convolution 78 vs 67 µs.)

Each consumer is timed three ways, by its own kernels' device time under torch.profiler:
  alone     - back to back, as opcost's loop runs it (its input stays where the last call left it);
  producer  - each call right after a copy that writes its input, as the operator before it
              in the model does;
  flushed   - each call right after writing a 256 MB buffer (nothing of its input in L2).

    python3 bench/l2_reuse.py OUT.json
"""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def kernel_times(run, iters=200):
    """Device time per call of each kernel (by name) that `run` launches."""
    for _ in range(20):
        run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            run()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            times[e.name] = times.get(e.name, 0.0) + e.device_time / iters
    return times


def main() -> None:
    dev = "cuda"
    h = torch.float16
    flush = torch.empty(256 * 2**20 // 4, device=dev)
    cases = {
        "relu f16[1024,20,24,24]": (torch.randn(1024, 20, 24, 24, device=dev, dtype=h), lambda x: torch.relu(x)),
        "max_pool2d f16[1024,20,24,24]": (torch.randn(1024, 20, 24, 24, device=dev, dtype=h),
                                          lambda x: torch.nn.functional.max_pool2d(x, 2)),
        "conv2d f16[1024,20,12,12] w f16[50,20,5,5]": (
            torch.randn(1024, 20, 12, 12, device=dev, dtype=h),
            (lambda w, b: (lambda x: torch.nn.functional.conv2d(x, w, b)))(
                torch.randn(50, 20, 5, 5, device=dev, dtype=h), torch.randn(50, device=dev, dtype=h))),
        "relu f16[1024,50,8,8]": (torch.randn(1024, 50, 8, 8, device=dev, dtype=h), lambda x: torch.relu(x)),
    }
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": {}}
    for name, (x, op) in cases.items():
        src = x.clone()

        def after_producer():
            x.copy_(src)
            op(x)

        def after_flush():
            flush.fill_(1.0)
            op(x)

        # The consumer's kernels are those it launches alone; in the pairs only they are summed.
        alone_k = kernel_times(lambda: op(x))
        alone = sum(alone_k.values())
        with_producer = sum(t for k, t in kernel_times(after_producer).items() if k in alone_k)
        flushed = sum(t for k, t in kernel_times(after_flush).items() if k in alone_k)
        out["cases"][name] = {"alone_us": alone, "after_producer_us": with_producer, "after_flush_us": flushed,
                              "kernels": sorted(alone_k)}
        print(f"{name}: alone {alone:.1f} µs, after its producer {with_producer:.1f} µs, after a flush "
              f"{flushed:.1f} µs", flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
