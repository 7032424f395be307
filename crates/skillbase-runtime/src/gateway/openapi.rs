//! The schemas of an upstream server's configuration (the `openapi` feature): the body of
//! `PUT /v1/mcp-servers/{name}` as [`McpServerConfig::from_json`] reads it — a stdio server or
//! a streamable HTTP one, each with exactly its keys and no `null` anywhere — and a configured
//! [`Value`]. Written out, as both are read by hand.

use super::mcp::McpToolOverride;
use super::{McpServerConfig, Value};
use crate::tool::Permission;
use skillbase_format::Cost;
use skillbase_format::openapi::{text, tool_class};
use skillbase_format::validate::VAULT_NAME_PATTERN;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, Object, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// Text as a configured value holds it: no NUL or line breaks.
const VALUE_TEXT_PATTERN: &str = r"^[^\u0000\r\n]*$";

impl PartialSchema for Value {
    fn schema() -> RefOr<Schema> {
        let literal = text(VALUE_TEXT_PATTERN, "Literal text.");
        OneOfBuilder::new()
            .description(Some(
                "Literal text (no NUL or line breaks), or a vault entry whose value is used \
                 (resolved into the upstream connection only, never shown), after an optional \
                 prefix such as `Bearer `.",
            ))
            .item(literal.clone())
            .item(
                closed()
                    .property("vault", text(VAULT_NAME_PATTERN, "The vault entry."))
                    .required("vault")
                    .property("prefix", literal),
            )
            .into()
    }
}

impl ToSchema for Value {
    fn name() -> std::borrow::Cow<'static, str> {
        "ConfiguredValue".into()
    }
}

/// An object with no keys but those given.
fn closed() -> ObjectBuilder {
    ObjectBuilder::new().additional_properties(Some(AdditionalProperties::FreeForm(false)))
}

/// An object whose values are `value` and whose keys match `names`.
fn map(names: &str, value: impl Into<RefOr<Schema>>) -> Object {
    ObjectBuilder::new()
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(names)),
        ))
        .additional_properties(Some(AdditionalProperties::RefOr(value.into())))
        .build()
}

/// The keys both kinds of server take, then `own`.
fn server(title: &str, required: &str, own: Vec<(&str, RefOr<Schema>)>) -> Object {
    let mut o = closed()
        .title(Some(title))
        .schema_type(Type::Object)
        .required(required)
        .property("class", tool_class())
        .property(
            "permissions",
            ArrayBuilder::new().items(Ref::from_schema_name(Permission::name())),
        )
        .property("cost", Ref::from_schema_name(Cost::name()))
        .property(
            "tools",
            ObjectBuilder::new()
                .description(Some("Overrides by upstream tool name."))
                .additional_properties(Some(AdditionalProperties::RefOr(
                    Ref::from_schema_name(McpToolOverride::name()).into(),
                ))),
        )
        .property(
            "exclude",
            ArrayBuilder::new()
                .items(ObjectBuilder::new().schema_type(Type::String))
                .description(Some("Upstream tools never offered.")),
        );
    for (key, schema) in own {
        o = o.property(key, schema);
    }
    o.build()
}

impl PartialSchema for McpServerConfig {
    fn schema() -> RefOr<Schema> {
        let value: RefOr<Schema> = Ref::from_schema_name(Value::name()).into();
        let stdio = server(
            "stdio",
            "command",
            vec![
                (
                    "command",
                    text(
                        r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$",
                        "The program: not blank, no control characters.",
                    )
                    .into(),
                ),
                (
                    "args",
                    ArrayBuilder::new()
                        .items(text(r"^[^\u0000]*$", "An argument (no NUL)."))
                        .into(),
                ),
                ("env", map(r"^[^=\u0000]+$", value.clone()).into()),
                (
                    "cwd",
                    text(r"^/[^\u0000]*$", "An absolute path.").into(),
                ),
            ],
        );
        let http = server(
            "streamable HTTP",
            "url",
            vec![
                (
                    "url",
                    text(
                        r"^[Hh][Tt][Tt][Pp]([Ss])?://[^\u0000-\u0020\u007f]+$",
                        "An http:// or https:// URL with a host.",
                    )
                    .into(),
                ),
                (
                    "headers",
                    map(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", value).into(),
                ),
            ],
        );
        OneOfBuilder::new()
            .description(Some(
                "An upstream MCP server: the `[mcp_servers.<name>]` table of skillbase.toml as \
                 JSON. A stdio server (`command`) runs a program on the host: allowed through \
                 the API only for programs `[gateway] api_commands` lists (403 otherwise).",
            ))
            .item(stdio)
            .item(http)
            .into()
    }
}

impl ToSchema for McpServerConfig {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.extend([
            (Value::name().into(), Value::schema()),
            (Permission::name().into(), Permission::schema()),
            (Cost::name().into(), Cost::schema()),
            (McpToolOverride::name().into(), McpToolOverride::schema()),
        ]);
        McpToolOverride::schemas(schemas);
    }
}
