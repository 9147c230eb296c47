//! The engine over its own corpus (`engine/tests/in`, compiled into variants by `common::shaders`): every
//! variant round-trips, instruments at every level and passes spirv-val for the environment it was compiled
//! for, its sites read alike nowhere and name real instructions, and the sites sit where the `// expect:`
//! markers in the sources say.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use blackbox_engine::module::Module;
use blackbox_engine::record::{self, RecordKind, ScalarType, ValueLayout};
use blackbox_engine::{
    instrument, instrument_with_id, shader_info, ClockScope, LoopClock, LoopMode, NanLevel,
    Options, ShaderId, SiteKind, Stage,
};
use common::shaders::{self, Debug, Variant};
use spirv::Op;

fn options(nan: NanLevel) -> Options {
    Options {
        error_buffer_address: 0x0000_7f00_dead_b000,
        site_base: 40,
        nan,
        ..Options::default()
    }
}

/// The corpus options with loop counters in `mode` (a time budget read from a clock of `clock` scope, if
/// any) and integer checks on.
fn loops(mode: LoopMode, clock: Option<ClockScope>) -> Options {
    Options {
        loops: mode,
        loop_clock: clock.map(|scope| LoopClock {
            scope,
            budget_ticks: 5_000_000_000,
        }),
        int_checks: true,
        ..options(NanLevel::Off)
    }
}

/// The instrumentation levels every variant goes through.
fn levels(v: &Variant) -> Vec<(&'static str, Options)> {
    let mut l = vec![
        ("asserts+printf", options(NanLevel::Off)),
        ("nan outputs", options(NanLevel::Outputs)),
        ("nan ops", options(NanLevel::Ops)),
        (
            "nan ops, assert crash",
            Options {
                assert_crash: true,
                ..options(NanLevel::Ops)
            },
        ),
    ];
    // Loop budgets and integer checks, in both loop modes; the clock (break) and no clock (report).
    l.push(("loops report, int checks", loops(LoopMode::Report, None)));
    l.push((
        "loops break with a clock, int checks, nan ops",
        Options {
            nan: NanLevel::Ops,
            ..loops(LoopMode::Break, Some(ClockScope::Subgroup))
        },
    ));
    if v.debug == Debug::ShaderDebugInfo {
        l.push((
            "nan ops, debug info kept",
            Options {
                strip_non_semantic: false,
                ..options(NanLevel::Ops)
            },
        ));
    }
    l
}

#[test]
fn every_variant_round_trips_word_for_word() {
    let variants = shaders::variants();
    assert!(
        variants.len() > 100,
        "expected a broad corpus, found {} variants",
        variants.len()
    );
    for v in &variants {
        let words = common::read_words(&v.path);
        let module = Module::parse(&words).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert!(module.to_words() == words, "{} does not round-trip", v.name);
    }
}

#[test]
fn every_variant_instruments_and_validates_at_every_level() {
    let variants = shaders::variants();
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("corpus-out");
    std::fs::create_dir_all(&out_dir).expect("creating the output directory");
    let paths: Vec<PathBuf> = variants.iter().map(|v| v.path.clone()).collect();
    let disassemblies = common::raw_disassembly_lines(&paths);
    let mut jobs = Vec::new();
    let mut names = Vec::new();
    let mut refused = Vec::new();
    let (mut sites, mut by_instruction) = (0, 0);
    for (i, v) in variants.iter().enumerate() {
        jobs.push(common::ValJob {
            path: v.path.clone(),
            env: v.env.into(),
        });
        names.push(format!("{} (input)", v.name));
        let words = common::read_words(&v.path);
        let disassembly = disassemblies[i]
            .as_ref()
            .unwrap_or_else(|| panic!("spirv-dis cannot read {}", v.name));
        for (j, (level, opts)) in levels(v).into_iter().enumerate() {
            match instrument(&words, &opts) {
                Ok(out) => {
                    sites += out.info.sites.len();
                    by_instruction += site_names_are_unique_and_real(
                        &format!("{} at {level}", v.name),
                        &out.info.sites,
                        disassembly,
                    );
                    let path = out_dir.join(format!("{i:04}-{j}.spv"));
                    common::write_words(&path, &out.words);
                    jobs.push(common::ValJob {
                        path,
                        env: v.env.into(),
                    });
                    names.push(format!("{} at {level}", v.name));
                }
                Err(e) => refused.push(format!("{} at {level}: {e}", v.name)),
            }
        }
    }
    let results = common::validate_all(&jobs);
    let failures: Vec<String> = results
        .iter()
        .zip(&names)
        .filter_map(|(r, n)| {
            r.as_ref()
                .map(|e| format!("{n}: {}", e.lines().take(4).collect::<Vec<_>>().join(" | ")))
        })
        .collect();
    println!(
        "own corpus: {} variants of {} shaders, {} instrumented modules with {} sites ({} named by their \
         instruction), {} refused, {} spirv-val failures",
        variants.len(),
        variants.iter().map(|v| &v.source).collect::<std::collections::HashSet<_>>().len(),
        jobs.len() - variants.len(),
        sites,
        by_instruction,
        refused.len(),
        failures.len()
    );
    for r in &refused {
        println!("  refused {r}");
    }
    for f in failures.iter().take(30) {
        println!("  INVALID {f}");
    }
    assert!(
        refused.is_empty(),
        "every module of the own corpus must instrument"
    );
    assert!(
        failures.is_empty(),
        "{} modules fail spirv-val",
        failures.len()
    );
    assert!(
        sites > 1000 && by_instruction > 500,
        "{sites} sites, {by_instruction} by instruction"
    );
}

/// Issue 11: no two sites of a module read alike, even without debug info: `Site::describe` (kind,
/// place, function and entry points) tells them apart. And each site's instruction is one line of
/// `spirv-dis --raw-id` of the input (`disassembly`), so a user can find it there. Returns how many sites
/// are named by their instruction (no location).
fn site_names_are_unique_and_real(
    module: &str,
    sites: &[blackbox_engine::Site],
    disassembly: &std::collections::HashSet<String>,
) -> usize {
    let mut seen = std::collections::HashMap::new();
    let mut by_instruction = 0;
    for s in sites {
        let d = s.describe();
        if let Some(other) = seen.insert(d.clone(), s.local_index) {
            panic!(
                "{module}: sites {other} and {} both read {d:?}",
                s.local_index
            );
        }
        assert!(
            disassembly.contains(&s.instruction),
            "{module}: site {} names {:?}, which spirv-dis --raw-id does not write",
            s.local_index,
            s.instruction
        );
        assert!(!s.entry_points.is_empty(), "{module}: {d}");
        if s.location.is_none() {
            by_instruction += 1;
            assert_eq!(
                s.place,
                format!("instruction {}", s.instruction),
                "{module}: {d}"
            );
        }
    }
    by_instruction
}

/// Whether a site's kind is the one a marker names: `SiteKind`'s `Display` is the markers' spelling.
fn site_matches(kind: &SiteKind, what: &str) -> bool {
    kind.to_string() == what
}

#[test]
fn sites_are_at_the_marked_source_lines() {
    let mut checked = 0;
    for v in shaders::variants() {
        let words = common::read_words(&v.path);
        let every_site = Options {
            nan: NanLevel::Ops,
            ..loops(LoopMode::Report, None)
        };
        let out = instrument(&words, &every_site).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let sites = &out.info.sites;
        for (i, s) in sites.iter().enumerate() {
            assert_eq!(
                s.local_index as usize, i,
                "{}: sites are numbered in order",
                v.name
            );
        }
        let markers = shaders::markers(&v.source);
        // Every marked kind of site exists, whatever the variant (the optimizer may fold some of them away:
        // only unoptimized variants are held to it).
        if !v.optimized {
            for (line, what) in &markers {
                assert!(
                    sites.iter().any(|s| site_matches(&s.kind, what)),
                    "{}: no {what} site (marked at line {line}); sites: {:?}",
                    v.name,
                    sites.iter().map(|s| &s.kind).collect::<Vec<_>>()
                );
            }
        }
        if v.debug == Debug::None || v.optimized {
            continue;
        }
        for (line, what) in &markers {
            let found = sites.iter().any(|s| {
                site_matches(&s.kind, what)
                    && s.location
                        .as_ref()
                        .is_some_and(|l| l.line == *line && l.file.ends_with(&v.source))
            });
            assert!(
                found,
                "{}: no {what} site at {}:{line}; sites: {:?}",
                v.name,
                v.source,
                sites
                    .iter()
                    .map(|s| (&s.kind, s.location.as_ref().map(|l| l.to_string())))
                    .collect::<Vec<_>>()
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} marker checks ran");
}

/// Stores, copies, atomics and reports of floats are checked at the `outputs` level as at `ops`: every
/// `nan-output` marker holds there too, and a module with one has sites at `outputs`.
#[test]
fn output_markers_hold_at_the_outputs_level() {
    let mut checked = 0;
    for v in shaders::variants() {
        if v.optimized {
            continue;
        }
        let markers: Vec<(u32, String)> = shaders::markers(&v.source)
            .into_iter()
            .filter(|(_, m)| m.starts_with("nan-output "))
            .collect();
        if markers.is_empty() {
            continue;
        }
        let words = common::read_words(&v.path);
        let out = instrument(&words, &options(NanLevel::Outputs))
            .unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let sites = &out.info.sites;
        assert!(
            sites
                .iter()
                .all(|s| matches!(s.kind, SiteKind::NanOutput { .. })
                    || matches!(s.kind, SiteKind::Assert { .. } | SiteKind::Printf)),
            "{}: only output sites at the outputs level",
            v.name
        );
        for (line, what) in &markers {
            let found = sites.iter().any(|s| {
                site_matches(&s.kind, what)
                    && (v.debug == Debug::None
                        || s.location.as_ref().is_some_and(|l| l.line == *line))
            });
            assert!(
                found,
                "{}: no {what} site (line {line}) at the outputs level; sites: {:?}",
                v.name,
                sites
                    .iter()
                    .map(|s| (s.kind.to_string(), s.place.clone()))
                    .collect::<Vec<_>>()
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} output markers checked");
}

/// What a site says about itself, with and without debug info.
#[test]
fn sites_name_their_function_entry_points_and_instruction() {
    let op_site = |out: &blackbox_engine::Instrumented, name: &str| {
        out.info
            .sites
            .iter()
            .find(|s| matches!(s.kind, SiteKind::NanOp { op } if op == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} site"))
    };
    let words = common::read_words(&variant("particles.comp vulkan1.0 -g").path);
    let out = instrument(&words, &options(NanLevel::Ops)).unwrap();
    let line = |what: &str| {
        shaders::markers("particles.comp")
            .into_iter()
            .find(|(_, m)| m == what)
            .map(|(l, _)| l)
            .expect("marker")
    };
    let s = op_site(&out, "inversesqrt");
    assert_eq!(s.function.as_deref(), Some("attraction(vf3;vf3;"));
    assert_eq!(s.entry_points[..], ["main"]);
    assert_eq!(
        s.scope(),
        "function attraction(vf3;vf3;, entry point main (comp)"
    );
    let at = format!("particles.comp:{}", line("nan-op inversesqrt"));
    assert_eq!(s.place, at);
    assert_eq!(
        s.describe(),
        format!(
            "nan-op inversesqrt at {at} in function attraction(vf3;vf3;, entry point main (comp)"
        )
    );
    // In the entry function itself, the entry point alone.
    assert_eq!(op_site(&out, "sqrt").scope(), "entry point main (comp)");
    // A printf site's kind carries its format.
    let printf = out
        .info
        .sites
        .iter()
        .find(|s| s.kind == SiteKind::Printf)
        .unwrap();
    assert!(printf
        .describe()
        .starts_with("printf \"particle %u speed %f heat %f\" at particles.comp:"));

    // Without debug info: the instruction, as spirv-dis --raw-id writes it.
    let words = common::read_words(&variant("particles.comp vulkan1.0").path);
    let out = instrument(&words, &options(NanLevel::Ops)).unwrap();
    let s = op_site(&out, "inversesqrt");
    assert!(s.location.is_none());
    let parts: Vec<&str> = s.instruction.split(' ').collect();
    assert!(
        parts.len() == 7
            && parts[0].starts_with('%')
            && parts[1] == "="
            && parts[2] == "OpExtInst"
            && parts[5] == "InverseSqrt",
        "{}",
        s.instruction
    );
    assert_eq!(s.place, format!("instruction {}", s.instruction));
    assert!(s
        .describe()
        .starts_with("nan-op inversesqrt at instruction %"));

    // Two entry points share a function; two divisions on one line; the same store twice on one line.
    let words = common::read_words(&variant("entries.comp.spvasm vulkan1.0").path);
    let out = instrument(&words, &options(NanLevel::Ops)).unwrap();
    let sites = &out.info.sites;
    let lines = shaders::markers("entries.comp.spvasm");
    let (division, store) = (lines[0].0, lines[1].0);
    assert_eq!(sites.len(), 5, "{sites:?}");
    for s in &sites[..4] {
        assert_eq!(s.entry_points[..], ["first", "second"]);
        assert_eq!(s.scope(), "function shade(f1;, entry points first, second");
    }
    let file = "entries.comp.spvasm";
    assert_eq!(
        sites[0].place,
        format!("{file}:{division}, instruction {}", sites[0].instruction)
    );
    assert!(
        sites[0].instruction.contains(" = OpFDiv %"),
        "{}",
        sites[0].instruction
    );
    assert_ne!(sites[0].place, sites[1].place);
    assert_eq!(sites[2].instruction, sites[3].instruction);
    assert_eq!(
        sites[2].place,
        format!("{file}:{store}, instruction {} #1", sites[2].instruction)
    );
    assert!(sites[3].place.ends_with(" #2"), "{}", sites[3].place);
    assert_eq!(sites[4].entry_points[..], ["second"]);
    // Memory operands, both masks of a copy.
    let words = common::read_words(&variant("copy.comp.spvasm vulkan1.2").path);
    let out = instrument(&words, &options(NanLevel::Outputs)).unwrap();
    let copy = &out.info.sites[1].instruction;
    assert!(
        copy.starts_with("OpCopyMemory %") && copy.ends_with(" Aligned 4 Aligned 16"),
        "{copy}"
    );
    assert_eq!(sites[4].scope(), "entry point second (comp)");
    assert_eq!(
        sites[4].place,
        format!("instruction {}", sites[4].instruction)
    );
}

fn variant(name: &str) -> Variant {
    shaders::variants()
        .into_iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variant named {name}"))
}

/// The rare-flash shader, ready for the layer's end-to-end test: what the instrumented module promises.
///
/// `rare_flash.comp`, compiled with `-g` for Vulkan 1.0 and instrumented at the `ops` level with
/// `site_base` 40: dispatched as 1 workgroup of 64 invocations, invocation (12, 0, 0) and no other
/// normalizes (0, 0, 0), so the error buffer ends up with counter 40 = 1 and one record, decoded here from
/// the words the writer stores.
#[test]
fn rare_flash_record_expectation() {
    let v = variant("rare_flash.comp vulkan1.0 -g");
    let words = common::read_words(&v.path);
    let out = instrument(&words, &options(NanLevel::Ops)).expect("instrumenting rare_flash.comp");
    let normalize_line = shaders::markers("rare_flash.comp")
        .into_iter()
        .find(|(_, m)| m == "nan-op normalize")
        .map(|(l, _)| l)
        .expect("marker");
    let site = &out.info.sites[0];
    assert_eq!(site.kind, SiteKind::NanOp { op: "normalize" });
    assert_eq!(site.stage, Stage::Compute);
    assert_eq!(
        site.location.as_ref().map(|l| (l.file.as_str(), l.line)),
        Some(("rare_flash.comp", normalize_line))
    );
    let f3 = |name: &str| ValueLayout {
        name: name.into(),
        scalar: ScalarType::F32,
        components: 3,
    };
    assert_eq!(site.values, vec![f3("operand 0"), f3("result")]);
    assert_eq!(
        out.info.sites[1].kind,
        SiteKind::NanOutput {
            what: "storage buffer store"
        }
    );

    // The buffer address is baked in as a uvec2 constant (low word, high word).
    let addr = options(NanLevel::Ops).error_buffer_address;
    let module = Module::parse(&out.words).unwrap();
    let has = |value: u32| {
        module
            .globals
            .iter()
            .any(|i| i.is(Op::Constant) && i.operands[..] == [value])
    };
    assert!(
        has(addr as u32) && has((addr >> 32) as u32),
        "the error buffer address is in the module"
    );

    // What the layer reads back after the dispatch.
    let counters = 64;
    let mut buffer = vec![0u32; record::buffer_words(counters, 1024)];
    buffer[..record::HEADER_WORDS].copy_from_slice(&record::init_header(counters, 1024));
    let site_index = 40 + site.local_index;
    buffer[record::HEADER_WORDS + site_index as usize] = 1;
    let nan = f32::NAN.to_bits();
    let payload = [0, 0, 0, nan, nan, nan];
    let size = (record::RECORD_HEADER_WORDS + payload.len()) as u32;
    let first = size
        | u32::from(RecordKind::NanOp.code()) << record::KIND_SHIFT
        | u32::from(Stage::Compute.code()) << record::STAGE_SHIFT;
    let at = buffer[record::header::RECORDS_OFFSET] as usize;
    buffer[at..at + 7].copy_from_slice(&[first, site_index, 12, 0, 0, 0, 0]);
    buffer[at + 7..at + 13].copy_from_slice(&payload);
    buffer[record::header::CURSOR] = size;
    let d = record::decode(&buffer);
    assert_eq!(d.records.len(), 1);
    let r = &d.records[0];
    assert_eq!(
        (r.kind, r.stage, r.site, r.invocation),
        (RecordKind::NanOp, Some(Stage::Compute), 40, [12, 0, 0, 0])
    );
    assert_eq!(d.counters[40], 1);
    assert_eq!(
        record::format_values(&r.payload, &site.values),
        vec!["(0, 0, 0)", "(NaN, NaN, NaN)"]
    );
}

#[test]
fn output_is_deterministic() {
    for name in [
        "particles.comp vulkan1.3 -gVS",
        "shading.frag vulkan1.0 -g",
        "blur.comp.hlsl vulkan1.0",
    ] {
        let words = common::read_words(&variant(name).path);
        let a = instrument(&words, &options(NanLevel::Ops)).unwrap();
        let b = instrument(&words, &options(NanLevel::Ops)).unwrap();
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn instrumenting_with_a_known_id_gives_what_instrument_gives() {
    for name in [
        "particles.comp vulkan1.3 -gVS",
        "shading.frag vulkan1.0 -g",
        "blur.comp.hlsl vulkan1.0",
    ] {
        let words = common::read_words(&variant(name).path);
        for nan in NanLevel::ALL {
            let with_id = instrument_with_id(&words, ShaderId::of(&words), &options(nan)).unwrap();
            assert_eq!(
                with_id,
                instrument(&words, &options(nan)).unwrap(),
                "{name}"
            );
            assert_eq!(with_id.info.id, ShaderId::of(&words));
        }
    }
    // Refused modules are refused alike.
    let words = [0x0723_0203, 0x0001_0700, 0, 1, 0];
    assert_eq!(
        instrument_with_id(&words, ShaderId::of(&words), &Options::default()).unwrap_err(),
        instrument(&words, &Options::default()).unwrap_err()
    );
}

#[test]
fn printf_and_asserts_off_strip_every_call() {
    let v = variant("particles.comp vulkan1.0");
    let words = common::read_words(&v.path);
    let off = Options {
        printf: false,
        asserts: false,
        ..options(NanLevel::Off)
    };
    let out = instrument(&words, &off).unwrap();
    assert!(out.info.sites.is_empty());
    let module = Module::parse(&out.words).unwrap();
    assert!(module
        .ext_inst_imports
        .iter()
        .all(|i| !blackbox_engine::module::decode_string(&i.operands)
            .0
            .starts_with("NonSemantic")));
    assert!(
        !module.has_capability(spirv::Capability::PhysicalStorageBufferAddresses),
        "no buffer access without sites"
    );
    // A module with nothing to do comes back unchanged.
    let v = variant("patch.tesc vulkan1.0");
    let words = common::read_words(&v.path);
    assert_eq!(
        instrument(&words, &options(NanLevel::Off)).unwrap().words,
        words
    );
}

#[test]
fn assert_crash_stores_through_the_crash_address() {
    let words = common::read_words(&variant("shading.frag vulkan1.0").path);
    let out = instrument(
        &words,
        &Options {
            assert_crash: true,
            ..options(NanLevel::Off)
        },
    )
    .unwrap();
    let module = Module::parse(&out.words).unwrap();
    let has = |value: u32| {
        module
            .globals
            .iter()
            .any(|i| i.is(Op::Constant) && i.operands[..] == [value])
    };
    assert!(has((record::CRASH_ADDRESS >> 32) as u32));
    let plain = instrument(&words, &options(NanLevel::Off)).unwrap();
    assert!(out.words.len() > plain.words.len());
}

#[test]
fn shader_info_names_sources_and_entry_points() {
    let g = shader_info(&common::read_words(
        &variant("particles.comp vulkan1.0 -g").path,
    ))
    .unwrap();
    assert_eq!(g.entry_points.len(), 1);
    assert_eq!(
        (g.entry_points[0].name.as_str(), g.entry_points[0].stage),
        ("main", Stage::Compute)
    );
    assert_eq!(g.spirv_version, (1, 0));
    let src = g
        .sources
        .iter()
        .find(|s| s.name == "particles.comp")
        .expect("the source file");
    assert!(
        src.text
            .as_deref()
            .is_some_and(|t| t.contains("vec3 attraction(")),
        "the source text"
    );
    assert!(g.debug_names.contains(&"particles.comp".to_string()));
    assert!(g.sites.is_empty());
    assert_eq!(g.id.to_string().len(), 16);

    let vs = shader_info(&common::read_words(
        &variant("shading.frag vulkan1.3 -gVS").path,
    ))
    .unwrap();
    assert_eq!(vs.spirv_version, (1, 6));
    let src = vs
        .sources
        .iter()
        .find(|s| s.name == "shading.frag")
        .expect("the DebugSource file");
    assert!(src
        .text
        .as_deref()
        .is_some_and(|t| t.contains("float specular(")));

    let rt = shader_info(&common::read_words(&variant("scene.rchit vulkan1.2").path)).unwrap();
    assert_eq!(rt.entry_points[0].stage, Stage::ClosestHit);
    let hlsl = shader_info(&common::read_words(
        &variant("lit.frag.hlsl vulkan1.0 -g").path,
    ))
    .unwrap();
    assert_eq!(hlsl.entry_points[0].stage, Stage::Fragment);
}

#[test]
fn printf_sites_keep_formats_and_value_layouts() {
    let words = common::read_words(&variant("precision.comp vulkan1.0").path);
    let out = instrument(&words, &options(NanLevel::Off)).unwrap();
    let printf: Vec<_> = out
        .info
        .sites
        .iter()
        .filter(|s| s.kind == SiteKind::Printf)
        .collect();
    assert_eq!(printf.len(), 2);
    assert_eq!(
        printf[0].format.as_deref(),
        Some("big %lu neg %ld hex %lx r %f")
    );
    let scalars: Vec<(ScalarType, u32)> = printf[0]
        .values
        .iter()
        .map(|v| (v.scalar, v.components))
        .collect();
    assert_eq!(
        scalars,
        vec![
            (ScalarType::U64, 1),
            (ScalarType::I64, 1),
            (ScalarType::U64, 1),
            (ScalarType::F64, 1)
        ]
    );
    assert_eq!(printf[0].values[0].name, "%lu arg 0");
    // f16 printf arguments are widened to f32.
    assert_eq!(printf[1].values[0].scalar, ScalarType::F16);
    assert_eq!(printf[1].payload_words(), 1);

    let words = common::read_words(&variant("printf_formats.comp vulkan1.0").path);
    let out = instrument(&words, &options(NanLevel::Off)).unwrap();
    assert_eq!(out.info.sites.len(), 7);
    let v = &out.info.sites[4];
    assert_eq!(v.format.as_deref(), Some("v2=%v2f v3=%v3u v4=%v4d"));
    let comps: Vec<u32> = v.values.iter().map(|v| v.components).collect();
    assert_eq!(comps, vec![2, 3, 4]);
    let counts: BTreeMap<&str, usize> = out.info.sites.iter().fold(BTreeMap::new(), |mut m, s| {
        *m.entry(s.format.as_deref().unwrap_or("")).or_default() += 1;
        m
    });
    assert_eq!(counts.get("no arguments"), Some(&1));
}

#[test]
fn asserts_carry_their_ids_and_values() {
    let words = common::read_words(&variant("shading.frag vulkan1.0 -g").path);
    let out = instrument(&words, &options(NanLevel::Off)).unwrap();
    let asserts: Vec<_> = out
        .info
        .sites
        .iter()
        .filter(|s| matches!(s.kind, SiteKind::Assert { .. }))
        .collect();
    assert_eq!(asserts.len(), 2);
    assert_eq!(asserts[0].kind, SiteKind::Assert { id: 11 });
    assert_eq!(asserts[0].values.len(), 1);
    assert_eq!(
        (asserts[0].values[0].scalar, asserts[0].values[0].components),
        (ScalarType::F32, 2)
    );
    assert_eq!(asserts[0].format, None);
    assert_eq!(asserts[1].kind, SiteKind::Assert { id: 12 });
    assert!(asserts[1].values.is_empty());
    assert_eq!(asserts[0].stage, Stage::Fragment);
}

#[test]
fn needs_instrumentation_agrees_with_instrument() {
    // Every variant of the corpus: when the quick scan says there is nothing to do, instrumenting must give
    // the module back unchanged.
    let options = blackbox_engine::Options::default();
    let mut skipped = 0;
    for variant in shaders::variants() {
        let words = common::read_words(&variant.path);
        if !blackbox_engine::needs_instrumentation(&words, &options) {
            skipped += 1;
            let out = blackbox_engine::instrument(&words, &options).expect("instruments");
            assert_eq!(
                out.words, words,
                "{}: the scan said nothing to do",
                variant.name
            );
        }
    }
    assert!(
        skipped > 0,
        "the corpus has modules without printf, asserts or debug info"
    );
}

/// The loop headers of a module: (header label, merge block) of each `OpLoopMerge`, in order.
fn loop_headers(module: &Module) -> Vec<(u32, u32)> {
    module
        .functions
        .iter()
        .flat_map(|f| f.blocks.iter())
        .filter_map(|b| {
            b.instructions
                .iter()
                .find(|i| i.is(Op::LoopMerge))
                .map(|m| (b.id(), m.operands[0]))
        })
        .collect()
}

/// Every loop of every variant (optimized ones too) gets a counter and a site, and at `break` every
/// header's branch can leave for the merge block (directly or through a gate block that does).
#[test]
fn every_loop_of_every_variant_is_counted_and_can_break() {
    let mut loops_seen = 0;
    for v in shaders::variants() {
        let words = common::read_words(&v.path);
        let input = Module::parse(&words).unwrap();
        let headers = loop_headers(&input);
        let out = instrument(&words, &loops(LoopMode::Break, None))
            .unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let sites: Vec<u32> = out
            .info
            .sites
            .iter()
            .filter_map(|s| match s.kind {
                SiteKind::LoopBudget { header, .. } => Some(header),
                _ => None,
            })
            .collect();
        assert_eq!(
            sites,
            headers.iter().map(|h| h.0).collect::<Vec<_>>(),
            "{}: one loop site per header, in order",
            v.name
        );
        loops_seen += headers.len();
        let module = Module::parse(&out.words).unwrap();
        for f in &module.functions {
            for (h, merge) in loop_headers(&Module {
                functions: vec![f.clone()],
                ..module.clone()
            }) {
                // The helpers' own loops (their record stores) are the engine's, not counted.
                if !headers.iter().any(|&(input_header, _)| input_header == h) {
                    continue;
                }
                let block = f.blocks.iter().find(|b| b.id() == h).unwrap();
                // The counter: 0 from outside, count + 1 (computed in the header) from the back edges.
                let counter = &block.instructions[0];
                assert!(
                    counter.is(Op::Phi),
                    "{}: header %{h} starts with the counter",
                    v.name
                );
                let count = counter.result_id.unwrap();
                let plus_one = block
                    .instructions
                    .iter()
                    .find(|i| i.is(Op::IAdd) && i.operands[0] == count)
                    .and_then(|i| i.result_id)
                    .unwrap_or_else(|| panic!("{}: header %{h} computes count + 1", v.name));
                assert!(
                    counter.operands.chunks(2).any(|p| p[0] == plus_one),
                    "{}: header %{h}'s counter counts on its back edge: {counter:?}",
                    v.name
                );
                let mut others: Vec<u32> = counter
                    .operands
                    .chunks(2)
                    .map(|p| p[0])
                    .filter(|&x| x != plus_one)
                    .collect();
                others.dedup();
                assert_eq!(
                    others.len(),
                    1,
                    "{}: header %{h}'s counter starts from one value: {counter:?}",
                    v.name
                );
                let term = block.instructions.last().unwrap();
                let targets: Vec<u32> = match term.op() {
                    Some(Op::BranchConditional) => term.operands[1..3].to_vec(),
                    Some(Op::Branch) => term.operands[..1].to_vec(),
                    _ => Vec::new(),
                };
                let leaves = targets.iter().any(|&t| {
                    t == merge
                        || f.blocks.iter().find(|b| b.id() == t).is_some_and(|g| {
                            g.instructions.len() == 1
                                && g.instructions[0].is(Op::BranchConditional)
                                && g.instructions[0].operands[1] == merge
                        })
                });
                assert!(
                    leaves && term.is(Op::BranchConditional),
                    "{}: header %{h} cannot leave for its merge block %{merge}: {term:?}",
                    v.name
                );
            }
        }
    }
    assert!(loops_seen > 200, "only {loops_seen} loops in the corpus");
}

/// What a loop site tells the layer: the fixed values, the induction variables by name, the depth.
#[test]
fn loop_sites_name_their_loops_and_induction_variables() {
    let v = variant("loops.comp vulkan1.0 -g");
    let words = common::read_words(&v.path);
    let out = instrument(&words, &loops(LoopMode::Report, None)).unwrap();
    let loop_sites: Vec<_> = out
        .info
        .sites
        .iter()
        .filter(|s| matches!(s.kind, SiteKind::LoopBudget { .. }))
        .collect();
    assert_eq!(loop_sites.len(), 9);
    let fixed = |s: &blackbox_engine::Site| {
        s.values[..3]
            .iter()
            .map(|l| (l.name.clone(), l.scalar, l.components))
            .collect::<Vec<_>>()
    };
    for s in &loop_sites {
        assert_eq!(
            fixed(s),
            vec![
                ("iterations".to_string(), ScalarType::U32, 1),
                ("reason".to_string(), ScalarType::U32, 1),
                ("elapsed ticks".to_string(), ScalarType::U32, 2),
            ]
        );
        assert_eq!(s.stage, Stage::Compute);
    }
    fn names(s: &blackbox_engine::Site) -> Vec<&str> {
        s.values[3..].iter().map(|l| l.name.as_str()).collect()
    }
    let line = |s: &blackbox_engine::Site| s.location.as_ref().map_or(0, |l| l.line);
    let at = |l: u32| {
        *loop_sites
            .iter()
            .find(|s| line(s) == l)
            .unwrap_or_else(|| panic!("no loop site at line {l}"))
    };
    // The for loop in sum_to: its induction variable and its bound, a parameter's copy.
    let sum_to = at(16);
    assert_eq!(names(sum_to), ["k", "m"]);
    assert_eq!(sum_to.function.as_deref(), Some("sum_to(i1;"));
    // while (true): nothing in its condition, nothing stored in its continue block.
    assert!(names(at(23)).is_empty());
    assert_eq!(names(at(34)), ["j"]);
    assert_eq!(names(at(44)), ["k"]);
    assert_eq!(names(at(49)), ["acc"]);
    assert_eq!(names(at(50)), ["a"]);
    assert_eq!(names(at(51)), ["b"]);
    assert_eq!(names(at(70)), ["f"]);
    assert_eq!(at(70).values[3].scalar, ScalarType::F32);
    let depth = |s: &blackbox_engine::Site| match s.kind {
        SiteKind::LoopBudget { depth, .. } => depth,
        _ => u32::MAX,
    };
    assert_eq!((depth(at(50)), depth(at(51))), (0, 1));
    // Optimized: the induction variables are the header's phis.
    let o = instrument(
        &common::read_words(&variant("loops.comp vulkan1.0 -O").path),
        &loops(LoopMode::Report, None),
    )
    .unwrap();
    let phis = o
        .info
        .sites
        .iter()
        .filter(|s| matches!(s.kind, SiteKind::LoopBudget { .. }))
        .filter(|s| s.values.len() > 3)
        .count();
    assert!(
        phis >= 6,
        "loops with phi induction values after -O: {phis}"
    );
}

#[test]
fn loop_and_integer_output_is_deterministic_and_off_means_off() {
    for name in [
        "loops.comp vulkan1.3 -gVS",
        "int_ub.comp vulkan1.0 -O",
        "particles.comp vulkan1.0",
    ] {
        let words = common::read_words(&variant(name).path);
        let on = Options {
            nan: NanLevel::Ops,
            ..loops(LoopMode::Break, Some(ClockScope::Device))
        };
        assert_eq!(
            instrument(&words, &on).unwrap(),
            instrument(&words, &on).unwrap(),
            "{name}"
        );
        // With the new options off, the other loop settings change nothing.
        let off = Options {
            loop_limit: 7,
            loop_clock: Some(LoopClock {
                scope: ClockScope::Device,
                budget_ticks: 1,
            }),
            ..options(NanLevel::Ops)
        };
        assert_eq!(
            instrument(&words, &off).unwrap(),
            instrument(&words, &options(NanLevel::Ops)).unwrap(),
            "{name}"
        );
    }
}

/// Integer sites record their operands by name; constant divisors and shifts in range make no site.
#[test]
fn integer_sites_record_operands_and_skip_safe_constants() {
    let v = variant("int_ub.comp vulkan1.0 -g");
    let words = common::read_words(&v.path);
    let out = instrument(&words, &loops(LoopMode::Off, None)).unwrap();
    let line = |s: &blackbox_engine::Site| s.location.as_ref().map_or(0, |l| l.line);
    let halved_line = 31;
    assert!(
        out.info.sites.iter().all(|s| line(s) != halved_line),
        "a / 2 and a << 3 need no check"
    );
    let sdiv = out
        .info
        .sites
        .iter()
        .find(|s| s.kind == SiteKind::IntOp { op: "SDiv" })
        .unwrap();
    let names: Vec<&str> = sdiv.values.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["dividend", "divisor"]);
    assert_eq!(sdiv.values[0].scalar, ScalarType::I32);
    let vector = out.info.sites.iter().find(|s| line(s) == 30).unwrap();
    assert_eq!(vector.values[1].components, 4);
    let chain = out.info.sites.iter().find(|s| line(s) == 33).unwrap();
    assert_eq!(chain.kind, SiteKind::IndexOutOfRange { op: "AccessChain" });
    let names: Vec<&str> = chain.values.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["index 1", "length 1"]);
}
