// The organisation, for its admins: API keys (a new one shown once; revoking one ends every
// session made with it), users (role, disabled) and the audit log of those changes.

import { get, post, del, patch, query, enc } from '../api.js';
import { h, fill, formatDate, message, field, didLabel } from '../dom.js';
import { navigate } from '../main.js';
import { confirmCell } from '../confirm.js';

// A message from the change before the page was drawn again.
let pending = null;

function refresh(notice) {
  pending = notice;
  navigate('/organization', { replace: true });
}

function keysSection(base, keys) {
  const name = h('input', { type: 'text', name: 'keyName', maxlength: 100, required: true });
  const status = h('div', { 'aria-live': 'polite' });
  const rows = keys.map((k) => {
    const actions = confirmCell({
      ask: 'Revoke…',
      explanation: h('p', { class: 'confirm' }, 'Every request with this key, and every session signed in with it — this console\'s too if it was — is refused from now on.'),
      confirm: 'Revoke key',
      act: async () => {
        await del(`${base}/keys/${enc(k.id)}`);
        refresh(message('ok', `Key ${k.name} revoked.`));
      },
    });
    return h('tr', { class: 'key', dataset: { id: k.id, name: k.name } },
      h('td', {}, k.name), h('td', {}, formatDate(k.created)), h('td', {}, k.lastUsed ? formatDate(k.lastUsed) : 'never'), actions);
  });
  const form = h('form', {
    class: 'new-key',
    onsubmit: async (event) => {
      event.preventDefault();
      try {
        const created = await post(`${base}/keys`, { name: name.value });
        name.value = '';
        fill(status, h('div', { class: 'message ok', role: 'status' },
          h('p', {}, `Key ${created.name} created. Copy it now: it is not shown again.`),
          h('code', { class: 'new-key-value' }, created.apiKey)));
      } catch (error) {
        fill(status, message('error', error.message));
      }
    },
  }, field('Name of a new key', name), h('button', { type: 'submit' }, 'Create key'), status);
  return h('section', {}, h('h2', {}, 'API keys'),
    h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Name', 'Created', 'Last used', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows)),
    form);
}

function usersSection(base, users, session) {
  const rows = users.map((u) => {
    const change = async (body, done) => {
      try {
        await patch(`${base}/users/${enc(u.id)}`, body);
        refresh(message('ok', done));
      } catch (error) {
        row.append(h('td', {}, message('error', error.message)));
      }
    };
    const self = u.id === session.identity;
    const row = h('tr', { class: 'user', dataset: { email: u.email } },
      h('td', {}, u.email), h('td', {}, u.profileName || ''), h('td', {}, u.role), h('td', {}, u.disabled ? 'disabled' : 'enabled'),
      h('td', {},
        h('button', { type: 'button', onclick: () => change({ role: u.role === 'admin' ? 'member' : 'admin' }, `${u.email} is now ${u.role === 'admin' ? 'a member' : 'an admin'}.`) },
          u.role === 'admin' ? 'Make member' : 'Make admin'), ' ',
        self ? null : h('button', { type: 'button', onclick: () => change({ disabled: !u.disabled }, `${u.email} ${u.disabled ? 'enabled' : 'disabled: its sessions ended'}.`) },
          u.disabled ? 'Enable' : 'Disable')));
    return row;
  });
  return h('section', {}, h('h2', {}, 'Users'),
    h('p', {}, 'New users sign up with the organisation\'s key; the first is its admin. A disabled user\'s sessions end at once.'),
    h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Email', 'Name', 'Role', 'Standing', ''].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows)));
}

function auditSection(entries) {
  return h('section', {}, h('h2', {}, 'Audit log'),
    entries.length ? h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['When', 'Who', 'What', 'Target'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, entries.map((e) => h('tr', { class: 'audit' },
        h('td', {}, formatDate(e.at)), h('td', {}, e.actor && e.actor.startsWith('did:') ? didLabel(e.actor) : e.actor),
        h('td', {}, e.action), h('td', {}, e.target && String(e.target).startsWith('did:') ? didLabel(e.target) : String(e.target || ''))))))
      : message('info', 'Nothing recorded yet.'));
}

export async function organizationPage(main, { session }) {
  const notice = pending;
  pending = null;
  fill(main, h('h1', {}, 'Organisation'), message('info', 'Loading…'));
  const base = `/organizations/${enc(session.organizationId)}`;
  let keys;
  let users;
  let audit;
  try {
    [keys, users, audit] = await Promise.all([
      get(`${base}/keys`),
      get(`${base}/users`),
      get(`/operations/audit${query({ limit: 50 })}`),
    ]);
  } catch (error) {
    if (error.status === 403) {
      fill(main, h('h1', {}, 'Organisation'), message('info', 'Only your organisation\'s admins manage its keys and users.'));
      return;
    }
    throw error;
  }
  fill(main, h('h1', {}, 'Organisation'), notice,
    h('p', {}, 'Your organisation: ', didLabel(session.organizationId)),
    keysSection(base, keys.entities || []),
    usersSection(base, users.entities || [], session),
    auditSection(audit.entities || []));
}
