"""A small wgpu-py program for the Blackbox end-to-end tests (tests/integration/tests/third_party.rs).

Runs on whatever adapter wgpu picks (the tests give it lavapipe only, through the Vulkan loader):
  compute  a WGSL compute shader fills a storage buffer, read back with queue.read_buffer
  render   a WGSL triangle drawn into a 64x64 RGBA8 texture, read back with queue.read_texture
  --nan    the compute shader also makes one NaN (normalize of a zero vector at invocation 12), which
           Blackbox at VK_BLACKBOX_NAN=outputs reports

Prints `result <name> sha256 <hex>` on stdout for each, and `wgpu-app: reading results` on stderr the
moment wgpu hands the compute results back (wgpu learns of completion by polling a timeline semaphore:
Blackbox's NaN line must come before that line).
"""

import hashlib
import sys

import wgpu

COMPUTE = """
@group(0) @binding(0) var<storage, read_write> data: array<vec4<f32>>;
@group(0) @binding(1) var<uniform> params: vec4<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    let x = f32(i) * 0.001;
    var v = vec3<f32>(sin(x) * cos(x * 3.0) + sqrt(x), x * x, 1.0 - x);
    if (params.x == 1u && i == 12u) {
        v = vec3<f32>(0.0, 0.0, 0.0);
    }
    data[i] = vec4<f32>(normalize(v), x);
}
"""

RENDER = """
struct Out {
    @builtin(position) position: vec4<f32>,
    @location(0) color: vec3<f32>,
};

@vertex
fn vs_main(@builtin(vertex_index) index: u32) -> Out {
    var positions = array<vec2<f32>, 3>(vec2<f32>(0.0, -0.8), vec2<f32>(0.8, 0.7), vec2<f32>(-0.7, 0.5));
    var colors = array<vec3<f32>, 3>(vec3<f32>(1.0, 0.2, 0.1), vec3<f32>(0.1, 0.9, 0.3), vec3<f32>(0.2, 0.3, 1.0));
    var out: Out;
    out.position = vec4<f32>(positions[index], 0.0, 1.0);
    out.color = colors[index];
    return out;
}

@fragment
fn fs_main(in: Out) -> @location(0) vec4<f32> {
    return vec4<f32>(in.color, 1.0);
}
"""

N = 4096
SIZE = 64


def compute(device, nan):
    data = device.create_buffer(size=N * 16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    params = device.create_buffer_with_data(
        data=bytes([1 if nan else 0, 0, 0, 0] + [0] * 12), usage=wgpu.BufferUsage.UNIFORM
    )
    module = device.create_shader_module(code=COMPUTE, label="wgpu-app compute")
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}, label="wgpu-compute"
    )
    group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": data}},
            {"binding": 1, "resource": {"buffer": params}},
        ],
    )
    encoder = device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass()
    compute_pass.set_pipeline(pipeline)
    compute_pass.set_bind_group(0, group)
    compute_pass.dispatch_workgroups(N // 64)
    compute_pass.end()
    device.queue.submit([encoder.finish()])
    out = device.queue.read_buffer(data).tobytes()
    print("wgpu-app: reading results", file=sys.stderr, flush=True)
    return out


def render(device):
    target = device.create_texture(
        size=(SIZE, SIZE, 1),
        format=wgpu.TextureFormat.rgba8unorm,
        usage=wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC,
    )
    module = device.create_shader_module(code=RENDER, label="wgpu-app render")
    pipeline = device.create_render_pipeline(
        layout="auto",
        vertex={"module": module, "entry_point": "vs_main", "buffers": []},
        primitive={"topology": wgpu.PrimitiveTopology.triangle_list},
        depth_stencil=None,
        multisample=None,
        fragment={
            "module": module,
            "entry_point": "fs_main",
            "targets": [{"format": wgpu.TextureFormat.rgba8unorm}],
        },
        label="wgpu-render",
    )
    encoder = device.create_command_encoder()
    render_pass = encoder.begin_render_pass(
        color_attachments=[
            {
                "view": target.create_view(),
                "clear_value": (0.0, 0.0, 0.0, 1.0),
                "load_op": wgpu.LoadOp.clear,
                "store_op": wgpu.StoreOp.store,
            }
        ]
    )
    render_pass.set_pipeline(pipeline)
    render_pass.draw(3, 1, 0, 0)
    render_pass.end()
    device.queue.submit([encoder.finish()])
    return device.queue.read_texture(
        {"texture": target, "mip_level": 0, "origin": (0, 0, 0)},
        {"offset": 0, "bytes_per_row": SIZE * 4},
        (SIZE, SIZE, 1),
    ).tobytes()


def main():
    nan = "--nan" in sys.argv[1:]
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    print(f"wgpu-app: adapter {adapter.info['device']} ({adapter.info['backend_type']})", file=sys.stderr)
    device = adapter.request_device_sync()
    results = {"compute": compute(device, nan), "render": render(device)}
    for name, data in results.items():
        print(f"result {name} sha256 {hashlib.sha256(data).hexdigest()}", flush=True)


if __name__ == "__main__":
    main()
