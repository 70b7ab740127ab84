//! The blind audit of a written release ([`crate::audit`] over its main split), and its
//! record in `manifest.json`.

use std::path::Path;

use crate::audit::Audit;
use crate::{Error, Result};

/// Audits the main split of the release in `dir`.
pub(crate) fn audit(dir: &Path) -> Result<Audit> {
    super::read::audit_main(dir)
}

/// Adds the audit to the release's `manifest.json` (as `blind_audit`).
pub(crate) fn write_audit(dir: &Path, a: &Audit) -> Result<()> {
    let path = dir.join("manifest.json");
    let text = crate::store::input::read_to_string(&path, crate::store::input::METADATA)?;
    let mut v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::json(&path, e))?;
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "blind_audit".into(),
            serde_json::to_value(a).unwrap_or_default(),
        );
    }
    let out = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    crate::store::atomic::write_atomic(&path, out.as_bytes())
}
