"""Two Taichi kernels on Vulkan for the Blackbox end-to-end tests (tests/integration/tests/third_party.rs).

`fill` writes x[i] = i - 12 for 64 elements; `compute` writes y[i] = sqrt(x[i]) * 2, which is NaN for the
12 negative elements with `--nan` (else it takes sqrt(|x[i]|)). Taichi stores every f32 through an integer
bitcast into its root buffer, the case NaN `outputs` must see through. Prints `result <field> sha256 <hex>`
on stdout for x and y, and `taichi-app: N NaN` on stderr.
"""

import hashlib
import math
import sys

import taichi as ti


def main():
    nan = "--nan" in sys.argv[1:]
    ti.init(arch=ti.vulkan, offline_cache=False, log_level=ti.WARN)
    if ti.lang.impl.current_cfg().arch != ti.vulkan:
        sys.exit("taichi-app: Taichi did not start on Vulkan")
    n = 64
    x = ti.field(ti.f32, shape=n)
    y = ti.field(ti.f32, shape=n)

    @ti.kernel
    def fill():
        for i in range(n):
            x[i] = ti.cast(i, ti.f32) - 12.0

    @ti.kernel
    def compute(bad: ti.i32):
        for i in range(n):
            v = x[i]
            if bad == 0:
                v = ti.abs(v)
            y[i] = ti.sqrt(v) * 2.0

    fill()
    compute(1 if nan else 0)
    values = {"x": x.to_numpy(), "y": y.to_numpy()}
    print(f"taichi-app: {sum(1 for v in values['y'] if math.isnan(v))} NaN", file=sys.stderr)
    for name, value in values.items():
        print(f"result {name} sha256 {hashlib.sha256(value.tobytes()).hexdigest()}", flush=True)


if __name__ == "__main__":
    main()
