//! Small helpers over Oxigraph's terms and query solutions, used at every layer above.

use oxigraph::model::{Literal, NamedNode, Term, Triple};
use oxigraph::sparql::{QuerySolution, Variable};

/// A SPARQL query's whole answer, from the store or from the replica.
pub enum Answer {
    Solutions {
        variables: Vec<Variable>,
        rows: Vec<QuerySolution>,
    },
    Boolean(bool),
    Graph(Vec<Triple>),
}

/// A plain string literal (how ids and dates are stored and bound into queries).
pub fn literal(s: &str) -> Term {
    Literal::new_simple_literal(s).into()
}

/// A solution's value of `var` as text: a literal's value or an IRI.
pub fn text(row: &QuerySolution, var: &str) -> Option<String> {
    match row.get(var) {
        Some(Term::Literal(l)) => Some(l.value().to_owned()),
        Some(Term::NamedNode(n)) => Some(n.as_str().to_owned()),
        _ => None,
    }
}

/// A solution's value of `var` when it is an IRI.
pub fn node(row: &QuerySolution, var: &str) -> Option<NamedNode> {
    match row.get(var) {
        Some(Term::NamedNode(n)) => Some(n.clone()),
        _ => None,
    }
}
