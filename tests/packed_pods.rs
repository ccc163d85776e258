//! A large cluster's running pods stay packed (see framework/pod_pack.rs) through what
//! users run on it: loading, `explain`, and scheduling every pending pod as `replay`
//! does. A path that kept them whole would bring back the memory packing saves (2.4 kB
//! a pod before any of its strings), so this counts the pods kept whole. One test in
//! its own binary: the count is for the whole process.

use kubestep::cluster::ClusterState;
use kubestep::framework::pod_pack::bound_pods_kept_whole;
use kubestep::recording::{self, reader::ReadOptions};
use kubestep::session::{LocalActuator, Session, SessionOptions};
use kubestep::testing::cluster_dump::{DumpSpec, write_dump};

#[test]
fn loading_explaining_and_scheduling_never_keep_a_running_pod_whole() {
    let dir = std::env::temp_dir().join(format!("kubestep-packed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("dump.json");
    let spec = DumpSpec {
        nodes: 40,
        pods_per_node: 12,
        pending: 60,
        seed: 3,
    };
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let stats = write_dump(&mut file, &spec).expect("write dump");
    drop(file);

    let cluster = ClusterState::load(&[path.as_path()]).expect("load");
    let running: Vec<_> = cluster
        .pod_infos()
        .filter(|p| !p.node_name().is_empty())
        .collect();
    assert_eq!(running.len(), 40 * 12);
    assert!(running.iter().all(|p| p.is_packed()));

    let cfg = kubestep::config::default_configuration();
    for key in [&stats.fits, &stats.fits_nowhere] {
        let pod = cluster.full_pod(key).expect("pending pod");
        let e = kubestep::explain::explain(&cluster, &cfg, pod).expect("explain");
        assert_eq!(e.pod, *key);
    }
    assert_eq!(
        bound_pods_kept_whole(),
        0,
        "explain read running pods whole"
    );

    let rec = recording::open_with(path.to_str().expect("utf-8"), ReadOptions::default())
        .expect("open dump");
    let end = rec.end();
    let mut s =
        Session::from_recording(rec, cfg, SessionOptions::default(), Box::new(LocalActuator))
            .expect("session");
    s.run_until_with(end + jiff::SignedDuration::from_secs(600), None);
    let bound = s
        .cluster()
        .pod_infos()
        .filter(|p| p.key.starts_with("batch/") && !p.node_name().is_empty())
        .count();
    assert!(bound > 40, "most pending pods fit: {bound} bound");
    assert_eq!(
        bound_pods_kept_whole(),
        0,
        "scheduling read running pods whole"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
