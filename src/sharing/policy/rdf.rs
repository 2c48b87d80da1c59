//! The policy as ODRL RDF in its own graph.

use oxigraph::model::vocab::rdf;
use oxigraph::model::{BlankNode, GraphName, Literal, NamedNode, Quad, Term};

use super::{Constraint, Permission, Policy};
use crate::vocab::{dsn, ODRL};

fn odrl(local: &str) -> NamedNode {
    NamedNode::new_unchecked(format!("{ODRL}{local}"))
}

impl Policy {
    /// The policy as ODRL RDF in `graph`, plus the node's bookkeeping (`dsn:created`).
    pub fn quads(&self, target: &str, graph: &NamedNode) -> Vec<Quad> {
        let g = GraphName::NamedNode(graph.clone());
        let policy = NamedNode::new_unchecked(&self.uid);
        let mut quads = vec![
            Quad::new(policy.clone(), rdf::TYPE, odrl("Set"), g.clone()),
            Quad::new(
                policy.clone(),
                odrl("uid"),
                NamedNode::new_unchecked(&self.uid),
                g.clone(),
            ),
            Quad::new(
                policy.clone(),
                dsn("created"),
                Literal::new_typed_literal(&self.created, crate::vocab::xsd("dateTime")),
                g.clone(),
            ),
        ];
        for p in &self.permissions {
            permission_quads(&policy, p, target, &g, &mut quads);
        }
        quads
    }
}

fn permission_quads(
    policy: &NamedNode,
    p: &Permission,
    target: &str,
    g: &GraphName,
    quads: &mut Vec<Quad>,
) {
    let perm = BlankNode::default();
    quads.push(Quad::new(
        policy.clone(),
        odrl("permission"),
        perm.clone(),
        g.clone(),
    ));
    quads.push(Quad::new(
        perm.clone(),
        odrl("action"),
        odrl("read"),
        g.clone(),
    ));
    quads.push(Quad::new(
        perm.clone(),
        odrl("assignee"),
        NamedNode::new_unchecked(&p.assignee),
        g.clone(),
    ));
    quads.push(Quad::new(
        perm.clone(),
        odrl("target"),
        NamedNode::new_unchecked(target),
        g.clone(),
    ));
    for c in &p.constraints {
        constraint_quads(&perm, c, g, quads);
    }
}

fn constraint_quads(perm: &BlankNode, c: &Constraint, g: &GraphName, quads: &mut Vec<Quad>) {
    let node = BlankNode::default();
    quads.push(Quad::new(
        perm.clone(),
        odrl("constraint"),
        node.clone(),
        g.clone(),
    ));
    quads.push(Quad::new(
        node.clone(),
        odrl("leftOperand"),
        c.operand.iri(),
        g.clone(),
    ));
    quads.push(Quad::new(
        node.clone(),
        odrl("operator"),
        odrl(if c.any_of { "isAnyOf" } else { "eq" }),
        g.clone(),
    ));
    let right: Term = if c.any_of {
        list(&c.values, g, quads)
    } else {
        Literal::new_simple_literal(&c.values[0]).into()
    };
    quads.push(Quad::new(node, odrl("rightOperand"), right, g.clone()));
}

/// An ODRL list operand: one rdf:List of the values.
fn list(values: &[String], g: &GraphName, quads: &mut Vec<Quad>) -> Term {
    let mut rest: Term = rdf::NIL.into_owned().into();
    for v in values.iter().rev() {
        let cell = BlankNode::default();
        quads.push(Quad::new(
            cell.clone(),
            rdf::FIRST,
            Literal::new_simple_literal(v),
            g.clone(),
        ));
        quads.push(Quad::new(cell.clone(), rdf::REST, rest, g.clone()));
        rest = cell.into();
    }
    rest
}
