//! The engine's own test corpus: the GLSL and HLSL shaders of `engine/tests/in/`, each compiled into
//! variants (target environments giving SPIR-V 1.0/1.3/1.5/1.6, `-g`, `-gVS`, `spirv-opt -O`) under
//! `target/tmp/corpus/`. Compiled files are cached by a hash of the sources and the command line.
//!
//! A file's stage is its extension (`particles.comp`; HLSL as `blur.comp.hlsl`). A line
//! `// bb-envs: vulkan1.2 vulkan1.3` restricts the environments (ray tracing and mesh shaders need SPIR-V
//! 1.4). glslang 11's HLSL front end writes invalid SPIR-V with `-gVS`, so HLSL has no `-gVS` variant.
//!
//! SPIR-V assembly (`copy.frag.spvasm`) is for what no compiler here writes (`OpCopyMemory`, untyped
//! pointers): spirv-as assembles it once per environment of its `; bb-envs:` line, with no other variant.
//! Such files carry their own `OpLine`s (pointing at the file's own lines), so they count as `-g` variants
//! for the `// expect:` markers, written in the assembly's comments (`; // expect: ...`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Debug information asked of the compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Debug {
    None,
    /// `-g`: `OpLine`, `OpSource` with the text.
    Lines,
    /// `-gVS`: `NonSemantic.Shader.DebugInfo.100`.
    ShaderDebugInfo,
}

/// One compiled variant.
#[derive(Clone, Debug)]
pub struct Variant {
    /// A readable name: `particles.comp vulkan1.0 -g`.
    pub name: String,
    /// The source file name (as the compiler records it).
    pub source: String,
    pub path: PathBuf,
    pub env: &'static str,
    pub debug: Debug,
    pub optimized: bool,
    pub hlsl: bool,
}

const ALL_ENVS: [&str; 4] = ["vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3"];

pub fn in_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/in")
}

/// Where the generated shaders ([`super::generate`]) are written before compiling.
fn generated_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("generated-src")
}

/// The folder holding a corpus source: `tests/in`, or the generated shaders' folder.
fn dir_of(source: &str) -> PathBuf {
    if in_dir().join(source).is_file() {
        in_dir()
    } else {
        generated_dir()
    }
}

fn shaders_dir() -> PathBuf {
    super::workspace().join("shaders")
}

fn glslang() -> PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("glslangValidator"))
        .find(|p| p.is_file());
    found.expect("glslangValidator not found on PATH: scripts/setup.sh installs glslang-tools")
}

struct Job {
    variant: Variant,
    args: Vec<String>,
    /// The unoptimized file to run spirv-opt on, for optimized variants.
    opt_input: Option<PathBuf>,
    /// SPIR-V assembly, for spirv-as.
    asm: bool,
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every variant of every shader in `tests/in`, compiled (or taken from the cache) once per test binary.
pub fn variants() -> Vec<Variant> {
    static VARIANTS: std::sync::OnceLock<Vec<Variant>> = std::sync::OnceLock::new();
    VARIANTS.get_or_init(compile_variants).clone()
}

fn compile_variants() -> Vec<Variant> {
    let glslang = glslang();
    let spirv_opt = super::venv_tool("spirv-opt");
    let spirv_as = super::venv_tool("spirv-as");
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("corpus");
    std::fs::create_dir_all(&out_dir).expect("creating target/tmp/corpus");
    let mut headers = Vec::new();
    for h in ["blackbox.glsl", "blackbox.hlsl"] {
        headers.extend(
            std::fs::read(shaders_dir().join(h)).unwrap_or_else(|e| panic!("shaders/{h}: {e}")),
        );
    }
    let mut files: Vec<String> = std::fs::read_dir(in_dir())
        .expect("reading tests/in")
        .map(|e| {
            e.expect("tests/in entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    std::fs::create_dir_all(generated_dir()).expect("creating the generated shaders' folder");
    for g in super::generate::sources() {
        let path = generated_dir().join(&g.name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(g.text.as_str()) {
            std::fs::write(&path, g.text).expect("writing a generated shader");
        }
        files.push(g.name);
    }
    files.sort();
    let mut first_pass = Vec::new();
    let mut second_pass = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(dir_of(file).join(file)).expect("reading a shader");
        let hlsl = file.ends_with(".hlsl");
        let envs: Vec<&'static str> = match text.lines().find_map(|l| l.split("bb-envs:").nth(1)) {
            Some(list) => ALL_ENVS
                .iter()
                .copied()
                .filter(|e| list.split_whitespace().any(|w| w == *e))
                .collect(),
            None => ALL_ENVS.to_vec(),
        };
        if file.ends_with(".spvasm") {
            for env in envs {
                let mut hash = blackbox_engine::Fnv1a64::new();
                hash.write(text.as_bytes());
                hash.write(env.as_bytes());
                let h = hash.finish();
                first_pass.push(Job {
                    variant: Variant {
                        name: format!("{file} {env}"),
                        source: file.clone(),
                        path: out_dir.join(format!("{file}.{env}.{h:016x}.spv")),
                        env,
                        debug: Debug::Lines,
                        optimized: false,
                        hlsl: false,
                    },
                    args: vec!["--target-env".into(), env.into()],
                    opt_input: None,
                    asm: true,
                });
            }
            continue;
        }
        let (lo, hi) = (envs[0], envs[envs.len() - 1]);
        let mut specs: Vec<(&'static str, Debug, bool)> =
            envs.iter().map(|e| (*e, Debug::None, false)).collect();
        specs.push((lo, Debug::Lines, false));
        if hi != lo {
            specs.push((hi, Debug::Lines, false));
        }
        if !hlsl {
            specs.push((lo, Debug::ShaderDebugInfo, false));
            if hi != lo {
                specs.push((hi, Debug::ShaderDebugInfo, false));
            }
        }
        specs.push((lo, Debug::None, true));
        if hi != lo {
            specs.push((hi, Debug::None, true));
        }
        specs.push((hi, Debug::Lines, true));
        for (env, debug, optimized) in specs {
            let mut args = vec!["-V".to_string(), "--target-env".into(), env.into()];
            match debug {
                Debug::None => {}
                Debug::Lines => args.push("-g".into()),
                Debug::ShaderDebugInfo => args.push("-gVS".into()),
            }
            if hlsl {
                let stage = file
                    .trim_end_matches(".hlsl")
                    .rsplit('.')
                    .next()
                    .unwrap_or("comp");
                args.extend([
                    "-D".into(),
                    "-e".into(),
                    "main".into(),
                    "-S".into(),
                    stage.into(),
                ]);
            }
            args.push(format!("-I{}", shaders_dir().display()));
            let mut hash = blackbox_engine::Fnv1a64::new();
            hash.write(text.as_bytes());
            hash.write(&headers);
            hash.write(args.join(" ").as_bytes());
            let h = hash.finish();
            let dbg = match debug {
                Debug::None => "",
                Debug::Lines => ".g",
                Debug::ShaderDebugInfo => ".gVS",
            };
            let base_name = format!("{file}.{env}{dbg}");
            let plain_path = out_dir.join(format!("{base_name}.{h:016x}.spv"));
            let variant = |path: PathBuf, optimized: bool| Variant {
                name: format!(
                    "{file} {env}{}{}",
                    match debug {
                        Debug::None => "",
                        Debug::Lines => " -g",
                        Debug::ShaderDebugInfo => " -gVS",
                    },
                    if optimized { " -O" } else { "" }
                ),
                source: file.clone(),
                path,
                env,
                debug,
                optimized,
                hlsl,
            };
            if optimized {
                let path = out_dir.join(format!("{base_name}.O.{h:016x}.spv"));
                first_pass.push(Job {
                    variant: variant(plain_path.clone(), false),
                    args: args.clone(),
                    opt_input: None,
                    asm: false,
                });
                second_pass.push(Job {
                    variant: variant(path, true),
                    args,
                    opt_input: Some(plain_path),
                    asm: false,
                });
            } else {
                first_pass.push(Job {
                    variant: variant(plain_path, false),
                    args,
                    opt_input: None,
                    asm: false,
                });
            }
        }
    }
    let compile = |jobs: &[Job]| {
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(1, 8)
            {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let out = &job.variant.path;
                    if out.is_file() {
                        continue;
                    }
                    let tmp = out.with_extension(format!("tmp{}-{i}", std::process::id()));
                    match &job.opt_input {
                        None if job.asm => run(
                            Command::new(&spirv_as)
                                .args(&job.args)
                                .arg("-o")
                                .arg(&tmp)
                                .arg(dir_of(&job.variant.source).join(&job.variant.source)),
                            &format!("spirv-as {} {}", job.args.join(" "), job.variant.source),
                        ),
                        None => run(
                            Command::new(&glslang)
                                .current_dir(dir_of(&job.variant.source))
                                .args(&job.args)
                                .arg("-o")
                                .arg(&tmp)
                                .arg(&job.variant.source),
                            &format!(
                                "glslangValidator {} {}",
                                job.args.join(" "),
                                job.variant.source
                            ),
                        ),
                        Some(input) => run(
                            Command::new(&spirv_opt)
                                .arg("-O")
                                .arg(format!("--target-env={}", job.variant.env))
                                .arg(input)
                                .arg("-o")
                                .arg(&tmp),
                            &format!("spirv-opt -O {}", input.display()),
                        ),
                    }
                    if let Err(e) = std::fs::rename(&tmp, out) {
                        assert!(
                            out.is_file(),
                            "renaming {} to {}: {e}",
                            tmp.display(),
                            out.display()
                        );
                    }
                });
            }
        });
    };
    compile(&first_pass);
    compile(&second_pass);
    let mut seen = std::collections::HashSet::new();
    let all: Mutex<Vec<Variant>> = Mutex::new(Vec::new());
    for job in first_pass.into_iter().chain(second_pass) {
        if seen.insert(job.variant.name.clone()) {
            all.lock().unwrap().push(job.variant);
        }
    }
    let mut all = all.into_inner().unwrap();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// The `// expect: ...` markers of a source file: (line, what) with `what` like `nan-op normalize`,
/// `assert 11`, `printf`, `nan-output storage buffer store`.
pub fn markers(source: &str) -> Vec<(u32, String)> {
    let text = std::fs::read_to_string(dir_of(source).join(source)).expect("reading a shader");
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            l.split("// expect: ")
                .nth(1)
                .map(|m| (i as u32 + 1, m.trim().to_string()))
        })
        .collect()
}
