//! Value objects and native JSON values as RDF literals.

use super::*;

impl Expander<'_> {
    pub(super) fn value_object(
        &mut self,
        obj: &Map<String, Value>,
        ctx: &Arc<ActiveContext>,
        path: &str,
    ) -> Result<Option<Literal>, JsonLdError> {
        let mut value = None;
        let mut datatype = None;
        let mut language = None;
        for (key, v) in obj {
            match ctx.expand(key, true) {
                Expanded::Keyword(k) if k == "@value" => value = Some(v),
                Expanded::Keyword(k) if k == "@type" => datatype = Some(v),
                Expanded::Keyword(k) if k == "@language" => language = Some(v),
                _ => {
                    return Err(Self::error(
                        &join(path, key),
                        "a value object may only hold @value, @type and @language",
                    ))
                }
            }
        }
        let datatype = match datatype {
            None => None,
            Some(Value::String(t)) => match ctx.expand(t, true) {
                Expanded::Iri(iri) => match NamedNode::new(&iri) {
                    Ok(dt) => Some(dt),
                    Err(_) => {
                        self.out.note_dropped(join(path, "@type"));
                        return Ok(None);
                    }
                },
                _ => {
                    return Err(Self::error(
                        &join(path, "@type"),
                        format!("{t:?} is not an absolute datatype IRI"),
                    ))
                }
            },
            Some(_) => return Err(Self::error(&join(path, "@type"), "must be a string")),
        };
        if datatype.is_some() && language.is_some() {
            return Err(Self::error(
                path,
                "a value cannot have both @type and @language",
            ));
        }
        Ok(match value {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(match (datatype, language) {
                (Some(dt), _) => Literal::new_typed_literal(s, dt),
                (None, Some(Value::String(lang))) => Literal::new_language_tagged_literal(s, lang)
                    .map_err(|e| {
                        Self::error(
                            &join(path, "@language"),
                            format!("invalid language tag: {e}"),
                        )
                    })?,
                (None, Some(_)) => {
                    return Err(Self::error(&join(path, "@language"), "must be a string"))
                }
                (None, None) => Literal::new_simple_literal(s),
            }),
            Some(v @ (Value::Bool(_) | Value::Number(_))) => {
                if language.is_some() {
                    return Err(Self::error(path, "only strings can have a @language"));
                }
                Some(native_literal(v, datatype, path)?)
            }
            Some(_) => {
                return Err(Self::error(
                    &join(path, "@value"),
                    "must be a string, number or boolean",
                ))
            }
        })
    }
}

/// JSON-LD's RDF form of a number or boolean (JSON-LD 1.1 §8.6, object to RDF conversion).
pub(super) fn native_literal(
    value: &Value,
    datatype: Option<NamedNode>,
    path: &str,
) -> Result<Literal, JsonLdError> {
    match value {
        Value::Bool(b) => Ok(Literal::new_typed_literal(
            if *b { "true" } else { "false" },
            datatype.unwrap_or_else(|| xsd::BOOLEAN.into_owned()),
        )),
        Value::Number(n) => {
            let as_double = datatype.as_ref().is_some_and(|d| d.as_ref() == xsd::DOUBLE);
            if let (Some(i), false) = (n.as_i64(), as_double) {
                return Ok(Literal::new_typed_literal(
                    i.to_string(),
                    datatype.unwrap_or_else(|| xsd::INTEGER.into_owned()),
                ));
            }
            if let (Some(u), false) = (n.as_u64(), as_double) {
                return Ok(Literal::new_typed_literal(
                    u.to_string(),
                    datatype.unwrap_or_else(|| xsd::INTEGER.into_owned()),
                ));
            }
            let f = n
                .as_f64()
                .ok_or_else(|| Expander::error(path, "number out of range"))?;
            if !as_double && f.fract() == 0.0 && f.abs() < 1e21 {
                return Ok(Literal::new_typed_literal(
                    format!("{f:.0}"),
                    datatype.unwrap_or_else(|| xsd::INTEGER.into_owned()),
                ));
            }
            Ok(Literal::new_typed_literal(
                canonical_double(f),
                datatype.unwrap_or_else(|| xsd::DOUBLE.into_owned()),
            ))
        }
        _ => Err(Expander::error(path, "not a number or boolean")),
    }
}

/// XSD canonical double as JSON-LD writes it: `1.5E0`, `1.0E-1`.
pub(super) fn canonical_double(f: f64) -> String {
    let s = format!("{f:.15E}");
    let (mantissa, exponent) = s.split_once('E').unwrap_or((&s, "0"));
    let mantissa = match mantissa.split_once('.') {
        Some((int, frac)) => {
            let frac = frac.trim_end_matches('0');
            format!("{int}.{}", if frac.is_empty() { "0" } else { frac })
        }
        None => format!("{mantissa}.0"),
    };
    format!("{mantissa}E{exponent}")
}
