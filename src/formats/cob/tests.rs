use super::*;

/// A small TA script made by hand: `Create` (STACK_ALLOC; PUSH_CONST 0; RETURN), an empty
/// `Go` sharing `Stop`'s start, `Stop` (HIDE base; PUSH_CONST 0; RETURN).
fn sample(version: u32) -> Cob {
    let mut c = Cob::new(version, vec!["base".into(), "turret".into()], 2);
    c.push_script("Create", &[0x1002_2000, 0x1002_1001, 0, 0x1006_5000]);
    c.push_script("Go", &[]);
    c.push_script("Stop", &[0x1000_6000, 0, 0x1002_1001, 0, 0x1006_5000]);
    if version == VERSION_TAK {
        c.sounds = vec!["ARROW10".into(), "SetMission o 1, s".into()];
    }
    c
}

#[test]
fn opcode_table_is_sorted_and_unique() {
    for w in OPCODES.windows(2) {
        assert!(
            w[0].value < w[1].value,
            "{} / {}",
            w[0].mnemonic,
            w[1].mnemonic
        );
    }
    for o in OPCODES {
        assert_eq!(opcodes::lookup(o.value), Some(o));
        assert_eq!(opcodes::by_mnemonic(o.mnemonic), Some(o));
        assert_eq!(o.value >> 24, 0x10);
    }
    assert_eq!(
        opcodes::by_mnemonic("push_constant").unwrap().value,
        0x1002_1001
    );
}

#[test]
fn v4_layout_is_the_documented_one() {
    let c = sample(VERSION_TA);
    let b = write(&c).unwrap();
    let w = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    // 3 scripts, 2 pieces, 9 code words, 2 statics.
    assert_eq!((w(0), w(4), w(8), w(12), w(16), w(20)), (4, 3, 2, 9, 2, 0));
    let code_end = 44 + 9 * 4;
    assert_eq!(w(0x24), 44);
    assert_eq!(w(0x18), code_end);
    assert_eq!(w(0x1C), code_end + 12);
    assert_eq!(w(0x20), code_end + 24);
    assert_eq!(w(0x28), code_end + 32);
    // starts: 0, 4, 4 (Go shares Stop's start)
    assert_eq!(
        (
            w(code_end as usize),
            w(code_end as usize + 4),
            w(code_end as usize + 8)
        ),
        (0, 4, 4)
    );
    let pool = code_end as usize + 32;
    assert_eq!(&b[pool..], b"Create\0Go\0Stop\0base\0turret\0");
    assert_eq!(w(code_end as usize + 12) as usize, pool);
    assert_eq!(w(code_end as usize + 24) as usize, pool + 15);
    let back = parse(&b, &Limits::default()).unwrap();
    assert_eq!(back, c);
    assert_eq!(back.script_code(1).unwrap(), back.script_code(2).unwrap());
    assert_eq!(back.script_code(0).unwrap().len(), 4);
}

#[test]
fn v6_sound_table_and_v7_round_trip() {
    let c = sample(VERSION_TAK);
    let b = write(&c).unwrap();
    let w = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(w(0x24), 52);
    let pend = w(0x20) + 8;
    assert_eq!(w(0x2C), pend);
    assert_eq!(w(0x30), 2);
    assert_eq!(w(0x28), pend + 8);
    assert!(b.ends_with(b"turret\0ARROW10\0SetMission o 1, s\0"));
    assert_eq!(parse(&b, &Limits::default()).unwrap(), c);

    let mut c7 = sample(VERSION_7);
    c7.trailing = b"Build by a tool\0\x01\x02".to_vec();
    c7.unknown_0x14 = 9;
    let b7 = write(&c7).unwrap();
    assert_eq!(b7.len(), write(&sample(VERSION_TA)).unwrap().len() + 18);
    assert_eq!(parse(&b7, &Limits::default()).unwrap(), c7);
}

#[test]
fn latin1_names_survive() {
    let mut c = sample(VERSION_TA);
    c.pieces[0] = "b\u{e9}se\u{ff}".into();
    let b = write(&c).unwrap();
    assert!(b.windows(6).any(|w| w == b"b\xe9se\xff\0"));
    assert_eq!(parse(&b, &Limits::default()).unwrap(), c);
    c.pieces[0] = "\u{263a}".into();
    assert!(matches!(write(&c), Err(CobError::Refused(_))));
    c.pieces[0] = "a\0b".into();
    assert!(matches!(write(&c), Err(CobError::Refused(_))));
}

#[test]
fn writer_refuses_what_it_cannot_store() {
    let mut c = sample(VERSION_TA);
    c.sounds.push("x".into());
    assert!(matches!(write(&c), Err(CobError::Refused(_))));
    let mut c = sample(VERSION_TA);
    c.scripts[0].start = 99;
    assert!(matches!(write(&c), Err(CobError::Refused(_))));
}

#[test]
fn malformed_headers_are_named_errors() {
    let good = write(&sample(VERSION_TA)).unwrap();
    let l = Limits::default();
    // Every truncation is an error, never a panic.
    for n in 0..good.len() {
        assert!(parse(&good[..n], &l).is_err(), "prefix {n}");
    }
    let mut b = good.clone();
    b[0] = 5;
    assert_eq!(parse(&b, &l), Err(CobError::UnknownVersion(5)));
    // A moved code area is a layout error naming the field.
    let mut b = good.clone();
    b[0x24] = 48;
    match parse(&b, &l) {
        Err(CobError::Layout {
            structure, offset, ..
        }) => assert_eq!((structure.as_str(), offset), ("header code offset", 0x24)),
        other => panic!("{other:?}"),
    }
    // A huge script count is over the file's room before anything is allocated.
    let mut b = good.clone();
    b[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(parse(&b, &l), Err(CobError::OverLimit { .. })));
    // A start past the code area.
    let mut b = good.clone();
    let starts = 44 + 36;
    b[starts..starts + 4].copy_from_slice(&100u32.to_le_bytes());
    assert!(matches!(parse(&b, &l), Err(CobError::Malformed { .. })));
    // A name without its NUL.
    let mut b = good.clone();
    b.pop();
    assert!(matches!(parse(&b, &l), Err(CobError::Malformed { .. })));
    // A name longer than the limit.
    let tight = Limits {
        max_name_len: 3,
        ..l
    };
    assert!(matches!(
        parse(&good, &tight),
        Err(CobError::Malformed { .. })
    ));
    // Every single-byte corruption parses or fails cleanly.
    for i in 0..good.len() {
        for v in [0u8, 1, 0x7f, 0xff] {
            let mut b = good.clone();
            b[i] = v;
            if let Ok(c) = parse(&b, &l) {
                assert_eq!(write(&c).unwrap(), b, "byte {i} = {v}");
                let text = asm::disassemble(&c);
                assert_eq!(asm::assemble(&text).unwrap(), c, "byte {i} = {v}");
            }
        }
    }
}

#[test]
fn decode_reads_operands_and_stops_at_the_end() {
    let c = sample(VERSION_TA);
    let i = decode(&c.code, 4).unwrap();
    assert_eq!((i.op.mnemonic, i.operands()), ("HIDE", &[0u32][..]));
    assert_eq!(i.len(), 2);
    assert!(decode(&c.code, 8).is_some());
    assert!(decode(&c.code, 9).is_none());
    assert!(
        decode(&[0x1000_1000, 1], 0).is_none(),
        "MOVE needs two operands"
    );
    assert!(decode(&[0x4275_696c], 0).is_none(), "text is no opcode");
}

mod assembly {
    use super::super::asm::{assemble, disassemble};
    use super::*;

    #[test]
    fn text_of_the_sample_reads_as_written_by_hand() {
        let c = sample(VERSION_TA);
        let t = disassemble(&c);
        let expected = "\
.version 4
.statics 2
.piece base
.piece turret
.script Create
    STACK_ALLOC
    PUSH_CONST 0
    RETURN
.script Go
.script Stop
    HIDE base
    PUSH_CONST 0
    RETURN
";
        assert_eq!(t, expected);
        assert_eq!(assemble(&t).unwrap(), c);
    }

    #[test]
    fn labels_words_entries_and_trailing_round_trip() {
        let mut c = Cob::new(VERSION_TAK, vec!["a b".into(), "base".into()], 0);
        // JUMP to itself (a label), JUMP into the middle of an instruction (a number),
        // a word that is no opcode, MISSION_COMMAND on a sound.
        c.push_script(
            "Loop",
            &[
                0x1006_4000,
                0,
                0x1006_4000,
                3,
                0x4275_696c,
                0x1007_3000,
                0,
                2,
            ],
        );
        c.push_script("Last", &[0x1000_6000, 0, 0x1000_6000, 1]);
        c.sounds = vec!["ARROW\"10".into()];
        c.trailing = b"sig\0\xff".to_vec();
        c.unknown_0x14 = 3;
        let t = disassemble(&c);
        assert!(t.contains("L0000:\n    JUMP L0000\n    JUMP 3\n"), "{t}");
        assert!(t.contains(".word 0x4275696c"), "{t}");
        assert!(t.contains("HIDE \"a b\"\n    HIDE base\n"), "{t}");
        assert!(t.contains(".sound_name \"ARROW\\\"10\""), "{t}");
        assert!(t.contains(".trailing \"sig\\x00\\xff\""), "{t}");
        assert_eq!(assemble(&t).unwrap(), c);
        // A table not in code order is written with .entry lines.
        c.scripts.swap(0, 1);
        let t = disassemble(&c);
        assert!(t.contains(".entry Last L0020\n.entry Loop L0000\n"), "{t}");
        assert_eq!(assemble(&t).unwrap(), c);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = assemble(".version 4\n.piece base\n.script Create\n    HIDE turret\n").unwrap_err();
        assert_eq!((e.line, e.col), (4, 10));
        assert!(
            e.to_string().starts_with("4:10: no piece \"turret\""),
            "{e}"
        );
        let e = assemble(".version 4\n  FLY base\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        let e = assemble(".version 4\n  PUSH_CONST 1 2\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = assemble(".version 4\n  JUMP nowhere\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 8));
        let e = assemble(".version 4\n  PUSH_CONST 99999999999\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(assemble(".statics 1\n").is_err(), "no .version");
        assert!(assemble(".version 4\n.sound_name \"x\"\n").is_err());
        assert!(assemble(".version 4\n.piece \"abc\n").is_err());
        assert!(assemble(".version 4\n.piece \"\\q\"\n").is_err());
    }

    #[test]
    fn numbers_and_kbot_listing_are_accepted() {
        let t = ".version 4\n.script Create\n0000  PUSH_CONST -1\n0008  push_constant 0x10\n  RETURN ; done\n";
        let c = assemble(t).unwrap();
        assert_eq!(
            c.code,
            [0x1002_1001, 0xFFFF_FFFF, 0x1002_1001, 16, 0x1006_5000]
        );
    }
}
