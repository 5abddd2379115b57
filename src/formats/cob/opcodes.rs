//! The opcode table, in one place: mnemonic (kbot's `.coba` names), opcode word, inline
//! operands and stack effect, plus a decoder of one instruction.

/// What an inline operand word means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// Index into the piece table.
    Piece,
    /// Axis: 0 x, 1 y, 2 z.
    Axis,
    /// A constant (signed in BOS source, any word here).
    Const,
    /// Local variable number.
    Local,
    /// Static variable number.
    Static,
    /// Jump target: word index into the whole code area.
    Jump,
    /// Index into the script table.
    Script,
    /// Number of arguments taken from the stack.
    ArgCount,
    /// Index into the sound-name table (TA: Kingdoms).
    Sound,
    /// A word of unknown meaning (kept as a number).
    Raw,
}

/// One opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpInfo {
    /// Mnemonic of the assembly text (kbot's `.coba` vocabulary).
    pub mnemonic: &'static str,
    /// The opcode word.
    pub value: u32,
    /// The inline operand words that follow it, in order.
    pub operands: &'static [Operand],
    /// Values popped from the stack (plus the [`Operand::ArgCount`] operand when
    /// [`OpInfo::pops_args`]).
    pub pops: u8,
    /// True when the instruction also pops as many values as its argument-count operand.
    pub pops_args: bool,
    /// Values pushed.
    pub pushes: u8,
    /// Only TA: Kingdoms' engine knows it.
    pub tak_only: bool,
}

impl OpInfo {
    /// Words taken by the instruction (opcode + operands).
    pub fn len(&self) -> usize {
        1 + self.operands.len()
    }

    /// True for an opcode without operands.
    pub fn is_empty(&self) -> bool {
        self.operands.is_empty()
    }
}

use Operand::*;

const fn op(
    mnemonic: &'static str,
    value: u32,
    operands: &'static [Operand],
    pops: u8,
    pushes: u8,
) -> OpInfo {
    OpInfo {
        mnemonic,
        value,
        operands,
        pops,
        pops_args: false,
        pushes,
        tak_only: false,
    }
}

const fn args(mut o: OpInfo) -> OpInfo {
    o.pops_args = true;
    o
}

const fn tak(mut o: OpInfo) -> OpInfo {
    o.tak_only = true;
    o
}

/// Every known opcode, sorted by value.
pub static OPCODES: &[OpInfo] = &[
    op("MOVE", 0x1000_1000, &[Piece, Axis], 2, 0),
    op("TURN", 0x1000_2000, &[Piece, Axis], 2, 0),
    op("SPIN", 0x1000_3000, &[Piece, Axis], 2, 0),
    op("STOP_SPIN", 0x1000_4000, &[Piece, Axis], 1, 0),
    op("SHOW", 0x1000_5000, &[Piece], 0, 0),
    op("HIDE", 0x1000_6000, &[Piece], 0, 0),
    op("CACHE", 0x1000_7000, &[Piece], 0, 0),
    op("DONT_CACHE", 0x1000_8000, &[Piece], 0, 0),
    tak(op("DONT_SHADOW", 0x1000_A000, &[Piece], 0, 0)),
    op("MOVE_NOW", 0x1000_B000, &[Piece, Axis], 1, 0),
    op("TURN_NOW", 0x1000_C000, &[Piece, Axis], 1, 0),
    op("SHADE", 0x1000_D000, &[Piece], 0, 0),
    op("DONT_SHADE", 0x1000_E000, &[Piece], 0, 0),
    op("EMIT_SFX", 0x1000_F000, &[Piece], 1, 0),
    op("WAIT_FOR_TURN", 0x1001_1000, &[Piece, Axis], 0, 0),
    op("WAIT_FOR_MOVE", 0x1001_2000, &[Piece, Axis], 0, 0),
    op("SLEEP", 0x1001_3000, &[], 1, 0),
    op("PUSH_IMM", 0x1002_1000, &[Const], 0, 1),
    op("PUSH_CONST", 0x1002_1001, &[Const], 0, 1),
    op("PUSH_LOCAL", 0x1002_1002, &[Local], 0, 1),
    op("PUSH_STATIC", 0x1002_1004, &[Static], 0, 1),
    op("CREATE_LOCAL", 0x1002_1008, &[], 0, 0),
    op("STACK_ALLOC", 0x1002_2000, &[], 0, 0),
    op("POP_LOCAL", 0x1002_3002, &[Local], 1, 0),
    op("POP_STATIC", 0x1002_3004, &[Static], 1, 0),
    op("POP_STACK", 0x1002_4000, &[], 1, 0),
    op("ADD", 0x1003_1000, &[], 2, 1),
    op("SUB", 0x1003_2000, &[], 2, 1),
    op("MUL", 0x1003_3000, &[], 2, 1),
    op("DIV", 0x1003_4000, &[], 2, 1),
    op("BITWISE_AND", 0x1003_5000, &[], 2, 1),
    op("BITWISE_OR", 0x1003_6000, &[], 2, 1),
    op("MOD", 0x1003_7000, &[], 2, 1),
    op("BITWISE_XOR", 0x1003_8000, &[], 2, 1),
    tak(op("TAK_MATH_09", 0x1003_9000, &[], 1, 1)),
    op("BITWISE_NOT", 0x1003_A000, &[], 1, 1),
    tak(op("TAK_MATH_0B", 0x1003_B000, &[], 1, 1)),
    op("RAND", 0x1004_1000, &[], 2, 1),
    op("GET_UNIT_VALUE", 0x1004_2000, &[], 1, 1),
    op("GET", 0x1004_3000, &[], 5, 1),
    op("LESS_THAN", 0x1005_1000, &[], 2, 1),
    op("LESS_OR_EQUAL", 0x1005_2000, &[], 2, 1),
    op("GREATER_THAN", 0x1005_3000, &[], 2, 1),
    op("GREATER_EQUAL", 0x1005_4000, &[], 2, 1),
    op("EQUAL", 0x1005_5000, &[], 2, 1),
    op("NOT_EQUAL", 0x1005_6000, &[], 2, 1),
    op("LOGICAL_AND", 0x1005_7000, &[], 2, 1),
    op("LOGICAL_OR", 0x1005_8000, &[], 2, 1),
    op("LOGICAL_XOR", 0x1005_9000, &[], 2, 1),
    op("LOGICAL_NOT", 0x1005_A000, &[], 1, 1),
    args(op("START_SCRIPT", 0x1006_1000, &[Script, ArgCount], 0, 0)),
    args(op("CALL_SCRIPT", 0x1006_2000, &[Script, ArgCount], 0, 0)),
    op("JUMP", 0x1006_4000, &[Jump], 0, 0),
    op("RETURN", 0x1006_5000, &[], 1, 0),
    op("JUMP_IF_FALSE", 0x1006_6000, &[Jump], 1, 0),
    op("SIGNAL", 0x1006_7000, &[], 1, 0),
    op("SET_SIGNAL_MASK", 0x1006_8000, &[], 1, 0),
    op("EXPLODE", 0x1007_1000, &[Piece], 1, 0),
    op("PLAY_SOUND", 0x1007_2000, &[Raw], 1, 0),
    tak(args(op(
        "MISSION_COMMAND",
        0x1007_3000,
        &[Sound, ArgCount],
        0,
        1,
    ))),
    op("SET_VALUE", 0x1008_2000, &[], 2, 0),
    // No inline operand: pops the unit, the piece and a third value (0 in every shipped
    // script), as Cavedog's transports (ARMTHOVR.COB) show.
    op("ATTACH_UNIT", 0x1008_3000, &[], 3, 0),
    op("DROP_UNIT", 0x1008_4000, &[], 1, 0),
];

/// Other spellings the assembler accepts (kbot's legacy names, Scriptor's and rwe's).
pub static ALIASES: &[(&str, u32)] = &[
    ("PUSH_CONSTANT", 0x1002_1001),
    ("PUSH_IMMEDIATE", 0x1002_1000),
    ("PUSH_LOCAL_VAR", 0x1002_1002),
    ("POP_LOCAL_VAR", 0x1002_3002),
    ("CREATE_LOCAL_VAR", 0x1002_2000),
    ("GREATER_OR_EQUAL", 0x1005_4000),
];

/// The opcode of word `value`, if it is one.
pub fn lookup(value: u32) -> Option<&'static OpInfo> {
    OPCODES
        .binary_search_by_key(&value, |o| o.value)
        .ok()
        .and_then(|i| OPCODES.get(i))
}

/// The opcode named `mnemonic` (or one of its [`ALIASES`]), ignoring ASCII case.
pub fn by_mnemonic(mnemonic: &str) -> Option<&'static OpInfo> {
    OPCODES
        .iter()
        .find(|o| o.mnemonic.eq_ignore_ascii_case(mnemonic))
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(mnemonic))
                .and_then(|&(_, v)| lookup(v))
        })
}

/// One decoded instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instr {
    /// Word index of the opcode.
    pub at: usize,
    /// The opcode.
    pub op: &'static OpInfo,
    /// Operand words (`op.operands.len()` of them are meaningful).
    pub args: [u32; 2],
}

impl Instr {
    /// Words taken.
    pub fn len(&self) -> usize {
        self.op.len()
    }

    /// Always false: an instruction has at least its opcode word.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The operands that are meaningful.
    pub fn operands(&self) -> &[u32] {
        &self.args[..self.op.operands.len().min(2)]
    }
}

/// The instruction at word `at` of `code`: `None` when that word is no known opcode or its
/// operands pass the end of `code`.
pub fn decode(code: &[u32], at: usize) -> Option<Instr> {
    let op = lookup(*code.get(at)?)?;
    let mut args = [0u32; 2];
    for (i, a) in args.iter_mut().enumerate().take(op.operands.len()) {
        *a = *code.get(at.checked_add(1 + i)?)?;
    }
    Some(Instr { at, op, args })
}
