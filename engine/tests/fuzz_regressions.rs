//! Inputs the fuzzer (`scripts/fuzz.sh`) found failing, kept so the bugs stay fixed. Each file is what the
//! fuzz target takes: two bytes of options (`common/fuzz_input.rs`), then the module's bytes. The same
//! properties as the target's are checked: no panic, a result or a reason, memory in proportion to the
//! input (libFuzzer's RSS limit there, a counting allocator here), deterministic output that parses again,
//! and valid output (spirv-val) wherever the input is valid.

mod common;

use blackbox_engine::{instrument, needs_instrumentation, shader_info, Options};
use common::{env_for_version, validate_all, write_words, ValJob};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

include!("common/fuzz_input.rs");

/// The allocator, counting what each thread has allocated and not freed and the most it had at once:
/// a finding that made the engine allocate hundreds of MB for a few KB of input must fail here, also where
/// the engine refuses the module in the end (`instrument` returned an error after the allocation).
struct CountingAllocator;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn counted(add: usize, sub: usize) {
    // `try_with`: nothing to count once the thread's locals are gone.
    let _ = LIVE.try_with(|live| {
        let now = live.get().saturating_sub(sub) + add;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call goes to the system allocator with the caller's arguments; only counts are added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            counted(layout.size(), 0);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        counted(0, layout.size());
        // SAFETY: `ptr` came from this allocator (that is, the system's) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::realloc` requires of its caller.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            counted(new_size, layout.size());
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The most this thread had allocated at once while `f` ran, beyond what it had before.
fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(before));
    let result = f();
    (result, PEAK.with(Cell::get) - before)
}

/// Checks one finding; returns the input and output modules when it instruments, for validation.
fn check(data: &[u8]) -> Option<(Vec<u32>, Vec<u32>)> {
    let (options, words) = fuzz_input(data)?;
    let _ = shader_info(&words);
    let _ = needs_instrumentation(&words, &options);
    let out = instrument(&words, &options).ok()?;
    assert_eq!(
        instrument(&words, &options).ok().as_ref(),
        Some(&out),
        "deterministic"
    );
    shader_info(&out.words).expect("instrumented output parses");
    Some((words, out.words))
}

#[test]
fn every_kept_fuzzer_finding_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fuzz")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no findings in {}", dir.display());
    let scratch = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz_regressions");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut jobs = Vec::new();
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let (outcome, peak) = peak_allocation(|| std::panic::catch_unwind(|| check(&data)));
        assert!(outcome.is_ok(), "{} panics", file.display());
        // The module's tables are sized by its id bound (up to SPIR-V's 4 M ids: 16 MB for one of them),
        // the rest by its instructions.
        let limit = 64 * data.len() + (64 << 20);
        assert!(
            peak <= limit,
            "{} made the engine allocate {peak} bytes at once (limit {limit})",
            file.display()
        );
        if let Ok(Some((input, output))) = outcome {
            let stem = file.file_stem().unwrap().to_string_lossy();
            for (suffix, words) in [("in", &input), ("out", &output)] {
                let path = scratch.join(format!("{stem}.{suffix}.spv"));
                write_words(&path, words);
                let env = env_for_version(&input).to_string();
                jobs.push(ValJob { path, env });
            }
        }
    }
    let results = validate_all(&jobs);
    for (pair, result) in jobs.chunks(2).zip(results.chunks(2)) {
        if result[0].is_none() {
            assert!(
                result[1].is_none(),
                "{} is valid but its instrumented output is not: {}",
                pair[0].path.display(),
                result[1].as_deref().unwrap_or_default()
            );
        }
    }
}

#[test]
fn an_ext_inst_import_without_a_name_is_no_instruction_set() {
    // Found by the fuzzer: OpExtInstImport with a word count of 1 made the quick scan slice past its end.
    let mut words = vec![blackbox_engine::module::MAGIC, 0x0001_0000, 0, 10, 0];
    words.push(1 << 16 | spirv::Op::ExtInstImport as u32);
    assert!(!needs_instrumentation(&words, &Options::default()));
}
