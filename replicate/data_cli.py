"""``python -m replicate data {fetch,prepare,summary}``."""

from __future__ import annotations

import argparse
from pathlib import Path

from replicate import data, provenance
from replicate import io as rio


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m replicate data")
    sub = parser.add_subparsers(dest="action", required=True)

    p = sub.add_parser("fetch", help="download or copy the raw files, sha256-verified")
    p.add_argument("--dataset", required=True, choices=sorted(data.DATASETS))
    p.add_argument("--out", required=True, help="folder for the raw files")
    p.add_argument("--local-dir", default="", help=f"local data folder (the env var {data.ENV_LOCAL_DIR} wins)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per download attempt")

    p = sub.add_parser("prepare", help="vocabulary + token ids + stats")
    p.add_argument("--dataset", required=True, choices=sorted(data.DATASETS))
    p.add_argument("--raw", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--stats", required=True)

    p = sub.add_parser("summary", help="markdown summary of prepared data sets")
    p.add_argument("--out", required=True)
    p.add_argument("stats", nargs="+")

    args = parser.parse_args(argv)
    started = provenance.now()
    if args.action == "fetch":
        local = data.resolve_local_dir(args.local_dir or None)
        print(f"fetching {args.dataset} from {local or 'the public mirrors'}", flush=True)
        origins = data.fetch(args.dataset, args.out, local_dir=local, timeout=args.timeout)
        record = {"dataset": args.dataset, "origins": origins,
                  "provenance": provenance.collect({"local_dir": str(local) if local else None}, started)}
        rio.write_json(Path(args.out) / "fetched.json", record)
        print(f"fetched and verified {len(origins)} files into {args.out}")
    elif args.action == "prepare":
        stats = data.prepare(args.dataset, args.raw, args.corpus, args.stats)
        stats["provenance"] = provenance.collect({"dataset": args.dataset}, started)
        rio.write_json(args.stats, stats)
        print(f"{args.dataset}: vocabulary {stats['vocab_size']}, tokens {stats['tokens']}")
    else:
        rio.write_text(args.out, summary_markdown([rio.read_json(p) for p in args.stats]))
        print(f"wrote {args.out}")
    return 0


def summary_markdown(stats: list[dict]) -> str:
    lines = ["# Prepared data sets", "",
             "| data set | vocabulary | train tokens | valid tokens | test tokens | prepared at | commit |",
             "|---|---:|---:|---:|---:|---|---|"]
    for s in stats:
        t = s["tokens"]
        prov = s.get("provenance", {})
        commit = (prov.get("git") or {}).get("commit") or "unknown"
        lines.append(f"| {s['dataset']} | {s['vocab_size']:,} | {t['train']:,} | {t['valid']:,} | "
                     f"{t['test']:,} | {prov.get('finished', '?')} | {commit[:10]} |")
    lines += ["", "Token counts include the `<eos>` appended to every line; sha256 of every raw file was "
              "verified against the published checksums."]
    return "\n".join(lines) + "\n"
