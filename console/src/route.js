// The route as a picture: the stops on a line in order, with their dates and the ports routing
// used; the same stops as a list for screen readers and for copying.

import { h, formatDate } from './dom.js';

const STEP = 250;
const PAD = 125;

export function routePicture(stops) {
  if (!stops.length) {
    return h('p', { class: 'message info' }, 'The description has no departure or arrival events: nothing was routed.');
  }
  const width = PAD * 2 + STEP * Math.max(stops.length - 1, 1);
  const y = 46;
  const svg = h('svg:svg', {
    class: 'route', viewBox: `0 0 ${width} 140`, width, height: 140, role: 'img',
    'aria-label': `Route: ${stops.map((s) => s.name || s.locode || '?').join(' to ')}`,
  });
  const x = (i) => PAD + (stops.length === 1 ? STEP / 2 : i * STEP);
  svg.append(h('svg:line', { x1: x(0), y1: y, x2: x(stops.length - 1), y2: y, class: 'route-line' }));
  stops.forEach((stop, i) => {
    const g = h('svg:g', { class: `stop ${stop.kind}${stop.routing ? ' routing' : ''}` });
    g.append(h('svg:circle', { cx: x(i), cy: y, r: stop.routing ? 9 : 6 }));
    g.append(h('svg:text', { x: x(i), y: y - 18, 'text-anchor': 'middle', class: 'kind' },
      stop.routing ? (stop.kind === 'departure' ? 'Port of exit' : 'Port of entry') : (stop.kind === 'departure' ? 'Departure' : 'Arrival')));
    g.append(h('svg:text', { x: x(i), y: y + 30, 'text-anchor': 'middle', class: 'name' }, stop.name || '(no name)'));
    g.append(h('svg:text', { x: x(i), y: y + 48, 'text-anchor': 'middle', class: 'code' },
      [stop.locode || 'no UN/LOCODE', stop.country ? ` · ${stop.country}` : ''].join('')));
    g.append(h('svg:text', { x: x(i), y: y + 66, 'text-anchor': 'middle', class: 'date' }, stop.date ? formatDate(stop.date) : 'no date'));
    if (stop.date) g.append(h('svg:text', { x: x(i), y: y + 82, 'text-anchor': 'middle', class: 'date' }, stop.dateKind));
    svg.append(g);
  });
  const items = stops.map((stop) => h('li', { class: 'stop-item' },
    h('strong', {}, stop.kind === 'departure' ? 'Departure' : 'Arrival'), ' ',
    stop.name || '(no name)', ' ',
    h('span', { class: 'code' }, stop.locode || 'no UN/LOCODE'),
    stop.country ? [' ', h('span', { class: 'code' }, stop.country)] : null,
    ' — ', h('time', { datetime: stop.date }, stop.date ? formatDate(stop.date) : 'no date'),
    stop.date ? ` (${stop.dateKind})` : '',
    stop.routing ? h('em', {}, stop.kind === 'departure' ? ' — port of exit used by routing' : ' — port of entry used by routing') : null));
  return h('figure', { class: 'route-figure' },
    h('div', { class: 'scroll' }, svg),
    h('figcaption', {}, h('ol', { class: 'stops' }, items)));
}
