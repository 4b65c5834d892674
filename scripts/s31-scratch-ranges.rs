//! Scratch (not committed): N pairs of nested annotation ranges on a traced thread.
fn main() {
    let n: u64 = std::env::args().nth(1).unwrap().parse().unwrap();
    let rt = hrx::Runtime::new(hrx::RuntimeOptions::sim()).unwrap();
    for _ in 0..10_000 {
        let _a = hrx::annotate::range("zone");
    }
    let t = std::time::Instant::now();
    for _ in 0..n {
        let _a = hrx::annotate::range("zone");
        let _b = hrx::annotate::range("inner");
    }
    let ns = t.elapsed().as_nanos() as f64 / (2 * n) as f64;
    drop(rt);
    hrx::close_trace().unwrap();
    println!("{ns:.1} ns per range");
}
