//! The crash signature: one bug, one signature, across runs and machines.
//!
//! It hashes what identifies the failing work, in words the app chose: the report's kind, the label path,
//! command and pipeline name of the first command in flight, and those of the last command finished.
//! Numbers are replaced by `#` first (frame 8112 and frame 9377 are one bug), and handles and parameters
//! are left out (they change every run). A `frame` report is named by what made the frame bad instead: the
//! first shader error's message up to its line, or `flash`.

use blackbox_engine::fnv1a64;

use crate::{Kind, Location, Report};

/// The signature hash: the engine's FNV-1a 64 ([`blackbox_engine::fnv1a64`], the function shader ids use),
/// under the name this module has always given it. New code calls the engine's directly.
pub use blackbox_engine::fnv1a64 as fnv1a;

/// The signature text and its 16-hex-digit hash.
pub fn compute(report: &Report) -> (String, String) {
    let mut parts = vec![kind_word(report.kind).to_owned()];
    // A frame report is about the frame, not about what the queues happened to be doing when it was written.
    if let Some(frame) = report.frame.as_ref().filter(|_| report.kind == Kind::Frame) {
        match frame.errors.first() {
            Some(e) => parts.push(format!("{}: {}", e.kind, without_values(&e.message))),
            None => parts.push(frame.trigger.clone()),
        }
        let text = normalize(&parts.join(" | "));
        let hash = format!("{:016x}", fnv1a64(text.as_bytes()));
        return (text, hash);
    }
    match report.in_flight.first() {
        Some(l) => parts.push(format!("in flight: {}", describe(l))),
        None => parts.push("in flight: none known".to_owned()),
    }
    if let Some(l) = &report.last_finished {
        parts.push(format!("last finished: {}", describe(l)));
    }
    if let Some(signal) = &report.signal {
        parts.push(format!("signal: {}", signal.name));
    }
    if report.kind == Kind::Assert {
        if let Some(e) = report.shader_errors.iter().find(|e| e.kind == "assert") {
            parts.push(format!(
                "assert: {} at {}",
                e.message,
                e.location.as_deref().unwrap_or("?")
            ));
        }
    }
    let text = normalize(&parts.join(" | "));
    let hash = format!("{:016x}", fnv1a64(text.as_bytes()));
    (text, hash)
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::DeviceLost => "device-lost",
        Kind::Hang => "hang",
        Kind::Signal => "signal",
        Kind::Assert => "assert",
        Kind::Frame => "frame",
    }
}

/// A shader error's message without its values and invocation, which differ between frames of one bug:
/// the text before the first `: ` after ` at ` (`NaN in output at nan.frag:30`).
fn without_values(message: &str) -> &str {
    let at = message.find(" at ").map_or(0, |i| i + 4);
    match message[at..].find(": ") {
        Some(i) => &message[..at + i],
        None => message,
    }
}

fn describe(l: &Location) -> String {
    let pipeline = l
        .pipeline
        .as_ref()
        .and_then(|p| p.name.clone())
        .unwrap_or_default();
    format!("{} / {} [{}]", l.labels.join(" > "), l.command, pipeline)
}

/// Replaces every run of digits (and hex handles) with `#`.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                chars.next();
            }
            out.push('#');
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_handles_are_normalized() {
        assert_eq!(
            normalize("frame 8112 > dispatch 3 / vkCmdDispatch 0x55d3a0"),
            "frame # > dispatch # / vkCmdDispatch #"
        );
        assert_eq!(normalize("vkCmdDrawIndexed"), "vkCmdDrawIndexed");
    }

    #[test]
    fn fnv_is_the_reference_function() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn frame_messages_lose_their_values() {
        assert_eq!(
            without_values("NaN in output at frames.frag:40: (NaN, 0.2, 0.3, 1), pixel (200, 150) in shader 1f"),
            "NaN in output at frames.frag:40"
        );
        assert_eq!(without_values("flash"), "flash");
    }

    #[test]
    fn the_signature_hash_is_pinned() {
        // Reports already written group with new ones only if this never changes.
        let text = normalize("hang | in flight: frame 12 / vkCmdDispatch [ParticleSim]");
        assert_eq!(
            text,
            "hang | in flight: frame # / vkCmdDispatch [ParticleSim]"
        );
        assert_eq!(
            format!("{:016x}", fnv1a64(text.as_bytes())),
            "33579a24c2f0969b"
        );
    }
}
