//! `blackbox instrument` and `blackbox shader-info`: the SPIR-V engine offline, on files.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use blackbox_engine::{
    LoopMode, NanLevel, Options, ShaderInfo, Site, SiteKind, SourceFile, SourceLanguage, Stage,
};

use crate::reports::{io_reason, print_stdout};

/// The first word of a SPIR-V module.
pub use blackbox_engine::module::MAGIC as SPIRV_MAGIC;

/// What `blackbox instrument` was asked.
#[derive(Debug)]
pub struct InstrumentOptions {
    pub input: PathBuf,
    /// `None`: stdout (`-o -`).
    pub output: Option<PathBuf>,
    pub engine: Options,
    /// Print the site table to stdout.
    pub sites: bool,
}

/// The command line of `blackbox instrument` (its options and their help), turned into
/// [`InstrumentOptions`] by [`InstrumentArgs::options`].
#[derive(Debug, clap::Args)]
pub struct InstrumentArgs {
    /// The SPIR-V module to instrument (either byte order)
    #[arg(value_name = "IN.spv")]
    pub input: PathBuf,
    /// Where to write the module, - for stdout (binary)
    #[arg(short, long, value_name = "OUT.spv", required = true)]
    pub output: PathBuf,
    /// NaN/Inf checks
    #[arg(long, value_name = "LEVEL", value_parser = nan_levels(), default_value = "off")]
    pub nan: NanLevel,
    /// When NaN records are written, as VK_BLACKBOX_NAN_RECORDS: end (when the invocation ends, what the
    /// layer does on CPU devices) or fired (where the check fires, what it does on GPUs)
    #[arg(long, value_name = "WHEN", value_parser = ["end", "fired"], default_value = "end")]
    pub nan_records: String,
    /// Loop budgets, as VK_BLACKBOX_LOOPS: every loop counts its iterations per invocation
    #[arg(long, value_name = "MODE", value_parser = loop_modes(), default_value = "off")]
    pub loops: LoopMode,
    /// With --loops: the iterations of one loop before its budget fires, as VK_BLACKBOX_LOOP_LIMIT
    #[arg(long, value_name = "N", default_value_t = blackbox_engine::DEFAULT_LOOP_LIMIT)]
    pub loop_limit: u32,
    /// Integer checks, as VK_BLACKBOX_INT=on: division by zero, INT_MIN / -1, shifts by the bit width or
    /// more, dynamic indices out of range
    #[arg(long)]
    pub int_checks: bool,
    /// Remove BB_ASSERTs instead of turning them into records
    #[arg(long)]
    pub no_asserts: bool,
    /// Remove debugPrintf calls instead of turning them into records
    #[arg(long)]
    pub no_printf: bool,
    /// After a failing assert's record, fault the device on purpose, as VK_BLACKBOX_ASSERT=crash does
    #[arg(long, conflicts_with = "no_asserts")]
    pub assert_crash: bool,
    /// Keep the NonSemantic.* instructions (source-level debug info); by default they are removed so that
    /// the module loads without VK_KHR_shader_non_semantic_info
    #[arg(long)]
    pub keep_debug_info: bool,
    /// The error buffer's device address, hex (0x...) or decimal
    #[arg(long, value_name = "ADDR", default_value = "0", value_parser = parse_address)]
    pub address: u64,
    /// The global index of the module's first site
    #[arg(long, value_name = "N", default_value = "0", value_parser = parse_site_base)]
    pub site_base: u32,
    /// Print the site table to stdout, one line per site: `site N:` (its global index, --site-base plus
    /// its index in the module), its kind (nan-op OP, nan-output WHAT, assert ID, printf "FORMAT"), where it
    /// is (the source location, or without line information the instruction as `spirv-dis --raw-id`
    /// writes it), its function and entry points, and the values its records carry
    #[arg(long)]
    pub sites: bool,
}

/// The command line of `blackbox shader-info`.
#[derive(Debug, clap::Args)]
pub struct ShaderInfoArgs {
    /// The SPIR-V module (either byte order)
    #[arg(value_name = "IN.spv")]
    pub input: PathBuf,
    /// Print the same as a JSON object
    #[arg(long)]
    pub json: bool,
    /// Also list the sites the layer would instrument (asserts, printf, and NaN checks at --nan), as
    /// `blackbox instrument --sites` prints them
    #[arg(long)]
    pub sites: bool,
    /// With --sites: the NaN/Inf checks to list
    #[arg(long, value_name = "LEVEL", value_parser = nan_levels(), default_value = "ops", requires = "sites")]
    pub nan: NanLevel,
    /// With --sites: the global index of the module's first site
    #[arg(long, value_name = "N", default_value = "0", value_parser = parse_site_base, requires = "sites")]
    pub site_base: u32,
}

/// `--loops`: the engine's [`LoopMode`]s, by their names, with their descriptions as the help.
fn loop_modes() -> impl clap::builder::TypedValueParser<Value = LoopMode> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(
        LoopMode::ALL.map(|m| clap::builder::PossibleValue::new(m.name()).help(m.describe())),
    )
    .map(|name| name.parse::<LoopMode>().unwrap_or_default())
}

/// `--nan`: the engine's [`NanLevel`]s, by the engine's names, with their descriptions as the help.
fn nan_levels() -> impl clap::builder::TypedValueParser<Value = NanLevel> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(
        NanLevel::ALL.map(|l| clap::builder::PossibleValue::new(l.name()).help(l.describe())),
    )
    .map(|name| name.parse::<NanLevel>().unwrap_or_default())
}

impl InstrumentArgs {
    /// A combination of options clap cannot rule out by itself, as the usage error's message.
    pub fn conflict(&self) -> Option<&'static str> {
        (self.sites && self.output.as_os_str() == "-")
            .then_some("--sites prints to stdout, which -o - takes for the module: use one of them")
    }

    /// What the engine and `instrument` are asked.
    pub fn options(&self) -> InstrumentOptions {
        InstrumentOptions {
            input: self.input.clone(),
            output: (self.output.as_os_str() != "-").then(|| self.output.clone()),
            engine: Options {
                error_buffer_address: self.address,
                site_base: self.site_base,
                asserts: !self.no_asserts,
                printf: !self.no_printf,
                nan: self.nan,
                assert_crash: self.assert_crash,
                strip_non_semantic: !self.keep_debug_info,
                loops: self.loops,
                loop_limit: self.loop_limit,
                int_checks: self.int_checks,
                records_at_end: self.nan_records == "end",
                ..Options::default()
            },
            sites: self.sites,
        }
    }
}

/// `--address`: a number, 0x... or decimal.
fn parse_address(text: &str) -> Result<u64, String> {
    parse_number(text).ok_or_else(|| "expected a number, 0x... or decimal".to_string())
}

/// `--site-base`: a number below 2^32, 0x... or decimal.
fn parse_site_base(text: &str) -> Result<u32, String> {
    parse_number(text)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| "expected a number below 2^32, 0x... or decimal".to_string())
}

/// A number in decimal or, with `0x`/`0X`, in hex (`_` allowed between digits).
pub fn parse_number(text: &str) -> Option<u64> {
    let text = text.replace('_', "");
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if text.starts_with(|c: char| c.is_ascii_digit()) => text.parse().ok(),
        None => None,
    }
}

/// The words of a module from a file's bytes: little-endian, or big-endian (swapped to native order) when
/// the magic number says so. The error says why the bytes are not a module.
pub fn words_of(bytes: &[u8]) -> Result<Vec<u32>, String> {
    if bytes.is_empty() {
        return Err("the file is empty".into());
    }
    if bytes.len() % 4 != 0 {
        return Err(format!(
            "its size, {} bytes, is not a multiple of 4",
            bytes.len()
        ));
    }
    let mut words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    match words[0] {
        SPIRV_MAGIC => {}
        m if m.swap_bytes() == SPIRV_MAGIC => {
            for w in &mut words {
                *w = w.swap_bytes();
            }
        }
        m => {
            return Err(format!(
                "it starts with 0x{m:08x}, not the SPIR-V magic number 0x{SPIRV_MAGIC:08x}"
            ))
        }
    }
    Ok(words)
}

/// Reads a SPIR-V file into words.
pub fn read_module(path: &Path) -> Result<Vec<u32>> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {}", path.display(), io_reason(&e)))?;
    words_of(&bytes)
        .map_err(|why| anyhow::anyhow!("{}: not a SPIR-V module: {why}", path.display()))
}

/// Writes `bytes` to `path` through a temporary file in the same folder, renamed over it at the end, so
/// that `path` never holds a partial file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("cannot write {}: not a file name", path.display()))?;
    let mut n = 0u32;
    let (tmp, mut file) = loop {
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".blackbox-{}-{n}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => bail!("cannot write {}: {}", path.display(), io_reason(&e)),
        }
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        bail!("cannot write {}: {}", path.display(), io_reason(&e));
    }
    Ok(())
}

/// One line of the site table: the engine's [`Site::table_line`] (`site <global index>: <description>;
/// values <values>`).
pub fn site_line(site: &Site, site_base: u32) -> String {
    site.table_line(site_base)
}

/// One site as JSON, for `shader-info --sites --json`.
fn site_json(site: &Site, site_base: u32) -> serde_json::Value {
    let values: Vec<serde_json::Value> = site
        .values
        .iter()
        .map(|v| serde_json::json!({ "name": v.name, "type": v.type_name() }))
        .collect();
    serde_json::json!({
        "site": u64::from(site_base) + u64::from(site.local_index),
        "kind": site.kind_text(),
        "location": site.location.as_ref().map(|l| l.to_string()),
        "instruction": site.instruction,
        "place": site.place,
        "function": site.function.as_deref(),
        "entry_points": &site.entry_points[..],
        "stage": stage_name(site.stage),
        "values": values,
        "description": site.describe(),
    })
}

/// `blackbox instrument`: returns the exit code.
pub fn instrument(opts: &InstrumentOptions) -> Result<i32> {
    let input = opts.input.display();
    // SAFETY: isatty only inspects the descriptor.
    if opts.output.is_none() && unsafe { libc::isatty(1) } == 1 {
        bail!("not writing a binary module to a terminal: redirect stdout, or give -o OUT.spv");
    }
    let words = read_module(&opts.input)?;
    let result = match blackbox_engine::instrument(&words, &opts.engine) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("blackbox: {input} is not instrumented: {e}");
            return Ok(1);
        }
    };
    let bytes: Vec<u8> = result.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let output = match &opts.output {
        Some(path) => {
            write_atomically(path, &bytes)?;
            path.display().to_string()
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|()| out.flush())
                .context("cannot write to stdout")?;
            "stdout".to_string()
        }
    };
    let sites = &result.info.sites;
    let count = |f: fn(&SiteKind) -> bool| sites.iter().filter(|s| f(&s.kind)).count();
    eprintln!(
        "blackbox: instrumented {input} -> {output}: shader {}, {} sites ({} asserts, {} printf, {} NaN ops, \
         {} NaN outputs), {} -> {} bytes",
        result.info.id,
        sites.len(),
        count(|k| matches!(k, SiteKind::Assert { .. })),
        count(|k| matches!(k, SiteKind::Printf)),
        count(|k| matches!(k, SiteKind::NanOp { .. })),
        count(|k| matches!(k, SiteKind::NanOutput { .. })),
        words.len() * 4,
        bytes.len()
    );
    if opts.sites {
        let mut table = String::new();
        for site in sites {
            table.push_str(&site_line(site, opts.engine.site_base));
            table.push('\n');
        }
        print_stdout(&table)?;
    }
    Ok(0)
}

/// `vertex`, `fragment`, `compute`, `ray generation`, ...
pub fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Vertex => "vertex",
        Stage::TessellationControl => "tessellation control",
        Stage::TessellationEvaluation => "tessellation evaluation",
        Stage::Geometry => "geometry",
        Stage::Fragment => "fragment",
        Stage::Compute => "compute",
        Stage::Task => "task",
        Stage::Mesh => "mesh",
        Stage::RayGeneration => "ray generation",
        Stage::Intersection => "intersection",
        Stage::AnyHit => "any hit",
        Stage::ClosestHit => "closest hit",
        Stage::Miss => "miss",
        Stage::Callable => "callable",
        other => other.short_name(),
    }
}

fn language_name(language: SourceLanguage) -> String {
    match language {
        SourceLanguage::Unknown => "unknown".into(),
        SourceLanguage::Essl => "ESSL".into(),
        SourceLanguage::Glsl => "GLSL".into(),
        SourceLanguage::Hlsl => "HLSL".into(),
        SourceLanguage::Slang => "Slang".into(),
        SourceLanguage::Wgsl => "WGSL".into(),
        SourceLanguage::Other(n) => format!("language {n}"),
        other => format!("{other:?}"),
    }
}

fn text_lines(source: &SourceFile) -> Option<usize> {
    source.text.as_ref().map(|t| t.lines().count())
}

/// The text form of `shader-info`.
pub fn info_text(info: &ShaderInfo) -> String {
    let mut out = String::new();
    let mut line = |key: &str, value: String| {
        out.push_str(&format!("{key:<12} {value}\n"));
    };
    line("shader", info.id.to_string());
    line(
        "spir-v",
        format!("{}.{}", info.spirv_version.0, info.spirv_version.1),
    );
    if info.entry_points.is_empty() {
        line("entry point", "none".into());
    }
    for e in &info.entry_points {
        let function = match &e.function_name {
            Some(f) if *f != e.name => format!(", function {f}"),
            _ => String::new(),
        };
        line(
            "entry point",
            format!("{} ({}{function})", e.name, stage_name(e.stage)),
        );
    }
    if info.sources.is_empty() {
        line("source", "none named".into());
    }
    for s in &info.sources {
        let name = if s.name.is_empty() {
            "(no name)"
        } else {
            &s.name
        };
        let version = if s.version == 0 {
            String::new()
        } else {
            format!(" {}", s.version)
        };
        let text = match text_lines(s) {
            Some(n) => format!("text embedded, {n} lines"),
            None => "text not embedded".into(),
        };
        line(
            "source",
            format!("{name}: {}{version}, {text}", language_name(s.language)),
        );
    }
    line(
        "debug names",
        if info.debug_names.is_empty() {
            "none".into()
        } else {
            info.debug_names.join(", ")
        },
    );
    out
}

/// The JSON form of `shader-info`.
pub fn info_json(info: &ShaderInfo) -> serde_json::Value {
    let entry_points: Vec<serde_json::Value> = info
        .entry_points
        .iter()
        .map(|e| {
            serde_json::json!({
                "name": e.name,
                "stage": stage_name(e.stage),
                "function": e.function_name,
            })
        })
        .collect();
    let sources: Vec<serde_json::Value> = info
        .sources
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name,
                "language": language_name(s.language),
                "version": s.version,
                "text_embedded": s.text.is_some(),
                "lines": text_lines(s),
            })
        })
        .collect();
    serde_json::json!({
        "shader": info.id.to_string(),
        "spirv_version": format!("{}.{}", info.spirv_version.0, info.spirv_version.1),
        "entry_points": entry_points,
        "sources": sources,
        "debug_names": info.debug_names,
    })
}

/// The sites `shader-info --sites` lists: those of the module instrumented as the layer would (asserts
/// and printf on, NaN checks at `nan`), or why the engine would pass it through unchanged.
fn listed_sites(words: &[u32], args: &ShaderInfoArgs) -> Result<Vec<Site>, String> {
    let options = Options {
        nan: args.nan,
        site_base: args.site_base,
        ..Options::default()
    };
    blackbox_engine::instrument(words, &options)
        .map(|out| out.info.sites)
        .map_err(|e| e.to_string())
}

/// `blackbox shader-info`.
pub fn shader_info(args: &ShaderInfoArgs) -> Result<i32> {
    let input = &args.input;
    let words = read_module(input)?;
    let info = match blackbox_engine::shader_info(&words) {
        Ok(info) => info,
        Err(e) => bail!("{}: {e}", input.display()),
    };
    let sites = args.sites.then(|| listed_sites(&words, args));
    let text = if args.json {
        let mut json = info_json(&info);
        if let Some(sites) = &sites {
            json["sites"] = match sites {
                Ok(sites) => sites.iter().map(|s| site_json(s, args.site_base)).collect(),
                Err(_) => serde_json::Value::Null,
            };
            json["not_instrumented"] = sites.as_ref().err().map_or(serde_json::Value::Null, |e| {
                serde_json::Value::String(e.clone())
            });
        }
        let mut text = serde_json::to_string_pretty(&json)?;
        text.push('\n');
        text
    } else {
        let mut text = info_text(&info);
        match &sites {
            None => {}
            Some(Ok(sites)) => {
                text.push_str(&format!(
                    "{:<12} {} at NaN {}, asserts and printf\n",
                    "sites",
                    sites.len(),
                    args.nan
                ));
                for site in sites {
                    text.push_str(&site_line(site, args.site_base));
                    text.push('\n');
                }
            }
            Some(Err(why)) => {
                text.push_str(&format!("{:<12} none: not instrumented: {why}\n", "sites"));
            }
        }
        text
    };
    print_stdout(&text)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_accept_both_byte_orders_and_reject_the_rest() {
        let le: Vec<u8> = [SPIRV_MAGIC, 0x0001_0000]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let be: Vec<u8> = [SPIRV_MAGIC, 0x0001_0000]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect();
        assert_eq!(words_of(&le).unwrap(), [SPIRV_MAGIC, 0x0001_0000]);
        assert_eq!(words_of(&be).unwrap(), [SPIRV_MAGIC, 0x0001_0000]);
        assert!(words_of(&[]).unwrap_err().contains("empty"));
        assert!(words_of(&le[..6]).unwrap_err().contains("6 bytes"));
        assert!(words_of(b"#version 450")
            .unwrap_err()
            .contains("not the SPIR-V magic number 0x07230203"));
    }

    #[test]
    fn numbers_in_decimal_and_hex() {
        assert_eq!(parse_number("0"), Some(0));
        assert_eq!(parse_number("4096"), Some(4096));
        assert_eq!(parse_number("0x1000"), Some(4096));
        assert_eq!(parse_number("0XdEaD_0000"), Some(0xdead_0000));
        assert_eq!(parse_number("0xffffffffffffffff"), Some(u64::MAX));
        for bad in [
            "",
            "0x",
            "-1",
            "+1",
            "x10",
            "0x1g",
            "1e3",
            "0x+1",
            "0x10000000000000000",
        ] {
            assert_eq!(parse_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let dir = crate::run::TempDir::new("blackbox-shader-test").unwrap();
        let path = dir.path().join("out.spv");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two!").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two!");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out.spv"]);
        assert!(write_atomically(&dir.path().join("no/such/dir/x.spv"), b"x").is_err());
    }
}
