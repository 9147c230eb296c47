//! `debugPrintfEXT`/`printf` calls become records.
//!
//! Every `NonSemantic.DebugPrintf` instruction left after the assert pass is replaced by a call that
//! records its arguments (a printf site whose format is the call's format string, values named after their
//! conversions: `"%f arg 1"`), or removed when printf is off. Either way no `DebugPrintf` instruction is left,
//! so the module loads on drivers without `VK_KHR_shader_non_semantic_info`.

use super::{conversions, debug_printf};
use crate::base::{At, Base, Edit, HelperKind, Pass};
use crate::error::NotInstrumented;
use crate::info::SiteKind;
use crate::module::Instruction;

/// The printf pass.
pub(crate) struct PrintfPass;

impl Pass for PrintfPass {
    fn visit(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        let Some((format, args)) = debug_printf(base, inst) else {
            return Ok(Edit::Keep);
        };
        if !base.options.printf {
            return Ok(Edit::Remove);
        }
        let specs = conversions(&format);
        let values: Vec<(String, u32)> = args
            .iter()
            .enumerate()
            .map(|(i, &id)| match specs.get(i) {
                Some(spec) => (format!("{spec} arg {i}"), id),
                None => (format!("arg {i}"), id),
            })
            .collect();
        let call = base.site(
            at,
            SiteKind::Printf,
            Some(format),
            values,
            HelperKind::Record,
            inst.result_id,
        )?;
        Ok(match call {
            Some(insts) => Edit::Replace(insts),
            None => Edit::Remove,
        })
    }

    /// Only a module that imports `NonSemantic.DebugPrintf` has calls to turn into sites or remove.
    fn active(&self, base: &Base<'_>) -> bool {
        super::imports_debug_printf(base)
    }
}
