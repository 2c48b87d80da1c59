//! Labels of the UN/ECE code lists the views resolve, from the shipped D23B code lists.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::error::{Error, Result};

pub struct CodeLists {
    transport_modes: HashMap<String, String>,
    transport_means_types: HashMap<String, String>,
    documents: HashMap<String, String>,
}

fn load(text: &str) -> Result<HashMap<String, String>> {
    let list: Value = serde_json::from_str(text).map_err(Error::internal)?;
    Ok(list["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            Some((
                v["value"].as_str()?.to_owned(),
                v["comment"].as_str()?.to_owned(),
            ))
        })
        .collect())
}

impl CodeLists {
    pub fn load() -> Result<Self> {
        Ok(Self {
            transport_modes: load(include_str!(
                "../../contexts/codelists/transportmodecodelist.json"
            ))?,
            transport_means_types: load(include_str!(
                "../../contexts/codelists/transportmeanstypecodelist.json"
            ))?,
            documents: load(include_str!(
                "../../contexts/codelists/documentcodelist.json"
            ))?,
        })
    }

    /// UN/ECE Recommendation 19.
    pub fn transport_mode(&self, code: &str) -> Option<&str> {
        self.transport_modes.get(code).map(String::as_str)
    }

    /// UN/ECE Recommendation 28.
    pub fn transport_means_type(&self, code: &str) -> Option<&str> {
        self.transport_means_types.get(code).map(String::as_str)
    }

    /// UNTDID 1001.
    pub fn document(&self, code: &str) -> Option<&str> {
        self.documents.get(code).map(String::as_str)
    }

    /// `{raw, code, label}`; an unknown code keeps `raw` and `code` and has no label.
    pub fn resolve(
        &self,
        raw: &str,
        label: impl for<'a> Fn(&'a Self, &str) -> Option<&'a str>,
    ) -> Value {
        let code = super::summary::code_of(raw);
        let mut v = json!({"raw": raw, "code": code});
        if let Some(l) = label(self, code) {
            v["label"] = json!(l);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_from_the_shipped_lists() {
        let c = CodeLists::load().unwrap();
        assert_eq!(c.transport_mode("1"), Some("Maritime transport"));
        assert_eq!(
            c.transport_means_type("1511"),
            Some("Full container ship/cellular vessel")
        );
        assert_eq!(c.document("380"), Some("Commercial invoice"));
        let unknown = c.resolve("unece:TransportModeCodeList#42", CodeLists::transport_mode);
        assert_eq!(
            unknown,
            json!({"raw": "unece:TransportModeCodeList#42", "code": "42"})
        );
    }
}
