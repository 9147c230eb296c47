//! Just enough SPIR-V reflection to run an arbitrary compute or fragment shader: its entry point, workgroup
//! size, capabilities, push constants, the descriptors of set 0, and a fragment shader's inputs and
//! outputs. Anything else (another stage, other sets, arrays of descriptors, two variables at one binding,
//! image formats other than rgba32f/rgba8, inputs or outputs other than 32-bit scalars and vectors) is
//! refused with the reason, so that a caller can say which modules it ran and why it left the others.

use anyhow::{bail, Result};
use std::collections::HashMap;

/// What a binding of set 0 holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descriptor {
    StorageBuffer,
    UniformBuffer,
    /// With the image format the shader declares (rgba32f when it declares none).
    StorageImage {
        rgba8: bool,
    },
    SampledImage,
    CombinedImageSampler,
    Sampler,
}

/// The stages it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Compute,
    Fragment,
}

/// The scalar of a varying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    Float,
    Int,
    Uint,
}

/// A fragment shader input or output at a location: a 32-bit scalar or vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Varying {
    pub location: u32,
    pub scalar: Scalar,
    pub components: u32,
}

/// The interface of a compute or fragment shader.
#[derive(Debug)]
pub struct ShaderInterface {
    pub stage: Stage,
    /// The entry point's name.
    pub entry: String,
    /// Workgroup size (`LocalSize`, `LocalSizeId`, or the `WorkgroupSize` built-in's default value).
    pub local_size: [u32; 3],
    /// The size is given by `LocalSizeId` (needs `maintenance4`).
    pub local_size_id: bool,
    /// `OpCapability` operands.
    pub capabilities: Vec<u32>,
    /// Bindings of set 0, by binding number.
    pub bindings: Vec<(u32, Descriptor)>,
    /// A push-constant block is declared.
    pub push_constants: bool,
    /// A fragment shader's inputs and outputs with a location, by location.
    pub inputs: Vec<Varying>,
    pub outputs: Vec<Varying>,
}

mod op {
    pub const ENTRY_POINT: u32 = 15;
    pub const EXECUTION_MODE: u32 = 16;
    pub const CAPABILITY: u32 = 17;
    pub const TYPE_INT: u32 = 21;
    pub const TYPE_FLOAT: u32 = 22;
    pub const TYPE_VECTOR: u32 = 23;
    pub const TYPE_IMAGE: u32 = 25;
    pub const TYPE_SAMPLER: u32 = 26;
    pub const TYPE_SAMPLED_IMAGE: u32 = 27;
    pub const TYPE_STRUCT: u32 = 30;
    pub const TYPE_POINTER: u32 = 32;
    pub const CONSTANT: u32 = 43;
    pub const CONSTANT_COMPOSITE: u32 = 44;
    pub const SPEC_CONSTANT: u32 = 50;
    pub const SPEC_CONSTANT_COMPOSITE: u32 = 51;
    pub const VARIABLE: u32 = 59;
    pub const DECORATE: u32 = 71;
    pub const EXECUTION_MODE_ID: u32 = 331;
}

const FRAGMENT: u32 = 4;
const GL_COMPUTE: u32 = 5;
const LOCAL_SIZE: u32 = 17;
const LOCAL_SIZE_ID: u32 = 38;
const DECORATION_BLOCK: u32 = 2;
const DECORATION_BUFFER_BLOCK: u32 = 3;
const DECORATION_BUILTIN: u32 = 11;
const DECORATION_LOCATION: u32 = 30;
const DECORATION_BINDING: u32 = 33;
const DECORATION_DESCRIPTOR_SET: u32 = 34;
const BUILTIN_WORKGROUP_SIZE: u32 = 25;
const STORAGE_UNIFORM_CONSTANT: u32 = 0;
const STORAGE_INPUT: u32 = 1;
const STORAGE_UNIFORM: u32 = 2;
const STORAGE_OUTPUT: u32 = 3;
const STORAGE_PUSH_CONSTANT: u32 = 9;
const STORAGE_STORAGE_BUFFER: u32 = 12;
const FORMAT_UNKNOWN: u32 = 0;
const FORMAT_RGBA32F: u32 = 1;
const FORMAT_RGBA8: u32 = 4;

/// Reads the interface of a compute or fragment module (little-endian words).
pub fn shader_interface(words: &[u32]) -> Result<ShaderInterface> {
    if words.len() < 5 || words[0] != 0x0723_0203 {
        bail!("not a SPIR-V module");
    }
    let mut entry = None;
    let mut local_size = None;
    let mut local_size_ids = None;
    let mut capabilities = Vec::new();
    let mut decorations: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    let mut pointers = HashMap::new(); // id -> (storage class, pointee)
    let mut images = HashMap::new(); // id -> (sampled, format, a plain 2D float image)
    let mut floats = Vec::new();
    let mut scalars = HashMap::new(); // 32-bit scalar type id -> scalar
    let mut vectors = HashMap::new(); // vector type id -> (component type, count)
    let mut sampled_images = Vec::new();
    let mut samplers = Vec::new();
    let mut structs = Vec::new();
    let mut constants = HashMap::new(); // id -> first value word
    let mut composites = HashMap::new(); // id -> constituents
    let mut variables = Vec::new(); // (id, pointer type, storage class)
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            bail!("malformed instruction at word {at}");
        }
        // Operands, padded with zeros: a malformed short instruction reads as zeros, never out of bounds
        // (the driver then judges the module).
        let n = count - 1;
        let mut o = words[at + 1..at + count].to_vec();
        o.resize(n.max(8), 0);
        match opcode {
            op::CAPABILITY => capabilities.push(o[0]),
            op::ENTRY_POINT if entry.is_some() => bail!("more than one entry point"),
            op::ENTRY_POINT if o[0] == GL_COMPUTE || o[0] == FRAGMENT => {
                let bytes: Vec<u8> = o[2..].iter().flat_map(|w| w.to_le_bytes()).collect();
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                let stage = if o[0] == FRAGMENT {
                    Stage::Fragment
                } else {
                    Stage::Compute
                };
                entry = Some((stage, String::from_utf8_lossy(&bytes[..end]).into_owned()));
            }
            op::ENTRY_POINT => {
                bail!(
                    "entry point of execution model {} (not compute or fragment)",
                    o[0]
                )
            }
            op::EXECUTION_MODE if o.len() >= 5 && o[1] == LOCAL_SIZE => {
                local_size = Some([o[2], o[3], o[4]]);
            }
            op::EXECUTION_MODE_ID if o.len() >= 5 && o[1] == LOCAL_SIZE_ID => {
                local_size_ids = Some([o[2], o[3], o[4]]);
            }
            op::DECORATE if o.len() >= 2 => decorations
                .entry(o[0])
                .or_default()
                .push((o[1], o.get(2).copied().unwrap_or(0))),
            op::TYPE_POINTER => {
                pointers.insert(o[0], (o[1], o[2]));
            }
            op::TYPE_FLOAT => {
                floats.push(o[0]);
                if o[1] == 32 {
                    scalars.insert(o[0], Scalar::Float);
                }
            }
            op::TYPE_INT if o[1] == 32 => {
                scalars.insert(o[0], if o[2] == 1 { Scalar::Int } else { Scalar::Uint });
            }
            op::TYPE_VECTOR => {
                vectors.insert(o[0], (o[1], o[2]));
            }
            op::TYPE_IMAGE => {
                // Dim 2D, not depth-only, not arrayed, single-sampled, float texels.
                let plain =
                    o[2] == 1 && o[3] != 1 && o[4] == 0 && o[5] == 0 && floats.contains(&o[1]);
                images.insert(o[0], (o[6], o[7], plain));
            }
            op::TYPE_SAMPLED_IMAGE => sampled_images.push((o[0], o[1])),
            op::TYPE_SAMPLER => samplers.push(o[0]),
            op::TYPE_STRUCT => structs.push(o[0]),
            op::CONSTANT | op::SPEC_CONSTANT if o.len() >= 3 => {
                constants.insert(o[1], o[2]);
            }
            op::CONSTANT_COMPOSITE | op::SPEC_CONSTANT_COMPOSITE => {
                composites.insert(o[1], o[2..n.max(2)].to_vec());
            }
            op::VARIABLE => variables.push((o[1], o[0], o[2])),
            _ => {}
        }
        at += count;
    }
    let Some((stage, entry)) = entry else {
        bail!("no compute or fragment entry point")
    };
    let decorated = |id: u32, decoration: u32| {
        decorations
            .get(&id)
            .and_then(|list| list.iter().find(|(d, _)| *d == decoration).map(|(_, v)| *v))
    };
    // The WorkgroupSize built-in, where present, overrides LocalSize (GLSL's local_size_x_id).
    let builtin_size = composites.iter().find_map(|(&id, parts)| {
        (decorated(id, DECORATION_BUILTIN) == Some(BUILTIN_WORKGROUP_SIZE) && parts.len() == 3)
            .then(|| {
                parts
                    .iter()
                    .map(|p| constants.get(p).copied())
                    .collect::<Option<Vec<u32>>>()
            })
            .flatten()
    });
    let from_ids = local_size_ids.and_then(|ids| {
        let size: Option<Vec<u32>> = ids.iter().map(|id| constants.get(id).copied()).collect();
        size.map(|s| [s[0], s[1], s[2]])
    });
    let local_size = match (stage, builtin_size, from_ids, local_size) {
        (Stage::Fragment, ..) => [1, 1, 1],
        (_, Some(size), _, _) => [size[0], size[1], size[2]],
        (_, None, Some(size), _) | (_, None, None, Some(size)) => size,
        (_, None, None, None) => bail!("no workgroup size"),
    };
    let mut bindings = Vec::new();
    let mut push_constants = false;
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    for (id, pointer, storage) in variables {
        if storage == STORAGE_PUSH_CONSTANT {
            push_constants = true;
            continue;
        }
        if storage == STORAGE_INPUT || storage == STORAGE_OUTPUT {
            let Some(location) = decorated(id, DECORATION_LOCATION) else {
                continue; // a built-in
            };
            let pointee = pointers.get(&pointer).map_or(0, |&(_, t)| t);
            let (scalar, components) = match (scalars.get(&pointee), vectors.get(&pointee)) {
                (Some(&s), _) => (s, 1),
                (None, Some(&(c, n))) if scalars.contains_key(&c) => (scalars[&c], n),
                _ => bail!("location {location}: not a 32-bit scalar or vector"),
            };
            let varying = Varying {
                location,
                scalar,
                components,
            };
            if storage == STORAGE_INPUT {
                inputs.push(varying);
            } else {
                outputs.push(varying);
            }
            continue;
        }
        let (Some(set), Some(binding)) = (
            decorated(id, DECORATION_DESCRIPTOR_SET),
            decorated(id, DECORATION_BINDING),
        ) else {
            continue;
        };
        if set != 0 {
            bail!("descriptor set {set} (only set 0 is bound)");
        }
        let Some(&(_, pointee)) = pointers.get(&pointer) else {
            bail!("variable {id} without a pointer type");
        };
        let descriptor = if structs.contains(&pointee) {
            match storage {
                STORAGE_STORAGE_BUFFER => Descriptor::StorageBuffer,
                STORAGE_UNIFORM if decorated(pointee, DECORATION_BUFFER_BLOCK).is_some() => {
                    Descriptor::StorageBuffer
                }
                STORAGE_UNIFORM if decorated(pointee, DECORATION_BLOCK).is_some() => {
                    Descriptor::UniformBuffer
                }
                _ => bail!("binding {binding}: a block in storage class {storage}"),
            }
        } else if storage != STORAGE_UNIFORM_CONSTANT {
            bail!("binding {binding}: storage class {storage}");
        } else if let Some(&(sampled, format, plain)) = images.get(&pointee) {
            if !plain {
                bail!("binding {binding}: an image other than a single-sampled 2D float image");
            }
            match (sampled, format) {
                (2, FORMAT_RGBA32F | FORMAT_UNKNOWN) => Descriptor::StorageImage { rgba8: false },
                (2, FORMAT_RGBA8) => Descriptor::StorageImage { rgba8: true },
                (2, _) => bail!("binding {binding}: storage image format {format}"),
                _ => Descriptor::SampledImage,
            }
        } else if let Some(&(_, image)) = sampled_images.iter().find(|(id, _)| *id == pointee) {
            if !images.get(&image).is_some_and(|&(_, _, plain)| plain) {
                bail!("binding {binding}: a sampler of an image other than a 2D float image");
            }
            Descriptor::CombinedImageSampler
        } else if samplers.contains(&pointee) {
            Descriptor::Sampler
        } else {
            bail!("binding {binding}: an array or another kind of descriptor");
        };
        bindings.push((binding, descriptor));
    }
    bindings.sort_by_key(|&(b, _)| b);
    // DXC puts a texture and its sampler at one binding number when the HLSL says so: a layout cannot.
    if let Some(w) = bindings.windows(2).find(|w| w[0].0 == w[1].0) {
        bail!("binding {}: two variables", w[0].0);
    }
    inputs.sort_by_key(|v| v.location);
    outputs.sort_by_key(|v| v.location);
    Ok(ShaderInterface {
        stage,
        entry,
        local_size,
        local_size_id: local_size_ids.is_some(),
        capabilities,
        bindings,
        push_constants,
        inputs,
        outputs,
    })
}
