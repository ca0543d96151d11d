"""Walking and saving the JSON the benchmark scripts read and write: the first value of a key
anywhere in a nested value, the scalar leaves of a value with their paths, distinct values in
order of first appearance, and a JSON file written whole or not at all.

Import it like bench_common (see there) from a script in scripts/.
"""
import json
import os


def find_key(x, key):
    """The first value of `key` anywhere in a JSON value (None when absent)."""
    if isinstance(x, dict):
        if key in x:
            return x[key]
        vals = x.values()
    elif isinstance(x, list):
        vals = x
    else:
        return None
    for v in vals:
        r = find_key(v, key)
        if r is not None:
            return r
    return None


def flatten(x, prefix=""):
    """Scalar leaves of a JSON value as (path, value)."""
    if isinstance(x, dict):
        out = []
        for k, v in x.items():
            out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(x, list):
        if x and all(not isinstance(v, (dict, list)) for v in x) and len(x) <= 16:
            return [(prefix or "(section)", ", ".join(str(v) for v in x))]
        out = []
        for i, v in enumerate(x):
            out += flatten(v, f"{prefix}[{i}]")
        return out
    return [(prefix or "(section)", x)]


def uniq(xs):
    out = []
    for x in xs:
        if x not in out:
            out.append(x)
    return out


def save_json(directory, name, data):
    """Writes `data` to `directory`/`name` (indented, keys sorted) through a temporary file, so
    an interrupted write never leaves a truncated file behind."""
    tmp = os.path.join(directory, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(directory, name))
