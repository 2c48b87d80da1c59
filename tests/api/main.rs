//! Behaviour of the node through its HTTP API: a real server on port 0 with a real Oxigraph
//! store in a temporary directory.

mod abuse;
mod accounts;
mod backups;
mod common;
mod concurrency;
mod console;
mod crash;
mod documents;
mod dsp;
mod endless;
mod export;
mod fairness;
mod federation;
mod history;
mod ids;
mod inbox;
mod linked;
mod links;
mod load;
mod openapi;
mod operations;
mod organizations;
mod process;
mod reads;
mod realworld;
mod replica;
mod replica_corpus;
mod sessions;
mod shacl;
mod sharing;
mod sparql;
mod startup;
mod vocabulary;
mod webhooks;
