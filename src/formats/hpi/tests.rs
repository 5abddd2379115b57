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
    let mut b: Vec<u8> = (0..=255u8).chain(0..=255).collect();
    let orig = b.clone();
    sqsh::inner_encode(&mut b);
    assert_ne!(b, orig);
    // stored byte 1 for plain 0 at i = 1: (0 ^ 1) + 1 = 2
    assert_eq!(b[1], 2);
    sqsh::inner_decode(&mut b);
    assert_eq!(b, orig);
}

#[test]
fn v2_checksum_by_hand() {
    // b = [1, 2]: c0 = 3, c1 = 1^2 = 3, c2 = (1^0)+(2^1) = 1+3 = 4, c3 = (1+0)^(2+1) = 1^3 = 2
    assert_eq!(v2_checksum(&[1, 2]), 3 | 3 << 8 | 4 << 16 | 2 << 24);
}
