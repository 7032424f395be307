//! `skillbase`: the command line. Thin: parsing and printing only; the libraries do the work.

mod format_cmds;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Validate(format_cmds::ValidateArgs),
    ReadProperties(format_cmds::ReadPropertiesArgs),
    ToPrompt(format_cmds::ToPromptArgs),
    New(format_cmds::NewArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Validate(a) => format_cmds::validate(a),
        Command::ReadProperties(a) => format_cmds::read_properties(a),
        Command::ToPrompt(a) => format_cmds::to_prompt(a),
        Command::New(a) => format_cmds::new(a),
    };
    ExitCode::from(code)
}
