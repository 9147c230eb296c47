//! Scenarios of a hostile or broken app (not in `all`), for Blackbox's trust tests.
//!
//! - `hostile-strings`: the app's strings hold what a terminal acts on. The app is named
//!   [`HOSTILE_APP_NAME`] (the run loop gives it whenever this scenario is on the command line). First
//!   hostile_printf.comp prints ESC, NUL, CR, LF, a C1 CSI and a right-to-left override through `%c` (see
//!   the shader), and the app waits; then one command buffer whose 5,000-byte name starts with
//!   [`HOSTILE_COMMAND_BUFFER`] runs hang.comp (`--hang-groups` workgroups: long) as the pipeline named [`HOSTILE_PIPELINE`],
//!   inside the label [`HOSTILE_LABEL`], an inserted label [`INSERTED_LABEL`] and a label of
//!   [`LONG_LABEL_BYTES`] bytes, and waits for ever: a watchdog report names all of them.
//! - `crash-in-malloc`: corrupts the heap (frees a 4 KiB block twice, a block too big for glibc's lock-free
//!   caches) so that glibc aborts while it holds its allocator's lock: a fatal signal on a thread that
//!   cannot allocate. The app's own crash handler (below) is installed before Blackbox's.
//! - `crash-in-blackbox-lock`: submits hang.comp (`--hang-groups` workgroups, pipeline `crash-pipeline`,
//!   label `crash frame`) without waiting, then names an object with a pointer that is not a string
//!   (address 1), so the fault happens inside Blackbox, in the lock that guards the debug names a report
//!   reads while the dispatch is in flight.
//!
//! The crash scenarios install the app's own handler for SIGSEGV and SIGABRT before the instance (so
//! before Blackbox's, which comes with the first device): it writes [`CRASH_HANDLER_LINE`] and the signal
//! number to stderr with `write(2)`, then ends the process with the signal's default action, as crash
//! reporters do.

use std::ffi::{CStr, CString};

use anyhow::Result;
use ash::vk;

use super::compute::{GRID, GRID_BYTES, VALUES_USAGE};
use super::program::{push_bytes, ComputeProgram};
use super::Outcome;
use crate::context::{fnv1a, Access, Context, Memory};
use crate::{shaders, Options};

/// The app's name in `hostile-strings`: a colour, a carriage return and an invalid UTF-8 byte.
pub const HOSTILE_APP_NAME: &CStr = c"bb\x1b[31m-testapp\r\xff";
/// The outer label: clears the screen, retitles the terminal, and forges a log line after a newline.
pub const HOSTILE_LABEL: &CStr =
    c"frame\x1b[2J\x1b]0;pwned\x07\r\n[blackbox] error: forged line \xff\xfe";
/// An inserted label with a C1 CSI and a right-to-left override.
pub const INSERTED_LABEL: &CStr = c"marker\xc2\x9b6n\xe2\x80\xaeevil";
/// The long pipeline's name: a colour and a carriage return.
pub const HOSTILE_PIPELINE: &CStr = c"pipe\x1b[1;31mline\rname";
/// The start of the command buffer's name; the name is 5,000 bytes (`x` after this).
pub const HOSTILE_COMMAND_BUFFER: &str = "cmd\x1b[5m";
/// The size of the innermost label.
pub const LONG_LABEL_BYTES: usize = 100_000;
/// What the app's own crash handler writes, then the signal number.
pub const CRASH_HANDLER_LINE: &str = "bb-testapp: the app's own crash handler ran for signal ";

/// hostile_printf.comp's ten `%c` values.
const PRINTED: [u32; 10] = [
    0x1b,
    b'[' as u32,
    b'3' as u32,
    b'1' as u32,
    b'm' as u32,
    0,
    13,
    10,
    0x9b,
    0x202e,
];

pub fn run_hostile_strings(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let Some(debug_utils) = cx.debug_utils.as_ref() else {
        return Ok(Outcome::Skipped("needs VK_EXT_debug_utils".into()));
    };
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC;

    // The printf, waited for: its line is logged (and its count is in the report) before the hang.
    let words: Vec<u8> = PRINTED.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let words = cx.create_buffer_with_data(&words, vk::BufferUsageFlags::STORAGE_BUFFER)?;
    let printed = cx.create_buffer(16, usage, Memory::Device)?;
    let printer = ComputeProgram::new(
        cx,
        shaders::HOSTILE_PRINTF_COMP,
        &[words.handle, printed.handle],
        0,
        c"hostile-printf",
    )?;
    cx.submit_and_wait(|cmd| {
        printer.record(d, cmd, &[], [1, 1, 1]);
        Ok(())
    })?;

    // The long dispatch inside the hostile labels, in the hostile command buffer, by the hostile pipeline.
    let groups = options.fault.hang_groups;
    let values = cx.create_buffer_with_data(&vec![1u8; GRID_BYTES as usize], VALUES_USAGE)?;
    let results_bytes = u64::from(groups) * 64 * 4;
    let results = cx.create_buffer(results_bytes, usage, Memory::Device)?;
    let readback = cx.create_buffer(
        results_bytes,
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    let long = ComputeProgram::new(
        cx,
        shaders::HANG_COMP,
        &[values.handle, results.handle],
        8,
        HOSTILE_PIPELINE,
    )?;
    let mut cmd_name = HOSTILE_COMMAND_BUFFER.as_bytes().to_vec();
    cmd_name.resize(5000, b'x');
    let cmd_name = CString::new(cmd_name).expect("no NUL");
    let long_label = CString::new(vec![b'L'; LONG_LABEL_BYTES]).expect("no NUL");
    let started = std::time::Instant::now();
    cx.submit_and_wait_timeout(u64::MAX, |cmd| {
        cx.set_name(cmd, &cmd_name)?;
        // SAFETY: labels on a command buffer being recorded, their names outliving the calls.
        unsafe {
            debug_utils.cmd_begin_debug_utils_label(cmd, &label(HOSTILE_LABEL));
            debug_utils.cmd_insert_debug_utils_label(cmd, &label(INSERTED_LABEL));
            debug_utils.cmd_begin_debug_utils_label(cmd, &label(&long_label));
        }
        long.record(d, cmd, &push_bytes(&[43_000, GRID * GRID]), [groups, 1, 1]);
        // SAFETY: as above.
        unsafe {
            debug_utils.cmd_end_debug_utils_label(cmd);
            debug_utils.cmd_end_debug_utils_label(cmd);
        }
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    eprintln!(
        "bb-testapp: hostile-strings: the long dispatch took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

pub fn run_crash_in_malloc(_cx: &Context, _options: &Options) -> Result<Outcome> {
    eprintln!(
        "bb-testapp: crash-in-malloc: freeing a 4 KiB block twice (glibc aborts holding its lock)"
    );
    // SAFETY: none; this is the point: a double free of a block too big for the tcache and fastbins
    // reaches glibc's locked free path, which finds the corruption and aborts with the arena locked.
    unsafe {
        let block = libc::malloc(4096);
        // A neighbour, so that the block does not merge into the top chunk and vanish.
        let guard = libc::malloc(4096);
        std::hint::black_box(guard);
        libc::free(std::hint::black_box(block));
        libc::free(std::hint::black_box(block));
    }
    eprintln!("bb-testapp: crash-in-malloc: glibc did not abort");
    Ok(Outcome::Skipped(
        "glibc did not detect the double free".into(),
    ))
}

pub fn run_crash_read_only(_cx: &Context, _options: &Options) -> Result<Outcome> {
    eprintln!("bb-testapp: crash-read-only: writing to a read-only page");
    // SAFETY: none; this is the point: a write to a page mapped read-only is a SIGSEGV with SEGV_ACCERR,
    // the kind of fault a page guard (GFXReconstruct's) makes on purpose, on a page none protects.
    unsafe {
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if page == libc::MAP_FAILED {
            return Ok(Outcome::Skipped("mmap failed".into()));
        }
        std::ptr::write_volatile(page as *mut u32, 0xdead);
    }
    eprintln!("bb-testapp: crash-read-only: the write went through");
    Ok(Outcome::Skipped(
        "the write to a read-only page went through".into(),
    ))
}

pub fn run_crash_in_blackbox_lock(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let Some(debug_utils) = cx.debug_utils.as_ref() else {
        return Ok(Outcome::Skipped("needs VK_EXT_debug_utils".into()));
    };
    let groups = options.fault.hang_groups;
    let values = cx.create_buffer_with_data(&vec![1u8; GRID_BYTES as usize], VALUES_USAGE)?;
    let results = cx.create_buffer(u64::from(groups) * 64 * 4, VALUES_USAGE, Memory::Device)?;
    let long = ComputeProgram::new(
        cx,
        shaders::HANG_COMP,
        &[values.handle, results.handle],
        8,
        c"crash-pipeline",
    )?;
    cx.submit_and_leave(|cmd| {
        // SAFETY: a label on a command buffer being recorded.
        unsafe { debug_utils.cmd_begin_debug_utils_label(cmd, &label(c"crash frame")) };
        long.record(d, cmd, &push_bytes(&[43_000, GRID * GRID]), [groups, 1, 1]);
        // SAFETY: as above.
        unsafe { debug_utils.cmd_end_debug_utils_label(cmd) };
        Ok(())
    })?;
    eprintln!("bb-testapp: crash-in-blackbox-lock: naming an object with address 1 as its name");
    let mut info = vk::DebugUtilsObjectNameInfoEXT::default().object_handle(cx.device.handle());
    info.p_object_name = std::ptr::dangling::<std::ffi::c_char>();
    // SAFETY: none; this is the point: pObjectName is not a string.
    let result = unsafe { debug_utils.set_debug_utils_object_name(&info) };
    eprintln!("bb-testapp: crash-in-blackbox-lock: no fault ({result:?})");
    Ok(Outcome::Skipped(
        "the bad name pointer did not fault".into(),
    ))
}

/// Installs the app's own crash handler for SIGSEGV and SIGABRT.
pub fn install_crash_handler() {
    // SAFETY: sigaction with a zeroed, then filled, struct; the handler only makes async-signal-safe calls.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = crash_handler as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        for sig in [libc::SIGSEGV, libc::SIGABRT] {
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn crash_handler(sig: libc::c_int) {
    let mut line = [0u8; 96];
    let text = CRASH_HANDLER_LINE.as_bytes();
    line[..text.len()].copy_from_slice(text);
    let mut len = text.len();
    let digits = [b'0' + (sig / 10 % 10) as u8, b'0' + (sig % 10) as u8];
    let digits = if sig >= 10 { &digits[..] } else { &digits[1..] };
    line[len..len + digits.len()].copy_from_slice(digits);
    len += digits.len();
    line[len] = b'\n';
    // SAFETY: async-signal-safe calls only: write, signal, raise.
    unsafe {
        libc::write(2, line.as_ptr().cast(), len + 1);
        // As crash reporters do: the default action, once this handler returns.
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn label(name: &CStr) -> vk::DebugUtilsLabelEXT<'_> {
    vk::DebugUtilsLabelEXT::default().label_name(name)
}
