//! `hrx-trace`: record, replay and view hrx traces.
fn main() {
    println!("hrx-trace {}", env!("CARGO_PKG_VERSION"));
}
