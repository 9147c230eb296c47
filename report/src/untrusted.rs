//! Text that came from outside Blackbox, shown safely: the one place the layer and the CLI escape it.
//!
//! Labels, object and pipeline names, `debugPrintf` output, shader source paths and the app's name are the
//! app's; a report file the CLI reads may come from anyone. Such text is shown (log lines, `report.txt`, the
//! CLI's output) through [`shown`]: control characters, escape sequences and the characters that reorder or
//! break lines on a terminal become visible escapes (`\x1b`, `\r`, `\u{202e}`), so nothing in it can move
//! the cursor, recolour or retitle the terminal, or forge a log line; past [`SHOW_BYTES`] it is cut, and the
//! cut is said. JSON keeps the exact text, escaped by serde, and [`to_json_pretty`] also writes the
//! characters a terminal would act on as `\u` escapes, so that printing the JSON is safe too.
//!
//! The layer keeps at most [`KEEP_BYTES`] of any one app string ([`keep_bytes`]), so a huge label costs a
//! report no more than that; the cut is said in the kept text itself.

use std::fmt;

/// The most bytes of one app-provided string the layer keeps (in its state, and so in reports).
pub const KEEP_BYTES: usize = 1024;
/// Strings up to this many bytes past [`KEEP_BYTES`] are kept whole: the cut note fits in it, so keeping a
/// kept string changes nothing.
const KEEP_SLACK: usize = 64;
/// The most bytes of one string shown; strings the layer kept are always shorter, whole with their cut note.
pub const SHOW_BYTES: usize = 2048;

/// Whether a terminal would act on `c` rather than print it: C0 controls, DEL, C1 controls (U+0080-U+009F:
/// some terminals take U+009B as CSI), the bidirectional formatting characters (they reorder what follows,
/// as in "Trojan Source") and the line and paragraph separators.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `text` as shown: escaped, and cut after [`SHOW_BYTES`] with the cut said. Formats without allocating.
pub fn shown(text: &str) -> Shown<'_> {
    Shown {
        text,
        newlines: false,
    }
}

/// Like [`shown`], but newlines stay and nothing is cut: for a multi-line text of Blackbox's own whose app
/// strings are already shown safely (a report's text), and as the log's last line of defence.
pub fn shown_lines(text: &str) -> Shown<'_> {
    Shown {
        text,
        newlines: true,
    }
}

/// A string formatted by [`shown`] or [`shown_lines`].
#[derive(Clone, Copy)]
pub struct Shown<'a> {
    text: &'a str,
    /// Newlines stay, and the text is not cut.
    newlines: bool,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (head, cut) = if self.newlines {
            (self.text, 0)
        } else {
            split_at_most(self.text, SHOW_BYTES)
        };
        let mut rest = head;
        while let Some(i) = rest
            .char_indices()
            .find(|&(_, c)| is_unsafe(c) && !(self.newlines && c == '\n'))
            .map(|(i, _)| i)
        {
            f.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or_default();
            escape(c, f)?;
            rest = &rest[i + c.len_utf8()..];
        }
        f.write_str(rest)?;
        if cut > 0 {
            write!(f, "… [{cut} more bytes not shown]")?;
        }
        Ok(())
    }
}

/// Writes the visible escape of an unsafe character.
fn escape(c: char, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match c {
        '\n' => f.write_str("\\n"),
        '\r' => f.write_str("\\r"),
        '\t' => f.write_str("\\t"),
        '\u{0}'..='\u{1f}' | '\u{7f}' => write!(f, "\\x{:02x}", c as u32),
        _ => write!(f, "\\u{{{:x}}}", c as u32),
    }
}

/// The longest head of `text` of at most `max` bytes that ends on a character boundary, and how many bytes
/// follow it.
fn split_at_most(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

/// An app's string as the layer keeps it: its bytes as UTF-8 (invalid sequences become U+FFFD), cut after
/// [`KEEP_BYTES`] with the cut said (`… [N more bytes cut by Blackbox]`). Control characters are kept:
/// they are escaped where the text is shown, and JSON keeps them exactly.
pub fn keep_bytes(bytes: &[u8]) -> String {
    if bytes.len() <= KEEP_BYTES + KEEP_SLACK {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    // Cut on a UTF-8 boundary where the bytes are valid there; an invalid tail becomes U+FFFD anyway.
    let mut end = KEEP_BYTES;
    while end > KEEP_BYTES - 3 && bytes.get(end).is_some_and(|b| b & 0xc0 == 0x80) {
        end -= 1;
    }
    let mut kept = String::from_utf8_lossy(&bytes[..end]).into_owned();
    kept.push_str(&format!(
        "… [{} more bytes cut by Blackbox]",
        bytes.len() - end
    ));
    kept
}

/// [`keep_bytes`] for text already in a `String`.
pub fn keep(text: String) -> String {
    if text.len() <= KEEP_BYTES + KEEP_SLACK {
        text
    } else {
        keep_bytes(text.as_bytes())
    }
}

/// Pretty JSON whose characters a terminal would act on are all `\u` escapes: serde escapes the C0
/// controls; this formatter adds DEL, the C1 controls, the bidirectional formatting characters and the
/// line separators. The value is the same; only its spelling differs.
pub fn to_json_pretty<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(4096);
    let mut serializer = serde_json::Serializer::with_formatter(
        &mut out,
        TerminalSafe(serde_json::ser::PrettyFormatter::new()),
    );
    value.serialize(&mut serializer)?;
    // The serializer writes UTF-8 only; the fallback is never taken.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// A JSON formatter that escapes what [`is_unsafe`] names beyond serde's own escapes.
struct TerminalSafe<F>(F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for TerminalSafe<F> {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some((i, c)) = rest.char_indices().find(|&(_, c)| is_unsafe(c)) {
            writer.write_all(&rest.as_bytes()[..i])?;
            write!(writer, "\\u{:04x}", c as u32)?;
            rest = &rest[i + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_escape_sequences_become_visible() {
        let label = "frame\x1b[2J\x1b]0;owned\x07 A\r\nB\tC\0D\x7f\u{9b}31m\u{202e}cba";
        assert_eq!(
            shown(label).to_string(),
            "frame\\x1b[2J\\x1b]0;owned\\x07 A\\r\\nB\\tC\\x00D\\x7f\\u{9b}31m\\u{202e}cba"
        );
        assert_eq!(shown_lines("a\nb\x1bc").to_string(), "a\nb\\x1bc");
        // Plain text, accents and CJK pass as they are.
        assert_eq!(shown("Übung 粒子 ok").to_string(), "Übung 粒子 ok");
        assert_eq!(shown("\u{fffd}").to_string(), "\u{fffd}");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_the_cut_is_said() {
        let long = "é".repeat(SHOW_BYTES); // 2 bytes each
        let text = shown(&long).to_string();
        assert!(text.starts_with("éé"));
        assert!(
            text.ends_with(&format!("… [{} more bytes not shown]", SHOW_BYTES)),
            "{}",
            &text[text.len() - 40..]
        );
        // A kept string is shown whole.
        let kept = keep("x".repeat(100_000));
        assert!(
            kept.ends_with("… [98976 more bytes cut by Blackbox]"),
            "{kept}"
        );
        assert_eq!(shown(&kept).to_string(), kept);
    }

    #[test]
    fn kept_bytes_replace_invalid_utf8_and_are_cut_once() {
        assert_eq!(keep_bytes(b"a\xffb\xc3"), "a\u{fffd}b\u{fffd}");
        assert_eq!(keep_bytes(b"\x1b[31m"), "\x1b[31m");
        let mut bytes = vec![b'a'; KEEP_BYTES - 1];
        bytes.extend_from_slice("é".as_bytes()); // crosses the limit: cut before it
        bytes.extend_from_slice(&[b't'; 100]);
        let kept = keep_bytes(&bytes);
        assert!(kept.starts_with(&"a".repeat(KEEP_BYTES - 1)));
        assert!(
            kept.ends_with("… [102 more bytes cut by Blackbox]"),
            "{kept}"
        );
        // Just past the limit is kept whole: the note would not be shorter than what it replaces.
        assert_eq!(keep("y".repeat(KEEP_BYTES + 10)).len(), KEEP_BYTES + 10);
        assert_eq!(keep(kept.clone()), kept, "keeping twice cuts once");
    }

    #[test]
    fn json_escapes_what_a_terminal_acts_on_and_keeps_the_value() {
        let value = serde_json::json!({"label": "a\x1b[31m\u{0}\r\n\u{7f}\u{9b}\u{202e}\u{2028}z"});
        let json = to_json_pretty(&value).unwrap();
        assert!(json.chars().all(|c| !is_unsafe(c) || c == '\n'), "{json:?}");
        assert!(
            json.contains(r#""a\u001b[31m\u0000\r\n\u007f\u009b\u202e\u2028z""#),
            "{json}"
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back, value);
    }
}
