//! What the derives and `#[utoipa::path]` attributes cannot say, said on the typed document by
//! [`Finish`]: operation ids prefixed by their tag, a description for every response, the
//! statuses the shared layers answer, the bearer scheme, the request headers' grammars, bodies
//! that may be left out, zip bodies and event streams. A leaf of `rest`: it reads the handler
//! modules' constants, never `rest` itself.

use super::{extract, sessions};
use axum::http::StatusCode;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, Object, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, ContentBuilder, Ref, RefOr, Required, ResponseBuilder};

/// Completes the generated document (see the module's summary).
pub(super) struct Finish;

impl utoipa::Modify for Finish {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
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
                if let (Some(tag), Some(id)) = (op.tags.iter().flatten().next(), &op.operation_id) {
                    op.operation_id = Some(format!("{tag}_{id}"));
                }
                add_shared_statuses(op, writes);
                header_grammars(op);
                if let Some(RefOr::T(body)) = &mut op.request_body {
                    if body.required != Some(Required::True) {
                        body.required = Some(Required::False);
                        body.content.values_mut().for_each(left_out_not_null);
                    }
                    body.content.iter_mut().for_each(|(k, c)| media(k, c));
                }
                for (code, r) in op.responses.responses.iter_mut() {
                    let RefOr::T(r) = r else { continue };
                    if r.description.is_empty() {
                        let status = code.parse().ok().and_then(|c| StatusCode::from_u16(c).ok());
                        let reason = status.and_then(|c| c.canonical_reason());
                        r.description = reason.unwrap_or("Response").to_owned();
                    }
                    r.content.iter_mut().for_each(|(k, c)| media(k, c));
                }
            }
        }
        let bearer = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "An admin token, or a token bound to one agent (`skillbase token create`)",
            ));
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(bearer.build()));
    }
}

/// An `Option<T>` body is one that may be left out, never a `null` one: `T`'s schema alone.
fn left_out_not_null(content: &mut RefOr<Content>) {
    let RefOr::T(content) = content else { return };
    if let Some(RefOr::T(Schema::OneOf(one))) = &content.schema {
        let null: RefOr<Schema> = ObjectBuilder::new().schema_type(Type::Null).into();
        if let [some] = one.items.iter().filter(|s| **s != null).collect::<Vec<_>>()[..] {
            content.schema = Some(some.clone());
        }
    }
}

/// A zip body as a binary string (not an array of integers), and an event stream's events as
/// tools read them under 3.1: `{id, event, data}`, `data` the JSON of a SessionEvent
/// (`x-sse-data` names it).
fn media(kind: &str, content: &mut RefOr<Content>) {
    let RefOr::T(content) = content else { return };
    let string = || ObjectBuilder::new().schema_type(Type::String);
    if kind == "application/zip" {
        let zip = string()
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .content_media_type("application/zip");
        content.schema = Some(zip.into());
    } else if kind == "text/event-stream" {
        let event = Ref::from_schema_name("SessionEvent");
        let data = string()
            .content_media_type("application/json")
            .content_schema(Some(event.clone()));
        let sse = ObjectBuilder::new()
            .property("id", string().pattern(Some("^[0-9]+$")))
            .property("event", string())
            .property("data", data)
            .required("id")
            .required("event")
            .required("data");
        content.schema = Some(sse.into());
        let named = serde_json::to_value(event).unwrap_or_default();
        content.extensions = Some(Extensions::builder().add("x-sse-data", named).build());
    }
}

/// A header's schema: headers are never `null`, and the ones the routes read have a grammar.
fn header_grammars(op: &mut Operation) {
    for p in op.parameters.iter_mut().flatten() {
        let RefOr::T(p) = p else { continue };
        if !matches!(p.parameter_in, ParameterIn::Header) {
            continue;
        }
        let schema = ObjectBuilder::new().schema_type(Type::String);
        let schema: Object = match p.name.as_str() {
            // One value; an enum is what generators read most reliably.
            "if-none-match" => schema.enum_values(Some(["*"])).build(),
            "if-match" => schema.pattern(Some(extract::IF_MATCH_PATTERN)).build(),
            "last-event-id" => schema
                .pattern(Some(sessions::LAST_EVENT_ID_PATTERN))
                .build(),
            "skillbase-session" => schema
                .pattern(Some(extract::SESSION_HEADER_PATTERN))
                .build(),
            _ => schema.build(),
        };
        p.schema = Some(schema.into());
    }
}

/// The statuses the layers every route shares can answer, added to each operation that lacks
/// them (a handler's own description wins), each a problem+json body: 401 from authentication,
/// 400 from the path, query, header and body extractors, 404 for a path naming something,
/// 413/415 for a body, 500 when the server fails, 503 when a request times out or the store is
/// unavailable (or read-only), 507 on every operation but GET when its disk is full.
fn add_shared_statuses(op: &mut Operation, writes: bool) {
    let params: Vec<_> = op.parameters.iter().flatten().collect();
    let in_path = params
        .iter()
        .any(|p| matches!(p, RefOr::T(p) if matches!(p.parameter_in, ParameterIn::Path)));
    let body = op.request_body.is_some();
    let shared = [
        (
            true,
            "401",
            "No bearer token, or one that is unknown, expired or revoked",
        ),
        (
            !params.is_empty() || body,
            "400",
            "Malformed request: a path, query, header or body value the route cannot read",
        ),
        (
            in_path,
            "404",
            "No such thing, or one this token may not see (answered alike)",
        ),
        (body, "413", "The body is over this route's size limit"),
        (
            body,
            "415",
            "The body's Content-Type is not one this route reads",
        ),
        (true, "500", "The server failed; the detail is in its log"),
        (
            true,
            "503",
            "The request timed out, or the store is unavailable (an I/O error, a lost database, \
             a read-only store); retry later",
        ),
        (
            writes,
            "507",
            "The store's disk is full; nothing was written, retry once space is freed",
        ),
    ];
    for (_, code, description) in shared.into_iter().filter(|(applies, ..)| *applies) {
        let problem = ContentBuilder::new().schema(Some(Ref::from_schema_name("Problem")));
        let response = ResponseBuilder::new()
            .description(description)
            .content("application/problem+json", problem.build());
        op.responses
            .responses
            .entry(code.to_owned())
            .or_insert_with(|| response.build().into());
    }
}
