// Shared by the build scripts of the layer and the test app (`include!`d: build scripts cannot depend on a
// crate of the workspace): compile one GLSL shader with glslangValidator, then drop the deprecated
// `BuiltIn WorkgroupSize` decoration of a plain constant.
//
// glslang (Debian 12's, for SPIR-V below 1.6) decorates the constant `gl_WorkGroupSize` of every compute
// shader `BuiltIn WorkgroupSize`, even when the shader never reads it; SPIR-V 1.6 deprecates that and the
// validation layer's best practices report it on a Vulkan 1.3 device. Its value is the `LocalSize`
// execution mode's, which stays: nothing changes for the driver.

const TOOL: &str = "glslangValidator";

/// Runs `glslangValidator -V ARGS SRC -o OUT` in `src_dir` and strips the decoration from the result.
pub fn compile(src_dir: &std::path::Path, src: &str, args: &[&str], out: &std::path::Path) {
    let result = std::process::Command::new(TOOL)
        .current_dir(src_dir)
        .arg("-V")
        .args(args)
        .arg(src)
        .arg("-o")
        .arg(out)
        .output();
    let output = match result {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("glslangValidator not found: run scripts/setup.sh (installs glslang-tools)")
        }
        Err(e) => panic!("failed to run {TOOL}: {e}"),
    };
    if !output.status.success() {
        // glslangValidator reports compile errors on stdout.
        panic!(
            "{TOOL} failed on {}:\n{}{}",
            src_dir.join(src).display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let bytes = std::fs::read(out).expect("read compiled SPIR-V");
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let stripped = strip_workgroup_size_decoration(&words);
    if stripped.len() != words.len() {
        let bytes: Vec<u8> = stripped.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(out, bytes).expect("write SPIR-V");
    }
}

const OP_DECORATE: u32 = 71;
const OP_CONSTANT_COMPOSITE: u32 = 44;
const DECORATION_BUILT_IN: u32 = 11;
const BUILT_IN_WORKGROUP_SIZE: u32 = 25;

/// `words` (a little-endian SPIR-V module) without `OpDecorate %c BuiltIn WorkgroupSize` where `%c` is
/// an `OpConstantComposite` (a spec-constant composite keeps it: there it means something).
fn strip_workgroup_size_decoration(words: &[u32]) -> Vec<u32> {
    const HEADER: usize = 5;
    let instructions = || {
        let mut at = HEADER;
        std::iter::from_fn(move || {
            let count = (*words.get(at)? >> 16) as usize;
            if count == 0 || at + count > words.len() {
                return None;
            }
            let range = at..at + count;
            at += count;
            Some(range)
        })
    };
    let constants: Vec<u32> = instructions()
        .filter(|r| words[r.start] & 0xffff == OP_CONSTANT_COMPOSITE && r.len() > 2)
        .map(|r| words[r.start + 2])
        .collect();
    let mut out = words[..HEADER.min(words.len())].to_vec();
    let mut dropped = 0;
    for r in instructions() {
        let w = &words[r.clone()];
        let drop = w.len() == 4
            && w[0] & 0xffff == OP_DECORATE
            && w[2] == DECORATION_BUILT_IN
            && w[3] == BUILT_IN_WORKGROUP_SIZE
            && constants.contains(&w[1]);
        if drop {
            dropped += w.len();
        } else {
            out.extend_from_slice(w);
        }
    }
    if out.len() + dropped != words.len() {
        // Not a module this walk understands: leave it alone.
        return words.to_vec();
    }
    out
}
