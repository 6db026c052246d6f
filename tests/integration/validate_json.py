#!/usr/bin/python3
"""Validates a JSON document against one of gnio's schemas in docs/schema.

  validate_json.py SCHEMA_DIR SCHEMA_FILE DOCUMENT_FILE
Exit 0 when valid; 1 with the error when not; 77 when python3-jsonschema is missing.
"""
import json, pathlib, sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(77)

schema_dir, schema_file, doc_file = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
store = {}
for p in schema_dir.glob("*.schema.json"):
    s = json.loads(p.read_text())
    store[p.name] = s
    store[s.get("$id", p.name)] = s
schema = store[schema_file]
resolver = jsonschema.RefResolver(base_uri="", referrer=schema, store=store)
doc = json.loads(pathlib.Path(doc_file).read_text())
try:
    jsonschema.validate(doc, schema, resolver=resolver, cls=jsonschema.Draft202012Validator)
except jsonschema.ValidationError as e:
    print(f"{doc_file}: {e.message} at {list(e.absolute_path)}", file=sys.stderr)
    sys.exit(1)
print(f"{doc_file}: valid against {schema_file}")
