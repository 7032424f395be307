//! Skill manifests for the MCP Skills extension: `skill://` URIs, SHA-256 digests and the
//! frontmatter as JSON, cached per revision.
//!
//! A manifest is built once per `(skill id, revision)` from the index entry alone: every file
//! with the SHA-256 and size the store recorded when the revision was written, a MIME type when
//! the name tells one, and the whole frontmatter as the store parsed it (YAML 1.2 core schema →
//! JSON: what a host re-parsing the SKILL.md gets). Listing reads no file. Whether a file goes out
//! as text or a blob is decided from its bytes when it is read; bundles read for files stay in a
//! small byte-bounded cache, so reads of one skill do not go back to the database.

use skillbase_format::Bundle;
use skillbase_store::{AgentName, SkillEntry, Store, StoreError};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

pub use skillbase_format::uri::{SCHEME, encode_segment, file_uri};
/// The file every skill has, always served under this name.
pub const SKILL_MD: &str = "SKILL.md";
/// MIME type of SKILL.md.
pub const MARKDOWN: &str = "text/markdown";
/// MIME type of a directory resource.
pub const DIRECTORY: &str = "inode/directory";

/// Bundles kept for file reads, in bytes.
const BUNDLE_CACHE_BYTES: u64 = 32 * 1024 * 1024;
/// A bundle larger than this is read for each request instead of cached.
const BUNDLE_CACHE_MAX_ONE: u64 = 8 * 1024 * 1024;

/// One file of a skill, as the extension lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    /// The path relative to the skill root in URIs: `SKILL.md` for the skill's SKILL.md (even
    /// when stored as `skill.md`), else the bundle path.
    pub rel: String,
    /// The path in the bundle.
    pub path: String,
    /// `skill://<name>/<rel>`, each segment percent-encoded.
    pub uri: String,
    /// `sha256:<64 lowercase hex>` of the exact bytes.
    pub digest: String,
    /// The file's size in bytes, as recorded when the revision was written.
    pub size: u64,
    /// The MIME type known from the name; `None` when only the bytes can tell (see
    /// [`ManifestFile::served_as`]).
    pub mime: Option<&'static str>,
    /// The skill's SKILL.md (always served as text).
    pub skill_md: bool,
}

impl ManifestFile {
    /// Whether these bytes of the file go out as `text` (SKILL.md, or UTF-8 without NUL) or as
    /// a base64 `blob`, and the MIME type to serve them with.
    pub fn served_as(&self, bytes: &[u8]) -> (bool, &'static str) {
        let text = self.skill_md || is_text(bytes);
        (text, self.mime.unwrap_or_else(|| mime_for(&self.rel, text)))
    }
}

/// A skill revision as the extension serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The skill record's id in the store (stable across revisions).
    pub id: i64,
    /// The revision this manifest describes (the active one when it was built).
    pub rev: i64,
    /// The skill's name, as stored.
    pub name: String,
    /// `skill://<name>/SKILL.md`.
    pub uri: String,
    /// `skill://<name>`: the skill's root directory.
    pub root: String,
    /// The whole frontmatter, YAML 1.2 core schema → JSON.
    pub frontmatter: serde_json::Map<String, serde_json::Value>,
    /// The frontmatter's `name` as a string (numbers and booleans written as text; the record's
    /// name when absent).
    pub fm_name: String,
    /// The frontmatter's `description` as a string (numbers and booleans written as text; the
    /// parsed description when absent).
    pub fm_description: String,
    /// Every file, sorted by `rel`.
    pub files: Vec<ManifestFile>,
    /// The revision's content digest (`sha256:...`).
    pub digest: String,
    /// The fingerprint of the key that signed the revision, when it was written signed.
    pub signer: Option<String>,
}

/// A direct child of a directory in a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Child<'a> {
    /// A file directly in the directory.
    File(&'a ManifestFile),
    /// A subdirectory (implied by the paths of the files under it).
    Dir {
        /// The subdirectory's own name (one segment).
        name: String,
        /// `skill://<skill>/<path>` of the subdirectory.
        uri: String,
    },
}

impl Child<'_> {
    /// The child's name within its directory.
    pub fn name(&self) -> &str {
        match self {
            Child::File(f) => f.rel.rsplit('/').next().unwrap_or(&f.rel),
            Child::Dir { name, .. } => name,
        }
    }
}

impl Manifest {
    /// The file at a URI-relative path (`SKILL.md` or a bundle path).
    pub fn file(&self, rel: &str) -> Option<&ManifestFile> {
        self.files
            .binary_search_by(|f| f.rel.as_str().cmp(rel))
            .ok()
            .map(|i| &self.files[i])
    }

    /// The SKILL.md entry.
    pub fn skill_md(&self) -> &ManifestFile {
        self.file(SKILL_MD)
            .expect("a manifest always lists SKILL.md")
    }

    /// The direct children of a directory (`""` is the root), sorted by name; `None` when no
    /// such directory exists (a file path, or nothing at all).
    pub fn children(&self, dir: &str) -> Option<Vec<Child<'_>>> {
        let mut out: BTreeMap<String, Child<'_>> = BTreeMap::new();
        let mut exists = dir.is_empty();
        for f in &self.files {
            let rest = if dir.is_empty() {
                f.rel.as_str()
            } else {
                match f.rel.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) {
                    Some(r) => r,
                    None => continue,
                }
            };
            exists = true;
            match rest.split_once('/') {
                None => {
                    out.insert(rest.to_owned(), Child::File(f));
                }
                Some((sub, _)) => {
                    if !out.contains_key(sub) {
                        let rel = if dir.is_empty() {
                            sub.to_owned()
                        } else {
                            format!("{dir}/{sub}")
                        };
                        out.insert(
                            sub.to_owned(),
                            Child::Dir {
                                name: sub.to_owned(),
                                uri: file_uri(&self.name, &rel),
                            },
                        );
                    }
                }
            }
        }
        exists.then(|| out.into_values().collect())
    }

    /// The URI of a directory (`""` is the root).
    pub fn dir_uri(&self, dir: &str) -> String {
        if dir.is_empty() {
            self.root.clone()
        } else {
            file_uri(&self.name, dir)
        }
    }

    /// Build the manifest of a revision from its index entry alone: the store recorded every
    /// file's SHA-256 and size when the revision was written, and parsed the frontmatter when it
    /// loaded the index, so listing 1,000 skills reads no file.
    pub fn build(entry: &SkillEntry) -> Manifest {
        let frontmatter = (*entry.frontmatter).clone();
        // The spec types `name` and `description` as strings: a value the core schema reads as
        // something else (a name of digits) keeps its meaning as text there.
        let as_text = |key: &str, fallback: &str| match frontmatter.get(key) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => v.to_string(),
            _ => fallback.to_owned(),
        };
        let fm_name = as_text("name", &entry.name);
        let fm_description = as_text("description", &entry.meta.description);
        let mut files: Vec<ManifestFile> = entry
            .files
            .iter()
            .map(|f| {
                let is_md = f.path.eq_ignore_ascii_case(SKILL_MD);
                let rel = if is_md {
                    SKILL_MD.to_owned()
                } else {
                    f.path.clone()
                };
                ManifestFile {
                    uri: file_uri(&entry.name, &rel),
                    mime: if is_md {
                        Some(MARKDOWN)
                    } else {
                        known_mime(&rel)
                    },
                    rel,
                    path: f.path.clone(),
                    digest: f.digest.to_string(),
                    size: f.size,
                    skill_md: is_md,
                }
            })
            .collect();
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        Manifest {
            id: entry.id,
            rev: entry.active_rev,
            name: entry.name.clone(),
            uri: file_uri(&entry.name, SKILL_MD),
            root: format!("{SCHEME}{}", encode_segment(&entry.name)),
            frontmatter,
            fm_name,
            fm_description,
            files,
            digest: entry.digest.to_string(),
            signer: entry.signer.clone(),
        }
    }

    /// The `_meta` an MCP client gets with the skill (its `skills/list` entry and its SKILL.md
    /// resource): the revision, its content digest, and its signer when it was written signed
    /// (keys under `io.skillbase/`, as MCP reserves unprefixed keys).
    pub fn meta(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("io.skillbase/revision".into(), self.rev.into());
        m.insert("io.skillbase/digest".into(), self.digest.clone().into());
        if let Some(s) = &self.signer {
            m.insert("io.skillbase/signer".into(), s.clone().into());
        }
        m
    }
}

/// Bytes served as text: valid UTF-8 without NUL.
pub fn is_text(bytes: &[u8]) -> bool {
    !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
}

/// A MIME type from the file name; `text/plain` or `application/octet-stream` when unknown.
pub fn mime_for(path: &str, text: bool) -> &'static str {
    known_mime(path).unwrap_or(if text {
        "text/plain"
    } else {
        "application/octet-stream"
    })
}

/// The MIME type a file name says, if it says one.
pub fn known_mime(path: &str) -> Option<&'static str> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let ext = file
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    Some(match ext.as_str() {
        "md" | "markdown" => MARKDOWN,
        "txt" | "text" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "sh" => "application/x-sh",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "wasm" => "application/wasm",
        _ => return None,
    })
}

/// A `skill://` URI taken apart: the skill name and the path inside it (`""` for the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillUri {
    /// The skill's name: the URI's first segment, percent-decoded.
    pub name: String,
    /// The path inside the skill, percent-decoded (`""` for the root).
    pub path: String,
}

/// Parse `skill://<name>[/<path>]`. Refuses (with `None`) anything that is not exactly a name
/// and clean path segments: queries, fragments, empty segments (a trailing slash), `.` and `..`,
/// encoded slashes or backslashes, control characters.
pub fn parse_uri(uri: &str) -> Option<SkillUri> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.is_empty() || rest.contains(['?', '#', '\\']) {
        return None;
    }
    let mut segs = Vec::new();
    for raw in rest.split('/') {
        let seg = skillbase_format::uri::decode_segment(raw)?;
        if seg.is_empty()
            || seg == "."
            || seg == ".."
            || seg.contains(['/', '\\'])
            || seg.chars().any(char::is_control)
        {
            return None;
        }
        segs.push(seg);
    }
    let name = segs.remove(0);
    Some(SkillUri {
        name,
        path: segs.join("/"),
    })
}

type Key = (i64, i64);

/// Bundles kept for reads, evicted oldest first beyond a byte budget.
#[derive(Default)]
struct BundleCache {
    map: HashMap<Key, Arc<Bundle>>,
    order: VecDeque<Key>,
    bytes: u64,
}

impl BundleCache {
    fn insert(&mut self, key: Key, bundle: Arc<Bundle>) {
        let size = bundle.total_bytes();
        if size > BUNDLE_CACHE_MAX_ONE || self.map.contains_key(&key) {
            return;
        }
        while self.bytes + size > BUNDLE_CACHE_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(b) = self.map.remove(&old) {
                self.bytes -= b.total_bytes();
            }
        }
        self.bytes += size;
        self.map.insert(key, bundle);
        self.order.push_back(key);
    }
}

/// What one agent may see, for the skills methods: the records sorted by name and an index by
/// name. Built from the index and the agent alone (no token counts, no matchers), so listing
/// skills never waits for the tokenizer a turn needs.
#[derive(Debug)]
pub struct Visible {
    /// Index generation and agent version this was built for.
    key: (u64, i64, u64),
    /// The visible records, sorted by name.
    pub entries: Vec<Arc<SkillEntry>>,
    /// Each name's position in `entries`.
    pub by_name: HashMap<String, usize>,
}

impl Visible {
    /// The visible record named `name`, if the agent may see it.
    pub fn get(&self, name: &str) -> Option<&Arc<SkillEntry>> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }
}

/// Manifests by `(skill id, revision)`, recently read bundles, and each agent's visible set.
#[derive(Default)]
pub struct ManifestCache {
    manifests: Mutex<HashMap<Key, Arc<Manifest>>>,
    bundles: Mutex<BundleCache>,
    visible: Mutex<HashMap<AgentName, Arc<Visible>>>,
}

impl ManifestCache {
    /// The skills `agent`'s model may be offered (`None` for an unknown agent): visible, not
    /// withheld, not explicit only; rebuilt when the index or the agent changes.
    pub fn visible(
        &self,
        store: &Store,
        engine: &skillbase_runtime::Engine,
        agent: &AgentName,
    ) -> Option<Arc<Visible>> {
        let a = store.agent_cached(agent)?;
        let index = store.index();
        let (env, tools) = engine.environment();
        let key = (index.generation, a.version, tools);
        let mut m = self.visible.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = m.get(agent)
            && v.key == key
        {
            return Some(v.clone());
        }
        // A skill only the user may invoke (`disable-model-invocation`) is no listing's.
        let entries = skillbase_runtime::offered_in(&a, &index, &env);
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        let v = Arc::new(Visible {
            key,
            entries,
            by_name,
        });
        m.insert(agent.clone(), v.clone());
        Some(v)
    }

    /// The manifest of the entry's active revision, built on first use (from the index: no
    /// file is read).
    pub fn manifest(&self, store: &Store, entry: &SkillEntry) -> Arc<Manifest> {
        let key = (entry.id, entry.active_rev);
        let mut m = self.manifests.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = m.get(&key) {
            return c.clone();
        }
        if m.len() > 256 && m.len() > 2 * store.index().len() {
            // Drop revisions no longer active.
            let live: HashSet<Key> = store.index().all().map(|e| (e.id, e.active_rev)).collect();
            m.retain(|k, _| live.contains(k));
        }
        let built = Arc::new(Manifest::build(entry));
        m.insert(key, built.clone());
        built
    }

    /// The bytes of one file of the entry's active revision (by bundle path).
    pub async fn bytes(
        &self,
        store: &Store,
        entry: &SkillEntry,
        path: &str,
    ) -> Result<Option<Arc<[u8]>>, StoreError> {
        let bundle = self.bundle(store, entry).await?;
        Ok(bundle.get(path).map(|f| f.bytes.clone()))
    }

    /// Number of manifests held (built or being built).
    pub fn len(&self) -> usize {
        self.manifests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Whether no manifest is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    async fn bundle(&self, store: &Store, entry: &SkillEntry) -> Result<Arc<Bundle>, StoreError> {
        let key = (entry.id, entry.active_rev);
        if let Some(b) = self
            .bundles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map
            .get(&key)
        {
            return Ok(b.clone());
        }
        let (_, bundle) = store
            .bundle(&entry.scope, &entry.name, Some(entry.active_rev))
            .await?;
        let bundle = Arc::new(bundle);
        self.bundles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, bundle.clone());
        Ok(bundle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_refuse_tricks() {
        assert_eq!(file_uri("pdf", "SKILL.md"), "skill://pdf/SKILL.md");
        assert_eq!(file_uri("pdf", "a b/ü.txt"), "skill://pdf/a%20b/%C3%BC.txt");
        let u = parse_uri("skill://pdf/a%20b/%C3%BC.txt").unwrap();
        assert_eq!(u.name, "pdf");
        assert_eq!(u.path, "a b/ü.txt");
        assert_eq!(parse_uri("skill://pdf").unwrap().path, "");
        for bad in [
            "skill://",
            "skill://pdf/",
            "skill://pdf/../other/SKILL.md",
            "skill://pdf/a/%2E%2E/SKILL.md",
            "skill://pdf/a%2Fb",
            "skill://pdf/a%5Cb",
            "skill://pdf/SKILL.md?x",
            "skill://pdf/SKILL.md#x",
            "skill://pdf//SKILL.md",
            "skill://pdf/%zz",
            "skill://pdf/%FF",
            "skill://pdf/./SKILL.md",
            "file:///etc/passwd",
        ] {
            assert_eq!(parse_uri(bad), None, "{bad}");
        }
    }

    #[test]
    fn text_detection_and_mime_types() {
        assert!(is_text(b"hello\n"));
        assert!(!is_text(b"a\0b"));
        assert!(!is_text(&[0xff, 0xfe]));
        assert_eq!(mime_for("x/logo.PNG", false), "image/png");
        assert_eq!(mime_for("notes", true), "text/plain");
        assert_eq!(mime_for("blob.bin", false), "application/octet-stream");
        assert_eq!(mime_for("ref/GUIDE.md", true), MARKDOWN);
    }
}
