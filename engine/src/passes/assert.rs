//! Shader asserts: `BB_ASSERT` from `shaders/blackbox.glsl` and `shaders/blackbox.hlsl`.
//!
//! The macros expand to `if (!(cond)) debugPrintfEXT("[bb-assert %u]", uint(id), values...)` (`printf` in
//! HLSL), so a shader still compiles, and prints, without Blackbox. This pass recognises the reserved prefix
//! `[bb-assert`: the first argument is the assert id (it must be a constant, else the call stays a plain
//! printf), the other arguments are the values. Text after the closing `]` is the assert's own message and
//! format (`"[bb-assert %u] size=%f"`), kept as the site's format; without it the layer prints the values
//! by their types.
//!
//! The condition is the shader's own `if`, so the site is simply the call, replaced by a record write. With
//! `assert_crash`, the failing invocation then stores through [`crate::record::CRASH_ADDRESS`] to fault the
//! device on purpose. With asserts off, the calls are removed.

use super::debug_printf;
use crate::base::{At, Base, Edit, HelperKind, Pass};
use crate::error::NotInstrumented;
use crate::info::SiteKind;
use crate::module::Instruction;

/// The format prefix that marks an assert.
pub const ASSERT_PREFIX: &str = "[bb-assert";

/// The assert pass.
pub(crate) struct AssertPass;

/// Splits an assert format into its message (what follows the `]`, if anything).
pub(crate) fn assert_message(format: &str) -> Option<Option<String>> {
    let rest = format.strip_prefix(ASSERT_PREFIX)?;
    let close = rest.find(']')?;
    let message = rest[close + 1..].trim();
    Some(if message.is_empty() {
        None
    } else {
        Some(message.to_string())
    })
}

impl Pass for AssertPass {
    fn visit(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        let Some((format, args)) = debug_printf(base, inst) else {
            return Ok(Edit::Keep);
        };
        let Some(message) = assert_message(&format) else {
            return Ok(Edit::Keep);
        };
        if !base.options.asserts {
            return Ok(Edit::Remove);
        }
        let Some(id) = args.first().and_then(|&a| base.b.types.int_value(a)) else {
            // Not an assert the engine can name: the printf pass takes it.
            return Ok(Edit::Keep);
        };
        let specs = message
            .as_deref()
            .map(super::conversions)
            .unwrap_or_default();
        let values: Vec<(String, u32)> = args[1..]
            .iter()
            .enumerate()
            .map(|(i, &v)| match specs.get(i) {
                Some(spec) => (format!("{spec} arg {}", i + 1), v),
                None => (format!("value {}", i + 1), v),
            })
            .collect();
        let call = base.site(
            at,
            SiteKind::Assert { id },
            message,
            values,
            HelperKind::AssertRecord,
            inst.result_id,
        )?;
        let mut out: Vec<Instruction> = call.unwrap_or_default();
        if base.options.assert_crash {
            out.push(base.crash_call());
        }
        Ok(Edit::Replace(out))
    }

    /// Only a module that imports `NonSemantic.DebugPrintf` has calls to turn into sites or remove.
    fn active(&self, base: &Base<'_>) -> bool {
        super::imports_debug_printf(base)
    }
}

#[cfg(test)]
mod tests {
    use super::assert_message;

    #[test]
    fn recognises_the_prefix() {
        assert_eq!(assert_message("[bb-assert %u]"), Some(None));
        assert_eq!(
            assert_message("[bb-assert %u] size=%f"),
            Some(Some("size=%f".into()))
        );
        assert_eq!(assert_message("x=%d"), None);
        assert_eq!(assert_message("[bb-assert no bracket"), None);
    }
}
