//! A bounded YAML reader for frontmatter.
//!
//! Every scalar keeps its source text (`version: 1.0` stays `"1.0"`), as the reference validator's
//! strictyaml does; a typed view ([`Node::to_typed_json`]) applies the YAML 1.2 core schema only
//! where a key needs numbers and booleans (a JSON Schema in `inputs`). Anchors, aliases and tags are
//! refused outright, so an alias bomb is rejected at its first anchor, in microseconds.

use saphyr_parser::{Event, Parser, ScalarStyle as PStyle, Span};

/// Hard limits applied while reading frontmatter YAML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlLimits {
    /// Largest frontmatter accepted, in bytes (default 64 KiB).
    pub max_bytes: usize,
    /// Deepest nesting of collections (default 32).
    pub max_depth: usize,
    /// Most nodes (scalars and collections) in one document (default 10,000).
    pub max_nodes: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        YamlLimits {
            max_bytes: 64 * 1024,
            max_depth: 32,
            max_nodes: 10_000,
        }
    }
}

/// How a scalar was written in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    /// Unquoted text; the only style the typed view resolves to numbers, booleans or null.
    Plain,
    /// `'...'`.
    SingleQuoted,
    /// `"..."`, escapes already decoded in the node's text.
    DoubleQuoted,
    /// A `|` block, line breaks kept.
    Literal,
    /// A `>` block, lines folded into spaces.
    Folded,
}

/// A YAML node. Collections remember whether they were written in flow style (`[a, b]`).
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A scalar, kept as its source text whatever it looks like (`1.0` stays `"1.0"`).
    Scalar {
        /// The scalar's text after quoting, escapes and block folding are resolved.
        text: String,
        /// How it was written.
        style: ScalarStyle,
        /// The 1-based line, within the YAML text, where the scalar starts.
        line: usize,
    },
    /// A sequence, block (`- a`) or flow (`[a, b]`).
    Seq {
        /// The items in source order.
        items: Vec<Node>,
        /// Whether written in flow style (`[a, b]`), which strict YAML refuses.
        flow: bool,
        /// The 1-based line, within the YAML text, where the sequence starts.
        line: usize,
    },
    /// A mapping with scalar keys.
    Map(Mapping),
}

/// A YAML mapping with string keys, in source order. Duplicate keys are refused at parse time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mapping {
    /// Key/value pairs in source order; each key appears at most once.
    pub entries: Vec<(String, Node)>,
    /// Whether written in flow style (`{a: 1}`), which strict YAML refuses.
    pub flow: bool,
    /// The 1-based line, within the YAML text, where the mapping starts.
    pub line: usize,
}

impl Mapping {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Keys in source order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// True when this mapping or anything inside it uses flow style.
    pub fn uses_flow(&self) -> bool {
        self.flow || self.entries.iter().any(|(_, v)| v.uses_flow())
    }

    /// The line (1-based, within the YAML text) where `key` appears.
    pub fn line_of(&self, key: &str) -> Option<usize> {
        self.get(key).map(Node::line)
    }
}

impl Node {
    /// The scalar text, if this is a scalar.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The mapping, if this is a mapping.
    pub fn as_map(&self) -> Option<&Mapping> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The items, if this is a sequence.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match self {
            Node::Seq { items, .. } => Some(items),
            _ => None,
        }
    }

    /// The 1-based line, within the YAML text, where this node starts.
    pub fn line(&self) -> usize {
        match self {
            Node::Scalar { line, .. } | Node::Seq { line, .. } => *line,
            Node::Map(m) => m.line,
        }
    }

    /// A short name of the node's kind, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Scalar { .. } => "a string",
            Node::Seq { .. } => "a list",
            Node::Map(_) => "a mapping",
        }
    }

    /// True when this node or anything inside it uses flow style.
    pub fn uses_flow(&self) -> bool {
        match self {
            Node::Scalar { .. } => false,
            Node::Seq { items, flow, .. } => *flow || items.iter().any(Node::uses_flow),
            Node::Map(m) => m.uses_flow(),
        }
    }

    /// Python truthiness of the value as strictyaml hands it over: empty strings, lists and
    /// mappings are falsy.
    pub fn is_falsy(&self) -> bool {
        match self {
            Node::Scalar { text, .. } => text.is_empty(),
            Node::Seq { items, .. } => items.is_empty(),
            Node::Map(m) => m.entries.is_empty(),
        }
    }

    /// JSON with every scalar as a string: what the reference validator sees.
    pub fn to_raw_json(&self) -> serde_json::Value {
        match self {
            Node::Scalar { text, .. } => serde_json::Value::String(text.clone()),
            Node::Seq { items, .. } => items.iter().map(Node::to_raw_json).collect(),
            Node::Map(m) => serde_json::Value::Object(
                m.entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_raw_json()))
                    .collect(),
            ),
        }
    }

    /// JSON with plain scalars resolved by the YAML 1.2 core schema (null, booleans, integers,
    /// floats); quoted and block scalars stay strings.
    pub fn to_typed_json(&self) -> serde_json::Value {
        match self {
            Node::Scalar { text, style, .. } => {
                if *style == ScalarStyle::Plain {
                    resolve_plain(text)
                } else {
                    serde_json::Value::String(text.clone())
                }
            }
            Node::Seq { items, .. } => items.iter().map(Node::to_typed_json).collect(),
            Node::Map(m) => serde_json::Value::Object(
                m.entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_typed_json()))
                    .collect(),
            ),
        }
    }

    /// Python's `str()` of the value strictyaml produces (used where the reference stringifies
    /// metadata values).
    pub fn python_str(&self) -> String {
        match self {
            Node::Scalar { text, .. } => text.clone(),
            _ => self.python_repr(),
        }
    }

    fn python_repr(&self) -> String {
        match self {
            Node::Scalar { text, .. } => python_str_repr(text),
            Node::Seq { items, .. } => {
                let parts: Vec<String> = items.iter().map(Node::python_repr).collect();
                format!("[{}]", parts.join(", "))
            }
            Node::Map(m) => {
                let parts: Vec<String> = m
                    .entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", python_str_repr(k), v.python_repr()))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
    }
}

fn python_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// YAML 1.2 core schema resolution of a plain scalar.
fn resolve_plain(text: &str) -> serde_json::Value {
    use serde_json::Value;
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let int_like = {
        let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    if int_like {
        if let Ok(i) = text.parse::<i64>() {
            return Value::from(i);
        }
        if let Ok(u) = text.parse::<u64>() {
            return Value::from(u);
        }
    }
    if let Some(hex) = text.strip_prefix("0x")
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return Value::from(i);
    }
    if let Some(oct) = text.strip_prefix("0o")
        && let Ok(i) = i64::from_str_radix(oct, 8)
    {
        return Value::from(i);
    }
    let float_like = text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        && text.bytes().any(|b| b.is_ascii_digit());
    if float_like
        && let Ok(f) = text.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(f)
    {
        return Value::Number(n);
    }
    Value::String(text.to_owned())
}

/// Why a YAML document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The YAML text is longer than [`YamlLimits::max_bytes`].
    #[error(
        "frontmatter is {size} bytes, over the {limit}-byte limit; move long text into the body or a file"
    )]
    TooLarge {
        /// The YAML text's length in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// Collections nest deeper than [`YamlLimits::max_depth`].
    #[error("nesting deeper than {limit} levels at line {line}; flatten the structure")]
    TooDeep {
        /// The depth limit.
        limit: usize,
        /// The 1-based line where the limit was crossed.
        line: usize,
    },
    /// The document holds more than [`YamlLimits::max_nodes`] scalars and collections.
    #[error("more than {limit} YAML nodes; frontmatter should be a short header")]
    TooManyNodes {
        /// The node limit.
        limit: usize,
    },
    /// An anchor (`&name`) or alias (`*name`); refused at the first one, so alias bombs never
    /// expand.
    #[error(
        "anchors and aliases (`&name`, `*name`) are not allowed (line {line}); write the value out"
    )]
    Anchor {
        /// The 1-based line of the anchor or alias.
        line: usize,
    },
    /// A tag such as `!!str` or `!custom`.
    #[error("YAML tags (`!tag`) are not allowed (line {line}); remove the tag")]
    Tag {
        /// The 1-based line of the tagged node.
        line: usize,
    },
    /// A mapping repeats a key.
    #[error("duplicate key '{key}' at line {line}; each key may appear once")]
    DuplicateKey {
        /// The repeated key.
        key: String,
        /// The 1-based line of its second occurrence.
        line: usize,
    },
    /// A mapping key that is a list or a mapping rather than a scalar.
    #[error("mapping keys must be plain strings (line {line})")]
    ComplexKey {
        /// The 1-based line of the key.
        line: usize,
    },
    /// A second document (`---` or `...` followed by more YAML) inside the frontmatter.
    #[error("more than one YAML document in frontmatter (line {line})")]
    MultipleDocuments {
        /// The 1-based line where the second document starts.
        line: usize,
    },
    /// The parser rejected the text, or it ended early.
    #[error("{message} at line {line} column {col}")]
    Syntax {
        /// The parser's description of the problem.
        message: String,
        /// The 1-based line of the problem (0 when the text ended unexpectedly).
        line: usize,
        /// The 1-based column of the problem (0 when the text ended unexpectedly).
        col: usize,
    },
}

/// Parse one YAML document. `Ok(None)` means the document is empty.
pub fn parse(text: &str, limits: &YamlLimits) -> Result<Option<Node>, YamlError> {
    if text.len() > limits.max_bytes {
        return Err(YamlError::TooLarge {
            size: text.len(),
            limit: limits.max_bytes,
        });
    }
    let mut reader = Reader {
        parser: Parser::new_from_str(text),
        text,
        chars: None,
        limits,
        nodes: 0,
    };
    reader.document()
}

struct Reader<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    text: &'a str,
    chars: Option<Vec<char>>,
    limits: &'a YamlLimits,
    nodes: usize,
}

impl<'a> Reader<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), YamlError> {
        match self.parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => Err(YamlError::Syntax {
                message: e.info().to_owned(),
                line: e.marker().line(),
                col: e.marker().col() + 1,
            }),
            None => Err(YamlError::Syntax {
                message: "unexpected end of YAML".into(),
                line: 0,
                col: 0,
            }),
        }
    }

    fn document(&mut self) -> Result<Option<Node>, YamlError> {
        let mut root = None;
        let mut documents = 0;
        loop {
            let (ev, span) = self.next()?;
            match ev {
                Event::StreamStart | Event::Nothing => {}
                Event::StreamEnd => return Ok(root),
                Event::DocumentStart(_) => {
                    documents += 1;
                    if documents > 1 {
                        return Err(YamlError::MultipleDocuments {
                            line: span.start.line(),
                        });
                    }
                }
                Event::DocumentEnd => {}
                other => {
                    let node = self.node(other, span, 1)?;
                    root = Some(node);
                }
            }
        }
    }

    fn is_flow(&mut self, span: Span) -> bool {
        let chars = self
            .chars
            .get_or_insert_with(|| self.text.chars().collect());
        matches!(chars.get(span.start.index()), Some('[' | '{'))
    }

    fn count(&mut self) -> Result<(), YamlError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(YamlError::TooManyNodes {
                limit: self.limits.max_nodes,
            });
        }
        Ok(())
    }

    fn node(&mut self, ev: Event<'a>, span: Span, depth: usize) -> Result<Node, YamlError> {
        self.count()?;
        let line = span.start.line();
        match ev {
            Event::Alias(_) => Err(YamlError::Anchor { line }),
            Event::Scalar(value, style, anchor, tag) => {
                refuse_anchor_or_tag(anchor, tag.is_some(), line)?;
                Ok(scalar(value, style, span, line))
            }
            Event::SequenceStart(anchor, tag) => {
                refuse_anchor_or_tag(anchor, tag.is_some(), line)?;
                self.check_depth(depth, line)?;
                self.sequence(span, depth, line)
            }
            Event::MappingStart(anchor, tag) => {
                refuse_anchor_or_tag(anchor, tag.is_some(), line)?;
                self.check_depth(depth, line)?;
                self.mapping(span, depth, line)
            }
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd
            | Event::SequenceEnd
            | Event::MappingEnd
            | Event::Nothing => Err(YamlError::Syntax {
                message: "unexpected structure".into(),
                line,
                col: span.start.col() + 1,
            }),
        }
    }

    /// The items of a sequence whose start event has been read, up to its end event.
    fn sequence(&mut self, span: Span, depth: usize, line: usize) -> Result<Node, YamlError> {
        let flow = self.is_flow(span);
        let mut items = Vec::new();
        loop {
            let (ev, span) = self.next()?;
            if matches!(ev, Event::SequenceEnd) {
                break;
            }
            items.push(self.node(ev, span, depth + 1)?);
        }
        Ok(Node::Seq { items, flow, line })
    }

    /// The entries of a mapping whose start event has been read, up to its end event. Keys must
    /// be scalars and must not repeat.
    fn mapping(&mut self, span: Span, depth: usize, line: usize) -> Result<Node, YamlError> {
        let flow = self.is_flow(span);
        let mut entries: Vec<(String, Node)> = Vec::new();
        let mut keys: std::collections::HashSet<String> = std::collections::HashSet::new();
        loop {
            let (ev, kspan) = self.next()?;
            let Some(key) = self.mapping_key(ev, kspan, depth)? else {
                break;
            };
            let (ev, vspan) = self.next()?;
            let value = self.node(ev, vspan, depth + 1)?;
            if !keys.insert(key.clone()) {
                return Err(YamlError::DuplicateKey {
                    key,
                    line: kspan.start.line(),
                });
            }
            entries.push((key, value));
        }
        Ok(Node::Map(Mapping {
            entries,
            flow,
            line,
        }))
    }

    /// The text of a mapping key, or `None` at the mapping's end. An alias or a collection as a
    /// key is refused.
    fn mapping_key(
        &mut self,
        ev: Event<'a>,
        kspan: Span,
        depth: usize,
    ) -> Result<Option<String>, YamlError> {
        match ev {
            Event::MappingEnd => Ok(None),
            Event::Scalar(..) => match self.node(ev, kspan, depth + 1)? {
                Node::Scalar { text, .. } => Ok(Some(text)),
                _ => unreachable!("a scalar event yields a scalar node"),
            },
            Event::Alias(_) => Err(YamlError::Anchor {
                line: kspan.start.line(),
            }),
            _ => Err(YamlError::ComplexKey {
                line: kspan.start.line(),
            }),
        }
    }

    fn check_depth(&self, depth: usize, line: usize) -> Result<(), YamlError> {
        if depth > self.limits.max_depth {
            return Err(YamlError::TooDeep {
                limit: self.limits.max_depth,
                line,
            });
        }
        Ok(())
    }
}

/// Anchors and tags are refused on every node, at the node's line.
fn refuse_anchor_or_tag(anchor: usize, tagged: bool, line: usize) -> Result<(), YamlError> {
    if anchor != 0 {
        return Err(YamlError::Anchor { line });
    }
    if tagged {
        return Err(YamlError::Tag { line });
    }
    Ok(())
}

/// A scalar node, keeping its source text and style.
fn scalar(value: std::borrow::Cow<'_, str>, style: PStyle, span: Span, line: usize) -> Node {
    let style = match style {
        PStyle::Plain => ScalarStyle::Plain,
        PStyle::SingleQuoted => ScalarStyle::SingleQuoted,
        PStyle::DoubleQuoted => ScalarStyle::DoubleQuoted,
        PStyle::Literal => ScalarStyle::Literal,
        PStyle::Folded => ScalarStyle::Folded,
    };
    // An empty plain value (`name:`) is reported as `~` with an empty span.
    let text = if style == ScalarStyle::Plain && span.start.index() == span.end.index() {
        String::new()
    } else {
        value.into_owned()
    };
    Node::Scalar { text, style, line }
}

/// A list of strings, or a single string taken as a one-item list.
pub(crate) fn string_list(node: Option<&Node>) -> Vec<String> {
    match node {
        Some(Node::Seq { items, .. }) => items
            .iter()
            .filter_map(Node::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Node::Scalar { text, .. }) if !text.trim().is_empty() => vec![text.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Option<Node>, YamlError> {
        parse(s, &YamlLimits::default())
    }

    #[test]
    fn scalars_keep_source_text() {
        let n = p("version: 1.0\nflag: true\nn: 007\nq: '1.0'\n")
            .unwrap()
            .unwrap();
        let m = n.as_map().unwrap();
        assert_eq!(m.get("version").unwrap().as_str(), Some("1.0"));
        assert_eq!(m.get("flag").unwrap().as_str(), Some("true"));
        assert_eq!(m.get("n").unwrap().as_str(), Some("007"));
        assert_eq!(n.to_raw_json()["version"], "1.0");
        assert_eq!(n.to_typed_json()["version"], 1.0);
        assert_eq!(n.to_typed_json()["q"], "1.0");
        assert_eq!(n.to_typed_json()["flag"], true);
    }

    #[test]
    fn empty_value_is_empty_string_but_tilde_is_kept() {
        let n = p("name:\nother: ~\n").unwrap().unwrap();
        let m = n.as_map().unwrap();
        assert_eq!(m.get("name").unwrap().as_str(), Some(""));
        assert_eq!(m.get("other").unwrap().as_str(), Some("~"));
    }

    #[test]
    fn flow_style_is_recorded() {
        let n = p("a: [x, y]\nb:\n  - z\n").unwrap().unwrap();
        let m = n.as_map().unwrap();
        assert!(m.get("a").unwrap().uses_flow());
        assert!(!m.get("b").unwrap().uses_flow());
        assert!(m.uses_flow());
    }

    #[test]
    fn duplicate_keys_are_refused() {
        assert!(matches!(
            p("a: 1\na: 2\n"),
            Err(YamlError::DuplicateKey { .. })
        ));
    }

    #[test]
    fn billion_laughs_is_refused_at_first_anchor() {
        let mut doc = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (prev, cur) in ["a", "b", "c", "d", "e", "f", "g", "h"]
            .iter()
            .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
        {
            doc.push_str(&format!(
                "{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
            ));
        }
        let start = std::time::Instant::now();
        assert!(matches!(p(&doc), Err(YamlError::Anchor { line: 1 })));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let doc = format!("a: {}{}", "[".repeat(100), "]".repeat(100));
        assert!(matches!(p(&doc), Err(YamlError::TooDeep { .. })));
    }

    #[test]
    fn too_many_nodes_is_refused() {
        let limits = YamlLimits {
            max_nodes: 10,
            ..YamlLimits::default()
        };
        let doc: String = (0..20).map(|i| format!("k{i}: v\n")).collect();
        assert!(matches!(
            parse(&doc, &limits),
            Err(YamlError::TooManyNodes { .. })
        ));
    }

    #[test]
    fn tags_and_complex_keys_are_refused() {
        assert!(matches!(p("a: !!str x\n"), Err(YamlError::Tag { .. })));
        assert!(matches!(
            p("? [a]\n: b\n"),
            Err(YamlError::ComplexKey { .. })
        ));
    }

    #[test]
    fn syntax_errors_carry_a_position() {
        match p("description: Use when: this\n") {
            Err(YamlError::Syntax { line, .. }) => assert_eq!(line, 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_documents_are_none() {
        assert_eq!(p("").unwrap(), None);
        assert_eq!(p("# just a comment\n").unwrap(), None);
    }

    #[test]
    fn python_str_of_nested_values() {
        let n = p("m:\n  a: b\n  l:\n    - x\n    - \"it's\"\n")
            .unwrap()
            .unwrap();
        let m = n.as_map().unwrap().get("m").unwrap();
        assert_eq!(m.python_str(), "{'a': 'b', 'l': ['x', \"it's\"]}");
    }
}
