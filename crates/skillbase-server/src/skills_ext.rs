//! Skill manifests for the MCP Skills extension: `skill://` URIs, SHA-256 digests and the
//! frontmatter as JSON, cached per revision.

#[derive(Default)]
pub struct ManifestCache {}
