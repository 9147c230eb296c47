"""A small ncnn network on Vulkan for the Blackbox end-to-end tests (tests/integration/tests/third_party.rs).

Convolution 3x3 (4 -> 8 channels, 16x16), ReLU, 2x2 max pooling, a fully connected layer (10 outputs),
with weights and input drawn from a seeded generator, forward on ncnn's Vulkan device (gpu 0). Prints
`result <blob> sha256 <hex>` on stdout for the pooled feature map and the fully connected output.

ncnn's pip wheel loads the driver that VK_DRIVER_FILES names by itself, bypassing the loader and every
layer: the tests leave VK_DRIVER_FILES unset and select lavapipe with VK_LOADER_DRIVERS_SELECT instead.
"""

import hashlib
import struct
import sys

import ncnn
import numpy as np

PARAM = """7767517
5 5
Input        data  0 1 data 0=16 1=16 2=4
Convolution  conv  1 1 data conv 0=8 1=3 4=1 5=1 6=288
ReLU         relu  1 1 conv relu
Pooling      pool  1 1 relu pool 0=0 1=2 2=2
InnerProduct fc    1 1 pool fc 0=10 1=1 2=5120
"""


def main():
    if ncnn.get_gpu_count() < 1:
        sys.exit("ncnn-app: no Vulkan device")
    rng = np.random.default_rng(7)

    def weights(n, scale):
        return (rng.standard_normal(n) * scale).astype(np.float32).tobytes()

    # Each layer's weights: a 4-byte tag (0: raw float32), the weights, then the bias (no tag).
    model = b"".join(
        [struct.pack("<I", 0), weights(288, 0.2), weights(8, 0.1)]
        + [struct.pack("<I", 0), weights(5120, 0.05), weights(10, 0.1)]
    )
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.set_vulkan_device(0)
    net.load_param_mem(PARAM)
    net.load_model_mem(model)  # returns nothing; a short model shows as a failed extract below
    x = rng.standard_normal((4, 16, 16)).astype(np.float32)
    extractor = net.create_extractor()
    extractor.input("data", ncnn.Mat(x))
    outputs = {}
    for blob in ("pool", "fc"):
        ret, out = extractor.extract(blob)
        assert ret == 0, f"extract {blob}: {ret}"
        outputs[blob] = np.array(out)
    print("ncnn-app: fc", outputs["fc"], file=sys.stderr)
    for blob, value in outputs.items():
        print(f"result {blob} sha256 {hashlib.sha256(value.tobytes()).hexdigest()}", flush=True)
    del extractor, net


if __name__ == "__main__":
    main()
