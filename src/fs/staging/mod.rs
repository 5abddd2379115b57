//! What write-back keeps, apart from the operations that change it (`fs::writeback`): per
//! asset the records of the times its generated files show (`times`, `member_times`), the
//! queue of put-off archive commits (`deferred`), and the staged files seen on top of the
//! generated view (`overlay`: what a folder of an asset directory holds, the file set a
//! commit builds from).
//!
//! The core owns it ([`Core`](crate::fs::core::Core) holds it) and reads it to answer
//! lookups, listings and attributes; it imports nothing of the core nor of
//! `fs::writeback`, so neither room depends on the other through it.

pub(in crate::fs) mod deferred;
pub(in crate::fs) mod member_times;
pub(in crate::fs) mod overlay;
pub(in crate::fs) mod times;

pub(in crate::fs) use deferred::Deferred;
pub(in crate::fs) use overlay::{listed, merged_children};
pub(in crate::fs) use times::Times;
