// A bar chart of a two-column result whose second column is numeric in every row.

import { h } from './dom.js';

const NUMERIC = /#(integer|decimal|double|float|long|int|short|byte|nonNegativeInteger|positiveInteger|unsignedLong|unsignedInt)$/;

export function chartable(vars, bindings) {
  if (vars.length !== 2 || !bindings.length || bindings.length > 200) return false;
  return bindings.every((b) => b[vars[1]] && b[vars[1]].type === 'literal' && NUMERIC.test(b[vars[1]].datatype || '') && Number.isFinite(Number(b[vars[1]].value)));
}

export function barChart(vars, bindings) {
  const values = bindings.map((b) => Number(b[vars[1]].value));
  const max = Math.max(...values.map(Math.abs), 1);
  const rowHeight = 22;
  const labelWidth = 220;
  const barWidth = 420;
  const height = bindings.length * rowHeight + 10;
  const svg = h('svg:svg', {
    class: 'chart', viewBox: `0 0 ${labelWidth + barWidth + 80} ${height}`, width: labelWidth + barWidth + 80, height,
    role: 'img', 'aria-label': `Bar chart of ${vars[1]} by ${vars[0]}`,
  });
  bindings.forEach((b, i) => {
    const y = i * rowHeight + 5;
    const label = b[vars[0]] ? String(b[vars[0]].value) : '(unbound)';
    const width = Math.max(1, (Math.abs(values[i]) / max) * barWidth);
    svg.append(
      h('svg:text', { x: labelWidth - 6, y: y + 14, 'text-anchor': 'end', class: 'label' }, label.length > 30 ? `…${label.slice(-29)}` : label),
      h('svg:rect', { x: labelWidth, y, width, height: rowHeight - 6, class: 'bar' }),
      h('svg:text', { x: labelWidth + width + 6, y: y + 14, class: 'value' }, String(values[i])));
  });
  return h('figure', { class: 'chart-figure' }, svg, h('figcaption', {}, `${vars[1]} by ${vars[0]}`));
}
