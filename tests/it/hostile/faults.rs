//! Faults while a build runs: kills at random moments, two builds at once, a full disk.

use super::*;

/// The kill -9 moments of [`faults`].
pub(super) const KILLS: usize = 20;

/// Faults while a build runs: killed at 20 moments and resumed (the release ends byte-identical
/// to an uninterrupted build and no temporary file survives), and two builds at once on one
/// work folder (the second is refused, the first is unharmed); the sentinel tree stays as it
/// was throughout.
#[test]
pub(super) fn faults() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::create_dir_all(t.join("sentinel")).unwrap();
    std::fs::write(t.join("sentinel/notes.md"), b"mine").unwrap();
    let reference = t.join("a");
    std::fs::create_dir_all(&reference).unwrap();
    write_build(&reference, BUILD);
    let t0 = Instant::now();
    common::cli::ok(
        common::cli::bin()
            .current_dir(&reference)
            .args(["build", "build.toml"])
            .output()
            .unwrap(),
        "reference build",
    );
    let full = t0.elapsed().as_millis() as u64;
    let sentinel = digest_tree(&t.join("sentinel"), &[]);

    let b = t.join("b");
    std::fs::create_dir_all(&b).unwrap();
    write_build(&b, BUILD);
    let seed = common::random::seed();
    let mut rng = drivegen::qa::record::SplitMix64::new(seed);
    let mut kills = Vec::new();
    for _ in 0..KILLS {
        let after = Duration::from_millis(20 + rng.below(full.max(100)));
        let mut child = Command::new(env!("CARGO_BIN_EXE_drivegen"))
            .current_dir(&b)
            .env("DRIVEGEN_PROGRESS", "0")
            .args(["build", "build.toml"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while start.elapsed() < after && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
        kills.push(after.as_millis());
    }
    common::cli::ok(
        common::cli::bin()
            .current_dir(&b)
            .args(["build", "build.toml"])
            .output()
            .unwrap(),
        "resumed build",
    );
    let strip = |m: BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.into_iter()
            .filter(|(k, _)| !k.starts_with("report"))
            .collect()
    };
    assert_eq!(
        strip(digest_tree(&reference.join("rel"), &[])),
        strip(digest_tree(&b.join("rel"), &[])),
        "resumed after kills at {kills:?} ms (seed {seed})"
    );
    let debris: Vec<String> = digest_tree(&b, &[])
        .into_keys()
        .filter(|k| k.ends_with(".tmp") || k.contains(".drivegen-new-"))
        .collect();
    assert!(debris.is_empty(), "left behind: {debris:?}");

    // Two builds at once on one work folder: exactly one runs.
    let c = t.join("c");
    std::fs::create_dir_all(&c).unwrap();
    write_build(&c, BUILD);
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_drivegen"))
            .current_dir(&c)
            .env("DRIVEGEN_PROGRESS", "0")
            .args(["build", "build.toml"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (x, y) = (spawn(), spawn());
    let (x, y) = (x.wait_with_output().unwrap(), y.wait_with_output().unwrap());
    let refused = [&x, &y]
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stderr).contains("in use by pid"))
        .count();
    let succeeded = [&x, &y].iter().filter(|o| o.status.success()).count();
    // The second may also start after the first has finished, and then finds its work done.
    assert!(
        succeeded == 2 || (succeeded == 1 && refused == 1),
        "{}\n{}",
        String::from_utf8_lossy(&x.stderr),
        String::from_utf8_lossy(&y.stderr)
    );
    assert_eq!(
        strip(digest_tree(&reference.join("rel"), &[])),
        strip(digest_tree(&c.join("rel"), &[])),
        "concurrent builds"
    );
    assert_eq!(sentinel, digest_tree(&t.join("sentinel"), &[]));
}

/// A full disk: a re-ingest that runs out of room fails naming the file, leaves the old store
/// whole and readable, and leaves no temporary file or half-written store behind. On a small
/// tmpfs where this machine lets the test mount one (the disk really fills); elsewhere under a
/// file-size limit (`ulimit -f`, SIGXFSZ ignored), which fails the same writes with EFBIG.
#[cfg(target_os = "linux")]
#[test]
pub(super) fn disk_full() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    struct Unmount<'a>(&'a Path, bool);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            if self.1 {
                let _ = Command::new("umount").arg(self.0).status();
            }
        }
    }
    let _guard = Unmount(&mnt, mounted);
    let store = mnt.join("store");
    let root = fixtures().join("nuscenes");
    common::cli::drivegen(&["ingest"], &[("--root", &root), ("--out", &store)]);
    let before = digest_tree(&store, &[]);
    let mut again = if mounted {
        // Leave less room than a second store needs.
        let free = {
            let o = Command::new("df")
                .args(["-B1", "--output=avail"])
                .arg(&mnt)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.lines().nth(1).unwrap().trim().parse::<u64>().unwrap()
        };
        std::fs::write(
            mnt.join("filler"),
            vec![0u8; free.saturating_sub(100_000) as usize],
        )
        .unwrap();
        common::cli::bin()
    } else {
        eprintln!("disk_full: no tmpfs can be mounted here; a file-size limit fills the writes");
        let mut c = Command::new("sh");
        c.args(["-c", "trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_drivegen"))
            .env("DRIVEGEN_PROGRESS", "0");
        c
    };
    let o = again
        .args(["ingest", "--root"])
        .arg(&root)
        .arg("--out")
        .arg(&store)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "ingest into a full disk succeeded");
    assert!(
        err.contains(&mnt.to_string_lossy().into_owned()),
        "names no file: {err}"
    );
    let lower = err.to_lowercase();
    assert!(
        lower.contains("no space") || (!mounted && lower.contains("file too large")),
        "{err}"
    );
    // The failed run's lock file (empty once released) is the only addition.
    let after: BTreeMap<_, _> = digest_tree(&store, &[])
        .into_iter()
        .filter(|(k, _)| k != ".drivegen.lock")
        .collect();
    assert_eq!(before, after, "the old store changed");
    common::cli::drivegen(&["inspect"], &[("", &store)]);
    let left: Vec<String> = digest_tree(&mnt, &[])
        .into_keys()
        .filter(|k| k.ends_with(".tmp") || k.contains(".drivegen-new-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
