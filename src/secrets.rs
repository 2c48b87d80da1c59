//! Secrets the node generates on first start and keeps in `<data-dir>/secrets/` (mode 0600):
//! the operator API key (unless configured) and the session-signing key.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;

/// 32 random bytes from the OS, URL-safe base64, behind a readable prefix.
pub fn random_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// A secret read from `dir/name`, or created there when the file does not exist yet.
/// Returns the secret and the path when it was created now (so the caller can log that once).
pub fn load_or_create(
    dir: &Path,
    name: &str,
    make: impl FnOnce() -> String,
) -> io::Result<(String, Option<PathBuf>)> {
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    let path = dir.join(name);
    match fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => return Ok((s.trim().to_owned(), None)),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("secret file {} is empty", path.display()),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let secret = make();
    // Written to a temporary file and renamed, so a crash never leaves a half-written secret.
    let tmp = dir.join(format!(".{name}.tmp"));
    let _ = fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(secret.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    fs::rename(&tmp, &path)?;
    fs::File::open(dir)?.sync_all()?;
    Ok((secret, Some(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_once_then_read_back_with_private_mode() {
        let dir = tempfile::tempdir().unwrap();
        let (first, created) = load_or_create(dir.path(), "k", || random_token("x_")).unwrap();
        let path = created.expect("created on first call");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (second, created_again) = load_or_create(dir.path(), "k", || "other".into()).unwrap();
        assert_eq!(first, second);
        assert!(created_again.is_none());
        assert!(first.starts_with("x_") && first.len() > 40);
    }
}
