//! Skillbase embedded in a Rust harness: the engine over a fresh SQLite store, the repository's
//! example skills seeded, an agent from `skillbase.toml` text, and one tool the harness runs
//! itself, behind the same envelope as every other call.
//!
//! ```sh
//! cargo run -p skillbase-runtime --example embed
//! ```
//!
//! It prints what the model would be shown for one user message, loads the skill the turn
//! offers, calls the harness's tool under it, and finishes the skill's run. It exits non-zero
//! if any step does not come out as a harness would expect (CI runs it).

use serde_json::json;
use skillbase_runtime::{CallContext, Permission, ToolDecl, ToolFuture};
use skillbase_runtime::{CallMode, CallOutcome};
use skillbase_runtime::{Engine, TurnOptions};
use std::path::Path;
use std::sync::Arc;

const CONFIG: &str = r#"
[agents.support]
description = "Customer support"
skills = ["refund-procedure", "refund-policy", "api-error-triage"]
catalog_budget = 4000
[agents.support.grants]
tools = ["orders"]
"#;

/// The harness's own tool: it looks an order up (here, from a table in memory).
fn lookup_order(_ctx: CallContext, args: serde_json::Value) -> ToolFuture {
    Box::pin(async move {
        let id = args["order_id"].as_str().unwrap_or_default().to_owned();
        Ok(json!({"order_id": id, "amount_cents": 1500, "currency": "EUR", "status": "delivered"}))
    })
}

fn check(ok: bool, what: &str) -> Result<(), Box<dyn std::error::Error>> {
    if ok {
        Ok(())
    } else {
        Err(format!("unexpected: {what}").into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/skills");
    let orders = ToolDecl {
        name: "lookup_order".into(),
        description: "Look an order up by its id.".into(),
        parameters: json!({"type": "object", "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"], "additionalProperties": false}),
        returns: None,
        class: "orders".into(),
        permissions: vec![Permission::None],
        cost: skillbase_format::Cost::Immediate,
        ..ToolDecl::default()
    };
    let engine = Engine::builder()
        .sqlite(dir.path().join("skillbase.db"))
        .workspace(dir.path().join("workspaces"))
        .config_toml(CONFIG)
        .seed(&skills)
        .tool(orders, Arc::new(lookup_order))
        .build()
        .await?;
    let agent = "support".parse()?;
    let session = "conversation-1";

    // 1. The turn: what the model sees, and why.
    let message = "A customer wants their money back for order ord_12345678";
    let turn = engine
        .turn(&agent, session, message, &TurnOptions::default())
        .await?;
    println!("user: {message}");
    for a in &turn.report.activated {
        println!(
            "  in context: {} (reason {}, revision {}, {} tokens)",
            a.name, a.reason, a.rev, a.tokens
        );
    }
    let tools: Vec<&str> = turn.tools.iter().map(|t| t.name.as_str()).collect();
    println!("  tools offered: {}", tools.join(", "));
    check(
        tools.contains(&"load_skill") && tools.contains(&"lookup_order"),
        "tools offered",
    )?;

    // 2. The model loads the procedure: it now drives the session.
    let loaded = engine
        .call(&agent, session, "load_skill", json!({"name": "refund-procedure",
            "arguments": {"order_id": "ord_12345678", "amount_cents": 1500, "currency": "EUR", "reason": "arrived broken"}}),
            CallMode::Wait)
        .await?;
    check(
        matches!(loaded, CallOutcome::Done { .. }),
        &loaded.for_model(),
    )?;
    println!(
        "  load_skill: {} tokens of instructions",
        match &loaded {
            CallOutcome::Done { tokens, .. } => *tokens,
            _ => 0,
        }
    );

    // 3. A call under the skill: the gate intersects the agent's grants with what the skill's
    //    revision declares. refund-procedure does not declare `orders`, so this is refused.
    let under = engine
        .call(
            &agent,
            session,
            "lookup_order",
            json!({"order_id": "ord_12345678"}),
            CallMode::Wait,
        )
        .await?;
    println!("  lookup_order under the skill: {}", under.for_model());
    check(
        matches!(under, CallOutcome::Refused { .. }),
        "the envelope refuses an undeclared class",
    )?;

    // 4. The harness ends the run; outside any skill, the agent's grants alone apply.
    let finished = engine
        .finish(&agent, session, "success", "refunded")
        .await?;
    check(finished.is_some(), "a run to finish")?;
    let after = engine
        .call(
            &agent,
            session,
            "lookup_order",
            json!({"order_id": "ord_12345678"}),
            CallMode::Wait,
        )
        .await?;
    println!("  lookup_order after the run: {}", after.for_model());
    check(
        matches!(after, CallOutcome::Done { .. }),
        "a granted call outside any skill",
    )?;

    // 5. After compaction, the harness re-attaches what was loaded.
    let pinned = engine.pinned(&agent, session, 8000).await?;
    println!(
        "  pinned after compaction: {} skill(s)",
        pinned.skills.len()
    );
    engine.close().await;
    Ok(())
}
