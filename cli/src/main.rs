//! `blackbox`: runs Vulkan apps under the Blackbox layer, installs it, checks the machine, reads reports,
//! instruments SPIR-V offline and demonstrates the layer.
//!
//! The command line is declared once, with clap's derive: [`Cli`] and its [`Verb`]s here, each verb's
//! options on the options struct its module runs with; `--help` is generated from those declarations.
//!
//! Exit codes: 0 success, 1 the verb failed, 2 usage error; `run` passes on the app's own code.

mod bisect;
mod demo;
mod doctor;
mod install;
mod layer_lib;
mod manifest;
mod reports;
mod run;
mod shader;
mod triage;
mod walk;

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

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser, Subcommand};

/// blackbox: reports GPU crashes, hangs and shader errors of Vulkan apps
#[derive(Debug, Parser)]
#[command(
    name = "blackbox",
    version,
    subcommand_required = true,
    arg_required_else_help = true,
    help_expected = true,
    after_help = "Run 'blackbox <COMMAND> --help' for a command's options. Exit status: 0 on success, 1 if the \
                  command failed, 2 on a usage error; 'run' passes on the app's."
)]
pub struct Cli {
    #[command(subcommand)]
    pub verb: Verb,
}

/// The verbs, in the order `--help` lists them.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// See what Blackbox reports (a NaN, a shader assert, a GPU hang) on this machine
    ///
    /// Runs three scenarios of the test app bb-testapp under the layer, on this machine's Vulkan device
    /// (lavapipe where there is no GPU), and prints what Blackbox logged and reported.
    ///
    /// 1. The rare flash: one invocation normalizes a zero vector; VK_BLACKBOX_NAN=ops logs the NaN's
    ///    origin.
    ///
    /// 2. The assert: a shader assert fails; VK_BLACKBOX_ASSERT=abort stops the app with a report naming it.
    ///
    /// 3. The hang: a dispatch runs far too long; the watchdog's report names it among the work in flight.
    ///
    /// The layer and bb-testapp are the ones built beside this blackbox executable (cargo build
    /// --workspace). The layer is enabled as `blackbox run` does, with VK_LAYER_KHRONOS_validation below it
    /// when it is installed. Each scenario gets a fresh report folder and at most 120 s; the environment's
    /// VK_BLACKBOX_* variables are not passed on. Progress goes to stderr. Takes a few seconds on lavapipe.
    ///
    /// Exit status: 0 if every scenario produced what it should (a NaN line naming normalize(), a shader
    /// assert report, a GPU hang report); 1 otherwise, saying what was missing.
    Demo(demo::DemoOptions),

    /// Run a Vulkan app with the Blackbox layer enabled (nothing to install)
    ///
    /// The layer is the libVkLayer_blackbox.so built beside this blackbox executable (or --layer); a
    /// manifest for it is written to a temporary folder, removed when APP exits. stdin, stdout and stderr
    /// are APP's. Options go before APP: everything after it is APP's arguments, also what looks like an
    /// option.
    ///
    /// When APP and the processes it started created no Vulkan instance through the layer, blackbox says
    /// so at exit, with the likely causes: a driver loaded directly through VK_DRIVER_FILES or
    /// VK_ICD_FILENAMES (bypassing the loader and every layer), a statically linked loader, or no Vulkan
    /// at all.
    ///
    /// Exit status: APP's; 128+N if APP was killed by signal N; 127 if APP is not found, 126 if it cannot be
    /// run; 1 if blackbox itself failed (no layer library, say).
    Run(run::RunOptions),

    /// Find the label, pipeline, shader or command whose work brings a crash, hang or NaN
    ///
    /// Runs APP again and again under the layer (as `blackbox run` does), each time skipping a different
    /// half of the suspects left (VK_BLACKBOX_SKIP: their draws, dispatches, copies and clears are not passed
    /// to the driver), until one is left whose skipping makes the symptom go. The suspects come from a first
    /// full run (the layer lists every label, pipeline, shader and command index with work); more full runs
    /// check the symptom is steady (--confirm): a flaky one is said so, with its rate, and not bisected. Two
    /// last runs check the answer: skipping the culprit alone (unless the last halving did just that), and
    /// keeping it alone.
    ///
    /// Each run's output (stdout and stderr together) and reports go to a folder of its own under --logs;
    /// runs are killed at --timeout. Progress goes to stderr; the runs, the culprit (as a report names it:
    /// label path, command, pipeline, shaders) and the command that reproduces the run without it go to
    /// stdout. The environment is passed on (set VK_BLACKBOX_NAN for --until nan, VK_BLACKBOX_WATCHDOG_MS for
    /// a faster hang report).
    ///
    /// Exit status: 0 if a culprit was named; 1 if the symptom never showed, was flaky, or no single suspect
    /// brings it; 2 on a usage error.
    Bisect(bisect::BisectOptions),

    /// Print a crash report (a report folder, its report.json, or the newest in a folder)
    ///
    /// The report is printed as text (coloured on a terminal) or as JSON. PATH is a report folder (<output>/<app>-<pid>-<n>/, holding report.json and report.txt), its
    /// report.json, or a folder of report folders, such as the layer's output folder (VK_BLACKBOX_OUTPUT, by
    /// default $XDG_STATE_HOME/blackbox or ~/.local/state/blackbox): then the newest report in it or below
    /// it, by the time it was written, and a note on stderr says which one and how many others there are.
    ///
    /// Exit status: 0 if the report was printed; 1 if PATH does not exist, holds no report, or the report is
    /// not valid JSON or has a schema version this blackbox does not read.
    Report(reports::ReportOptions),

    /// Group the reports under folders by crash signature, most frequent first
    ///
    /// Reads every report.json in each DIR and below it (following symbolic links, each folder once; a DIR
    /// may also be a report.json file) and groups the reports by their signature, which names the work in
    /// flight with numbers left out, so one bug is one line however many frames, runs and machines reported
    /// it. Each line: how many reports, the signature, the kind, when first and last seen, how many
    /// distinct apps and devices, the command in flight in the newest report (labels > command [pipeline]),
    /// and that report's folder, to give to `blackbox report`. Lines are sorted by count, then by last seen,
    /// newest first. Reports that cannot be read (not JSON, unknown schema version) are listed on stderr and
    /// counted, never fatal.
    ///
    /// Exit status: 0, also when no report is found; 1 if a DIR does not exist or cannot be read (after
    /// reading the others).
    Triage(triage::TriageOptions),

    /// Instrument a SPIR-V module offline as the layer would, to inspect or validate it
    ///
    /// As the layer does when the app creates a module: shader asserts and debugPrintf calls become
    /// records in the error buffer, and NaN/Inf checks are added at the chosen level.
    ///
    /// IN.spv is a SPIR-V binary (either byte order). OUT.spv is written little-endian and atomically (a
    /// temporary file in the same folder, renamed over it); a summary line goes to stderr. A module the
    /// engine cannot instrument is not written: the reason goes to stderr.
    ///
    /// The records go to the error buffer at the device address --address, baked into the module. The
    /// default, 0, suits inspection and validation (spirv-val); such a module faults if it runs and has
    /// something to report.
    ///
    /// Exit status: 0 if OUT was written; 1 if IN cannot be read, is not SPIR-V or cannot be instrumented,
    /// or OUT cannot be written.
    Instrument(shader::InstrumentArgs),

    /// Print what a SPIR-V module holds: shader id, entry points, source files, debug names
    ///
    /// What the engine reads from the module: its shader id (the content hash that logs, reports,
    /// VK_BLACKBOX_SHADERS and VK_BLACKBOX_DUMP_SHADERS use), SPIR-V version, entry points with their
    /// stages, source files (name, language, whether the module carries the text and how many lines) and
    /// debug names. With --sites, also the sites the layer would instrument, one line each as `blackbox
    /// instrument --sites` prints them (site N, kind, source location or instruction, function and entry
    /// points, values).
    ///
    /// Exit status: 0; 1 if IN cannot be read or is not a SPIR-V module the engine reads.
    ShaderInfo(shader::ShaderInfoArgs),

    /// Install the layer as an implicit layer, for this user or system-wide
    ///
    /// The layer is installed off, until VK_BLACKBOX_ENABLE=1. Copies the layer library to $XDG_DATA_HOME/blackbox/lib/ (default ~/.local/share) and writes its
    /// manifest to $XDG_DATA_HOME/vulkan/implicit_layer.d/VkLayer_blackbox.json. With --system:
    /// /usr/local/lib/blackbox/ and /usr/local/share/vulkan/implicit_layer.d/ (needs root). Apps already
    /// running keep the library they loaded.
    Install(InstallArgs),

    /// Remove the layer library and manifest that `blackbox install` wrote
    Uninstall(UninstallArgs),

    /// Check the Vulkan loader, drivers, devices and the layer
    ///
    /// What this machine offers Blackbox: the Vulkan loader, drivers and devices (and which
    /// crash-reporting features each device has), the layer library, installed manifests, and a real load
    /// of the layer.
    ///
    /// Exit status: 0 if no problem was found, 1 otherwise.
    Doctor(DoctorArgs),
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Install for all users
    #[arg(long)]
    pub system: bool,
    /// The layer library to install (default: the one beside this blackbox executable)
    #[arg(long, value_name = "PATH")]
    pub layer: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// Remove the system-wide install (needs root)
    #[arg(long)]
    pub system: bool,
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The layer library to check (default: the one beside this blackbox executable)
    #[arg(long, value_name = "PATH")]
    pub layer: Option<PathBuf>,
    /// The child doctor runs to load the layer: MODE (dlopen or loader) and the library.
    #[arg(
        long,
        hide = true,
        num_args = 2,
        value_names = ["MODE", "LIBRARY"],
        conflicts_with = "layer"
    )]
    pub probe_layer: Option<Vec<OsString>>,
}

/// Parses the command line (`args` includes the program name): the verb, or clap's error, which is also
/// how `--help` and `--version` come back (`Error::exit` prints them to stdout and exits 0).
pub fn parse<I, T>(args: I) -> Result<Verb, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let verb = Cli::try_parse_from(&args)
        .map_err(|e| with_usage(e, &args))?
        .verb;
    // What clap cannot express: a usage error all the same, with the verb's usage line.
    if let Verb::Instrument(instrument) = &verb {
        if let Some(msg) = instrument.conflict() {
            let mut cli = Cli::command();
            cli.build();
            let sub = cli
                .find_subcommand_mut("instrument")
                .expect("instrument is a verb");
            return Err(sub.error(ErrorKind::ArgumentConflict, msg));
        }
    }
    Ok(verb)
}

/// A usage error with the usage of the verb it is about: clap leaves it out of bad-value errors
/// (`--min-count x`), and every usage error of blackbox's shows it.
fn with_usage(mut error: clap::Error, args: &[OsString]) -> clap::Error {
    if !error.use_stderr() || error.get(ContextKind::Usage).is_some() {
        return error;
    }
    let mut cli = Cli::command();
    cli.build();
    // The top level takes no option with a value, so the verb is the first argument naming one.
    let verb = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| cli.find_subcommand(a).is_some())
        .map(str::to_owned);
    let usage = match verb.and_then(|v| cli.find_subcommand_mut(&v)) {
        Some(sub) => sub.render_usage(),
        None => cli.render_usage(),
    };
    error.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
    error
}

fn execute(verb: Verb) -> anyhow::Result<i32> {
    match verb {
        Verb::Run(opts) => run::run(&opts),
        Verb::Bisect(opts) => bisect::bisect(&opts),
        Verb::Report(opts) => reports::report(&opts),
        Verb::Triage(opts) => triage::triage(&opts),
        Verb::Instrument(args) => shader::instrument(&args.options()),
        Verb::ShaderInfo(args) => shader::shader_info(&args),
        Verb::Demo(opts) => demo::demo(&opts),
        Verb::Install(args) => install::install(args.system, args.layer.as_deref()).map(|()| 0),
        Verb::Uninstall(args) => install::uninstall(args.system).map(|()| 0),
        Verb::Doctor(DoctorArgs {
            probe_layer: Some(probe),
            ..
        }) => {
            let [mode, library] = &probe[..] else {
                unreachable!("clap takes exactly two values for --probe-layer");
            };
            Ok(doctor::probe(
                &mode.to_string_lossy(),
                &PathBuf::from(library),
            ))
        }
        Verb::Doctor(args) => doctor::doctor(args.layer.as_deref()),
    }
}

fn main() {
    let verb = match parse(std::env::args_os()) {
        Ok(verb) => verb,
        // Help and version to stdout with 0; usage errors to stderr with 2.
        Err(e) => e.exit(),
    };
    let code = match execute(verb) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("blackbox: error: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Verb, clap::Error> {
        parse(std::iter::once("blackbox").chain(args.iter().copied()))
    }

    /// Help or version, printed to stdout with status 0.
    fn is_help(r: &Result<Verb, clap::Error>) -> bool {
        matches!(r, Err(e) if e.kind() == ErrorKind::DisplayHelp && e.exit_code() == 0)
    }

    /// A usage error: to stderr, status 2.
    fn is_usage_error(r: &Result<Verb, clap::Error>) -> bool {
        matches!(r, Err(e) if e.use_stderr() && e.exit_code() == 2)
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_stops_at_app() {
        let Ok(Verb::Run(o)) = p(&[
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

        let Ok(Verb::Run(o)) = p(&["run", "--validation", "-v", "--layer", "d", "--", "--app"])
        else {
            panic!()
        };
        assert!(o.validation && o.verbose && !o.explicit);
        assert_eq!(o.layer, Some(PathBuf::from("d")));
        assert_eq!(o.command, vec!["--app"]);

        let Ok(Verb::Run(o)) = p(&["run", "app", "--", "x"]) else {
            panic!()
        };
        assert_eq!(o.command, vec!["app", "--", "x"]);
        assert!(matches!(p(&["run", "--", "x", "--help"]), Ok(Verb::Run(_))));
        assert!(matches!(p(&["run", "x", "--help"]), Ok(Verb::Run(_))));
        assert!(is_help(&p(&["run", "--help", "x"])));
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
            &["run", "--layer=", "app"],
            &["run", "--explicit=1", "app"],
            &["install", "extra"],
            &["install", "--explicit"],
            &["uninstall", "--layer", "x"],
            &["doctor", "now"],
            &["doctor", "--probe-layer", "dlopen"],
            &[
                "doctor",
                "--probe-layer",
                "dlopen",
                "/l.so",
                "--layer",
                "/m.so",
            ],
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
            let result = p(args);
            assert!(is_usage_error(&result), "{args:?} should be a usage error");
            // Every usage error shows the usage of the verb it is about.
            let message = result.unwrap_err().render().to_string();
            let verb = args
                .first()
                .filter(|v| !v.starts_with('-') && **v != "frobnicate");
            let usage = match verb {
                Some(v) if *v != "help" => format!("Usage: blackbox {v}"),
                _ => "Usage: blackbox".to_owned(),
            };
            assert!(message.contains(&usage), "{args:?}: {message}");
        }
    }

    #[test]
    fn other_verbs() {
        assert!(matches!(p(&["--version"]), Err(e) if e.kind() == ErrorKind::DisplayVersion));
        assert_eq!(
            Cli::command().render_version(),
            format!("blackbox {}\n", env!("CARGO_PKG_VERSION"))
        );
        assert!(is_help(&p(&["-h"])));
        assert!(is_help(&p(&["help", "run"])));
        assert!(matches!(
            p(&["install", "--system"]),
            Ok(Verb::Install(InstallArgs {
                system: true,
                layer: None
            }))
        ));
        assert!(matches!(
            p(&["uninstall"]),
            Ok(Verb::Uninstall(UninstallArgs { system: false }))
        ));
        assert!(matches!(
            p(&["doctor"]),
            Ok(Verb::Doctor(DoctorArgs {
                layer: None,
                probe_layer: None
            }))
        ));
        assert!(is_help(&p(&["doctor", "-h"])));
        let Ok(Verb::Doctor(DoctorArgs {
            probe_layer: Some(probe),
            ..
        })) = p(&["doctor", "--probe-layer", "loader", "/l.so"])
        else {
            panic!()
        };
        assert_eq!(probe, ["loader", "/l.so"]);
    }

    #[test]
    fn report_and_triage_take_options_and_operands_in_any_order() {
        let Ok(Verb::Report(o)) = p(&["report", "dir", "--json"]) else {
            panic!()
        };
        assert!(o.json && o.color == reports::ColorWhen::Auto);
        assert_eq!(o.path, PathBuf::from("dir"));
        let Ok(Verb::Report(o)) = p(&["report", "--color", "never", "--", "--dir"]) else {
            panic!()
        };
        assert!(!o.json && o.color == reports::ColorWhen::Never);
        assert_eq!(o.path, PathBuf::from("--dir"));
        assert!(is_help(&p(&["report", "x", "-h"])));
        assert!(is_help(&p(&["help", "triage"])));

        let Ok(Verb::Triage(o)) = p(&["triage", "a", "--min-count=3", "b", "--json", "--", "-c"])
        else {
            panic!()
        };
        assert!(o.json);
        assert_eq!(o.min_count, 3);
        assert_eq!(o.dirs, ["a", "b", "-c"]);
        let Ok(Verb::Triage(o)) = p(&["triage", "a"]) else {
            panic!()
        };
        assert!(!o.json && o.min_count == 1);
    }

    #[test]
    fn instrument_shader_info_and_demo_options() {
        let Ok(Verb::Instrument(a)) = p(&["instrument", "in.spv", "-o", "out.spv"]) else {
            panic!()
        };
        let o = a.options();
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

        let Ok(Verb::Instrument(a)) = p(&[
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
        let o = a.options();
        assert_eq!(o.output, None);
        let e = &o.engine;
        assert_eq!(e.nan, blackbox_engine::NanLevel::Ops);
        assert_eq!((e.error_buffer_address, e.site_base), (0xdead_0000, 12));
        assert!(e.asserts && !e.printf && e.assert_crash && !e.strip_non_semantic);

        let Ok(Verb::Instrument(a)) = p(&[
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
        let o = a.options();
        assert_eq!(o.input, PathBuf::from("-in.spv"));
        assert!(o.sites && !o.engine.asserts && o.engine.printf);
        assert_eq!(o.engine.nan, blackbox_engine::NanLevel::Outputs);
        assert_eq!(o.engine.error_buffer_address, 4096);
        assert!(is_help(&p(&["instrument", "-h"])));

        let Ok(Verb::ShaderInfo(a)) = p(&["shader-info", "x.spv", "--json"]) else {
            panic!()
        };
        assert_eq!(a.input, PathBuf::from("x.spv"));
        assert!(a.json);
        assert!(is_help(&p(&["help", "shader-info"])));

        let Ok(Verb::Demo(o)) = p(&["demo"]) else {
            panic!()
        };
        assert_eq!(o.keep, None);
        let Ok(Verb::Demo(o)) = p(&["demo", "--keep", "reports"]) else {
            panic!()
        };
        assert_eq!(o.keep, Some(PathBuf::from("reports")));
        assert!(is_help(&p(&["demo", "--help"])));
    }

    /// The verbs `--help` lists, in order: the ones this file dispatches, and clap's `help`.
    const VERBS: [&str; 10] = [
        "demo",
        "run",
        "bisect",
        "report",
        "triage",
        "instrument",
        "shader-info",
        "install",
        "uninstall",
        "doctor",
    ];

    #[test]
    fn help_lists_every_verb_and_every_flag() {
        let mut cli = Cli::command();
        let main_help = cli.render_long_help().to_string();
        let listed: Vec<&str> = main_help
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let mut expected = VERBS.to_vec();
        expected.push("help");
        assert_eq!(listed, expected, "{main_help}");
        assert!(!main_help.contains("probe"));

        cli.build();
        for verb in VERBS {
            let sub = cli.find_subcommand_mut(verb).unwrap();
            let help = sub.render_long_help().to_string();
            assert!(help.contains(&format!("Usage: blackbox {verb}")), "{help}");
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                let name = match (arg.get_long(), arg.get_value_names()) {
                    (Some(long), _) => format!("--{long}"),
                    (None, Some(names)) => format!("<{}>", names[0]),
                    (None, None) => format!("<{}>", arg.get_id().as_str().to_uppercase()),
                };
                assert!(help.contains(&name), "{verb}: {name} missing\n{help}");
            }
            assert!(p(&[verb, "--help"]).is_err_and(|e| e.kind() == ErrorKind::DisplayHelp));
        }
    }

    /// The README's command-line section shows `blackbox --help` as it is, and names every verb and every
    /// flag a verb's `--help` shows.
    #[test]
    fn readme_matches_the_help() {
        let readme = include_str!("../../README.md");
        let start = readme
            .find("### The `blackbox` command")
            .expect("the README's CLI section");
        let section = &readme[start..];
        let section = &section[..section[4..].find("\n#").map_or(section.len(), |i| i + 4)];
        let main_help = Cli::command().term_width(100).render_help().to_string();
        let block = format!("```\n$ blackbox --help\n{main_help}```");
        assert!(
            section.contains(&block),
            "the README's CLI section should hold, verbatim:\n{block}"
        );
        let mut cli = Cli::command();
        cli.build();
        for verb in VERBS {
            assert!(section.contains(&format!("`blackbox {verb}")), "{verb}");
            let sub = cli.find_subcommand(verb).unwrap();
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long().filter(|l| *l != "help") {
                    assert!(
                        section.contains(&format!("--{long}")),
                        "blackbox {verb} --{long} missing from the README's CLI section"
                    );
                }
            }
        }
    }
}
