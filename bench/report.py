"""Markdown tables of a ``bench/run`` result (the generated block of docs/benchmarks.md)."""

from __future__ import annotations

from typing import Any

from common import markdown_table

__all__ = ["render"]

_METRICS = ("recall_any@5", "recall_all@5", "recall_any@10", "recall_all@10", "mrr@10")


def _machine(m: dict[str, Any]) -> str:
    v = m["versions"]
    return (
        f"Run {m['date']} on {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB RAM, {m['os']}, "
        f"Python {m['python']}, SQLite {v['sqlite']}, numpy {v['numpy']}, onnxruntime {v['onnxruntime']}, "
        f"usearch {v['usearch']}, tantivy {v.get('tantivy', '-')}; checkout {m['commit']}. "
        "The machine is shared (other jobs ran at the "
        "same time), so absolute timings are noisy; ratios within one run are fair."
    )


def _locomo(res: dict[str, Any], peers: dict[str, Any] | None) -> list[str]:
    out = [f"### Retrieval quality on LoCoMo ({len(res['conversations'])} conversations, "
           f"{res['turns']} turns, {res['questions']} questions of categories 1-4)", ""]
    rows = []
    for name, m in res["systems"].items():
        o = m["overall"]
        ms = res["search_ms"].get(name)
        rows.append([name, *(o[k] for k in _METRICS), f"{ms:.1f}" if ms is not None else "-"])
    for label, _, s in _peer_systems(peers):
        o = s["metrics"]["overall"]
        rows.append([f"peer: {label}", *(o[k] for k in _METRICS), f"{s['search_ms']:.1f}"])
    out.append(markdown_table(["system", *_METRICS, "ms / search"], rows))
    out += ["", "recall_any@5 by category:", ""]
    cats = list(next(iter(res["systems"].values()))["by_category"])
    rows = []
    for name, m in res["systems"].items():
        rows.append([name, *(m["by_category"][c]["recall_any@5"] for c in cats)])
    for label, _, s in _peer_systems(peers):
        rows.append([f"peer: {label}", *(s["metrics"]["by_category"][c]["recall_any@5"] for c in cats)])
    n = {c: next(iter(res["systems"].values()))["by_category"][c]["n"] for c in cats}
    out.append(markdown_table(["system", *(f"{c} (n={n[c]})" for c in cats)], rows))
    return out


def _peer_systems(peers: dict[str, Any] | None) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(row label, peer result, system result) for every measured search of every peer.

    A peer measured in one search mode is labelled by its name and version; one measured in
    several (``systems`` with more than one entry) by name, version and mode. Results written before
    peers had modes (``metrics`` at the top) read as one mode.
    """
    out = []
    for name, p in (peers or {}).get("peers", {}).items():
        systems = p.get("systems") or ({"": p} if "metrics" in p else {})
        for mode, s in systems.items():
            label = f"{name} {p['version']}"
            out.append((f"{label}, {mode}" if len(systems) > 1 else label, p, s))
    return out


def _peers(peers: dict[str, Any]) -> list[str]:
    out = ["", "### Peers", ""]
    for name, p in peers.get("peers", {}).items():
        if "version" in p:
            kept = (f", {p['memories']} of {p['turns']} turns kept"
                    if p.get("memories") not in (None, p.get("turns")) else "")
            how = "store kept from an earlier run, imported" if p.get("cached") else "imported"
            out.append(f"- {name} {p['version']}: {how} in {p['import_s']:.0f} s{kept}; whole subprocess "
                       f"{p['wall_s']:.0f} s.")
        elif "skipped" in p:
            out.append(f"- {name}: skipped, {p['skipped']}.")
        else:
            out.append(f"- {name}: failed: `{p['error'][-300:].strip()}`")
        if p.get("hook"):
            out.append(f"  Automatic injection: {p['hook']}")
    for name, why in peers.get("unavailable", {}).items():
        out.append(f"- {name}: not run. {why}")
    endpoint = peers.get("embeddings_endpoint")
    if endpoint and endpoint["requests"]:
        out.append(f"- The local embeddings endpoint (our model) answered {endpoint['requests']} requests "
                   f"in {endpoint['seconds']:.0f} s in all.")
    return out


def _scale(res: dict[str, Any]) -> list[str]:
    out = ["", f"### Latency and scale (one space; {res['queries']} questions; "
           f"pool of {res['pool']} embedded texts)", ""]
    rows = []
    for r in res["sizes"]:
        rows.append([
            f"{r['size']:,}", f"{r['search']['p50_ms']:.1f}", f"{r['search']['p95_ms']:.1f}",
            f"{r['exact_vector_scan']['p50_ms']:.2f}", f"{r['keyword_any_fts']['p50_ms']:.1f}",
            f"{r['keyword_any_fts']['p95_ms']:.1f}", f"{r['first_search_ms']:.0f}",
            f"{r['vectors_rss_mb']:.0f}", f"{r['store_mb']:.0f}",
        ])
    out.append(markdown_table(
        ["memories", "search p50 ms", "search p95 ms", "exact vector scan p50 ms", "FTS any-term p50 ms",
         "FTS any-term p95 ms", "first search ms (loads vectors)", "RSS for vectors MiB", "store MiB"], rows))
    h = [r for r in res["sizes"] if "side" in r]
    if h:
        out += ["", "The engine as the daemon and MCP server run it (side indexes: BM25 from "
                f"{res['keyword_min_rows']:,} rows, HNSW from {res['vector_min_rows']:,} rows), beside the "
                "exact paths, same store, same questions:", ""]
        rows = []
        for r in h:
            x = r["side"]
            rows.append([
                f"{r['size']:,}", f"{r['search']['p50_ms']:.1f}", f"{x['search']['p50_ms']:.1f}",
                f"{x['search']['p95_ms']:.1f}", f"{r['search']['p50_ms'] / x['search']['p50_ms']:.1f}x",
                "yes" if "keyword" in x else "no", "yes" if "vector" in x else "no",
                f"{x['top5_overlap_with_exact']:.2f}",
            ])
        out.append(markdown_table(
            ["memories", "search p50 ms (exact paths)", "search p50 ms (side indexes)",
             "search p95 ms (side indexes)", "speed-up", "BM25 index used", "HNSW used",
             "top-5 overlap with exact"], rows))
        k = [r for r in h if "keyword" in r["side"]]
        if k:
            out += ["", "BM25 side index (tantivy, block-max WAND) against the FTS5 any-term query:", ""]
            rows = []
            for r in k:
                x = r["side"]["keyword"]
                rows.append([f"{r['size']:,}", f"{x['build_s']:.1f}", f"{x['query']['p50_ms']:.2f}",
                             f"{x['query']['p95_ms']:.2f}", f"{r['keyword_any_fts']['p50_ms']:.1f}",
                             f"{x['agreement_at_10_with_fts5']:.2f}"])
            out.append(markdown_table(
                ["memories", "build s", "index query p50 ms", "index query p95 ms", "FTS5 query p50 ms",
                 "top-10 agreement with FTS5 (up to ties)"], rows))
        v = [r for r in h if "vector" in r["side"]]
        if v:
            out += ["", "HNSW side index (usearch, i8, M 16, ef_add 64, ef 128) against the exact scan:", ""]
            rows = []
            for r in v:
                x = r["side"]["vector"]
                rows.append([f"{r['size']:,}", f"{x['build_s']:.0f}", f"{x['memory_mb']:.0f}",
                             f"{x['recall_at_10']:.3f}", f"{x['query']['p50_ms']:.2f}",
                             f"{r['exact_vector_scan']['p50_ms']:.2f}"])
            out.append(markdown_table(
                ["memories", "build s", "index MiB", "recall@10 vs exact", "index query p50 ms",
                 "exact scan p50 ms"], rows))
    out += ["", "Writes:", ""]
    rows = [[f"{r['size']:,}", f"{r['import_rows_per_s']:.0f}", f"{r['save_one']['per_s']:.0f}",
             f"{r['save_one']['p50_ms']:.1f}"] for r in res["sizes"]]
    out.append(markdown_table(["memories in the space", "batched import rows/s (vectors given)",
                               "save_memory one at a time /s (embeds)", "save p50 ms"], rows))
    out += ["", f"The model embeds {res['embed_per_s']:.0f} texts/s in batches and one text in "
            f"{res['embed_one_ms']:.1f} ms, so an import that must embed runs at about the lower of that "
            "and the insert rate."]
    return out


def render(results: dict[str, Any]) -> str:
    """All tables of one run as markdown."""
    out = [_machine(results["machine"]), "", f"Command: `{results['command'].strip()}`", ""]
    runs = results.get("runs", {})
    if len({r["date"] for r in runs.values()}) > 1:
        out += ["Sections of this page came from these runs (LoCoMo and peers always run together):", ""]
        out += [f"- {name}: {r['date']}, `{r['command'].strip()}`" for name, r in sorted(runs.items())]
        out.append("")
    if "locomo" in results:
        out += _locomo(results["locomo"], results.get("peers"))
    if "peers" in results:
        out += _peers(results["peers"])
    if "scale" in results:
        out += _scale(results["scale"])
        out += ["", "![search cost against space size](../bench/results/scale.png)"]
    return "\n".join(out) + "\n"
