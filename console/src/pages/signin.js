// Sign-in: the organisation's API key, email and password go to `POST /console/session`,
// which answers with an HttpOnly session cookie; the key stays on the node, named by the
// session (docs/ARCHITECTURE.md, "Console").

import { post } from '../api.js';
import { h, field, message } from '../dom.js';
import { navigate } from '../main.js';
import { live } from './notifications.js';

export function signInPage(notice, done) {
  const key = h('input', { type: 'password', name: 'apiKey', autocomplete: 'off', required: true });
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const status = h('div', { class: 'status', 'aria-live': 'polite' }, notice ? message('info', notice) : null);
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h('form', {
    class: 'sign-in',
    onsubmit: async (event) => {
      event.preventDefault();
      button.disabled = true;
      status.replaceChildren();
      try {
        await post('/console/session', { apiKey: key.value, email: email.value, password: password.value }, { quiet401: true });
        password.value = '';
        key.value = '';
        await done();
      } catch (error) {
        status.replaceChildren(message('error', error.status === 401 ? 'Sign-in failed: check the API key, email and password.' : error.message));
        button.disabled = false;
        password.focus();
      }
    },
  },
  h('h1', {}, 'Sign in'),
  h('p', {}, 'Your organisation\'s API key and your own account.'),
  field('API key', key),
  field('Email', email),
  field('Password', password),
  button,
  status);
  queueMicrotask(() => key.focus());
  return h('main', { id: 'main', class: 'narrow' }, form);
}

export async function signOut() {
  try {
    await post('/authentication/logout', undefined, { quiet401: true });
  } catch {
    // Already ended: signing out has nothing left to do on the node.
  }
  live.stop();
  location.assign('/console/sign-in');
}

export { navigate };
