//! The text form of a report, for people: what happened, where the GPU was, inside the app's labels.
//!
//! Long command buffers are shown around the interesting commands (in flight, last finished, first
//! unfinished) with the runs in between summarised; the JSON keeps everything.
//!
//! The report may come from anywhere (the CLI renders files it did not write): every string in it is
//! shown through [`untrusted::shown`], and the work done is bounded by the report's size whatever it holds
//! (each label scope and each secondary is shown once, indentation and parameter lists are capped).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::untrusted::shown;
use crate::{CommandBuffer, Frame, Location, Pipeline, Report, State};

/// Commands shown on each side of an interesting one.
const CONTEXT: u32 = 8;
/// Command buffers up to this many commands are shown whole.
const SHOW_ALL: usize = 64;
/// Columns of indentation shown at most: deeper scopes and secondaries line up at this column.
const MAX_INDENT: usize = 64;
/// Parameters shown per command at most (Blackbox records a few; a longer list is from elsewhere).
const MAX_PARAMS: usize = 16;

/// Styles for a terminal, or none.
#[derive(Clone, Copy)]
struct Style {
    color: bool,
}

impl Style {
    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn state(self, s: State) -> String {
        let code = match s {
            State::Finished => "32",
            State::InFlight => "1;33",
            State::NotStarted => "2",
            State::Unknown => "36",
        };
        self.paint(code, s.describe())
    }
    fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
    fn alert(self, text: &str) -> String {
        self.paint("1;31", text)
    }
}

/// Renders `report` as text; `color` adds ANSI colours for a terminal. Image files are named as the
/// report names them (beside `report.json`); [`render_in`] gives their paths.
pub fn render(report: &Report, color: bool) -> String {
    render_in(report, color, None)
}

/// As [`render`], with the paths of the files beside the report in `folder` (the report's own).
pub fn render_in(report: &Report, color: bool, folder: Option<&Path>) -> String {
    let st = Style { color };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        st.alert(&format!("Blackbox report: {}", report.kind.describe()))
    );
    let _ = writeln!(out, "  reason     {}", shown(&report.reason));
    if let Some(resumed) = &report.resumed {
        let _ = writeln!(
            out,
            "  resumed    the work moved again {:.1} s after its last progress ({}): slow work, not a hang",
            resumed.after_ms as f64 / 1000.0,
            shown(&resumed.time)
        );
    }
    let _ = writeln!(out, "  time       {}", shown(&report.time));
    let _ = writeln!(
        out,
        "  app        {} (pid {}, {})",
        shown(&report.app.name),
        report.app.pid,
        shown(&report.app.executable)
    );
    let _ = writeln!(
        out,
        "  device     {} (Vulkan {}, {})",
        shown(&report.device.name),
        shown(&report.device.api_version),
        shown(&report.device.driver)
    );
    let _ = writeln!(
        out,
        "  blackbox   {} ({})",
        shown(&report.blackbox.version),
        shown(&report.blackbox.settings.join(" "))
    );
    let _ = writeln!(
        out,
        "  progress   {}, granularity {}",
        shown(&report.progress.markers),
        shown(&report.progress.granularity)
    );
    let _ = writeln!(out, "             {}", shown(&report.progress.coverage));
    for note in &report.notes {
        let _ = writeln!(out, "  note       {}", shown(note));
    }
    let _ = writeln!(
        out,
        "  signature  {}",
        st.bold(&shown(&report.signature).to_string())
    );
    if let Some(signal) = &report.signal {
        let address = signal
            .address
            .as_deref()
            .map(|a| format!(" at {}", shown(a)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  signal     {} ({}){address}, thread {}",
            shown(&signal.name),
            signal.number,
            shown(&signal.thread)
        );
    }

    if let Some(frame) = &report.frame {
        frame_section(&mut out, st, frame, folder);
    }

    let _ = writeln!(out);
    if report.in_flight.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            st.bold("In flight: no command is known to be in flight")
        );
    } else {
        let _ = writeln!(out, "{}", st.bold("In flight"));
        for l in &report.in_flight {
            location(&mut out, l);
            for e in still_looping(report, l) {
                let _ = writeln!(
                    out,
                    "    {} {}",
                    st.alert(&format!("still looping ({} invocations):", e.count)),
                    e.message
                );
            }
        }
    }
    if let Some(l) = &report.last_finished {
        let _ = writeln!(out, "{}", st.bold("Last finished"));
        location(&mut out, l);
    }

    let idle: Vec<String> = report
        .queues
        .iter()
        .filter(|q| q.submissions.is_empty())
        .map(|q| format!("{}.{}", q.family, q.index))
        .collect();
    for q in report.queues.iter().filter(|q| !q.submissions.is_empty()) {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Queue {}.{}: {} submission(s) not known to be finished (last finished: #{})",
                q.family,
                q.index,
                q.submissions.len(),
                q.completed
            ))
        );
        for s in &q.submissions {
            let _ = writeln!(
                out,
                "  submission #{} ({}, {} ms ago): {}",
                s.seq,
                shown(&s.command),
                s.age_ms,
                st.state(s.state)
            );
            for cb in &s.command_buffers {
                command_buffer(&mut out, st, cb, 2);
            }
        }
    }

    if !idle.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            st.bold(&format!("Queues with nothing pending: {}", idle.join(", ")))
        );
    }

    let _ = writeln!(out);
    if report.shader_errors.is_empty() {
        let _ = writeln!(out, "{}", st.bold("Shader errors: none reported"));
    } else {
        let _ = writeln!(out, "{}", st.bold("Shader errors"));
        for e in &report.shader_errors {
            let _ = writeln!(out, "  {} x{}", shown(&e.message), e.count);
        }
    }
    if let Some(f) = &report.device_fault {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", st.bold("Device fault (VK_EXT_device_fault)"));
        if !f.description.is_empty() {
            let _ = writeln!(out, "  {}", shown(&f.description));
        }
        for a in &f.addresses {
            let near = a
                .resource
                .as_deref()
                .map(|r| format!(" -> {}", shown(r)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} {} (±{} bytes){near}",
                shown(&a.kind),
                shown(&a.address),
                a.precision
            );
        }
        for v in &f.vendor_infos {
            let _ = writeln!(out, "  vendor: {}", shown(v));
        }
        if let Some(b) = &f.vendor_binary {
            let _ = writeln!(out, "  vendor binary: {}", shown(b));
        }
        if let Some(n) = &f.note {
            let _ = writeln!(out, "  note: {}", shown(n));
        }
    }
    if !report.checkpoints.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            st.bold("Checkpoints (VK_NV_device_diagnostic_checkpoints)")
        );
        for c in &report.checkpoints {
            let _ = writeln!(
                out,
                "  queue {} {}: {}",
                shown(&c.queue),
                shown(&c.stage),
                shown(&c.marker)
            );
        }
    }
    out
}

/// The frame a report is about: its images, errors with their pixels, the draws that ran the shader that
/// reported, and the frames around it.
fn frame_section(out: &mut String, st: Style, frame: &Frame, folder: Option<&Path>) {
    let _ = writeln!(out);
    let swapchain = frame
        .swapchain
        .as_ref()
        .map(|s| {
            format!(
                ", swapchain {} ({}x{} {})",
                s.handle, s.width, s.height, s.format
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}",
        st.bold(&format!(
            "Frame {} ({}){swapchain}",
            frame.number, frame.trigger
        ))
    );
    if let Some(a) = &frame.attribution {
        let _ = writeln!(out, "  attribution  {a}");
    }
    for image in &frame.images {
        let path = match folder {
            Some(f) => f.join(&image.file).display().to_string(),
            None => image.file.clone(),
        };
        let mut marks: Vec<String> = image
            .marked_pixels
            .iter()
            .map(|[x, y]| format!("pixel ({x}, {y})"))
            .collect();
        if let Some([x0, y0, x1, y1]) = image.marked_region {
            marks.push(format!("region ({x0}, {y0})-({x1}, {y1})"));
        }
        let marks = if marks.is_empty() {
            String::new()
        } else {
            format!(", marked: {}", marks.join(", "))
        };
        let _ = writeln!(
            out,
            "  image        {} (frame {}, {}{marks})",
            st.bold(&path),
            image.frame,
            image.role
        );
    }
    if let Some(f) = &frame.flash {
        let [x0, y0, x1, y1] = f.region;
        let [before, during, after] = f.luminance;
        let _ = writeln!(
            out,
            "  flash        region ({x0}, {y0})-({x1}, {y1}): mean luminance {before:.2} -> {during:.2} -> {after:.2} \
             (threshold {:.2}, grid {}x{})",
            f.threshold, f.grid[0], f.grid[1]
        );
    }
    for e in &frame.errors {
        let pixels = if e.pixels.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = e
                .pixels
                .iter()
                .map(|[x, y]| format!("({x}, {y})"))
                .collect();
            format!("\n    pixels {}", list.join(", "))
        };
        let _ = writeln!(out, "  error        {} x{}{pixels}", e.message, e.count);
    }
    if !frame.draws.is_empty() {
        let _ = writeln!(
            out,
            "  draws of frame {} that ran the shader that reported:",
            frame.number
        );
        for l in &frame.draws {
            location(out, l);
        }
    }
    for n in &frame.notes {
        let _ = writeln!(out, "  note         {n}");
    }
    if !frame.frames.is_empty() {
        let _ = writeln!(out, "  frames around it:");
        for f in &frame.frames {
            let labels = if f.labels.is_empty() {
                String::new()
            } else {
                format!(", labels {}", f.labels.join(", "))
            };
            let jump = f
                .luminance_jump
                .map(|j| format!(", luminance jump {j:+.2}"))
                .unwrap_or_default();
            let errors = if f.shader_errors > 0 {
                st.alert(&format!(", {} shader error(s)", f.shader_errors))
            } else {
                String::new()
            };
            let this = if f.number == frame.number {
                st.alert("  <- this frame")
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "    frame {}: {} submission(s), {} command buffer(s), {} commands, {} draws, {} dispatches{labels}{jump}{errors}{this}",
                f.number, f.submissions, f.command_buffers, f.commands, f.draws, f.dispatches
            );
        }
    }
}

fn pipeline_text(p: &Pipeline) -> String {
    let name = p
        .name
        .as_deref()
        .map(|n| format!("\"{}\"", shown(n)))
        .unwrap_or_else(|| shown(&p.handle).to_string());
    let shaders: Vec<String> = p
        .shaders
        .iter()
        .map(|s| {
            let sources = if s.sources.is_empty() {
                String::new()
            } else {
                format!(" {}", shown(&s.sources.join(", ")))
            };
            format!(
                "{} {}{sources}",
                shown(&s.id),
                shown(&s.entry_points.join(", "))
            )
        })
        .collect();

    if shaders.is_empty() {
        format!("pipeline {name}")
    } else {
        format!("pipeline {name} [shaders: {}]", shaders.join("; "))
    }
}

fn location(out: &mut String, l: &Location) {
    let labels = if l.labels.is_empty() {
        String::new()
    } else {
        let labels: Vec<String> = l.labels.iter().map(|l| shown(l).to_string()).collect();
        format!("{} > ", labels.join(" > "))
    };
    let _ = writeln!(
        out,
        "  queue {}, submission #{}, command buffer {}: {labels}[{}] {}",
        shown(&l.queue),
        l.submission,
        shown(&l.command_buffer),
        l.command_index,
        call(&l.command, &l.params)
    );
    if let Some(p) = &l.pipeline {
        let _ = writeln!(out, "    {}", pipeline_text(p));
    }
}

/// The loop budget records (`VK_BLACKBOX_LOOPS`) of the shaders an in-flight command's pipeline runs: the
/// loops its invocations are in.
fn still_looping<'a>(
    report: &'a Report,
    l: &'a Location,
) -> impl Iterator<Item = &'a crate::ShaderError> + 'a {
    report.shader_errors.iter().filter(move |e| {
        e.kind == "loop"
            && l.pipeline
                .as_ref()
                .is_some_and(|p| p.shaders.iter().any(|s| s.id == e.shader))
    })
}

fn call(name: &str, params: &[u64]) -> String {
    let mut p: Vec<String> = params
        .iter()
        .take(MAX_PARAMS)
        .map(|v| {
            if *v > 0xffff_ffff {
                format!("{v:#x}")
            } else {
                v.to_string()
            }
        })
        .collect();
    if params.len() > MAX_PARAMS {
        p.push(format!("… {} more", params.len() - MAX_PARAMS));
    }
    format!("{}({})", shown(name), p.join(", "))
}

/// `n` columns of indentation, at most [`MAX_INDENT`].
fn indent_of(n: usize) -> String {
    " ".repeat(n.min(MAX_INDENT))
}

fn command_buffer(out: &mut String, st: Style, cb: &CommandBuffer, indent: usize) {
    let pad = indent_of(indent);
    let name = cb
        .name
        .as_deref()
        .map(|n| format!(" \"{}\"", shown(n)))
        .unwrap_or_default();
    let units = cb
        .units
        .map(|u| {
            format!(
                " [markers: {} of {} units started, {} finished]",
                u.started, u.total, u.finished
            )
        })
        .unwrap_or_else(|| " [no markers]".to_owned());
    let _ = writeln!(
        out,
        "{pad}command buffer {}{name} ({}): {}{units}",
        shown(&cb.handle),
        shown(&cb.level),
        st.state(cb.state)
    );
    if let Some(note) = &cb.note {
        let _ = writeln!(out, "{pad}  note: {}", shown(note));
    }

    // Which commands to show: those near an interesting one.
    let mut interesting: Vec<u32> = cb
        .commands
        .iter()
        .filter(|c| c.state == State::InFlight || c.last_finished || c.first_unfinished)
        .map(|c| c.index)
        .collect();
    interesting.sort_unstable();
    let show_all = cb.commands.len() <= SHOW_ALL;
    let is_shown = |i: u32| {
        // The first interesting index at or after i - CONTEXT is the nearest candidate.
        let from = interesting.partition_point(|&k| k < i.saturating_sub(CONTEXT));
        show_all
            || interesting
                .get(from)
                .is_some_and(|&k| k <= i.saturating_add(CONTEXT))
    };

    // The scopes starting at each command index, in order; each is opened (or, inserted, shown) at most once.
    let mut starting: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, scope) in cb.scopes.iter().enumerate() {
        starting.entry(scope.first_command).or_default().push(i);
    }
    let mut used = vec![false; cb.scopes.len()];
    let mut secondaries_shown = vec![false; cb.secondaries.len()];
    let mut open: Vec<usize> = Vec::new();
    let mut skipped = 0u32;
    for c in &cb.commands {
        // Close scopes that ended, open the ones that start here.
        while let Some(&s) = open.last() {
            if cb.scopes[s].end_command <= c.index {
                open.pop();
            } else {
                break;
            }
        }
        for &i in starting.get(&c.index).map_or(&[][..], Vec::as_slice) {
            let scope = &cb.scopes[i];
            if used[i] {
                continue;
            }
            if !scope.inserted && scope.end_command > c.index {
                used[i] = true;
                flush_skipped(out, &pad, open.len(), &mut skipped);
                let depth = indent_of(2 * (open.len() + 1));
                let _ = writeln!(
                    out,
                    "{pad}{depth}{}: {}",
                    st.bold(&shown(&scope.name).to_string()),
                    st.state(scope.state)
                );
                open.push(i);
            } else if scope.inserted && is_shown(c.index) {
                used[i] = true;
                let depth = indent_of(2 * (open.len() + 1));
                let _ = writeln!(out, "{pad}{depth}· {}", shown(&scope.name));
            }
        }
        if !is_shown(c.index) {
            skipped += 1;
            continue;
        }
        flush_skipped(out, &pad, open.len(), &mut skipped);
        let depth = indent_of(2 * (open.len() + 1));
        let mut line = format!(
            "{pad}{depth}[{}] {}  {}",
            c.index,
            call(&c.name, &c.params),
            if c.skipped {
                st.paint("2", "skipped (VK_BLACKBOX_SKIP)")
            } else {
                st.state(c.state)
            }
        );
        if let Some(p) = &c.pipeline {
            line.push_str(&format!("  {}", pipeline_text(p)));
        }
        if c.last_finished {
            line.push_str(&st.alert("  <- last finished"));
        }
        if c.first_unfinished {
            line.push_str(&st.alert("  <- first unfinished"));
        }
        let _ = writeln!(out, "{line}");
        if let Some(first) = c.secondaries_from {
            let count = c.params.first().copied().unwrap_or(0) as usize;
            for (s, done) in cb
                .secondaries
                .iter()
                .zip(secondaries_shown.iter_mut())
                .skip(first as usize)
                .take(count)
            {
                if !std::mem::replace(done, true) {
                    command_buffer(out, st, s, indent + 2 * (open.len() + 2));
                }
            }
        }
    }
    flush_skipped(out, &pad, open.len(), &mut skipped);
    if cb.unlogged_commands > 0 {
        let _ = writeln!(
            out,
            "{pad}  … {} more command(s) beyond the log's limit",
            cb.unlogged_commands
        );
    }
}

fn flush_skipped(out: &mut String, pad: &str, depth: usize, skipped: &mut u32) {
    if *skipped > 0 {
        let _ = writeln!(
            out,
            "{pad}{}… {} command(s) not shown",
            indent_of(2 * (depth + 1)),
            skipped
        );
        *skipped = 0;
    }
}
