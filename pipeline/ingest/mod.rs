//! Ingest: source datasets → the canonical scene store.

pub mod nuscenes;

pub mod carla;
pub mod frenetix;
pub mod limits;
pub mod sources;
pub mod waymo;

use std::collections::HashMap;
use std::path::Path;

/// The scene ids an ingest has admitted, so that a second scene with the same id (two routes
/// in different folders with one name, `a__b`+`c` beside `a`+`b__c`) is rejected instead of
/// colliding downstream.
#[derive(Debug, Default)]
pub struct SceneIds(HashMap<String, String>);

impl SceneIds {
    /// Admits `id`, which comes from `origin` (a path), or says which scene already has it.
    pub fn admit(&mut self, id: &str, origin: &Path) -> std::result::Result<(), String> {
        let here = origin.display().to_string();
        match self.0.get(id) {
            Some(first) => Err(format!(
                "scene id {id} is already taken by {first}: scene ids must be unique"
            )),
            None => {
                self.0.insert(id.to_string(), here);
                Ok(())
            }
        }
    }
}

/// The UTF-8 name of a dataset entry; a name that is not UTF-8 is refused with its bytes
/// escaped rather than decoded lossily (two such names could decode to one string).
pub fn utf8_name(p: &Path) -> std::result::Result<String, String> {
    let name = p.file_name().unwrap_or(p.as_os_str());
    name.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the name {name:?} is not UTF-8; rename it"))
}
