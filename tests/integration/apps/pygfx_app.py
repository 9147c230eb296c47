"""A pygfx scene for the Blackbox end-to-end tests (tests/integration/tests/third_party.rs).

pygfx (a scene graph over wgpu-py) renders, offscreen, a lit scene: a floor and four meshes with its
standard, physical, Phong and toon materials under directional, point and spot lights that cast shadows,
points, a thick line and text, then its anti-aliasing pass (rendering at twice the size and filtering
down). Its shaders are WGSL, which wgpu's naga turns into SPIR-V. Nothing is random but the points' seeded
positions, and nothing moves.

Prints `result image sha256 <hex>` over the RGBA pixels of the one frame, and the adapter.

pygfx 0.17's anti-aliasing filter has negative lobes, so a few filtered colours come out slightly below
zero next to dark edges, and the pass then takes `pow(color.rgb, vec3(gamma))` with gamma 1: a NaN for
each negative component (WGSL leaves `pow` of a negative base undefined), written to the frame.
"""

import hashlib

import numpy as np
import pygfx as gfx
from rendercanvas.offscreen import RenderCanvas


def scene():
    root = gfx.Scene()
    root.add(gfx.Background.from_color("#203040", "#8090a0"))
    root.add(gfx.AmbientLight(intensity=0.3))
    sun = gfx.DirectionalLight(intensity=2.0, cast_shadow=True)
    sun.local.position = (3, 5, 4)
    lamp = gfx.PointLight(color="#ffd0a0", intensity=20, cast_shadow=True)
    lamp.local.position = (-3, 3, 2)
    spot = gfx.SpotLight(color="#a0d0ff", intensity=40, angle=0.6, cast_shadow=True)
    spot.local.position = (2, 4, -1)
    root.add(sun, lamp, spot)
    floor = gfx.Mesh(
        gfx.plane_geometry(20, 20), gfx.MeshStandardMaterial(color="#909090", roughness=0.8)
    )
    floor.local.rotation = (-0.7071068, 0, 0, 0.7071068)
    floor.receive_shadow = True
    root.add(floor)
    shapes = [
        (
            gfx.sphere_geometry(1, 48, 32),
            gfx.MeshStandardMaterial(color="#c04040", metalness=1.0, roughness=0.2),
        ),
        (
            gfx.box_geometry(1.5, 1.5, 1.5),
            gfx.MeshPhysicalMaterial(color="#40c040", roughness=0.5, clearcoat=1.0),
        ),
        (
            gfx.cylinder_geometry(0.7, 0.7, 2, 48),
            gfx.MeshPhongMaterial(color="#4040c0", shininess=40),
        ),
        (gfx.torus_knot_geometry(0.6, 0.2, 128, 16), gfx.MeshToonMaterial(color="#e0e040")),
    ]
    for i, (geometry, material) in enumerate(shapes):
        mesh = gfx.Mesh(geometry, material)
        mesh.local.position = (-4.5 + 3 * i, 1.2, 0)
        mesh.cast_shadow = True
        mesh.receive_shadow = True
        root.add(mesh)
    positions = np.random.default_rng(1).uniform(-5, 5, (200, 3)).astype(np.float32)
    root.add(gfx.Points(gfx.Geometry(positions=positions), gfx.PointsMaterial(size=6)))
    wave = np.array([[x, 0.05, np.sin(x)] for x in np.linspace(-6, 6, 100)], np.float32)
    root.add(gfx.Line(gfx.Geometry(positions=wave), gfx.LineMaterial(thickness=4, color="#ff8000")))
    root.add(
        gfx.Text(
            text="Blackbox under pygfx",
            font_size=0.6,
            anchor="middle-center",
            material=gfx.TextMaterial(color="#ffffff"),
        )
    )
    return root


def main():
    canvas = RenderCanvas(size=(400, 300), pixel_ratio=1)
    renderer = gfx.renderers.WgpuRenderer(canvas)
    camera = gfx.PerspectiveCamera(50, 4 / 3)
    camera.local.position = (0, 5, 10)
    camera.look_at((0, 0.5, 0))
    root = scene()
    canvas.request_draw(lambda: renderer.render(root, camera))
    image = np.asarray(canvas.draw())
    print(f"adapter {renderer.device.adapter.info['device']}")
    print(f"result image sha256 {hashlib.sha256(image.tobytes()).hexdigest()}")


if __name__ == "__main__":
    main()
