//! Unit tests of the codec internals; archive-level tests live in tests/hpi*.rs.

use super::*;

#[test]
fn outer_key_rotates() {
    assert_eq!(outer_key(0x7D), Some(0xF5));
    assert_eq!(outer_key(0xAF), Some(0xBE));
    assert_eq!(outer_key(0), None);
}

#[test]
fn inner_transform_inverts() {
    // plain 0 at index i is stored as (0 XOR i) + i = 2i mod 256.
    let mut b = vec![0u8; 512];
    b[300] = 0xAB;
    let orig = b.clone();
    sqsh::inner_encode(&mut b);
    assert_eq!(b[1], 2);
    assert_eq!(b[200], 144);
    // 0xAB at 300 (i = 44 = 0x2C): (0xAB ^ 0x2C) + 0x2C = 0x87 + 0x2C = 0xB3
    assert_eq!(b[300], 0xB3);
    sqsh::inner_decode(&mut b);
    assert_eq!(b, orig);
}

#[test]
fn v2_checksum_by_hand() {
    // b = [1, 2]: c0 = 3, c1 = 1^2 = 3, c2 = (1^0)+(2^1) = 1+3 = 4, c3 = (1+0)^(2+1) = 1^3 = 2
    assert_eq!(v2_checksum(&[1, 2]), 3 | 3 << 8 | 4 << 16 | 2 << 24);
}
