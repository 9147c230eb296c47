"""IREE's runtime running the kernels of iree_kernels.mlir, compiled ahead to a .vmfb by IREE's compiler (see
scripts/gpu-apps.sh, which compiles them for NVIDIA's GPUs): a row softmax, a 64x64 matmul, sqrt(log(a) / b)
(NaN where a < 1), atan2(a, b) (IREE's is NaN where both are 0), pow(a, b) (with a = 0 among the bases) and
exp(60 a) (Inf where a is past about 1.48) and expm1(a) (of zeros among others). Prints `result <name> sha256 <hex>` for each result, and how many
NaNs and Infs each elementwise kernel made. IREE's runtime refuses llvmpipe, so on lavapipe
tests/integration/tests/iree.rs runs the compiled kernels with bb-testapp instead; this script is for GPU
machines (and for `--device local-task` with a module compiled for the CPU, to try it anywhere)."""

import argparse
import hashlib
import sys

import numpy as np
import iree.runtime as rt


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("vmfb")
    parser.add_argument("--device", default="vulkan")
    args = parser.parse_args()
    config = rt.Config(args.device)
    context = rt.SystemContext(config=config)
    with open(args.vmfb, "rb") as f:
        context.add_vm_module(rt.VmModule.copy_buffer(context.instance, f.read()))
    kernels = context.modules.module
    print(f"iree-app: device {config.device}", file=sys.stderr)

    rows = np.linspace(-4.0, 4.0, 4 * 64, dtype=np.float32).reshape(4, 64)
    a = np.linspace(-1.0, 1.0, 64 * 64, dtype=np.float32).reshape(64, 64)
    b = np.cos(np.arange(64 * 64, dtype=np.float32)).reshape(64, 64)
    x = np.linspace(-2.0, 2.0, 1024, dtype=np.float32)
    y = np.linspace(0.5, 1.5, 1024, dtype=np.float32)
    # atan2 of (0, 0), (1, 0), (-1, 1), (0, -1); pow of 0^2, 2^0.5, 0.5^-1, 3^0.
    ay = np.tile(np.array([0, 1, -1, 0], dtype=np.float32), 256)
    ax = np.tile(np.array([0, 0, 1, -1], dtype=np.float32), 256)
    base = np.tile(np.array([0, 2, 0.5, 3], dtype=np.float32), 256)
    exponent = np.tile(np.array([2, 0.5, -1, 0], dtype=np.float32), 256)
    results = {
        "softmax": kernels.softmax(rows).to_host(),
        "matmul": kernels.matmul(a, b).to_host(),
        "elementwise": kernels.elementwise(x, y).to_host(),
        "atan2": kernels.atan2(ay, ax).to_host(),
        "pow": kernels.pow(base, exponent).to_host(),
        # One argument: IREE 3.1's runtime crashes (SIGSEGV) calling a function with an unused argument.
        "exp": kernels.exp(x).to_host(),
        # expm1(0) divides 0 by 0 on the way and a select throws that NaN away: no NaN in the result.
        "expm1": kernels.expm1(ax).to_host(),
    }
    for name, value in results.items():
        print(f"result {name} sha256 {hashlib.sha256(value.tobytes()).hexdigest()}")
    for name in ["elementwise", "atan2", "pow", "exp", "expm1"]:
        nans = int(np.isnan(results[name]).sum())
        infs = int(np.isinf(results[name]).sum())
        print(f"iree-app: {name} made {nans} NaNs and {infs} Infs", file=sys.stderr)


if __name__ == "__main__":
    main()
