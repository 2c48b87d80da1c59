//! The calls whose result can be many times the size of their arguments (`REPLACE`, `CONCAT`),
//! each wrapped in the value limit ([`guard::BOUNDED`](super::guard::BOUNDED)) wherever it
//! stands — a filter, an `OPTIONAL`'s condition, an ordering, an aggregate, inside another
//! call — so that no such value feeds the next call past the limit. The limit on `BIND` and
//! projected values alone saw only the last of three nested `REPLACE`s, after the evaluator
//! had built a gigabyte for it. Their arguments are bounded too ([`super::depth`]).

use spargebra::algebra::{AggregateExpression, Expression, Function, OrderExpression};

use super::guard::{call, BOUNDED};

// Takes the box the algebra holds and hands back a new one: the expression moves through.
#[allow(clippy::boxed_local)]
fn boxed(e: Box<Expression>) -> Box<Expression> {
    Box::new(bounded(*e))
}

fn all(list: Vec<Expression>) -> Vec<Expression> {
    list.into_iter().map(bounded).collect()
}

/// `e` with every `REPLACE` and `CONCAT` in it checked against the value limit.
pub fn bounded(e: Expression) -> Expression {
    use Expression as E;
    match e {
        E::FunctionCall(f @ (Function::Replace | Function::Concat), args) => {
            call(BOUNDED, vec![E::FunctionCall(f, all(args))])
        }
        E::FunctionCall(f, args) => E::FunctionCall(f, all(args)),
        // The pattern of an EXISTS is guarded as any other: its BINDs and filters too.
        E::Exists(p) => E::Exists(Box::new(super::guard::guard(*p))),
        E::NamedNode(_) | E::Literal(_) | E::Variable(_) | E::Bound(_) => e,
        E::Or(a, b) => E::Or(boxed(a), boxed(b)),
        E::And(a, b) => E::And(boxed(a), boxed(b)),
        E::Equal(a, b) => E::Equal(boxed(a), boxed(b)),
        E::SameTerm(a, b) => E::SameTerm(boxed(a), boxed(b)),
        E::Greater(a, b) => E::Greater(boxed(a), boxed(b)),
        E::GreaterOrEqual(a, b) => E::GreaterOrEqual(boxed(a), boxed(b)),
        E::Less(a, b) => E::Less(boxed(a), boxed(b)),
        E::LessOrEqual(a, b) => E::LessOrEqual(boxed(a), boxed(b)),
        E::In(a, list) => E::In(boxed(a), all(list)),
        E::Add(a, b) => E::Add(boxed(a), boxed(b)),
        E::Subtract(a, b) => E::Subtract(boxed(a), boxed(b)),
        E::Multiply(a, b) => E::Multiply(boxed(a), boxed(b)),
        E::Divide(a, b) => E::Divide(boxed(a), boxed(b)),
        E::UnaryPlus(a) => E::UnaryPlus(boxed(a)),
        E::UnaryMinus(a) => E::UnaryMinus(boxed(a)),
        E::Not(a) => E::Not(boxed(a)),
        E::If(a, b, c) => E::If(boxed(a), boxed(b), boxed(c)),
        E::Coalesce(list) => E::Coalesce(all(list)),
    }
}

pub fn ordered(o: OrderExpression) -> OrderExpression {
    match o {
        OrderExpression::Asc(e) => OrderExpression::Asc(bounded(e)),
        OrderExpression::Desc(e) => OrderExpression::Desc(bounded(e)),
    }
}

pub fn aggregate(a: AggregateExpression) -> AggregateExpression {
    match a {
        AggregateExpression::FunctionCall {
            name,
            expr,
            distinct,
        } => AggregateExpression::FunctionCall {
            name,
            expr: bounded(expr),
            distinct,
        },
        count @ AggregateExpression::CountSolutions { .. } => count,
    }
}
