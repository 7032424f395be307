//! `skillbase vault set|list|remove`: values go in, never come out.

use crate::EXIT_OK;
use crate::store_cmds::{AuthorArg, StoreArgs};
use anyhow::{Result, anyhow};
use clap::Subcommand;
use skillbase_runtime::{Vault, VaultKey};
use std::io::{IsTerminal, Read};

#[derive(Subcommand)]
pub enum VaultCmd {
    /// Set an entry. The value is read from standard input (typed without echo on a terminal).
    Set {
        /// Entry name, e.g. PAYMENTS_API_KEY.
        name: String,
        /// What the secret is for (visible to agents).
        #[arg(long, short, default_value = "")]
        description: String,
        #[command(flatten)]
        author: AuthorArg,
    },
    /// List entry names and descriptions (never values).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove an entry.
    Remove {
        name: String,
        #[command(flatten)]
        author: AuthorArg,
    },
}

pub async fn vault(s: &StoreArgs, cmd: VaultCmd) -> Result<u8> {
    let store = s.open().await?;
    let key = VaultKey::load(&skillbase_store::default_home())?;
    let vault = Vault::open(store.clone(), key).await?;
    match cmd {
        VaultCmd::Set {
            name,
            description,
            author,
        } => {
            let author = author.author()?;
            let mut value = if std::io::stdin().is_terminal() {
                rpassword::prompt_password(format!("value for {name} (not echoed): "))?
            } else {
                let mut v = String::new();
                std::io::stdin()
                    .take(64 * 1024 + 2)
                    .read_to_string(&mut v)
                    .map_err(|e| anyhow!("reading the value from stdin: {e}"))?;
                v
            };
            // One trailing newline from `echo` or a file is not part of the secret.
            if value.ends_with('\n') {
                value.pop();
                if value.ends_with('\r') {
                    value.pop();
                }
            }
            vault
                .set(&name, &description, value.as_bytes(), &author)
                .await?;
            outln!("vault entry {name} set")?;
        }
        VaultCmd::List { json } => {
            let list = vault.list();
            if json {
                outln!("{}", serde_json::to_string_pretty(&list)?)?;
            } else if list.is_empty() {
                eprintln!(
                    "The vault is empty. Add an entry with `skillbase vault set NAME < value-file`."
                );
            } else {
                for e in list {
                    outln!("{:<32} {}", e.name, e.description)?;
                }
            }
        }
        VaultCmd::Remove { name, author } => {
            vault.remove(&name, &author.author()?).await?;
            outln!("vault entry {name} removed")?;
        }
    }
    store.close().await;
    Ok(EXIT_OK)
}
