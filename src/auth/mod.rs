//! Who is calling: API keys, login, sessions.
//!
//! Every request but login carries an `x-api-key` (the operator's key or an organisation's own
//! key). Data endpoints also need a session: the `access_token` cookie or a Bearer JWT. A key
//! of one organisation never authorises a session of another.

pub mod password;
pub mod session;
pub mod throttle;

use std::net::IpAddr;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::accounts::people::Role;
use crate::accounts::{Accounts, CreatedAccount, KeyHolder, NewAccount};
use crate::error::{Error, Result};
use password::Passwords;
pub use session::{Claims, Session, Sessions};
use throttle::LoginThrottle;

/// The authenticated caller of a data endpoint.
#[derive(Debug, Clone)]
pub struct Caller {
    /// User DID.
    pub user: String,
    /// Organisation DID.
    pub organization: String,
    /// The operator account's own session, with the operator's key: what manages policies,
    /// organisations and backups. (The operator key with a user's session acts as that user.)
    pub operator: bool,
    /// When the session ends, in milliseconds since the Unix epoch.
    pub expiry_ms: i64,
    /// The session's id (its JWT's `jti`) and the key it was made with; empty for the node's
    /// own work on an organisation's behalf.
    pub session: String,
    pub key_id: String,
    /// The user's session generation the session was issued under.
    pub generation: u64,
    /// A console session: authenticated by its cookie alone (`Claims::con`).
    pub console: bool,
}

impl Caller {
    /// The node itself acting as `user` of `organization` (the bulk load, webhook bodies).
    pub fn acting_for(user: String, organization: String) -> Self {
        Self {
            user,
            organization,
            operator: false,
            expiry_ms: i64::MAX,
            session: String::new(),
            key_id: String::new(),
            generation: 0,
            console: false,
        }
    }

    /// Who the audit log names for this caller's changes.
    pub fn actor(&self) -> crate::accounts::audit::Actor {
        crate::accounts::audit::Actor {
            user: self.user.clone(),
            organization: self.organization.clone(),
        }
    }
}

pub struct AccountInput {
    pub email: String,
    pub password: String,
    pub profile_name: Option<String>,
    pub organization: Option<String>,
}

pub struct LoggedIn {
    pub session: Session,
    pub identity: String,
}

pub struct Auth {
    operator_key_hash: [u8; 32],
    sessions: Sessions,
    passwords: Passwords,
    /// Login attempts per normalised email, and (with a higher bar, since many users share an
    /// address behind NAT) per client address; a successful login takes its attempt back.
    by_email: LoginThrottle,
    by_client: LoginThrottle,
    accounts: Arc<Accounts>,
}

const BAD_LOGIN: &str = "invalid email or password";

fn missing_session() -> Error {
    Error::Unauthorized("missing session: send the access_token cookie or a Bearer token".into())
}

/// The key id sessions made with the operator's key carry.
const OPERATOR_KEY_ID: &str = "operator";

impl Auth {
    pub fn new(
        operator_key: &str,
        sessions: Sessions,
        max_failures: u32,
        window: std::time::Duration,
        accounts: Arc<Accounts>,
    ) -> Result<Self> {
        Ok(Self {
            operator_key_hash: Sha256::digest(operator_key.as_bytes()).into(),
            sessions,
            passwords: Passwords::new()?,
            by_email: LoginThrottle::new(max_failures, window),
            by_client: LoginThrottle::new(max_failures.saturating_mul(4), window),
            accounts,
        })
    }

    /// Resolves an `x-api-key` header value.
    pub fn key_holder(&self, key: Option<&str>) -> Result<KeyHolder> {
        self.holder(key).map(|(holder, _)| holder)
    }

    /// The key's holder and the key's id (`operator` for the operator's key).
    fn holder(&self, key: Option<&str>) -> Result<(KeyHolder, String)> {
        let key = key.ok_or_else(|| Error::Unauthorized("missing x-api-key header".into()))?;
        let hash: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        // Compared in constant time: the operator key opens every organisation.
        if hash
            .iter()
            .zip(self.operator_key_hash.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
        {
            return Ok((KeyHolder::Operator, OPERATOR_KEY_ID.into()));
        }
        self.accounts
            .key_of(key)
            .map(|(org, id)| (KeyHolder::Organization(org), id))
            .ok_or_else(|| Error::Unauthorized("invalid API key".into()))
    }

    /// Checks the API key and the session token of a data request: the session must still
    /// stand (not logged out, its user enabled and its generation current, its key not
    /// revoked), which memory answers.
    pub fn authenticate(&self, key: Option<&str>, token: Option<&str>) -> Result<Caller> {
        let (holder, _) = self.holder(key)?;
        let claims = self.sessions.verify(token.ok_or_else(missing_session)?)?;
        let operator = match holder {
            KeyHolder::Operator => true,
            KeyHolder::Organization(org) if org == claims.org => false,
            KeyHolder::Organization(_) => {
                return Err(Error::Unauthorized(
                    "the API key does not belong to the session's organisation".into(),
                ))
            }
        };
        self.standing_caller(claims, operator)
    }

    /// Checks a console session sent as its cookie without a key: the key it names stands in
    /// for the header (a revoked key ends it like any session). `same_origin` says the request
    /// is safe or carries `x-console-request`, which a page of another origin cannot send.
    pub fn authenticate_console(&self, token: &str, same_origin: bool) -> Result<Caller> {
        let claims = self.sessions.verify(token)?;
        if !claims.con {
            return Err(Error::Unauthorized("missing x-api-key header".into()));
        }
        if !same_origin {
            return Err(Error::Forbidden(
                "a console session changes data only with the x-console-request header".into(),
            ));
        }
        // The operator's key is not revoked by id but replaced: a console session made with
        // it names the key it was made with, and ends when the node runs with another.
        let operator = claims.key.starts_with(OPERATOR_KEY_ID);
        if operator && claims.key != self.operator_key_id() {
            return Err(Error::Unauthorized(
                "session ended: the operator key changed".into(),
            ));
        }
        if !operator {
            self.accounts.note_use(&claims.key);
        }
        self.standing_caller(claims, operator)
    }

    /// The id a console session made with the operator's key names: `operator:` and the
    /// start of the key's hash, so that a session outlives no change of the key.
    fn operator_key_id(&self) -> String {
        format!(
            "{OPERATOR_KEY_ID}:{}",
            hex::encode(&self.operator_key_hash[..8])
        )
    }

    /// The caller of a verified session that still stands; `operator_key` says the request
    /// came with the operator's key, which makes the operator account's session the operator.
    fn standing_caller(&self, claims: Claims, operator_key: bool) -> Result<Caller> {
        let role = {
            let standing = self.accounts.standing();
            let person = standing
                .admits(&claims.sub, &claims.jti, &claims.key, claims.gen)
                .map_err(|why| Error::Unauthorized(why.into()))?;
            person.role
        };
        Ok(Caller {
            user: claims.sub,
            organization: claims.org,
            operator: operator_key && role == Role::Operator,
            expiry_ms: claims.exp * 1000,
            session: claims.jti,
            key_id: claims.key,
            generation: claims.gen,
            console: claims.con,
        })
    }

    /// Logs a user in. Every failure after the key check — unknown email, wrong password, a
    /// user of another organisation than the key's — is the same 401 after the same argon2
    /// work, so none tells a caller more than "not with these credentials".
    pub async fn login(
        &self,
        key: Option<&str>,
        client: IpAddr,
        email: &str,
        password: String,
        console: bool,
    ) -> Result<LoggedIn> {
        let (holder, key_id) = self.holder(key)?;
        let key_id = match holder {
            KeyHolder::Operator if console => self.operator_key_id(),
            _ => key_id,
        };
        let email = normalise_email(email)?;
        let client = client.to_string();
        // Counted per key holder and email: another organisation's key can never log this
        // user in, and its attempts must not use up the ones the user's own key has.
        let attempts = match &holder {
            KeyHolder::Operator => format!("operator {email}"),
            KeyHolder::Organization(org) => format!("{org} {email}"),
        };
        self.count_attempt(&attempts, &client)?;

        let accounts = self.accounts.clone();
        let lookup = email.clone();
        let user = tokio::task::spawn_blocking(move || accounts.user_by_email(&lookup)).await??;
        // Decided before the password is checked, and answered like an unknown email: with a
        // mismatch known only after the check, another organisation's key learnt whether the
        // password was right.
        let user = user.filter(|u| match &holder {
            KeyHolder::Operator => true,
            KeyHolder::Organization(org) => *org == u.organization,
        });
        let password_ok = self
            .passwords
            .verify(password, user.as_ref().map(|u| u.password_hash.clone()))
            .await?;
        // A disabled user is refused like a wrong password, after the same work.
        let person = user
            .as_ref()
            .and_then(|u| self.accounts.person(&u.identity))
            .filter(|p| !p.disabled);
        let (Some(user), Some(person)) = (user.filter(|_| password_ok), person) else {
            return Err(Error::Unauthorized(BAD_LOGIN.into()));
        };
        self.by_email.forget(&attempts);
        self.by_client.release(&client);
        Ok(LoggedIn {
            session: self.sessions.issue_as(
                &user.identity,
                &user.organization,
                &key_id,
                person.generation,
                console,
            )?,
            identity: user.identity,
        })
    }

    /// Counts a login attempt for the email (per key holder) and the client address before
    /// its password is checked (see `throttle`), or refuses it with 429.
    fn count_attempt(&self, attempts: &str, client: &str) -> Result<()> {
        let too_many = |retry_after_secs| Error::TooManyRequests { retry_after_secs };
        self.by_email.reserve(attempts).map_err(too_many)?;
        if let Err(wait) = self.by_client.reserve(client) {
            // Refused before any password check: it must not use up the email's attempts.
            self.by_email.release(attempts);
            return Err(too_many(wait));
        }
        Ok(())
    }

    pub async fn create_account(
        &self,
        key: Option<&str>,
        input: AccountInput,
    ) -> Result<(CreatedAccount, Session)> {
        let (holder, key_id) = self.holder(key)?;
        let email = normalise_email(&input.email)?;
        check_password(&input.password)?;
        if let Some(name) = &input.profile_name {
            if name.chars().count() > 200 {
                return Err(Error::invalid_field(
                    "profileName",
                    "at most 200 characters",
                ));
            }
        }
        if let Some(org) = &input.organization {
            if !org.starts_with("did:") {
                return Err(Error::invalid_field(
                    "organizationId",
                    "must be an organisation DID",
                ));
            }
        }
        let password_hash = self.passwords.hash(input.password).await?;
        let accounts = self.accounts.clone();
        let presented = key.unwrap_or_default().to_owned();
        let new = NewAccount {
            email,
            password_hash,
            profile_name: input.profile_name,
            organization: input.organization,
        };
        let by = holder.clone();
        let created =
            tokio::task::spawn_blocking(move || accounts.create(&by, &presented, new)).await??;
        let key_id = match &holder {
            // A key minted for the new account is the one its answer hands out.
            KeyHolder::Operator => {
                crate::accounts::keys::key_id(&crate::accounts::key_hash(&created.api_key))
            }
            KeyHolder::Organization(_) => key_id,
        };
        let session = self
            .sessions
            .issue(&created.identity, &created.organization, &key_id, 0)?;
        Ok((created, session))
    }
}

impl Auth {
    /// Whether the caller's session still stands (a stream asks again when sessions end).
    pub fn stands(&self, caller: &Caller) -> bool {
        self.accounts
            .standing()
            .admits(
                &caller.user,
                &caller.session,
                &caller.key_id,
                caller.generation,
            )
            .is_ok()
    }

    /// Ends the caller's session: its token is refused from now on, though unexpired.
    pub async fn logout(&self, caller: &Caller) -> Result<()> {
        let accounts = self.accounts.clone();
        let (jti, exp) = (caller.session.clone(), caller.expiry_ms / 1000);
        tokio::task::spawn_blocking(move || accounts.end_session(&jti, exp)).await?
    }

    /// Changes the caller's password after checking the current one (attempts counted as
    /// logins are); every session of the user ends, and the caller gets a new one.
    pub async fn change_password(
        &self,
        caller: &Caller,
        current: String,
        new: String,
    ) -> Result<Session> {
        check_password(&new).map_err(|_| {
            Error::invalid_field("newPassword", "at least 8 characters, at most 1024 bytes")
        })?;
        let attempts = format!("password {}", caller.user);
        self.by_email
            .reserve(&attempts)
            .map_err(|retry_after_secs| Error::TooManyRequests { retry_after_secs })?;
        let person = self
            .accounts
            .person(&caller.user)
            .ok_or_else(|| Error::Unauthorized(crate::accounts::people::SESSION_ENDED.into()))?;
        let accounts = self.accounts.clone();
        let email = person.email.clone();
        let user = tokio::task::spawn_blocking(move || accounts.user_by_email(&email)).await??;
        let ok = self
            .passwords
            .verify(current, user.map(|u| u.password_hash))
            .await?;
        if !ok {
            return Err(Error::invalid_field(
                "currentPassword",
                "is not the account's password",
            ));
        }
        self.by_email.forget(&attempts);
        let hash = self.passwords.hash(new).await?;
        let (accounts, actor, user) = (self.accounts.clone(), caller.actor(), caller.user.clone());
        let gen =
            tokio::task::spawn_blocking(move || accounts.change_password(&actor, &user, &hash))
                .await??;
        self.sessions.issue_as(
            &caller.user,
            &caller.organization,
            &caller.key_id,
            gen,
            caller.console,
        )
    }

    /// Creates the operator account with the operator's key alone, once.
    pub async fn create_operator(
        &self,
        key: Option<&str>,
        email: &str,
        password: String,
    ) -> Result<CreatedAccount> {
        if self.key_holder(key)? != KeyHolder::Operator {
            return Err(Error::Forbidden(
                "the operator account is created with the node operator's key".into(),
            ));
        }
        let email = normalise_email(email)?;
        check_password(&password)?;
        let password_hash = self.passwords.hash(password).await?;
        let accounts = self.accounts.clone();
        let new = NewAccount {
            email,
            password_hash,
            profile_name: None,
            organization: None,
        };
        tokio::task::spawn_blocking(move || accounts.create_operator(new)).await?
    }
}

/// Trims and lower-cases an email after a syntax check.
pub fn normalise_email(raw: &str) -> Result<String> {
    let email = raw.trim().to_lowercase();
    let bad = |why: &str| Err(Error::invalid_field("email", why));
    if email.len() > 254 {
        return bad("longer than 254 characters");
    }
    let Some((local, domain)) = email.split_once('@') else {
        return bad("not an email address (no @)");
    };
    if local.is_empty() || local.len() > 64 {
        return bad("the part before @ must have 1 to 64 characters");
    }
    if domain.contains('@') {
        return bad("more than one @");
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() < 2
        || labels.iter().any(|l| {
            l.is_empty()
                || l.starts_with('-')
                || l.ends_with('-')
                || !l.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
    {
        return bad("the domain must be a dotted host name");
    }
    if email.chars().any(|c| c.is_whitespace() || c.is_control())
        || local.contains(['<', '>', '(', ')', ',', ';', ':', '\\', '"', '[', ']'])
    {
        return bad("contains characters not allowed in an email address");
    }
    Ok(email)
}

fn check_password(password: &str) -> Result<()> {
    let n = password.chars().count();
    if n < 8 {
        return Err(Error::invalid_field("password", "at least 8 characters"));
    }
    if password.len() > 1024 {
        return Err(Error::invalid_field("password", "at most 1024 bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_checked_and_lower_cased() {
        assert_eq!(
            normalise_email("  Ana@Example.COM ").unwrap(),
            "ana@example.com"
        );
        for bad in [
            "",
            "ana",
            "ana@",
            "@example.com",
            "ana@localhost",
            "a b@example.com",
            "ana@ex..com",
            "a@b@example.com",
        ] {
            assert!(normalise_email(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn passwords_need_eight_characters() {
        assert!(check_password("1234567").is_err());
        assert!(check_password("12345678").is_ok());
        assert!(check_password("ééééééé").is_err());
    }
}
