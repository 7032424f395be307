//! The MCP Skills extension (`io.modelcontextprotocol/skills`, with `directoryRead`) over
//! exactly the skills the agent's view holds: `skills/list`, `skills/get`, `resources/list`
//! (each SKILL.md), `resources/read` and `resources/directory/read`, paged by name.
//!
//! Anything else (unknown, another agent's private skill, a path with `..`) is the same
//! `-32602` naming only the URI asked for. The manifests and `skill://` URIs are
//! `crate::skills_ext`'s; this module turns them into rmcp's result types.

use super::errors::{no_directory, no_resource, no_skill, runtime_error, store_error};
use crate::skills_ext::{self, Child, Manifest, ManifestFile, Visible};
use crate::state::AppState;
use base64::Engine;
use rmcp::model::{
    Cursor, ErrorData, GetSkillRequestParams, GetSkillResult, ListResourcesResult,
    ListSkillsResult, MetaObject, PaginatedRequestParams, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Skill, SkillFrontmatter, SkillResource,
    SkillResources,
};
use skillbase_runtime::RuntimeError;
use skillbase_store::{AgentName, SkillEntry};
use std::sync::Arc;

/// A visible skill a `skill://` URI names: its record, its manifest and the path inside it.
type Resolved = (Arc<SkillEntry>, Arc<Manifest>, String);

/// A page cursor: the last name of the previous page, opaque to clients.
fn encode_cursor(after: &str) -> Cursor {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(after.as_bytes())
}

fn decode_cursor(cursor: Option<&str>) -> Result<Option<String>, ErrorData> {
    let Some(c) = cursor else { return Ok(None) };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map(Some)
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("invalid cursor '{c}': pass back a nextCursor exactly"),
                None,
            )
        })
}

/// One page of items sorted by name: those after the cursor, and the next cursor.
fn page<'a, T>(
    items: &'a [T],
    name: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    size: usize,
) -> Result<(&'a [T], Option<Cursor>), ErrorData> {
    let after = decode_cursor(cursor)?;
    let start = match &after {
        Some(a) => items.partition_point(|i| name(i) <= a.as_str()),
        None => 0,
    };
    let end = (start + size.max(1)).min(items.len());
    let slice = &items[start..end];
    let next = (end < items.len())
        .then(|| slice.last().map(|l| encode_cursor(name(l))))
        .flatten();
    Ok((slice, next))
}

fn to_skill(m: &Manifest) -> Skill {
    let mut fm = SkillFrontmatter::new(m.fm_name.clone(), m.fm_description.clone());
    for (k, v) in &m.frontmatter {
        if k != "name" && k != "description" {
            fm.extra.insert(k.clone(), v.clone());
        }
    }
    Skill::new(
        m.uri.clone(),
        fm,
        SkillResources::Files(
            m.files
                .iter()
                .map(|f| SkillResource::new(f.uri.clone(), f.digest.clone(), f.size))
                .collect(),
        ),
    )
    .with_meta(MetaObject(m.meta()))
}

fn file_resource(f: &ManifestFile, name: &str) -> Resource {
    let r = Resource::new(f.uri.clone(), name).with_size(f.size);
    // A name that says nothing of the type leaves it to `resources/read`, which sees the bytes.
    match f.mime {
        Some(m) => r.with_mime_type(m),
        None => r,
    }
}

/// The skills the agent may see (the skills methods need no turn view).
fn visible(state: &AppState, agent: &AgentName) -> Result<Arc<Visible>, ErrorData> {
    state
        .skills
        .visible(&state.store, &state.engine, agent)
        .ok_or_else(|| runtime_error(RuntimeError::UnknownAgent(agent.to_string())))
}

/// The manifests of one page of the agent's visible skills, and the next page's cursor.
fn page_of_manifests(
    state: &AppState,
    agent: &AgentName,
    request: Option<&PaginatedRequestParams>,
) -> Result<(Vec<Arc<Manifest>>, Option<Cursor>), ErrorData> {
    let visible = visible(state, agent)?;
    let cursor = request.and_then(|r| r.cursor.as_deref());
    let size = state.options.limits.page_size;
    let (slice, next) = page(&visible.entries, |e| &e.name, cursor, size)?;
    let manifests = slice
        .iter()
        .map(|e| state.skills.manifest(&state.store, e))
        .collect();
    Ok((manifests, next))
}

/// The visible skill a `skill://` URI names, with its manifest and the path inside it.
fn resolve(state: &AppState, agent: &AgentName, uri: &str) -> Option<Result<Resolved, ErrorData>> {
    let parsed = skills_ext::parse_uri(uri)?;
    let visible = match visible(state, agent) {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    let entry = visible.get(&parsed.name)?.clone();
    let m = state.skills.manifest(&state.store, &entry);
    Some(Ok((entry, m, parsed.path)))
}

/// `skills/list`: one page of the agent's visible skills.
pub(super) fn list_skills(
    state: &AppState,
    agent: &AgentName,
    request: Option<&PaginatedRequestParams>,
) -> Result<ListSkillsResult, ErrorData> {
    let (manifests, next) = page_of_manifests(state, agent, request)?;
    let skills = manifests.iter().map(|m| to_skill(m)).collect();
    let mut result = ListSkillsResult::with_all_items(skills);
    result.next_cursor = next;
    Ok(result)
}

/// `skills/get`: the skill a SKILL.md URI names.
pub(super) fn get_skill(
    state: &AppState,
    agent: &AgentName,
    request: &GetSkillRequestParams,
) -> Result<GetSkillResult, ErrorData> {
    let uri = request.uri.as_str();
    let (_, m, _) = resolve(state, agent, uri).ok_or_else(|| no_skill(uri))??;
    // Only the canonical SKILL.md URI names the skill (the result must echo it).
    if m.uri != uri {
        return Err(no_skill(uri));
    }
    Ok(GetSkillResult::new(to_skill(&m)))
}

/// `resources/list`: each visible skill's SKILL.md, one page.
pub(super) fn list_resources(
    state: &AppState,
    agent: &AgentName,
    request: Option<&PaginatedRequestParams>,
) -> Result<ListResourcesResult, ErrorData> {
    let (manifests, next) = page_of_manifests(state, agent, request)?;
    let resources = manifests
        .iter()
        .map(|m| {
            let md = m.skill_md();
            Resource::new(md.uri.clone(), m.fm_name.clone())
                .with_description(m.fm_description.clone())
                .with_mime_type(skills_ext::MARKDOWN)
                .with_size(md.size)
                .with_meta(MetaObject(m.meta()))
        })
        .collect();
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = next;
    Ok(result)
}

/// `resources/read`: one file of a visible skill, as text or Base64.
pub(super) async fn read_resource(
    state: &AppState,
    agent: &AgentName,
    request: &ReadResourceRequestParams,
) -> Result<ReadResourceResponse, ErrorData> {
    let uri = request.uri.as_str();
    let (entry, m, path) = resolve(state, agent, uri).ok_or_else(|| no_resource(uri))??;
    let file = m.file(&path).ok_or_else(|| no_resource(uri))?;
    let bytes = state
        .skills
        .bytes(&state.store, &entry, &file.path)
        .await
        .map_err(store_error)?
        .ok_or_else(|| no_resource(uri))?;
    let (text, mime) = file.served_as(&bytes);
    let contents = if text {
        ResourceContents::text(String::from_utf8_lossy(&bytes), file.uri.clone())
    } else {
        ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(&bytes),
            file.uri.clone(),
        )
    }
    .with_mime_type(mime);
    Ok(ReadResourceResult::new(vec![contents]).into())
}

/// `resources/directory/read`: one page of a directory of a visible skill.
pub(super) fn read_directory(
    state: &AppState,
    agent: &AgentName,
    request: &ReadResourceDirectoryRequestParams,
) -> Result<ReadResourceDirectoryResult, ErrorData> {
    let uri = request.uri.as_str();
    let (_, m, path) = resolve(state, agent, uri).ok_or_else(|| no_directory(uri))??;
    if m.dir_uri(&path) != uri {
        return Err(no_directory(uri));
    }
    let children = m.children(&path).ok_or_else(|| no_directory(uri))?;
    let size = state.options.limits.page_size;
    let (slice, next) = page(&children, |c| c.name(), request.cursor.as_deref(), size)?;
    let resources = slice
        .iter()
        .map(|c| match c {
            Child::File(f) => file_resource(f, c.name()),
            Child::Dir { name, uri } => {
                Resource::new(uri.clone(), name.clone()).with_mime_type(skills_ext::DIRECTORY)
            }
        })
        .collect();
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = next;
    Ok(result)
}
