// Checking a document's attestation in the browser rather than showing a flag: the JWS
// against the key the attestation names (WebCrypto Ed25519), its claims against the document,
// and the bytes behind the download link against the signed integrity.

import { BASE, get } from './api.js';

const b64url = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(s.length / 4) * 4, '=')), (c) => c.charCodeAt(0));
const b64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

export async function checkAttestation(doc) {
  if (!doc.attestationId) return { state: 'unverified', why: 'no attestation (an external reference the node does not hold)' };
  if (!globalThis.crypto || !crypto.subtle) return { state: 'unverified', why: 'this browser cannot check signatures on a page that is not https' };
  const att = await get(`${BASE}/attestations/${encodeURIComponent(doc.attestationId)}`);
  const [header, payload, signature] = String(att.jws || '').split('.');
  if (!signature) return { state: 'unverified', why: 'the attestation is not a compact JWS' };
  let key;
  try {
    key = await crypto.subtle.importKey('jwk', att.verificationMethod.publicKeyJwk, { name: 'Ed25519' }, false, ['verify']);
  } catch (e) {
    return { state: 'unverified', why: `the attestation's key cannot be used (${e.message})` };
  }
  const signed = new TextEncoder().encode(`${header}.${payload}`);
  if (!(await crypto.subtle.verify({ name: 'Ed25519' }, key, b64url(signature), signed))) {
    return { state: 'unverified', why: 'the signature does not verify' };
  }
  const claims = JSON.parse(new TextDecoder().decode(b64url(payload)));
  if (claims.integrity !== doc.integrity || claims.documentId !== doc.id || Number(claims.documentRevision) !== Number(doc.documentRevision)) {
    return { state: 'unverified', why: 'the signed claims name another document, revision or content' };
  }
  if (!doc.href || new URL(doc.href, location.href).origin !== location.origin) {
    return { state: 'signed', issuer: claims.iss, why: 'the content is on another host and was not hashed here' };
  }
  const response = await fetch(doc.href, { credentials: 'omit' });
  if (!response.ok) return { state: 'unverified', why: `the download link answered ${response.status}` };
  const digest = await crypto.subtle.digest('SHA-256', await response.arrayBuffer());
  if (`sha256-${b64(digest)}` !== claims.integrity) return { state: 'unverified', why: 'the downloaded bytes do not match the signed integrity' };
  return { state: 'verified', issuer: claims.iss, why: 'signature valid and the downloaded bytes match' };
}
