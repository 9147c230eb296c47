//! Every `VK_BLACKBOX_*` variable, parsed once, in this one place.
//!
//! A bad value never stops the app: it becomes a warning that names the variable, the value and what is
//! accepted, and the default is used. The warnings are kept until the log is set up, then logged.

use blackbox_engine::{LoopMode, NanLevel};
use std::ffi::OsString;
use std::path::PathBuf;

/// One documented variable (the README's table mirrors this list).
pub struct Variable {
    /// The environment variable.
    pub name: &'static str,
    /// What it accepts.
    pub accepted: &'static str,
    /// What happens when it is unset.
    pub default: &'static str,
}

/// The variables this build reads. `VK_BLACKBOX_ENABLE` / `VK_BLACKBOX_DISABLE` are the loader's.
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "VK_BLACKBOX_OUTPUT",
        accepted: "a folder path (created if missing, mode 700)",
        default: "$XDG_STATE_HOME/blackbox, else ~/.local/state/blackbox",
    },
    Variable {
        name: "VK_BLACKBOX_LOG",
        accepted: "a level (off, error, warn, info, debug, trace) or env_logger directives for blackbox targets",
        default: "info",
    },
    Variable { name: "VK_BLACKBOX_LOG_FILE", accepted: "a file path (appended to; created mode 600)", default: "stderr" },
    Variable { name: "VK_BLACKBOX_ASSERT", accepted: "off, log, abort, crash", default: "log" },
    Variable { name: "VK_BLACKBOX_PRINTF", accepted: "on, off", default: "on" },
    Variable { name: "VK_BLACKBOX_NAN", accepted: "off, outputs, ops", default: "off" },
    Variable { name: "VK_BLACKBOX_LOOPS", accepted: "off, report, break", default: "off" },
    Variable {
        name: "VK_BLACKBOX_LOOP_LIMIT",
        accepted: "iterations of one loop per invocation before it is reported, 0 for no iteration budget",
        default: "16777216 (2^24)",
    },
    Variable {
        name: "VK_BLACKBOX_LOOP_MS",
        accepted: "milliseconds an invocation may spend in loops (needs VK_KHR_shader_clock), 0 for none",
        default: "no time budget",
    },
    Variable { name: "VK_BLACKBOX_INT", accepted: "off, on", default: "off" },
    Variable {
        name: "VK_BLACKBOX_SHADERS",
        accepted: "comma-separated shader id prefixes or debug names",
        default: "every shader",
    },
    Variable { name: "VK_BLACKBOX_DUMP_SHADERS", accepted: "a folder path (folders 700, files 600)", default: "no dump" },
    Variable {
        name: "VK_BLACKBOX_SKIP",
        accepted: "comma-separated selectors: label:TEXT, pipeline:NAME, shader:ID|FILE|ENTRY, command:N or command:N-M",
        default: "nothing skipped",
    },
    Variable { name: "VK_BLACKBOX_BREADCRUMBS", accepted: "off, submit, pass, command", default: "command" },
    Variable { name: "VK_BLACKBOX_WATCHDOG_MS", accepted: "milliseconds, 0 turns the watchdog off", default: "10000" },
    Variable {
        name: "VK_BLACKBOX_SUSPECTS",
        accepted: "set by blackbox bisect: a file each label, pipeline, shader and command index with work is appended to",
        default: "unset",
    },
    Variable { name: "VK_BLACKBOX_RUN_STATUS", accepted: "set by blackbox run: a file each instance appends a line to", default: "unset" },
];

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

/// `on` / `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch(pub bool);

keywords!(Switch {
    "on" => Switch(true),
    "off" => Switch(false),
});

/// Levels the log filter accepts.
const LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

/// The layer's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Folder reports are written to; checked writable (or replaced by a fallback) at start-up.
    pub output_dir: PathBuf,
    /// An env_logger filter, already validated.
    pub log_filter: String,
    /// Where the log goes; `None` is stderr.
    pub log_file: Option<PathBuf>,
    /// What a failing assert does.
    pub assert: AssertMode,
    /// Whether `debugPrintf` calls become records.
    pub printf: bool,
    /// NaN/Inf guards.
    pub nan: NanLevel,
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
    pub shader_filter: Vec<String>,
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
}

/// Parses a keyword variable: its value on a match, else a warning and the default.
fn keyword<T: Keyword>(
    var: &impl Fn(&str) -> Option<OsString>,
    name: &str,
    default: T,
    warnings: &mut Vec<String>,
) -> T {
    let Some(value) = var(name).filter(|v| !v.is_empty()) else {
        return default;
    };
    let text = value.to_string_lossy();
    if let Some(v) = T::from_word(&text) {
        return v;
    }
    let accepted: Vec<&str> = T::WORDS.iter().map(|(k, _)| *k).collect();
    warnings.push(format!(
        "{name}={text:?} is not valid; accepted: {}; using the default `{}`",
        accepted.join(", "),
        default.word()
    ));
    default
}

/// Parses a whole-number variable: its value, else (with a warning) the default.
fn number(
    var: &impl Fn(&str) -> Option<OsString>,
    name: &str,
    default: u32,
    accepted: &str,
    warnings: &mut Vec<String>,
) -> u32 {
    let Some(value) = var(name).filter(|v| !v.is_empty()) else {
        return default;
    };
    let text = value.to_string_lossy();
    text.trim().parse().unwrap_or_else(|_| {
        warnings.push(format!(
            "{name}={text:?} is not valid; accepted: {accepted}; using the default `{default}`"
        ));
        default
    })
}

/// A config and the warnings its parsing produced.
pub struct Parsed {
    /// The settings in force.
    pub config: Config,
    /// One message per bad value, to be logged once logging exists.
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads the process environment.
    pub fn from_process_env() -> Parsed {
        Self::from_env(|name| std::env::var_os(name))
    }

    /// Reads the variables through `var`, so tests can feed any environment.
    pub fn from_env(var: impl Fn(&str) -> Option<OsString>) -> Parsed {
        let mut warnings = Vec::new();
        let set = |name: &str| var(name).filter(|v| !v.is_empty());

        let log_filter = match set("VK_BLACKBOX_LOG").map(|v| v.to_string_lossy().into_owned()) {
            None => "info".to_owned(),
            Some(value) => match check_log_filter(&value) {
                Ok(()) => value,
                Err(why) => {
                    warnings.push(format!(
                        "VK_BLACKBOX_LOG={value:?} is not valid ({why}); accepted: a level ({}) or \
                         directives like `blackbox=debug`; using the default `info`",
                        LEVELS.join(", ")
                    ));
                    "info".to_owned()
                }
            },
        };

        let log_file = set("VK_BLACKBOX_LOG_FILE").map(PathBuf::from);

        let default_output = default_output_dir(&var);
        let output_dir = match set("VK_BLACKBOX_OUTPUT").map(PathBuf::from) {
            None => default_output,
            Some(dir) if dir.is_relative() => {
                // A relative path would follow the app's working directory, which apps change; anchor it now.
                std::env::current_dir()
                    .map(|cwd| cwd.join(&dir))
                    .unwrap_or(dir)
            }
            Some(dir) => dir,
        };

        let assert = keyword(&var, "VK_BLACKBOX_ASSERT", AssertMode::Log, &mut warnings);
        let Switch(printf) = keyword(&var, "VK_BLACKBOX_PRINTF", Switch(true), &mut warnings);
        let nan = keyword(&var, "VK_BLACKBOX_NAN", NanLevel::Off, &mut warnings);
        let loops = keyword(&var, "VK_BLACKBOX_LOOPS", LoopMode::Off, &mut warnings);
        let loop_limit = number(
            &var,
            "VK_BLACKBOX_LOOP_LIMIT",
            blackbox_engine::DEFAULT_LOOP_LIMIT,
            "a whole number of iterations, 0 for no iteration budget",
            &mut warnings,
        );
        let loop_ms = Some(number(
            &var,
            "VK_BLACKBOX_LOOP_MS",
            0,
            "a whole number of milliseconds, 0 for no time budget",
            &mut warnings,
        ))
        .filter(|&ms| ms > 0);
        if loops != LoopMode::Off && loop_limit == 0 && loop_ms.is_none() {
            warnings.push(format!(
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
        let Switch(int_checks) = keyword(&var, "VK_BLACKBOX_INT", Switch(false), &mut warnings);
        let breadcrumbs = keyword(
            &var,
            "VK_BLACKBOX_BREADCRUMBS",
            Breadcrumbs::Command,
            &mut warnings,
        );
        let checkpoints = keyword(
            &var,
            "VK_BLACKBOX_CHECKPOINTS",
            Checkpoints::Auto,
            &mut warnings,
        );
        let shader_filter = set("VK_BLACKBOX_SHADERS")
            .map(|v| {
                v.to_string_lossy()
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let dump_shaders = set("VK_BLACKBOX_DUMP_SHADERS").map(PathBuf::from);
        let skip = match set("VK_BLACKBOX_SKIP") {
            None => crate::skip::Skip::default(),
            Some(v) => {
                let (selectors, bad) = crate::skip::parse_list(&v.to_string_lossy());
                warnings.extend(bad);
                crate::skip::Skip { selectors }
            }
        };
        let suspects = set("VK_BLACKBOX_SUSPECTS").map(PathBuf::from);
        let watchdog_ms = match set("VK_BLACKBOX_WATCHDOG_MS")
            .map(|v| v.to_string_lossy().trim().to_owned())
        {
            None => Some(10_000),
            Some(text) => match text.parse::<u64>() {
                Ok(0) => None,
                Ok(ms) => Some(ms),
                Err(_) => {
                    warnings.push(format!(
                        "VK_BLACKBOX_WATCHDOG_MS={text:?} is not valid; accepted: a whole number of milliseconds, 0 \
                         turns the watchdog off; using the default `10000`"
                    ));
                    Some(10_000)
                }
            },
        };

        Parsed {
            config: Config {
                output_dir,
                log_filter,
                log_file,
                assert,
                printf,
                nan,
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
            },
            warnings,
        }
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
            c.shader_filter,
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
        assert!(w.contains("VK_BLACKBOX_PRINTF=\"yes\" is not valid; accepted: on, off; using the default `on`"), "{w}");
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
