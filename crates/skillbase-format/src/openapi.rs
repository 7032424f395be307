//! The format's names as OpenAPI schemas (the `openapi` feature), built from the same pattern
//! constants the checks are held to: a skill name ([`SkillName`]'s own schema), tool classes,
//! vault entries, hosts and MCP server names (for fields that hold them as text).

use crate::grammar::{HOST_PATTERN, SERVER_NAME_PATTERN, TOOL_CLASS_PATTERN, VAULT_NAME_PATTERN};
use crate::name::{MAX_NAME_CHARS, SkillName, canonical_name_pattern};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Array, ArrayBuilder, Object, ObjectBuilder, Schema, Type};

/// A string matching `pattern`, described.
pub fn text(pattern: &str, description: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .description(Some(description))
        .build()
}

/// A tool class ([`crate::validate::check_tool_class`]).
pub fn tool_class() -> Object {
    text(
        TOOL_CLASS_PATTERN,
        "A tool class: 1-64 lowercase letters, digits, `_` and `-`.",
    )
}

/// A vault entry's name ([`crate::validate::check_vault_name`]).
pub fn vault_name() -> Object {
    text(
        VAULT_NAME_PATTERN,
        "A vault entry name: 1-128 letters, digits, `_`, `-` and `.`.",
    )
}

/// A destination host ([`crate::validate::check_host`]).
pub fn host() -> Object {
    text(
        HOST_PATTERN,
        "A destination host: a DNS name or IPv4 address, or an IPv6 address in brackets (hex \
         groups), optionally `:port` (1-65535); `*.` before a DNS name allows its subdomains.",
    )
}

/// An upstream MCP server's name ([`crate::validate::check_server_name`]).
pub fn server_name() -> Object {
    text(
        SERVER_NAME_PATTERN,
        "1-32 lowercase letters, digits, `_` and `-`, starting with a letter or digit.",
    )
}

/// A list of `item`.
pub fn list(item: Object) -> Array {
    ArrayBuilder::new().items(item).build()
}

/// Tool classes (a grant's `tools`).
pub fn tool_classes() -> Array {
    list(tool_class())
}

/// Vault entry names (a grant's `vault`).
pub fn vault_names() -> Array {
    list(vault_name())
}

/// Hosts (a grant's `hosts`).
pub fn hosts() -> Array {
    list(host())
}

/// A skill name as written where a skill is named: already canonical
/// ([`SkillName::parse_canonical`]).
impl utoipa::PartialSchema for SkillName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "A skill name as written where a skill is named: 1-64 lowercase letters (any \
                 script) and digits in words joined by single hyphens, already in its canonical \
                 form (what NFKC, trimming and lowercasing leave unchanged).",
            ))
            .min_length(Some(1))
            .max_length(Some(MAX_NAME_CHARS))
            .pattern(Some(canonical_name_pattern()))
            .into()
    }
}

impl utoipa::ToSchema for SkillName {}
