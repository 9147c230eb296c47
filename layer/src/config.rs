//! Every Blackbox setting, parsed once, in this one place.
//!
//! Each setting is read from, in this order of precedence (the order of every layer built on the
//! Vulkan-Utility-Libraries' layer settings, the Khronos validation layer among them): its environment
//! variable (`VK_BLACKBOX_NAN`), `vk_layer_settings.txt` (`blackbox.nan = ops`, found as
//! [`crate::layer_settings`] says), the app's `VkLayerSettingsCreateInfoEXT` (layer `VK_LAYER_blackbox`,
//! setting `nan`), else its default. The first source that sets it decides it.
//!
//! A bad value never stops the app: it becomes a warning that names the source, the key, the value and what
//! is accepted, and the default is used. The warnings are kept until the log is set up, then logged.
//!
//! [`VARIABLES`] is the one list of settings: the README's table, the layer manifests' `features.settings`
//! (Vulkan Configurator's view of them, checked against this list by a test) and the parser all follow it.

use blackbox_engine::{LoopMode, NanLevel};
use std::ffi::OsString;
use std::path::PathBuf;

use crate::layer_settings::{AppSetting, SettingsFile};

/// The layer's name in `VkLayerSettingsCreateInfoEXT`.
pub const LAYER_NAME: &str = "VK_LAYER_blackbox";

/// One documented variable (the README's table mirrors this list).
pub struct Variable {
    /// The environment variable.
    pub name: &'static str,
    /// What it accepts.
    pub accepted: &'static str,
    /// What happens when it is unset.
    pub default: &'static str,
    /// The setting as Vulkan Configurator lists it; `None` for a variable that is not a layer setting.
    pub setting: Option<Setting>,
}

impl Variable {
    /// The setting's key: `nan` for `VK_BLACKBOX_NAN` (`blackbox.nan` in `vk_layer_settings.txt`).
    pub fn key(&self) -> String {
        self.name
            .strip_prefix("VK_BLACKBOX_")
            .unwrap_or(self.name)
            .to_ascii_lowercase()
    }
}

/// A layer setting as Vulkan Configurator shows it (a manifest's `features.settings` entry).
pub struct Setting {
    /// A short name.
    pub label: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its type and default, in the manifest's terms.
    pub kind: Kind,
    /// Shown only while the setting of this key has one of these values.
    pub depends_on: Option<(&'static str, &'static [&'static str])>,
}

/// A setting's type in the manifest, with the default written there: a value the parser reads as the
/// default (a test feeds each one through it), since Vulkan Configurator writes every value to the file.
pub enum Kind {
    /// One of these words (word, label, description).
    Enum {
        /// The words.
        values: &'static [(&'static str, &'static str, &'static str)],
        /// The default word.
        default: &'static str,
    },
    /// `true` / `false`.
    Bool {
        /// The default.
        default: bool,
    },
    /// A whole number.
    Int {
        /// The default.
        default: i64,
        /// The smallest accepted.
        min: i64,
        /// The largest accepted.
        max: i64,
        /// Its unit.
        unit: &'static str,
    },
    /// Text; empty is the default. `example` is a valid value other than the default (for the tests).
    Text {
        /// A valid value other than the default.
        example: &'static str,
    },
    /// A folder to write to; empty is the default.
    Folder {
        /// A valid value other than the default.
        example: &'static str,
    },
    /// A file to write to; empty is the default.
    File {
        /// A valid value other than the default.
        example: &'static str,
    },
}

/// Settings the loop settings need to be shown.
const WITH_LOOPS: Option<(&str, &[&str])> = Some(("loops", &["report", "break"]));
/// A setting that matters only with NaN checks on.
const WITH_NAN: Option<(&str, &[&str])> = Some(("nan", &["outputs", "ops"]));

/// The variables this build reads. `VK_BLACKBOX_ENABLE` / `VK_BLACKBOX_DISABLE` are the loader's.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "VK_BLACKBOX_OUTPUT",
        accepted: "a folder path (created if missing, mode 700)",
        default: "$XDG_STATE_HOME/blackbox, else ~/.local/state/blackbox",
        setting: Some(Setting {
            label: "Report folder",
            description: "Where crash and hang reports are written, created if missing; empty: \
                          $XDG_STATE_HOME/blackbox, else ~/.local/state/blackbox.",
            kind: Kind::Folder { example: "/tmp/blackbox-reports" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_LOG",
        accepted: "a level (off, error, warn, info, debug, trace) or env_logger directives for blackbox targets",
        default: "info",
        setting: Some(Setting {
            label: "Log level",
            description: "What the layer logs (the file also takes env_logger directives such as blackbox=debug).",
            kind: Kind::Enum {
                values: &[
                    ("off", "Off", "Nothing."),
                    ("error", "Error", "Errors: reports written, failures of the layer."),
                    ("warn", "Warning", "Also shader errors (asserts, NaN, printf) and bad settings."),
                    ("info", "Info", "Also the start-up line of each device."),
                    ("debug", "Debug", "Also what the layer enables and decides."),
                    ("trace", "Trace", "Everything."),
                ],
                default: "info",
            },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_LOG_FILE",
        accepted: "a file path (appended to; created mode 600)",
        default: "stderr",
        setting: Some(Setting {
            label: "Log file",
            description: "A file the log is appended to; empty: stderr.",
            kind: Kind::File { example: "/tmp/blackbox.log" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_LOG_REPEATS",
        accepted: "log lines per shader error site (failed assert, NaN, loop budget, integer check), 0 for no limit",
        default: "10",
        setting: Some(Setting {
            label: "Lines per shader error",
            description: "How many log lines one shader error site gets; later firings are counted (in reports and a closing line when the device is destroyed) but not logged. 0: no limit.",
            kind: Kind::Int { default: 10, min: 0, max: u32::MAX as i64, unit: "lines" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_ASSERT",
        accepted: "off, log, abort, crash",
        default: "log",
        setting: Some(Setting {
            label: "Shader asserts",
            description: "What a failing BB_ASSERT in a shader does.",
            kind: Kind::Enum {
                values: &[
                    ("off", "Off", "Asserts are not instrumented."),
                    ("log", "Log", "Each failing assert is logged with its values and source line."),
                    ("abort", "Abort", "The first failing assert writes a report and stops the app."),
                    ("crash", "Crash", "The failing invocation faults the device on purpose, for vendor crash tools."),
                ],
                default: "log",
            },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_PRINTF",
        accepted: "on, off",
        default: "on",
        setting: Some(Setting {
            label: "debugPrintf",
            description: "debugPrintf calls in shaders become log lines.",
            kind: Kind::Bool { default: true },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_NAN",
        accepted: "off, outputs, ops",
        default: "off",
        setting: Some(Setting {
            label: "NaN and Inf checks",
            description: "Report where shaders make NaN or Inf, with the operands and source line.",
            kind: Kind::Enum {
                values: &[
                    ("off", "Off", "No checks."),
                    ("outputs", "Outputs", "NaN or Inf in float values a shader writes out."),
                    ("ops", "Operations", "The first operation that turns finite inputs into NaN or Inf, and outputs."),
                ],
                default: "off",
            },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_NAN_RECORDS",
        accepted: "auto, end, fired",
        default: "auto",
        setting: Some(Setting {
            label: "NaN records",
            description: "When NaN checks write their records: when the invocation ends, or where they fire.",
            kind: Kind::Enum {
                values: &[
                    ("auto", "Automatic", "At the invocation's end on CPU devices (llvmpipe), where they fire on GPUs."),
                    ("end", "At the invocation's end", "One record per site and invocation, written when it ends; cheaper to compile on llvmpipe, lost if the invocation never ends."),
                    ("fired", "Where they fire", "Up to 8 records per site, written where the check fires."),
                ],
                default: "auto",
            },
            depends_on: WITH_NAN,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_LOOPS",
        accepted: "off, report, break",
        default: "off",
        setting: Some(Setting {
            label: "Loop budgets",
            description: "Count loop iterations per invocation and report a loop past its budget.",
            kind: Kind::Enum {
                values: &[
                    ("off", "Off", "Loops are not counted."),
                    ("report", "Report", "A loop past its budget records once per invocation and goes on."),
                    ("break", "Break", "It records and the invocation leaves its loops, so the GPU finishes."),
                ],
                default: "off",
            },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_LOOP_LIMIT",
        accepted: "iterations of one loop per invocation before it is reported, 0 for no iteration budget",
        default: "16777216 (2^24)",
        setting: Some(Setting {
            label: "Loop iteration budget",
            description: "Iterations of one loop per invocation before its budget fires; 0: none (then a time budget is needed).",
            kind: Kind::Int { default: 16_777_216, min: 0, max: u32::MAX as i64, unit: "iterations" },
            depends_on: WITH_LOOPS,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_LOOP_MS",
        accepted: "milliseconds an invocation may spend in loops (needs VK_KHR_shader_clock), 0 for none",
        default: "no time budget",
        setting: Some(Setting {
            label: "Loop time budget",
            description: "Milliseconds an invocation may spend in loops (needs VK_KHR_shader_clock); 0: none.",
            kind: Kind::Int { default: 0, min: 0, max: u32::MAX as i64, unit: "ms" },
            depends_on: WITH_LOOPS,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_INT",
        accepted: "off, on",
        default: "off",
        setting: Some(Setting {
            label: "Integer checks",
            description: "Report integer division by zero, INT_MIN / -1, oversized shifts and indices out of range.",
            kind: Kind::Bool { default: false },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_SHADERS",
        accepted: "comma-separated shader id prefixes or debug names",
        default: "every shader",
        setting: Some(Setting {
            label: "Shaders to instrument",
            description: "Comma-separated shader id prefixes or names (source file, entry point); empty: every shader.",
            kind: Kind::Text { example: "1f3a,particles.comp" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_DUMP_SHADERS",
        accepted: "a folder path (folders 700, files 600)",
        default: "no dump",
        setting: Some(Setting {
            label: "Dump shaders",
            description: "A folder for every shader module the app creates, instrumented too, with its site table; empty: none.",
            kind: Kind::Folder { example: "/tmp/blackbox-shaders" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_SKIP",
        accepted: "comma-separated selectors: label:TEXT, label=TEXT, pipeline:NAME, shader:ID|FILE|ENTRY, command:N or command:N-M; or @FILE",
        default: "nothing skipped",
        setting: Some(Setting {
            label: "Skip work",
            description: "Comma-separated selectors of work not passed to the driver: label:TEXT, label=TEXT, \
                          pipeline:NAME, shader:ID|FILE|ENTRY, command:N or command:N-M, or @FILE with one per \
                          line; empty: nothing skipped.",
            kind: Kind::Text { example: "label:shadow,command:3-5" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_FRAMES",
        accepted: "frames kept per device (0 turns frame capture off, at most 1000)",
        default: "0 (off)",
        setting: Some(Setting {
            label: "Frame capture",
            description: "Presented frames kept per device; a frame with a shader error (or a flash) is written as a \
                          frame report with its image; 0: off.",
            kind: Kind::Int { default: 0, min: 0, max: MAX_FRAMES as i64, unit: "frames" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_FLASH",
        accepted: "on, off",
        default: "off",
        setting: Some(Setting {
            label: "Flash detection",
            description: "Compare each presented frame with the one before at low resolution; a one-frame flash \
                          writes a frame report.",
            kind: Kind::Bool { default: false },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_BREADCRUMBS",
        accepted: "off, submit, pass, command",
        default: "command",
        setting: Some(Setting {
            label: "Breadcrumbs",
            description: "How finely GPU progress is tracked, so that a report names the work in flight.",
            kind: Kind::Enum {
                values: &[
                    ("off", "Off", "Recording is not intercepted at all."),
                    ("submit", "Submission", "Per submission."),
                    ("pass", "Render pass", "Per render pass and per command outside passes."),
                    ("command", "Command", "Per command (inside render passes only with VK_AMD_buffer_marker)."),
                ],
                default: "command",
            },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_CHECKPOINTS",
        accepted: "auto, on, off",
        default: "auto",
        setting: Some(Setting {
            label: "NV checkpoints",
            description: "When VK_NV_device_diagnostic_checkpoints is enabled (with breadcrumbs on, where the device has it).",
            kind: Kind::Enum {
                values: &[
                    ("auto", "Where buffer markers are missing", "Only on devices without VK_AMD_buffer_marker: buffer markers tell more, and NVIDIA's driver holds about 50 KiB per command buffer for checkpoints."),
                    ("on", "On", "Wherever the device has them."),
                    ("off", "Off", "Never."),
                ],
                default: "auto",
            },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_WATCHDOG_MS",
        accepted: "milliseconds, 0 turns the watchdog off",
        default: "10000",
        setting: Some(Setting {
            label: "Hang watchdog",
            description: "Milliseconds pending GPU work may make no progress before a hang report; 0: off.",
            kind: Kind::Int { default: 10_000, min: 0, max: i64::MAX, unit: "ms" },
            depends_on: None,
        }),
    },
    Variable {
        name: "VK_BLACKBOX_SUSPECTS",
        accepted: "set by blackbox bisect: a file each label, pipeline, shader and command index with work is appended to",
        default: "unset",
        // Between `blackbox bisect` and the layers of the app it runs, never a user's setting.
        setting: None,
    },
    Variable {
        name: "VK_BLACKBOX_RUN_STATUS",
        accepted: "set by blackbox run: a file each instance appends a line to",
        default: "unset",
        // Between `blackbox run` and the layers of the app it runs, never a user's setting.
        setting: None,
    },
];

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Its environment variable.
    Environment,
    /// `vk_layer_settings.txt` at this path.
    SettingsFile(PathBuf),
    /// The app's `VkLayerSettingsCreateInfoEXT`.
    App,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Environment => f.write_str("environment"),
            Origin::SettingsFile(path) => write!(f, "{}", path.display()),
            Origin::App => f.write_str("the app's VkLayerSettingsCreateInfoEXT"),
        }
    }
}

/// A value one source gives a setting.
struct Given {
    /// The variable.
    name: &'static str,
    /// The value, as text.
    text: String,
    /// Where it came from.
    origin: Origin,
}

impl Given {
    /// The key and value as their source has them, for warnings: `VK_BLACKBOX_NAN="all"`,
    /// `blackbox.nan = "all" in /home/me/vk_layer_settings.txt`, `blackbox.nan = "all" in the app's
    /// VkLayerSettingsCreateInfoEXT`.
    fn what(&self) -> String {
        let key = self.name.strip_prefix("VK_BLACKBOX_").unwrap_or(self.name);
        match &self.origin {
            Origin::Environment => format!("{}={:?}", self.name, self.text),
            Origin::SettingsFile(path) => format!(
                "blackbox.{} = {:?} in {}",
                key.to_ascii_lowercase(),
                self.text,
                path.display()
            ),
            Origin::App => format!(
                "blackbox.{} = {:?} in the app's VkLayerSettingsCreateInfoEXT",
                key.to_ascii_lowercase(),
                self.text
            ),
        }
    }
}

/// Where settings are read from, in order of precedence.
pub struct Sources<'a> {
    /// The environment (also read for `HOME`, `XDG_STATE_HOME`).
    pub env: &'a dyn Fn(&str) -> Option<OsString>,
    /// `vk_layer_settings.txt`, if one was found.
    pub file: Option<&'a SettingsFile>,
    /// What the app's `VkLayerSettingsCreateInfoEXT` gave `VK_LAYER_blackbox`.
    pub app: &'a [AppSetting],
}

impl Sources<'_> {
    /// The value the first source that sets `name` gives it (an empty value is unset).
    fn get(&self, name: &'static str) -> Option<Given> {
        let key = name
            .strip_prefix("VK_BLACKBOX_")
            .unwrap_or(name)
            .to_ascii_lowercase();
        let given = |text: String, origin| Given { name, text, origin };
        if let Some(v) = (self.env)(name).filter(|v| !v.is_empty()) {
            return Some(given(v.to_string_lossy().into_owned(), Origin::Environment));
        }
        if let Some(file) = self.file {
            if let Some(v) = file
                .get(&format!("blackbox.{key}"))
                .filter(|v| !v.is_empty())
            {
                return Some(given(v.to_owned(), Origin::SettingsFile(file.path.clone())));
            }
        }
        self.app
            .iter()
            .find(|s| s.name == key)
            .filter(|s| !s.text.is_empty())
            .map(|s| given(s.text.clone(), Origin::App))
    }
}

/// What parsing has found so far: the warnings, and where each value other than the default came from.
struct Reader<'a> {
    sources: &'a Sources<'a>,
    warnings: Vec<String>,
    origins: Vec<(String, String, Origin)>,
}

impl Reader<'_> {
    /// Notes that `given` is in force; `is_default` when it equals the default (not worth a mention).
    fn take(&mut self, given: &Given, is_default: bool) {
        if !is_default {
            let key = given
                .name
                .strip_prefix("VK_BLACKBOX_")
                .unwrap_or(given.name);
            self.origins.push((
                key.to_ascii_lowercase(),
                given.text.clone(),
                given.origin.clone(),
            ));
        }
    }

    /// Warns that `given` is not valid and the default is used.
    fn reject(&mut self, given: &Given, accepted: &str, default: &str) {
        self.warnings.push(format!(
            "{} is not valid; accepted: {accepted}; using the default `{default}`",
            given.what()
        ));
    }

    /// A keyword setting: its value on a match, else a warning and the default.
    fn keyword<T: Keyword>(&mut self, name: &'static str, default: T) -> T {
        let Some(given) = self.sources.get(name) else {
            return default;
        };
        if let Some(v) = T::from_word(&given.text) {
            self.take(&given, v == default);
            return v;
        }
        let accepted: Vec<&str> = T::WORDS.iter().map(|(k, _)| *k).collect();
        self.reject(&given, &accepted.join(", "), default.word());
        default
    }

    /// A whole-number setting: its value, else (with a warning) the default.
    fn number<N>(&mut self, name: &'static str, default: N, accepted: &str) -> N
    where
        N: std::str::FromStr + PartialEq + std::fmt::Display + Copy,
    {
        let Some(given) = self.sources.get(name) else {
            return default;
        };
        match given.text.trim().parse::<N>() {
            Ok(v) => {
                self.take(&given, v == default);
                v
            }
            Err(_) => {
                self.reject(&given, accepted, &default.to_string());
                default
            }
        }
    }

    /// A text setting, as given (never the default once set: empty is unset).
    fn text(&mut self, name: &'static str) -> Option<Given> {
        let given = self.sources.get(name)?;
        self.take(&given, false);
        Some(given)
    }
}

/// A setting that takes one of a few words: the words are its names everywhere (variables, reports, the log).
pub trait Keyword: Copy + PartialEq + 'static {
    /// Every value with its word, in the order they are documented.
    const WORDS: &'static [(&'static str, Self)];

    /// The word of `self`.
    fn word(self) -> &'static str {
        Self::WORDS
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("", |(k, _)| k)
    }

    /// The value a word names (any case), if any.
    fn from_word(word: &str) -> Option<Self> {
        Self::WORDS
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(word.trim()))
            .map(|(_, v)| *v)
    }
}

/// Implements [`Keyword`], `Display` and `FromStr` for a settings enum from its words.
macro_rules! keywords {
    ($ty:ty { $($word:literal => $value:expr,)* }) => {
        impl Keyword for $ty {
            const WORDS: &'static [(&'static str, Self)] = &[$(($word, $value)),*];
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.word())
            }
        }
        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::from_word(s).ok_or_else(|| {
                    let words: Vec<&str> = Self::WORDS.iter().map(|(k, _)| *k).collect();
                    format!("{s:?} is not one of {}", words.join(", "))
                })
            }
        }
    };
}

/// `VK_BLACKBOX_ASSERT`: what a failing shader assert does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssertMode {
    /// Asserts are not instrumented.
    Off,
    /// Each failing assert is logged with its values and source line.
    Log,
    /// The first failing assert writes a report and stops the app.
    Abort,
    /// The failing invocation faults the device on purpose, for vendor crash tools.
    Crash,
}

keywords!(AssertMode {
    "off" => AssertMode::Off,
    "log" => AssertMode::Log,
    "abort" => AssertMode::Abort,
    "crash" => AssertMode::Crash,
});

/// `VK_BLACKBOX_NAN` takes the engine's levels, by the engine's names.
impl Keyword for NanLevel {
    const WORDS: &'static [(&'static str, Self)] = &[
        (NanLevel::Off.name(), NanLevel::Off),
        (NanLevel::Outputs.name(), NanLevel::Outputs),
        (NanLevel::Ops.name(), NanLevel::Ops),
    ];
}

/// `VK_BLACKBOX_LOOPS` takes the engine's loop modes, by the engine's names.
impl Keyword for LoopMode {
    const WORDS: &'static [(&'static str, Self)] = &[
        (LoopMode::Off.name(), LoopMode::Off),
        (LoopMode::Report.name(), LoopMode::Report),
        (LoopMode::Break.name(), LoopMode::Break),
    ];
}

/// `VK_BLACKBOX_BREADCRUMBS`: how finely GPU progress is tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Breadcrumbs {
    /// Not at all.
    #[default]
    Off,
    /// Per submission.
    Submit,
    /// Per render pass and per command outside passes.
    Pass,
    /// Per command.
    Command,
}

keywords!(Breadcrumbs {
    "off" => Breadcrumbs::Off,
    "submit" => Breadcrumbs::Submit,
    "pass" => Breadcrumbs::Pass,
    "command" => Breadcrumbs::Command,
});

/// `VK_BLACKBOX_NAN_RECORDS`: when NaN checks write their records (the engine's
/// [`blackbox_engine::Options::records_at_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NanRecords {
    /// At the invocation's end on CPU devices, where they fire on GPUs: on NVIDIA's compiler the
    /// end-of-invocation flush did not make compiling cheaper (README, "Pipeline creation per module").
    #[default]
    Auto,
    /// When the invocation ends.
    End,
    /// Where the check fires.
    Fired,
}

keywords!(NanRecords {
    "auto" => NanRecords::Auto,
    "end" => NanRecords::End,
    "fired" => NanRecords::Fired,
});

/// `VK_BLACKBOX_CHECKPOINTS`: whether `VK_NV_device_diagnostic_checkpoints` is enabled (with breadcrumbs on,
/// where the device has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checkpoints {
    /// Only where `VK_AMD_buffer_marker` is missing: where both exist, buffer markers tell more (every
    /// command started, units finished at each synchronization point) and checkpoints cost NVIDIA's
    /// driver about 50 KiB of host memory per command buffer.
    #[default]
    Auto,
    /// Wherever the device has them, as a second account of progress from the driver.
    On,
    /// Never.
    Off,
}

keywords!(Checkpoints {
    "auto" => Checkpoints::Auto,
    "on" => Checkpoints::On,
    "off" => Checkpoints::Off,
});

/// `on` / `off`; also `true` / `false` and `1` / `0`, as Vulkan Configurator writes booleans and the app's
/// `VkLayerSettingsCreateInfoEXT` booleans read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch(pub bool);

keywords!(Switch {
    "on" => Switch(true),
    "off" => Switch(false),
    "true" => Switch(true),
    "false" => Switch(false),
    "1" => Switch(true),
    "0" => Switch(false),
});

/// Log lines one shader error site gets by default: as many as the validation layer's default limit of
/// repeats of one message.
pub const DEFAULT_LOG_REPEATS: u32 = 10;

/// Levels the log filter accepts.
const LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

/// The layer's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Folder reports are written to; checked writable (or replaced by a fallback) at start-up.
    pub output_dir: PathBuf,
    /// Where what the layer keeps between runs goes (`$XDG_CACHE_HOME/blackbox`, else
    /// `~/.cache/blackbox`; see [`crate::site_map`]); `None` without either variable.
    pub cache_dir: Option<PathBuf>,
    /// An env_logger filter, already validated.
    pub log_filter: String,
    /// Where the log goes; `None` is stderr.
    pub log_file: Option<PathBuf>,
    /// Log lines one shader error site gets (`VK_BLACKBOX_LOG_REPEATS`); 0 is no limit.
    pub log_repeats: u32,
    /// What a failing assert does.
    pub assert: AssertMode,
    /// Whether `debugPrintf` calls become records.
    pub printf: bool,
    /// NaN/Inf guards.
    pub nan: NanLevel,
    /// `VK_BLACKBOX_NAN_RECORDS`.
    pub nan_records: NanRecords,
    /// Loop budgets.
    pub loops: LoopMode,
    /// Iterations of one loop an invocation may run before its budget fires; 0 is no iteration budget.
    pub loop_limit: u32,
    /// Milliseconds an invocation may spend in loops before its budget fires, where the device has a
    /// shader clock; `None` is no time budget.
    pub loop_ms: Option<u32>,
    /// Integer undefined behaviour and index checks.
    pub int_checks: bool,
    /// Instrument only shaders whose id starts with, or whose debug name equals, one of these; empty is all.
    pub shader_filter: crate::matched::Matched<String>,
    /// Where original and instrumented modules are written, if anywhere.
    pub dump_shaders: Option<PathBuf>,
    /// Work not passed to the driver (`VK_BLACKBOX_SKIP`).
    pub skip: crate::skip::Skip,
    /// Where suspects for `blackbox bisect` are appended (`VK_BLACKBOX_SUSPECTS`).
    pub suspects: Option<PathBuf>,
    /// Progress-tracking granularity.
    pub breadcrumbs: Breadcrumbs,
    /// When NV diagnostic checkpoints are enabled.
    pub checkpoints: Checkpoints,
    /// How long pending work may make no progress before the watchdog reports a hang; `None` is off.
    pub watchdog_ms: Option<u64>,
    /// Presented frames whose summaries are kept for frame reports (`VK_BLACKBOX_FRAMES`); 0 is off.
    pub frames: u32,
    /// One-frame flash detection at present (`VK_BLACKBOX_FLASH`).
    pub flash: bool,
    /// Each setting given a value other than its default: key (`nan`), value as given, where it came from.
    pub origins: Vec<(String, String, Origin)>,
}

impl Config {
    /// Whether any shader instrumentation is on (asserts, printf, NaN guards, loop budgets or integer
    /// checks).
    pub fn instruments_shaders(&self) -> bool {
        self.assert != AssertMode::Off
            || self.printf
            || self.nan != NanLevel::Off
            || self.loops != LoopMode::Off
            || self.int_checks
    }

    /// Whether frames are watched at present (`VK_BLACKBOX_FRAMES` above 0, or `VK_BLACKBOX_FLASH=on`):
    /// swapchains then get `TRANSFER_SRC` usage and each presented image is copied.
    pub fn watches_frames(&self) -> bool {
        self.frames > 0 || self.flash
    }
}

/// Frames kept when only `VK_BLACKBOX_FLASH` asks for frame capture: a flash report shows the frames around.
pub const FLASH_FRAMES: u32 = 8;
/// The most frames `VK_BLACKBOX_FRAMES` keeps.
pub const MAX_FRAMES: u32 = 1000;

/// A config and the warnings its parsing produced.
pub struct Parsed {
    /// The settings in force.
    pub config: Config,
    /// One message per bad value, to be logged once logging exists.
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads the process environment and `vk_layer_settings.txt` where the process would find it, and what
    /// the app gave in `VkLayerSettingsCreateInfoEXT`.
    pub fn from_process(app: &[AppSetting]) -> Parsed {
        let env = |name: &str| std::env::var_os(name);
        let file = SettingsFile::find(&env, std::env::current_dir().ok().as_deref());
        Self::from_sources(&Sources {
            env: &env,
            file: file.as_ref(),
            app,
        })
    }

    /// Reads the variables through `var` alone, so tests can feed any environment.
    pub fn from_env(var: impl Fn(&str) -> Option<OsString>) -> Parsed {
        Self::from_sources(&Sources {
            env: &var,
            file: None,
            app: &[],
        })
    }

    /// Reads every setting from `sources`.
    pub fn from_sources(sources: &Sources<'_>) -> Parsed {
        let mut r = Reader {
            sources,
            warnings: Vec::new(),
            origins: Vec::new(),
        };

        let log_filter = match r.sources.get("VK_BLACKBOX_LOG") {
            None => "info".to_owned(),
            Some(given) => match check_log_filter(&given.text) {
                Ok(()) => {
                    r.take(&given, given.text.trim() == "info");
                    given.text
                }
                Err(why) => {
                    r.warnings.push(format!(
                        "{} is not valid ({why}); accepted: a level ({}) or directives like `blackbox=debug`; \
                         using the default `info`",
                        given.what(),
                        LEVELS.join(", ")
                    ));
                    "info".to_owned()
                }
            },
        };

        let log_file = r
            .text("VK_BLACKBOX_LOG_FILE")
            .map(|g| PathBuf::from(g.text));
        let log_repeats = r.number(
            "VK_BLACKBOX_LOG_REPEATS",
            DEFAULT_LOG_REPEATS,
            "a whole number of lines per site, 0 for no limit",
        );

        let default_output = default_output_dir(&sources.env);
        let output_dir = match r.text("VK_BLACKBOX_OUTPUT").map(|g| PathBuf::from(g.text)) {
            None => default_output,
            Some(dir) if dir.is_relative() => {
                // A relative path would follow the app's working directory, which apps change; anchor it now.
                std::env::current_dir()
                    .map(|cwd| cwd.join(&dir))
                    .unwrap_or(dir)
            }
            Some(dir) => dir,
        };

        let assert = r.keyword("VK_BLACKBOX_ASSERT", AssertMode::Log);
        let Switch(printf) = r.keyword("VK_BLACKBOX_PRINTF", Switch(true));
        let nan = r.keyword("VK_BLACKBOX_NAN", NanLevel::Off);
        let nan_records = r.keyword("VK_BLACKBOX_NAN_RECORDS", NanRecords::Auto);
        let loops = r.keyword("VK_BLACKBOX_LOOPS", LoopMode::Off);
        let loop_limit = r.number(
            "VK_BLACKBOX_LOOP_LIMIT",
            blackbox_engine::DEFAULT_LOOP_LIMIT,
            "a whole number of iterations, 0 for no iteration budget",
        );
        let loop_ms = Some(r.number(
            "VK_BLACKBOX_LOOP_MS",
            0u32,
            "a whole number of milliseconds, 0 for no time budget",
        ))
        .filter(|&ms| ms > 0);
        if loops != LoopMode::Off && loop_limit == 0 && loop_ms.is_none() {
            r.warnings.push(format!(
                "VK_BLACKBOX_LOOPS={loops} with VK_BLACKBOX_LOOP_LIMIT=0 and no VK_BLACKBOX_LOOP_MS: no loop \
                 can pass a budget; using the default limit {}",
                blackbox_engine::DEFAULT_LOOP_LIMIT
            ));
        }
        let loop_limit = if loop_limit == 0 && loop_ms.is_none() {
            blackbox_engine::DEFAULT_LOOP_LIMIT
        } else {
            loop_limit
        };
        let Switch(int_checks) = r.keyword("VK_BLACKBOX_INT", Switch(false));
        let breadcrumbs = r.keyword("VK_BLACKBOX_BREADCRUMBS", Breadcrumbs::Command);
        let checkpoints = r.keyword("VK_BLACKBOX_CHECKPOINTS", Checkpoints::Auto);
        let shader_filter = crate::matched::Matched::new(
            r.text("VK_BLACKBOX_SHADERS")
                .map(|g| {
                    g.text
                        .split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        );
        let dump_shaders = r
            .text("VK_BLACKBOX_DUMP_SHADERS")
            .map(|g| PathBuf::from(g.text));
        let skip = match r.text("VK_BLACKBOX_SKIP") {
            None => crate::skip::Skip::default(),
            Some(given) => {
                let (selectors, bad) = crate::skip::parse_list(&given.text, &given.what());
                r.warnings.extend(bad);
                crate::skip::Skip::new(selectors)
            }
        };
        let suspects = (sources.env)("VK_BLACKBOX_SUSPECTS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let watchdog_ms = match r.number(
            "VK_BLACKBOX_WATCHDOG_MS",
            10_000u64,
            "a whole number of milliseconds, 0 turns the watchdog off",
        ) {
            0 => None,
            ms => Some(ms),
        };

        let frames = r.number(
            "VK_BLACKBOX_FRAMES",
            0u32,
            "a whole number of frames, 0 (off) to 1000",
        );
        let frames = if frames > MAX_FRAMES {
            r.warnings.push(format!(
                "VK_BLACKBOX_FRAMES={frames} is more than {MAX_FRAMES}; accepted: a whole number of frames, 0 (off) to \
                 {MAX_FRAMES}; using {MAX_FRAMES}"
            ));
            MAX_FRAMES
        } else {
            frames
        };
        let Switch(flash) = r.keyword("VK_BLACKBOX_FLASH", Switch(false));
        // A flash report shows the frames before and after: some are kept even without VK_BLACKBOX_FRAMES.
        let frames = if flash && frames == 0 {
            FLASH_FRAMES
        } else {
            frames
        };

        Parsed {
            config: Config {
                output_dir,
                cache_dir: cache_dir(&sources.env),
                log_filter,
                log_file,
                log_repeats,
                assert,
                printf,
                nan,
                nan_records,
                loops,
                loop_limit,
                loop_ms,
                int_checks,
                shader_filter,
                dump_shaders,
                skip,
                suspects,
                breadcrumbs,
                checkpoints,
                watchdog_ms,
                frames,
                flash,
                origins: r.origins,
            },
            warnings: r.warnings,
        }
    }

    /// Where each setting other than its default came from, for the start-up line:
    /// `nan=ops (environment), breadcrumbs=pass (/home/me/vk_layer_settings.txt)`; empty when all are defaults.
    pub fn describe_origins(&self) -> String {
        self.origins
            .iter()
            .map(|(key, value, origin)| format!("{key}={value} ({origin})"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Where the report folder was set, if it was (for the warning when it cannot be written).
    pub fn output_origin(&self) -> Option<&Origin> {
        self.origins
            .iter()
            .find(|(k, _, _)| k == "output")
            .map(|(_, _, o)| o)
    }
}

/// `$XDG_STATE_HOME/blackbox`, else `~/.local/state/blackbox`, else a folder under the temp dir.
fn default_output_dir(var: &impl Fn(&str) -> Option<OsString>) -> PathBuf {
    if let Some(state) = var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return state.join("blackbox");
    }
    if let Some(home) = var("HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return home.join(".local/state/blackbox");
    }
    fallback_output_dir()
}

/// `$XDG_CACHE_HOME/blackbox`, else `~/.cache/blackbox` (absolute paths only, as for reports).
fn cache_dir(var: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let absolute = |name| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
    absolute("XDG_CACHE_HOME")
        .map(|cache| cache.join("blackbox"))
        .or_else(|| absolute("HOME").map(|home| home.join(".cache/blackbox")))
}

/// The per-user folder under the temp dir, which [`crate::output::resolve`] checks before using it.
pub fn fallback_output_dir() -> PathBuf {
    crate::output::per_user_temp_dir(&std::env::temp_dir(), crate::output::current_uid())
}

/// Checks an env_logger filter: comma-separated `level`, `target` or `target=level` directives. Targets must
/// be Blackbox's own (`blackbox`, `blackbox::...`): the layer logs nothing else, so any other word is a typo.
pub fn check_log_filter(value: &str) -> Result<(), String> {
    // A `/regex` suffix filters message text; only the directives before it are checked.
    let directives = value.split('/').next().unwrap_or_default();
    for directive in directives
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        let is_level = |s: &str| LEVELS.iter().any(|l| l.eq_ignore_ascii_case(s));
        let is_target = |s: &str| s == "blackbox" || s.starts_with("blackbox::");
        let ok = match directive.split_once('=') {
            Some((target, level)) => is_target(target.trim()) && is_level(level.trim()),
            None => is_level(directive) || is_target(directive),
        };
        if !ok {
            return Err(format!(
                "`{directive}` is neither a level nor `blackbox[=level]`"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> Parsed {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Config::from_env(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults() {
        let p = parse(&[("HOME", "/home/u")]);
        assert!(p.warnings.is_empty());
        assert_eq!(p.config.log_filter, "info");
        assert_eq!(
            p.config.output_dir,
            PathBuf::from("/home/u/.local/state/blackbox")
        );
        assert_eq!(p.config.log_file, None);
    }

    #[test]
    fn xdg_state_home_wins_over_home() {
        let p = parse(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/state")]);
        assert_eq!(p.config.output_dir, PathBuf::from("/state/blackbox"));
        // A relative XDG value is invalid per the XDG spec and ignored.
        let p = parse(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "rel")]);
        assert_eq!(
            p.config.output_dir,
            PathBuf::from("/home/u/.local/state/blackbox")
        );
    }

    #[test]
    fn cache_folder_is_xdg_cache_home_else_home_s() {
        let p = parse(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/cache")]);
        assert_eq!(p.config.cache_dir, Some(PathBuf::from("/cache/blackbox")));
        let p = parse(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "rel")]);
        assert_eq!(
            p.config.cache_dir,
            Some(PathBuf::from("/home/u/.cache/blackbox"))
        );
        assert_eq!(parse(&[]).config.cache_dir, None);
    }

    #[test]
    fn log_filters() {
        for ok in [
            "debug",
            "WARN",
            "blackbox=trace",
            "blackbox::device=debug,info",
            "off",
            "info/device",
        ] {
            assert_eq!(check_log_filter(ok), Ok(()), "{ok}");
        }
        for bad in ["verbose", "blackbox=loud", "wgpu=debug", "2"] {
            assert!(check_log_filter(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_log_value_warns_and_uses_default() {
        let p = parse(&[("VK_BLACKBOX_LOG", "verbose")]);
        assert_eq!(p.config.log_filter, "info");
        assert_eq!(p.warnings.len(), 1);
        assert!(
            p.warnings[0].contains("VK_BLACKBOX_LOG=\"verbose\""),
            "{}",
            p.warnings[0]
        );
        assert!(
            p.warnings[0].contains("off, error, warn, info, debug, trace"),
            "{}",
            p.warnings[0]
        );
    }

    #[test]
    fn keywords_parse_case_insensitively() {
        let p = parse(&[
            ("VK_BLACKBOX_ASSERT", "Abort"),
            ("VK_BLACKBOX_PRINTF", "off"),
            ("VK_BLACKBOX_NAN", "ops"),
            ("VK_BLACKBOX_BREADCRUMBS", "pass"),
            ("VK_BLACKBOX_WATCHDOG_MS", "0"),
            ("VK_BLACKBOX_SHADERS", "1f3a, ParticleSim,"),
        ]);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let c = p.config;
        assert_eq!(
            (c.assert, c.printf, c.nan, c.breadcrumbs),
            (AssertMode::Abort, false, NanLevel::Ops, Breadcrumbs::Pass)
        );
        assert_eq!(c.watchdog_ms, None);
        assert_eq!(
            c.shader_filter.entries,
            vec!["1f3a".to_owned(), "ParticleSim".to_owned()]
        );
    }

    #[test]
    fn bad_keywords_warn_with_accepted_values_and_default() {
        let p = parse(&[
            ("VK_BLACKBOX_ASSERT", "loud"),
            ("VK_BLACKBOX_NAN", "all"),
            ("VK_BLACKBOX_BREADCRUMBS", "draw"),
            ("VK_BLACKBOX_PRINTF", "yes"),
            ("VK_BLACKBOX_WATCHDOG_MS", "10s"),
        ]);
        let c = &p.config;
        assert_eq!(
            (c.assert, c.nan, c.breadcrumbs, c.printf),
            (AssertMode::Log, NanLevel::Off, Breadcrumbs::Command, true)
        );
        assert_eq!(c.watchdog_ms, Some(10_000));
        let w = p.warnings.join("\n");
        assert!(w.contains("VK_BLACKBOX_ASSERT=\"loud\" is not valid; accepted: off, log, abort, crash; using the default `log`"), "{w}");
        assert!(w.contains("VK_BLACKBOX_NAN=\"all\" is not valid; accepted: off, outputs, ops; using the default `off`"), "{w}");
        assert!(w.contains("VK_BLACKBOX_BREADCRUMBS=\"draw\" is not valid; accepted: off, submit, pass, command; using the default `command`"), "{w}");
        assert!(w.contains("VK_BLACKBOX_PRINTF=\"yes\" is not valid; accepted: on, off, true, false, 1, 0; using the default `on`"), "{w}");
        assert!(
            w.contains("VK_BLACKBOX_WATCHDOG_MS=\"10s\" is not valid"),
            "{w}"
        );
    }

    #[test]
    fn checkpoints_default_to_where_buffer_markers_are_missing() {
        assert_eq!(parse(&[]).config.checkpoints, Checkpoints::Auto);
        assert_eq!(
            parse(&[("VK_BLACKBOX_CHECKPOINTS", "ON")])
                .config
                .checkpoints,
            Checkpoints::On
        );
        let p = parse(&[("VK_BLACKBOX_CHECKPOINTS", "always")]);
        assert_eq!(p.config.checkpoints, Checkpoints::Auto);
        assert!(
            p.warnings[0].contains("accepted: auto, on, off; using the default `auto`"),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn loop_and_integer_settings() {
        let c = parse(&[]).config;
        assert_eq!(
            (c.loops, c.loop_limit, c.loop_ms, c.int_checks),
            (
                LoopMode::Off,
                blackbox_engine::DEFAULT_LOOP_LIMIT,
                None,
                false
            )
        );
        assert!(
            !parse(&[("VK_BLACKBOX_PRINTF", "off"), ("VK_BLACKBOX_ASSERT", "off")])
                .config
                .instruments_shaders()
        );
        let p = parse(&[
            ("VK_BLACKBOX_LOOPS", "Break"),
            ("VK_BLACKBOX_LOOP_LIMIT", "0"),
            ("VK_BLACKBOX_LOOP_MS", "250"),
            ("VK_BLACKBOX_INT", "on"),
            ("VK_BLACKBOX_PRINTF", "off"),
            ("VK_BLACKBOX_ASSERT", "off"),
        ]);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let c = p.config;
        assert_eq!(
            (c.loops, c.loop_limit, c.loop_ms, c.int_checks),
            (LoopMode::Break, 0, Some(250), true)
        );
        assert!(c.instruments_shaders());
        // No budget at all is not allowed: the iteration limit stays.
        let p = parse(&[
            ("VK_BLACKBOX_LOOPS", "report"),
            ("VK_BLACKBOX_LOOP_LIMIT", "0"),
            ("VK_BLACKBOX_LOOP_MS", "soon"),
        ]);
        assert_eq!(p.config.loop_limit, blackbox_engine::DEFAULT_LOOP_LIMIT);
        assert_eq!(p.config.loop_ms, None);
        let w = p.warnings.join("\n");
        assert!(
            w.contains("VK_BLACKBOX_LOOP_MS=\"soon\" is not valid"),
            "{w}"
        );
        assert!(w.contains("no loop can pass a budget"), "{w}");
    }

    #[test]
    fn frame_settings() {
        let c = parse(&[]).config;
        assert_eq!((c.frames, c.flash, c.watches_frames()), (0, false, false));
        let p = parse(&[("VK_BLACKBOX_FRAMES", "16")]);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!((p.config.frames, p.config.flash), (16, false));
        assert!(p.config.watches_frames());
        // The flash alone keeps the frames around it.
        let c = parse(&[("VK_BLACKBOX_FLASH", "on")]).config;
        assert_eq!((c.frames, c.flash), (FLASH_FRAMES, true));
        let p = parse(&[("VK_BLACKBOX_FRAMES", "lots"), ("VK_BLACKBOX_FLASH", "yes")]);
        assert_eq!((p.config.frames, p.config.flash), (0, false));
        let w = p.warnings.join("\n");
        assert!(
            w.contains("VK_BLACKBOX_FRAMES=\"lots\" is not valid"),
            "{w}"
        );
        assert!(
            w.contains("VK_BLACKBOX_FLASH=\"yes\" is not valid; accepted: on, off"),
            "{w}"
        );
        let p = parse(&[("VK_BLACKBOX_FRAMES", "5000")]);
        assert_eq!(p.config.frames, MAX_FRAMES);
        assert!(p.warnings[0].contains("more than 1000"), "{:?}", p.warnings);
    }

    #[test]
    fn empty_values_are_unset() {
        let p = parse(&[
            ("VK_BLACKBOX_LOG", ""),
            ("VK_BLACKBOX_OUTPUT", ""),
            ("HOME", "/h"),
        ]);
        assert!(p.warnings.is_empty());
        assert_eq!(
            p.config.output_dir,
            PathBuf::from("/h/.local/state/blackbox")
        );
    }

    /// Parses with a settings file of `file_text` and the app's `app` settings too.
    fn parse_all(vars: &[(&str, &str)], file_text: &str, app: &[(&str, &str)]) -> Parsed {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        let env = |name: &str| map.get(name).cloned();
        let file = SettingsFile::parse(PathBuf::from("/cfg/vk_layer_settings.txt"), file_text);
        let app: Vec<AppSetting> = app
            .iter()
            .map(|(name, text)| AppSetting {
                name: name.to_string(),
                text: text.to_string(),
            })
            .collect();
        Config::from_sources(&Sources {
            env: &env,
            file: Some(&file),
            app: &app,
        })
    }

    #[test]
    fn environment_then_settings_file_then_the_app() {
        let p = parse_all(
            &[("VK_BLACKBOX_NAN", "outputs")],
            "blackbox.nan = ops\nblackbox.breadcrumbs = pass\nkhronos_validation.enables = X\n",
            &[
                ("nan", "off"),
                ("breadcrumbs", "submit"),
                ("watchdog_ms", "0"),
                ("printf", "false"),
            ],
        );
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let c = &p.config;
        assert_eq!(c.nan, NanLevel::Outputs);
        assert_eq!(c.breadcrumbs, Breadcrumbs::Pass);
        assert_eq!((c.watchdog_ms, c.printf), (None, false));
        assert_eq!(
            c.describe_origins(),
            "printf=false (the app's VkLayerSettingsCreateInfoEXT), nan=outputs (environment), \
             breadcrumbs=pass (/cfg/vk_layer_settings.txt), watchdog_ms=0 (the app's VkLayerSettingsCreateInfoEXT)"
        );
        // A value equal to the default is no news in the start-up line.
        let p = parse_all(&[], "blackbox.nan = off\nblackbox.printf = true\n", &[]);
        assert_eq!(p.config.describe_origins(), "");
    }

    #[test]
    fn a_bad_value_names_its_source_key_value_and_what_is_accepted() {
        let p = parse_all(
            &[],
            "blackbox.assert = loud\nblackbox.watchdog_ms = soon\nblackbox.skip = glow\n",
            &[("nan", "true"), ("loop_limit", "-3")],
        );
        let c = &p.config;
        assert_eq!(
            (c.assert, c.nan, c.watchdog_ms),
            (AssertMode::Log, NanLevel::Off, Some(10_000))
        );
        assert_eq!(c.loop_limit, blackbox_engine::DEFAULT_LOOP_LIMIT);
        assert!(c.skip.is_empty());
        let w = p.warnings.join("\n");
        for expected in [
            "blackbox.assert = \"loud\" in /cfg/vk_layer_settings.txt is not valid; accepted: off, log, abort, crash; using the default `log`",
            "blackbox.watchdog_ms = \"soon\" in /cfg/vk_layer_settings.txt is not valid; accepted: a whole number",
            "blackbox.skip = \"glow\" in /cfg/vk_layer_settings.txt: ",
            "blackbox.nan = \"true\" in the app's VkLayerSettingsCreateInfoEXT is not valid; accepted: off, outputs, ops; using the default `off`",
            "blackbox.loop_limit = \"-3\" in the app's VkLayerSettingsCreateInfoEXT is not valid",
        ] {
            assert!(w.contains(expected), "{expected}\n---\n{w}");
        }
        assert_eq!(p.warnings.len(), 5, "{w}");
        // The environment's warnings read as before.
        let p = parse_all(&[("VK_BLACKBOX_NAN", "all")], "blackbox.nan = ops\n", &[]);
        assert_eq!(
            p.config.nan,
            NanLevel::Off,
            "a bad value uses the default, not a lower source"
        );
        assert!(
            p.warnings[0].starts_with("VK_BLACKBOX_NAN=\"all\" is not valid"),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn booleans_as_vulkan_configurator_and_the_api_write_them() {
        for (text, on) in [
            ("true", true),
            ("false", false),
            ("1", true),
            ("0", false),
            ("on", true),
            ("OFF", false),
        ] {
            let p = parse_all(&[], &format!("blackbox.int = {text}\n"), &[]);
            assert!(p.warnings.is_empty(), "{text}: {:?}", p.warnings);
            assert_eq!(p.config.int_checks, on, "{text}");
        }
    }

    #[test]
    fn every_setting_is_read_from_the_file_and_the_app() {
        for v in VARIABLES.iter().filter(|v| v.setting.is_some()) {
            let value = non_default_value(v);
            for (file, app) in [
                (format!("blackbox.{} = {value}\n", v.key()), vec![]),
                (String::new(), vec![(v.key(), value.clone())]),
            ] {
                let app: Vec<(&str, &str)> =
                    app.iter().map(|(k, t)| (k.as_str(), t.as_str())).collect();
                let p = parse_all(&[], &file, &app);
                assert!(p.warnings.is_empty(), "{}: {:?}", v.name, p.warnings);
                assert!(
                    p.config.origins.iter().any(|(k, t, _)| *k == v.key() && *t == value),
                    "{} = {value} was not read (file {file:?}, app {app:?}): does Config::from_sources read it?",
                    v.name
                );
            }
        }
    }

    /// A valid value of `v` other than its default.
    fn non_default_value(v: &Variable) -> String {
        match &v.setting.as_ref().expect("a setting").kind {
            Kind::Enum { values, default } => values
                .iter()
                .map(|(w, _, _)| *w)
                .find(|w| w != default)
                .expect("two words")
                .to_owned(),
            Kind::Bool { default } => (!default).to_string(),
            Kind::Int { default, .. } => (default + 1).to_string(),
            Kind::Text { example } | Kind::Folder { example } | Kind::File { example } => {
                example.to_string()
            }
        }
    }

    #[test]
    fn manifest_defaults_parse_to_the_defaults() {
        // Vulkan Configurator writes every setting's manifest default into the file: each must read as unset.
        let default = format!("{:?}", parse(&[("HOME", "/h")]).config);
        let mut file = String::new();
        for v in VARIABLES.iter().filter(|v| v.setting.is_some()) {
            let text = match &v.setting.as_ref().expect("a setting").kind {
                Kind::Enum { default, .. } => default.to_string(),
                Kind::Bool { default } => default.to_string(),
                Kind::Int { default, .. } => default.to_string(),
                Kind::Text { .. } | Kind::Folder { .. } | Kind::File { .. } => String::new(),
            };
            file.push_str(&format!("blackbox.{} = {text}\n", v.key()));
        }
        let p = parse_all(&[("HOME", "/h")], &file, &[]);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(format!("{:?}", p.config), default, "{file}");
    }

    #[test]
    fn enum_settings_list_the_words_the_parser_takes() {
        fn words<T: Keyword>() -> Vec<&'static str> {
            T::WORDS.iter().map(|(w, _)| *w).collect()
        }
        let by_key = |key: &str| -> Vec<&str> {
            let v = VARIABLES.iter().find(|v| v.key() == key).expect(key);
            match &v.setting.as_ref().expect("a setting").kind {
                Kind::Enum { values, .. } => values.iter().map(|(w, _, _)| *w).collect(),
                _ => panic!("{key} is no enum"),
            }
        };
        assert_eq!(by_key("assert"), words::<AssertMode>());
        assert_eq!(by_key("nan"), words::<NanLevel>());
        assert_eq!(by_key("loops"), words::<LoopMode>());
        assert_eq!(by_key("breadcrumbs"), words::<Breadcrumbs>());
        assert_eq!(by_key("log"), LEVELS);
    }

    /// Vulkan Configurator's view of the settings: a manifest's `features.settings`, from [`VARIABLES`].
    fn manifest_settings() -> serde_json::Value {
        use serde_json::json;
        let settings: Vec<serde_json::Value> = VARIABLES
            .iter()
            .filter_map(|v| Some((v, v.setting.as_ref()?)))
            .map(|(v, s)| {
                let mut entry = json!({
                    "key": v.key(),
                    "env": v.name,
                    "label": s.label,
                    "description": s.description,
                    "platforms": ["LINUX"],
                });
                let fields = match &s.kind {
                    Kind::Enum { values, default } => json!({
                        "type": "ENUM",
                        "flags": values
                            .iter()
                            .map(|(key, label, description)| {
                                json!({"key": key, "label": label, "description": description})
                            })
                            .collect::<Vec<_>>(),
                        "default": default,
                    }),
                    Kind::Bool { default } => json!({"type": "BOOL", "default": default}),
                    Kind::Int { default, min, max, unit } => json!({
                        "type": "INT",
                        "default": default,
                        "range": {"min": min, "max": max},
                        "unit": unit,
                    }),
                    Kind::Text { .. } => json!({"type": "STRING", "default": ""}),
                    Kind::Folder { .. } => json!({"type": "SAVE_FOLDER", "default": ""}),
                    Kind::File { .. } => json!({"type": "SAVE_FILE", "default": ""}),
                };
                for (k, value) in fields.as_object().expect("an object") {
                    entry[k] = value.clone();
                }
                if let Some((key, values)) = s.depends_on {
                    entry["dependence"] = json!({
                        "mode": "ANY",
                        "settings": values.iter().map(|v| json!({"key": key, "value": v})).collect::<Vec<_>>(),
                    });
                }
                entry
            })
            .collect();
        serde_json::Value::Array(settings)
    }

    #[test]
    fn the_manifests_list_every_setting_with_its_default() {
        // A setting added to VARIABLES must reach Vulkan Configurator: `BLACKBOX_BLESS=1 cargo test -p
        // blackbox-layer manifests` writes the manifests' settings from VARIABLES, for review.
        let bless = std::env::var_os("BLACKBOX_BLESS").is_some();
        let expected = manifest_settings();
        for name in ["VkLayer_blackbox.json", "VkLayer_blackbox_implicit.json"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../manifest")
                .join(name);
            let text = std::fs::read_to_string(&path).expect("manifest");
            let mut manifest: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            if bless {
                manifest["layer"]["features"]["settings"] = expected.clone();
                let mut out = serde_json::to_string_pretty(&manifest).expect("JSON");
                out.push('\n');
                std::fs::write(&path, out).expect("write manifest");
                continue;
            }
            let listed = &manifest["layer"]["features"]["settings"];
            let keys = |v: &serde_json::Value| -> Vec<String> {
                v.as_array()
                    .map(|a| {
                        a.iter()
                            .map(|s| s["key"].as_str().unwrap_or("?").to_owned())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            assert_eq!(
                keys(listed),
                keys(&expected),
                "{name}: settings listed against VARIABLES"
            );
            assert_eq!(
                listed,
                &expected,
                "{name}: features.settings differs from VARIABLES (BLACKBOX_BLESS=1 rewrites it); expected:\n{}",
                serde_json::to_string_pretty(&expected).unwrap_or_default()
            );
        }
    }

    #[test]
    fn every_variable_is_documented_once() {
        let mut names: Vec<_> = VARIABLES.iter().map(|v| v.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), VARIABLES.len());
        let readme = include_str!("../../README.md");
        for v in VARIABLES {
            assert!(
                readme.contains(&format!("`{}`", v.name)),
                "{} missing from the README's table",
                v.name
            );
        }
    }
}
