//! The README's "Link your program" example: hrx in a program of your own, with an
//! annotation around its host work. `hrx-trace record -o app.hrxt -- PROGRAM` records it.

use hrx::{Placement, Runtime, RuntimeOptions};

fn main() -> hrx::Result<()> {
    // HRX_TRACE=FILE (which `hrx-trace record` sets) records everything below.
    let runtime = Runtime::new(RuntimeOptions::default())?;
    let staging = runtime.buffer(1 << 20, Placement::HostVisible)?;
    let device = runtime.buffer(1 << 20, Placement::GpuLocal)?;
    let result = runtime.buffer(1 << 20, Placement::HostVisible)?;
    let mut graph = runtime.graph();
    graph.copy(device.whole(), staging.whole())?; // upload
    graph.copy(result.whole(), device.whole())?; // download
    let graph = graph.prepare()?;
    for frame in 0..8u8 {
        {
            // The host work, as a range on this thread's row of the timeline.
            let _decode = hrx::annotate::range("decode");
            staging.write(0, &vec![frame; 1 << 20])?;
        }
        graph.submit()?.wait()?;
        hrx::annotate::counter("frames done", f64::from(frame) + 1.0);
    }
    println!("8 frames done on {}", runtime.device_info().name);
    Ok(())
}
