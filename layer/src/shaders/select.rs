//! Which shaders Blackbox instruments (`VK_BLACKBOX_SHADERS`), their instrumented form, and the dump of
//! both (`VK_BLACKBOX_DUMP_SHADERS`).

use std::sync::Arc;

use super::{shader_id, ShaderRecord};
use crate::device::Device;
use crate::shader_errors::InstrumentedShader;

/// What the layer records of a module's code: with what the engine learnt when it instrumented it, else
/// to be read only if a report asks.
pub(super) fn record_for(
    code: &[u32],
    info: Option<&blackbox_engine::ShaderInfo>,
) -> Arc<ShaderRecord> {
    Arc::new(match info {
        Some(info) => ShaderRecord::with_info(code, info),
        None => ShaderRecord::deferred(code),
    })
}

/// Whether `VK_BLACKBOX_SHADERS` selects this module: an id prefix, or one of its names (entry point,
/// function, source file, or a source file's base name). Each entry that does is counted.
fn selected(code: &[u32], info: Option<&blackbox_engine::ShaderInfo>) -> bool {
    let filter = &crate::config().shader_filter;
    if filter.is_empty() {
        return true;
    }
    let id = shader_id(code);
    filter.any(|f| {
        id.starts_with(f.as_str())
            || info.is_some_and(|i| {
                i.debug_names
                    .iter()
                    .any(|n| n == f || n.rsplit(['/', '\\']).next() == Some(f.as_str()))
            })
    })
}

/// At a device's end, once per process: the `VK_BLACKBOX_SHADERS` entries that selected none of the modules
/// the app created. A name typed by hand that matches nothing leaves those shaders uninstrumented, and a
/// run that then reports nothing would seem to clear them.
pub(crate) fn warn_of_unmatched_filters() {
    let filter = &crate::config().shader_filter;
    let seen = filter.tries();
    if seen == 0 {
        return;
    }
    if let Some((unmatched, them)) = filter.unmatched_once() {
        warn!(
            "VK_BLACKBOX_SHADERS: {unmatched} selected none of the {seen} shader module(s) the app created, so \
             none was instrumented for {them}: an entry matches the first digits of a shader id, a source file \
             or its base name, or an entry point or function name, as `blackbox shader-info` prints them for \
             the modules VK_BLACKBOX_DUMP_SHADERS writes"
        );
    }
}

/// The instrumented form of `code` on this device, or `None` to use the app's own (instrumentation off,
/// not selected, or refused by the engine: then a warning, once per module). Every module is dumped
/// (`VK_BLACKBOX_DUMP_SHADERS`), instrumented or not.
pub(super) fn instrumented(dev: &Device, code: &[u32]) -> Option<Arc<InstrumentedShader>> {
    let shader = instrument(dev, code);
    dump(code, shader.as_deref(), None);
    shader
}

/// `VK_BLACKBOX_DUMP_SHADERS` for a fragment shader instrumented for a pipeline's attachments, which keep
/// `kept` of its output locations: `<id>.attachments-<kept>.instrumented.spv` and its site table, whose
/// numbers the log's `site N` uses for that pipeline's shader.
pub(super) fn dump_for_attachments(code: &[u32], shader: &InstrumentedShader, kept: &[u8]) {
    let kept: String = kept.iter().map(|k| format!("{k:x}")).collect();
    dump(code, Some(shader), Some(&format!("attachments-{kept}")));
}

fn instrument(dev: &Device, code: &[u32]) -> Option<Arc<InstrumentedShader>> {
    let guard = dev.error_buffer.read();
    let eb = guard.as_ref()?;
    if !crate::config().shader_filter.is_empty() {
        let info = blackbox_engine::shader_info(code).ok();
        if !selected(code, info.as_ref()) {
            return None;
        }
    }
    if !eb.needs(code) {
        return None;
    }
    let (result, fresh) = eb.instrument(code);
    match result {
        Ok(shader) => {
            if fresh {
                debug!(
                    "shader {} instrumented: {} site(s)",
                    shader.info.id,
                    shader.info.sites.len()
                );
            }
            Some(shader)
        }
        Err(reason) => {
            if fresh {
                warn!(
                    "shader {} is passed through unchanged: {reason}",
                    shader_id(code)
                );
            }
            None
        }
    }
}

/// Modules already dumped, by shader id (with the variant's name) and whether with their instrumented form:
/// each is written once.
static DUMPED: parking_lot::Mutex<Option<std::collections::HashSet<(String, bool)>>> =
    parking_lot::Mutex::new(None);

/// `VK_BLACKBOX_DUMP_SHADERS`: every module the app creates (`<id>.spv`), and where it has sites its
/// instrumented form and site table; the folder is logged with the first. A `variant` of the instrumented
/// form is written as `<id>.<variant>.instrumented.spv` and `<id>.<variant>.sites.txt`.
fn dump(code: &[u32], shader: Option<&InstrumentedShader>, variant: Option<&str>) {
    let Some(dir) = &crate::config().dump_shaders else {
        return;
    };
    let app_id = shader_id(code);
    let id = match variant {
        Some(variant) => format!("{app_id}.{variant}"),
        None => app_id.clone(),
    };
    {
        let mut dumped = DUMPED.lock();
        let dumped = dumped.get_or_insert_with(Default::default);
        if dumped.is_empty() {
            info!(
                "VK_BLACKBOX_DUMP_SHADERS: writing every shader module into {}",
                dir.display()
            );
        }
        if !dumped.insert((id.clone(), shader.is_some())) {
            return;
        }
    }
    let bytes = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let result = (|| -> std::io::Result<()> {
        crate::output::create_dir_all(dir)?;
        crate::output::write_atomic(&dir.join(format!("{app_id}.spv")), &bytes(code))?;
        if let Some(shader) = shader {
            crate::output::write_atomic(
                &dir.join(format!("{id}.instrumented.spv")),
                &bytes(&shader.words),
            )?;
            // The numbers the log's `site N` uses, as `blackbox shader-info --sites` prints them.
            let mut sites = String::new();
            for s in &shader.info.sites {
                sites.push_str(&s.table_line(0));
                sites.push('\n');
            }
            crate::output::write_atomic(&dir.join(format!("{id}.sites.txt")), sites.as_bytes())?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        warn!(
            "VK_BLACKBOX_DUMP_SHADERS={}: cannot write shader {id} ({e})",
            dir.display()
        );
    }
}
