//! The COB opcodes the compiler emits and the decompiler reads (`0x10CCSSFF` words).

pub const MOVE: u32 = 0x1000_1000;
pub const TURN: u32 = 0x1000_2000;
pub const SPIN: u32 = 0x1000_3000;
pub const STOP_SPIN: u32 = 0x1000_4000;
pub const SHOW: u32 = 0x1000_5000;
pub const HIDE: u32 = 0x1000_6000;
pub const CACHE: u32 = 0x1000_7000;
pub const DONT_CACHE: u32 = 0x1000_8000;
/// TA: Kingdoms.
pub const DONT_SHADOW: u32 = 0x1000_A000;
pub const MOVE_NOW: u32 = 0x1000_B000;
pub const TURN_NOW: u32 = 0x1000_C000;
pub const SHADE: u32 = 0x1000_D000;
pub const DONT_SHADE: u32 = 0x1000_E000;
pub const EMIT_SFX: u32 = 0x1000_F000;
pub const WAIT_FOR_TURN: u32 = 0x1001_1000;
pub const WAIT_FOR_MOVE: u32 = 0x1001_2000;
pub const SLEEP: u32 = 0x1001_3000;
pub const PUSH_CONSTANT: u32 = 0x1002_1001;
pub const PUSH_LOCAL_VAR: u32 = 0x1002_1002;
pub const PUSH_STATIC: u32 = 0x1002_1004;
/// Makes room for one local variable (a parameter or a `var`).
pub const CREATE_LOCAL_VAR: u32 = 0x1002_2000;
pub const POP_LOCAL_VAR: u32 = 0x1002_3002;
pub const POP_STATIC: u32 = 0x1002_3004;
pub const POP_STACK: u32 = 0x1002_4000;
pub const ADD: u32 = 0x1003_1000;
pub const SUB: u32 = 0x1003_2000;
pub const MUL: u32 = 0x1003_3000;
pub const DIV: u32 = 0x1003_4000;
pub const BITWISE_AND: u32 = 0x1003_5000;
pub const BITWISE_OR: u32 = 0x1003_6000;
pub const MOD: u32 = 0x1003_7000;
pub const BITWISE_XOR: u32 = 0x1003_8000;
pub const BITWISE_NOT: u32 = 0x1003_A000;
pub const RAND: u32 = 0x1004_1000;
pub const GET_UNIT_VALUE: u32 = 0x1004_2000;
pub const GET: u32 = 0x1004_3000;
pub const LESS: u32 = 0x1005_1000;
pub const LESS_EQUAL: u32 = 0x1005_2000;
pub const GREATER: u32 = 0x1005_3000;
pub const GREATER_EQUAL: u32 = 0x1005_4000;
pub const EQUAL: u32 = 0x1005_5000;
pub const NOT_EQUAL: u32 = 0x1005_6000;
pub const AND: u32 = 0x1005_7000;
pub const OR: u32 = 0x1005_8000;
pub const XOR: u32 = 0x1005_9000;
pub const NOT: u32 = 0x1005_A000;
pub const START_SCRIPT: u32 = 0x1006_1000;
pub const CALL_SCRIPT: u32 = 0x1006_2000;
pub const JUMP: u32 = 0x1006_4000;
pub const RETURN: u32 = 0x1006_5000;
pub const JUMP_IF_FALSE: u32 = 0x1006_6000;
pub const SIGNAL: u32 = 0x1006_7000;
pub const SET_SIGNAL_MASK: u32 = 0x1006_8000;
pub const EXPLODE: u32 = 0x1007_1000;
pub const PLAY_SOUND: u32 = 0x1007_2000;
/// TA: Kingdoms.
pub const MISSION_COMMAND: u32 = 0x1007_3000;
pub const SET_VALUE: u32 = 0x1008_2000;
pub const ATTACH_UNIT: u32 = 0x1008_3000;
pub const DROP_UNIT: u32 = 0x1008_4000;

/// Words that follow `op` inline, or `None` for a word that is no opcode.
pub fn operands(op: u32) -> Option<usize> {
    Some(match op {
        MOVE | TURN | SPIN | STOP_SPIN | MOVE_NOW | TURN_NOW | WAIT_FOR_TURN | WAIT_FOR_MOVE
        | START_SCRIPT | CALL_SCRIPT | MISSION_COMMAND => 2,
        SHOW | HIDE | CACHE | DONT_CACHE | DONT_SHADOW | SHADE | DONT_SHADE | EMIT_SFX
        | PUSH_CONSTANT | PUSH_LOCAL_VAR | PUSH_STATIC | POP_LOCAL_VAR | POP_STATIC | JUMP
        | JUMP_IF_FALSE | EXPLODE | PLAY_SOUND | ATTACH_UNIT => 1,
        SLEEP | CREATE_LOCAL_VAR | POP_STACK | ADD | SUB | MUL | DIV | BITWISE_AND | BITWISE_OR
        | MOD | BITWISE_XOR | BITWISE_NOT | RAND | GET_UNIT_VALUE | GET | LESS | LESS_EQUAL
        | GREATER | GREATER_EQUAL | EQUAL | NOT_EQUAL | AND | OR | XOR | NOT | RETURN | SIGNAL
        | SET_SIGNAL_MASK | SET_VALUE | DROP_UNIT => 0,
        0x1003_9000 | 0x1003_B000 | 0x1002_1008 => 0,
        _ => return None,
    })
}
