//! Installs of packages whose names imitate popular ones (typosquatting): `pip install reqeusts`,
//! `npm install expres`. A name one edit (Damerau) from a popular name, and not popular itself.

use crate::catalog::DROPPER_TYPOSQUAT;
use crate::emit::Out;
use crate::finding::Severity;
use crate::source::Source;
use regex::Regex;

/// Popular PyPI packages (normalised: lowercase, `-`).
const PYPI: &[&str] = &[
    "requests",
    "numpy",
    "pandas",
    "urllib3",
    "setuptools",
    "boto3",
    "botocore",
    "django",
    "flask",
    "pyyaml",
    "cryptography",
    "pillow",
    "matplotlib",
    "scipy",
    "beautifulsoup4",
    "selenium",
    "tensorflow",
    "torch",
    "torchvision",
    "openai",
    "anthropic",
    "langchain",
    "colorama",
    "python-dateutil",
    "pytest",
    "httpx",
    "pydantic",
    "jinja2",
    "click",
    "rich",
    "tqdm",
    "scikit-learn",
    "psycopg2",
    "psycopg2-binary",
    "redis",
    "paramiko",
    "pymongo",
    "sqlalchemy",
    "fastapi",
    "uvicorn",
    "transformers",
    "aiohttp",
    "docker",
    "kubernetes",
    "certifi",
    "idna",
    "charset-normalizer",
    "six",
    "wheel",
    "packaging",
    "attrs",
    "protobuf",
    "grpcio",
    "pyjwt",
    "openpyxl",
    "xlrd",
    "pyarrow",
    "seaborn",
    "plotly",
    "streamlit",
    "gradio",
    "keras",
    "opencv-python",
    "pytz",
    "tzdata",
    "lxml",
    "markdown",
    "pypdf",
    "pdfplumber",
    "reportlab",
    "python-docx",
    "python-pptx",
    "playwright",
    "mysqlclient",
    "pymysql",
    "discord",
    "telethon",
    "web3",
    "solana",
    "ccxt",
    "yfinance",
    "sympy",
    "networkx",
    "nltk",
    "spacy",
    "huggingface-hub",
    "datasets",
    "tokenizers",
    "accelerate",
    "sentence-transformers",
    "chromadb",
    "faiss-cpu",
    "tiktoken",
    "python-dotenv",
    "loguru",
    "typer",
    "black",
    "ruff",
    "mypy",
    "flake8",
    "isort",
    "poetry",
    "virtualenv",
    "pip",
    "gunicorn",
    "celery",
    "requests-oauthlib",
    "google-auth",
];

/// Popular npm packages.
const NPM: &[&str] = &[
    "react",
    "react-dom",
    "lodash",
    "express",
    "axios",
    "chalk",
    "commander",
    "moment",
    "webpack",
    "typescript",
    "vue",
    "next",
    "eslint",
    "prettier",
    "jquery",
    "dotenv",
    "uuid",
    "yargs",
    "debug",
    "request",
    "node-fetch",
    "cross-env",
    "colors",
    "discord.js",
    "electron",
    "socket.io",
    "mongoose",
    "jest",
    "vite",
    "tailwindcss",
    "nodemon",
    "puppeteer",
    "playwright",
    "openai",
    "@anthropic-ai/sdk",
    "zod",
    "dayjs",
    "date-fns",
    "body-parser",
    "cors",
    "bcrypt",
    "jsonwebtoken",
    "passport",
    "sequelize",
    "prisma",
    "redis",
    "ioredis",
    "pg",
    "mysql2",
    "sharp",
    "ethers",
    "web3",
    "husky",
    "rimraf",
    "glob",
    "minimist",
    "semver",
    "inquirer",
    "ora",
    "esbuild",
    "rollup",
    "babel-core",
    "@babel/core",
    "ts-node",
    "tsx",
    "nx",
    "turbo",
    "angular",
    "svelte",
    "nuxt",
    "vitest",
    "mocha",
    "chai",
    "supertest",
    "cheerio",
    "marked",
    "handlebars",
    "ejs",
    "pug",
    "ws",
    "graphql",
    "apollo-server",
    "firebase",
    "stripe",
    "twilio",
    "nodemailer",
    "multer",
    "helmet",
    "morgan",
    "winston",
    "pino",
    "underscore",
    "async",
    "bluebird",
    "rxjs",
    "immer",
    "redux",
    "zustand",
    "mobx",
    "classnames",
    "styled-components",
];

/// Real packages one edit from a popular name.
const REAL_NEIGHBOURS: &[&str] = &[
    "unicorn",
    "faiss-gpu",
    "requests",
    "request",
    "pillow",
    "jinja",
    "httpie",
    "pytest-cov",
    "markdown2",
    "pypdf2",
];

/// Shortest name compared (short names are one edit from many real packages).
const MIN_LEN: usize = 5;

/// The install-command pattern, compiled once per scanner.
pub(crate) struct Packages {
    install: Regex,
}

impl Packages {
    pub(crate) fn new() -> Packages {
        Packages {
            install: Regex::new(
                r"(?im)\b(pip3?|uv\s+pip|uv|pipx|poetry|npm|pnpm|yarn|bun)\s+(install|add|i)\b([^\n;&|#>)`,]*)",
            )
            .expect("a fixed pattern"),
        }
    }

    /// Typosquatted names in the install commands of `src`.
    pub(crate) fn check(&self, src: &Source<'_>, out: &mut Out) {
        if !src.text.contains("install") && !src.text.contains(" add ") && !src.text.contains(" i ")
        {
            return;
        }
        for c in self.install.captures_iter(src.text).take(64) {
            let tool = c
                .get(1)
                .map(|m| m.as_str().to_ascii_lowercase())
                .unwrap_or_default();
            let npm = matches!(tool.as_str(), "npm" | "pnpm" | "yarn" | "bun");
            let Some(args) = c.get(3) else { continue };
            for name in names(args.as_str(), npm) {
                let popular = if npm { NPM } else { PYPI };
                if let Some(like) = imitated(&name, popular) {
                    out.at(
                        &DROPPER_TYPOSQUAT,
                        Severity::High,
                        src,
                        args.start(),
                        &format!("{name} (imitates {like})"),
                    );
                }
            }
        }
    }
}

/// Package names among the arguments of an install command, normalised.
fn names(args: &str, npm: bool) -> Vec<String> {
    // Words that end a list of packages written in a sentence ("pip install x and configure y").
    const PROSE: &[&str] = &[
        "and", "or", "then", "to", "for", "with", "in", "if", "first", "before", "after", "from",
    ];
    const TAKES_VALUE: &[&str] = &[
        "-f",
        "--find-links",
        "-r",
        "-c",
        "-e",
        "-t",
        "-i",
        "--index-url",
        "--extra-index-url",
        "--target",
        "--requirement",
        "--constraint",
        "--registry",
        "--prefix",
    ];
    let mut out = Vec::new();
    let mut skip = false;
    for tok in args.split_whitespace() {
        if skip {
            skip = false;
            continue;
        }
        if tok.starts_with('-') {
            skip = TAKES_VALUE.contains(&tok);
            continue;
        }
        if PROSE.contains(&tok) {
            break;
        }
        if tok.contains("://")
            || tok.starts_with(['.', '$', '/', '~'])
            || tok.ends_with(".txt")
            || (!npm && tok.contains('/'))
            || tok.contains('*')
        {
            continue;
        }
        let tok = tok.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '@'));
        let base = if npm {
            match tok.strip_prefix('@') {
                Some(rest) => format!("@{}", rest.split('@').next().unwrap_or(rest)),
                None => tok.split('@').next().unwrap_or(tok).to_owned(),
            }
        } else {
            let end = tok
                .find(['=', '<', '>', '!', '~', '[', ';', '@', ','])
                .unwrap_or(tok.len());
            tok[..end].to_ascii_lowercase().replace(['_', '.'], "-")
        };
        if !base.is_empty() && base.len() <= 100 {
            out.push(base.to_ascii_lowercase());
        }
    }
    out
}

/// The popular name `name` imitates, if it is one edit from one and not popular itself.
fn imitated(name: &str, popular: &[&'static str]) -> Option<&'static str> {
    if name.len() < MIN_LEN || popular.contains(&name) || REAL_NEIGHBOURS.contains(&name) {
        return None;
    }
    popular
        .iter()
        .find(|p| p.len() >= MIN_LEN && one_edit(name, p))
        .copied()
}

/// Whether `a` and `b` differ by exactly one insertion, deletion, substitution or swap of
/// adjacent characters.
pub(crate) fn one_edit(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a == b || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    match ra.len().cmp(&rb.len()) {
        std::cmp::Ordering::Equal => {
            ra[1..] == rb[1..]
                || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
        }
        std::cmp::Ordering::Greater => ra[1..] == *rb,
        std::cmp::Ordering::Less => *ra == rb[1..],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Kind;

    fn squats(text: &str) -> Vec<String> {
        let src = Source::new("SKILL.md", text, Kind::Markdown);
        let mut out = Out::default();
        Packages::new().check(&src, &mut out);
        out.findings.into_iter().map(|f| f.seen).collect()
    }

    #[test]
    fn lookalike_names_are_found() {
        assert_eq!(
            squats("pip install reqeusts"),
            vec!["reqeusts (imitates requests)"]
        );
        assert_eq!(
            squats("npm install --save expresss@4"),
            vec!["expresss (imitates express)"]
        );
        assert_eq!(
            squats("pip install -U python_dateutl==2.8"),
            vec!["python-dateutl (imitates python-dateutil)"]
        );
    }

    #[test]
    fn real_names_and_short_names_are_not() {
        assert!(squats("pip install requests numpy pandas==2.0 -r requirements.txt").is_empty());
        assert!(squats("npm i react react-dom @anthropic-ai/sdk").is_empty());
        assert!(squats("pip install six sixx").is_empty());
    }

    #[test]
    fn one_edit_is_damerau() {
        assert!(one_edit("abcd", "abdc"));
        assert!(one_edit("abc", "abcd"));
        assert!(one_edit("abcd", "abxd"));
        assert!(!one_edit("abcd", "abcd"));
        assert!(!one_edit("abcd", "badc"));
    }
}
