//! The .hlog of HdrHistogram's Rust implementation (crate hdrhistogram 7.5.4): values.md's values through its
//! IntervalLogWriter (StartTime line, interval timestamps relative to it, a tagged interval), serialized with
//! its V2 deflate serializer; its own percentiles of the three untagged intervals merged to rust-hdrhistogram.json.
//!
//!     cd tests/data/hlog/gen/rust && CARGO_TARGET_DIR=/tmp/hlog-gen-target cargo run --release -- ../..
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::fs::File;
use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

const START_S: u64 = 1_700_000_000;

fn value(k: u64, j: u64) -> u64 {
    1000 + ((k * 100_000 + j) * 7919) % 1_000_003
}

fn main() {
    let out = std::env::args().nth(1).expect("usage: hlog-gen OUTDIR");
    let mut file = File::create(format!("{out}/rust-hdrhistogram.hlog")).unwrap();
    let mut serializer = V2DeflateSerializer::new();
    let mut total = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    {
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment("[Logged with the Rust crate hdrhistogram 7.5.4, tests/data/hlog/gen/rust]")
            .with_start_time(UNIX_EPOCH + Duration::from_secs(START_S))
            .with_max_value_divisor(1_000_000.0)
            .begin_log_with(&mut file, &mut serializer)
            .unwrap();
        for k in 0..4u64 {
            let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
            let n = if k == 3 { 1000 } else { 10_000 };
            for j in 0..n {
                h.record(value(k, j)).unwrap();
            }
            if k == 2 {
                h.record(5_000_000_000).unwrap();
            }
            let tag = if k == 3 { Tag::new("udp") } else { None };
            log.write_histogram(&h, Duration::from_secs(k), Duration::from_secs(1), tag).unwrap();
            if k < 3 {
                total.add(&h).unwrap();
            }
        }
    }
    let pcts: Vec<String> = [50.0, 90.0, 99.0, 99.9, 99.99, 100.0]
        .iter()
        .map(|p| format!("  \"{p}\": {}", total.value_at_quantile(p / 100.0)))
        .collect();
    let mut json = File::create(format!("{out}/rust-hdrhistogram.json")).unwrap();
    write!(
        json,
        "{{\n \"implementation\": \"Rust hdrhistogram 7.5.4\",\n \"count\": {},\n \"min\": {},\n \"max\": {},\n \"percentiles\": {{\n{}\n }}\n}}\n",
        total.len(),
        total.min(),
        total.max(),
        pcts.join(",\n")
    )
    .unwrap();
}
