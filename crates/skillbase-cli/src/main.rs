//! `skillbase`: the command line. It parses arguments and prints; the libraries do the work
//! (import sources and the lockfile are `skillbase-sources`').

#![forbid(unsafe_code)]

#[macro_use]
mod out;

mod common;
mod dispatch_cmds;
mod doctor_cmds;
mod dream_cmds;
mod engine_setup;
mod format_cmds;
mod gc_cmds;
mod lock_cmds;
mod market_cmds;
mod model_cmds;
mod scan_cmds;
mod serve_cmds;
mod sign_cmds;
mod store_cmds;
mod sync_cmds;
mod turn_cmds;
mod usage_cmds;
mod vault_cmds;

use clap::{Parser, Subcommand};
use skillbase_store::StatusChange;
use std::process::ExitCode;
use store_cmds::block_on;

/// mimalloc: the server allocates on every request from many threads, where glibc's malloc
/// contends on its arena locks (`load_skill` over HTTP went from 46 to 28 µs a request).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit code for success.
pub const EXIT_OK: u8 = 0;
/// Exit code when the input is invalid (a skill failed validation, a file could not be read).
pub const EXIT_INVALID: u8 = 1;
/// Exit code for a usage error or a path that does not exist.
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "skillbase",
    version,
    about = "A skills store and runtime for AI agents",
    long_about = "A skills store and runtime for AI agents.\n\n\
        Validate and render Agent Skills folders (a drop-in, faster replacement for the reference \
        validator), and author skills.\n\n\
        Exit codes: 0 success, 1 invalid input, 2 usage error or missing path."
)]
struct Cli {
    #[command(flatten)]
    store: store_cmds::StoreArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Validate(format_cmds::ValidateArgs),
    ReadProperties(format_cmds::ReadPropertiesArgs),
    ToPrompt(format_cmds::ToPromptArgs),
    New(format_cmds::NewArgs),
    /// Print a skill folder's content digest (the digest its revision gets in the store).
    Digest(format_cmds::DigestArgs),
    /// Sign a skill folder (Ed25519 over name, version and digest), writing its SKILL.sig.
    Sign(sign_cmds::SignArgs),
    /// Scan skill folders for hostile content (instruction hijack, hidden text, exfiltration,
    /// droppers, persistence, envelope consistency, credential asks, routing abuse); exit 1 when a
    /// finding reaches --fail-on (default high).
    Scan(scan_cmds::ScanArgs),
    /// Verify a skill folder's SKILL.sig against its files, and print the signer.
    Verify(sign_cmds::VerifyArgs),
    /// Write skillbase.lock: the shared skills imported from sources, with reference, version,
    /// digest and signer.
    Lock(lock_cmds::LockArgs),
    /// Reproduce the skills of skillbase.lock exactly (`--locked`): any digest or signer that
    /// differs is refused, and nothing is written.
    Install(lock_cmds::InstallArgs),
    /// Compare skillbase.lock with its sources as they are now (exit 1 when any differs).
    Outdated(lock_cmds::OutdatedArgs),
    /// List skills in the store.
    List(store_cmds::ListArgs),
    /// Show a skill's revision: metadata, files and SKILL.md.
    Show(store_cmds::ShowArgs),
    /// List a skill's revisions, newest first (* marks the active one).
    History(store_cmds::HistoryArgs),
    /// Unified diff of every file between two revisions.
    Diff(store_cmds::DiffArgs),
    /// Create or modify a skill from a folder or SKILL.md (prints the revision written).
    Put(store_cmds::PutArgs),
    /// Re-activate an earlier revision (history is never rewritten).
    Revert(store_cmds::RevertArgs),
    /// Retire a skill (soft delete: every revision is kept).
    Retire(store_cmds::StatusArgs),
    /// Restore a retired skill.
    Restore(store_cmds::StatusArgs),
    /// Disable a skill (it stops being offered).
    Disable(store_cmds::StatusArgs),
    /// Enable a disabled skill.
    Enable(store_cmds::StatusArgs),
    /// Import a skill folder, a folder of skills or a zip, all or nothing.
    Import(store_cmds::ImportArgs),
    /// Write a revision's exact bytes to a folder or a .zip; or, with --marketplace DIR, an
    /// agent's skills as a Claude Code plugin marketplace.
    Export(store_cmds::ExportArgs),
    /// Manage agents.
    #[command(subcommand)]
    Agent(store_cmds::AgentCmd),
    /// Watch the --seed folders and sync every change into the store.
    Watch(store_cmds::WatchArgs),
    /// Write an agent's skills into another tool's skills folder (Claude Code, Codex,
    /// gemini-cli, Copilot, Cursor, OpenCode), only ever replacing what sync wrote; `--check`
    /// exits 1 when the folder drifted.
    Sync(sync_cmds::SyncArgs),
    /// Show exactly what the model would get this turn: prompt fragments, tools, and the report.
    Turn(turn_cmds::TurnArgs),
    /// Measure routing: labelled messages (JSON Lines) through an agent's real turn path.
    Eval(turn_cmds::EvalArgs),
    /// Manage vault entries (values are write-only: read from stdin, never printed).
    #[command(subcommand)]
    Vault(vault_cmds::VaultCmd),
    /// The local sentence encoder of the semantic ranking stage: pull it, or check it.
    Model(model_cmds::ModelCmd),
    /// Apply the retention policy ([retention] in --config): trim old calls, turns and
    /// activations and ended sessions, recording what was removed.
    Gc(gc_cmds::GcArgs),
    /// Dispatch a call as an agent would: every stage of the pipeline, refusals included.
    Call(dispatch_cmds::CallArgs),
    /// Report the drift between prompts, agents and the catalog: each finding with its code
    /// (D001...), where it is and the fix. Exit 1 when any finding is an error.
    Doctor(doctor_cmds::DoctorArgs),
    /// Capture procedures the agents' sessions repeated as skills, with a report citing the
    /// sessions (and what was rejected, and why).
    Dream(dream_cmds::DreamArgs),
    /// Every tool (built-ins, `[[tools]]`, upstream MCP servers' tools) with its source, class,
    /// status (connected, down, declared, ...) and the agents granted it.
    Tools(dispatch_cmds::ToolsArgs),
    /// Recent runs of a skill and their outcomes.
    Runs(dispatch_cmds::RunsArgs),
    /// A skill's usage (activations by reason and agent, listings, runs per revision, body
    /// tokens, unfollowed loads), or the library's with its never-used skills.
    Usage(usage_cmds::UsageArgs),
    /// Approve a revision waiting for review.
    Approve(dispatch_cmds::ApproveArgs),
    /// Serve the REST API (/v1), MCP (/mcp) and metrics; `--demo` for a ready-to-try server.
    Serve(serve_cmds::ServeArgs),
    /// Serve one agent's skills and tools over MCP on stdin/stdout (for local MCP clients).
    Mcp(serve_cmds::McpArgs),
    /// Manage API tokens (admin, or bound to one agent; stored only as hashes).
    #[command(subcommand)]
    Token(serve_cmds::TokenCmd),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        // A reader that went away ended the output, not the command's work: quietly, status 0,
        // as ripgrep does. The error chain says so; no signal handler, no panic hook.
        Err(e) if out::is_broken_pipe(&e) => EXIT_OK,
        Err(e) => {
            eprintln!("Error: {}", store_cmds::error_text(&e));
            store_cmds::exit_code(&e)
        }
    };
    ExitCode::from(code)
}

/// Run the command: its exit code, or the error `main` reports.
fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Validate(a) => format_cmds::validate(a),
        Command::ReadProperties(a) => format_cmds::read_properties(a),
        Command::ToPrompt(a) => format_cmds::to_prompt(a),
        Command::New(a) => format_cmds::new(a),
        Command::Digest(a) => format_cmds::digest(a),
        Command::Scan(a) if scan_cmds::is_store(&a) => block_on(scan_cmds::rescan(&cli.store, a)),
        Command::Scan(a) => scan_cmds::scan(a),
        Command::Sign(a) => block_on(async move { sign_cmds::sign(a) }),
        Command::Verify(a) => block_on(async move { sign_cmds::verify(a) }),
        Command::Lock(a) => block_on(lock_cmds::lock(&cli.store, a)),
        Command::Install(a) => block_on(lock_cmds::install(&cli.store, a)),
        Command::Outdated(a) => block_on(lock_cmds::outdated(&cli.store, a)),
        Command::List(a) => block_on(store_cmds::list(&cli.store, a)),
        Command::Show(a) => block_on(store_cmds::show(&cli.store, a)),
        Command::History(a) => block_on(store_cmds::history(&cli.store, a)),
        Command::Diff(a) => block_on(store_cmds::diff(&cli.store, a)),
        Command::Put(a) => block_on(store_cmds::put(&cli.store, a)),
        Command::Revert(a) => block_on(store_cmds::revert(&cli.store, a)),
        Command::Retire(a) => block_on(store_cmds::set_status(&cli.store, a, StatusChange::Retire)),
        Command::Restore(a) => {
            block_on(store_cmds::set_status(&cli.store, a, StatusChange::Restore))
        }
        Command::Disable(a) => {
            block_on(store_cmds::set_status(&cli.store, a, StatusChange::Disable))
        }
        Command::Enable(a) => block_on(store_cmds::set_status(&cli.store, a, StatusChange::Enable)),
        Command::Import(a) => block_on(store_cmds::import(&cli.store, a)),
        Command::Export(a) => block_on(store_cmds::export(&cli.store, a)),
        Command::Agent(a) => block_on(store_cmds::agent(&cli.store, a)),
        Command::Watch(a) => block_on(store_cmds::watch(&cli.store, a)),
        Command::Sync(a) => block_on(sync_cmds::sync(&cli.store, a)),
        Command::Turn(a) => block_on(turn_cmds::turn(&cli.store, a)),
        Command::Eval(a) => block_on(turn_cmds::eval(&cli.store, a)),
        Command::Vault(a) => block_on(vault_cmds::vault(&cli.store, a)),
        Command::Model(a) => block_on(model_cmds::model(a)),
        Command::Call(a) => block_on(dispatch_cmds::call(&cli.store, a)),
        Command::Doctor(a) => block_on(doctor_cmds::doctor(&cli.store, a)),
        Command::Dream(a) => block_on(dream_cmds::dream(&cli.store, a)),
        Command::Tools(a) => block_on(dispatch_cmds::tools(&cli.store, a)),
        Command::Runs(a) => block_on(dispatch_cmds::runs(&cli.store, a)),
        Command::Usage(a) => block_on(usage_cmds::usage(&cli.store, a)),
        Command::Approve(a) => block_on(dispatch_cmds::approve(&cli.store, a)),
        Command::Gc(a) => block_on(gc_cmds::gc(&cli.store, a)),
        Command::Serve(a) => block_on(serve_cmds::serve(&cli.store, a)),
        Command::Mcp(a) => block_on(serve_cmds::mcp(&cli.store, a)),
        Command::Token(a) => block_on(serve_cmds::token(&cli.store, a)),
    }
}
