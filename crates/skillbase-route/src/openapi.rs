//! The agent's nouns as OpenAPI schemas (the `openapi` feature), for the types whose JSON their
//! own `Serialize`/`Deserialize` write by hand: agent names and scopes (with the patterns their
//! parsers are held to), skill sets, prompts and a stored agent. The rest derive theirs.

use crate::agent::{
    AGENT_NAME_PATTERN, Agent, AgentConfig, AgentName, MAX_PROMPT_CHARS, MAX_PROMPT_PATH_CHARS,
    NameSet, Prompt, SCOPE_PATTERN, Scope,
};
use skillbase_format::SkillName;
use skillbase_format::openapi::text;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, Object, ObjectBuilder, OneOfBuilder, Schema,
    SchemaFormat, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// Schemas named by others, as `ToSchema::schemas` lists them.
type Named = Vec<(String, RefOr<Schema>)>;

impl PartialSchema for AgentName {
    fn schema() -> RefOr<Schema> {
        text(
            AGENT_NAME_PATTERN,
            "An agent's name: 1-64 lowercase letters, digits, `-` and `_`, not starting with `-` \
             or `_`.",
        )
        .into()
    }
}

impl ToSchema for AgentName {}

impl PartialSchema for Scope {
    fn schema() -> RefOr<Schema> {
        text(
            SCOPE_PATTERN,
            "`shared`, or `agent:<name>`: one agent's own.",
        )
        .into()
    }
}

impl ToSchema for Scope {}

impl PartialSchema for NameSet {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .description(Some(
                "A set of skills: \"all\" (or `true`), \"none\" (or `false`), or a list of names.",
            ))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["all", "none"])),
            )
            .item(ObjectBuilder::new().schema_type(Type::Boolean))
            .item(ArrayBuilder::new().items(Ref::from_schema_name(SkillName::name())))
            .into()
    }
}

impl ToSchema for NameSet {
    fn name() -> std::borrow::Cow<'static, str> {
        "SkillSet".into()
    }

    fn schemas(schemas: &mut Named) {
        schemas.push((SkillName::name().into(), SkillName::schema()));
    }
}

/// A prompt's path: [`MAX_PROMPT_PATH_CHARS`] characters at most, no control characters.
fn prompt_path() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(
            "A prompt file's path, no control characters (relative paths in `skillbase.toml` are \
             read from its folder; elsewhere from the server's working folder).",
        ))
        .min_length(Some(1))
        .max_length(Some(MAX_PROMPT_PATH_CHARS))
        .pattern(Some(r"^[^\u0000-\u001f\u007f-\u009f]*$"))
        .build()
}

/// A table of one key, `key`, holding `value`.
fn table(key: &str, value: impl Into<RefOr<Schema>>, description: &str) -> Object {
    ObjectBuilder::new()
        .description(Some(description))
        .property(key, value)
        .required(key)
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .build()
}

impl PartialSchema for Prompt {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .description(Some(
                "One of the harness's own instructions to the agent, read by the doctor for the \
                 skills it names: a path (a bare string, or `{\"path\": ...}`), or the text itself \
                 (`{\"text\": ...}`). Shown as `{\"path\": ...}` or `{\"text\": ...}`.",
            ))
            .item(Ref::from_schema_name("PromptPath"))
            .item(Ref::from_schema_name("PromptFile"))
            .item(Ref::from_schema_name("PromptText"))
            .into()
    }
}

impl ToSchema for Prompt {
    fn schemas(schemas: &mut Named) {
        let text = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX_PROMPT_CHARS));
        schemas.extend([
            ("PromptPath".to_owned(), prompt_path().into()),
            (
                "PromptFile".to_owned(),
                table(
                    "path",
                    Ref::from_schema_name("PromptPath"),
                    "A prompt held in a file.",
                )
                .into(),
            ),
            (
                "PromptText".to_owned(),
                table("text", text, "A prompt written inline.").into(),
            ),
        ]);
    }
}

/// A stored agent: its name, its configuration's fields (every one present, `prompts` only when
/// it lists some) and its version. Written out rather than derived: the configuration is
/// flattened into it, and its own schema refuses any other key.
impl PartialSchema for Agent {
    fn schema() -> RefOr<Schema> {
        let mut agent = ObjectBuilder::new()
            .description(Some("A stored agent: its name, configuration and version."))
            .property("name", Ref::from_schema_name(AgentName::name()))
            .required("name");
        if let RefOr::T(Schema::Object(config)) = AgentConfig::schema() {
            for (key, schema) in config.properties {
                if key != "prompts" {
                    agent = agent.required(&key);
                }
                agent = agent.property(key, schema);
            }
        }
        agent
            .property(
                "version",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .description(Some("Bumped on every change (the ETag).")),
            )
            .required("version")
            .into()
    }
}

impl ToSchema for Agent {
    fn schemas(schemas: &mut Named) {
        schemas.push((AgentName::name().into(), AgentName::schema()));
        schemas.push((AgentConfig::name().into(), AgentConfig::schema()));
        AgentConfig::schemas(schemas);
    }
}
