// Reading D23B descriptions as traders send them: a field may be one value or a list, an id a
// string or a value object, a code a compact IRI with the code after `#`.

export const list = (v) => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]);

export function text(v) {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) return v.map(text).filter(Boolean).join(', ');
  if (typeof v === 'object') {
    if ('@value' in v) return String(v['@value']);
    if ('value' in v) return String(v.value);
    if ('@id' in v) return String(v['@id']);
    return '';
  }
  return String(v);
}

export function code(v) {
  const t = text(v);
  const hash = t.lastIndexOf('#');
  return hash >= 0 ? t.slice(hash + 1) : t;
}

/** A UN/LOCODE's country: its first two letters, when it is well formed. */
export function locodeCountry(locode) {
  return /^[A-Z]{2}[A-Z0-9]{3}$/.test(locode || '') ? locode.slice(0, 2) : '';
}

export function location(event) {
  const loc = event && event.occurrenceLogisticsLocation;
  const first = list(loc)[0] || {};
  const locode = text(list(first.identifier)[0]);
  return { name: text(first.name), locode, country: locodeCountry(locode) };
}

/** The stops of a description's route: departures, then arrivals, each in the order sent. */
export function stops(description) {
  const out = [];
  const legs = [
    ['departure', description && description.atDepartureTransportMovement, 'departureEvent'],
    ['arrival', description && description.atArrivalTransportMovement, 'arrivalEvent'],
  ];
  for (const [kind, movements, key] of legs) {
    list(movements).forEach((movement) => {
      list(movement && movement[key]).forEach((event, index) => {
        const actual = text(event.actualOccurrenceDateTime);
        out.push({
          kind,
          ...location(event),
          date: actual || text(event.scheduledOccurrenceDateTime),
          dateKind: actual ? 'actual' : 'scheduled',
          // The derivation rules: index 0 of the first movement sets the port.
          routing: index === 0 && movement === list(movements)[0],
        });
      });
    });
  }
  return out;
}

/** Every party of a description and its included consignments, with the role it is under. */
export function parties(description) {
  const out = [];
  const visit = (node, where) => {
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (!/Party$/.test(key)) continue;
      for (const p of list(value)) {
        if (!p || typeof p !== 'object') continue;
        const address = list(p.postalAddress)[0] || {};
        out.push({
          role: key.replace(/Party$/, ''),
          where,
          name: text(p.name),
          id: text(list(p.registeredId || p.identifier)[0]),
          country: code(address.tradeAddressCountryId || address.countryId),
        });
      }
    }
  };
  visit(description, 'consignment');
  list(description && description.includedConsignment).forEach((c, i) => visit(c, text(c.identifier) || `included ${i + 1}`));
  return out;
}
