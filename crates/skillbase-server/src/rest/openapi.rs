//! The OpenAPI document's post-processing: what utoipa's annotations and derives cannot say,
//! added to the generated document ([`Finish`] on the typed document, [`finish_json`] on its
//! JSON). A leaf of `rest`: it reads the handler modules' constants, never `rest` itself.

use super::agents;
use axum::http::StatusCode;
use serde_json::{Map, Value, json};

/// Completes the generated document: unique operation ids, a description for every response
/// (OpenAPI requires one; the status's reason when the handler gives none), the bearer scheme.
pub(super) struct Finish;

impl utoipa::Modify for Finish {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        for item in api.paths.paths.values_mut() {
            let ops = [
                (&mut item.get, false),
                (&mut item.put, true),
                (&mut item.post, true),
                (&mut item.delete, true),
                (&mut item.patch, true),
            ];
            for (op, writes) in ops {
                let Some(op) = op else { continue };
                // Handler names repeat across modules (`list`, `create`): prefix the tag.
                if let (Some(tag), Some(id)) = (
                    op.tags.as_ref().and_then(|t| t.first()),
                    op.operation_id.as_ref(),
                ) {
                    op.operation_id = Some(format!("{tag}_{id}"));
                }
                add_shared_statuses(op, writes);
                for (code, r) in op.responses.responses.iter_mut() {
                    if let RefOr::T(r) = r
                        && r.description.is_empty()
                    {
                        r.description = code
                            .parse::<u16>()
                            .ok()
                            .and_then(|c| StatusCode::from_u16(c).ok())
                            .and_then(|c| c.canonical_reason())
                            .unwrap_or("Response")
                            .to_owned();
                    }
                }
            }
        }
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An admin token, or a token bound to one agent (`skillbase token create`)",
                    ))
                    .build(),
            ),
        );
    }
}

/// The statuses the layers every route shares can answer, added to each operation that lacks
/// them (a handler's own description wins): 401 from authentication, 400 from the path, query,
/// header and body extractors, 404 for a path naming something, 413/415 for a body, 500 when
/// the server fails, 503 when a request times out or the store is unavailable (or read-only),
/// and 507 on every operation but GET when the store's disk is full (`error::storage_fault`).
/// Each is a problem+json body.
fn add_shared_statuses(op: &mut utoipa::openapi::path::Operation, writes: bool) {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::path::ParameterIn;
    let params: Vec<_> = op
        .parameters
        .iter()
        .flatten()
        .filter_map(|p| match p {
            RefOr::T(p) => Some(p),
            RefOr::Ref(_) => None,
        })
        .collect();
    let in_path = params
        .iter()
        .any(|p| matches!(p.parameter_in, ParameterIn::Path));
    let validated = !params.is_empty();
    let body = op.request_body.is_some();
    let mut shared: Vec<(&str, &str)> = vec![(
        "401",
        "No bearer token, or one that is unknown, expired or revoked",
    )];
    if validated || body {
        shared.push((
            "400",
            "Malformed request: a path, query, header or body value the route cannot read",
        ));
    }
    if in_path {
        shared.push((
            "404",
            "No such thing, or one this token may not see (answered alike)",
        ));
    }
    if body {
        shared.push(("413", "The body is over this route's size limit"));
        shared.push(("415", "The body's Content-Type is not one this route reads"));
    }
    shared.push(("500", "The server failed; the detail is in its log"));
    shared.push((
        "503",
        "The request timed out, or the store is unavailable (an I/O error, a lost database, a \
         read-only store); retry later",
    ));
    if writes {
        shared.push((
            "507",
            "The store's disk is full; nothing was written, retry once space is freed",
        ));
    }
    for (code, description) in shared {
        op.responses
            .responses
            .entry(code.to_owned())
            .or_insert_with(|| problem_response(description));
    }
}

/// A response answered as `application/problem+json` with the [`Problem`](crate::error::Problem)
/// schema.
fn problem_response(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/problem+json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
        .into()
}

/// A request or response body's `application/zip` content described as `schema`.
fn zip_is_binary(body: &mut Value, schema: &Value) {
    if let Some(content) = body.pointer_mut("/content/application~1zip") {
        content["schema"] = schema.clone();
    }
}

/// The schemas of upstream MCP servers, written out: a configuration is a stdio server or a
/// streamable HTTP one (each with exactly its keys, no `null` anywhere), and a server's state as
/// the tools listing and `/v1/mcp-servers` show it.
fn mcp_server_schemas(doc: &mut Value) {
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let text = json!({"type": "string", "pattern": "^[^\\u0000\\r\\n]*$"});
    schemas.insert(
        "ConfiguredValue".into(),
        json!({
            "description": "Literal text (no NUL or line breaks), or a vault entry whose value is used (resolved into the upstream connection only, never shown), after an optional prefix such as `Bearer `.",
            "oneOf": [
                text,
                {"type": "object", "required": ["vault"], "additionalProperties": false,
                 "properties": {
                     "vault": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}$"},
                     "prefix": text}}
            ]
        }),
    );
    let value = json!({"$ref": "#/components/schemas/ConfiguredValue"});
    let class = json!({"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"});
    let permissions = json!({"type": "array", "items": {"type": "string", "enum": ["network", "filesystem", "none"]}});
    let cost = json!({"type": "string", "enum": ["immediate", "seconds", "tens_of_seconds"]});
    let common = json!({
        "class": class,
        "permissions": permissions,
        "cost": cost,
        "tools": {"type": "object", "description": "Overrides by upstream tool name.",
                  "additionalProperties": {"type": "object", "additionalProperties": false, "properties": {
                      "class": class, "permissions": permissions, "cost": cost,
                      "description": {"type": "string", "minLength": 1, "maxLength": 4096, "pattern": "[^\\s\\u0000-\\u001f\\u007f-\\u009f]"}}}},
        "exclude": {"type": "array", "items": {"type": "string"}, "description": "Upstream tools never offered."}
    });
    let with = |own: Value| {
        let mut p = common.clone();
        for (k, v) in own.as_object().into_iter().flatten() {
            p[k] = v.clone();
        }
        p
    };
    let no_nul = json!({"type": "string", "pattern": "^[^\\u0000]*$"});
    schemas.insert(
        "McpServerConfig".into(),
        json!({
            "description": "An upstream MCP server: the `[mcp_servers.<name>]` table of skillbase.toml as JSON. A stdio server (`command`) runs a program on the host: allowed through the API only for programs `[gateway] api_commands` lists (403 otherwise).",
            "oneOf": [
                {"title": "stdio", "type": "object", "required": ["command"], "additionalProperties": false,
                 "properties": with(json!({
                     "command": {"type": "string", "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"},
                     "args": {"type": "array", "items": no_nul},
                     "env": {"type": "object", "propertyNames": {"pattern": "^[^=\\u0000]+$"}, "additionalProperties": value},
                     "cwd": {"type": "string", "pattern": "^/[^\\u0000]*$", "description": "An absolute path."}
                 }))},
                {"title": "streamable HTTP", "type": "object", "required": ["url"], "additionalProperties": false,
                 "properties": with(json!({
                     "url": {"type": "string", "pattern": "^[Hh][Tt][Tt][Pp]([Ss])?://[^\\u0000-\\u0020\\u007f]+$"},
                     "headers": {"type": "object", "propertyNames": {"pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"}, "additionalProperties": value}
                 }))}
            ]
        }),
    );
    let status = json!({
        "name": {"type": "string"},
        "transport": {"type": "string", "enum": ["stdio", "http"]},
        "state": {"type": "string", "enum": ["connecting", "connected", "down"]},
        "reason": {"type": "string", "description": "Why it is down, or the last connection problem."},
        "server_info": {"type": "string"},
        "protocol": {"type": "string"},
        "pid": {"type": "integer", "minimum": 0},
        "tools": {"type": "integer", "minimum": 0},
        "skipped": {"type": "array", "items": {"type": "string"}},
        "connections": {"type": "integer", "minimum": 0}
    });
    let required = json!(["name", "transport", "state", "tools", "connections"]);
    schemas.insert(
        "UpstreamServer".into(),
        json!({"type": "object", "required": required, "properties": status}),
    );
    let mut entry = status.clone();
    entry["origin"] = json!({"type": "string", "enum": ["file", "api"]});
    entry["config"] = json!({"$ref": "#/components/schemas/McpServerConfig"});
    entry["updated_at"] = json!({"type": "integer"});
    entry["updated_by"] = json!({"type": "string"});
    let mut required_entry = required.clone();
    if let Some(r) = required_entry.as_array_mut() {
        r.push(json!("origin"));
    }
    schemas.insert(
        "McpServer".into(),
        json!({"type": "object", "required": required_entry, "properties": entry}),
    );
}

/// A chat transcript (the OpenAI chat format, as `POST /v1/sessions/{id}/transcript` reads it).
fn transcript_schemas(doc: &mut Value) {
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let string = json!({"type": "string"});
    schemas.insert(
        "Transcript".into(),
        json!({
            "type": "object", "required": ["messages"], "additionalProperties": false,
            "properties": {"messages": {"type": "array", "minItems": 1, "maxItems": 2000, "items": {
                "type": "object", "required": ["role"], "additionalProperties": false,
                "properties": {
                    "role": {"type": "string", "enum": ["system", "user", "assistant", "tool"]},
                    "content": {"anyOf": [
                        {"type": "string"}, {"type": "null"},
                        {"type": "array", "items": {"type": "object", "required": ["type", "text"],
                            "additionalProperties": false,
                            "properties": {"type": string, "text": string}}}]},
                    "tool_calls": {"anyOf": [{"type": "null"}, {"type": "array", "items": {
                        "type": "object", "required": ["id", "type", "function"], "additionalProperties": false,
                        "properties": {"id": string, "type": string, "function": {
                            "type": "object", "required": ["name", "arguments"], "additionalProperties": false,
                            "properties": {"name": string, "arguments": string}}}}}]},
                    "tool_call_id": {"type": ["string", "null"]},
                    "name": {"type": ["string", "null"]}
                }}}}
        }),
    );
    schemas.insert(
        "Imported".into(),
        json!({"type": "object", "required": ["messages", "calls"], "properties": {
            "messages": {"type": "integer", "minimum": 0}, "calls": {"type": "integer", "minimum": 0}}}),
    );
}

/// What the annotations cannot say, said on the JSON: an `Option<T>` request body is a body that
/// may be left out (never a `null` body, which the routes refuse), and a zip is a binary string
/// (not an array of integers).
pub(super) fn finish_json(doc: &mut Value) {
    finish_components(doc);
    add_links(doc);
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(Value::as_object_mut)
    {
        optional_body(op);
        header_grammars(op);
        zip_bodies(op);
        event_stream_schemas(op);
    }
}

/// An operation's `Option<T>` request body (a `oneOf` of the schema and `null`) as a body that
/// may be left out: the schema alone, and `required: false`.
fn optional_body(op: &mut Map<String, Value>) {
    let Some(body) = op.get_mut("requestBody").and_then(Value::as_object_mut) else {
        return;
    };
    let mut optional = false;
    for content in body
        .get_mut("content")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|c| c.values_mut())
    {
        let Some(schema) = content.get_mut("schema") else {
            continue;
        };
        if let Some([some, none]) = schema
            .get("oneOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            && none == &json!({"type": "null"})
        {
            *schema = some.clone();
            optional = true;
        }
    }
    if optional {
        body.insert("required".into(), Value::Bool(false));
    }
}

/// An operation's header parameters: headers are never `null`, and the ones the routes read have
/// a grammar.
fn header_grammars(op: &mut Map<String, Value>) {
    for param in op
        .get_mut("parameters")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if param.get("in").and_then(Value::as_str) != Some("header") {
            continue;
        }
        let pattern = match param.get("name").and_then(Value::as_str) {
            Some("if-match") => Some(r#"^(\*|(W/)?"?[0-9]{1,18}"?)$"#),
            Some("if-none-match") => Some(r"^\*$"),
            Some("last-event-id") => Some(r"^[0-9]{1,18}$"),
            // A header carries visible ASCII: a session id without spaces or slashes.
            Some("skillbase-session") => Some(r"^[!-.0-\[\]-~]{1,128}$"),
            _ => None,
        };
        let mut schema = json!({"type": "string"});
        if param.get("name").and_then(Value::as_str) == Some("if-none-match") {
            // One value; an enum is what generators read most reliably.
            schema["enum"] = json!(["*"]);
        } else if let Some(p) = pattern {
            schema["pattern"] = Value::String(p.to_owned());
        }
        param["schema"] = schema;
    }
}

/// An operation's responses (none when it has no `responses` object).
fn responses_mut(op: &mut Map<String, Value>) -> impl Iterator<Item = &mut Value> {
    op.get_mut("responses")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|r| r.values_mut())
}

/// An operation's zip bodies, request and responses, as a binary string (not an array of
/// integers).
fn zip_bodies(op: &mut Map<String, Value>) {
    let zip = json!({"type": "string", "format": "binary", "contentMediaType": "application/zip"});
    if let Some(body) = op.get_mut("requestBody") {
        zip_is_binary(body, &zip);
    }
    for r in responses_mut(op) {
        zip_is_binary(r, &zip);
    }
}

/// An event stream's events, as tools read a `text/event-stream` schema under 3.1: each event
/// `{id, event, data}`, `data` the JSON of a SessionEvent (3.2 would say it with `itemSchema`);
/// `x-sse-data` names that schema directly.
fn event_stream_schemas(op: &mut Map<String, Value>) {
    for r in responses_mut(op) {
        let Some(sse) = r
            .pointer_mut("/content/text~1event-stream")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        sse.insert(
            "schema".into(),
            json!({
                "type": "object",
                "required": ["id", "event", "data"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[0-9]+$"},
                    "event": {"type": "string"},
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": {"$ref": "#/components/schemas/SessionEvent"}
                    }
                }
            }),
        );
        sse.insert(
            "x-sse-data".into(),
            json!({"$ref": "#/components/schemas/SessionEvent"}),
        );
    }
}

/// A link: (link name, target operationId, parameters).
type Link = (&'static str, &'static str, Value);

/// The links one operation's responses carry: (path, method, statuses, links).
type Links = (
    &'static str,
    &'static str,
    &'static [&'static str],
    Vec<Link>,
);

/// OpenAPI links from the operations that create a thing to the operations that use it (a
/// session's id, a skill's name, an agent's name, a token's id, a detached call's id), so a
/// client generator or a stateful tester can follow them.
fn add_links(doc: &mut Value) {
    let table = [
        skill_links(),
        session_links(),
        call_links(),
        agent_links(),
        token_links(),
        vault_links(),
    ];
    for (path, method, statuses, links) in table {
        for status in statuses {
            let Some(r) = doc
                .pointer_mut(&format!(
                    "/paths/{}/{method}/responses/{status}",
                    path.replace('/', "~1")
                ))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let mut out = Map::new();
            for (name, op, parameters) in &links {
                out.insert(
                    (*name).into(),
                    json!({"operationId": op, "parameters": parameters}),
                );
            }
            r.insert("links".into(), Value::Object(out));
        }
    }
}

/// A link's parameters naming the thing by `name`, taken from `value` (a runtime expression).
fn by_name(value: &str) -> Value {
    json!({"name": value})
}

/// From writing a skill to everything done with it by name.
fn skill_links() -> Links {
    let skill = "$request.path.name";
    let links = [
        ("show", "skills_show"),
        ("history", "skills_history"),
        ("diff", "skills_diff"),
        ("export", "skills_export"),
        ("runs", "skills_runs"),
        ("retire", "skills_retire"),
        ("restore", "skills_restore"),
        ("disable", "skills_disable"),
        ("enable", "skills_enable"),
        ("revert", "skills_revert"),
        ("approve", "approvals_approve"),
    ]
    .into_iter()
    .map(|(n, op)| (n, op, by_name(skill)))
    .collect();
    ("/v1/skills/{name}", "put", &["200", "201", "202"], links)
}

/// From creating a session to the operations on it by id.
fn session_links() -> Links {
    let session = json!({"id": "$response.body#/id"});
    (
        "/v1/sessions",
        "post",
        &["201"],
        vec![
            ("show", "sessions_show", session.clone()),
            ("turn", "sessions_turn", session.clone()),
            ("call", "sessions_call", session.clone()),
            ("events", "sessions_events", session.clone()),
            ("pinned", "sessions_pinned", session.clone()),
            ("finish", "sessions_finish", session),
        ],
    )
}

/// From a detached call to its result.
fn call_links() -> Links {
    (
        "/v1/sessions/{id}/calls",
        "post",
        &["202"],
        vec![(
            "result",
            "sessions_call_result",
            json!({"id": "$request.path.id", "call_id": "$response.body#/call_id"}),
        )],
    )
}

/// From creating an agent to the operations on it by name.
fn agent_links() -> Links {
    let agent = by_name("$response.body#/name");
    (
        "/v1/agents",
        "post",
        &["201"],
        vec![
            ("show", "agents_show", agent.clone()),
            ("put", "agents_put", agent.clone()),
            ("eval", "agents_eval", agent),
        ],
    )
}

/// From creating a token to revoking it.
fn token_links() -> Links {
    (
        "/v1/tokens",
        "post",
        &["201"],
        vec![(
            "revoke",
            "tokens_revoke",
            json!({"id": "$response.body#/id"}),
        )],
    )
}

/// From setting a vault entry to removing it.
fn vault_links() -> Links {
    (
        "/v1/vault/{name}",
        "put",
        &["200"],
        vec![("remove", "vault_remove", by_name("$request.path.name"))],
    )
}

/// What the derive cannot say about the component schemas, one group of schemas at a time:
/// upstream MCP servers, transcripts, skill names, skill files, evaluations, posted results.
fn finish_components(doc: &mut Value) {
    mcp_server_schemas(doc);
    transcript_schemas(doc);
    skill_name_schema(doc);
    file_object_schema(doc);
    eval_schemas(doc);
    posted_result_schema(doc);
    skill_files_schema(doc);
}

/// A skill name where a skill is named (an agent's skill sets), with the pattern that lists its
/// characters (computed from the same rule the server checks).
fn skill_name_schema(doc: &mut Value) {
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    schemas.insert(
        "SkillName".into(),
        json!({
            "type": "string",
            "description": "A skill name as written where a skill is named: 1-64 lowercase letters (any script) and digits in words joined by single hyphens, already in its canonical form (what NFKC, trimming and lowercasing leave unchanged).",
            "minLength": 1,
            "maxLength": skillbase_format::name::MAX_NAME_CHARS,
            "pattern": skillbase_format::name::canonical_name_pattern(),
        }),
    );
    if let Some(variants) = schemas
        .get_mut("SkillSet")
        .and_then(|s| s.get_mut("oneOf"))
        .and_then(Value::as_array_mut)
    {
        for v in variants.iter_mut().filter(|v| v["type"] == "array") {
            v["items"] = json!({"$ref": "#/components/schemas/SkillName"});
        }
    }
}

/// A skill's file object has exactly one of `text` and `base64` (canonical standard base64, as
/// the server decodes it).
fn file_object_schema(doc: &mut Value) {
    if let Some(file) = doc.pointer_mut("/components/schemas/FileObject") {
        file["oneOf"] = json!([
            {"required": ["text"], "properties": {"text": {"type": "string"}}},
            {"required": ["base64"], "properties": {"base64": {"type": "string"}}}
        ]);
        if let Some(b64) = file.pointer_mut("/properties/base64") {
            b64["pattern"] = json!(BASE64_PATTERN);
        }
    }
}

/// An evaluation is either labelled cases or the graded form (tasks with relevance, and
/// optionally an id map); what is not used is absent or null.
fn eval_schemas(doc: &mut Value) {
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        schemas.insert(
            "EvalCase".into(),
            json!({
                "type": "object",
                "description": "A labelled message: the skill that should reach the model, or null when none covers it.",
                "required": ["message", "expected"],
                "properties": {
                    "message": {"type": "string"},
                    "expected": {"type": ["string", "null"]},
                    "kind": {"type": ["string", "null"], "description": "direct, paraphrase, trigger, lookalike, ... (for the per-kind figures)"},
                    "lang": {"type": ["string", "null"], "description": "The message's language (for the per-language figures)"}
                },
                "additionalProperties": false
            }),
        );
    }
    let Some(eval) = doc.pointer_mut("/components/schemas/EvalRequest") else {
        return;
    };
    let list = json!({"type": "array", "minItems": 1, "maxItems": agents::MAX_EVAL_CASES});
    let mut cases = list.clone();
    cases["items"] = json!({"$ref": "#/components/schemas/EvalCase"});
    let mut tasks = list;
    // A task needs its id and its text (other keys, as SkillRouter's lines carry, are read
    // past): `{}` is refused by the server, so the document refuses it too.
    tasks["items"] = json!({
        "type": "object",
        "required": ["task_id", "instruction_text"],
        "properties": {
            "task_id": {"type": "string"},
            "instruction_text": {"type": "string"}
        }
    });
    eval["oneOf"] = json!([
        {"required": ["cases"], "properties": {
            "cases": cases, "tasks": {"type": "null"},
            "relevance": {"type": "null"}, "id_map": {"type": "null"}}},
        {"required": ["tasks", "relevance"], "properties": {
            "cases": {"type": "null"}, "tasks": tasks, "relevance": {"type": "object"}}}
    ]);
    if let Some(items) = eval.pointer_mut("/properties/cases/items") {
        *items = json!({"$ref": "#/components/schemas/EvalCase"});
    }
}

/// A posted call result carries exactly one of `result` and a non-empty `error`, and nothing
/// else.
fn posted_result_schema(doc: &mut Value) {
    if let Some(posted) = doc.pointer_mut("/components/schemas/PostedResult") {
        posted["properties"]["error"] =
            json!({"type": "string", "minLength": 1, "maxLength": 65536});
        posted["additionalProperties"] = json!(false);
        posted["oneOf"] = json!([
            {"required": ["result"], "not": {"required": ["error"]}},
            {"required": ["error"], "not": {"required": ["result"]}}
        ]);
    }
}

/// A skill's `files` holds SKILL.md (or skill.md, not both) under safe relative paths:
/// `/`-separated, no empty, `.` or `..` segment, no backslash or control character, no drive
/// letter, at most 10 segments and 1024 characters, at most 512 files (`BundleLimits`' defaults;
/// what a schema cannot say, such as two paths differing only in case or the 16 MiB total, the
/// server refuses with 422).
fn skill_files_schema(doc: &mut Value) {
    if let Some(files) = doc.pointer_mut("/components/schemas/PutSkill/properties/files")
        && let Some(files) = files.as_object_mut()
    {
        files.remove("required");
        files.insert(
            "oneOf".into(),
            json!([{"required": ["SKILL.md"]}, {"required": ["skill.md"]}]),
        );
        files.insert(
            "propertyNames".into(),
            json!({"type": "string", "maxLength": 1024, "pattern": BUNDLE_PATH_PATTERN}),
        );
        files.insert("maxProperties".into(), json!(512));
    }
}

/// Canonical standard base64 (padded; the unused bits of the last character are zero).
const BASE64_PATTERN: &str =
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$";

/// A safe relative path of a skill's file, as `BundlePath::parse` reads one (with the default
/// depth limit of 10 segments).
const BUNDLE_PATH_PATTERN: &str = r"^(?![A-Za-z]:)(?!(?:[^/]*/)*\.\.?(?:/|$))[^/\\\u0000-\u001f\u007f-\u009f]+(?:/[^/\\\u0000-\u001f\u007f-\u009f]+){0,9}$";
