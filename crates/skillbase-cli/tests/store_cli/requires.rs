//! `requires:` (issue 20) from the command line: an import warns of what a skill requires that
//! the store or this installation does not provide (skills imported together satisfy each
//! other; what `--config` declares counts), writes it anyway; the lockfile says what requires
//! each skill; the doctor reports the agent's unmet requirements (D014); a turn offers the skill
//! with the reasons, or withholds it under the agent's policy.

use super::*;

const MAP_REQUIRES: &str = "requires:\n  skills:\n    - name: rules\n      version: \"^1.2\"\n      travel: true\n  tools: [orders]\n  mcp: [carriers]\n  bins: [sh, skillbase-test-no-such-program]\n";

fn put_skill(parent: &Path, name: &str, frontmatter: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        skill_md(name, frontmatter, "Follow it."),
    )
    .unwrap();
    dir
}

pub(super) fn requirements(sb: &Sb) {
    let pack = sb.path("pack");
    put_skill(
        &pack,
        "map",
        &format!("triggers: [line map]\n{MAP_REQUIRES}"),
    );
    put_skill(&pack, "rules", "version: \"1.1.0\"\n");
    let r = sb.ok(&["import", s(&pack)]);
    let warned: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("map (shared): warning: "))
        .collect();
    for want in [
        "requires skill 'rules (^1.2)', and the store holds version 1.1.0",
        "requires tool class 'orders', which no tool of this server provides",
        "requires MCP server 'carriers', which has no tools listed here",
        "requires the program 'skillbase-test-no-such-program', which is not on this server's PATH",
    ] {
        assert!(warned.iter().any(|l| l.contains(want)), "{want}: {r:?}");
    }
    assert_eq!(warned.len(), 4, "sh is on PATH: {r:?}");
    assert!(!r.stderr.contains("rules (shared): warning"), "{r:?}");
    // Written anyway (a warning, never a refusal), and the JSON carries the warnings.
    assert_eq!(sb.history("map", &[]).len(), 1);

    // The configuration declares the class and the server; rules is raised in the same import.
    let config = sb.path("skillbase.toml");
    std::fs::write(
        &config,
        "[[tools]]\nname = \"order_lookup\"\ndescription = \"Looks up an order.\"\nclass = \"orders\"\n\n\
         [mcp_servers.carriers]\ncommand = \"true\"\n\n\
         [agents.shop]\nskills = [\"map\", \"rules\"]\n[agents.shop.grants]\ntools = [\"orders\"]\n",
    )
    .unwrap();
    put_skill(
        &pack,
        "map",
        &format!("triggers: [line map, route]\n{MAP_REQUIRES}"),
    );
    put_skill(&pack, "rules", "version: \"1.2.0\"\n");
    let v = sb.json(&["--config", s(&config), "import", s(&pack), "--json"]);
    let outcomes = v["outcomes"].as_array().unwrap();
    let map = outcomes.iter().find(|o| o["name"] == "map").unwrap();
    let warnings: Vec<&str> = map["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            "requires the program 'skillbase-test-no-such-program', which is not on this server's PATH"
        ],
        "{v}"
    );

    // The lockfile says what requires each skill.
    let lockfile = sb.path("skillbase.lock");
    sb.ok(&["lock", "--out", s(&lockfile)]);
    let text = std::fs::read_to_string(&lockfile).unwrap();
    let lock: toml::Table = toml::from_str(&text).unwrap();
    let skills = lock["skill"].as_array().unwrap();
    let rules = skills
        .iter()
        .find(|e| e["name"].as_str() == Some("rules"))
        .unwrap();
    assert_eq!(
        rules["required_by"].as_array().unwrap()[0].as_str(),
        Some("map"),
        "{text}"
    );
    let map = skills
        .iter()
        .find(|e| e["name"].as_str() == Some("map"))
        .unwrap();
    assert!(map.get("required_by").is_none(), "{text}");
    // And reinstalls from it (the field is read back).
    let fresh = sb.fresh();
    fresh.ok(&["install", "--locked", s(&lockfile)]);

    // The doctor, for the agent: the missing program, and the server not connected here.
    let d = sb.json(&[
        "--config",
        s(&config),
        "doctor",
        "--agent",
        "shop",
        "--json",
    ]);
    let d014: Vec<&Value> = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "D014")
        .collect();
    assert_eq!(d014.len(), 1, "{d}");
    let m = d014[0]["message"].as_str().unwrap();
    assert!(
        m.contains("offered to agent shop") && m.contains("skillbase-test-no-such-program"),
        "{m}"
    );

    // A turn offers it with the reasons, and rules travels along. (The configured server's
    // command exits at once: the gateway marks it down, and the command goes on — writing to
    // its closed pipe once killed the whole command with SIGPIPE.)
    let t = sb.json(&[
        "--config",
        s(&config),
        "turn",
        "--agent",
        "shop",
        "-m",
        "the line map please",
        "--json",
    ]);
    let activated: Vec<&str> = t["context"]["report"]["activated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["reason"].as_str().unwrap())
        .collect();
    assert_eq!(activated, ["trigger:line map", "companion:map"], "{t}");
    assert!(
        t["context"]["report"]["unmet_requires"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("skillbase-test-no-such-program"),
        "{t}"
    );
    // A reader that goes away ends an engine command quietly (SIGPIPE stays ignored, for the
    // upstreams' pipes; the closed stdout is an error found in the chain): exit 0 as ripgrep
    // does (see pipe_cli.rs), no panic.
    let mut c = sb.cmd(&[
        "--config",
        s(&config),
        "turn",
        "--agent",
        "shop",
        "-m",
        "the line map",
    ]);
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Withheld by policy: nowhere in front of the model; the text report says why.
    sb.ok(&[
        "--config",
        s(&config),
        "agent",
        "set",
        "shop",
        "--unmet-requires",
        "withhold",
    ]);
    let r = sb.ok(&["turn", "--agent", "shop", "-m", "the line map please"]);
    assert!(
        r.stdout.contains(
            "skills withheld for unmet requires:\n  map  (withheld (unmet_requires = withhold): "
        ) && !r.stdout.contains("<name>map</name>"),
        "{r:?}"
    );
    let err = sb.fails(2, &["agent", "set", "shop", "--unmet-requires", "hide"]);
    assert!(err.contains("offer") && err.contains("withhold"), "{err}");
}
