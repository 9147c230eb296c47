//! Blackbox, the Vulkan layer (`libVkLayer_blackbox.so`, layer `VK_LAYER_blackbox`).
//!
//! The loader finds the layer through its manifest and calls the one exported function,
//! [`ffi::vkNegotiateLoaderLayerInterfaceVersion`]. From then on the app's calls reach the hooks in [`ffi`],
//! which turn raw pointers into typed calls, catch every panic, and call down the chain.
//!
//! - [`ffi`]: the entry points and the tables of what is intercepted; everything else resolves straight to
//!   the next layer.
//! - [`registry`]: per-object state ([`instance::Instance`], [`device::Device`]) found by dispatch key;
//!   [`dispatch`]: the next layer's commands the layer calls itself, each optional;
//!   [`capabilities`]: what a device offers, and the patch of the app's device create info.
//! - Recording: [`command_buffer`] (the per-command-buffer log) and [`breadcrumbs`] (marker writes).
//! - Submissions: [`queue`] (what is pending per queue, through timeline semaphores of the layer's own),
//!   [`watchdog`] (hangs), [`signals`] (fatal signals).
//! - Shaders: [`shaders`] (modules and pipelines) and [`shader_errors`] (the error buffer, instrumentation
//!   through `blackbox-engine`, the drain and its log lines); [`site_map`]: each module's site range, kept
//!   between runs.
//! - Reports: [`report`] (built from the above, written atomically), [`fault`] (`VK_EXT_device_fault`, NV
//!   checkpoints), [`address_bindings`]; [`frames`] (the last presented frames, and the report of a bad one).
//! - [`config`](mod@config): every `VK_BLACKBOX_*` variable, parsed once; [`logging`]: where messages go; [`memory`]:
//!   the layer's own mapped buffers; [`chain`]: `pNext` chains; [`output`]: the report folder, and the
//!   private modes of everything written.
//!
//! A failure inside the layer is logged and the layer steps aside; it never takes the app down.
#![deny(unsafe_op_in_unsafe_fn)]
// The crate is named after the library file the loader looks for.
#![allow(non_snake_case)]

/// Log macros for the layer: every message carries the target `blackbox`, which `VK_BLACKBOX_LOG` filters.
macro_rules! log_at {
    ($level:ident, $($arg:tt)+) => { ::log::$level!(target: "blackbox", $($arg)+) };
}
macro_rules! error { ($($arg:tt)+) => { log_at!(error, $($arg)+) }; }
macro_rules! warn { ($($arg:tt)+) => { log_at!(warn, $($arg)+) }; }
macro_rules! info { ($($arg:tt)+) => { log_at!(info, $($arg)+) }; }
macro_rules! debug { ($($arg:tt)+) => { log_at!(debug, $($arg)+) }; }

/// Calls the next layer's command with the arguments the app gave the hook, unchanged: the one place the
/// hooks' pass-through calls are written, and their one reason to be sound.
macro_rules! forward {
    ($next:expr, $($arg:expr),* $(,)?) => {{
        #[allow(unused_unsafe)]
        // SAFETY: `$next` is the next layer's command of the hook's own type (from the dispatch table of
        // the object the hook was called on), and the arguments are the ones the app passed to the hook,
        // which the command's valid-usage rules make valid and which the layer has not changed.
        unsafe { ($next)($($arg),*) }
    }};
}

// The one list of commands, a macro the modules below expand: it must come first.
#[macro_use]
mod commands;

pub mod address_bindings;
pub mod breadcrumbs;
pub mod capabilities;
pub mod chain;
pub mod command_buffer;
pub mod command_log;
pub mod config;
pub mod device;
pub mod dispatch;
pub mod fallback;
pub mod fault;
pub mod ffi;
pub mod frames;
pub mod instance;
pub mod layer_settings;
pub mod logging;
pub mod matched;
pub mod memory;
pub mod output;
pub mod queue;
pub mod raw;
pub mod registry;
pub mod report;
pub mod run_status;
pub mod shader_errors;
pub mod shaders;
pub mod signals;
pub mod site_map;
pub mod skip;
pub mod suspects;
pub mod validation_below;
pub mod watchdog;

/// The layer's settings, read once: at the first `vkCreateInstance` ([`init_config`], which sees the app's
/// `VkLayerSettingsCreateInfoEXT`), or, if something needs them before that, from the environment and the
/// settings file alone.
static CONFIG: once_cell::sync::OnceCell<config::Config> = once_cell::sync::OnceCell::new();

/// The layer's settings (see [`CONFIG`]).
pub fn config() -> &'static config::Config {
    CONFIG.get_or_init(|| set_up(&[]))
}

/// Reads the settings, with what the app gave Blackbox in `VkLayerSettingsCreateInfoEXT`, unless they have
/// been read already (a later instance's settings struct changes nothing: settings are per process).
pub fn init_config(app: &[layer_settings::AppSetting]) -> &'static config::Config {
    CONFIG.get_or_init(|| set_up(app))
}

/// Parses the settings, opens the log, warns about bad values and checks the report folder writable (or
/// replaces it by a fallback, with a warning).
fn set_up(app: &[layer_settings::AppSetting]) -> config::Config {
    let parsed = config::Config::from_process(app);
    let mut config = parsed.config;
    let log_warning = logging::init(&config);
    install_panic_hook();
    for warning in parsed.warnings.iter().chain(log_warning.iter()) {
        warn!("{warning}");
    }
    let what = match config.output_origin() {
        Some(config::Origin::Environment) => {
            format!("VK_BLACKBOX_OUTPUT={}", config.output_dir.display())
        }
        Some(origin) => format!(
            "blackbox.output (from {origin}) = {}",
            config.output_dir.display()
        ),
        None => format!("default report folder {}", config.output_dir.display()),
    };
    let resolved = output::resolve(
        &config.output_dir,
        &what,
        &std::env::temp_dir(),
        output::current_uid(),
    );
    for warning in &resolved.warnings {
        warn!("{warning}");
    }
    config.output_dir = resolved.dir;
    config
}

/// Runs a piece of the layer's own work inside a hook, before or after the call down. A panic is logged and
/// the work is skipped; the app's call goes on.
pub(crate) fn contained<R>(what: &str, body: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(result) => Some(result),
        Err(_) => {
            error!("{what}: internal error, Blackbox goes on without it");
            None
        }
    }
}

/// Routes panics inside the layer to its log instead of the app's stderr. This library has its own copy of
/// std, so the hook covers the layer's code only, never the host app's.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        error!("internal error{location}: {message}");
    }));
}
