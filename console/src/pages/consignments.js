// The consignment list: one page of the REST list at a time, in the scope chosen.

import { BASE, get, query } from '../api.js';
import { h, fill, formatDate, message } from '../dom.js';
import { link } from '../main.js';

export const SCOPES = [['all', 'All'], ['own', 'Published by us'], ['shared', 'Shared with us']];

const MODES = { 1: 'Sea', 2: 'Rail', 3: 'Road', 4: 'Air', 5: 'Mail', 6: 'Multimodal', 7: 'Fixed installation', 8: 'Inland water' };

function port(name, code) {
  if (!name && !code) return '';
  return [name || '', code ? h('span', { class: 'code' }, ` ${code}`) : null];
}

function party(p) {
  if (!p || !p.name) return '';
  return [p.name, p.countryId ? h('span', { class: 'code' }, ` ${p.countryId}`) : null];
}

function row(entry, scope) {
  const to = `/consignments/${encodeURIComponent(entry.aigId || entry.id)}${scope !== 'all' ? `?scope=${scope}` : ''}`;
  return h('tr', {},
    h('td', {}, link(to, entry.identifier || entry.aigId)),
    h('td', {}, port(entry.portOfExit, entry.portOfExitCode)),
    h('td', {}, port(entry.portOfEntry, entry.portOfEntryCode)),
    h('td', {}, formatDate(entry.dateOfEntry)),
    h('td', {}, MODES[entry.transportModeCode] || entry.transportModeCode || '',
      entry.transportId ? [h('br'), h('span', { class: 'code' }, entry.transportId)] : null),
    h('td', {}, party(entry.firstConsignor)),
    h('td', {}, party(entry.lastConsignee)),
    h('td', {}, (entry.commodities || []).map((c) => h('div', {}, c.description || c.goodsTypeCode || '',
      c.goodsTypeCode ? h('span', { class: 'code' }, ` ${c.goodsTypeCode}`) : null))),
    h('td', {}, entry.latestStatus ? [entry.latestStatus.name, h('br'), h('small', {}, formatDate(entry.latestStatus.date))] : ''),
    h('td', {}, formatDate(entry.dateUpdated)));
}

export async function consignmentsPage(main, { query: params }) {
  const scope = SCOPES.some(([s]) => s === params.get('scope')) ? params.get('scope') : 'all';
  const cursor = params.get('cursor') || '';
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Scope' },
    SCOPES.map(([s, label]) => link(`/consignments${query({ scope: s === 'all' ? '' : s })}`,
      s === scope ? h('strong', { 'aria-current': 'page' }, label) : label)));
  const body = h('div', { class: 'status', 'aria-live': 'polite' }, message('info', 'Loading…'));
  fill(main, h('h1', {}, 'Consignments'), tabs, body);
  const page = await get(`${BASE}/consignments${query({ scope, cursor, limit: 25 })}`);
  const rows = page.entities || [];
  const warnings = (page.warnings || []).map((w) => message('info', `A partner's data could not be read (${w.code}: ${w.provider}).`));
  if (!rows.length) {
    fill(body, warnings, message('info', cursor ? 'No more consignments.' : 'No consignments in this scope yet.'));
  } else {
    fill(body, warnings, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Identifier', 'Port of exit', 'Port of entry', 'Date of entry', 'Transport', 'Consignor', 'Consignee', 'Goods', 'Latest status', 'Updated']
        .map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((entry) => row(entry, scope)))));
  }
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' },
    cursor ? link(`/consignments${query({ scope: scope === 'all' ? '' : scope })}`, 'First page') : null,
    page.cursor ? link(`/consignments${query({ scope: scope === 'all' ? '' : scope, cursor: page.cursor })}`, 'Next page') : null);
  body.append(pager);
}
