//! A clustered launch's record says how many of its clusters the device held at once (ignored
//! without a GPU; gpu-check.sh runs it): gemm_small.ph at 512x512x4096 split in 4 parts, the
//! parts reduced in a cluster along z (SPLIT_REDUCE=4) beside the same split without clusters.

mod kbench_workflow_common;

use kbench_workflow_common::{bin, crate_dir, Scratch};
use serde_json::Value;
use std::process::Command;

#[test]
#[ignore = "needs a GPU"]
fn a_clustered_launch_records_the_clusters_that_fit_at_once() {
    let s = Scratch::new("clusters");
    let file = crate_dir().join("../../examples/gemm_small.ph");
    let o = Command::new(bin())
        .arg(&file)
        .args([
            "--dims",
            "M=512,N=512,K=4096",
            "--json",
            "--budget-ms",
            "20",
        ])
        .args([
            "--autotune",
            "TILE_M=64,TILE_N=64,TILE_K=64,THREADS=160,STAGES=6,SPLIT_K=4,SCHEDULE=1,\
             GROUP_M=1,CLUSTER=1,VEC_COPY=1",
        ])
        .args(["--db", &s.db()])
        .env("NO_COLOR", "1")
        .env("XDG_CACHE_HOME", s.0.join("cache"))
        .output()
        .expect("phobos-kbench runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let j: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    let points = j["points"].as_array().expect("points");
    let mut clustered = 0;
    for p in points.iter().filter(|p| p["status"] == "ok") {
        let reduce = p["config"].as_str().unwrap_or_default().to_string();
        let c = &p["resources"]["clusters"];
        if reduce.contains("SPLIT_REDUCE=4") {
            // 8 x 8 tiles, each 4 parts in one cluster along z: 64 clusters launched.
            assert_eq!(c["dims"], serde_json::json!([1, 1, 4]), "{p}");
            assert_eq!(c["launched"], 64, "{p}");
            let resident = c["resident"].as_u64().expect("resident");
            assert!((1..=132).contains(&resident), "{p}");
            assert_eq!(c["waves"].as_u64(), Some(64u64.div_ceil(resident)), "{p}");
            clustered += 1;
        } else {
            assert!(c.is_null(), "{p}");
        }
    }
    assert_eq!(
        clustered,
        1,
        "{}",
        serde_json::to_string_pretty(&j).unwrap()
    );
    // The one-line record says it too.
    assert!(err.contains(" clusters of 4: 64 launched, "), "{err}");
}
