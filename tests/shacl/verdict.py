#!/usr/bin/env python3
"""An independent check of the node's shapes: each inbox activity named on the command line is
turned into RDF by a JSON-LD processor (pyld, with the node's shipped contexts, no network) and
validated by a SHACL engine (pyshacl) against shapes/*.ttl. Prints one JSON object: file name →
{"conforms": bool, "results": [message, ...]}.

Run by tests/api/shacl.rs, which compares each verdict with the node's own (POST
/inbox/validate); .ci/setup.sh makes the virtualenv it runs in."""

import json
import pathlib
import sys

from pyld import jsonld
from pyshacl import validate
from rdflib import Graph
from rdflib.namespace import SH

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONTEXTS = {
    "https://www.w3.org/ns/activitystreams": "activitystreams.jsonld",
    "https://vocabulary.uncefact.org": "unece-context-D23B.jsonld",
}


def load_context(url, options=None):
    for prefix, name in CONTEXTS.items():
        if url.startswith(prefix):
            document = json.loads((ROOT / "contexts" / name).read_text())
            return {"contextUrl": None, "documentUrl": url, "document": document}
    raise jsonld.JsonLdError("unknown context (never fetched)", "loading document failed", {"url": url})


def main(paths):
    jsonld.set_document_loader(load_context)
    shapes = Graph()
    for ttl in sorted((ROOT / "shapes").glob("*.ttl")):
        shapes.parse(ttl, format="turtle")
    verdicts = {}
    for path in paths:
        activity = json.loads(pathlib.Path(path).read_text())
        nquads = jsonld.to_rdf(activity, {"format": "application/n-quads"})
        data = Graph()
        data.parse(data=nquads, format="nt")
        conforms, report, _ = validate(data, shacl_graph=shapes, inference="none")
        messages = sorted(
            f"{report.value(r, SH.resultPath)} {report.value(r, SH.sourceConstraintComponent)}"
            for r in report.subjects(predicate=SH.resultSeverity)
        )
        verdicts[pathlib.Path(path).name] = {"conforms": bool(conforms), "results": messages}
    json.dump(verdicts, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
