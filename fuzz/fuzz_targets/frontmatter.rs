//! SKILL.md text: splitting, the bounded YAML reader, both validation profiles and the
//! properties the reference reports. Nothing may panic, whatever the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillbase_format::validate::{Profile, ValidateOptions, validate_text};
use skillbase_format::{SkillMd, YamlLimits, prompt};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = YamlLimits::default();
    if let Ok(md) = SkillMd::parse(text, &limits) {
        let _ = md.body();
        let _ = md.name();
        let _ = md.description();
        for (_, v) in &md.frontmatter.entries {
            let _ = v.to_typed_json();
            let _ = v.python_str();
        }
        let _ = prompt::properties_of(&md, "SKILL.md".into());
    }
    for profile in [Profile::Spec, Profile::Skillbase] {
        let opts = ValidateOptions {
            profile,
            ..ValidateOptions::default()
        };
        let report = validate_text(text, "SKILL.md", Some("my-skill"), &opts);
        // A report that failed to parse has exactly one error, naming the file.
        if SkillMd::parse(text, &limits).is_err() {
            assert_eq!(report.diagnostics.len(), 1);
            assert_eq!(report.diagnostics[0].file, "SKILL.md");
        }
    }
});
