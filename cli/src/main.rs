//! `blackbox`: runs Vulkan apps under the Blackbox layer, installs it, checks the machine, reads reports,
//! instruments SPIR-V offline and demonstrates the layer.
//!
//! Exit codes: 0 success, 1 the verb failed, 2 usage error; `run` passes on the app's own code.

mod demo;
mod doctor;
mod install;
mod layer_lib;
mod manifest;
mod reports;
mod run;
mod shader;
mod triage;

#[cfg(test)]
mod test_env {
    use std::collections::HashMap;
    use std::ffi::OsString;

    /// An environment for the pure functions that take one: `env_of(&[("HOME", "/h")])`.
    pub fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| map.get(k).cloned()
    }
}

use std::ffi::OsString;
use std::path::PathBuf;

const VERSION: &str = env!("CARGO_PKG_VERSION");

const MAIN_HELP: &str = "\
blackbox: reports GPU crashes, hangs and shader errors of Vulkan apps

Usage: blackbox <COMMAND> [OPTIONS]

Commands:
  demo         See what Blackbox reports (a NaN, a shader assert, a GPU hang) on this machine's device
  run          Run a Vulkan app with the Blackbox layer enabled (nothing to install)
  report       Print a crash report (a report folder, its report.json, or the newest in a folder)
  triage       Group the reports under folders by crash signature, most frequent first
  instrument   Instrument a SPIR-V module offline as the layer would, to inspect or validate the result
  shader-info  Print what a SPIR-V module holds: shader id, entry points, source files, debug names
  install      Install the layer as an implicit layer, for this user or system-wide
  uninstall    Remove what `blackbox install` wrote
  doctor       Check the Vulkan loader, drivers, devices and the layer

Options:
  -h, --help     Print help (`blackbox <COMMAND> --help` for a command's)
  -V, --version  Print the version
";

const RUN_HELP: &str = "\
Run APP with the Blackbox layer enabled, without installing anything.

Usage: blackbox run [OPTIONS] [--] APP [ARGS]...

The layer is the libVkLayer_blackbox.so built beside this blackbox executable (or --layer); a manifest for
it is written to a temporary folder, removed when APP exits. stdin, stdout and stderr are APP's.

Options:
      --explicit    Enable the layer as an explicit layer (VK_INSTANCE_LAYERS, VK_ADD_LAYER_PATH) instead
                    of an implicit one (VK_BLACKBOX_ENABLE=1, XDG_DATA_DIRS)
      --layer PATH  The layer library to use (a file, or a folder holding libVkLayer_blackbox.so)
      --validation  Also enable VK_LAYER_KHRONOS_validation, below Blackbox
  -v, --verbose     Say on stderr which layer library and manifest are used
  -h, --help        Print help

Exit status: APP's; 128+N if APP was killed by signal N; 127 if APP is not found, 126 if it cannot be run.
";

const REPORT_HELP: &str = "\
Print a crash report that the layer wrote, as text (coloured on a terminal) or as JSON.

Usage: blackbox report [OPTIONS] PATH

PATH is a report folder (<output>/<app>-<pid>-<n>/, holding report.json and report.txt), its report.json,
or a folder of report folders, such as the layer's output folder (VK_BLACKBOX_OUTPUT, by default
$XDG_STATE_HOME/blackbox or ~/.local/state/blackbox): then the newest report in it or below it, by the time
it was written, and a note on stderr says which one and how many others there are.

Options:
      --json          Print the report as JSON (read and written again: normalised, unknown fields dropped)
      --color WHEN    Colour the text: auto (when stdout is a terminal and NO_COLOR is not set), always,
                      never [default: auto]
  -h, --help          Print help

Exit status: 0 if the report was printed; 1 if PATH does not exist, holds no report, or the report is not
valid JSON or has a schema version this blackbox does not read.
";

const TRIAGE_HELP: &str = "\
Group the crash reports under folders by crash signature: one line per bug, the most frequent first.

Usage: blackbox triage [OPTIONS] DIR...

Reads every report.json in each DIR and below it (following symbolic links, each folder once; a DIR may
also be a report.json file) and groups the reports by their signature, which names the work in flight with
numbers left out, so one bug is one line however many frames, runs and machines reported it. Each line:
how many reports, the signature, the kind, when first and last seen, how many distinct apps and devices,
the command in flight in the newest report (labels > command [pipeline]), and that report's folder, to
give to `blackbox report`. Lines are sorted by count, then by last seen, newest first. Reports that
cannot be read (not JSON, unknown schema version) are listed on stderr and counted, never fatal.

Options:
      --json         Print the groups as a JSON array (the summary line goes to stderr)
      --min-count N  Only show signatures with at least N reports
  -h, --help         Print help

Exit status: 0, also when no report is found; 1 if a DIR does not exist or cannot be read (after reading
the others).
";

const INSTRUMENT_HELP: &str = "\
Instrument a SPIR-V module offline, as the layer does when the app creates it: shader asserts and
debugPrintf calls become records in the error buffer, and NaN/Inf checks are added at the chosen level.

Usage: blackbox instrument [OPTIONS] IN.spv -o OUT.spv

IN.spv is a SPIR-V binary (either byte order). OUT.spv is written little-endian and atomically (a temporary
file in the same folder, renamed over it); a summary line goes to stderr. A module the engine cannot
instrument is not written: the reason goes to stderr.

The records go to the error buffer at the device address --address, baked into the module. The default, 0,
suits inspection and validation (spirv-val); such a module faults if it runs and has something to report.

Options:
  -o, --output OUT       Where to write the module, - for stdout (binary) [required]
      --nan LEVEL        NaN/Inf checks: off, outputs (float values leaving the shader) or ops (every float
                         operation that can make NaN or Inf from finite operands, and outputs) [default: off]
      --no-asserts       Remove BB_ASSERTs instead of turning them into records
      --no-printf        Remove debugPrintf calls instead of turning them into records
      --assert-crash     After a failing assert's record, fault the device on purpose, as
                         VK_BLACKBOX_ASSERT=crash does
      --keep-debug-info  Keep the NonSemantic.* instructions (source-level debug info); by default they are
                         removed so that the module loads without VK_KHR_shader_non_semantic_info
      --address ADDR     The error buffer's device address, hex (0x...) or decimal [default: 0]
      --site-base N      The global index of the module's first site [default: 0]
      --sites            Print the site table to stdout, one line per site: its global index, kind
                         (nan-op OP, nan-output WHAT, assert ID, printf \"FORMAT\"), source location (? when
                         the module has no line information) and the values its records carry
  -h, --help             Print help

Exit status: 0 if OUT was written; 1 if IN cannot be read, is not SPIR-V or cannot be instrumented, or OUT
cannot be written.
";

const SHADER_INFO_HELP: &str = "\
Print what the engine reads from a SPIR-V module: its shader id (the content hash that logs, reports,
VK_BLACKBOX_SHADERS and VK_BLACKBOX_DUMP_SHADERS use), SPIR-V version, entry points with their stages,
source files (name, language, whether the module carries the text and how many lines) and debug names.

Usage: blackbox shader-info [OPTIONS] IN.spv

Options:
      --json  Print the same as a JSON object
  -h, --help  Print help

Exit status: 0; 1 if IN cannot be read or is not a SPIR-V module the engine reads.
";

const DEMO_HELP: &str = "\
See what Blackbox reports, on this machine's Vulkan device (lavapipe where there is no GPU): runs three
scenarios of the test app bb-testapp under the layer and prints what Blackbox logged and reported.

Usage: blackbox demo [OPTIONS]

  1. The rare flash: one invocation normalizes a zero vector; VK_BLACKBOX_NAN=ops logs the NaN's origin.
  2. The assert: a shader assert fails; VK_BLACKBOX_ASSERT=abort stops the app with a report naming it.
  3. The hang: a dispatch runs far too long; the watchdog's report names it among the work in flight.

The layer and bb-testapp are the ones built beside this blackbox executable (cargo build --workspace). The
layer is enabled as `blackbox run` does, with VK_LAYER_KHRONOS_validation below it when it is installed.
Each scenario gets a fresh report folder and at most 120 s; the environment's VK_BLACKBOX_* variables are
not passed on. Progress goes to stderr. Takes a few seconds on lavapipe.

Options:
      --keep DIR  Keep the reports in DIR/nan, DIR/assert and DIR/hang (new or empty folders) instead of a
                  temporary folder
  -h, --help      Print help

Exit status: 0 if every scenario produced what it should (a NaN line naming normalize(), a shader assert
report, a GPU hang report); 1 otherwise, saying what was missing.
";

const INSTALL_HELP: &str = "\
Install the Blackbox layer as an implicit Vulkan layer, off until VK_BLACKBOX_ENABLE=1.

Usage: blackbox install [OPTIONS]

Copies the layer library to $XDG_DATA_HOME/blackbox/lib/ (default ~/.local/share) and writes its manifest to
$XDG_DATA_HOME/vulkan/implicit_layer.d/VkLayer_blackbox.json. With --system: /usr/local/lib/blackbox/ and
/usr/local/share/vulkan/implicit_layer.d/ (needs root). Apps already running keep the library they loaded.

Options:
      --system      Install for all users
      --layer PATH  The layer library to install (default: the one beside this blackbox executable)
  -h, --help        Print help
";

const UNINSTALL_HELP: &str = "\
Remove the layer library and manifest that `blackbox install` wrote.

Usage: blackbox uninstall [OPTIONS]

Options:
      --system  Remove the system-wide install (needs root)
  -h, --help    Print help
";

const DOCTOR_HELP: &str = "\
Check what this machine offers Blackbox: the Vulkan loader, drivers and devices (and which crash-reporting
features each device has), the layer library, installed manifests, and a real load of the layer.

Usage: blackbox doctor [OPTIONS]

Exit status: 0 if no problem was found, 1 otherwise.

Options:
      --layer PATH  The layer library to check (default: the one beside this blackbox executable)
  -h, --help        Print help
";

enum Cmd {
    Help(&'static str),
    Version,
    Run(run::RunOptions),
    Report(reports::ReportOptions),
    Triage(triage::TriageOptions),
    Instrument(shader::InstrumentOptions),
    ShaderInfo {
        input: PathBuf,
        json: bool,
    },
    Demo(demo::DemoOptions),
    Install {
        system: bool,
        layer: Option<PathBuf>,
    },
    Uninstall {
        system: bool,
    },
    Doctor {
        layer: Option<PathBuf>,
    },
    Probe {
        mode: String,
        library: PathBuf,
    },
}

/// A usage error: a message, and the command whose usage applies.
#[derive(Debug)]
struct Usage {
    verb: Option<&'static str>,
    msg: String,
}

fn usage<T>(verb: Option<&'static str>, msg: impl Into<String>) -> Result<T, Usage> {
    Err(Usage {
        verb,
        msg: msg.into(),
    })
}

/// One parsed option: its canonical name and its value, if it takes one.
type Opt = (&'static str, Option<OsString>);

/// Options of `verb`: `flags` take no value, `valued` take one (`--x V` or `--x=V`); aliases map short names.
/// Stops at `--` or, when `command_follows`, at the first argument that is not an option; returns the
/// options and the rest.
fn parse_options(
    verb: &'static str,
    args: &mut std::collections::VecDeque<OsString>,
    flags: &[&'static str],
    valued: &[&'static str],
    aliases: &[(&str, &'static str)],
    command_follows: bool,
) -> Result<Vec<Opt>, Usage> {
    let mut opts = Vec::new();
    while let Some(arg) = args.front().cloned() {
        let Some(s) = arg.to_str() else {
            if command_follows {
                break;
            }
            return usage(
                Some(verb),
                format!("unexpected argument '{}'", arg.to_string_lossy()),
            );
        };
        if s == "--" {
            args.pop_front();
            break;
        }
        if !s.starts_with('-') || s == "-" {
            if command_follows {
                break;
            }
            return usage(Some(verb), format!("unexpected argument '{s}'"));
        }
        args.pop_front();
        let (name, inline) = match s.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(OsString::from(v))),
            _ => (s, None),
        };
        let name = aliases
            .iter()
            .find(|(a, _)| *a == name)
            .map(|(_, n)| *n)
            .unwrap_or(name);
        if name == "--help" {
            opts.push(("--help", None));
        } else if let Some(flag) = flags.iter().find(|f| **f == name) {
            if inline.is_some() {
                return usage(Some(verb), format!("{flag} takes no value"));
            }
            opts.push((flag, None));
        } else if let Some(opt) = valued.iter().find(|o| **o == name) {
            let value = match inline {
                Some(v) => v,
                None => match args.pop_front() {
                    Some(v) => v,
                    None => return usage(Some(verb), format!("{opt} needs a value")),
                },
            };
            if value.is_empty() {
                return usage(Some(verb), format!("{opt} needs a non-empty value"));
            }
            opts.push((opt, Some(value)));
        } else {
            return usage(Some(verb), format!("unknown option '{name}'"));
        }
    }
    Ok(opts)
}

/// Options and operands of `verb` in any order (`--` ends the options): the options, then the operands.
fn parse_with_operands(
    verb: &'static str,
    args: &mut std::collections::VecDeque<OsString>,
    flags: &[&'static str],
    valued: &[&'static str],
    aliases: &[(&str, &'static str)],
) -> Result<(Vec<Opt>, Vec<OsString>), Usage> {
    let after_dashes = match args.iter().position(|a| a == "--") {
        Some(i) => args.split_off(i).into_iter().skip(1).collect(),
        None => Vec::new(),
    };
    let mut opts = Vec::new();
    let mut operands = Vec::new();
    loop {
        opts.extend(parse_options(verb, args, flags, valued, aliases, true)?);
        match args.pop_front() {
            Some(operand) => operands.push(operand),
            None => break,
        }
    }
    operands.extend(after_dashes);
    Ok((opts, operands))
}

fn has(opts: &[Opt], name: &str) -> bool {
    opts.iter().any(|(n, _)| *n == name)
}

fn value(opts: &[Opt], name: &str) -> Option<OsString> {
    opts.iter()
        .rev()
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.clone())
}

/// The one operand of `verb`, `what` by name in the message when there is none or more than one.
fn one_operand(
    verb: &'static str,
    mut operands: Vec<OsString>,
    what: &str,
) -> Result<PathBuf, Usage> {
    match operands.len() {
        0 => usage(Some(verb), format!("no {what} given")),
        1 => Ok(PathBuf::from(operands.remove(0))),
        _ => usage(
            Some(verb),
            format!(
                "unexpected argument '{}' (one {what} only)",
                operands[1].to_string_lossy()
            ),
        ),
    }
}

fn verb_help(verb: &str) -> Option<&'static str> {
    match verb {
        "run" => Some(RUN_HELP),
        "report" => Some(REPORT_HELP),
        "triage" => Some(TRIAGE_HELP),
        "instrument" => Some(INSTRUMENT_HELP),
        "shader-info" => Some(SHADER_INFO_HELP),
        "demo" => Some(DEMO_HELP),
        "install" => Some(INSTALL_HELP),
        "uninstall" => Some(UNINSTALL_HELP),
        "doctor" => Some(DOCTOR_HELP),
        _ => None,
    }
}

fn verb_name(verb: &str) -> Option<&'static str> {
    [
        "run",
        "report",
        "triage",
        "instrument",
        "shader-info",
        "demo",
        "install",
        "uninstall",
        "doctor",
    ]
    .into_iter()
    .find(|v| *v == verb)
}

fn parse(args: Vec<OsString>) -> Result<Cmd, Usage> {
    let mut args: std::collections::VecDeque<OsString> = args.into();
    let Some(first) = args.pop_front() else {
        return usage(None, "no command given");
    };
    let first = first.to_string_lossy().into_owned();
    match first.as_str() {
        "-h" | "--help" => return Ok(Cmd::Help(MAIN_HELP)),
        "-V" | "--version" => return Ok(Cmd::Version),
        "help" => {
            return match args.pop_front() {
                None => Ok(Cmd::Help(MAIN_HELP)),
                Some(v) => match verb_help(&v.to_string_lossy()) {
                    Some(h) => Ok(Cmd::Help(h)),
                    None => usage(None, format!("unknown command '{}'", v.to_string_lossy())),
                },
            }
        }
        _ => {}
    }
    let Some(verb) = verb_name(&first) else {
        if first.starts_with('-') {
            return usage(None, format!("unknown option '{first}'"));
        }
        return usage(None, format!("unknown command '{first}'"));
    };
    match verb {
        "run" => {
            let opts = parse_options(
                verb,
                &mut args,
                &["--explicit", "--validation", "--verbose"],
                &["--layer"],
                &[("-v", "--verbose"), ("-h", "--help")],
                true,
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(RUN_HELP));
            }
            if args.is_empty() {
                return usage(Some(verb), "no APP given");
            }
            Ok(Cmd::Run(run::RunOptions {
                explicit: has(&opts, "--explicit"),
                layer: value(&opts, "--layer").map(PathBuf::from),
                validation: has(&opts, "--validation"),
                verbose: has(&opts, "--verbose"),
                command: args.into_iter().collect(),
            }))
        }
        "report" => {
            let (opts, operands) = parse_with_operands(
                verb,
                &mut args,
                &["--json"],
                &["--color"],
                &[("-h", "--help")],
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(REPORT_HELP));
            }
            let color = match value(&opts, "--color") {
                None => reports::ColorWhen::Auto,
                Some(v) => match v.to_str().and_then(reports::ColorWhen::parse) {
                    Some(c) => c,
                    None => {
                        return usage(
                            Some(verb),
                            format!(
                                "--color takes auto, always or never, not '{}'",
                                v.to_string_lossy()
                            ),
                        )
                    }
                },
            };
            let path = one_operand(verb, operands, "PATH")?;
            Ok(Cmd::Report(reports::ReportOptions {
                path,
                json: has(&opts, "--json"),
                color,
            }))
        }
        "triage" => {
            let (opts, operands) = parse_with_operands(
                verb,
                &mut args,
                &["--json"],
                &["--min-count"],
                &[("-h", "--help")],
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(TRIAGE_HELP));
            }
            let min_count = match value(&opts, "--min-count") {
                None => 1,
                Some(v) => match v.to_str().and_then(|s| s.parse::<u64>().ok()) {
                    Some(n) => n,
                    None => {
                        return usage(
                            Some(verb),
                            format!("--min-count takes a number, not '{}'", v.to_string_lossy()),
                        )
                    }
                },
            };
            if operands.is_empty() {
                return usage(Some(verb), "no DIR given");
            }
            Ok(Cmd::Triage(triage::TriageOptions {
                dirs: operands,
                json: has(&opts, "--json"),
                min_count,
            }))
        }
        "instrument" => {
            let (opts, operands) = parse_with_operands(
                verb,
                &mut args,
                &[
                    "--no-asserts",
                    "--no-printf",
                    "--assert-crash",
                    "--keep-debug-info",
                    "--sites",
                ],
                &["--output", "--nan", "--address", "--site-base"],
                &[("-o", "--output"), ("-h", "--help")],
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(INSTRUMENT_HELP));
            }
            let input = one_operand(verb, operands, "IN.spv")?;
            let output = match value(&opts, "--output") {
                None => return usage(Some(verb), "no output given: -o OUT.spv (- for stdout)"),
                Some(v) if v == "-" => None,
                Some(v) => Some(PathBuf::from(v)),
            };
            let sites = has(&opts, "--sites");
            if output.is_none() && sites {
                return usage(
                    Some(verb),
                    "--sites prints to stdout, which -o - takes for the module: use one of them",
                );
            }
            let text = |name: &str| value(&opts, name).map(|v| v.to_string_lossy().into_owned());
            let nan = match text("--nan") {
                None => blackbox_engine::NanLevel::Off,
                Some(v) => match shader::parse_nan_level(&v) {
                    Some(level) => level,
                    None => {
                        return usage(
                            Some(verb),
                            format!("--nan takes off, outputs or ops, not '{v}'"),
                        )
                    }
                },
            };
            let address = match text("--address") {
                None => 0,
                Some(v) => match shader::parse_number(&v) {
                    Some(a) => a,
                    None => {
                        return usage(
                            Some(verb),
                            format!("--address takes a number (0x... or decimal), not '{v}'"),
                        )
                    }
                },
            };
            let site_base = match text("--site-base") {
                None => 0,
                Some(v) => match shader::parse_number(&v).and_then(|n| u32::try_from(n).ok()) {
                    Some(n) => n,
                    None => {
                        return usage(
                            Some(verb),
                            format!("--site-base takes a number below 2^32, not '{v}'"),
                        )
                    }
                },
            };
            let asserts = !has(&opts, "--no-asserts");
            if !asserts && has(&opts, "--assert-crash") {
                return usage(
                    Some(verb),
                    "--assert-crash needs the asserts that --no-asserts removes",
                );
            }
            Ok(Cmd::Instrument(shader::InstrumentOptions {
                input,
                output,
                engine: blackbox_engine::Options {
                    error_buffer_address: address,
                    site_base,
                    asserts,
                    printf: !has(&opts, "--no-printf"),
                    nan,
                    assert_crash: has(&opts, "--assert-crash"),
                    strip_non_semantic: !has(&opts, "--keep-debug-info"),
                    ..blackbox_engine::Options::default()
                },
                sites,
            }))
        }
        "shader-info" => {
            let (opts, operands) =
                parse_with_operands(verb, &mut args, &["--json"], &[], &[("-h", "--help")])?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(SHADER_INFO_HELP));
            }
            Ok(Cmd::ShaderInfo {
                input: one_operand(verb, operands, "IN.spv")?,
                json: has(&opts, "--json"),
            })
        }
        "demo" => {
            let opts = parse_options(
                verb,
                &mut args,
                &[],
                &["--keep"],
                &[("-h", "--help")],
                false,
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(DEMO_HELP));
            }
            no_more(verb, &args)?;
            Ok(Cmd::Demo(demo::DemoOptions {
                keep: value(&opts, "--keep").map(PathBuf::from),
            }))
        }
        "install" => {
            let opts = parse_options(
                verb,
                &mut args,
                &["--system"],
                &["--layer"],
                &[("-h", "--help")],
                false,
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(INSTALL_HELP));
            }
            no_more(verb, &args)?;
            Ok(Cmd::Install {
                system: has(&opts, "--system"),
                layer: value(&opts, "--layer").map(PathBuf::from),
            })
        }
        "uninstall" => {
            let opts = parse_options(
                verb,
                &mut args,
                &["--system"],
                &[],
                &[("-h", "--help")],
                false,
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(UNINSTALL_HELP));
            }
            no_more(verb, &args)?;
            Ok(Cmd::Uninstall {
                system: has(&opts, "--system"),
            })
        }
        "doctor" => {
            // Hidden: `doctor --probe-layer MODE LIB`, the child doctor runs to load the layer.
            if args.front().is_some_and(|a| a == "--probe-layer") {
                args.pop_front();
                let (Some(mode), Some(library), true) =
                    (args.pop_front(), args.pop_front(), args.is_empty())
                else {
                    return usage(Some(verb), "--probe-layer takes MODE and LIBRARY");
                };
                return Ok(Cmd::Probe {
                    mode: mode.to_string_lossy().into_owned(),
                    library: PathBuf::from(library),
                });
            }
            let opts = parse_options(
                verb,
                &mut args,
                &[],
                &["--layer"],
                &[("-h", "--help")],
                false,
            )?;
            if has(&opts, "--help") {
                return Ok(Cmd::Help(DOCTOR_HELP));
            }
            no_more(verb, &args)?;
            Ok(Cmd::Doctor {
                layer: value(&opts, "--layer").map(PathBuf::from),
            })
        }
        _ => unreachable!("verb_name only returns known verbs"),
    }
}

fn no_more(verb: &'static str, args: &std::collections::VecDeque<OsString>) -> Result<(), Usage> {
    match args.front() {
        Some(a) => usage(
            Some(verb),
            format!("unexpected argument '{}'", a.to_string_lossy()),
        ),
        None => Ok(()),
    }
}

fn synopsis(verb: Option<&str>) -> &'static str {
    match verb {
        Some("run") => {
            "Usage: blackbox run [--explicit] [--layer PATH] [--validation] [-v] [--] APP [ARGS]..."
        }
        Some("report") => "Usage: blackbox report [--json] [--color auto|always|never] PATH",
        Some("triage") => "Usage: blackbox triage [--json] [--min-count N] DIR...",
        Some("instrument") => {
            "Usage: blackbox instrument IN.spv -o OUT.spv [--nan off|outputs|ops] [--no-asserts] \
             [--no-printf] [--assert-crash] [--keep-debug-info] [--address ADDR] [--site-base N] [--sites]"
        }
        Some("shader-info") => "Usage: blackbox shader-info [--json] IN.spv",
        Some("demo") => "Usage: blackbox demo [--keep DIR]",
        Some("install") => "Usage: blackbox install [--system] [--layer PATH]",
        Some("uninstall") => "Usage: blackbox uninstall [--system]",
        Some("doctor") => "Usage: blackbox doctor [--layer PATH]",
        _ => {
            "Usage: blackbox <demo|run|report|triage|instrument|shader-info|install|uninstall|doctor> \
             [OPTIONS]"
        }
    }
}

fn execute(cmd: Cmd) -> anyhow::Result<i32> {
    match cmd {
        Cmd::Help(text) => {
            print!("{text}");
            Ok(0)
        }
        Cmd::Version => {
            println!("blackbox {VERSION}");
            Ok(0)
        }
        Cmd::Run(opts) => run::run(&opts),
        Cmd::Report(opts) => reports::report(&opts),
        Cmd::Triage(opts) => triage::triage(&opts),
        Cmd::Instrument(opts) => shader::instrument(&opts),
        Cmd::ShaderInfo { input, json } => shader::shader_info(&input, json),
        Cmd::Demo(opts) => demo::demo(&opts),
        Cmd::Install { system, layer } => install::install(system, layer.as_deref()).map(|()| 0),
        Cmd::Uninstall { system } => install::uninstall(system).map(|()| 0),
        Cmd::Doctor { layer } => doctor::doctor(layer.as_deref()),
        Cmd::Probe { mode, library } => Ok(doctor::probe(&mode, &library)),
    }
}

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let code = match parse(args) {
        Ok(cmd) => match execute(cmd) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("blackbox: error: {e:#}");
                1
            }
        },
        Err(u) => {
            eprintln!("blackbox: {}", u.msg);
            eprintln!("{}", synopsis(u.verb));
            match u.verb {
                Some(v) => eprintln!("Run 'blackbox {v} --help' for more."),
                None => eprintln!("Run 'blackbox --help' for more."),
            }
            2
        }
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Cmd, Usage> {
        parse(args.iter().map(OsString::from).collect())
    }

    #[test]
    fn run_stops_at_app() {
        let Ok(Cmd::Run(o)) = p(&[
            "run",
            "--explicit",
            "--layer=/x.so",
            "app",
            "--explicit",
            "-v",
        ]) else {
            panic!()
        };
        assert!(o.explicit && !o.validation && !o.verbose);
        assert_eq!(o.layer, Some(PathBuf::from("/x.so")));
        assert_eq!(o.command, vec!["app", "--explicit", "-v"]);

        let Ok(Cmd::Run(o)) = p(&["run", "--validation", "-v", "--layer", "d", "--", "--app"])
        else {
            panic!()
        };
        assert!(o.validation && o.verbose && !o.explicit);
        assert_eq!(o.layer, Some(PathBuf::from("d")));
        assert_eq!(o.command, vec!["--app"]);

        assert!(matches!(p(&["run", "--", "x", "--help"]), Ok(Cmd::Run(_))));
        assert!(matches!(p(&["run", "--help", "x"]), Ok(Cmd::Help(_))));
    }

    #[test]
    fn usage_errors() {
        for args in [
            &[][..],
            &["frobnicate"],
            &["report"],
            &["--bogus"],
            &["run"],
            &["run", "--"],
            &["run", "--bogus", "app"],
            &["run", "--layer"],
            &["run", "--explicit=1", "app"],
            &["install", "extra"],
            &["install", "--explicit"],
            &["uninstall", "--layer", "x"],
            &["doctor", "now"],
            &["doctor", "--probe-layer", "dlopen"],
            &["help", "frobnicate"],
            &["instrument"],
            &["instrument", "a.spv"],
            &["instrument", "-o", "b.spv"],
            &["instrument", "a.spv", "c.spv", "-o", "b.spv"],
            &["instrument", "a.spv", "-o"],
            &["instrument", "a.spv", "-o", "-", "--sites"],
            &["instrument", "a.spv", "-o", "b", "--nan", "all"],
            &["instrument", "a.spv", "-o", "b", "--address", "0xg"],
            &["instrument", "a.spv", "-o", "b", "--address=-1"],
            &[
                "instrument",
                "a.spv",
                "-o",
                "b",
                "--site-base",
                "0x100000000",
            ],
            &[
                "instrument",
                "a.spv",
                "-o",
                "b",
                "--no-asserts",
                "--assert-crash",
            ],
            &["instrument", "a.spv", "-o", "b", "--sites=1"],
            &["shader-info"],
            &["shader-info", "a", "b"],
            &["shader-info", "--bogus", "a"],
            &["demo", "now"],
            &["demo", "--keep"],
            &["demo", "--validation"],
            &["report", "a", "b"],
            &["report", "--color"],
            &["report", "--color=sometimes", "x"],
            &["report", "--json=1", "x"],
            &["report", "--bogus", "x"],
            &["triage"],
            &["triage", "--json"],
            &["triage", "--min-count", "many", "d"],
            &["triage", "--min-count=-1", "d"],
            &["report", "--"],
        ] {
            assert!(p(args).is_err(), "{args:?} should be a usage error");
        }
    }

    #[test]
    fn other_verbs() {
        assert!(matches!(p(&["--version"]), Ok(Cmd::Version)));
        assert!(matches!(p(&["-h"]), Ok(Cmd::Help(_))));
        assert!(matches!(p(&["help", "run"]), Ok(Cmd::Help(RUN_HELP))));
        assert!(matches!(
            p(&["install", "--system"]),
            Ok(Cmd::Install {
                system: true,
                layer: None
            })
        ));
        assert!(matches!(
            p(&["uninstall"]),
            Ok(Cmd::Uninstall { system: false })
        ));
        assert!(matches!(p(&["doctor"]), Ok(Cmd::Doctor { layer: None })));
        assert!(matches!(p(&["doctor", "-h"]), Ok(Cmd::Help(DOCTOR_HELP))));
        assert!(matches!(
            p(&["doctor", "--probe-layer", "loader", "/l.so"]),
            Ok(Cmd::Probe { .. })
        ));
    }

    #[test]
    fn report_and_triage_take_options_and_operands_in_any_order() {
        let Ok(Cmd::Report(o)) = p(&["report", "dir", "--json"]) else {
            panic!()
        };
        assert!(o.json && o.color == reports::ColorWhen::Auto);
        assert_eq!(o.path, PathBuf::from("dir"));
        let Ok(Cmd::Report(o)) = p(&["report", "--color", "never", "--", "--dir"]) else {
            panic!()
        };
        assert!(!o.json && o.color == reports::ColorWhen::Never);
        assert_eq!(o.path, PathBuf::from("--dir"));
        assert!(matches!(
            p(&["report", "x", "-h"]),
            Ok(Cmd::Help(REPORT_HELP))
        ));
        assert!(matches!(p(&["help", "triage"]), Ok(Cmd::Help(TRIAGE_HELP))));

        let Ok(Cmd::Triage(o)) = p(&["triage", "a", "--min-count=3", "b", "--json", "--", "-c"])
        else {
            panic!()
        };
        assert!(o.json);
        assert_eq!(o.min_count, 3);
        assert_eq!(o.dirs, ["a", "b", "-c"]);
        let Ok(Cmd::Triage(o)) = p(&["triage", "a"]) else {
            panic!()
        };
        assert!(!o.json && o.min_count == 1);
    }

    #[test]
    fn instrument_shader_info_and_demo_options() {
        let Ok(Cmd::Instrument(o)) = p(&["instrument", "in.spv", "-o", "out.spv"]) else {
            panic!()
        };
        assert_eq!(o.input, PathBuf::from("in.spv"));
        assert_eq!(o.output, Some(PathBuf::from("out.spv")));
        assert!(!o.sites);
        assert_eq!(
            o.engine,
            blackbox_engine::Options {
                error_buffer_address: 0,
                site_base: 0,
                ..blackbox_engine::Options::default()
            }
        );

        let Ok(Cmd::Instrument(o)) = p(&[
            "instrument",
            "--nan=ops",
            "-o",
            "-",
            "--no-printf",
            "--address",
            "0xdead0000",
            "in.spv",
            "--site-base=12",
            "--keep-debug-info",
            "--assert-crash",
        ]) else {
            panic!()
        };
        assert_eq!(o.output, None);
        let e = &o.engine;
        assert_eq!(e.nan, blackbox_engine::NanLevel::Ops);
        assert_eq!((e.error_buffer_address, e.site_base), (0xdead_0000, 12));
        assert!(e.asserts && !e.printf && e.assert_crash && !e.strip_non_semantic);

        let Ok(Cmd::Instrument(o)) = p(&[
            "instrument",
            "--no-asserts",
            "--sites",
            "--output=o.spv",
            "--nan",
            "outputs",
            "--address=4096",
            "--",
            "-in.spv",
        ]) else {
            panic!()
        };
        assert_eq!(o.input, PathBuf::from("-in.spv"));
        assert!(o.sites && !o.engine.asserts && o.engine.printf);
        assert_eq!(o.engine.nan, blackbox_engine::NanLevel::Outputs);
        assert_eq!(o.engine.error_buffer_address, 4096);
        assert!(matches!(
            p(&["instrument", "-h"]),
            Ok(Cmd::Help(INSTRUMENT_HELP))
        ));

        let Ok(Cmd::ShaderInfo { input, json }) = p(&["shader-info", "x.spv", "--json"]) else {
            panic!()
        };
        assert_eq!(input, PathBuf::from("x.spv"));
        assert!(json);
        assert!(matches!(
            p(&["help", "shader-info"]),
            Ok(Cmd::Help(SHADER_INFO_HELP))
        ));

        let Ok(Cmd::Demo(o)) = p(&["demo"]) else {
            panic!()
        };
        assert_eq!(o.keep, None);
        let Ok(Cmd::Demo(o)) = p(&["demo", "--keep", "reports"]) else {
            panic!()
        };
        assert_eq!(o.keep, Some(PathBuf::from("reports")));
        assert!(matches!(p(&["demo", "--help"]), Ok(Cmd::Help(DEMO_HELP))));
    }

    #[test]
    fn help_lists_only_current_verbs() {
        let commands: Vec<&str> = MAIN_HELP
            .lines()
            .filter(|l| l.starts_with("  ") && !l.trim_start().starts_with('-'))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(
            commands,
            [
                "demo",
                "run",
                "report",
                "triage",
                "instrument",
                "shader-info",
                "install",
                "uninstall",
                "doctor"
            ]
        );
        // Every verb listed is one `parse` knows, with its own help and synopsis; and the other way round.
        for verb in &commands {
            assert_eq!(verb_name(verb), Some(*verb));
            assert!(verb_help(verb).is_some(), "{verb}");
            assert!(p(&[verb, "--help"]).is_ok(), "{verb}");
            assert!(synopsis(Some(verb)).contains(&format!("blackbox {verb}")));
            assert!(synopsis(None).contains(verb), "{verb}");
        }
        assert_eq!(commands.len(), synopsis(None).matches('|').count() + 1);
        assert!(!MAIN_HELP.contains("probe"));
    }
}
