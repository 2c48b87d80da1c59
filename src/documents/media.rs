//! Media types and file extensions of the documents traders attach.

/// `(media type, extension)`: the common formats of trade documents. The first pair of a
/// media type gives its extension.
const KNOWN: &[(&str, &str)] = &[
    ("application/pdf", "pdf"),
    ("application/json", "json"),
    ("application/ld+json", "jsonld"),
    ("application/xml", "xml"),
    ("text/xml", "xml"),
    ("text/plain", "txt"),
    ("text/csv", "csv"),
    ("text/html", "html"),
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/jpeg", "jpeg"),
    ("image/tiff", "tiff"),
    ("image/tiff", "tif"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
    ("image/svg+xml", "svg"),
    ("application/zip", "zip"),
    ("application/msword", "doc"),
    (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "docx",
    ),
    ("application/vnd.ms-excel", "xls"),
    (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xlsx",
    ),
    ("application/octet-stream", "bin"),
];

pub const OCTET_STREAM: &str = "application/octet-stream";

/// The essence of a media type (`type/subtype`, lower case), without parameters; `None` when
/// it is not of that form.
pub fn essence(media_type: &str) -> Option<String> {
    let essence = media_type.split(';').next()?.trim().to_ascii_lowercase();
    let (kind, sub) = essence.split_once('/')?;
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    (token(kind) && token(sub)).then_some(essence)
}

pub fn extension_of(media_type: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(m, _)| *m == media_type)
        .map(|(_, e)| *e)
}

pub fn media_type_of(extension: &str) -> Option<&'static str> {
    let extension = extension.to_ascii_lowercase();
    KNOWN.iter().find(|(_, e)| *e == extension).map(|(m, _)| *m)
}

/// The extension of a URL's last path segment (`invoice.PDF` → `pdf`), when it has a short one.
pub fn extension_in_path(path: &str) -> Option<String> {
    let last = path.rsplit('/').next()?;
    let (_, ext) = last.rsplit_once('.')?;
    (!ext.is_empty() && ext.len() <= 5 && ext.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| ext.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_and_extensions() {
        assert_eq!(
            essence("Application/PDF; charset=x").as_deref(),
            Some("application/pdf")
        );
        assert_eq!(essence("nonsense"), None);
        assert_eq!(essence("a/b c"), None);
        assert_eq!(extension_of("application/pdf"), Some("pdf"));
        assert_eq!(extension_of("image/jpeg"), Some("jpg"));
        assert_eq!(media_type_of("JPEG"), Some("image/jpeg"));
        assert_eq!(
            extension_in_path("/docs/invoice.PDF").as_deref(),
            Some("pdf")
        );
        assert_eq!(extension_in_path("/docs/invoice"), None);
        assert_eq!(extension_in_path("/a.b/c"), None);
    }
}
