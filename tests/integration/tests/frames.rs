//! Frame capture end to end on lavapipe under Xvfb (`VK_BLACKBOX_FRAMES`, `VK_BLACKBOX_FLASH`): bb-testapp's
//! `frames` scenario presents 100 frames to a window, frame 57 going bad (a NaN in one pixel of its fragment
//! shader, or with `--flash` a white rectangle for that frame alone and no NaN). Each run must give exactly
//! one `frame` report naming frame 57, with a PNG beside it in which the mark is where the bad pixel (or
//! region) is, and the validation layer below (synchronization validation and best practices) must see
//! nothing a run without Blackbox does not. With capture off (the default) nothing changes: no report, and
//! the swapchain reaches the driver with the app's own usage (the fault layer below logs it).

use std::path::Path;

use blackbox_integration::*;
use blackbox_report::{Kind, Report};

/// bb-testapp's `frames`: the bad frame, the pixel that makes the NaN, the rectangle that flashes, the size.
const BAD_FRAME: u64 = 57;
const BAD_PIXEL: [u32; 2] = [200, 150];
const FLASH_RECT: [u32; 4] = [160, 120, 320, 240];
const SIZE: [u32; 2] = [640, 480];
const MAGENTA: [u8; 3] = [255, 0, 255];

/// A decoded PNG.
struct Png {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Png {
    fn read(path: &Path) -> Png {
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let decoder = png::Decoder::new(std::io::BufReader::new(file));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
        let info = reader.next_frame(&mut buf).expect("an image");
        assert_eq!(info.color_type, png::ColorType::Rgb, "{}", path.display());
        buf.truncate(info.buffer_size());
        Png {
            width: info.width,
            height: info.height,
            rgb: buf,
        }
    }

    fn get(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y * self.width + x) as usize * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// The magenta pixels.
    fn marked(&self) -> Vec<[u32; 2]> {
        let mut out = Vec::new();
        for y in 0..self.height {
            for x in 0..self.width {
                if self.get(x, y) == MAGENTA {
                    out.push([x, y]);
                }
            }
        }
        out
    }
}

/// `frames` with `args` through Blackbox with `vars` (the validation layer below), and the same without
/// Blackbox; both under one Xvfb. Checks that the app finished, Blackbox is active and added no validation
/// message, and returns the run with the reports it wrote.
fn frames_run(
    label: &str,
    args: &[&str],
    vars: &[(&str, &str)],
) -> (Run, Vec<(std::path::PathBuf, Report)>, TempDir) {
    let xvfb = Xvfb::start();
    let home = TempDir::new(label);
    let mut all_args = vec!["frames"];
    all_args.extend_from_slice(args);
    let reference =
        run(testapp_with_validation_only(&home, &all_args).env("DISPLAY", &xvfb.display));
    reference.assert_testapp_finished();
    assert!(
        reference.stdout.contains("scenario frames checksum"),
        "the reference run must present: {}",
        reference.dump()
    );
    let mut cmd = testapp_with_blackbox(&home, &all_args, vars);
    cmd.env("DISPLAY", &xvfb.display);
    let run = run(&mut cmd);
    run.assert_testapp_finished()
        .assert_validation_messages_unchanged(&reference);
    assert_eq!(run.start_up_lines(), 1, "{}", run.dump());
    let reports = reports_in(&home.path().join("reports"));
    (run, reports, home)
}

#[test]
fn a_nan_frame_gives_one_report_with_the_bad_pixel_marked() {
    let (run, reports, _home) = frames_run(
        "frames-nan",
        &[],
        &[("VK_BLACKBOX_FRAMES", "8"), ("VK_BLACKBOX_NAN", "outputs")],
    );
    assert_eq!(reports.len(), 1, "exactly one report\n{}", run.dump());
    let (dir, report) = &reports[0];
    assert_eq!(report.kind, Kind::Frame, "{}", run.dump());
    let frame = report.frame.as_ref().expect("a frame section");
    assert_eq!(frame.number, BAD_FRAME, "{frame:#?}");
    assert_eq!(frame.trigger, "shader-error");
    assert_eq!(frame.attribution, None, "one frame in flight: exact");
    assert_eq!(frame.errors.len(), 1, "{frame:#?}");
    assert_eq!(frame.errors[0].kind, "nan");
    assert_eq!(frame.errors[0].pixels, vec![BAD_PIXEL]);
    // The frames around it, this one among them with its error.
    let this = frame
        .frames
        .iter()
        .find(|f| f.number == BAD_FRAME)
        .expect("the frame's summary");
    assert_eq!((this.draws, this.shader_errors), (1, 1), "{this:#?}");
    assert!(
        frame.frames.iter().any(|f| f.number < BAD_FRAME),
        "{frame:#?}"
    );
    assert!(frame
        .frames
        .iter()
        .all(|f| f.number == BAD_FRAME || f.shader_errors == 0));
    // The draw that ran the shader.
    assert_eq!(frame.draws.len(), 1, "{frame:#?}");
    let draw = &frame.draws[0];
    assert_eq!(draw.command, "vkCmdDraw");
    assert_eq!(draw.labels, vec!["frame".to_owned(), "scene".to_owned()]);
    assert_eq!(
        draw.pipeline.as_ref().and_then(|p| p.name.as_deref()),
        Some("frames-scene")
    );

    // The image: the frame's, with a ring around the bad pixel, the pixel itself left as the GPU wrote it
    // (a NaN stored to a UNORM image is 0).
    assert_eq!(frame.images.len(), 1, "{frame:#?}");
    let image = &frame.images[0];
    assert_eq!(
        (image.frame, image.file.as_str()),
        (BAD_FRAME, "frame-57.png")
    );
    assert_eq!(image.marked_pixels, vec![BAD_PIXEL]);
    let png = Png::read(&dir.join(&image.file));
    assert_eq!([png.width, png.height], SIZE);
    let marked = png.marked();
    assert!(!marked.is_empty(), "no mark in {}", image.file);
    let n = marked.len() as u64;
    let centre = [
        marked.iter().map(|p| u64::from(p[0])).sum::<u64>() / n,
        marked.iter().map(|p| u64::from(p[1])).sum::<u64>() / n,
    ];
    assert_eq!(centre, BAD_PIXEL.map(u64::from), "the mark's centre");
    let [x, y] = BAD_PIXEL;
    assert_eq!(png.get(x, y), [0, 0, 0], "the bad pixel, as presented");
    for (nx, ny) in [(x - 2, y), (x + 2, y), (x, y - 2), (x, y + 2)] {
        assert_ne!(
            png.get(nx, ny),
            [0, 0, 0],
            "({nx}, {ny}) is a good pixel, unmarked"
        );
        assert_ne!(png.get(nx, ny), MAGENTA, "({nx}, {ny}) is inside the ring");
    }

    // The text names the image by its path and lists the draw; so does `blackbox report`.
    let text = std::fs::read_to_string(dir.join("report.txt")).expect("report.txt");
    let path = dir.join("frame-57.png").display().to_string();
    assert!(text.contains(&path), "{text}");
    assert!(
        text.contains("draws of frame 57 that ran the shader that reported"),
        "{text}"
    );
    assert!(
        text.contains("frame > scene > [1] vkCmdDraw(3, 1, 0, 0)"),
        "{text}"
    );
    let shown = std::process::Command::new(blackbox())
        .arg("report")
        .arg(dir)
        .output()
        .expect("blackbox report");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(&path) && shown.contains("Frame 57 (shader-error)"),
        "{shown}"
    );
    assert!(
        run.stderr.contains("(frame 57)"),
        "the log line names the frame\n{}",
        run.dump()
    );
}

#[test]
fn a_one_frame_flash_gives_one_report_with_the_frames_around_it() {
    let (run, reports, _home) =
        frames_run("frames-flash", &["--flash"], &[("VK_BLACKBOX_FLASH", "on")]);
    assert_eq!(reports.len(), 1, "exactly one report\n{}", run.dump());
    let (dir, report) = &reports[0];
    assert_eq!(report.kind, Kind::Frame);
    let frame = report.frame.as_ref().expect("a frame section");
    assert_eq!(
        (frame.number, frame.trigger.as_str()),
        (BAD_FRAME, "flash"),
        "{frame:#?}"
    );
    assert!(frame.errors.is_empty(), "no shader error: {frame:#?}");
    let flash = frame.flash.as_ref().expect("the flash");
    // The region: whole grid cells around the rectangle.
    let cell = [SIZE[0] / flash.grid[0], SIZE[1] / flash.grid[1] + 1];
    let [x0, y0, x1, y1] = flash.region;
    assert!(
        x0 <= FLASH_RECT[0] && y0 <= FLASH_RECT[1] && x1 >= FLASH_RECT[2] && y1 >= FLASH_RECT[3],
        "{flash:#?}"
    );
    assert!(
        FLASH_RECT[0] - x0 < cell[0]
            && FLASH_RECT[1] - y0 < cell[1]
            && x1 - FLASH_RECT[2] < cell[0]
            && y1 - FLASH_RECT[3] < cell[1],
        "{flash:#?}"
    );
    let [before, during, after] = flash.luminance;
    assert!(
        during - before >= flash.threshold && during - after >= flash.threshold,
        "{flash:#?}"
    );
    // The frame before and after, with their images; it flashed in its own only.
    let roles: Vec<(u64, &str)> = frame
        .images
        .iter()
        .map(|i| (i.frame, i.role.as_str()))
        .collect();
    assert_eq!(
        roles,
        vec![(57, "frame"), (56, "before"), (58, "after")],
        "{frame:#?}"
    );
    let numbers: Vec<u64> = frame.frames.iter().map(|f| f.number).collect();
    assert!(
        numbers.contains(&56) && numbers.contains(&57) && numbers.contains(&58),
        "{numbers:?}"
    );
    let inside = [
        (FLASH_RECT[0] + FLASH_RECT[2]) / 2,
        (FLASH_RECT[1] + FLASH_RECT[3]) / 2,
    ];
    for image in &frame.images {
        let png = Png::read(&dir.join(&image.file));
        let pixel = png.get(inside[0], inside[1]);
        assert_eq!(
            pixel == [255, 255, 255],
            image.frame == BAD_FRAME,
            "{}: {pixel:?}",
            image.file
        );
        // The region is outlined just outside its edges.
        assert_eq!(png.get(x0 - 1, (y0 + y1) / 2), MAGENTA, "{}", image.file);
        assert_eq!(image.marked_region, Some(flash.region));
    }
    let jump = frame
        .frames
        .iter()
        .find(|f| f.number == BAD_FRAME)
        .and_then(|f| f.luminance_jump);
    assert!(jump.is_some_and(|j| j >= flash.threshold), "{frame:#?}");
}

#[test]
fn frame_capture_off_changes_nothing() {
    // The default, with a NaN frame and NaN checks on: the NaN is logged, no frame report, and the swapchain
    // reaches the driver (the fault layer below logs it) with the app's usage alone. With capture on, the
    // same log shows TRANSFER_SRC added (the check can fail).
    let xvfb = Xvfb::start();
    for (frames, usage) in [
        (None, "imageUsage COLOR_ATTACHMENT\n"),
        (Some("8"), "imageUsage TRANSFER_SRC | COLOR_ATTACHMENT\n"),
    ] {
        let home = TempDir::new("frames-off");
        let manifests = home.path().join("manifests");
        write_manifest(&manifests.join("blackbox"), "VkLayer_blackbox.json");
        write_fault_manifest(&manifests.join("fault"));
        let mut cmd = vulkan_command(testapp(), home.path());
        cmd.arg("frames")
            .env("DISPLAY", &xvfb.display)
            .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
            .env("VK_BLACKBOX_NAN", "outputs")
            .env("BB_FAULT_LOG_SWAPCHAINS", "1");
        if let Some(n) = frames {
            cmd.env("VK_BLACKBOX_FRAMES", n);
        }
        enable_with_fault_layer(
            &mut cmd,
            &manifests.join("blackbox"),
            &manifests.join("fault"),
        );
        let run = run(&mut cmd);
        run.assert_testapp_finished()
            .assert_no_validation_messages();
        assert!(
            run.stderr
                .contains(&format!("[fault-layer] vkCreateSwapchainKHR: {usage}")),
            "VK_BLACKBOX_FRAMES={frames:?}: the driver gets {usage:?}\n{}",
            run.dump()
        );
        assert!(
            run.stderr.contains("NaN in output at frames.frag"),
            "{}",
            run.dump()
        );
        let reports = reports_in(&home.path().join("reports"));
        match frames {
            None => {
                assert!(
                    reports.is_empty(),
                    "no report with capture off\n{}",
                    run.dump()
                );
                assert!(!run.stderr.contains("frame capture"), "{}", run.dump());
            }
            Some(_) => assert_eq!(reports.len(), 1, "{}", run.dump()),
        }
    }
}

/// `program` with `args` under one Xvfb, without Blackbox (the validation layer alone), then through it
/// with flash detection on (and so frame capture) and the log at `log`: `ended` checks how each run ended.
/// Through Blackbox: every validation id as often as without it, capture and flash detection on, `copied` logged (the
/// copies ran), and no report (nothing flashes).
fn flash_detection_adds_nothing(
    label: &str,
    program: &str,
    args: &[&str],
    ended: impl Fn(&Run),
    log: &str,
    copied: &str,
) {
    let xvfb = Xvfb::start();
    let home = TempDir::new(label);
    let mut reference = vulkan_command(program, home.path());
    reference
        .args(args)
        .env("DISPLAY", &xvfb.display)
        .env("VK_INSTANCE_LAYERS", VALIDATION);
    let reference = run(&mut reference);
    ended(&reference);
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command(program, home.path());
    cmd.args(args)
        .env("DISPLAY", &xvfb.display)
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
        .env("VK_BLACKBOX_FLASH", "on")
        .env("VK_BLACKBOX_LOG", log);
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    ended(&run);
    run.assert_validation_messages_unchanged(&reference);
    assert!(
        run.stderr
            .contains("frame capture (8 frames, flash detection)"),
        "{}",
        run.dump()
    );
    assert!(
        run.stderr.contains(copied),
        "the copies ran\n{}",
        run.dump()
    );
    assert!(
        reports_in(&home.path().join("reports")).is_empty(),
        "{}",
        run.dump()
    );
}

#[test]
fn vkcube_with_frame_capture_and_flash_detection_adds_nothing() {
    // A real app (several frames in flight, its own synchronization): a spinning cube has no flash, so no
    // report; the copies and flash passes add no validation message.
    flash_detection_adds_nothing(
        "frames-vkcube",
        "vkcube",
        &["--c", "60"],
        |run| {
            run.assert_success();
        },
        "info",
        "GPU time per present",
    );
}

#[test]
fn vkd3d_gears_with_frame_capture_and_flash_detection_adds_nothing() {
    // A Direct3D 12 app through vkd3d (Debian's vkd3d-demos), which presents with no wait semaphore: the
    // copy's submit must then wait for none, with no wait array (best practices warns about one with a
    // count of 0, once per frame). The demo draws until it is stopped: each run is 3 s, then SIGTERM, and
    // the swapchain is never destroyed, so the debug line of the first copy says the copies ran.
    flash_detection_adds_nothing(
        "frames-vkd3d",
        "timeout",
        &["-s", "TERM", "3", "vkd3d-gears"],
        |run| {
            // timeout(1) exits 124 when it had to stop the program: the demo ran the whole 3 s.
            assert_eq!(run.status.code(), Some(124), "{}", run.dump());
        },
        "debug",
        "each present is copied",
    );
}
