// One consignment: ids, parties, ports and transport, the route, events, documents (with their
// attestations checked) and the history of revisions, at any instant ("as of", `?at=`).

import { BASE, get, query, enc } from '../api.js';
import { h, fill, formatDate, message, didLabel, field } from '../dom.js';
import { navigate } from '../main.js';
import { text, stops, parties, location as placeOf } from '../payload.js';
import { routePicture } from '../route.js';
import { checkAttestation } from '../attest.js';
import { historyTimeline } from './history.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function asOfControl(id, scope, at) {
  const input = h('input', { type: 'text', name: 'at', value: at || '', placeholder: '2026-12-01T00:00:00Z', spellcheck: 'false' });
  const problem = h('div', { 'aria-live': 'polite' });
  const go = (value) => navigate(`/consignments/${enc(id)}${query({ scope, at: value })}`);
  return h('form', {
    class: 'as-of',
    onsubmit: (event) => {
      event.preventDefault();
      const value = input.value.trim();
      if (value && !RFC3339.test(value)) {
        fill(problem, message('error', 'Give a date and time with a time zone, e.g. 2026-12-01T08:00:00Z.'));
        return;
      }
      go(value);
    },
  },
  field('As of', input, 'An instant with its time zone; empty for now.'),
  h('button', { type: 'submit' }, 'Show'),
  at ? h('button', { type: 'button', onclick: () => go('') }, 'Now') : null,
  problem);
}

function idsTable(view, description) {
  const rows = [
    ['Node id', view.id],
    ['Identifier', text(description.identifier)],
    ['Global id', text(description.globalId)],
    ['Description', text(description.summaryDescription)],
    ['Created', formatDate(view.created)],
    ['Updated', formatDate(view.updated)],
  ];
  return h('dl', { class: 'facts' }, rows.filter(([, v]) => v).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function partiesTable(description) {
  const all = parties(description);
  if (!all.length) return message('info', 'No parties in the description.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Role', 'Name', 'Country', 'Id', 'In'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, all.map((p) => h('tr', {}, h('td', {}, p.role), h('td', { class: 'party-name' }, p.name), h('td', {}, p.country), h('td', {}, p.id), h('td', {}, p.where)))));
}

function transport(view, route) {
  const exit = route.find((s) => s.kind === 'departure' && s.routing);
  const entry = route.find((s) => s.kind === 'arrival' && s.routing);
  const port = (s) => (s ? [s.name || '(no name)', ' ', h('span', { class: 'code' }, s.locode || 'no UN/LOCODE'), s.country ? ` (${s.country})` : ' (no country: not routed)'] : 'none');
  const mode = view.resolvedTransportMode;
  const means = (view.resolvedTransportEquipment || []).map((e) => [e.identifier, ' ', (e.transportMeansTypes || []).map((t) => t.label || t.code || t.raw).join(', ')]);
  return h('dl', { class: 'facts' },
    h('dt', {}, 'Port of exit'), h('dd', {}, port(exit)),
    h('dt', {}, 'Port of entry'), h('dd', {}, port(entry)),
    h('dt', {}, 'Transport mode'), h('dd', {}, mode ? `${mode.label || mode.code || mode.raw} (${mode.code || mode.raw})` : 'not given'),
    h('dt', {}, 'Transport means'), h('dd', {}, means.length ? h('ul', {}, means.map((m) => h('li', {}, m))) : 'not given'));
}

function eventsTable(events) {
  if (!events.length) return message('info', 'No events.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Event', 'When', 'Where', 'Contributor'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, events.map((e) => h('tr', {},
      h('td', {}, text(e.typeCode) || text(e.type)),
      h('td', {}, formatDate(text(e.occurrenceDateTime))),
      h('td', {}, placeOf(e).name),
      h('td', {}, didLabel(e.contributor))))));
}

function documentsTable(documents) {
  if (!documents.length) return message('info', 'No documents.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Document', 'Revision', 'Added', 'By', 'Download', 'Attestation'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, documents.map((d) => {
      const status = h('td', { class: 'attestation' }, 'checking…');
      const label = { verified: 'Verified', signed: 'Signature valid', unverified: 'Not verified' };
      checkAttestation(d).then(
        (r) => fill(status, h('span', { class: r.state === 'verified' ? 'verified' : 'unverified' }, label[r.state]), h('br'), h('small', {}, r.why)),
        (e) => fill(status, h('span', { class: 'unverified' }, 'Not verified'), h('br'), h('small', {}, e.message)));
      return h('tr', {},
        h('td', {}, d.id),
        h('td', {}, String(d.documentRevision ?? '')),
        h('td', {}, formatDate(d.dateModified || d.dateCreated)),
        h('td', {}, didLabel(d.organizationIdentity)),
        h('td', {}, /^https?:\/\//.test(d.href || '') ? h('a', { href: d.href, download: '', rel: 'noopener' }, 'Download') : 'not held by the node'),
        status);
    })));
}

/** The description in force at `at` (or now): the newest Create or Update by then, looked
 * for page by page (events and documents added since may fill many pages). */
async function descriptionAt(path, scope, history, at) {
  const limit = at ? Date.parse(at) : Infinity;
  let page = history;
  for (;;) {
    const revision = (page.entities || []).find((e) => (e.type === 'CREATE' || e.type === 'UPDATE') && Date.parse(e.date) <= limit);
    if (revision) {
      const entry = await get(`${path}/history/${enc(revision.revision)}${query({ scope })}`);
      return entry.description || {};
    }
    if (!page.cursor) return {};
    page = await get(`${path}/history${query({ scope, limit: 100, cursor: page.cursor })}`);
  }
}

export async function consignmentPage(main, { params: [id], query: params }) {
  const scope = params.get('scope') || '';
  const at = params.get('at') || '';
  const path = `${BASE}/consignments/${enc(id)}`;
  fill(main, h('h1', {}, id), message('info', 'Loading…'));
  let view;
  let history;
  try {
    [view, history] = await Promise.all([
      get(`${path}${query({ scope, at })}`),
      get(`${path}/history${query({ scope, limit: 100 })}`),
    ]);
  } catch (error) {
    if (error.status === 404) {
      fill(main, h('h1', {}, 'Consignment not found'), message('error', `No consignment ${id} that you can read${at ? ` as of ${at}` : ''}: ${error.message}`));
      return;
    }
    if (error.status === 400) {
      fill(main, h('h1', {}, id), asOfControl(id, scope, at), message('error', error.message));
      return;
    }
    throw error;
  }
  const entries = history.entities || [];
  const description = await descriptionAt(path, scope, history, at);
  const route = stops(description);
  fill(main,
    h('h1', {}, text(description.identifier) || id),
    asOfControl(id, scope, at),
    at ? message('info', `Shown as of ${formatDate(at)}: the description, events and documents recorded by then.`) : null,
    h('section', {}, h('h2', {}, 'Identity'), idsTable(view, description)),
    h('section', {}, h('h2', {}, 'Route'), routePicture(route)),
    h('section', {}, h('h2', {}, 'Ports and transport'), transport(view, route)),
    h('section', {}, h('h2', {}, 'Parties'), partiesTable(description)),
    h('section', {}, h('h2', {}, 'Events'), eventsTable(view.events || [])),
    h('section', {}, h('h2', {}, 'Documents'), documentsTable(view.documents || [])),
    h('section', {}, h('h2', {}, 'History'),
      historyTimeline(entries, at, (date) => navigate(`/consignments/${enc(id)}${query({ scope, at: date })}`)),
      history.cursor ? message('info', 'Only the newest 100 revisions are shown.') : null));
}
