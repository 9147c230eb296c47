//! What `blackbox bisect` can skip: the layer, given `VK_BLACKBOX_SUSPECTS=FILE`, appends one JSON line per
//! suspect the first time a command buffer records work under it; the CLI reads them back. One model for
//! both sides.

use serde::{Deserialize, Serialize};

/// What a suspect is, and how `--by` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuspectKind {
    /// The innermost debug label around the work.
    Label,
    /// The bound pipeline.
    Pipeline,
    /// One shader of the bound pipeline.
    Shader,
    /// The work command's index in its command buffer.
    Command,
}

impl SuspectKind {
    /// The word of `--by` and of the JSON.
    pub fn word(self) -> &'static str {
        match self {
            SuspectKind::Label => "label",
            SuspectKind::Pipeline => "pipeline",
            SuspectKind::Shader => "shader",
            SuspectKind::Command => "command",
        }
    }
}

/// One suspect: the `VK_BLACKBOX_SKIP` selector that skips it and how a report names the first work seen
/// under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspect {
    /// What it is.
    pub kind: SuspectKind,
    /// The selector that skips it: `label=shadow pass`, `pipeline:sky`, `shader:1f3a...`, `command:12`.
    pub selector: String,
    /// The label path of the first work seen under it, outermost first.
    pub labels: Vec<String>,
    /// That work: `[12] vkCmdDispatch`.
    pub command: String,
    /// Its pipeline as log lines name it (`"sky"`, or its stages and shader ids), if any.
    pub pipeline: Option<String>,
    /// The pipeline's shaders: `530b2c1d7b634919 (hang.comp)`.
    pub shaders: Vec<String>,
}

impl Suspect {
    /// One line of the suspects file.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The suspects of a file's text; lines that are not suspects (a line cut by a crash) are left out.
    pub fn read_all(text: &str) -> Vec<Suspect> {
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The suspect as a report would name it: `label path > [12] vkCmdDispatch, pipeline "x" (shaders ...)`.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        if !self.labels.is_empty() {
            out.push_str(&self.labels.join(" > "));
            out.push_str(" > ");
        }
        out.push_str(&self.command);
        if let Some(p) = &self.pipeline {
            out.push_str(", pipeline ");
            out.push_str(p);
        }
        if !self.shaders.is_empty() {
            out.push_str(" [shaders: ");
            out.push_str(&self.shaders.join(", "));
            out.push(']');
        }
        out
    }
}
