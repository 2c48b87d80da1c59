// The console: a single page under /console, drawn from the node's REST API.

import './style.css';
import { get, whenUnauthorized } from './api.js';
import { h, fill, message, didLabel } from './dom.js';
import { signInPage, signOut } from './pages/signin.js';
import { consignmentsPage } from './pages/consignments.js';
import { consignmentPage } from './pages/consignment.js';
import { notificationsPage, live } from './pages/notifications.js';
import { sparqlPage } from './pages/sparql.js';
import { policiesPage } from './pages/policies.js';
import { organizationPage } from './pages/organization.js';

export const ROOT = '/console';

const state = { session: null };

const routes = [
  [/^\/?$/, consignmentsPage],
  [/^\/consignments\/?$/, consignmentsPage],
  [/^\/consignments\/([^/]+)$/, consignmentPage],
  [/^\/notifications\/?$/, notificationsPage],
  [/^\/sparql\/?$/, sparqlPage],
  [/^\/policies\/?$/, policiesPage],
  [/^\/organization\/?$/, organizationPage],
];

/** Goes to a console address (`/consignments/…`, with its query) without reloading. */
export function navigate(to, { replace = false } = {}) {
  const url = to.startsWith(ROOT) ? to : ROOT + to;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render();
}

/** A link inside the console that the router follows. */
export function link(to, ...children) {
  const href = to.startsWith(ROOT) ? to : ROOT + to;
  return h('a', {
    href,
    onclick: (event) => {
      if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      navigate(href);
    },
  }, ...children);
}

function localPath() {
  const path = location.pathname.startsWith(ROOT) ? location.pathname.slice(ROOT.length) : '/';
  return path || '/';
}

function askSignIn(reason) {
  const here = location.pathname + location.search;
  const next = here.startsWith(`${ROOT}/sign-in`) ? ROOT : here;
  state.session = null;
  live.stop();
  history.replaceState(null, '', `${ROOT}/sign-in?next=${encodeURIComponent(next)}`);
  render(reason);
}

whenUnauthorized((error) => askSignIn(`${error.message}: sign in again.`));

function nav(session) {
  const items = [
    link('/consignments', 'Consignments'),
    link('/notifications', 'Notifications ', live.badge),
    link('/sparql', 'SPARQL'),
  ];
  if (session.operator) items.push(link('/policies', 'Sharing policies'));
  else items.push(link('/organization', 'Organisation'));
  return h('header', { class: 'top' },
    h('span', { class: 'brand' }, 'dataspace-node'),
    h('nav', { 'aria-label': 'Console' }, h('ul', {}, items.map((item) => h('li', {}, item)))),
    live.indicator,
    h('span', { class: 'who' }, 'Signed in as ', didLabel(session.identity),
      session.operator ? ' (operator)' : [' of ', didLabel(session.organizationId)]),
    h('button', { type: 'button', class: 'link', onclick: () => signOut() }, 'Sign out'));
}

export async function render(notice) {
  const app = document.getElementById('app');
  const path = localPath();
  if (path.startsWith('/sign-in')) {
    fill(app, signInPage(notice, async () => {
      state.session = null;
      const next = new URLSearchParams(location.search).get('next');
      navigate(next && next.startsWith(`${ROOT}`) && !next.startsWith(`${ROOT}/sign-in`) ? next : ROOT, { replace: true });
    }));
    return;
  }
  if (!state.session) {
    try {
      state.session = await get('/authentication/session', { quiet401: true });
    } catch (error) {
      // A first visit has no session to speak of; an ended one is worth saying.
      if (error.status === 401) return askSignIn(/^missing session/.test(error.message) ? undefined : `${error.message}: sign in again.`);
      fill(app, message('error', error.message));
      return;
    }
    live.start(state.session);
  }
  const main = h('main', { id: 'main' });
  fill(app, nav(state.session), main);
  const match = routes.map(([re, page]) => [path.match(re), page]).find(([m]) => m);
  if (!match) {
    fill(main, h('h1', {}, 'Page not found'), message('error', `The console has no page at ${location.pathname}.`));
    return;
  }
  const [m, page] = match;
  try {
    await page(main, { params: m.slice(1).map(decodeURIComponent), query: new URLSearchParams(location.search), session: state.session });
  } catch (error) {
    if (error.status === 401) return;
    main.append(message('error', error.message || String(error)));
  }
  const title = main.querySelector('h1');
  document.title = `${title ? title.textContent : 'Console'} · dataspace-node`;
  // When the page's data is on screen: what the benchmark times (docs/PERFORMANCE.md).
  performance.mark('console:drawn', { detail: location.pathname });
}

export function session() {
  return state.session;
}

window.addEventListener('popstate', () => render());
render();
