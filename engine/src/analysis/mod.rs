//! Analyses of a parsed module, built once before the passes run: strings and names, extended-instruction
//! sets, the type of every value, builtin variables, entry points and the stage that reaches each function,
//! source files and source locations.

pub(crate) mod disasm;
pub(crate) mod source;
pub(crate) mod types;

use spirv::{BuiltIn, Decoration, Op};

use crate::error::NotInstrumented;
use crate::info::{EntryPoint, Stage};
use crate::module::{decode_string, Module};
use crate::util::{map_with_capacity, FastMap};

pub(crate) use types::{Type, TypeTable};

/// The set name of source-level debug info (glslang `-gVS`, DXC `-fspv-debug=vulkan`); its instructions are
/// `spirv::NonsemanticShaderDebuginfo100Op`.
pub(crate) const DEBUG_INFO_SET: &str = "NonSemantic.Shader.DebugInfo.100";

/// The set name of `debugPrintfEXT`; its one instruction is `spirv::NonsemanticDebugprintfOp::DebugPrintf`.
pub(crate) const DEBUG_PRINTF_SET: &str = "NonSemantic.DebugPrintf";

/// The set name of the GLSL extended instructions, `spirv::GlslStd450Op`.
pub(crate) const GLSL_STD_450_SET: &str = "GLSL.std.450";

/// One `OpEntryPoint`, decoded.
#[derive(Clone, Debug)]
pub(crate) struct EntryPointDecl {
    /// Index of the instruction in `Module::entry_points`.
    pub index: usize,
    pub stage: Stage,
    pub function: u32,
    pub name: String,
}

/// Everything the passes look up.
pub(crate) struct Analysis {
    pub strings: FastMap<u32, String>,
    /// `OpName` and `OpMemberName` strings, undecoded: most are never asked for, so they are copied
    /// into `name_words` and decoded by [`Analysis::name`] and [`Analysis::member_name`].
    names: FastMap<u32, WordRange>,
    member_names: FastMap<(u32, u32), WordRange>,
    name_words: Vec<u32>,
    pub ext_sets: FastMap<u32, String>,
    /// The result type of every id that has one, indexed by id (0 when none).
    value_types: Vec<u32>,
    /// Global variables decorated `BuiltIn`: (builtin, variable) in module order; the builtin is `None` when
    /// the `spirv` grammar does not know it.
    pub builtin_vars: Vec<(Option<BuiltIn>, u32)>,
    pub entry_points: Vec<EntryPointDecl>,
    /// The stage of the first entry point whose static call tree reaches each function.
    pub function_stage: FastMap<u32, Stage>,
    /// For each function, the entry points (indexes into `entry_points`, in order) whose static call tree
    /// reaches it.
    function_entry_points: FastMap<u32, Vec<usize>>,
}

/// The result type of every id of `module` that has one, indexed by id (0 when none): what the parser notes
/// (`ParseNotes::value_types`), for tests that analyse a module parsed without notes.
#[cfg(test)]
fn value_types_of(module: &Module) -> Vec<u32> {
    let mut value_types = vec![0; module.header.bound as usize];
    let mut note_type = |list: &[crate::module::Instruction]| {
        for inst in list {
            if let (Some(ty), Some(id)) = (inst.result_type, inst.result_id) {
                if let Some(slot) = value_types.get_mut(id as usize) {
                    *slot = ty;
                }
            }
        }
    };
    for list in module.sections() {
        note_type(list);
    }
    module.for_each_function_list(note_type);
    value_types
}

impl Analysis {
    /// Analyses a module (tests: the engine has the value types from the parser).
    #[cfg(test)]
    pub(crate) fn new(module: &Module) -> Result<Analysis, NotInstrumented> {
        Self::with_value_types(module, value_types_of(module))
    }

    /// Analyses a module, given the result type of every id (indexed by id, 0 when none) as the parser
    /// noted them (`ParseNotes::value_types`). Fails on entry points of kernels or unknown execution
    /// models.
    pub(crate) fn with_value_types(
        module: &Module,
        value_types: Vec<u32>,
    ) -> Result<Analysis, NotInstrumented> {
        let name_count = module.debug_names.len();
        // Maps sized up front from what fills them (an upper bound): grown from nothing, each was rehashed
        // at every doubling.
        let member_name_count = module
            .debug_names
            .iter()
            .filter(|i| i.is(Op::MemberName))
            .count();
        let mut a = Analysis {
            strings: map_with_capacity(module.debug_strings.len()),
            names: map_with_capacity(name_count - member_name_count),
            member_names: map_with_capacity(member_name_count),
            // Every name's words, counted ahead so that the list is allocated once.
            name_words: Vec::with_capacity(
                module.debug_names.iter().map(|i| i.operands.len()).sum(),
            ),
            ext_sets: map_with_capacity(module.ext_inst_imports.len()),
            value_types,
            builtin_vars: Vec::new(),
            entry_points: Vec::new(),
            function_stage: map_with_capacity(module.functions.len()),
            function_entry_points: FastMap::default(),
        };
        for inst in &module.ext_inst_imports {
            if let Some(id) = inst.result_id {
                a.ext_sets.insert(id, decode_string(&inst.operands).0);
            }
        }
        for inst in &module.debug_strings {
            if let (Some(Op::String), Some(id)) = (inst.op(), inst.result_id) {
                a.strings.insert(id, decode_string(&inst.operands).0);
            }
        }
        for inst in &module.debug_names {
            match (inst.op(), inst.operands.split_first()) {
                (Some(Op::Name), Some((&target, rest))) => {
                    let range = a.keep_name(rest);
                    a.names.insert(target, range);
                }
                (Some(Op::MemberName), Some((&target, rest))) if !rest.is_empty() => {
                    let range = a.keep_name(&rest[1..]);
                    a.member_names.insert((target, rest[0]), range);
                }
                _ => {}
            }
        }
        for inst in &module.annotations {
            // OpDecorate %var BuiltIn %b
            if inst.is(Op::Decorate)
                && inst.operands.len() >= 3
                && inst.operands[1] == Decoration::BuiltIn as u32
            {
                a.builtin_vars
                    .push((BuiltIn::from_u32(inst.operands[2]), inst.operands[0]));
            }
        }
        for (index, inst) in module.entry_points.iter().enumerate() {
            let (&model, rest) = inst
                .operands
                .split_first()
                .ok_or_else(|| NotInstrumented::malformed("OpEntryPoint without operands"))?;
            let Some(stage) = Stage::from_execution_model(model) else {
                return Err(NotInstrumented::unsupported(format!(
                    "entry point with execution model {model} (kernels and unknown models are not instrumented)"
                )));
            };
            let (&function, rest) = rest
                .split_first()
                .ok_or_else(|| NotInstrumented::malformed("OpEntryPoint without a function"))?;
            let name = decode_string(rest).0;
            a.entry_points.push(EntryPointDecl {
                index,
                stage,
                function,
                name,
            });
        }
        a.function_entry_points = reaching_entry_points(module, &a.entry_points);
        // The order of this walk does not matter: each function gets its own first entry point.
        for (&function, reached_by) in &a.function_entry_points {
            if let Some(e) = reached_by.first().and_then(|&i| a.entry_points.get(i)) {
                a.function_stage.insert(function, e.stage);
            }
        }
        Ok(a)
    }

    #[cfg(test)]
    pub(crate) fn value_types_for_tests(&self) -> &[u32] {
        &self.value_types
    }

    /// Copies a name's words into `name_words`; returns where they are.
    fn keep_name(&mut self, words: &[u32]) -> WordRange {
        let start = self.name_words.len();
        self.name_words.extend_from_slice(words);
        start..self.name_words.len()
    }

    /// The `OpName` of an id (the last one, if several).
    pub(crate) fn name(&self, id: u32) -> Option<String> {
        let range = self.names.get(&id)?;
        Some(decode_string(&self.name_words[range.clone()]).0)
    }

    /// The `OpMemberName` of a struct type's member.
    pub(crate) fn member_name(&self, ty: u32, member: u32) -> Option<String> {
        let range = self.member_names.get(&(ty, member))?;
        Some(decode_string(&self.name_words[range.clone()]).0)
    }

    /// The result type of a value, if the module declares one.
    pub(crate) fn type_of(&self, id: u32) -> Option<u32> {
        match self.value_types.get(id as usize) {
            Some(&t) if t != 0 => Some(t),
            _ => None,
        }
    }

    /// Records the type of a value the engine made.
    pub(crate) fn set_type(&mut self, id: u32, ty: u32) {
        let i = id as usize;
        if i >= self.value_types.len() {
            self.value_types.resize(i + 1, 0);
        }
        self.value_types[i] = ty;
    }

    /// The extended-instruction set name of an import id.
    pub(crate) fn ext_set(&self, id: u32) -> Option<&str> {
        self.ext_sets.get(&id).map(String::as_str)
    }

    /// The names of the entry points whose static call tree reaches `function`, in module order, each
    /// name once.
    pub(crate) fn entry_point_names(&self, function: u32) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for &i in self
            .function_entry_points
            .get(&function)
            .into_iter()
            .flatten()
        {
            if let Some(e) = self.entry_points.get(i) {
                if !names.contains(&e.name) {
                    names.push(e.name.clone());
                }
            }
        }
        names
    }

    /// The public view of the entry points.
    pub(crate) fn public_entry_points(&self) -> Vec<EntryPoint> {
        self.entry_points
            .iter()
            .map(|e| EntryPoint {
                name: e.name.clone(),
                stage: e.stage,
                function_name: self.name(e.function),
            })
            .collect()
    }
}

/// Where a name's words are in [`Analysis`]'s `name_words`.
type WordRange = std::ops::Range<usize>;

/// For every function, the entry points (indexes into `entry_points`, in order) whose static call tree
/// reaches it.
fn reaching_entry_points(
    module: &Module,
    entry_points: &[EntryPointDecl],
) -> FastMap<u32, Vec<usize>> {
    let mut calls: FastMap<u32, Vec<u32>> = map_with_capacity(module.functions.len());
    for f in &module.functions {
        let callees = f
            .blocks
            .iter()
            .flat_map(|b| b.instructions.iter())
            .filter(|i| i.is(Op::FunctionCall))
            .filter_map(|i| i.operand(0))
            .collect();
        calls.insert(f.id(), callees);
    }
    let mut reached: FastMap<u32, Vec<usize>> = map_with_capacity(module.functions.len());
    for (index, e) in entry_points.iter().enumerate() {
        let mut stack = vec![e.function];
        while let Some(f) = stack.pop() {
            let by = reached.entry(f).or_default();
            // Seen from this entry point already (recursion is invalid SPIR-V, but damaged input has it).
            if by.last() == Some(&index) {
                continue;
            }
            by.push(index);
            if let Some(callees) = calls.get(&f) {
                stack.extend(callees.iter().copied());
            }
        }
    }
    reached
}
