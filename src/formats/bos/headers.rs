//! The standard headers built in, used when a script includes `sfxtype.h` or `exptype.h`
//! and neither its folder nor the game's `scripts/` has them. Written from the values the
//! game reads (effect types, explosion flags, unit-value ports), same names as the
//! headers the game's own scripts were written with; under `#ifdef TAK` the TA: Kingdoms
//! unit values and play-sound priority its scripts use.

/// `sfxtype.h`: effect types of `emit-sfx`.
pub const SFXTYPE_H: &str = "\
// sfxtype.h: effect types of emit-sfx
#ifndef __SFXTYPE_H_
#define __SFXTYPE_H_

// Vector-based effects
#define SFXTYPE_VTOL 0
#define SFXTYPE_THRUST 1
#define SFXTYPE_WAKE1 2
#define SFXTYPE_WAKE2 3
#define SFXTYPE_REVERSEWAKE1 4
#define SFXTYPE_REVERSEWAKE2 5

// Point-based (piece origin) effects
#define SFXTYPE_POINTBASED 256
#define SFXTYPE_WHITESMOKE (SFXTYPE_POINTBASED | 1)
#define SFXTYPE_BLACKSMOKE (SFXTYPE_POINTBASED | 2)
#define SFXTYPE_SUBBUBBLES (SFXTYPE_POINTBASED | 3)

#ifdef TAK
// play-sound priority (TA: Kingdoms; the value its shipped scripts use)
#define PLAYSOUND_PRIORITY_BATTLE 4
#endif

#endif
";

/// `exptype.h`: explosion flags of `explode` and the unit-value ports of `get`/`set`.
pub const EXPTYPE_H: &str = "\
// exptype.h: explode flags and get/set unit values
#ifndef EXPTYPE_H
#define EXPTYPE_H

#define SHATTER 1
#define EXPLODE_ON_HIT 2
#define FALL 4
#define SMOKE 8
#define FIRE 16
#define BITMAPONLY 32

#define BITMAP1 256
#define BITMAP2 512
#define BITMAP3 1024
#define BITMAP4 2048
#define BITMAP5 4096
#define BITMAPNUKE 8192
#define BITMAPMASK 16128

#ifdef TAK
// TA: Kingdoms explosion effects (the values its shipped scripts compile to)
#define EXPTYPE_SMALLEXPLOSION 256
#define EXPTYPE_BLOODEXPLOSION 4096
#define EXPTYPE_SMALLSMOKE 8192
#endif

#define ACTIVATION 1
#define STANDINGMOVEORDERS 2
#define STANDINGFIREORDERS 3
#define HEALTH 4
#define INBUILDSTANCE 5
#define BUSY 6
#define PIECE_XZ 7
#define PIECE_Y 8
#define UNIT_XZ 9
#define UNIT_Y 10
#define UNIT_HEIGHT 11
#define XZ_ATAN 12
#define XZ_HYPOT 13
#define ATAN 14
#define HYPOT 15
#define GROUND_HEIGHT 16
#define BUILD_PERCENT_LEFT 17
#define YARD_OPEN 18
#define BUGGER_OFF 19
#define ARMORED 20

#ifdef TAK
// TA: Kingdoms unit values (Scriptor's table)
#define WEAPON_AIM_ABORTED 21
#define WEAPON_READY 22
#define WEAPON_LAUNCH_NOW 23
#define FINISHED_DYING 26
#define ORIENTATION 27
#define IN_WATER 28
#define CURRENT_SPEED 29
#define MAGIC_DEATH 31
#define VETERAN_LEVEL 32
#define ON_ROAD 34
// A value by number, as Scriptor's decompiler writes ports it has no name for.
#define UNKNOWN_UNIT_VALUE(n) n
#endif

#endif
";

/// The built-in header called `name` (any letter case, any folder prefix).
pub fn builtin(name: &str) -> Option<&'static str> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    if base.eq_ignore_ascii_case("sfxtype.h") {
        Some(SFXTYPE_H)
    } else if base.eq_ignore_ascii_case("exptype.h") {
        Some(EXPTYPE_H)
    } else {
        None
    }
}
