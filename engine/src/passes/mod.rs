//! The instrumentation passes, one per file, each a callback over [`crate::base::Base`]:
//!
//! - [`assert::AssertPass`]: `debugPrintf` calls with the reserved `[bb-assert` prefix become assert sites;
//! - [`printf::PrintfPass`]: every other `debugPrintf` call becomes a printf site;
//! - [`nan_guard::NanGuardPass`]: NaN/Inf checks after float operations (`ops`) and at stores that leave the
//!   shader (`outputs`);
//! - [`loops::LoopPass`]: per-invocation iteration counters in every loop, a record once an invocation
//!   passes the budget, and at `break` the way out of the loop (with [`cfg`], the loops of a function);
//! - [`int_guard::IntGuardPass`]: integer division and remainder by zero, `INT_MIN / -1`, shifts by the bit
//!   width or more, and dynamic indices out of range;
//! - [`strip`]: removes what is left of `NonSemantic.*` (always the printf import once unused; all of it when
//!   `Options::strip_non_semantic` is set).

pub(crate) mod assert;
mod cfg;
pub(crate) mod int_guard;
pub(crate) mod loops;
pub(crate) mod nan_guard;
pub(crate) mod printf;
pub(crate) mod strip;

use spirv::{NonsemanticDebugprintfOp, Op};

use crate::analysis::DEBUG_PRINTF_SET;
use crate::base::Base;
use crate::module::Instruction;

/// Whether some pass may change the module under `options` (a pass is active: see [`crate::base::Pass`]):
/// only then does the instrumentation need the module's type table.
pub(crate) fn may_instrument(base: &Base<'_>, options: &crate::Options) -> bool {
    options.nan != crate::NanLevel::Off
        || options.loops != crate::LoopMode::Off
        || options.int_checks
        || imports_debug_printf(base)
}

/// Whether the module imports `NonSemantic.DebugPrintf` (the one place its calls can come from).
pub(crate) fn imports_debug_printf(base: &Base<'_>) -> bool {
    base.an.ext_sets.values().any(|s| s == DEBUG_PRINTF_SET)
}

/// If `inst` is a `NonSemantic.DebugPrintf` `DebugPrintf`, its format string and argument ids.
pub(crate) fn debug_printf<'i>(
    base: &Base<'_>,
    inst: &'i Instruction,
) -> Option<(String, &'i [u32])> {
    if !inst.is(Op::ExtInst) {
        return None;
    }
    let (&set, rest) = inst.operands.split_first()?;
    if base.an.ext_set(set)? != DEBUG_PRINTF_SET
        || rest.first() != Some(&(NonsemanticDebugprintfOp::DebugPrintf as u32))
    {
        return None;
    }
    let format = rest
        .get(1)
        .and_then(|f| base.an.strings.get(f))
        .cloned()
        .unwrap_or_default();
    Some((format, rest.get(2..).unwrap_or(&[])))
}

/// The conversion specifications of a printf format, in order (`%%` excluded), as written (`%v3f`, `%lu`).
pub(crate) fn conversions(format: &str) -> Vec<String> {
    let chars: Vec<char> = format.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            i += 2;
            continue;
        }
        let start = i;
        i += 1;
        while i < chars.len() && !chars[i].is_ascii_alphabetic() {
            i += 1;
        }
        // Vector and length modifiers come before the conversion letter.
        while i < chars.len() && matches!(chars[i], 'v' | 'l' | 'h') {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
        if i < chars.len() {
            out.push(chars[start..=i].iter().collect());
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_conversions() {
        assert_eq!(
            super::conversions("a=%d b=%5.2f %% c=%v3f d=%lu"),
            ["%d", "%5.2f", "%v3f", "%lu"]
        );
        assert_eq!(super::conversions("[bb-assert %u]"), ["%u"]);
        assert!(super::conversions("100%%").is_empty());
    }
}
