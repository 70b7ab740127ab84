//! Paths read from a dataset stay inside the dataset.
//!
//! A dataset names its files (nuScenes `sample_data.filename`, CARLA log paths, …) relative to
//! its root. drivegen reads those files and names some outputs after them, so a name that is
//! absolute or climbs out with `..` would let a dataset make drivegen read, or worse
//! overwrite, files it was never given. Such a name is refused as a bad record, like any other.
//!
//! Symbolic links placed under the root are the user's own layout (the devkit's `samples/`,
//! `sweeps/` and `v1.0-*` linked to another disk, or a subset made of per-file links), so by
//! default they are followed wherever they lead ([`Links::Follow`]); what they reach must still
//! be a regular file (`store::input`). An archive the user does not trust is read with
//! [`Links::Strict`], which refuses a file that links lead out of the root.

use std::path::{Component, Path, PathBuf};

/// Why `rel` is not a plain relative path inside its root, if it is not: empty, absolute (also
/// in Windows spelling), a `..` component, or a NUL byte.
pub(crate) fn unsafe_relative(rel: &str) -> Option<String> {
    if rel.is_empty() {
        return Some("the path is empty".into());
    }
    if rel.contains('\0') {
        return Some(format!("the path {rel:?} holds a NUL byte"));
    }
    let unified = rel.replace('\\', "/");
    let drive = unified.len() >= 2 && unified.as_bytes()[1] == b':';
    if unified.starts_with('/') || drive {
        return Some(format!(
            "the path {rel:?} is absolute; a dataset's paths must be relative to its root"
        ));
    }
    let p = Path::new(&unified);
    if p.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::RootDir | Component::Prefix(_)
        )
    }) {
        return Some(format!(
            "the path {rel:?} climbs out of the dataset root with `..`"
        ));
    }
    None
}

/// How symbolic links under a dataset root are treated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Links {
    /// Followed at any depth, wherever they lead.
    #[default]
    Follow,
    /// A file that links lead out of the root is refused (`--strict-links`).
    Strict,
}

impl Links {
    /// `Strict` when `strict`, else `Follow`.
    pub fn strict_if(strict: bool) -> Self {
        if strict {
            Self::Strict
        } else {
            Self::Follow
        }
    }

    pub(crate) fn is_strict(self) -> bool {
        self == Self::Strict
    }
}

/// A dataset root and how links under it are treated; in strict mode its own links are
/// resolved once (each image read would otherwise resolve them again).
#[derive(Debug, Clone)]
pub(crate) struct Root {
    dir: PathBuf,
    /// The resolved root, in strict mode only.
    real: Option<PathBuf>,
}

impl Root {
    pub fn new(dir: &Path, links: Links) -> Self {
        Self {
            dir: dir.to_path_buf(),
            real: match links {
                Links::Follow => None,
                Links::Strict => dir.canonicalize().ok(),
            },
        }
    }

    /// `root/rel`, as the dataset names it (links are not resolved in what is returned), when
    /// `rel` is a plain relative path and, in strict mode, the file it names (if it exists)
    /// is inside the root with links resolved; otherwise why not.
    pub fn inside(&self, rel: &str) -> Result<PathBuf, String> {
        if let Some(why) = unsafe_relative(rel) {
            return Err(why);
        }
        let path = self.dir.join(rel.replace('\\', "/"));
        self.holds(&path)?;
        Ok(path)
    }

    /// In strict mode, refuses `path` (under the root, as the dataset names it) when links
    /// lead it out of the root, naming the first link on the way that does.
    pub fn holds(&self, path: &Path) -> Result<(), String> {
        let Some(real_root) = &self.real else {
            return Ok(());
        };
        match path.canonicalize() {
            Ok(real) if !real.starts_with(real_root) => {
                let link = self.link_out(path, real_root);
                Err(format!(
                    "{} leads out of the dataset root {} through the symbolic link {} (to {}); \
                     links out of the root are refused in strict-links mode",
                    path.display(),
                    self.dir.display(),
                    link.as_deref().unwrap_or(path).display(),
                    real.display()
                ))
            }
            _ => Ok(()),
        }
    }

    /// The first link on the way from the root to `path` that leads out of `real_root`.
    fn link_out(&self, path: &Path, real_root: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(&self.dir).ok()?;
        let mut at = self.dir.clone();
        for c in rel.components() {
            at.push(c);
            let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
            if is_link && at.canonicalize().is_ok_and(|r| !r.starts_with(real_root)) {
                return Some(at);
            }
        }
        None
    }
}

/// `p` made absolute with links resolved as far as it exists (the rest appended as given), so
/// that two spellings of one folder compare equal.
fn resolved(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut head = abs.as_path();
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = head.canonicalize() {
            return tail.iter().rev().fold(real, |acc, c| acc.join(c));
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name);
                head = parent;
            }
            _ => return abs,
        }
    }
}

/// Refuses an output that is, holds or lies inside an input: drivegen never writes into what
/// it reads (`what_in`/`what_out` name them in the message, e.g. `--store`, `--out`).
pub(crate) fn disjoint(
    input: &Path,
    what_in: &str,
    output: &Path,
    what_out: &str,
) -> crate::Result<()> {
    let (a, b) = (resolved(input), resolved(output));
    let how = if a == b {
        "is"
    } else if b.starts_with(&a) {
        "lies inside"
    } else if a.starts_with(&b) {
        "holds"
    } else {
        return Ok(());
    };
    Err(crate::Error::Refused {
        path: output.to_path_buf(),
        why: format!(
            "({what_out}) {how} {what_in} {}: drivegen never writes where it reads; give \
             {what_out} a folder of its own",
            input.display()
        ),
    })
}

/// Refuses an output name that is not one plain path component: empty, `.` or `..`, holding
/// a separator (`/`, `\\`), a NUL or another control character. Every name a user gives
/// (`export --name`) or a release supplies (a split's name) that becomes a file name passes
/// here, so no name can place a file outside its folder. `what` names the flag or record.
pub(crate) fn component<'a>(what: &str, name: &'a str) -> crate::Result<&'a str> {
    let why = if name.is_empty() {
        "is empty"
    } else if name == "." || name == ".." {
        "is `.` or `..`"
    } else if name.contains(['/', '\\']) {
        "holds a path separator"
    } else if name.chars().any(char::is_control) {
        "holds a control character"
    } else {
        return Ok(name);
    };
    Err(crate::Error::invalid(
        what,
        format!("{name:?} {why}; it must be one plain file name"),
    ))
}

/// Refuses two outputs of one command at the same path, or one inside the other, after
/// links and `..` are resolved (`--out r.toml --report ./r.toml`): the one written last would
/// replace the other, or a folder output would take a file output in with it. `outputs`
/// pairs each path given with the flag that gave it.
pub(crate) fn distinct_outputs(outputs: &[(&Path, &str)]) -> crate::Result<()> {
    let resolved: Vec<PathBuf> = outputs.iter().map(|(p, _)| resolved(p)).collect();
    for (j, (b, flag_b)) in outputs.iter().enumerate() {
        for (i, (a, flag_a)) in outputs.iter().enumerate().take(j) {
            let (ra, rb) = (&resolved[i], &resolved[j]);
            let how = if ra == rb {
                "is the same path as"
            } else if rb.starts_with(ra) {
                "lies inside"
            } else if ra.starts_with(rb) {
                "holds"
            } else {
                continue;
            };
            return Err(crate::Error::Refused {
                path: b.to_path_buf(),
                why: format!(
                    "({flag_b}) {how} {flag_a} {}: each output of a command needs a path of \
                     its own, or one would replace the other; give {flag_b} another path",
                    a.display()
                ),
            });
        }
    }
    Ok(())
}

/// A file-name-safe form of an id: `[A-Za-z0-9._-]` kept; an id holding anything else has it
/// replaced by `_` and gets `~` and 12 hex digits of the exact id's SHA-256 appended. The map is
/// injective (short of a hash collision): `Town 1` and `Town_1` name different files, and no
/// untouched id ends in `~…` because `~` is not kept.
pub(crate) fn safe_name(id: &str) -> String {
    let kept = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if !id.is_empty() && id.chars().all(kept) && !id.chars().all(|c| c == '.') {
        return id.to_string();
    }
    use sha2::Digest;
    let s: String = id.chars().map(|c| if kept(c) { c } else { '_' }).collect();
    let h = sha2::Sha256::digest(id.as_bytes());
    let hex: String = h.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{s}~{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names_are_injective() {
        let ids = [
            "Town 1", "Town_1", "Town/1", "a__b", "a_b", "", ".", "..", "ok-1.x",
        ];
        let names: std::collections::BTreeSet<String> = ids.iter().map(|i| safe_name(i)).collect();
        assert_eq!(names.len(), ids.len(), "{names:?}");
        assert_eq!(safe_name("ok-1.x"), "ok-1.x");
        assert!(names
            .iter()
            .all(|n| !n.contains('/') && !n.contains(' ') && n != "." && n != ".."));
    }

    #[test]
    fn escapes_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "\\\\server\\share\\x.jpg",
            "C:\\x.jpg",
            "samples/../../x.jpg",
            "..",
            "a/\0b",
        ] {
            assert!(unsafe_relative(bad).is_some(), "{bad:?}");
        }
        for good in ["samples/CAM_FRONT/x.jpg", "./a/b.jpg", "a..b/c.jpg"] {
            assert_eq!(unsafe_relative(good), None, "{good:?}");
        }
    }

    #[test]
    fn outputs_overlapping_inputs_are_refused() {
        let t = std::env::temp_dir().join(format!("drivegen-disjoint-{}", std::process::id()));
        let store = t.join("store");
        std::fs::create_dir_all(&store).unwrap_or_default();
        for (out, bad) in [
            (store.clone(), true),
            (store.join("cameras.arrow"), true),
            (store.join("x/../out"), true),
            (t.clone(), true),
            (t.join("out"), false),
            (t.join("store2"), false),
        ] {
            assert_eq!(
                disjoint(&store, "--store", &out, "--out").is_err(),
                bad,
                "{out:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&t);
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_the_root_are_followed_unless_strict() {
        let t = tempfile::tempdir().unwrap();
        let (t, root) = (t.path(), t.path().join("root"));
        std::fs::create_dir_all(root.join("samples")).unwrap();
        std::fs::create_dir_all(t.join("disk/sweeps")).unwrap();
        std::fs::write(t.join("secret.jpg"), b"x").unwrap();
        std::fs::write(t.join("disk/sweeps/s.jpg"), b"x").unwrap();
        std::fs::write(root.join("samples/ok.jpg"), b"x").unwrap();
        std::os::unix::fs::symlink(t.join("secret.jpg"), root.join("samples/out.jpg")).unwrap();
        std::os::unix::fs::symlink(t.join("disk/sweeps"), root.join("sweeps")).unwrap();
        let follow = Root::new(&root, Links::Follow);
        let strict = Root::new(&root, Links::Strict);
        for rel in ["samples/ok.jpg", "samples/out.jpg", "sweeps/s.jpg"] {
            // The path stays the one the dataset names, never the resolved one.
            assert_eq!(follow.inside(rel).unwrap(), root.join(rel));
            assert!(follow.holds(&root.join(rel)).is_ok());
        }
        assert!(strict.inside("samples/ok.jpg").is_ok());
        for rel in ["samples/out.jpg", "sweeps/s.jpg"] {
            let e = strict.inside(rel).unwrap_err();
            assert!(e.contains("symbolic link") && e.contains(rel), "{e}");
            let link = root.join(rel.split('/').next().unwrap_or_default());
            let named = if rel.starts_with("sweeps") {
                link
            } else {
                root.join(rel)
            };
            assert!(e.contains(&format!("link {}", named.display())), "{e}");
            assert!(strict.holds(&root.join(rel)).is_err());
        }
        for root in [&follow, &strict] {
            assert!(root.inside("samples/../../secret.jpg").is_err());
            assert!(root.inside("/etc/passwd").is_err());
        }
    }
}
