//! `VK_BLACKBOX_SKIP`: work the app records that Blackbox does not pass to the driver, to find by
//! elimination which pass corrupts memory or hangs the GPU (by hand, or with `blackbox bisect`).
//!
//! Only work is skipped, so every command buffer stays valid: draws, dispatches, trace-rays, copies and
//! clears. State commands, barriers, queries and render-pass bounds always go down. A skipped command is
//! logged as recorded, with its `skipped` flag, and has no marker unit of its own.
//!
//! Selectors, comma-separated:
//! - `label:TEXT`: inside a debug-label region of the command buffer whose name contains TEXT;
//!   `label=TEXT`: whose innermost open label is TEXT (not the regions inside it: so such selectors never
//!   overlap, as `blackbox bisect` needs);
//! - `pipeline:NAME`: the bound pipeline's debug name is NAME (a pipeline without one by what log lines call
//!   it, its stages and shader ids: `compute 530b2c1d7b634919`);
//! - `shader:ID|FILE|ENTRY`: a shader of the bound pipeline has an id starting with it, or a source file or
//!   entry point of that name (as `VK_BLACKBOX_SHADERS` matches);
//! - `command:N` or `command:N-M`: the command the report shows as `[N]` (to `[M]`) in its command buffer.
//!
//! `@FILE` instead of a list reads the selectors from FILE, one per line (so that label names may hold
//! commas): `blackbox bisect` passes its choices so.

use std::fmt;

use crate::matched::Matched;

/// One selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `label:TEXT`.
    Label(String),
    /// `label=TEXT`.
    LabelExact(String),
    /// `pipeline:NAME`.
    Pipeline(String),
    /// `shader:ID|FILE|ENTRY`.
    Shader(String),
    /// `command:N-M` (N-N for one), the report's command indices in a command buffer.
    Commands(u32, u32),
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Label(t) => write!(f, "label:{t}"),
            Selector::LabelExact(t) => write!(f, "label={t}"),
            Selector::Pipeline(n) => write!(f, "pipeline:{n}"),
            Selector::Shader(s) => write!(f, "shader:{s}"),
            Selector::Commands(a, b) if a == b => write!(f, "command:{a}"),
            Selector::Commands(a, b) => write!(f, "command:{a}-{b}"),
        }
    }
}

/// What a selector accepts, for warnings.
pub const ACCEPTED: &str =
    "label:TEXT, label=TEXT, pipeline:NAME, shader:ID|FILE|ENTRY, command:N or command:N-M";

impl Selector {
    /// One selector; the reason when it is not one.
    pub fn parse(text: &str) -> Result<Selector, String> {
        if let Some(name) = text.strip_prefix("label=") {
            if name.is_empty() {
                return Err(format!("`{text}` has nothing to match"));
            }
            return Ok(Selector::LabelExact(name.to_owned()));
        }
        let (kind, value) = text
            .split_once(':')
            .ok_or_else(|| format!("`{text}` has no kind"))?;
        let value = value.trim();
        if value.is_empty() {
            return Err(format!("`{text}` has nothing to match"));
        }
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{text}`: `{s}` is not a command index"))
        };
        Ok(match kind.trim() {
            "label" => Selector::Label(value.to_owned()),
            "pipeline" => Selector::Pipeline(value.to_owned()),
            "shader" => Selector::Shader(value.to_owned()),
            "command" => match value.split_once('-') {
                None => {
                    let n = number(value)?;
                    Selector::Commands(n, n)
                }
                Some((a, b)) => {
                    let (a, b) = (number(a)?, number(b)?);
                    if a > b {
                        return Err(format!("`{text}`: the range runs backwards"));
                    }
                    Selector::Commands(a, b)
                }
            },
            other => return Err(format!("`{text}`: `{other}` is not a kind")),
        })
    }
}

/// Every selector of `VK_BLACKBOX_SKIP` (a comma-separated list, or `@FILE`: one per line), and a warning
/// per bad one (which then skips nothing), each starting with `what` (the setting and its source).
pub fn parse_list(text: &str, what: &str) -> (Vec<Selector>, Vec<String>) {
    let mut selectors = Vec::new();
    let mut warnings = Vec::new();
    let from_file;
    let parts: Vec<&str> = match text.trim().strip_prefix('@') {
        Some(path) => {
            from_file = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) => {
                    warnings.push(format!(
                        "{what}: cannot read the file {path} ({e}); nothing is skipped"
                    ));
                    return (selectors, warnings);
                }
            };
            from_file.lines().collect()
        }
        None => text.split(',').collect(),
    };
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        match Selector::parse(part) {
            Ok(s) => selectors.push(s),
            Err(why) => warnings.push(format!(
                "{what}: {why}; accepted: {ACCEPTED}; nothing is skipped for it"
            )),
        }
    }
    (selectors, warnings)
}

/// The selectors in force, split by when they can be decided.
#[derive(Debug, Clone, Default)]
pub struct Skip {
    /// All of them, as given, with how often each matched a label, pipeline or command.
    pub selectors: Matched<Selector>,
}

impl Skip {
    /// These selectors, none matched yet.
    pub fn new(selectors: Vec<Selector>) -> Skip {
        Skip {
            selectors: Matched::new(selectors),
        }
    }

    /// Whether anything is to be skipped at all.
    pub fn is_empty(&self) -> bool {
        self.selectors.is_empty()
    }

    /// Whether some selector matches (`matches`), each one that does counted.
    fn any(&self, matches: impl Fn(&Selector) -> bool) -> bool {
        self.selectors.any(matches)
    }

    /// Whether a label region of this name skips the work inside it.
    pub fn label(&self, name: &str) -> bool {
        self.any(|s| matches!(s, Selector::Label(t) if name.contains(t.as_str())))
    }

    /// Whether work whose innermost open label has this name is skipped (`label=`).
    pub fn innermost_label(&self, name: &str) -> bool {
        self.any(|s| matches!(s, Selector::LabelExact(t) if name == t))
    }

    /// Whether the command with this index in its command buffer is skipped by a `command:` selector.
    pub fn command(&self, index: u32) -> bool {
        self.any(|s| matches!(s, Selector::Commands(a, b) if (*a..=*b).contains(&index)))
    }

    /// Whether a pipeline of this debug name (else this description: its stages and shader ids) and these
    /// shaders (id, entry points and source files, as `VK_BLACKBOX_SHADERS` matches) is skipped.
    pub fn pipeline<'a>(
        &self,
        name: Option<&str>,
        described: &str,
        shaders: impl Iterator<Item = (&'a str, &'a [String])> + Clone,
    ) -> bool {
        self.any(|s| match s {
            Selector::Pipeline(n) => name.unwrap_or(described) == n.as_str(),
            Selector::Shader(wanted) => shaders.clone().any(|(id, names)| {
                id.starts_with(wanted.as_str())
                    || names.iter().any(|n| {
                        n == wanted || n.rsplit(['/', '\\']).next() == Some(wanted.as_str())
                    })
            }),
            _ => false,
        })
    }

    /// The selectors that have matched nothing so far.
    pub fn unmatched(&self) -> Vec<&Selector> {
        self.selectors.unmatched()
    }

    /// Whether any selector depends on the bound pipeline.
    pub fn by_pipeline(&self) -> bool {
        self.selectors
            .entries
            .iter()
            .any(|s| matches!(s, Selector::Pipeline(_) | Selector::Shader(_)))
    }

    /// `label:shadow, command:5-7`, for the start-up line.
    pub fn describe(&self) -> String {
        self.selectors
            .entries
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_and_bad_ones_warn() {
        let (s, w) = parse_list("label:shadow, command:7, command:3-5, pipeline:Sky, shader:1f3a, x:1, command:5-3, label:", "VK_BLACKBOX_SKIP");
        assert_eq!(
            s,
            [
                Selector::Label("shadow".into()),
                Selector::Commands(7, 7),
                Selector::Commands(3, 5),
                Selector::Pipeline("Sky".into()),
                Selector::Shader("1f3a".into())
            ]
        );
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].contains("`x:1`") && w[0].contains("nothing is skipped for it"),
            "{}",
            w[0]
        );
        let skip = Skip::new(s);
        assert!(skip.label("shadow pass") && !skip.label("sky"));
        assert!(skip.command(4) && skip.command(7) && !skip.command(6));
        let names = ["sky.frag".to_owned()];
        assert!(skip.pipeline(Some("Sky"), "", std::iter::empty()));
        assert!(skip.pipeline(None, "", [("1f3a99", &names[..])].into_iter()));
        assert!(!skip.pipeline(Some("Ground"), "", [("aaaa", &names[..])].into_iter()));
        assert_eq!(
            skip.describe(),
            "label:shadow, command:7, command:3-5, pipeline:Sky, shader:1f3a"
        );
    }

    #[test]
    fn exact_labels_unnamed_pipelines_and_selector_files() {
        let dir = std::env::temp_dir().join(format!("bb-skip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("skip.txt");
        std::fs::write(
            &file,
            "label=Shadow, cascade 1\n\npipeline:compute 530b2c1d7b634919\n",
        )
        .unwrap();
        let (s, w) = parse_list(&format!("@{}", file.display()), "VK_BLACKBOX_SKIP");
        assert!(w.is_empty(), "{w:?}");
        let skip = Skip::new(s);
        assert_eq!(skip.unmatched().len(), 2, "none matched yet");
        assert!(
            skip.innermost_label("Shadow, cascade 1")
                && !skip.innermost_label("Shadow, cascade 10")
        );
        assert!(!skip.label("Shadow, cascade 1"), "label= is not label:");
        assert!(skip.pipeline(None, "compute 530b2c1d7b634919", std::iter::empty()));
        assert!(!skip.pipeline(
            Some("named"),
            "compute 530b2c1d7b634919",
            std::iter::empty()
        ));
        assert!(skip.unmatched().is_empty(), "both matched");
        let skip = Skip::new(vec![
            Selector::Commands(3, 5),
            Selector::Label("sky".into()),
        ]);
        assert!(skip.command(4) && !skip.label("shadow"));
        assert_eq!(skip.unmatched(), [&Selector::Label("sky".into())]);
        let (s, w) = parse_list(
            &format!("@{}", dir.join("missing").display()),
            "VK_BLACKBOX_SKIP",
        );
        assert!(
            s.is_empty() && w[0].contains("cannot read the file"),
            "{w:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
