"""FLSM's guard structure in Augur's stats JSON, read whatever its layout (the section may be
named `flsm`, `guards`, `fragmented`... at the top level or one level down, and per-level
guard fields may sit in `levels`), and laid out as the markdown of a report: per-level tables,
the highlights (guards, tables per guard, bytes rewritten vs appended) and every scalar field.
Used by scripts/flsm_bench.py.
"""
import json
import re

from bench_common import fmt, human_bytes, table
from json_tools import flatten, uniq

FLSM_KEYS = ("flsm", "guards", "fragmented", "fragmented_compaction")


def flsm_section(stats):
    """The FLSM part of Augur's stats JSON, wherever it is (None when absent)."""
    if not isinstance(stats, dict):
        return None
    for k in FLSM_KEYS:
        if stats.get(k) not in (None, {}, []):
            return stats[k]
    for v in stats.values():
        if isinstance(v, dict):
            for k in FLSM_KEYS:
                if v.get(k) not in (None, {}, []):
                    return v[k]
    return None


def level_guards(stats):
    """{level: {field: value}} of every per-level stats field whose name mentions guards (the
    engine's `guards`, `nonempty_guards`, `max_sstables_per_guard`, `max_guard_depth`, ...),
    with the level's `files` and, when the engine gives no mean, files ÷ non-empty guards."""
    out = {}
    for i, lv in enumerate((stats or {}).get("levels") or []):
        if isinstance(lv, dict):
            g = {k: v for k, v in lv.items() if "guard" in k.lower()}
            if g and any(v for v in g.values()):
                ne, files = g.get("nonempty_guards"), lv.get("files")
                if isinstance(ne, int) and isinstance(files, int) and \
                        not any("mean" in k or "avg" in k for k in g):
                    g["mean_sstables_per_guard"] = files / ne if ne else 0.0
                out[str(lv.get("level", i))] = dict({"files": files}, **g)
    return out


def guard_list_summary(guards):
    """A list of guard objects -> (guards, mean and max tables per guard) when they say."""
    counts = []
    for g in guards:
        if isinstance(g, dict):
            for k in ("sstables", "files", "tables", "num_files", "num_sstables", "file_count"):
                v = g.get(k)
                if isinstance(v, list):
                    counts.append(len(v))
                    break
                if isinstance(v, (int, float)):
                    counts.append(v)
                    break
    if counts:
        return f"{len(guards)} guards, {sum(counts) / len(counts):.2f} mean / {max(counts)} max tables per guard"
    return f"{len(guards)} guards"


def structure_markdown(last):
    """Markdown lines on Augur-FLSM's structure after settling, from `last`, the summary of its
    last fill (its `flsm` section, `level_guards`, `counters` and `stats_keys`); tolerant of
    any layout and of the section's absence."""
    sec, lg = last.get("flsm"), last.get("level_guards") or {}
    md = ["Augur-FLSM's structure after settling (the `flsm`/guards part of its stats JSON):", ""]
    if sec is None and not lg and "compaction_bytes_appended" not in (last.get("counters") or {}):
        return md + [f"*No FLSM section in the stats JSON* (top-level keys: "
                     f"{', '.join(last.get('stats_keys') or []) or 'none'}).", ""]
    try:
        flat = flatten(sec) if sec is not None else []
        hi = []
        # Per-level lists: either sec["levels"] / a list of per-level dicts, or per-level fields.
        levels = sec.get("levels") if isinstance(sec, dict) else sec if isinstance(sec, list) else None
        if isinstance(levels, list) and levels and all(isinstance(x, dict) for x in levels):
            cols = uniq(k for x in levels for k, v in x.items() if not isinstance(v, (dict, list)))
            lists = uniq(k for x in levels for k, v in x.items() if isinstance(v, list))
            rows = []
            for i, x in enumerate(levels):
                rows.append([str(x.get(c, "-")) if not isinstance(x.get(c), float) else fmt(x[c], 2) for c in cols] +
                            [guard_list_summary(x[k]) if isinstance(x.get(k), list) else "-" for k in lists])
            md += table(cols + lists, rows) + [""]
            flat = [(p, v) for p, v in flat if not p.startswith("levels[")]
        if lg:
            known = ["files", "guards", "nonempty_guards", "mean_sstables_per_guard",
                     "max_sstables_per_guard", "max_guard_depth"]
            cols = uniq([k for k in known if any(k in g for g in lg.values())] +
                        [k for g in lg.values() for k in g])

            def cell(v):
                if isinstance(v, list):
                    return guard_list_summary(v)
                return fmt(v, 2) if isinstance(v, float) else ("-" if v is None else str(v))
            md += ["Per level (the engine's per-level guard fields):", ""]
            md += table(["level"] + cols, [[lvl] + [cell(g.get(c)) for c in cols]
                                           for lvl, g in sorted(lg.items(), key=lambda x: int(x[0])
                                                                if x[0].isdigit() else 99)]) + [""]
            guards = [g.get("guards") for g in lg.values() if isinstance(g.get("guards"), int)]
            maxes = [g.get("max_sstables_per_guard") for g in lg.values()
                     if isinstance(g.get("max_sstables_per_guard"), int)]
            files = sum(g.get("files") or 0 for g in lg.values() if isinstance(g.get("files"), int))
            nonempty = sum(g.get("nonempty_guards") or 0 for g in lg.values()
                           if isinstance(g.get("nonempty_guards"), int))
            if guards:
                hi.append(f"guards: {sum(guards):,} in all; sstables per non-empty guard: mean "
                          f"{files / nonempty:.2f}" if nonempty else f"guards: {sum(guards):,} in all")
                if maxes:
                    hi[-1] += f", max {max(maxes)}"
        per_guard = [(p, v) for p, v in flat if re.search(r"per_guard|per-guard", p)]
        rewritten = [(p, v) for p, v in flat if "rewrit" in p.lower() and isinstance(v, (int, float))]
        appended = [(p, v) for p, v in flat if "append" in p.lower() and isinstance(v, (int, float))]
        if per_guard:
            hi.append("tables per guard: " + ", ".join(f"{p} = {fmt(v, 2) if isinstance(v, float) else v}"
                                                       for p, v in per_guard))
        c = last.get("counters") or {}
        if not (rewritten and appended) and isinstance(c.get("compaction_bytes_appended"), int) \
                and isinstance(c.get("compaction_bytes_written"), int):
            appended = [("counters.compaction_bytes_appended", c["compaction_bytes_appended"])]
            rewritten = [("compaction_bytes_written - appended",
                          c["compaction_bytes_written"] - c["compaction_bytes_appended"])]
        if rewritten and appended:
            rw, ap = sum(v for _, v in rewritten), sum(v for _, v in appended)
            hi.append(f"bytes rewritten {human_bytes(rw)} vs appended {human_bytes(ap)}"
                      + (f" (rewritten share {rw / (rw + ap):.1%})" if rw + ap else ""))
        md += [f"- {h}" for h in hi] + ([""] if hi else [])
        if flat:
            md += table(["field", "value"], [[f"`{p}`", fmt(v, 3) if isinstance(v, float) else str(v)]
                                             for p, v in flat]) + [""]
    except Exception as e:  # noqa: BLE001 - a new layout must not break the report
        md += [f"(could not lay out the section: {e})", "", "```json",
               json.dumps(sec, indent=1)[:4000], "```", ""]
    return md
