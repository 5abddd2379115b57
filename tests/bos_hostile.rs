//! The BOS compiler on hostile or broken sources: clear errors at file:line:col, never a
//! panic, hang or unbounded allocation.

use tafs::formats::bos::{self, decompile::decompile, Includes, Limits, Mode, NoIncludes, Options};
use tafs::formats::cob;

fn compile(src: &str) -> Result<cob::Cob, bos::Error> {
    bos::compile(
        "unit.bos",
        src.as_bytes(),
        &NoIncludes,
        &Options::new(Mode::Ta),
        &Limits::default(),
    )
}

fn error(src: &str) -> String {
    compile(src).unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_and_column() {
    assert_eq!(
        error("piece base;\nCreate()\n{\n\tsleep 100\n}\n"),
        "unit.bos:5:1: expected ';', found '}'"
    );
    assert_eq!(
        error("piece base;\nCreate()\n{\n\thide turret;\n}\n"),
        "unit.bos:4:7: unknown piece turret (not in the piece list)"
    );
    assert_eq!(
        error("Create()\n{\n\tx = 1;\n}\n"),
        "unit.bos:3:2: unknown variable x (declare it with var or static-var)"
    );
    assert_eq!(
        error("Create()\n{\n\tstart-script Walk();\n}\n"),
        "unit.bos:3:2: unknown function Walk"
    );
    assert_eq!(
        error("/* open\nCreate() {}\n"),
        "unit.bos:1:1: comment opened with /* is never closed"
    );
    assert_eq!(
        error("#include \"weapons.h\"\n"),
        "unit.bos:1:2: cannot find include file \"weapons.h\""
    );
    assert_eq!(
        error("#define F(a, b) a + b\nCreate()\n{\n\tsleep F(1);\n}\n"),
        "unit.bos:4:8: macro F takes 2 arguments, given 1"
    );
}

#[test]
fn an_error_in_a_header_names_the_header() {
    struct One;
    impl Includes for One {
        fn find(&self, _: &str, name: &str) -> Option<(String, Vec<u8>)> {
            name.eq_ignore_ascii_case("walk.h").then(|| {
                (
                    "scripts/WALK.H".to_string(),
                    b"Walk()\n{\n\tsleep;\n}\n".to_vec(),
                )
            })
        }
    }
    let e = bos::compile(
        "unit.bos",
        b"#include \"Walk.h\"\n",
        &One,
        &Options::new(Mode::Ta),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "scripts/WALK.H:3:7: expected an expression, found ';'"
    );
}

#[test]
fn an_include_that_includes_itself_stops_at_the_depth_limit() {
    struct Loop;
    impl Includes for Loop {
        fn find(&self, _: &str, name: &str) -> Option<(String, Vec<u8>)> {
            Some((name.to_string(), b"#include \"self.h\"\n".to_vec()))
        }
    }
    let e = bos::compile(
        "unit.bos",
        b"#include \"self.h\"\n",
        &Loop,
        &Options::new(Mode::Ta),
        &Limits::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("nests deeper than 16 files"), "{e}");
}

#[test]
fn a_macro_bomb_is_refused() {
    // Each level doubles: 2^40 tokens if expanded.
    let mut src = String::from("#define M0 1\n");
    for k in 1..=40 {
        src.push_str(&format!("#define M{k} M{} + M{}\n", k - 1, k - 1));
    }
    src.push_str("Create()\n{\n\tsleep M40;\n}\n");
    let limits = Limits {
        max_expanded_tokens: 100_000,
        ..Limits::default()
    };
    let e = bos::compile(
        "unit.bos",
        src.as_bytes(),
        &NoIncludes,
        &Options::new(Mode::Ta),
        &limits,
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("macros expand to more than 100000 tokens"),
        "{e}"
    );
}

#[test]
fn a_macro_naming_itself_expands_once() {
    // As in C: X inside X's own expansion stays X, here an unknown name.
    assert_eq!(
        error("#define X X + 1\nCreate()\n{\n\tsleep X;\n}\n"),
        "unit.bos:4:8: unknown name X (not a variable, a piece or a #define)"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = format!(
        "Create()\n{{\n\tsleep {}1{};\n}}\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert!(error(&deep).contains("nest more than 100 levels"));
}

#[test]
fn deep_ifs() {
    let ifs = format!("Create()\n{{\n{}sleep 1;\n}}\n", "if (1) ".repeat(100_000));
    assert!(error(&ifs).contains("nest more than 100 levels"));
}

#[test]
fn deep_nots() {
    let nots = format!("#if {}1\n#endif\n", "!".repeat(100_000));
    assert!(error(&nots).contains("nests too deeply"));
}

#[test]
fn random_bytes_never_panic() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let alphabet = b"piece static-var Create(){};=+-*/<>[]#include define if else while sleep turn to x-axis speed 0123456789 \n\t\"";
    for _ in 0..2000 {
        let len = (seed % 300) as usize;
        let mut s = Vec::with_capacity(len);
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push(if seed % 5 == 0 {
                (seed >> 8) as u8
            } else {
                alphabet[(seed >> 16) as usize % alphabet.len()]
            });
        }
        let _ = bos::compile(
            "r.bos",
            &s,
            &NoIncludes,
            &Options::new(Mode::Ta),
            &Limits::default(),
        );
    }
}

#[test]
fn decompiling_a_hostile_cob_gives_verbatim_words_that_compile_back() {
    // Jumps out of the script, a call to a missing script, a stack left full.
    let mut c = cob::Cob::new(4, vec!["base".into()], 0);
    c.push_script("A", &[0x1006_6000, 9999, 0x1006_2000, 77, 0]);
    c.push_script("B", &[0x1002_1001, 1, 0x1002_1001, 2]);
    let d = decompile(&c);
    assert!(d.identical, "{}", d.source);
    assert_eq!(d.raw_scripts, ["A", "B"]);
    assert!(d.source.contains("// A: not structured"));
}

#[test]
fn decompiling_deeply_nested_jumps_falls_back_to_words() {
    let n = 5000u32;
    let end = 4 * n;
    let mut code = Vec::new();
    for _ in 0..n {
        code.extend_from_slice(&[0x1002_1001, 1, 0x1006_6000, end]);
    }
    code.extend_from_slice(&[0x1002_1001, 0, 0x1006_5000]);
    let mut c = cob::Cob::new(4, vec![], 0);
    c.push_script("Deep", &code);
    let d = decompile(&c);
    assert!(d.identical);
    assert_eq!(d.raw_scripts, ["Deep"]);
}

/// A chain of operators is as deep a tree as nested parentheses (each operator one level,
/// whichever way it groups): a long one ends in the nesting error, never a stack overflow
/// (100,000 `+` grouped to the left overflowed the stack in code generation).
#[test]
fn a_long_chain_of_operators_is_an_error_not_a_stack_overflow() {
    use tafs::formats::bos::{Angle, Limits, Mode, NoIncludes, Options};
    let src = format!("Create()\n{{\n\tsleep 1{};\n}}\n", " + 1".repeat(100_000));
    let opts = Options {
        mode: Mode::Ta,
        angle: Angle::Scriptor,
        cavedog: false,
        right_assoc: true,
    };
    let e = tafs::formats::bos::compile(
        "unit.bos",
        src.as_bytes(),
        &NoIncludes,
        &opts,
        &Limits::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("nest more than 100 levels"), "{e}");
    assert!(error(&src).contains("nest more than 100 levels"));
}
