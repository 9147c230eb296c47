//! Qt Quick on Vulkan: Debian 12's Qt 6.4 and PyQt6 rendering a Qt Quick 3D scene (`apps/qt_quick_scene.qml`:
//! physically based materials, three shadow-casting lights, ambient occlusion, MSAA, tone mapping, a
//! texture rendered from a 2D item, 2D text and shapes) through Qt's RHI on lavapipe, on
//! Xvfb. Qt Quick 3D generates its shaders at run time and compiles them to SPIR-V itself (34 modules), and
//! Qt's render loop records, submits and presents from its own thread. `apps/qt_quick_render.py` saves the
//! window after 10 frames. Without Blackbox (the reference), then through it at the defaults, at NaN `ops`
//! with `command` breadcrumbs, and at NaN `outputs` with frame capture and loop and integer checks: the
//! same exit, the same pixels, Blackbox active once, no Blackbox warning, and every validation id as often
//! as without Blackbox (the validation layer below it).
//!
//! At NaN `ops` the image came out 5 pixels one step darker: Qt's shadows divide two exponentials
//! (`exp(k * d1) / exp(k * d2)`), which lavapipe computes as one `exp(k * (d1 - d2))` only while nothing
//! else uses the exponentials or their arguments, and the checks of each `exp` did. Such a pair is now one
//! site (engine/src/passes/nan_guard.rs, `Fusions`).

use blackbox_integration::*;

/// The lit scene.
const SCENE: &str = "qt_quick_scene.qml";

/// A decoded PNG: its size, bytes per pixel and pixel bytes.
struct Image {
    width: u32,
    height: u32,
    channels: usize,
    bytes: Vec<u8>,
}

impl Image {
    fn read(path: &std::path::Path) -> Result<Image, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let decoder = png::Decoder::new(std::io::BufReader::new(file));
        let mut reader = decoder
            .read_info()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut bytes = vec![0; reader.output_buffer_size().unwrap_or(0)];
        let info = reader
            .next_frame(&mut bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        bytes.truncate(info.buffer_size());
        Ok(Image {
            width: info.width,
            height: info.height,
            channels: info.color_type.samples(),
            bytes,
        })
    }

    /// How `self` differs from `reference`: `None` when every pixel is the same.
    fn differences(&self, reference: &Image) -> Option<String> {
        if (self.width, self.height, self.channels)
            != (reference.width, reference.height, reference.channels)
        {
            return Some(format!(
                "{}x{} with {} channels, the reference {}x{} with {}",
                self.width,
                self.height,
                self.channels,
                reference.width,
                reference.height,
                reference.channels
            ));
        }
        let pixels = self
            .bytes
            .chunks(self.channels)
            .zip(reference.bytes.chunks(self.channels));
        let (mut differing, mut largest, mut first) = (0usize, 0u8, None);
        for (i, (a, b)) in pixels.enumerate() {
            if a != b {
                differing += 1;
                largest = a
                    .iter()
                    .zip(b)
                    .map(|(x, y)| x.abs_diff(*y))
                    .fold(largest, u8::max);
                first.get_or_insert((
                    i as u32 % self.width,
                    i as u32 / self.width,
                    a.to_vec(),
                    b.to_vec(),
                ));
            }
        }
        first.map(|(x, y, a, b)| {
            format!(
                "{differing} pixels differ, by up to {largest} in a channel; the first at ({x}, {y}): {a:?}, the \
                 reference {b:?}"
            )
        })
    }
}

/// What is wrong with the image at `path` against `reference`: unreadable, or other pixels.
fn image_problem(path: &std::path::Path, reference: &Image) -> Option<String> {
    match Image::read(path) {
        Ok(image) => image
            .differences(reference)
            .map(|d| format!("the image is not the reference's: {d}")),
        Err(e) => Some(format!("no image: {e}")),
    }
}

/// `scene` (under `tests/integration/apps`) rendered on `display` into `home/<name>.png`, with the
/// validation layer alone or through Blackbox with `vars`.
fn render(
    home: &TempDir,
    display: &str,
    scene: &str,
    name: &str,
    blackbox: Option<&[(&str, &str)]>,
) -> (Run, std::path::PathBuf) {
    let apps = workspace_root().join("tests/integration/apps");
    let image = home.path().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&image);
    // Debian's python3: PyQt6 is built for it.
    let mut cmd = vulkan_command("/usr/bin/python3", home.path());
    cmd.arg(apps.join("qt_quick_render.py"))
        .arg(apps.join(scene))
        .arg(&image)
        .env("DISPLAY", display)
        .env("QT_QPA_PLATFORM", "xcb");
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    (run(&mut cmd), image)
}

#[test]
fn a_qt_quick_3d_scene_renders_the_same_pixels_through_blackbox() {
    let xvfb = Xvfb::start();
    let home = TempDir::new("qt-quick");
    let (reference, image) = render(&home, &xvfb.display, SCENE, "reference", None);
    reference.assert_success().assert_validation_on();
    assert!(
        reference.stdout.contains("graphics api VulkanRhi frames 10"),
        "Qt did not render on Vulkan (is scripts/setup.sh's python3-pyqt6.qtquick3d installed?):\n{}",
        reference.dump()
    );
    let reference_image =
        Image::read(&image).unwrap_or_else(|e| panic!("{e}\n{}", reference.dump()));
    let settings: &[Setting] = &[
        ("defaults", &[], false),
        (
            "nan-ops-command",
            &[
                ("VK_BLACKBOX_NAN", "ops"),
                ("VK_BLACKBOX_BREADCRUMBS", "command"),
            ],
            false,
        ),
        (
            "nan-outputs-frames-loops-int",
            &[
                ("VK_BLACKBOX_NAN", "outputs"),
                ("VK_BLACKBOX_FRAMES", "8"),
                ("VK_BLACKBOX_LOOPS", "break"),
                ("VK_BLACKBOX_INT", "on"),
            ],
            false,
        ),
    ];
    compare_settings(reference, settings, |name, vars| {
        let (run, image) = render(&home, &xvfb.display, SCENE, name, Some(vars));
        let problem = image_problem(&image, &reference_image);
        (run, problem.into_iter().collect())
    });
}

/// A user's own bug: a Qt Quick 3D custom material whose shader normalizes a zero vector in one cell of a
/// grid (`apps/qt_quick_nan/`; Qt wraps the material's `MAIN` in a shader of its own and compiles it at
/// run time, without debug info). At NaN `ops` Blackbox names the operation, its operands, the function
/// Qt made of the material's code and a pixel of that cell, and the image is the one rendered without
/// Blackbox.
#[test]
fn a_nan_in_a_qt_quick_3d_custom_material_is_named_with_its_function_and_pixel() {
    const NAN_SCENE: &str = "qt_quick_nan/scene.qml";
    let xvfb = Xvfb::start();
    let home = TempDir::new("qt-quick-nan");
    let (reference, image) = render(&home, &xvfb.display, NAN_SCENE, "reference", None);
    reference.assert_success().assert_validation_on();
    let reference_image =
        Image::read(&image).unwrap_or_else(|e| panic!("{e}\n{}", reference.dump()));
    let vars = [("VK_BLACKBOX_NAN", "ops")];
    let (run, image) = render(&home, &xvfb.display, NAN_SCENE, "nan-ops", Some(&vars));
    let mut problems = run.problems_against(&reference, "nan-ops", true);
    problems.extend(image_problem(&image, &reference_image));
    let warnings = run.warnings();
    if warnings.is_empty() {
        problems.push("no warning".into());
    }
    for w in &warnings {
        let named = w.contains("NaN from normalize() at instruction")
            && w.contains("operands (0, 0, 0)")
            && w.contains("(function qt_customMain(");
        // The cell of the zero vector: pixels x 128-151, y 104-127 (apps/qt_quick_nan/scene.qml).
        let pixel = w
            .split_once(", pixel (")
            .and_then(|(_, rest)| rest.split_once(')'))
            .and_then(|(xy, _)| xy.split_once(", "))
            .and_then(|(x, y)| Some((x.parse::<u32>().ok()?, y.parse::<u32>().ok()?)));
        let in_cell =
            pixel.is_some_and(|(x, y)| (128..152).contains(&x) && (104..128).contains(&y));
        if !named || !in_cell {
            problems.push(format!(
                "a warning that does not name the bug and its cell: {w}"
            ));
        }
    }
    fail_on_problems(&problems, &[("reference", reference), ("nan-ops", run)]);
}
