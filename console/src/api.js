// The console's only way to the node: the node's own REST API, same origin, with the console
// session's HttpOnly cookie. Unsafe methods carry `x-console-request`, a header a page of
// another origin cannot send without a CORS preflight the node never grants.

export const BASE = '/supply-chain/data-space';

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(errorText(status, body, retryAfter));
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

function errorText(status, body, retryAfter) {
  const reason = body && typeof body === 'object' && body.message ? body.message : '';
  if (status === 429) {
    // The node's own message says the same; the wait is what the reader needs.
    return `Too many requests at once${retryAfter ? `; try again in ${retryAfter} s` : ''}.`;
  }
  if (status === 503) return `The node could not answer in time${reason ? `: ${reason}` : ''}.`;
  if (status === 404) return reason || 'Not found.';
  if (status === 401) return reason || 'Your session has ended; sign in again.';
  if (status === 403) return reason || 'You may not do this.';
  if (reason) return reason;
  return `The node answered ${status}.`;
}

let onUnauthorized = () => {};

/** What to do when a request finds the session gone (the router sends the page to sign-in). */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export async function request(method, path, { body, headers = {}, accept, raw = false, quiet401 = false } = {}) {
  const init = { method, headers: { ...headers }, credentials: 'same-origin', redirect: 'error' };
  if (accept) init.headers.accept = accept;
  if (method !== 'GET' && method !== 'HEAD') init.headers['x-console-request'] = '1';
  if (body !== undefined) {
    if (typeof body === 'string') {
      init.body = body;
    } else {
      init.body = JSON.stringify(body);
      init.headers['content-type'] = 'application/json';
    }
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { message: 'The node cannot be reached; check the connection and try again.' });
  }
  if (raw && response.ok) return response;
  if (!response.ok) {
    let parsed = null;
    const text = await response.text();
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text ? { message: text.slice(0, 500) } : null;
    }
    const error = new ApiError(response.status, parsed, response.headers.get('retry-after'));
    if (response.status === 401 && !quiet401) onUnauthorized(error);
    throw error;
  }
  if (response.status === 204) return null;
  const type = response.headers.get('content-type') || '';
  return type.includes('json') ? response.json() : response.text();
}

export const get = (path, options) => request('GET', path, options);
export const post = (path, body, options = {}) => request('POST', path, { ...options, body });
export const del = (path, options) => request('DELETE', path, options);
export const patch = (path, body, options = {}) => request('PATCH', path, { ...options, body });

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

export const enc = encodeURIComponent;

/** For requests made without `request` (the SPARQL page reads headers): a 401 ends the page. */
export function sessionEnded(error) {
  onUnauthorized(error);
}
