//! Nothing: the comparator is `benches/zone.rs`.
