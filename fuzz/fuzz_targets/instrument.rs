//! Any input to the engine either comes out instrumented or comes back with a reason; never a panic, an
//! endless loop or unbounded memory (libFuzzer's timeout and RSS limit watch the last two). The same input
//! and options always give the same output, and an input SPIRV-Tools' validator accepts comes out accepted.
#![no_main]

use blackbox_engine::{instrument, needs_instrumentation, shader_info};
use libfuzzer_sys::fuzz_target;
use std::ffi::{c_int, c_void, CStr};

// The few entry points of SPIRV-Tools' C API (libspirv.h) the check needs.
#[repr(C)]
struct Diagnostic {
    line: usize,
    column: usize,
    index: usize,
    error: *const std::ffi::c_char,
    is_text_source: bool,
}
extern "C" {
    fn spvContextCreate(env: c_int) -> *mut c_void;
    fn spvValidateBinary(context: *const c_void, words: *const u32, count: usize, diagnostic: *mut *mut Diagnostic) -> c_int;
    fn spvDiagnosticDestroy(diagnostic: *mut Diagnostic);
}

/// The Vulkan target environment (spv_target_env) for the module's SPIR-V version, as the tests pick it.
fn target_env(words: &[u32]) -> c_int {
    match words.get(1).map(|v| (v >> 8) & 0xFF) {
        Some(0) => 1,      // SPV_ENV_VULKAN_1_0
        Some(1..=3) => 18, // SPV_ENV_VULKAN_1_1
        Some(4) => 21,     // SPV_ENV_VULKAN_1_1_SPIRV_1_4
        Some(5) => 23,     // SPV_ENV_VULKAN_1_2
        _ => 25,           // SPV_ENV_VULKAN_1_3
    }
}

/// `Err(message)` when the validator rejects the module.
fn validate(words: &[u32], env: c_int) -> Result<(), String> {
    // One context per environment for the whole run, kept in a static so LeakSanitizer sees them reachable.
    static CONTEXTS: std::sync::Mutex<Vec<(c_int, usize)>> = std::sync::Mutex::new(Vec::new());
    let context = {
        let mut contexts = CONTEXTS.lock().unwrap();
        match contexts.iter().find(|(e, _)| *e == env) {
            Some(&(_, c)) => c,
            None => {
                let c = unsafe { spvContextCreate(env) } as usize;
                contexts.push((env, c));
                c
            }
        }
    };
    let mut diagnostic = std::ptr::null_mut();
    let result = unsafe { spvValidateBinary(context as *const c_void, words.as_ptr(), words.len(), &mut diagnostic) };
    let message = if diagnostic.is_null() || unsafe { (*diagnostic).error.is_null() } {
        String::new()
    } else {
        unsafe { CStr::from_ptr((*diagnostic).error) }.to_string_lossy().into_owned()
    };
    unsafe { spvDiagnosticDestroy(diagnostic) };
    if result == 0 {
        Ok(())
    } else {
        Err(message)
    }
}

include!("../../engine/tests/common/fuzz_input.rs");

fuzz_target!(|data: &[u8]| {
    // Two bytes pick the options; the rest is the module.
    let Some((options, words)) = fuzz_input(data) else { return };
    let _ = shader_info(&words);
    let _ = needs_instrumentation(&words, &options);
    let first = instrument(&words, &options);
    if let Ok(out) = &first {
        assert_eq!(instrument(&words, &options).ok().as_ref(), Some(out), "deterministic");
        // What the engine wrote, it can read again.
        let _ = shader_info(&out.words).expect("instrumented output parses");
        // Valid in, valid out.
        let env = target_env(&words);
        if validate(&words, env).is_ok() {
            if let Err(message) = validate(&out.words, env) {
                panic!("valid input, invalid instrumented output: {message}");
            }
        }
    }
});
