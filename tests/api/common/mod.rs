//! Fixtures shared by the API tests, one job per file; topic files import only from here.

mod activities;
mod browser;
mod corpus;
mod documents;
mod http;
mod names;
mod node;
mod process;
mod session;
mod sharing;
mod sparql;
mod virtuoso;

pub use activities::*;
pub use browser::*;
pub use corpus::*;
pub use documents::*;
pub use http::*;
pub use names::*;
pub use node::*;
pub use process::*;
pub use session::*;
pub use sharing::*;
pub use sparql::*;
pub use virtuoso::*;
