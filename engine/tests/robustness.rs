//! The engine on damaged modules: real modules with words changed at random (deterministically) or cut
//! short must come back as instrumented modules or as `NotInstrumented`, never as a panic or a hang.

mod common;

use blackbox_engine::module::Module;
use blackbox_engine::{instrument, shader_info, NanLevel, Options};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn damaged_modules_never_panic() {
    let variants = common::shaders::variants();
    let options = Options {
        nan: NanLevel::Ops,
        assert_crash: true,
        ..Options::default()
    };
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let (mut ok, mut refused) = (0, 0);
    for v in variants.iter().step_by(7) {
        let words = common::read_words(&v.path);
        for round in 0..150 {
            let mut damaged = words.clone();
            if round % 10 == 0 {
                let cut = 5 + (rng.next() as usize) % (words.len() - 5);
                damaged.truncate(cut);
            } else {
                for _ in 0..1 + rng.next() % 3 {
                    let at = 5 + (rng.next() as usize) % (damaged.len() - 5);
                    let r = rng.next();
                    damaged[at] = match r % 4 {
                        0 => (r >> 8) as u32,
                        1 => (r >> 8) as u32 % 64,
                        2 => damaged[at].wrapping_add(1),
                        _ => damaged[at] ^ (1 << ((r >> 8) % 32)),
                    };
                }
            }
            if let Ok(m) = Module::parse(&damaged) {
                assert!(
                    m.to_words() == damaged,
                    "{}: a parsed damaged module must round-trip",
                    v.name
                );
            }
            let _ = shader_info(&damaged);
            match instrument(&damaged, &options) {
                Ok(out) => {
                    ok += 1;
                    // Whatever came out is a module the engine reads again.
                    Module::parse(&out.words)
                        .unwrap_or_else(|e| panic!("{}: output does not parse: {e}", v.name));
                }
                Err(_) => refused += 1,
            }
        }
    }
    println!("damaged modules: {ok} instrumented, {refused} refused, no panic");
    assert!(ok + refused > 1000);
}

#[test]
fn a_module_with_an_opcode_the_engine_does_not_know_is_handed_back_unchanged() {
    let variants = common::shaders::variants();
    let options = Options {
        nan: NanLevel::Ops,
        ..Options::default()
    };
    let mut checked = 0;
    for v in variants.iter().step_by(11) {
        let words = common::read_words(&v.path);
        assert!(instrument(&words, &options).is_ok(), "{}", v.name);
        // A one-word instruction with an opcode no grammar has, first in the module.
        let mut unknown = words.clone();
        unknown.insert(5, (1 << 16) | 0x7ff0);
        let refused = instrument(&unknown, &options).expect_err(&v.name);
        assert!(
            refused.to_string().contains("opcode 32752"),
            "{}: {refused}",
            v.name
        );
        // Still readable, and word for word the same when written back.
        assert_eq!(Module::parse(&unknown).unwrap().to_words(), unknown);
        shader_info(&unknown).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        checked += 1;
    }
    assert!(checked > 10);
}
