//! How deeply and how widely a query nests, bounded before anything recursive touches it.
//!
//! The parser, the rewrite, the evaluator and even dropping a query recurse once per level of
//! its algebra, and a thread that runs out of stack aborts the whole process: a 2 KB filter of
//! 1,000 nested parentheses, a chain of 1,000 `UNION`s or `OPTIONAL`s or a 1,000-step path
//! each killed the node. And Oxigraph's planner, which the time limit cannot interrupt, takes
//! time that grows with the cube of a query's patterns and joins — measured on an empty store
//! (the node's rewrite included): 128 triple patterns in one group 0.15 s, 250 1.2 s, 500 10 s;
//! 64 `OPTIONAL`s 0.13 s, 128 1.8 s; 256 `UNION`s 0.14 s, 512 1.3 s — and meanwhile the query
//! holds its place among the organisation's and the node's running queries.
//!
//! So a query is checked in three steps, each keeping the next within bounds: its text (size,
//! the count of everything the parser can recurse on, bracket nesting and path steps) before
//! parsing; its algebra
//! right after, by a walk that stops at the first limit passed — at most [`MAX_DEPTH`] levels,
//! at most [`MAX_PATTERNS`] triple patterns, paths, joins, `OPTIONAL`s, `UNION`s and `MINUS`es
//! (weighed by what they cost the planner);
//! and everything from the parse to the last drop runs on a thread of [`STACK`] bytes
//! ([`super::threads`]), so that the levels allowed fit many times over (~5 KB per level measured for the
//! evaluation of a join chain, ~2.5 KB per nested parenthesis for the parser).

use spargebra::algebra::{
    AggregateExpression, AggregateFunction, Expression, Function, GraphPattern, OrderExpression,
    PropertyPathExpression,
};
use spargebra::term::NamedNodePattern;
use spargebra::Query;

use crate::error::{Error, Result};

/// The longest query text accepted.
pub const MAX_QUERY_BYTES: usize = 1 << 20;
/// Brackets (`(`, `{`, `[`) open at once.
pub const MAX_NESTING: usize = 128;
/// `/` and `|` outside strings, IRIs and comments: path steps (each a level of the parser's
/// recursion) and divisions.
pub const MAX_PATH_STEPS: usize = 2_000;
/// Levels of the algebra: patterns and expressions (`1 + 1 + …` nests one level per `+`).
pub const MAX_DEPTH: usize = 2_000;
/// Triple patterns (a path's steps each one), property paths and the operators joining
/// patterns (join, `UNION`, `MINUS`, `LATERAL`; `OPTIONAL` twice), `EXISTS` and sub-queries
/// included: what the planner's time grows with (up to ~0.3 s at this count on the machine
/// measured above).
pub const MAX_PATTERNS: usize = 128;
/// Characters of a `REPLACE` replacement and a `GROUP_CONCAT` separator.
pub const MAX_REPLACEMENT: usize = 64;
/// Arguments of one `CONCAT`.
pub const MAX_CONCAT: usize = 16;
/// The stack of the threads a query is parsed and evaluated on ([`super::threads`]). Only the
/// pages a query touched are backed by memory, until the thread ends.
pub const STACK: usize = 256 << 20;
/// Everything the parser may recurse on, counted in the raw text with nothing skipped — `(`,
/// `[`, `{`, `!` and `<<` — whatever the lexical scan made of it: even if all of them nested
/// (~2.5 KB of stack each), they fit [`STACK`]. The scan's guesses (what is an IRI, a string,
/// a comment) can be wrong; this bound does not guess.
pub const MAX_OPENERS: usize = 50_000;

/// Refuses a text the parser could recurse too deeply on, or that is too long.
pub fn check_text(text: &str) -> Result<()> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(refused(format!(
            "the query is {} bytes; at most {MAX_QUERY_BYTES} are accepted",
            text.len()
        )));
    }
    let openers = text.matches(['(', '[', '{', '!']).count() + text.matches("<<").count();
    if openers > MAX_OPENERS {
        return Err(refused(format!(
            "the query has {openers} brackets and negations; at most {MAX_OPENERS} are accepted"
        )));
    }
    let (nesting, steps) = scan(text);
    if nesting > MAX_NESTING {
        return Err(refused(format!(
            "the query nests brackets {nesting} deep; at most {MAX_NESTING} are accepted"
        )));
    }
    if steps > MAX_PATH_STEPS {
        return Err(refused(format!(
            "the query has {steps} path steps or divisions; at most {MAX_PATH_STEPS} are accepted"
        )));
    }
    Ok(())
}

/// Refuses an algebra deeper than [`MAX_DEPTH`].
pub fn check_depth(query: &Query) -> Result<()> {
    let pattern = match query {
        Query::Select { pattern, .. }
        | Query::Construct { pattern, .. }
        | Query::Describe { pattern, .. }
        | Query::Ask { pattern, .. } => pattern,
    };
    let walk = Depth {
        limit: MAX_DEPTH,
        patterns: std::cell::Cell::new(0),
        refusal: std::cell::RefCell::new(None),
    };
    // DESCRIBE is evaluated as the pattern once per described resource, joined by unions
    // (`isolate`): it costs what those copies would.
    let copies = match query {
        Query::Describe { .. } => super::isolate::described(pattern).len(),
        _ => 1,
    }
    .max(1);
    let walked = walk.pattern(pattern, 0)
        && walk.count(walk.patterns.get().saturating_mul(copies.saturating_sub(1)) + copies - 1);
    if walked {
        Ok(())
    } else if let Some(reason) = walk.refusal.take() {
        Err(refused(reason))
    } else if walk.patterns.get() > MAX_PATTERNS {
        Err(refused(format!(
            "the query has more than {MAX_PATTERNS} triple patterns, paths, joins, OPTIONALs, \
             UNIONs and MINUSes; the planner's time grows with their cube — split the query"
        )))
    } else {
        Err(refused(format!(
            "the query nests more than {MAX_DEPTH} levels of patterns and expressions"
        )))
    }
}

/// Why a predicate is refused: an engine's own (Virtuoso's `bif:contains` and the like, as
/// a predicate, search every graph's text past the graph checks of the rewrite).
fn extension(iri: &str) -> Option<String> {
    const ENGINES: [&str; 4] = [
        "bif:",
        "sql:",
        "virtrdf:",
        "http://www.openlinksw.com/schemas/",
    ];
    ENGINES.iter().any(|e| iri.starts_with(e)).then(|| {
        format!("the predicate <{iri}> is a SPARQL engine's extension; it is not available")
    })
}

fn refused(reason: String) -> Error {
    Error::invalid_field("query", reason)
}

/// The deepest bracket nesting and the number of `/` and `|` outside strings, IRIs and
/// comments. A lexical approximation of the grammar, erring towards counting.
fn scan(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut steps, mut i) = (0usize, 0usize, 0usize, 0usize);
    let mut bracket = |b: u8, depth: &mut usize| match b {
        b'(' | b'{' | b'[' => {
            *depth += 1;
            deepest = deepest.max(*depth);
        }
        b')' | b'}' | b']' => *depth = depth.saturating_sub(1),
        _ => {}
    };
    while i < bytes.len() {
        match bytes[i] {
            b'/' | b'|' => steps += 1,
            b'#' => i = skip_until(bytes, i, |b| b == b'\n' || b == b'\r'),
            // An escape in a prefixed name (`e:a\'`): the next byte is a name's, not a quote
            // or a comment.
            b'\\' => i += 1,
            b'<' => {
                // What looks like an IRI may be a comparison whose brackets the parser
                // recurses on: its openings are counted either way (an IRI's cost one level at
                // most), and only its net openings stay — a `)` in a real IRI closes nothing.
                let end = iri_end(bytes, i);
                let mut inside = depth;
                bytes[i..end].iter().for_each(|&b| bracket(b, &mut inside));
                depth = depth.max(inside);
                i = end;
            }
            quote @ (b'"' | b'\'') => i = string_end(bytes, i, quote),
            b => bracket(b, &mut depth),
        }
        i += 1;
    }
    (deepest, steps)
}

/// The index of the first byte after `start` that `stop` accepts (or the end).
fn skip_until(bytes: &[u8], start: usize, stop: impl Fn(u8) -> bool) -> usize {
    (start + 1..bytes.len())
        .find(|&j| stop(bytes[j]))
        .unwrap_or(bytes.len())
}

/// The `>` closing an IRI opened at `start`, or `start` itself when `<` is a comparison (the
/// grammar's IRIREF holds no spaces, quotes or brackets).
fn iri_end(bytes: &[u8], start: usize) -> usize {
    let end = skip_until(bytes, start, |b| {
        b == b'>' || b <= b' ' || b"<\"{}|^`\\".contains(&b)
    });
    if bytes.get(end) == Some(&b'>') {
        end
    } else {
        start
    }
}

/// The last quote of a string opened at `start` (`"…"`, or a long `"""…"""`), escapes skipped.
fn string_end(bytes: &[u8], start: usize, quote: u8) -> usize {
    let tripled = |j: usize| bytes.get(j..j + 3) == Some(&[quote; 3][..]);
    let long = tripled(start);
    let mut j = if long { start + 3 } else { start + 1 };
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 1,
            b if b == quote && !long => return j,
            b if b == quote && tripled(j) => return j + 2,
            _ => {}
        }
        j += 1;
    }
    bytes.len()
}

/// A depth-first walk that gives up as soon as it passes its limit, so its own recursion
/// stays within the limit whatever the query.
struct Depth {
    limit: usize,
    /// Patterns and joining operators seen so far ([`MAX_PATTERNS`]).
    patterns: std::cell::Cell<usize>,
    /// Why a function call is refused ([`Depth::multiplies`]).
    refusal: std::cell::RefCell<Option<String>>,
}

impl Depth {
    /// `false` (and why) for the calls whose result can be many times their arguments, which
    /// the evaluator builds whole before any limit sees it: a `REPLACE` whose replacement is
    /// not a short string (nested three deep with `"$0"` a thousand times, one reached 1 GB),
    /// a `CONCAT` of many arguments, a `GROUP_CONCAT` with a long separator (a 1 MB one over
    /// 1,500 values: 3 GB). What they build within these bounds is checked against the value
    /// limit (`guard::BOUNDED`).
    fn multiplies(&self, reason: Option<String>) -> bool {
        match reason {
            Some(reason) => {
                *self.refusal.borrow_mut() = Some(reason);
                false
            }
            None => true,
        }
    }

    fn call(&self, f: &Function, args: &[Expression]) -> Option<String> {
        match f {
            Function::Replace => match args.get(2) {
                Some(Expression::Literal(l)) if l.value().chars().count() <= MAX_REPLACEMENT => {
                    None
                }
                _ => Some(format!(
                    "REPLACE's replacement must be a string of at most {MAX_REPLACEMENT} characters"
                )),
            },
            Function::Concat if args.len() > MAX_CONCAT => Some(format!(
                "CONCAT takes at most {MAX_CONCAT} arguments here; nest them"
            )),
            _ => None,
        }
    }

    /// Counts `n` patterns or operators; `false` past [`MAX_PATTERNS`].
    fn count(&self, n: usize) -> bool {
        self.patterns.set(self.patterns.get().saturating_add(n));
        self.patterns.get() <= MAX_PATTERNS
    }

    fn pattern(&self, p: &GraphPattern, d: usize) -> bool {
        use GraphPattern as P;
        if d > self.limit {
            return false;
        }
        let d = d + 1;
        let weight = match p {
            P::Path { .. }
            | P::Join { .. }
            | P::Lateral { .. }
            | P::Union { .. }
            | P::Minus { .. } => 1,
            // The planner's dearest: 0.71 s for 99 of them counted once.
            P::LeftJoin { .. } => 2,
            _ => 0,
        };
        if !self.count(weight) {
            return false;
        }
        match p {
            P::Bgp { patterns } => {
                self.count(patterns.len())
                    && patterns.iter().all(|t| match &t.predicate {
                        NamedNodePattern::NamedNode(n) => self.multiplies(extension(n.as_str())),
                        NamedNodePattern::Variable(_) => true,
                    })
            }
            P::Path { path, .. } => self.path(path, d),
            P::Join { left, right }
            | P::Lateral { left, right }
            | P::Union { left, right }
            | P::Minus { left, right } => self.pattern(left, d) && self.pattern(right, d),
            P::LeftJoin {
                left,
                right,
                expression,
            } => {
                self.pattern(left, d)
                    && self.pattern(right, d)
                    && expression.as_ref().is_none_or(|e| self.expression(e, d))
            }
            P::Filter { expr, inner } => self.expression(expr, d) && self.pattern(inner, d),
            P::Extend {
                inner, expression, ..
            } => self.pattern(inner, d) && self.expression(expression, d),
            P::OrderBy { inner, expression } => {
                self.pattern(inner, d)
                    && expression.iter().all(|o| match o {
                        OrderExpression::Asc(e) | OrderExpression::Desc(e) => self.expression(e, d),
                    })
            }
            P::Group {
                inner, aggregates, ..
            } => self.pattern(inner, d) && aggregates.iter().all(|(_, a)| match a {
                AggregateExpression::CountSolutions { .. } => true,
                AggregateExpression::FunctionCall { name, expr, .. } => {
                    let long = matches!(name, AggregateFunction::GroupConcat { separator: Some(s) }
                                if s.chars().count() > MAX_REPLACEMENT);
                    self.multiplies(long.then(|| {
                        format!(
                            "GROUP_CONCAT's separator must be at most {MAX_REPLACEMENT} characters"
                        )
                    })) && self.expression(expr, d)
                }
            }),
            P::Graph { inner, .. }
            | P::Project { inner, .. }
            | P::Distinct { inner }
            | P::Reduced { inner }
            | P::Slice { inner, .. }
            | P::Service { inner, .. } => self.pattern(inner, d),
            P::Values { .. } => true,
        }
    }

    fn expression(&self, e: &Expression, d: usize) -> bool {
        use Expression as E;
        if d > self.limit {
            return false;
        }
        let d = d + 1;
        match e {
            E::NamedNode(_) | E::Literal(_) | E::Variable(_) | E::Bound(_) => true,
            E::Exists(p) => self.pattern(p, d),
            E::Or(a, b)
            | E::And(a, b)
            | E::Equal(a, b)
            | E::SameTerm(a, b)
            | E::Greater(a, b)
            | E::GreaterOrEqual(a, b)
            | E::Less(a, b)
            | E::LessOrEqual(a, b)
            | E::Add(a, b)
            | E::Subtract(a, b)
            | E::Multiply(a, b)
            | E::Divide(a, b) => self.expression(a, d) && self.expression(b, d),
            E::In(a, list) => self.expression(a, d) && list.iter().all(|e| self.expression(e, d)),
            E::UnaryPlus(a) | E::UnaryMinus(a) | E::Not(a) => self.expression(a, d),
            E::If(a, b, c) => {
                self.expression(a, d) && self.expression(b, d) && self.expression(c, d)
            }
            E::FunctionCall(f, list) => {
                self.multiplies(self.call(f, list)) && list.iter().all(|e| self.expression(e, d))
            }
            E::Coalesce(list) => list.iter().all(|e| self.expression(e, d)),
        }
    }

    fn path(&self, p: &PropertyPathExpression, d: usize) -> bool {
        use PropertyPathExpression as PP;
        if d > self.limit {
            return false;
        }
        let d = d + 1;
        match p {
            PP::NamedNode(n) => self.multiplies(extension(n.as_str())),
            PP::NegatedPropertySet(_) => true,
            PP::Reverse(a) | PP::ZeroOrMore(a) | PP::OneOrMore(a) | PP::ZeroOrOne(a) => {
                self.path(a, d)
            }
            PP::Sequence(a, b) | PP::Alternative(a, b) => self.path(a, d) && self.path(b, d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Query {
        spargebra::SparqlParser::new().parse_query(text).unwrap()
    }

    #[test]
    fn the_text_scan_counts_brackets_and_steps_outside_strings_iris_and_comments() {
        // An IRI's brackets count: it might have been a comparison.
        assert_eq!(scan("SELECT * { ?s <http://x/a/b/(c)> ?o }"), (2, 0));
        assert_eq!(
            scan("SELECT * { ?s ?p ?o FILTER(?o < 3 && ?o > (1)) }"),
            (3, 0)
        );
        assert_eq!(scan("SELECT * { ?s <a>/<b>|<c> ?o } # ((((/ \n"), (1, 2));
        assert_eq!(scan(r#"SELECT * { ?s ?p "((\"/" . ?s ?p '{|}' }"#), (1, 0));
        assert_eq!(scan(r#"SELECT * { ?s ?p """a "(( "" b""" }"#), (1, 0));
        assert_eq!(scan(r#"SELECT * { ?s ?p "" . ?s ?p '''{'' ''' }"#), (1, 0));
        // A comparison's `<` before a later `>` hides no bracket; nor does an escape.
        let hidden = format!(
            "SELECT * {{ FILTER(1<{}1{}>0) }}",
            "(".repeat(300),
            ")".repeat(300)
        );
        assert!(scan(&hidden).0 > MAX_NESTING);
        assert_eq!(scan(r"SELECT * { FILTER(e:a\' + ((1))) }"), (4, 0));
        // A `)` inside what looks like an IRI does not close the brackets before it.
        let iri = format!(
            "SELECT * {{ FILTER({}<x:{}>(1)) }}",
            "(".repeat(200),
            ")".repeat(201)
        );
        assert!(check_text(&iri).is_err());
        // Whatever the scan misreads, every opener counts.
        let hidden = format!(
            "SELECT * {{ FILTER(?a<'>' && {}1{}) }}",
            "(".repeat(60_000),
            ")".repeat(60_000)
        );
        let refused = check_text(&hidden).unwrap_err().to_string();
        assert!(refused.contains("brackets and negations"), "{refused}");
        assert!(check_text(&format!("SELECT * {{ FILTER({}1) }}", "!".repeat(60_000))).is_err());
        let deep = format!(
            "SELECT * {{ FILTER({}1{}) }}",
            "(".repeat(200),
            ")".repeat(200)
        );
        assert!(check_text(&deep).is_err());
        let ok = format!(
            "SELECT * {{ FILTER({}1{}) }}",
            "(".repeat(100),
            ")".repeat(100)
        );
        assert!(check_text(&ok).is_ok());
    }

    #[test]
    fn the_walk_counts_levels_patterns_and_joins() {
        let ok = |q: String| check_depth(&parsed(&q)).is_ok();
        // UNION of n groups of one pattern: n patterns and n - 1 unions.
        let union =
            |n: usize| format!("SELECT * {{ {} }}", vec!["{ ?s ?p ?o }"; n].join(" UNION "));
        assert!(ok(union(64)));
        assert!(!ok(union(65)));
        // One pattern, then each OPTIONAL twice and its pattern.
        let optional = |n: usize| {
            format!(
                "SELECT * {{ ?s ?p ?o {} }}",
                "OPTIONAL { ?s ?p ?o } ".repeat(n)
            )
        };
        assert!(ok(optional(42)));
        assert!(!ok(optional(43)));
        let group = |n: usize| {
            let patterns: String = (0..n).map(|i| format!("?s <urn:p{i}> ?o{i} . ")).collect();
            format!("SELECT * {{ {patterns} }}")
        };
        assert!(ok(group(128)));
        assert!(!ok(group(129)));
        // Inside EXISTS too.
        assert!(!ok(format!(
            "SELECT * {{ ?s ?p ?o FILTER EXISTS {{ {} }} }}",
            &group(200)[9..]
        )));
        let sum = |n: usize| format!("SELECT (1{} AS ?x) {{}}", "+1".repeat(n));
        assert!(ok(sum(1998)));
        assert!(!ok(sum(2000)));
    }

    #[test]
    fn calls_that_multiply_their_arguments_are_bounded() {
        let ok = |q: &str| check_depth(&parsed(q)).is_ok();
        assert!(ok(r#"SELECT (REPLACE("ab", "a", "$0-") AS ?x) {}"#));
        assert!(!ok(&format!(
            r#"SELECT (REPLACE("ab", "a", "{}") AS ?x) {{}}"#,
            "$0".repeat(33)
        )));
        assert!(!ok(
            r#"SELECT ?x { BIND("a" AS ?r) BIND(REPLACE("ab", "a", ?r) AS ?x) }"#
        ));
        let concat = |n: usize| {
            format!(
                "SELECT (CONCAT({}) AS ?x) {{}}",
                vec!["\"a\""; n].join(", ")
            )
        };
        assert!(ok(&concat(16)));
        assert!(!ok(&concat(17)));
        assert!(ok(
            r#"SELECT (GROUP_CONCAT(?o; SEPARATOR=", ") AS ?x) { ?s ?p ?o }"#
        ));
        let long = format!(
            r#"SELECT (GROUP_CONCAT(?o; SEPARATOR="{}") AS ?x) {{ ?s ?p ?o }}"#,
            "y".repeat(65)
        );
        assert!(!ok(&long));
    }

    #[test]
    fn describe_counts_its_copies_and_engine_predicates_are_refused() {
        let ok = |q: &str| check_depth(&parsed(q)).is_ok();
        let vars = |n: usize| (0..n).map(|i| format!("?v{i} ")).collect::<String>();
        assert!(ok(&format!("DESCRIBE {} {{ ?v0 ?p ?o }}", vars(64))));
        assert!(!ok(&format!("DESCRIBE {} {{ ?v0 ?p ?o }}", vars(65))));
        assert!(!ok(&format!("DESCRIBE {} {{}}", vars(100_000))));
        assert!(ok("DESCRIBE * {}"));
        assert!(!ok(&format!(
            "DESCRIBE {} {{ ?v0 ?p ?o }} LIMIT 1",
            vars(65)
        )));
        assert!(ok("DESCRIBE <urn:a> { <urn:a> <urn:b> <urn:c> }"));
        assert!(!ok("SELECT * { ?o <bif:contains> \"x\" }"));
        assert!(!ok(
            "SELECT * { ?s <http://www.openlinksw.com/schemas/bif#contains>/<urn:p> ?o }"
        ));
        assert!(ok("SELECT * { ?s <urn:p>/<urn:q> ?o }"));
    }

    #[test]
    fn the_stack_holds_the_deepest_query_the_text_check_lets_through() {
        // The scan misreads `<'>` (an IRI, then a string to the end): only the raw count of
        // openers bounds what follows. At that count, parsing and refusing it must fit.
        let n = MAX_OPENERS - 10;
        let texts = [
            format!(
                "SELECT * {{ FILTER(?a<'>' && {}1{}) }}",
                "(".repeat(n),
                ")".repeat(n)
            ),
            format!("SELECT * {{ FILTER(?a<'>' && {}1) }}", "!".repeat(n)),
        ];
        for text in texts {
            assert!(check_text(&text).is_ok());
            // Returning at all is the point (a thread out of stack aborts the process);
            // the parentheses parse, the negations are refused by the algebra's depth.
            std::thread::Builder::new()
                .stack_size(STACK)
                .spawn(move || crate::sparql::Sparql::parse(&text).map(|_| ()))
                .unwrap()
                .join()
                .unwrap()
                .ok();
        }
    }
}
