//! Expressions, rewritten for the patterns their `EXISTS` hold.

use spargebra::algebra::{Expression, Function};

use super::{callable, Refused, Rewriter};

impl Rewriter<'_> {
    #[allow(clippy::boxed_local)]
    fn boxed_expr(
        &mut self,
        e: Box<Expression>,
        in_graph: bool,
    ) -> Result<Box<Expression>, Refused> {
        Ok(Box::new(self.expression(*e, in_graph)?))
    }

    fn expressions(
        &mut self,
        es: Vec<Expression>,
        in_graph: bool,
    ) -> Result<Vec<Expression>, Refused> {
        es.into_iter()
            .map(|e| self.expression(e, in_graph))
            .collect()
    }

    pub(super) fn expression(
        &mut self,
        e: Expression,
        in_graph: bool,
    ) -> Result<Expression, Refused> {
        use Expression as E;
        Ok(match e {
            E::NamedNode(_) | E::Literal(_) | E::Variable(_) | E::Bound(_) => e,
            E::Exists(p) => E::Exists(self.correlated(p, in_graph)?),
            E::Or(a, b) => E::Or(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::And(a, b) => E::And(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::Equal(a, b) => {
                E::Equal(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::SameTerm(a, b) => {
                E::SameTerm(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Greater(a, b) => {
                E::Greater(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::GreaterOrEqual(a, b) => {
                E::GreaterOrEqual(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Less(a, b) => E::Less(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::LessOrEqual(a, b) => {
                E::LessOrEqual(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::In(a, list) => E::In(
                self.boxed_expr(a, in_graph)?,
                self.expressions(list, in_graph)?,
            ),
            E::Add(a, b) => E::Add(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?),
            E::Subtract(a, b) => {
                E::Subtract(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Multiply(a, b) => {
                E::Multiply(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::Divide(a, b) => {
                E::Divide(self.boxed_expr(a, in_graph)?, self.boxed_expr(b, in_graph)?)
            }
            E::UnaryPlus(a) => E::UnaryPlus(self.boxed_expr(a, in_graph)?),
            E::UnaryMinus(a) => E::UnaryMinus(self.boxed_expr(a, in_graph)?),
            E::Not(a) => E::Not(self.boxed_expr(a, in_graph)?),
            E::If(a, b, c) => E::If(
                self.boxed_expr(a, in_graph)?,
                self.boxed_expr(b, in_graph)?,
                self.boxed_expr(c, in_graph)?,
            ),
            E::Coalesce(list) => E::Coalesce(self.expressions(list, in_graph)?),
            E::FunctionCall(f, args) => {
                if let Function::Custom(iri) = &f {
                    callable(iri)?;
                }
                E::FunctionCall(f, self.expressions(args, in_graph)?)
            }
        })
    }
}
